// box3d1r: AN5D's synthetic 3D box stencil of radius 1: a weighted sum of the 3x3x3 box (53 FLOP
// per cell). Written as a C loop nest in the form AN5D takes as input (an5d-temporal-blocking.txt,
// Figure 4 and section 4.3): Tempest reads the #pragma scop region, where the loops skip BENCH_RAD
// cells at each end (the fixed boundary). The coefficients are those of
// examples/an5d/box3d1r.stencil, so both give the same result. Each coefficient is (1 +
// 0.0005*(9*di + 3*dj + dk)) / 27, written out as the twin's checker folds it.
//   tempest run examples/c/box3d1r.c --steps 100
#define BENCH_DIM 3
#define BENCH_FPP 53
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
              0.0367962962962963f * A[t%2][i-1][j-1][k-1] + 0.036814814814814814f * A[t%2][i-1][j-1][k] + 0.036833333333333336f * A[t%2][i-1][j-1][k+1]
              + 0.03685185185185185f * A[t%2][i-1][j][k-1] + 0.03687037037037037f * A[t%2][i-1][j][k] + 0.03688888888888889f * A[t%2][i-1][j][k+1]
              + 0.03690740740740741f * A[t%2][i-1][j+1][k-1] + 0.036925925925925925f * A[t%2][i-1][j+1][k] + 0.036944444444444446f * A[t%2][i-1][j+1][k+1]
              + 0.03696296296296296f * A[t%2][i][j-1][k-1] + 0.03698148148148148f * A[t%2][i][j-1][k] + 0.037f * A[t%2][i][j-1][k+1]
              + 0.03701851851851852f * A[t%2][i][j][k-1] + 0.037037037037037035f * A[t%2][i][j][k] + 0.03705555555555556f * A[t%2][i][j][k+1]
              + 0.03707407407407407f * A[t%2][i][j+1][k-1] + 0.037092592592592594f * A[t%2][i][j+1][k] + 0.03711111111111111f * A[t%2][i][j+1][k+1]
              + 0.03712962962962963f * A[t%2][i+1][j-1][k-1] + 0.037148148148148145f * A[t%2][i+1][j-1][k] + 0.03716666666666667f * A[t%2][i+1][j-1][k+1]
              + 0.03718518518518518f * A[t%2][i+1][j][k-1] + 0.037203703703703704f * A[t%2][i+1][j][k] + 0.03722222222222222f * A[t%2][i+1][j][k+1]
              + 0.03724074074074074f * A[t%2][i+1][j+1][k-1] + 0.03725925925925926f * A[t%2][i+1][j+1][k] + 0.03727777777777778f * A[t%2][i+1][j+1][k+1];
#pragma endscop
  }
  return (((end_time != 0.0) ? end_time : sb_time()) - start_time);
}
