NumDimensions 2
StencilSize (1, 1)
DataType float
FunctionName run
ScalarVariables (float a)
CellValue {
  return get(0, 0) % 2.0;
}
EdgeValue {
  return value;
}
