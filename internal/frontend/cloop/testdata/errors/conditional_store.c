#pragma scop
for (t = 0; t < T; t++)
  for (i = 1; i < N - 1; i++)
    if (A[t%2][i] > 0.0f)
      A[(t+1)%2][i] = A[t%2][i-1];
    else
      A[(t+1)%2][i] = A[t%2][i+1];
#pragma endscop
