NumDimensions 2
StencilSize (1, 1)
DataType float
FunctionName run
ScalarVariables (float a)
CellValue {
  float w[3];
  return get(0, 0);
}
EdgeValue {
  return value;
}
