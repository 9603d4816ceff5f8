package errbound

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"tempest/internal/load"
	"tempest/internal/ref"
	"tempest/internal/state"
)

// smallShapes are the sizes the example programs run at, by dimension.
var smallShapes = map[int][]int{1: {41}, 2: {131, 127}, 3: {26, 26, 25}} // above the size where cells spread over cores (ref.ParallelCells)

// TestValuesAreTheReference: the bounded run's values are the reference interpreter's, bit for
// bit, on every example program (all boundary kinds, two time levels, input grids, layers).
func TestValuesAreTheReference(t *testing.T) {
	files, err := filepath.Glob("../../examples/*/*.stencil")
	if err != nil || len(files) < 30 {
		t.Fatalf("examples: %d files, %v", len(files), err)
	}
	for _, f := range files {
		p, err := load.File(f, load.Options{})
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		s, err := state.New(p, smallShapes[p.Dims()], state.DefaultParams(p), 3)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		ref.Init(s)
		want, got := s.Clone(), s.Clone()
		ref.Run(want, 4)
		res := Run(got, 4, CUDAFast)
		for _, g := range p.Grids {
			a, b := want.Cur[g.Index].Float64s(), got.Cur[g.Index].Float64s()
			for i := range a {
				if math.Float64bits(a[i]) != math.Float64bits(b[i]) && !(math.IsNaN(a[i]) && math.IsNaN(b[i])) {
					t.Fatalf("%s grid %s cell %d: bounded run %v, reference %v", f, g.Name, i, b[i], a[i])
				}
			}
		}
		if v := res.Check(want, got); v.Outside != 0 || v.Ratio != 0 {
			t.Errorf("%s: the reference against itself: %+v", f, v)
		}
	}
}

// gradientStep is AN5D's gradient2d step as a fast-math GPU computes it: the sum of squares
// contracted into FMAs, the square root and the division each off by up to their allowance
// (1 and 2 ulp), chosen at random per cell.
func gradientStep(src, dst []float32, n int, rng *rand.Rand) {
	perturb := func(v float32, ulps int) float32 {
		b := int64(math.Float32bits(v)) + int64(rng.IntN(2*ulps+1)-ulps)
		return math.Float32frombits(uint32(b))
	}
	fma := func(a, b, c float32) float32 { return float32(math.FMA(float64(a), float64(b), float64(c))) }
	copy(dst, src)
	for y := 1; y < n-1; y++ {
		for x := 1; x < n-1; x++ {
			i := y*n + x
			c := src[i]
			s := float32(0.0001)
			for _, j := range []int{i - n, i + n, i - 1, i + 1} {
				d := c - src[j]
				s = fma(d, d, s)
			}
			r := perturb(float32(math.Sqrt(float64(s))), 1)
			dst[i] = c + perturb(1/r, 2)
		}
	}
}

