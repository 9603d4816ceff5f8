package ir

import (
	"math"
	"math/rand"
	"testing"
)

// TestReduceOrder pins the language's reduction order: pairwise trees over chunks of
// ReduceWidth, then trees of the chunks' results.
func TestReduceOrder(t *testing.T) {
	// In the tree, 1e16 meets -1e16 first (stride 2 pairs values 0 and 2, 1 and 3), so the
	// ones survive: (1e16 + -1e16) + (1 + 1) = 2. Left to right, 1e16 + 1 rounds back to 1e16
	// and the sum is 0.
	if got := ReduceF64("sum", []float64{1e16, 1, -1e16, 1}); got != 2 {
		t.Errorf("tree sum = %v, want 2", got)
	}
	// Across chunks: each chunk is one tree, then the chunks' results form another tree.
	vals := make([]float64, 3*ReduceWidth+5)
	rng := rand.New(rand.NewSource(1))
	for i := range vals {
		vals[i] = rng.Float64()*2 - 1
	}
	add := func(a, b float64) float64 { return a + b }
	var parts []float64
	for lo := 0; lo < len(vals); lo += ReduceWidth {
		parts = append(parts, ReduceTree(vals[lo:min(len(vals), lo+ReduceWidth)], math.Copysign(0, -1), add))
	}
	want := ReduceTree(parts, math.Copysign(0, -1), add)
	if got := ReduceF64("sum", vals); math.Float64bits(got) != math.Float64bits(want) {
		t.Errorf("chunked sum = %v, want %v", got, want)
	}
	// -0 is the sum's identity: a sum of -0 values stays -0.
	if got := ReduceF64("sum", []float64{math.Copysign(0, -1)}); !math.Signbit(got) {
		t.Errorf("sum of -0 = %v, want -0", got)
	}
	if got := ReduceI64("sum", []int64{math.MaxInt64, 1, 5}); got != math.MinInt64+5 {
		t.Errorf("integer sums wrap: %d", got)
	}
}

// TestMaxMinOrderFree: max and min ignore NaN and order -0 below +0, so any order of the
// values gives the same bits.
func TestMaxMinOrderFree(t *testing.T) {
	nan, negz := math.NaN(), math.Copysign(0, -1)
	for _, c := range []struct {
		vals     []float64
		max, min float64
	}{
		{[]float64{nan, 3, nan, -2}, 3, -2},
		{[]float64{negz, 0, negz}, 0, negz},
		{[]float64{negz, negz}, negz, negz},
		{[]float64{0, 0}, 0, 0},
		{[]float64{nan, nan}, nan, nan},
		{[]float64{math.Inf(-1), nan, math.Inf(1)}, math.Inf(1), math.Inf(-1)},
	} {
		rng := rand.New(rand.NewSource(2))
		for k := 0; k < 20; k++ {
			v := append([]float64(nil), c.vals...)
			rng.Shuffle(len(v), func(i, j int) { v[i], v[j] = v[j], v[i] })
			for _, op := range []string{"max", "min"} {
				want := c.max
				if op == "min" {
					want = c.min
				}
				got := ReduceF64(op, v)
				if math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
					t.Errorf("%s%v = %v, want %v", op, v, got, want)
				}
			}
		}
	}
}
