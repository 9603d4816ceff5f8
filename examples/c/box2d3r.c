// box2d3r: AN5D's synthetic 2D box stencil of radius 3: a weighted sum of the 7x7 box (97 FLOP per
// cell). Written as a C loop nest in the form AN5D takes as input (an5d-temporal-blocking.txt,
// Figure 4 and section 4.3): Tempest reads the #pragma scop region, where the loops skip BENCH_RAD
// cells at each end (the fixed boundary). The coefficients are those of
// examples/an5d/box2d3r.stencil, so both give the same result. Each coefficient is (1 +
// 0.001*(7*di + dj)) / 49, written out as the twin's checker folds it.
//   tempest run examples/c/box2d3r.c --steps 100
#define BENCH_DIM 2
#define BENCH_FPP 97
#define BENCH_RAD 3

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
            0.019918367346938776f * A[t%2][i-3][j-3] + 0.019938775510204083f * A[t%2][i-3][j-2] + 0.019959183673469386f * A[t%2][i-3][j-1] + 0.019979591836734693f * A[t%2][i-3][j] + 0.02f * A[t%2][i-3][j+1] + 0.020020408163265307f * A[t%2][i-3][j+2] + 0.02004081632653061f * A[t%2][i-3][j+3]
            + 0.020061224489795918f * A[t%2][i-2][j-3] + 0.020081632653061225f * A[t%2][i-2][j-2] + 0.02010204081632653f * A[t%2][i-2][j-1] + 0.020122448979591836f * A[t%2][i-2][j] + 0.020142857142857143f * A[t%2][i-2][j+1] + 0.02016326530612245f * A[t%2][i-2][j+2] + 0.020183673469387754f * A[t%2][i-2][j+3]
            + 0.02020408163265306f * A[t%2][i-1][j-3] + 0.020224489795918368f * A[t%2][i-1][j-2] + 0.020244897959183675f * A[t%2][i-1][j-1] + 0.02026530612244898f * A[t%2][i-1][j] + 0.020285714285714285f * A[t%2][i-1][j+1] + 0.020306122448979592f * A[t%2][i-1][j+2] + 0.0203265306122449f * A[t%2][i-1][j+3]
            + 0.020346938775510203f * A[t%2][i][j-3] + 0.02036734693877551f * A[t%2][i][j-2] + 0.020387755102040817f * A[t%2][i][j-1] + 0.02040816326530612f * A[t%2][i][j] + 0.020428571428571428f * A[t%2][i][j+1] + 0.020448979591836735f * A[t%2][i][j+2] + 0.02046938775510204f * A[t%2][i][j+3]
            + 0.020489795918367346f * A[t%2][i+1][j-3] + 0.02051020408163265f * A[t%2][i+1][j-2] + 0.02053061224489796f * A[t%2][i+1][j-1] + 0.020551020408163263f * A[t%2][i+1][j] + 0.02057142857142857f * A[t%2][i+1][j+1] + 0.020591836734693874f * A[t%2][i+1][j+2] + 0.020612244897959184f * A[t%2][i+1][j+3]
            + 0.020632653061224488f * A[t%2][i+2][j-3] + 0.020653061224489795f * A[t%2][i+2][j-2] + 0.0206734693877551f * A[t%2][i+2][j-1] + 0.02069387755102041f * A[t%2][i+2][j] + 0.020714285714285713f * A[t%2][i+2][j+1] + 0.02073469387755102f * A[t%2][i+2][j+2] + 0.020755102040816324f * A[t%2][i+2][j+3]
            + 0.020775510204081634f * A[t%2][i+3][j-3] + 0.020795918367346938f * A[t%2][i+3][j-2] + 0.020816326530612245f * A[t%2][i+3][j-1] + 0.02083673469387755f * A[t%2][i+3][j] + 0.02085714285714286f * A[t%2][i+3][j+1] + 0.020877551020408162f * A[t%2][i+3][j+2] + 0.02089795918367347f * A[t%2][i+3][j+3];
#pragma endscop
  }
  return (((end_time != 0.0) ? end_time : sb_time()) - start_time);
}
