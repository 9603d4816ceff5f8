NumDimensions 2
StencilSize (1, 1, 1)
DataType float
CellValue { return get(0, 0); }
