// plate: heat on a plate in SL (section 7.4): every cell becomes the
// average of its four neighbours, and heat enters through the edge (EdgeValue): beyond the top
// edge (y < 0) the plate touches a heater at HOT, beyond the other edges it is at COLD.
// The defaults in ScalarVariables (= 100.0) are a Tempest extension; plain SL lists the names
// and the caller passes the values (here: --param HOT=...).
// examples/sl/plate.stencil is the same program in Tempest's own language.
NumDimensions 2
StencilSize (1, 1)
DataType float
FunctionName runPlate
ScalarVariables (float HOT = 100.0, float COLD = 0.0)
CellValue {
  return 0.25 * (get(0, -1) + get(0, 1) + get(-1, 0) + get(1, 0));
}
EdgeValue {
  if (y < 0)
    return HOT;
  else
    return COLD;
}
