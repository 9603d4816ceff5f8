// pathfinder: Rodinia's PathFinder in SL (section 7.2), the 1D
// dynamic-programming benchmark: step t adds row t of a read-only cost array (the wall) to the
// cheapest of the three cells above. The wall is SL's read-only data, a 2D array read in
// row-major order: read(iteration * input_size.x + x) is row `iteration` at column x. Tempest
// holds it in the input grid `data` with one layer per row; give it with --data wall.npy (shape
// rows x columns) and set the parameter data_rows to the number of rows:
//   tempest run examples/sl/pathfinder.sl --data wall.npy --param data_rows=ROWS \
//     --init cell=row0.npy --steps ROWS-1
// EdgeValue returns the nearest cell, so at the edges the minimum runs over the cells that exist.
// examples/sl/pathfinder.stencil is the same program in Tempest's own language.
NumDimensions 1
StencilSize (1)
DataType int
FunctionName runPathfinder
CellValue {
  int left, up, right, shortest;
  left = get(-1);
  up = get(0);
  right = get(1);
  shortest = min(left, min(up, right));
  return read(iteration * input_size.x + x) + shortest;
}
EdgeValue {
  return value;
}
