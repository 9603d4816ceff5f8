// grayscott on the CPU, a yardstick for Tempest's CPU engine (docs/performance.md): the same
// update, parameters and periodic boundary (wrapped neighbour indices) as examples/demos/grayscott.stencil,
// in float, with similar initial data (two squares seeded, 1% noise as in the example, so that
// no value drifts into the slow subnormal range; the exact pattern does not change the work).
// Build: gcc -O3 -fopenmp grayscott.c -o grayscott ; run: ./grayscott N STEPS
#include <stdio.h>
#include <stdlib.h>
#include <omp.h>

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 1024;
  int steps = argc > 2 ? atoi(argv[2]) : 200;
  const float F = 0.037f, k = 0.06f, Du = 0.2097f, Dv = 0.105f;
  float *u = malloc(sizeof(float) * n * n), *v = malloc(sizeof(float) * n * n);
  float *u2 = malloc(sizeof(float) * n * n), *v2 = malloc(sizeof(float) * n * n);
  for (int y = 0; y < n; y++)
    for (int x = 0; x < n; x++) {
      int seed = (abs(x - n / 2) < n / 24 && abs(y - n / 2) < n / 24) || (abs(x - n / 5) < n / 32 && abs(y - n / 3) < n / 32);
      unsigned h1 = (unsigned)(y * n + x) * 2654435761u, h2 = h1 * 2246822519u + 3266489917u;
      u[y * n + x] = (seed ? 0.5f : 1.0f) + 0.01f * ((float)(h1 >> 8) / 16777216.0f - 0.5f);
      v[y * n + x] = (seed ? 0.25f : 0.0f) + 0.01f * ((float)(h2 >> 8) / 16777216.0f - 0.5f);
    }
  double t0 = omp_get_wtime();
  for (int t = 0; t < steps; t++) {
#pragma omp parallel for schedule(static)
    for (int y = 0; y < n; y++) {
      int ym = (y - 1 + n) % n, yp = (y + 1) % n;
      for (int x = 0; x < n; x++) {
        int xm = x == 0 ? n - 1 : x - 1, xp = x == n - 1 ? 0 : x + 1;
        float uc = u[y * n + x], vc = v[y * n + x];
        float uvv = uc * vc * vc;
        float lapu = u[ym * n + x] + u[yp * n + x] + u[y * n + xm] + u[y * n + xp] - 4 * uc;
        float lapv = v[ym * n + x] + v[yp * n + x] + v[y * n + xm] + v[y * n + xp] - 4 * vc;
        u2[y * n + x] = uc + Du * lapu - uvv + F * (1 - uc);
        v2[y * n + x] = vc + Dv * lapv + uvv - (F + k) * vc;
      }
    }
    float *tu = u, *tv = v;
    u = u2; v = v2; u2 = tu; v2 = tv;
  }
  double s = omp_get_wtime() - t0;
  double cells = (double)n * n * steps;
  printf("grayscott C -O3 -fopenmp: %dx%d, %d steps, %d threads: %.3f s, %.3f GCells/s, %.2f GFLOP/s (checksum %g)\n",
         n, n, steps, omp_get_max_threads(), s, cells / s / 1e9, cells * 24 / s / 1e9, (double)u[n * n / 2 + n / 2]);
  return 0;
}
