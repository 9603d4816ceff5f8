NumDimensions 2
StencilSize (1, 1)
DataType float
FunctionName run
ScalarVariables (float a)
CellValue {
  float s = 0;
  int k = 0;
  while (k < 3) { s += get(0, 0); k++; }
  return s;
}
EdgeValue {
  return value;
}
