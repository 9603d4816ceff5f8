NumDimensions 2
StencilSize (1, 1)
DataType float
FunctionName run
ScalarVariables (float a)
CellValue {
  int k = x & 1;
  return get(0, 0) * k;
}
EdgeValue {
  return value;
}
