// star2d4r: AN5D's synthetic 2D star stencil of radius 4 (33 FLOP per cell). Written as a C loop
// nest in the form AN5D takes as input (an5d-temporal-blocking.txt, Figure 4 and section 4.3):
// Tempest reads the #pragma scop region, where the loops skip BENCH_RAD cells at each end (the
// fixed boundary). The coefficients are those of examples/an5d/star2d4r.stencil, so both give the
// same result.
//   tempest run examples/c/star2d4r.c --steps 100
#define BENCH_DIM 2
#define BENCH_FPP 33
#define BENCH_RAD 4

#include "common.h"

double kernel_stencil(SB_TYPE *A1, int compsize, int timestep, bool scop)
{
  double start_time = sb_time(), end_time = 0.0;
  int dimsize = compsize + BENCH_RAD * 2;
  SB_TYPE (*A)[dimsize][dimsize] = (SB_TYPE (*)[dimsize][dimsize])A1;

  if (scop) {
#pragma scop
    for (int t = 0; t < timestep; t++)
      for (int i = BENCH_RAD; i < dimsize - BENCH_RAD; i++)
        for (int j = BENCH_RAD; j < dimsize - BENCH_RAD; j++)
          A[(t+1)%2][i][j] =
            0.2f * A[t%2][i][j]
            + 0.077f * A[t%2][i-1][j] + 0.079f * A[t%2][i+1][j] + 0.081f * A[t%2][i][j-1] + 0.083f * A[t%2][i][j+1]
            + 0.057f * A[t%2][i-2][j] + 0.059f * A[t%2][i+2][j] + 0.061f * A[t%2][i][j-2] + 0.063f * A[t%2][i][j+2]
            + 0.037f * A[t%2][i-3][j] + 0.039f * A[t%2][i+3][j] + 0.041f * A[t%2][i][j-3] + 0.043f * A[t%2][i][j+3]
            + 0.017f * A[t%2][i-4][j] + 0.019f * A[t%2][i+4][j] + 0.021f * A[t%2][i][j-4] + 0.023f * A[t%2][i][j+4];
#pragma endscop
  }
  return (((end_time != 0.0) ? end_time : sb_time()) - start_time);
}
