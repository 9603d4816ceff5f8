// j2d9pt-gol: AN5D's 2D Jacobi 9-point box stencil of radius 1 (the Game-of-Life neighbourhood): a
// weighted sum divided by a constant (18 FLOP per cell). Written as a C loop nest in the form AN5D
// takes as input (an5d-temporal-blocking.txt, Figure 4 and section 4.3): Tempest reads the #pragma
// scop region, where the loops skip BENCH_RAD cells at each end (the fixed boundary). The
// coefficients are those of examples/an5d/j2d9pt-gol.stencil, so both give the same result.
//   tempest run examples/c/j2d9pt-gol.c --steps 100
#define BENCH_DIM 2
#define BENCH_FPP 18
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
            (7.1f * A[t%2][i-1][j-1] + 5.1f * A[t%2][i-1][j] + 9.2f * A[t%2][i-1][j+1]
             + 12.1f * A[t%2][i][j-1] + 15.0f * A[t%2][i][j] + 12.2f * A[t%2][i][j+1]
             + 9.3f * A[t%2][i+1][j-1] + 5.2f * A[t%2][i+1][j] + 7.2f * A[t%2][i+1][j+1]) / 82.4f;
#pragma endscop
  }
  return (((end_time != 0.0) ? end_time : sb_time()) - start_time);
}
