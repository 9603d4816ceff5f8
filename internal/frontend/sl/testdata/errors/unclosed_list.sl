NumDimensions 1
DataType float
ScalarVariables (float a, float b
CellValue { return get(0); }
