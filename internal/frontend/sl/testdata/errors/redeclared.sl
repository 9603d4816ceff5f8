NumDimensions 2
StencilSize (1, 1)
DataType float
FunctionName run
ScalarVariables (float a)
CellValue {
  float v = 1;
  float v = 2;
  return v * get(0, 0);
}
EdgeValue {
  return value;
}
