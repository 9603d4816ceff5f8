/* Comments inside the region, the region nested in several blocks, a typedef for the element
   type, and names that code before and after the region declares again: a t at function scope
   (the region's own loop assigns it) and an else branch with nested blocks that declares its
   own i, j and dimsize. The stencil is the 3x3 box of examples/c/box2d1r.c. */
#define BENCH_DIM 2
#define BENCH_FPP 17
#define BENCH_RAD 1

typedef float real;

double kernel_stencil(real *A1, int compsize, int timestep, bool scop)
{
  int t = 7; /* not the time loop's start */
  int dimsize = compsize + BENCH_RAD * 2;
  real (*A)[dimsize][dimsize] = (real (*)[dimsize][dimsize])A1;

  if (scop) {
    {
      /* the device part */
#pragma scop
      // time loop
      for (t = 0; t < timestep; t++) {
        /* rows */
        for (int i = BENCH_RAD; i < dimsize - BENCH_RAD; i++) {
          // columns
          for (int j = BENCH_RAD; j < dimsize - BENCH_RAD; j++) {
            A[(t+1)%2][i][j] =
              0.11066666666666666f * A[t%2][i-1][j-1] + 0.11077777777777778f * A[t%2][i-1][j] /* north */ + 0.11088888888888888f * A[t%2][i-1][j+1]
              + 0.111f * A[t%2][i][j-1] + 0.1111111111111111f * A[t%2][i][j] + 0.11122222222222221f * A[t%2][i][j+1]
              + 0.11133333333333334f * A[t%2][i+1][j-1] + 0.11144444444444443f * A[t%2][i+1][j] + 0.11155555555555556f * A[t%2][i+1][j+1];
          }
        }
      }
#pragma endscop
    }
  }
  else {
    int dimsize = 3; /* shadows nothing the region sees */
    for (int t = 0; t < timestep; t++) {
      {
        int i, j;
        for (i = 1; i < dimsize - 1; i++) {
          for (j = 1; j < dimsize - 1; j++) {
            A[(t+1)%2][i][j] = A[t%2][i][j];
          }
        }
      }
    }
  }
  return 0.0;
}
