package model

import (
	"math"
	"testing"
)

// measuredSplits are split runs measured on 2 and 4 H200 SXM (float, 10000 steps, NCCL,
// sub-domains whole; docs/performance.md, "Several GPUs posted at once"): GCells/s against the
// split model with its measured costs (ExchangeUs, HaloRowCells) from the single GPU's
// measured rate. Strong runs split 16386^2 and 514^3; weak ones 65538x16386 and 2050x514^2 on
// 4 GPUs. The star3d1r rows at 906 GCells/s ran the tuned plan, those at 443 the model's pick.
var measuredSplits = []struct {
	stencil      string
	shape        []int
	one          float64 // one GPU on the strong runs' grid, GCells/s
	parts, local int     // sub-domains, and those one process drives
	period       int
	gcells       float64
}{
	{"j2d5pt", []int{16386, 16386}, 2721, 4, 4, 40, 7763},
	{"j2d5pt", []int{16386, 16386}, 2721, 4, 1, 20, 7612},
	{"j2d5pt", []int{65538, 16386}, 2721, 4, 4, 40, 10426},
	{"j2d5pt", []int{65538, 16386}, 2721, 4, 1, 20, 10371},
	{"star3d1r", []int{514, 514, 514}, 906, 4, 4, 16, 2214},
	{"star3d1r", []int{514, 514, 514}, 906, 4, 1, 12, 2254},
	{"star3d1r", []int{2050, 514, 514}, 906, 4, 4, 24, 3221},
	{"star3d1r", []int{2050, 514, 514}, 906, 4, 1, 12, 3248},
	{"star3d1r", []int{514, 514, 514}, 443, 4, 4, 16, 1165},
	{"j2d5pt", []int{16386, 16386}, 2721, 2, 2, 40, 4990},
	{"j2d5pt", []int{16386, 16386}, 2721, 2, 1, 20, 4907},
	{"star3d1r", []int{514, 514, 514}, 443, 2, 2, 16, 769},
}

// TestPredictSplitMeasured prints the split model's prediction beside each measured run, with
// its error (go test -v; docs/performance.md has the table), and holds every one within 10%.
func TestPredictSplitMeasured(t *testing.T) {
	for _, m := range measuredSplits {
		strong := []int{16386, 16386}
		if len(m.shape) == 3 {
			strong = []int{514, 514, 514}
		}
		checkMeasuredSplit(t, m.stencil, m.shape, strong, m.one, m.parts, m.local, m.period, m.gcells, ExchangeUs, HaloRowCells, 0.10)
	}
}

// checkMeasuredSplit predicts a measured split run (10000 steps over NVLink), compute at rate
// GCells/s measured on a grid of shape at, logs the prediction beside the measurement and holds
// it within tol.
func checkMeasuredSplit(t *testing.T, stencil string, shape, at []int, rate float64, parts, local, period int, gcells, hostUs, rowCells, tol float64) {
	t.Helper()
	cells := 1.0
	for _, n := range at {
		cells *= float64(n)
	}
	in := SplitInput{Prog: loadF32(t, stencil), Shape: shape, Steps: 10000, Parts: parts, Period: period, Link: Links["nvlink4"],
		Rate: rate * 1e9 * cells / interiorCellsOf(at), HostUs: hostUs, RowCells: rowCells}
	pr, err := PredictSplit(in)
	if err != nil {
		t.Fatal(err)
	}
	got := interiorCellsOf(shape) * 10000 / pr.Seconds / 1e9
	e := got/gcells - 1
	t.Logf("%-8s %v, %d GPUs, %d a process, period %3d: measured %6.0f, predicted %6.0f GCells/s (%+.1f%%)", stencil, shape, parts, local, period, gcells, got, 100*e)
	if math.Abs(e) > tol {
		t.Errorf("%s %v on %d GPUs (%d a process), period %d: predicted %.0f GCells/s, measured %.0f (%+.1f%%)", stencil, shape, parts, local, period, got, gcells, 100*e)
	}
}

// interiorCellsOf is the cells a fixed boundary of reach 1 updates (what tempest run counts).
func interiorCellsOf(shape []int) float64 {
	c := 1.0
	for _, n := range shape {
		c *= float64(n - 2)
	}
	return c
}

