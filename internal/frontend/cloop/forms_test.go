package cloop_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"tempest/internal/cpu"
	"tempest/internal/frontend/twin"
	"tempest/internal/irprint"
	"tempest/internal/load"
	"tempest/internal/ref"
	"tempest/internal/state"
)

// forms are the loop-nest shapes the frontend accepts, each with a .stencil program that means
// the same thing.
var forms = []struct {
	name, c, native string
	params          map[string]float64
}{
	{name: "figure4", c: `
#pragma scop
for (t = 0; t < I_T; t++)
  for (i = 1; i <= I_S2; i++)
    for (j = 1; j <= I_S1; j++)
      A[(t+1)%2][i][j] = (5.1f * A[t%2][i-1][j] + 12.1f * A[t%2][i][j-1] + 15.0f * A[t%2][i][j] +
                          12.2f * A[t%2][i][j+1] + 5.2f * A[t%2][i+1][j]) / 118;
#pragma endscop
`, native: "@../../../examples/an5d/j2d5pt.stencil"},
	{name: "copy_back", c: `
#define N 100
float A[N][N], B[N][N];
#pragma scop
for (t = 0; t < T; t++) {
  for (i = 1; i < N - 1; i++)
    for (j = 1; j < N - 1; j++)
      B[i][j] = 0.25f * (A[i-1][j] + A[i+1][j] + A[i][j-1] + A[i][j+1]);
  for (i = 1; i < N - 1; i++)
    for (j = 1; j < N - 1; j++)
      A[i][j] = B[i][j];
}
#pragma endscop
`, native: `stencil s
axes y, x
type f32
state u
  boundary fixed
update u = 0.25 * (u[y-1] + u[y+1] + u[x-1] + u[x+1])
`},
	{name: "alternating", c: `
#define N 100
double A[N][N], B[N][N];
#pragma scop
for (t = 0; t < T; t++) {
  for (i = 1; i < N - 1; i++)
    for (j = 1; j < N - 1; j++)
      B[i][j] = 0.25 * (A[i-1][j] + A[i+1][j] + A[i][j-1] + A[i][j+1]);
  for (i = 1; i < N - 1; i++)
    for (j = 1; j < N - 1; j++)
      A[i][j] = 0.25 * (B[i-1][j] + B[i+1][j] + B[i][j-1] + B[i][j+1]);
}
#pragma endscop
`, native: `stencil s
axes y, x
type f64
state u
  boundary fixed
update u = 0.25 * (u[y-1] + u[y+1] + u[x-1] + u[x+1])
`},
	{name: "two_levels", c: `
float c = 0.25f;
float U[3][N][N];
#pragma scop
for (t = 0; t < T; t++)
  for (i = 1; i < N - 1; i++)
    for (j = 1; j < N - 1; j++)
      U[(t+2)%3][i][j] = 2.0f * U[(t+1)%3][i][j] - U[t%3][i][j]
        + c * (U[(t+1)%3][i-1][j] + U[(t+1)%3][i+1][j] + U[(t+1)%3][i][j-1] + U[(t+1)%3][i][j+1] - 4.0f * U[(t+1)%3][i][j]);
#pragma endscop
`, native: `stencil s
axes y, x
type f32
param c = 0.25
state u
  levels 2
  boundary fixed
update u = 2.0 * u - u.prev + c * (u[y-1] + u[y+1] + u[x-1] + u[x+1] - 4.0 * u)
`},
	{name: "locals_inputs_unrolled", c: `
#define R 2
double A[2][n], W[n];
#pragma scop
for (t = 0; t < T; t++)
  for (i = R; i < n - R; i++) {
    double s = 0.0;
    for (int k = -R; k <= R; k++)
      s += A[t%2][i+k];
    if (s > 2.5)
      s = s * 0.5;
    else
      s = s + W[i];
    A[(t+1)%2][i] = s / 5;
  }
#pragma endscop
`, native: `stencil s
axes x
type f64
input w
state u
  boundary fixed
let s0 = f64(0.0) + u[x-2] + u[x-1] + u + u[x+1] + u[x+2]
update u = select(s0 > 2.5, s0 * 0.5, s0 + w) / 5
`},
	{name: "two_grids", c: `
#pragma scop
for (t = 0; t < T; t++)
  for (z = 1; z < N - 1; z++)
    for (y = 1; y < N - 1; y++)
      for (x = 1; x < N - 1; x++) {
        A[(t+1)%2][z][y][x] = 0.5f * A[t%2][z-1][y][x] + 0.25f * B[t%2][z][y+1][x] + 0.25f * A[t%2][z][y][x+1];
        B[(t+1)%2][z][y][x] = 0.5f * B[t%2][z+1][y][x] - 0.25f * A[t%2][z][y-1][x] + 0.25f * B[t%2][z][y][x-1];
      }
#pragma endscop
`, native: `stencil s
axes z, y, x
type f32
state a
  boundary fixed
state b
  boundary fixed
update a = 0.5 * a[z-1] + 0.25 * b[y+1] + 0.25 * a[x+1]
update b = 0.5 * b[z+1] - 0.25 * a[y-1] + 0.25 * b[x-1]
`},
}

