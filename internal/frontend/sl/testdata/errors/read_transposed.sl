NumDimensions 2
StencilSize (1, 1)
DataType float
FunctionName run
ScalarVariables (float a)
CellValue {
  return get(0, 0) + read(x * input_size.y + y);
}
EdgeValue {
  return value;
}
