#define N 64
float A[2][N][N];
#pragma scop
for (t = 0; t < T; t++)
  for (i = 1; i < N - 1; i++)
    for (j = 1; j < N - 2; j++)
      A[(t+1)%2][i][j] = 0.5f * (A[t%2][i-1][j] + A[t%2][i][j+1]);
#pragma endscop
