// cell: the SL paper's Cell (section 7.5), Conway's Game of Life in
// three dimensions: a cell is alive (1) or dead (0) depending on how many of its 26 neighbours
// in the 3x3x3 box were alive in the previous step. The rule is Carter Bays' 3D Life 5766
// (B6/S567), as in examples/sl/cell.stencil: a dead cell with exactly 6 live neighbours is
// born, a live cell with 5, 6 or 7 survives. Outside the grid every cell is dead (EdgeValue 0).
// The loops over the neighbourhood have constant bounds; Tempest unrolls them, so each get()
// has constant offsets.
NumDimensions 3
StencilSize (1, 1, 1)
DataType int
FunctionName runCell
CellValue {
  int n = 0;
  int dx, dy, dz;
  for (dz = -1; dz <= 1; dz++)
    for (dy = -1; dy <= 1; dy++)
      for (dx = -1; dx <= 1; dx++)
        if (dx != 0 || dy != 0 || dz != 0)
          n += get(dx, dy, dz);
  if (n == 6 || (get(0, 0, 0) == 1 && n >= 5 && n <= 7))
    return 1;
  return 0;
}
EdgeValue {
  return 0;
}
