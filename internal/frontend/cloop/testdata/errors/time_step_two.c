#pragma scop
for (t = 0; t < T; t += 2)
  for (i = 1; i < N - 1; i++)
    A[(t+1)%2][i] = A[t%2][i-1];
#pragma endscop
