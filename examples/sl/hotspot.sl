// Hotspot.sl: Figure 3 of the SL paper (section 4),
// as printed. The text extraction of the paper lost three closing characters, restored here:
// the ) that ends the ScalarVariables list and the } that ends each of the two blocks.
// Nothing else is changed.
//
// SL's scalars have no defaults (the caller of runHotspot passes them); in Tempest they are
// parameters that default to 0, so give them on the command line. The read-only power map
// (SL's runHotspotSetData) is the --data file, a float array with the grid's shape:
//   tempest run examples/sl/hotspot.sl --size 512x512 --steps 100 \
//     --param Rx=10 --param Ry=10 --param Rz=4 --data power.npy --init cell=temp.npy
// or with text files in Rodinia's layout (one value per line), here the 64x64 ones of data/:
//   tempest run examples/sl/hotspot.sl --steps 100 --param Rx=10 --param Ry=10 --param Rz=4 \
//     --data examples/sl/data/power_64 --init cell=examples/sl/data/temp_64 --out temp.txt
// examples/sl/hotspot.stencil is the same program written in Tempest's own language.
NumDimensions 2
StencilSize (1, 1)
DataType float
FunctionName runHotspot
ScalarVariables (
  float Rx, float Ry, float Rz
)
CellValue {
  float pvalue, value, term1, term2, term3, sum;
  pvalue = read(y * input_size.x + x);
  value = get(0, 0);
  term1 = (get(0, 1) + get(0, -1) - value) / Ry;
  term2 = (get(1, 0) + get(-1, 0) - value) / Rx;
  term3 = (80.0 - value) / Rz;
  sum = pvalue + term1 + term2 + term3;
  return(value + sum);
}
EdgeValue {
  return value;
}
