NumDimensions 2
StencilSize (1, 1)
DataType float
FunctionName run
ScalarVariables (float a)
CellValue {
  float s = 0;
  int k;
  for (k = 0; k < x; k++)
    s += get(0, 0);
  return s;
}
EdgeValue {
  return value;
}
