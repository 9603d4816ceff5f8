NumDimensions 2
StencilSize (1, 1)
DataType float
FunctionName run
ScalarVariables (float a)
CellValue {
  float *p;
  return get(0, 0);
}
EdgeValue {
  return value;
}
