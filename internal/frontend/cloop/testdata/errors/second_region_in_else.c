#define N 64
float A[2][N][N];
void kernel(int T, bool scop)
{
  if (scop) {
#pragma scop
    for (int t = 0; t < T; t++)
      for (int i = 1; i < N - 1; i++)
        for (int j = 1; j < N - 1; j++)
          A[(t+1)%2][i][j] = 0.5f * A[t%2][i][j];
#pragma endscop
  } else {
#pragma scop
    for (int t = 0; t < T; t++)
      for (int i = 1; i < N - 1; i++)
        for (int j = 1; j < N - 1; j++)
          A[(t+1)%2][i][j] = 0.5f * A[t%2][i][j];
#pragma endscop
  }
}
