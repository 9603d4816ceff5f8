// star3d1r on the CPU, a yardstick for Tempest's CPU engine (docs/performance.md): the same
// update, coefficients and fixed boundary as examples/an5d/star3d1r.stencil, in float.
// Build: gcc -O3 -fopenmp star3d1r.c -o star3d1r ; run: ./star3d1r N STEPS
#include <stdio.h>
#include <stdlib.h>
#include <omp.h>

int main(int argc, char **argv) {
  long n = argc > 1 ? atoi(argv[1]) : 256;
  int steps = argc > 2 ? atoi(argv[2]) : 50;
  float *a = malloc(sizeof(float) * n * n * n), *b = malloc(sizeof(float) * n * n * n);
  for (long i = 0; i < n * n * n; i++) a[i] = b[i] = (float)(i % 1000) / 1000.0f;
  long s = n * n;
  double t0 = omp_get_wtime();
  for (int t = 0; t < steps; t++) {
#pragma omp parallel for schedule(static)
    for (long z = 1; z < n - 1; z++)
      for (long y = 1; y < n - 1; y++)
        for (long x = 1; x < n - 1; x++) {
          long i = z * s + y * n + x;
          b[i] = 0.22f * a[i] + 0.125f * a[i - s] + 0.127f * a[i + s] + 0.129f * a[i - n] + 0.131f * a[i + n] +
                 0.133f * a[i - 1] + 0.135f * a[i + 1];
        }
    float *t2 = a; a = b; b = t2;
  }
  double sec = omp_get_wtime() - t0;
  double cells = (double)(n - 2) * (n - 2) * (n - 2) * steps;
  printf("star3d1r C -O3 -fopenmp: %ldx%ldx%ld, %d steps, %d threads: %.3f s, %.3f GCells/s, %.2f GFLOP/s (checksum %g)\n",
         n, n, n, steps, omp_get_max_threads(), sec, cells / sec / 1e9, cells * 13 / sec / 1e9, (double)a[n * n * n / 2 + n * n / 2 + n / 2]);
  return 0;
}