// TestBoundHoldsForGradient2d: gradient2d amplifies rounding differences up to thousands of
// times a step, so a fast-math run differs from the reference by far more than its rounding;
// the bound must still hold in every cell, and the amplification must say why.
func TestBoundHoldsForGradient2d(t *testing.T) {
	p, err := load.File("../../examples/an5d/gradient2d.stencil", load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const n, steps = 66, 100
	s, err := state.New(p, []int{n, n}, state.DefaultParams(p), 2)
	if err != nil {
		t.Fatal(err)
	}
	ref.Init(s)
	fast := s.Clone()
	a, b := fast.Cur[0].Data.([]float32), make([]float32, n*n)
	rng := rand.New(rand.NewPCG(1, 2))
	for range steps {
		gradientStep(a, b, n, rng)
		a, b = b, a
	}
	fast.Cur[0].Data = a
	res := Run(s, steps, CUDAFast)
	v := res.Check(s, fast)
	if v.Outside != 0 {
		t.Fatalf("%d of %d cells outside their bound; first %v: difference %g > bound %g", v.Outside, v.Cells, v.Where, v.Diff, v.Bound)
	}
	if v.Ratio == 0 || v.Ratio > 1 {
		t.Fatalf("largest difference/bound %g: the perturbed run should differ, within the bound", v.Ratio)
	}
	if res.Amplification < 100 {
		t.Errorf("amplification %g: gradient2d's 1/sqrt(1e-4 + ...) amplifies up to ~3850x a step", res.Amplification)
	}
	t.Logf("gradient2d %dx%d, %d steps: largest bound %.3g, median %.3g, largest difference/bound %.3g, amplification %.0f",
		n, n, steps, v.MaxB, v.Median, v.Ratio, res.Amplification)
}

// TestBoundIsTightForJacobi: a well-conditioned average keeps its amplification at 1 and a
// bound of a few ulps per step, so verification can still tell a wrong kernel (an error of
// 1e-3) from rounding.
func TestBoundIsTightForJacobi(t *testing.T) {
	p, err := load.File("../../examples/an5d/j2d5pt.stencil", load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := state.New(p, []int{34, 34}, state.DefaultParams(p), 2)
	if err != nil {
		t.Fatal(err)
	}
	ref.Init(s)
	res := Run(s, 100, CUDAFast)
	if res.Amplification > 1.0001 {
		t.Errorf("amplification %g, want 1 for a convex average", res.Amplification)
	}
	v := res.Check(s, s)
	if v.MaxB <= 0 || v.MaxB > 1e-4 {
		t.Errorf("largest bound %g after 100 steps of values below 1: want a few ulps per step", v.MaxB)
	}
	wrong := s.Clone()
	wrong.Cur[0].Data.([]float32)[17*34+17] += 1e-3
	if w := res.Check(s, wrong); w.Outside != 1 || w.Where[0] != 17 || w.Where[1] != 17 {
		t.Errorf("a wrong cell was not caught: %+v", w)
	}
}

func TestUlp(t *testing.T) {
	for _, c := range []struct {
		v       float64
		p, minE int
		want    float64
	}{
		{1, 24, -126, 0x1p-23}, {1.5, 24, -126, 0x1p-23}, {0.75, 24, -126, 0x1p-24}, {-3, 24, -126, 0x1p-22},
		{0, 24, -126, 0x1p-149}, {1e-40, 24, -126, 0x1p-149}, {1, 53, -1022, 0x1p-52}, {0, 53, -1022, 0x1p-1074},
		{math.Inf(1), 24, -126, 0x1p104}, {100, 24, -126, 0x1p-17},
	} {
		if got := ulpOf(c.v, c.p, c.minE); got != c.want {
			t.Errorf("ulp(%g, p=%d) = %g, want %g", c.v, c.p, got, c.want)
		}
	}
}

// TestReassocBoundsAnyOrder: fast-math plans add a sum's terms in another order than the
// written one (lower.orderTerms puts the centre first). Written, a + -a + u/1000 cancels
// exactly before the small term is added; small term first, u/1000 + a rounds at a's ulp
// (values near 1e6) before the cancellation. The fast-math bound (Arith.Reassoc) must hold
// for that order, and the bound of the written order alone must not, or the test shows
// nothing.
func TestReassocBoundsAnyOrder(t *testing.T) {
	p, err := load.Source("t.stencil", "axes x\ntype f32\nstate u\n  init 1000000.0 * rand()\n  boundary fixed\nupdate u = u[x-1] + -u[x-1] + 0.001*u\n", load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 4096
	s, err := state.New(p, []int{n}, state.DefaultParams(p), 1)
	if err != nil {
		t.Fatal(err)
	}
	ref.Init(s)
	eng := s.Clone()
	a := eng.Cur[0].Data.([]float32)
	b := slices.Clone(a)
	for i := 1; i < n-1; i++ {
		r := float32(0.001*a[i]) + a[i-1]
		b[i] = r + -a[i-1]
	}
	eng.Cur[0].Data = b
	written := CUDAFast
	written.Reassoc = false
	for _, c := range []struct {
		arith Arith
		holds bool
	}{{CUDAFast, true}, {written, false}} {
		r := s.Clone()
		v := Run(r, 1, c.arith).Check(r, eng)
		if (v.Outside == 0) != c.holds {
			t.Errorf("reassoc %v: %d of %d cells outside the bound (largest difference/bound %.3g), want the bound to hold: %v", c.arith.Reassoc, v.Outside, v.Cells, v.Ratio, c.holds)
		}
	}
}
