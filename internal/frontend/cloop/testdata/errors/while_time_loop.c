#define N 64
#pragma scop
t = 0;
while (t < T) {
  for (i = 1; i < N - 1; i++)
    for (j = 1; j < N - 1; j++)
      A[(t+1)%2][i][j] = A[t%2][i][j];
  t++;
}
#pragma endscop
