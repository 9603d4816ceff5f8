// box2d2r: AN5D's synthetic 2D box stencil of radius 2: a weighted sum of the 5x5 box (49 FLOP per
// cell). Written as a C loop nest in the form AN5D takes as input (an5d-temporal-blocking.txt,
// Figure 4 and section 4.3): Tempest reads the #pragma scop region, where the loops skip BENCH_RAD
// cells at each end (the fixed boundary). The coefficients are those of
// examples/an5d/box2d2r.stencil, so both give the same result. Each coefficient is (1 +
// 0.001*(5*di + dj)) / 25, written out as the twin's checker folds it.
//   tempest run examples/c/box2d2r.c --steps 100
#define BENCH_DIM 2
#define BENCH_FPP 49
#define BENCH_RAD 2

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
            0.03952f * A[t%2][i-2][j-2] + 0.03956f * A[t%2][i-2][j-1] + 0.039599999999999996f * A[t%2][i-2][j] + 0.03964f * A[t%2][i-2][j+1] + 0.03968f * A[t%2][i-2][j+2]
            + 0.03972f * A[t%2][i-1][j-2] + 0.03976f * A[t%2][i-1][j-1] + 0.0398f * A[t%2][i-1][j] + 0.03984f * A[t%2][i-1][j+1] + 0.03988f * A[t%2][i-1][j+2]
            + 0.03992f * A[t%2][i][j-2] + 0.03996f * A[t%2][i][j-1] + 0.04f * A[t%2][i][j] + 0.04003999999999999f * A[t%2][i][j+1] + 0.04008f * A[t%2][i][j+2]
            + 0.040119999999999996f * A[t%2][i+1][j-2] + 0.04016f * A[t%2][i+1][j-1] + 0.04019999999999999f * A[t%2][i+1][j] + 0.04024f * A[t%2][i+1][j+1] + 0.040279999999999996f * A[t%2][i+1][j+2]
            + 0.04032f * A[t%2][i+2][j-2] + 0.04035999999999999f * A[t%2][i+2][j-1] + 0.0404f * A[t%2][i+2][j] + 0.04044f * A[t%2][i+2][j+1] + 0.04048f * A[t%2][i+2][j+2];
#pragma endscop
  }
  return (((end_time != 0.0) ? end_time : sb_time()) - start_time);
}
