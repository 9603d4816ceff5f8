// A whole benchmark program around one scop region: the harness (options, timing, set-up,
// checking) before and after it, with code Tempest does not translate (strings, character
// constants, switch, function-like macros, conditional compilation). The stencil is the 3D
// star of radius 1 of examples/c/star3d1r.c.
#define BENCH_DIM 3
#define BENCH_FPP 13
#define BENCH_RAD 1

#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <getopt.h>
#include <time.h>

#ifndef SB_TYPE
#define SB_TYPE float
#endif
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define SB_START do { start_time = sb_time(); } while (0)

static int verbose = 0;

double sb_time(void)
{
  struct timespec tp;
  if (clock_gettime(CLOCK_MONOTONIC, &tp) != 0)
    perror("clock_gettime: \"failed\"\n");
  return (tp.tv_sec + tp.tv_nsec * 1.0e-9) * 1.0e3;
}

void init_grid(SB_TYPE *A, int compsize)
{
  size_t area = 1, dimsize = compsize + BENCH_RAD * 2;
  for (int i = 0; i < BENCH_DIM; i++)
    area *= dimsize;
#pragma omp parallel for
  for (size_t i = 0; i < area; i++) {
    unsigned int seed = i + compsize;
    A[i] = A[area + i] = 1000 * (SB_TYPE)rand_r(&seed) / (SB_TYPE)RAND_MAX;
  }
}

double kernel_stencil(SB_TYPE *A1, int compsize, int timestep, bool scop)
{
  double start_time = 0.0, end_time = 0.0;
  int dimsize = compsize + BENCH_RAD * 2;
  SB_TYPE (*A)[dimsize][dimsize][dimsize]
    = (SB_TYPE (*)[dimsize][dimsize][dimsize])A1;

  SB_START;
  if (scop) {
#pragma scop
    for (int t = 0; t < timestep; t++)
      for (int i = BENCH_RAD; i < dimsize - BENCH_RAD; i++)
        for (int j = BENCH_RAD; j < dimsize - BENCH_RAD; j++)
          for (int k = BENCH_RAD; k < dimsize - BENCH_RAD; k++)
            A[(t+1)%2][i][j][k] =
              0.22f * A[t%2][i][j][k] +
              0.125f * A[t%2][i-1][j][k] + 0.127f * A[t%2][i+1][j][k] +
              0.129f * A[t%2][i][j-1][k] + 0.131f * A[t%2][i][j+1][k] +
              0.133f * A[t%2][i][j][k-1] + 0.135f * A[t%2][i][j][k+1];
#pragma endscop
  } else {
#ifdef _OPENMP
    if (verbose) printf("%d threads\n", omp_get_max_threads());
#endif
    for (int t = 0; t < timestep; t++)
#pragma omp parallel for collapse(2)
      for (int i = BENCH_RAD; i < dimsize - BENCH_RAD; i++)
        for (int j = BENCH_RAD; j < dimsize - BENCH_RAD; j++)
          for (int k = BENCH_RAD; k < dimsize - BENCH_RAD; k++)
            A[(t+1)%2][i][j][k] =
              0.22f * A[t%2][i][j][k] +
              0.125f * A[t%2][i-1][j][k] + 0.127f * A[t%2][i+1][j][k] +
              0.129f * A[t%2][i][j-1][k] + 0.131f * A[t%2][i][j+1][k] +
              0.133f * A[t%2][i][j][k-1] + 0.135f * A[t%2][i][j][k+1];
  }
  end_time = sb_time();
  return end_time - start_time;
}

int main(int argc, char **argv)
{
  int compsize = 512, timestep = 120, reps = 2, opt;
  bool cpucomp = false;
  while ((opt = getopt(argc, argv, "s:t:n:ch")) != -1) {
    switch (opt) {
    case 's': compsize = MAX(1, atoi(optarg)); break;
    case 't': timestep = atoi(optarg); break;
    case 'n': reps = atoi(optarg); break;
    case 'c': cpucomp = true; break;
    default: fprintf(stderr, "usage: %s [-s N] [-t T] [-n R] [-c]\n", argv[0]); return 1;
    }
  }
  size_t area = (size_t)(compsize + 2) * (compsize + 2) * (compsize + 2);
  SB_TYPE *A = malloc(2 * area * sizeof(SB_TYPE));
  for (int n = 0; n < reps; n++) {
    init_grid(A, compsize);
    printf("%7d: %10.4f ms\n", n, kernel_stencil(A, compsize, timestep, true));
  }
  if (cpucomp)
    printf("%.4f ms\n", kernel_stencil(A, compsize, timestep, false));
  free(A);
  return 0;
}
