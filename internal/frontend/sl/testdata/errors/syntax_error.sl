NumDimensions 2
StencilSize (1, 1)
DataType float
FunctionName run
ScalarVariables (float a)
CellValue {
  float v = get(0, 0)
  return v;
}
EdgeValue {
  return value;
}
