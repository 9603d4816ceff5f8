NumDimensions 1
DataType float
ScalarVariables (float step)
CellValue { return get(0); }
