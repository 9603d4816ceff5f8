package sl_test

import (
	"testing"

	"tempest/internal/frontend/twin"
	"tempest/internal/irprint"
	"tempest/internal/load"
)

// features are SL programs that exercise the C subset, each with a .stencil program that means
// the same thing: the translation must analyse the same and compute bitwise the same.
var features = []struct {
	name, sl, native string
	params           map[string]float64
	binary           bool
}{
	{name: "early_return", sl: `
NumDimensions 1
DataType float
CellValue {
  float c = get(0);
  if (c > 0.5) return c * 2;
  if (c < 0.1) { c = c + 1; } else { c = c - 1; }
  return c + get(1) + get(-1);
}
EdgeValue { return 0.0; }
`, native: `stencil s
axes x
type f32
state u
  boundary edge(0.0)
update u = select(u > 0.5, u * 2, select(u < 0.1, u + 1, u - 1) + u[x+1] + u[x-1])
`},
	{name: "casts_and_integers", sl: `
NumDimensions 2
StencilSize (1, 1)
DataType double
CellValue {
  int k = (int)(get(0, 0) * 3);
  double r = k / 2;
  double q = (double)k / 2;
  return r + q + get(1, 0) * 0.25;
}
EdgeValue { return value; }
`, native: `stencil s
axes y, x
type f64
state u
  boundary edge(value)
let k = i32(u * 3)
update u = f64(k / 2) + f64(k) / 2 + u[x+1] * 0.25
`},
	{name: "unrolled_loops", sl: `
NumDimensions 2
StencilSize (2, 2)
DataType float
CellValue {
  float s = 0;
  int i, j;
  for (j = -2; j <= 2; j++) {
    if (j == 0) continue;
    for (i = -2; i <= 2; i += 2) {
      if (i > 0 && j > 1) break;
      s += (i == 0 ? 2.0 : 1.0) * get(i, j);
    }
  }
  return s / 8;
}
EdgeValue { return value; }
`, native: `stencil s
axes y, x
type f32
state u
  boundary edge(value)
update u = (f32(0) + 1.0 * u[y-2, x-2] + 2.0 * u[y-2] + 1.0 * u[y-2, x+2]
  + 1.0 * u[y-1, x-2] + 2.0 * u[y-1] + 1.0 * u[y-1, x+2]
  + 1.0 * u[y+1, x-2] + 2.0 * u[y+1] + 1.0 * u[y+1, x+2]
  + 1.0 * u[y+2, x-2] + 2.0 * u[y+2]) / 8
`},
	{name: "builtins", sl: `
NumDimensions 2
StencilSize (1, 1)
DataType float
ScalarVariables (float k = 0.5, int n = 3)
CellValue {
  float far = x > input_size.x / 2 ? 1 : 0;
  if (iteration % n == 0)
    return get(0, 0) * k + far;
  return fmaxf(get(0, -1), get(0, 1)) + sqrtf(fabsf(get(-1, 0)));
}
EdgeValue {
  if (x < 0 || y >= input_size.y) return k * iteration;
  return value;
}
`, native: `stencil s
axes y, x
type f32
param k = 0.5
param n: i32 = 3
state u
  boundary edge(select(x < 0 || y >= size(y), k * (step + 1), value))
let far = f32(select(x > size(x) / 2, 1, 0))
update u = select((step + 1) % n == 0, u * k + far, max(u[y-1], u[y+1]) + sqrt(abs(u[x-1])))
`},
	{name: "merged_variable_reused", sl: `
NumDimensions 1
DataType float
CellValue {
  float a;
  if (get(0) > 0.5)
    a = get(1) * 2;
  else
    a = get(-1) * 3;
  return a * a + a;
}
EdgeValue { return value; }
`, native: `stencil s
axes x
type f32
state u
  boundary edge(value)
let a = select(u > 0.5, u[x+1] * 2, u[x-1] * 3)
update u = a * a + a
`},
}

func TestFeatures(t *testing.T) {
	for _, f := range features {
		t.Run(f.name, func(t *testing.T) {
			s, err := load.Source(f.name+".sl", f.sl, load.Options{})
			if err != nil {
				t.Fatal(err)
			}
			n, err := load.Source(f.name+".stencil", f.native, load.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := twin.SameAnalysis(s, n); err != nil {
				t.Fatalf("analysis differs: %v\n%s", err, irprint.Stencil(s))
			}
			shape := smallShapes[s.Dims()]
			a, err := twin.Run(s, shape, f.params, 7, 3, f.binary)
			if err != nil {
				t.Fatal(err)
			}
			b, err := twin.Run(n, shape, f.params, 7, 3, f.binary)
			if err != nil {
				t.Fatal(err)
			}
			if err := twin.SameState(a, b); err != nil {
				t.Fatalf("%v\n%s", err, irprint.Stencil(s))
			}
		})
	}
}
