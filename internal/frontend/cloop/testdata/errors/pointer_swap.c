#define N 64
#pragma scop
for (t = 0; t < T; t++) {
  for (i = 1; i < N - 1; i++)
    for (j = 1; j < N - 1; j++)
      B[i][j] = 0.5f * (A[i-1][j] + A[i+1][j]);
  tmp = A;
  A = B;
  B = tmp;
}
#pragma endscop
