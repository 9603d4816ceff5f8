// platepp: the SL paper's Plate++ (section 7.7): plate.sl with the
// average over the 8 neighbours at distance 1 and 2 along the axes, a star of radius 2, hence
// StencilSize (2, 2). (The file is not called plate++.sl so that its name is a valid program
// name.) Heat enters through the edge as in plate.sl.
// examples/sl/platepp.stencil is the same program in Tempest's own language.
NumDimensions 2
StencilSize (2, 2)
DataType float
FunctionName runPlatePP
ScalarVariables (float HOT = 100.0, float COLD = 0.0)
CellValue {
  return 0.125 * (get(0, -2) + get(0, -1) + get(0, 1) + get(0, 2)
                + get(-2, 0) + get(-1, 0) + get(1, 0) + get(2, 0));
}
EdgeValue {
  if (y < 0) return HOT;
  return COLD;
}
