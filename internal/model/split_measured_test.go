package model

import (
	"math"
	"testing"
)

// measuredSplits are split runs measured on 2 and 4 H100 SXM (float, 10000 steps, medians of
// 3; docs/performance.md, "Several GPUs measured"): GCells/s against the split model with
// its measured costs (HostUs, RowCells) from the single GPU's measured rate.
var measuredSplits = []struct {
	stencil      string
	shape        []int
	one          float64 // one GPU, GCells/s
	parts, local int     // sub-domains, and those one process drives
	period       int
	gcells       float64
}{
	{"j2d5pt", []int{16386, 16386}, 975.6, 2, 2, 4, 1732},
	{"j2d5pt", []int{16386, 16386}, 975.6, 2, 1, 4, 1577},
	{"star3d1r", []int{514, 514, 514}, 499.4, 2, 2, 4, 776},
	{"star3d1r", []int{514, 514, 514}, 499.4, 2, 1, 4, 706},
	{"j2d5pt", []int{16386, 16386}, 975.3, 4, 4, 4, 829},
	{"j2d5pt", []int{16386, 16386}, 975.3, 4, 4, 16, 1709},
	{"j2d5pt", []int{16386, 16386}, 975.3, 4, 4, 40, 2092},
	{"j2d5pt", []int{16386, 16386}, 975.3, 4, 4, 64, 2169},
	{"j2d5pt", []int{16386, 16386}, 975.3, 4, 4, 128, 1720},
	{"j2d5pt", []int{16386, 16386}, 975.3, 4, 1, 4, 1587},
	{"j2d5pt", []int{16386, 16386}, 975.3, 4, 1, 16, 1746},
	{"j2d5pt", []int{16386, 16386}, 975.3, 4, 1, 20, 1710},
	{"j2d5pt", []int{16386, 16386}, 975.3, 4, 1, 64, 1590},
	{"j2d5pt", []int{16386, 16386}, 975.3, 4, 1, 128, 1336},
	{"star3d1r", []int{514, 514, 514}, 499.4, 4, 4, 4, 384},
	{"star3d1r", []int{514, 514, 514}, 499.4, 4, 4, 16, 810},
	{"star3d1r", []int{514, 514, 514}, 499.4, 4, 4, 32, 634},
	{"star3d1r", []int{514, 514, 514}, 499.4, 4, 1, 4, 768},
	{"star3d1r", []int{514, 514, 514}, 499.4, 4, 1, 16, 662},
	{"star3d1r", []int{514, 514, 514}, 499.4, 4, 1, 32, 520},
}

// TestPredictSplitMeasured prints the split model's prediction beside each measured run, with
// its error (go test -v; docs/performance.md has the table). The measured costs were fitted
// on one process driving 4 GPUs, where the error is held within 20%; elsewhere the model is
// off by up to 68% (a process per GPU on 4 GPUs meets a floor the model does not know; one
// process on 2 GPUs pays far less than 250 us a device), which the test only reports.
func TestPredictSplitMeasured(t *testing.T) {
	for _, m := range measuredSplits {
		p := loadF32(t, m.stencil)
		cells := 1.0
		for _, n := range m.shape {
			cells *= float64(n)
		}
		in := SplitInput{Prog: p, Shape: m.shape, Steps: 10000, Parts: m.parts, Period: m.period, Link: Links["nvlink4"],
			Rate: m.one * 1e9 * cells / interiorCellsOf(m.shape), Overlap: true,
			HostUs: ExchangeHostUs * float64(m.local), RowCells: HaloRowCells}
		pr, err := PredictSplit(in)
		if err != nil {
			t.Fatal(err)
		}
		got := interiorCellsOf(m.shape) * 10000 / pr.Seconds / 1e9
		e := got/m.gcells - 1
		t.Logf("%-8s %d GPUs, %d a process, period %3d: measured %6.0f, predicted %6.0f GCells/s (%+.0f%%)", m.stencil, m.parts, m.local, m.period, m.gcells, got, 100*e)
		if m.parts == 4 && m.local == 4 && math.Abs(e) > 0.20 {
			t.Errorf("%s %d GPUs (%d a process), period %d: predicted %.0f GCells/s, measured %.0f (%+.0f%%)", m.stencil, m.parts, m.local, m.period, got, m.gcells, 100*e)
		}
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
