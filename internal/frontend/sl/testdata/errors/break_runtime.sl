NumDimensions 2
StencilSize (1, 1)
DataType float
FunctionName run
ScalarVariables (float a)
CellValue {
  float s = 0;
  int k;
  for (k = 0; k < 3; k++) {
    if (get(0, 0) > a) break;
    s += 1;
  }
  return s;
}
EdgeValue {
  return value;
}
