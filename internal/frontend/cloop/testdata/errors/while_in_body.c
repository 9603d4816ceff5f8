#define N 64
#pragma scop
for (t = 0; t < T; t++)
  for (i = 1; i < N - 1; i++)
    for (j = 1; j < N - 1; j++)
      {
        float s = 0.0f;
        int k = -1;
        while (k <= 1) { s += A[t%2][i+k][j]; k++; }
        A[(t+1)%2][i][j] = s;
      }
#pragma endscop
