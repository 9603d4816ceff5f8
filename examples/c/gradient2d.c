// gradient2d: AN5D's 2D gradient stencil: the centre plus 1/sqrt(eps + the sum of the squared
// differences to the 4 axis neighbours) (19 FLOP per cell: each difference is written twice, as
// AN5D does). Written as a C loop nest in the form AN5D takes as input
// (an5d-temporal-blocking.txt, Figure 4 and section 4.3): Tempest reads the #pragma scop region,
// where the loops skip BENCH_RAD cells at each end (the fixed boundary). The coefficients are
// those of examples/an5d/gradient2d.stencil, so both give the same result.
//   tempest run examples/c/gradient2d.c --steps 100
#define BENCH_DIM 2
#define BENCH_FPP 19
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
            A[t%2][i][j] + 1.0f / sqrt(0.0001f
              + (A[t%2][i][j] - A[t%2][i-1][j]) * (A[t%2][i][j] - A[t%2][i-1][j])
              + (A[t%2][i][j] - A[t%2][i+1][j]) * (A[t%2][i][j] - A[t%2][i+1][j])
              + (A[t%2][i][j] - A[t%2][i][j-1]) * (A[t%2][i][j] - A[t%2][i][j-1])
              + (A[t%2][i][j] - A[t%2][i][j+1]) * (A[t%2][i][j] - A[t%2][i][j+1]));
#pragma endscop
  }
  return (((end_time != 0.0) ? end_time : sb_time()) - start_time);
}
