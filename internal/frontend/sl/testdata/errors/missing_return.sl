NumDimensions 2
StencilSize (1, 1)
DataType float
FunctionName run
ScalarVariables (float a)
CellValue {
  if (get(0, 0) > a)
    return get(1, 0);
}
EdgeValue {
  return value;
}
