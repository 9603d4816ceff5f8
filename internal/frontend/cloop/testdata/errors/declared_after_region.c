#define BENCH_RAD 1
double kernel_stencil(float *A1, int compsize, int timestep, bool scop)
{
  int dimsize = compsize + BENCH_RAD * 2;
  float (*A)[dimsize][dimsize] = (float (*)[dimsize][dimsize])A1;
  if (scop) {
#pragma scop
    for (int t = 0; t < timestep; t++)
      for (int i = BENCH_RAD; i < dimsize - BENCH_RAD; i++)
        for (int j = BENCH_RAD; j < dimsize - BENCH_RAD; j++)
          A[(t+1)%2][i][j] = c0 * A[t%2][i][j];
#pragma endscop
  } else {
    float c0 = 0.5f;
    for (int t = 0; t < timestep; t++)
      for (int i = BENCH_RAD; i < dimsize - BENCH_RAD; i++)
        for (int j = BENCH_RAD; j < dimsize - BENCH_RAD; j++)
          A[(t+1)%2][i][j] = c0 * A[t%2][i][j];
  }
  return 0.0;
}
