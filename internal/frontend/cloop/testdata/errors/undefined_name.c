#define N 64
#pragma scop
for (t = 0; t < T; t++)
  for (i = 1; i < N - 1; i++)
    for (j = 1; j < N - 1; j++)
      A[(t+1)%2][i][j] = alpha * A[t%2][i][j];
#pragma endscop
