// star3d1r: AN5D's synthetic 3D star stencil of radius 1 (13 FLOP per cell). Written as a C loop
// nest in the form AN5D takes as input (an5d-temporal-blocking.txt, Figure 4 and section 4.3):
// Tempest reads the #pragma scop region, where the loops skip BENCH_RAD cells at each end (the
// fixed boundary). The coefficients are those of examples/an5d/star3d1r.stencil, so both give the
// same result.
//   tempest run examples/c/star3d1r.c --steps 100
#define BENCH_DIM 3
#define BENCH_FPP 13
#define BENCH_RAD 1

#include "common.h"

double kernel_stencil(SB_TYPE *A1, int compsize, int timestep, bool scop)
{
  double start_time = sb_time(), end_time = 0.0;
  int dimsize = compsize + BENCH_RAD * 2;
  SB_TYPE (*A)[dimsize][dimsize][dimsize] = (SB_TYPE (*)[dimsize][dimsize][dimsize])A1;

  if (scop) {
#pragma scop
    for (int t = 0; t < timestep; t++)
      for (int i = BENCH_RAD; i < dimsize - BENCH_RAD; i++)
        for (int j = BENCH_RAD; j < dimsize - BENCH_RAD; j++)
          for (int k = BENCH_RAD; k < dimsize - BENCH_RAD; k++)
            A[(t+1)%2][i][j][k] =
              0.22f * A[t%2][i][j][k]
              + 0.125f * A[t%2][i-1][j][k] + 0.127f * A[t%2][i+1][j][k] + 0.129f * A[t%2][i][j-1][k]
              + 0.131f * A[t%2][i][j+1][k] + 0.133f * A[t%2][i][j][k-1] + 0.135f * A[t%2][i][j][k+1];
#pragma endscop
  }
  return (((end_time != 0.0) ? end_time : sb_time()) - start_time);
}
