NumDimensions 2
StencilSize (1, 1)
DataType float
FunctionName run
ScalarVariables (float a)
CellValue {
  float v;
  if (get(0, 0) > a)
    v = get(1, 0);
  return v;
}
EdgeValue {
  return value;
}
