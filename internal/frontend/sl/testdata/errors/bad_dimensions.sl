NumDimensions 4
DataType float
CellValue { return 0; }
