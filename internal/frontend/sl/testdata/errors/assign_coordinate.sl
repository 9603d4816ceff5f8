NumDimensions 2
StencilSize (1, 1)
DataType float
FunctionName run
ScalarVariables (float a)
CellValue {
  x = x + 1;
  return get(0, 0);
}
EdgeValue {
  return value;
}
