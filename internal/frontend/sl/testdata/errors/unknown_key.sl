NumDimension 2
DataType float
CellValue { return 0; }
