NumDimensions 2
StencilSize (1, 1)
DataType float
FunctionName run
ScalarVariables (float a)
CellValue {
  return smooth(get(1, 0), get(-1, 0));
}
EdgeValue {
  return value;
}
