NumDimensions 1
DataType float
CellValue {
  return get(-1) + get(1);
EdgeValue {
  return value;
}
