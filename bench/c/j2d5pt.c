// j2d5pt on the CPU, the yardstick for Tempest's CPU engine (docs/performance.md).
// The same update, coefficients and fixed boundary as examples/an5d/j2d5pt.stencil, in float.
// Build: gcc -O3 -fopenmp j2d5pt.c -o j2d5pt ; run: ./j2d5pt N STEPS
#include <stdio.h>
#include <stdlib.h>
#include <omp.h>

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 4096;
  int steps = argc > 2 ? atoi(argv[2]) : 100;
  float *a = malloc(sizeof(float) * n * n), *b = malloc(sizeof(float) * n * n);
  for (int i = 0; i < n * n; i++) a[i] = b[i] = (float)(i % 1000) / 1000.0f;
  double t0 = omp_get_wtime();
  for (int t = 0; t < steps; t++) {
#pragma omp parallel for schedule(static)
    for (int y = 1; y < n - 1; y++)
      for (int x = 1; x < n - 1; x++)
        b[y * n + x] = (5.1f * a[(y - 1) * n + x] + 12.1f * a[y * n + x - 1] + 15.0f * a[y * n + x] +
                        12.2f * a[y * n + x + 1] + 5.2f * a[(y + 1) * n + x]) / 118.0f;
    float *t2 = a; a = b; b = t2;
  }
  double s = omp_get_wtime() - t0;
  double cells = (double)(n - 2) * (n - 2) * steps;
  printf("j2d5pt C -O3 -fopenmp: %dx%d, %d steps, %d threads: %.3f s, %.3f GCells/s, %.2f GFLOP/s (checksum %g)\n",
         n, n, steps, omp_get_max_threads(), s, cells / s / 1e9, cells * 10 / s / 1e9, (double)a[n * n / 2 + n / 2]);
  return 0;
}
