// j3d27pt: AN5D's 3D Jacobi 27-point box stencil: a weighted sum of the 3x3x3 box divided by a
// constant (54 FLOP per cell). Written as a C loop nest in the form AN5D takes as input
// (an5d-temporal-blocking.txt, Figure 4 and section 4.3): Tempest reads the #pragma scop region,
// where the loops skip BENCH_RAD cells at each end (the fixed boundary). The coefficients are
// those of examples/an5d/j3d27pt.stencil, so both give the same result. Each coefficient is 1 +
// 0.01*(9*di + 3*dj + dk), written out as the twin's checker folds it.
//   tempest run examples/c/j3d27pt.c --steps 100
#define BENCH_DIM 3
#define BENCH_FPP 54
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
              (0.87f * A[t%2][i-1][j-1][k-1] + 0.88f * A[t%2][i-1][j-1][k] + 0.89f * A[t%2][i-1][j-1][k+1]
              + 0.9f * A[t%2][i-1][j][k-1] + 0.91f * A[t%2][i-1][j][k] + 0.92f * A[t%2][i-1][j][k+1]
              + 0.9299999999999999f * A[t%2][i-1][j+1][k-1] + 0.94f * A[t%2][i-1][j+1][k] + 0.95f * A[t%2][i-1][j+1][k+1]
              + 0.96f * A[t%2][i][j-1][k-1] + 0.97f * A[t%2][i][j-1][k] + 0.98f * A[t%2][i][j-1][k+1]
              + 0.99f * A[t%2][i][j][k-1] + 1.0f * A[t%2][i][j][k] + 1.01f * A[t%2][i][j][k+1]
              + 1.02f * A[t%2][i][j+1][k-1] + 1.03f * A[t%2][i][j+1][k] + 1.04f * A[t%2][i][j+1][k+1]
              + 1.05f * A[t%2][i+1][j-1][k-1] + 1.06f * A[t%2][i+1][j-1][k] + 1.07f * A[t%2][i+1][j-1][k+1]
              + 1.08f * A[t%2][i+1][j][k-1] + 1.09f * A[t%2][i+1][j][k] + 1.1f * A[t%2][i+1][j][k+1]
              + 1.11f * A[t%2][i+1][j+1][k-1] + 1.12f * A[t%2][i+1][j+1][k] + 1.13f * A[t%2][i+1][j+1][k+1]) / 27;
#pragma endscop
  }
  return (((end_time != 0.0) ? end_time : sb_time()) - start_time);
}
