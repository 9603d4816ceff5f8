NumDimensions 2
StencilSize (1, 1)
DataType float
ScalarVariables (float alpha)
CellValue {
  return get(0, 0) * alpah;
}
EdgeValue {
  return value;
}