// TestForms checks each accepted loop-nest form against its .stencil meaning: same analysis,
// same rim, and bitwise the same grids after a few steps from the same data.
func TestForms(t *testing.T) {
	for _, f := range forms {
		t.Run(f.name, func(t *testing.T) {
			c, err := load.Source(f.name+".c", f.c, load.Options{})
			if err != nil {
				t.Fatal(err)
			}
			native := f.native
			if strings.HasPrefix(native, "@") {
				b, err := os.ReadFile(native[1:])
				if err != nil {
					t.Fatal(err)
				}
				native = string(b)
			}
			n, err := load.Source(f.name+".stencil", native, load.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := twin.SameAnalysis(c, n); err != nil {
				t.Fatalf("analysis differs: %v\n%s", err, irprint.Stencil(c))
			}
			for i, u := range c.Updates {
				if got, want := fmt.Sprint(u.Grid.Rim), fmt.Sprint(n.Updates[i].Grid.Rim); got != want {
					t.Fatalf("grid %s: rim %s, want %s", u.Grid.Name, got, want)
				}
			}
			shape := map[int][]int{1: {37}, 2: {19, 23}, 3: {11, 10, 13}}[c.Dims()]
			a, err := twin.Run(c, shape, f.params, 5, 5, false)
			if err != nil {
				t.Fatal(err)
			}
			b, err := twin.Run(n, shape, f.params, 5, 5, false)
			if err != nil {
				t.Fatal(err)
			}
			if err := twin.SameState(a, b); err != nil {
				t.Fatalf("%v\n%s", err, irprint.Stencil(c))
			}
		})
	}
}

// TestWideRim: loops that skip more cells than the stencil reaches keep that many fixed; the
// reference and the CPU engine agree, and the printer says it cannot express it.
func TestWideRim(t *testing.T) {
	src := `
#define N 64
float A[2][N][N];
#pragma scop
for (t = 0; t < T; t++)
  for (i = 3; i < N - 3; i++)
    for (j = 2; j < N - 2; j++)
      A[(t+1)%2][i][j] = 0.5f * (A[t%2][i-1][j] + A[t%2][i][j+1]);
#pragma endscop
`
	p, err := load.Source("wide.c", src, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(p.Grids[0].Rim); got != "[3 2]" {
		t.Fatalf("rim %s, want [3 2]", got)
	}
	if len(irprint.Inexpressible(p)) == 0 {
		t.Fatal("a rim wider than the reach should be reported as inexpressible")
	}
	s, err := state.New(p, []int{19, 23}, state.DefaultParams(p), 3)
	if err != nil {
		t.Fatal(err)
	}
	twin.Fill(s, 1, false)
	before := s.Clone()
	want := s.Clone()
	ref.Run(want, 3)
	e := cpu.New(s)
	e.Run(3, nil)
	e.Sync()
	if err := twin.SameState(want, s); err != nil {
		t.Fatal(err)
	}
	x, y := before.Cur[0].Float64s(), s.Cur[0].Float64s()
	for _, cell := range []int{0, 2*23 + 10, 23*18 - 1, 5*23 + 1, 5*23 + 21} { // rim cells
		if x[cell] != y[cell] {
			t.Fatalf("rim cell %d changed", cell)
		}
	}
	if x[5*23+2] == y[5*23+2] {
		t.Fatal("interior cell did not change")
	}
}
