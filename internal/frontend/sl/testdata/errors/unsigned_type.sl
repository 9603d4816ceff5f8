NumDimensions 1
DataType unsigned int
CellValue { return 0; }
