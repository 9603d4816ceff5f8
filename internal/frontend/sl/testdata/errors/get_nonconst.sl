NumDimensions 2
StencilSize (1, 1)
DataType float
FunctionName run
ScalarVariables (float a)
CellValue {
  int k;
  k = x % 2;
  return get(k, 0);
}
EdgeValue {
  return value;
}
