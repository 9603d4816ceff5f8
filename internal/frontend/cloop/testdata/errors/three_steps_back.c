#pragma scop
for (t = 0; t < T; t++)
  for (i = 1; i < N - 1; i++)
    A[(t+3)%4][i] = A[(t+2)%4][i-1] + A[t%4][i+1];
#pragma endscop
