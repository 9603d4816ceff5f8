DataType float
CellValue { return 0; }
