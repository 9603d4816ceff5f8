#define N 64
#pragma scop
for (t = 0; t < T; t++)
  for (i = 1; i < N - 1; i++)
    for (j = 1; j < N - 1; j++)
      B[i * N + j] = 0.25f * (A[i * N + j - 1] + A[i * N + j + 1]);
#pragma endscop
