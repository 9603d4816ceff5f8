// j2d5pt: AN5D's 2D Jacobi 5-point stencil as a C loop nest, in the form AN5D takes as input
// (an5d-temporal-blocking.txt, Figure 4 and section 4.3). Tempest reads the #pragma scop region:
// the time loop, the two spatial loops and the statement; the loops skip BENCH_RAD cells at each
// end, which becomes the fixed boundary. Coefficients as in examples/an5d/j2d5pt.stencil, so both
// give the same result:  tempest run examples/c/j2d5pt.c --size 512x512 --steps 100
#define BENCH_DIM 2
#define BENCH_FPP 10
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
            (5.1f * A[t%2][i-1][j] + 12.1f * A[t%2][i][j-1] + 15.0f * A[t%2][i][j] +
             12.2f * A[t%2][i][j+1] + 5.2f * A[t%2][i+1][j]) / 118;
#pragma endscop
  }
  return (((end_time != 0.0) ? end_time : sb_time()) - start_time);
}
