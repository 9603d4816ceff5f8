package gridio

import (
	"bytes"
	"math"
	"testing"
)

// TestSeriesCSV: the CSV reads back bit for bit, special values included.
func TestSeriesCSV(t *testing.T) {
	s := &Series{Names: []string{"maxdiff", "energy"}, Steps: []int{0, 100, 137},
		Values: [][]float64{{0, math.Copysign(0, -1)}, {1.0 / 3, math.Inf(1)}, {math.NaN(), 5e-324}}}
	text := string(s.CSV())
	want := "step,maxdiff,energy\n0,0,-0\n100,0.3333333333333333,+Inf\n137,NaN,5e-324\n"
	if text != want {
		t.Fatalf("CSV:\n%s\nwant:\n%s", text, want)
	}
	back, err := ParseSeriesCSV(text)
	if err != nil {
		t.Fatal(err)
	}
	for r := range s.Values {
		for k, v := range s.Values[r] {
			if w := back.Values[r][k]; math.Float64bits(v) != math.Float64bits(w) && !(math.IsNaN(v) && math.IsNaN(w)) {
				t.Errorf("row %d column %d: %v read back as %v", r, k, v, w)
			}
		}
	}
	if _, err := ParseSeriesCSV("time,a\n0,1\n"); err == nil {
		t.Error("a header without step was accepted")
	}
}

// TestSeriesPNG: the plot is a PNG, the same bytes every time; a residual falling over
// decades (with a zero at step 0) gets a log axis without failing.
func TestSeriesPNG(t *testing.T) {
	s := &Series{Title: "poisson2d, 64x64", Names: []string{"maxdiff", "heat"}, Steps: []int{0, 100, 200, 300},
		Values: [][]float64{{0, 0}, {1e-2, 0.1}, {1e-4, 0.15}, {1e-7, 0.16}}}
	a, err := s.PNG()
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.PNG()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(a, []byte("\x89PNG")) || !bytes.Equal(a, b) {
		t.Error("the plot is not a deterministic PNG")
	}
	if _, err := (&Series{Names: []string{"a"}}).PNG(); err == nil {
		t.Error("a plot of no observations was drawn")
	}
}
