// platehalo: the SL paper's PlateHalo (section 7.7): plate.sl with the
// average taken over all 8 neighbours of the 3x3 box, diagonals included. Heat enters through the
// edge as in plate.sl. examples/sl/platehalo.stencil is the same program in Tempest's language.
NumDimensions 2
StencilSize (1, 1)
DataType float
FunctionName runPlateHalo
ScalarVariables (float HOT = 100.0, float COLD = 0.0)
CellValue {
  float sum;
  sum = get(-1, -1) + get(0, -1) + get(1, -1)
      + get(-1, 0)               + get(1, 0)
      + get(-1, 1)  + get(0, 1)  + get(1, 1);
  return 0.125 * sum;
}
EdgeValue {
  return y < 0 ? HOT : COLD;
}
