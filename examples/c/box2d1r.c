// box2d1r: AN5D's synthetic 2D box stencil of radius 1: a weighted sum of the 3x3 box (17 FLOP per
// cell). Written as a C loop nest in the form AN5D takes as input (an5d-temporal-blocking.txt,
// Figure 4 and section 4.3): Tempest reads the #pragma scop region, where the loops skip BENCH_RAD
// cells at each end (the fixed boundary). The coefficients are those of
// examples/an5d/box2d1r.stencil, so both give the same result. Each coefficient is (1 +
// 0.001*(3*di + dj)) / 9, written out as the twin's checker folds it.
//   tempest run examples/c/box2d1r.c --steps 100
#define BENCH_DIM 2
#define BENCH_FPP 17
#define BENCH_RAD 1

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
            0.11066666666666666f * A[t%2][i-1][j-1] + 0.11077777777777778f * A[t%2][i-1][j] + 0.11088888888888888f * A[t%2][i-1][j+1]
            + 0.111f * A[t%2][i][j-1] + 0.1111111111111111f * A[t%2][i][j] + 0.11122222222222221f * A[t%2][i][j+1]
            + 0.11133333333333334f * A[t%2][i+1][j-1] + 0.11144444444444443f * A[t%2][i+1][j] + 0.11155555555555556f * A[t%2][i+1][j+1];
#pragma endscop
  }
  return (((end_time != 0.0) ? end_time : sb_time()) - start_time);
}