// measuredPartSplits are split runs on 2 and 4 H200 SXM (float, fast math, 10000 steps, NCCL,
// sub-domains whole; docs/performance.md, "Several GPUs with plans from tempest tune") whose
// plans `tempest tune` chose for the parts' own size: rate is that plan's GCells/s measured
// by the tuner at shape at (the sub-domain for strong runs, the whole 16386^2 or 514^3 grid
// for weak ones, whose parts are as large). Local 1 is a process per GPU.
var measuredPartSplits = []struct {
	stencil              string
	shape, at            []int
	rate                 float64
	parts, local, period int
	gcells               float64
}{
	{"j2d5pt", []int{16386, 16386}, []int{4097, 16386}, 2405.5, 4, 4, 22, 8254},
	{"j2d5pt", []int{16386, 16386}, []int{4097, 16386}, 2405.5, 4, 1, 22, 8433},
	{"j2d5pt", []int{16386, 16386}, []int{4097, 16386}, 2405.5, 4, 4, 44, 8623},
	{"j2d5pt", []int{16386, 16386}, []int{4097, 16386}, 2405.5, 4, 4, 55, 8685},
	{"j2d5pt", []int{16386, 16386}, []int{4097, 16386}, 2405.5, 4, 4, 66, 8712},
	{"j2d5pt", []int{65538, 16386}, []int{16386, 16386}, 2468.7, 4, 4, 30, 9593},
	{"j2d5pt", []int{65538, 16386}, []int{16386, 16386}, 2468.7, 4, 1, 30, 9641},
	{"j2d5pt", []int{65538, 16386}, []int{16386, 16386}, 2468.7, 4, 4, 60, 9626},
	{"star3d1r", []int{514, 514, 514}, []int{129, 514, 514}, 674.1, 4, 4, 12, 1967},
	{"star3d1r", []int{514, 514, 514}, []int{129, 514, 514}, 674.1, 4, 1, 12, 1982},
	{"star3d1r", []int{514, 514, 514}, []int{129, 514, 514}, 674.1, 4, 4, 4, 1966},
	{"star3d1r", []int{514, 514, 514}, []int{129, 514, 514}, 674.1, 4, 4, 8, 1999},
	{"star3d1r", []int{514, 514, 514}, []int{129, 514, 514}, 674.1, 4, 4, 16, 1939},
	{"star3d1r", []int{514, 514, 514}, []int{129, 514, 514}, 674.1, 4, 4, 24, 1832},
	{"star3d1r", []int{2050, 514, 514}, []int{514, 514, 514}, 788.2, 4, 4, 12, 2811},
	{"star3d1r", []int{2050, 514, 514}, []int{514, 514, 514}, 788.2, 4, 1, 12, 2820},
	{"star3d1r", []int{2050, 514, 514}, []int{514, 514, 514}, 788.2, 4, 4, 4, 2863},
	{"star3d1r", []int{2050, 514, 514}, []int{514, 514, 514}, 788.2, 4, 4, 8, 2876},
	{"star3d1r", []int{2050, 514, 514}, []int{514, 514, 514}, 788.2, 4, 4, 16, 2780},
	{"star3d1r", []int{2050, 514, 514}, []int{514, 514, 514}, 788.2, 4, 4, 24, 2698},
	{"j2d5pt", []int{16386, 16386}, []int{8193, 16386}, 2456.2, 2, 2, 30, 4721},
	{"j2d5pt", []int{16386, 16386}, []int{8193, 16386}, 2456.2, 2, 1, 30, 4728},
	{"j2d5pt", []int{32770, 16386}, []int{16386, 16386}, 2468.7, 2, 2, 30, 4859},
	{"j2d5pt", []int{32770, 16386}, []int{16386, 16386}, 2468.7, 2, 1, 30, 4867},
	{"star3d1r", []int{514, 514, 514}, []int{257, 514, 514}, 733.9, 2, 2, 12, 1312},
	{"star3d1r", []int{514, 514, 514}, []int{257, 514, 514}, 733.9, 2, 1, 12, 1316},
	{"star3d1r", []int{1026, 514, 514}, []int{514, 514, 514}, 788.2, 2, 2, 12, 1477},
	{"star3d1r", []int{1026, 514, 514}, []int{514, 514, 514}, 788.2, 2, 1, 12, 1474},
}

// TestPredictSplitPartRate prints the split model's prediction beside each run whose compute
// it prices at the part's own measured rate (PartExchangeUs, no halo-row term; go test -v) and
// holds every one within 6%.
func TestPredictSplitPartRate(t *testing.T) {
	for _, m := range measuredPartSplits {
		checkMeasuredSplit(t, m.stencil, m.shape, m.at, m.rate, m.parts, m.local, m.period, m.gcells, PartExchangeUs, 0, 0.06)
	}
}

// TestPredictSplitRanges: whole parts over ranges of planes (SplitInput.Ranges) cost less than
// the same parts computing their whole halos with every exchange exposed: the halo rows shrink
// through a period and the last launch's other rows hide the exchange. star3d1r 514^3 on four
// H200s at its measured part rate (period 8, bt 4): the rows saved are (E-1)/2 reaches a side
// of the E; the exchange, 3 x 16 rows of 1 MB on NVLink plus 35 us, under one launch's middle
// rows (121 planes x 4 steps at 789 GCells/s is about 1.3 ms), is hidden whole. A part too
// thin for a middle hides nothing.
func TestPredictSplitRanges(t *testing.T) {
	p := loadF32(t, "star3d1r")
	for _, c := range []struct {
		shape       []int
		parts       int
		hiddenWhole bool
	}{{[]int{514, 514, 514}, 4, true}, {[]int{66, 514, 514}, 4, false}} {
		in := SplitInput{Prog: p, Shape: c.shape, Steps: 10000, Parts: c.parts, Period: 8, Link: Links["nvlink4"], Rate: 789e9, HostUs: PartExchangeUs}
		plain, err := PredictSplit(in)
		if err != nil {
			t.Fatal(err)
		}
		in.Ranges, in.Depth = true, 4
		rg, err := PredictSplit(in)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%v on %d: plain %.1f ms (compute %.1f, exchanges %.1f + %.1f), ranges %.1f ms (compute %.1f, exposed %.1f)", c.shape, c.parts,
			plain.Seconds*1e3, plain.Compute*1e3, plain.Exposed*1e3, plain.Host*1e3, rg.Seconds*1e3, rg.Compute*1e3, rg.Exposed*1e3)
		if !rg.Ranges || rg.Compute >= plain.Compute || rg.Seconds >= plain.Seconds {
			t.Errorf("%v: ranges %+v not below plain %+v", c.shape, rg, plain)
		}
		if hidden := rg.Exposed == 0; hidden != c.hiddenWhole {
			t.Errorf("%v: exposed %.2f ms; want hidden whole: %v", c.shape, rg.Exposed*1e3, c.hiddenWhole)
		}
	}
}
