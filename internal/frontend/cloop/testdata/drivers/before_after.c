// Code before and after the region in the same function: a loop that sets the grid up (with
// its own i and j, and an N the region does not use) and a loop that sums the result. The
// stencil is the 9-point star of radius 2 of examples/c/j2d9pt.c; double, as in
// AN5D's double builds.
#define BENCH_RAD 2
#define SB_TYPE double

double run(SB_TYPE *A1, int compsize, int timestep)
{
  int dimsize = compsize + BENCH_RAD * 2;
  SB_TYPE (*A)[dimsize][dimsize] = (SB_TYPE (*)[dimsize][dimsize])A1;
  for (int i = 0; i < dimsize; i++)
    for (int j = 0; j < dimsize; j++) {
      int N = 4;
      A[0][i][j] = A[1][i][j] = (i * N + j) % 17;
    }

#pragma scop
  for (int t = 0; t < timestep; t++)
    for (int i = BENCH_RAD; i < dimsize - BENCH_RAD; i++)
      for (int j = BENCH_RAD; j < dimsize - BENCH_RAD; j++)
        A[(t+1)%2][i][j] =
          (7.1f * A[t%2][i-2][j] + 5.1f * A[t%2][i-1][j] + 9.2f * A[t%2][i][j-2]
           + 12.1f * A[t%2][i][j-1] + 15.0f * A[t%2][i][j] + 12.2f * A[t%2][i][j+1]
           + 9.3f * A[t%2][i][j+2] + 5.2f * A[t%2][i+1][j] + 7.2f * A[t%2][i+2][j]) / 82.4f;
#pragma endscop

  double sum = 0;
  for (int i = 0; i < dimsize; i++)
    for (int j = 0; j < dimsize; j++)
      sum += A[timestep % 2][i][j];
  return sum;
}
