package model

import (
	"flag"
	"math"
	"os"
	"strings"
	"testing"

	"tempest/internal/ir"
	"tempest/internal/load"
	"tempest/internal/plan"
	"tempest/internal/probe"
)

var updateSplit = flag.Bool("update", false, "rewrite testdata/split_an5d_h100.md")

func loadF32(t *testing.T, name string) *ir.Program {
	t.Helper()
	f32 := ir.F32
	p, err := load.File("../../examples/an5d/"+name+".stencil", load.Options{DefaultType: &f32})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPredictSplit checks the split model's arithmetic on j2d5pt (reach 1, fixed rim 1, one
// f32 level) against numbers worked out by hand.
func TestPredictSplit(t *testing.T) {
	p := loadF32(t, "j2d5pt")
	link := Link{Name: "test", GBs: 100, LatencyUs: 10}
	in := SplitInput{Prog: p, Shape: []int{1000, 500}, Steps: 100, Period: 4, Link: link, Rate: 1e9}
	cases := []struct {
		parts                         int
		halo, rows, exchanges         int
		bytes                         int64
		compute, exchange, efficiency float64
	}{
		// One part: the whole domain, no halos, no exchanges.
		{1, 0, 1000, 0, 0, 0.05, 0, 1},
		// Two parts: 500 rows + one halo of 4 rows; 24 exchanges of 4 rows x 500 x 4 B.
		{2, 4, 504, 24, 8000, 0.0252, 24 * (10e-6 + 8000/100e9), 0.05 / 2 / (0.0252 + 24*(10e-6+8000/100e9))},
		// Four parts: 250 rows + two halos; both neighbours share the link.
		{4, 4, 258, 24, 16000, 0.0129, 24 * (10e-6 + 16000/100e9), 0.05 / 4 / (0.0129 + 24*(10e-6+16000/100e9))},
	}
	for _, c := range cases {
		x := in
		x.Parts = c.parts
		pr, err := PredictSplit(x)
		if err != nil {
			t.Fatal(err)
		}
		near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }
		if pr.Halo != c.halo || pr.PartRows != c.rows || pr.Exchanges != c.exchanges || pr.ExchangeBytes != c.bytes ||
			!near(pr.Compute, c.compute) || !near(pr.Exchange, c.exchange) || !near(pr.Efficiency, c.efficiency) {
			t.Errorf("%d parts: %+v, want halo %d rows %d exchanges %d bytes %d compute %g exchange %g efficiency %g",
				c.parts, pr, c.halo, c.rows, c.exchanges, c.bytes, c.compute, c.exchange, c.efficiency)
		}
	}
	// Without a measured rate the plan's model prices compute.
	pl, err := plan.Parse("n5d:bt=4", p)
	if err != nil {
		t.Fatal(err)
	}
	x := in
	x.Rate, x.Plan, x.Dev, x.Parts = 0, pl, probe.H100(), 2
	pr, err := PredictSplit(x)
	if err != nil || !(pr.Compute > 0) || !(pr.Single > 0) || !(pr.Seconds > pr.Compute) {
		t.Errorf("modelled compute: %+v, %v", pr, err)
	}
	if _, err := PredictSplit(SplitInput{Prog: p, Shape: []int{10, 10}, Steps: 1, Parts: 2, Period: 1}); err == nil {
		t.Error("a link without bandwidth was accepted")
	}
}

// TestPredictSplitOverlap checks the overlapped split model's arithmetic on j2d5pt (H = 4,
// rate 1e9 cells/s, 100 steps, 25 periods, 24 exchanges) against numbers worked out by hand:
// a period costs max(interior, exchange) + bands.
func TestPredictSplitOverlap(t *testing.T) {
	p := loadF32(t, "j2d5pt")
	cases := []struct {
		name             string
		shape            []int
		parts            int
		gbs              float64
		overlap          bool
		compute, exposed float64
	}{
		// 4 parts of 250 rows: the interior 250 rows with its halos (0.0125 s); two bands of
		// 3H = 12 rows, 24 us a period each; the exchange (10.16 us) hides behind 500 us.
		{"hidden", []int{1000, 500}, 4, 100, true, 0.0125 + 2*25*24e-6, 0},
		// A slow link: 170 us an exchange, still hidden.
		{"slow link", []int{1000, 500}, 4, 0.1, true, 0.0137, 0},
		// Slower: 1.61 ms an exchange, 1.11 ms of it not hidden by the interior's 0.5 ms.
		{"exposed", []int{1000, 500}, 4, 0.01, true, 0.0137, 24 * (10e-6 + 16000/0.01e9 - 500e-6)},
		// Narrow rows: a band's period (2.4 us of cells) costs the launch floor, 5 us.
		{"launch floor", []int{1000, 50}, 4, 100, true, 1.25e-3 + 2*25*BandLaunchUs*1e-6, 0},
		// Parts of 10 rows are too thin for two bands and an interior of 4: unsplit.
		{"thin", []int{40, 500}, 4, 100, false, 18 * 500 * 100 / 1e9, 24 * (10e-6 + 16000/100e9)},
	}
	for _, c := range cases {
		in := SplitInput{Prog: p, Shape: c.shape, Steps: 100, Parts: c.parts, Period: 4, Rate: 1e9, Overlap: true,
			Link: Link{Name: "test", GBs: c.gbs, LatencyUs: 10}}
		pr, err := PredictSplit(in)
		if err != nil {
			t.Fatal(err)
		}
		near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }
		if pr.Overlap != c.overlap || !near(pr.Compute, c.compute) || !near(pr.Exposed, c.exposed) || !near(pr.Seconds, c.compute+c.exposed) {
			t.Errorf("%s: %+v, want overlap %v compute %g exposed %g", c.name, pr, c.overlap, c.compute, c.exposed)
		}
		in.Overlap = false
		plain, err := PredictSplit(in)
		if err != nil {
			t.Fatal(err)
		}
		if plain.Overlap || plain.Exposed != plain.Exchange || !near(plain.Exchange, pr.Exchange) {
			t.Errorf("%s without overlap: %+v", c.name, plain)
		}
	}
}

// an5dH100 is the AN5D table measured on one H100 (docs/performance.md, "n5d: aligned vector
// accesses ...": tuned plans, fast math, 16384^2 / 512^3 interior, 1000 steps): each
// stencil's GCells/s and temporal block bt, the shortest exchange period its plan allows.
var an5dH100 = []struct {
	stencil string
	gcells  float64
	bt      int
}{
	{"box2d1r", 1522.2, 8}, {"box2d2r", 723.3, 3}, {"box3d1r", 367.4, 2}, {"gradient2d", 1484.1, 10},
	{"j2d5pt", 2129.5, 12}, {"j2d9pt-gol", 1405.9, 8}, {"j2d9pt", 1363.8, 7}, {"j3d27pt", 359.7, 2},
	{"star2d1r", 2286.9, 10}, {"star2d2r", 1371.3, 8}, {"star3d1r", 587.1, 4},
}

// TestSplitTableAN5D writes the split model's predicted scaling of the AN5D suite on 1, 2 and
// 4 H100-class GPUs over NVLink, exchanges overlapped as --gpus runs them by default (golden
// file; -update rewrites it). The README shows measurements instead.
func TestSplitTableAN5D(t *testing.T) {
	var rows []SplitInput
	for _, s := range an5dH100 {
		p := loadF32(t, s.stencil)
		shape := []int{16386, 16386}
		if p.Dims() == 3 {
			shape = []int{514, 514, 514}
		}
		rows = append(rows, SplitInput{Prog: p, Shape: shape, Steps: 1000, Period: s.bt, Link: Links["nvlink4"], Rate: s.gcells * 1e9, Overlap: true})
	}
	got, err := SplitTable(rows, []int{1, 2, 4})
	if err != nil {
		t.Fatal(err)
	}
	const golden = "testdata/split_an5d_h100.md"
	if *updateSplit {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if string(want) != got {
		t.Errorf("the table differs from %s (run with -update):\n%s", golden, got)
	}
}

// TestChooseGrid checks the split model's choice between slabs and two-dimensional grids:
// slabs where the halo is thin beside the domain (2D pays a second latency and packing for
// less volume), a grid where slabs get thinner than the halo, and where the halo volume
// dominates (3D over PCIe); one-dimensional programs split along their axis alone. Rates are
// the H100 table's.
func TestChooseGrid(t *testing.T) {
	cases := []struct {
		stencil       string
		shape         []int
		parts, period int
		link          string
		gcells        float64
		twoD          bool
		want          string // the grid, or an error's words
	}{
		{"j2d5pt", []int{16386, 16386}, 4, 12, "nvlink4", 2129.5, false, "4x1"},
		{"j2d5pt", []int{16386, 16386}, 4, 12, "nvlink4", 2129.5, true, "2x2"},
		{"j2d5pt", []int{162, 162}, 16, 12, "nvlink4", 2129.5, false, "8x2"}, // slabs of 10 rows < halo 12
		{"star3d1r", []int{514, 514, 514}, 8, 4, "pcie4", 587.1, false, "4x2"},
		{"j3d27pt", []int{514, 514, 514}, 16, 2, "pcie4", 359.7, false, "4x4"},
		{"j2d5pt", []int{40, 40}, 16, 12, "nvlink4", 2129.5, false, "no grid of 16 sub-domains fits"},
		{"j2d5pt", []int{1000, 1000}, 5, 4, "nvlink4", 2129.5, true, "no grid with two or more along each axis"},
	}
	for _, c := range cases {
		p := loadF32(t, c.stencil)
		in := SplitInput{Prog: p, Shape: c.shape, Steps: 1000, Parts: c.parts, Period: c.period, Link: Links[c.link], Rate: c.gcells * 1e9}
		best, all, err := ChooseGrid(in, c.twoD)
		got := best.GridText()
		if err != nil {
			got = err.Error()
		}
		if !strings.Contains(got, c.want) {
			t.Errorf("%s %v on %d (%s): %s, want %s", c.stencil, c.shape, c.parts, c.link, got, c.want)
		}
		for _, a := range all {
			if a.Rows*a.Cols != c.parts || (a.Feasible && err == nil && a.Seconds < best.Seconds) {
				t.Errorf("%s: candidate %s (%.3g s) beside the choice %s (%.3g s)", c.stencil, a.GridText(), a.Seconds, best.GridText(), best.Seconds)
			}
		}
	}
	// The 2x2 grid's bytes by hand: j2d5pt (reach 1, rim 1, f32), 1000x500, E=4: parts of
	// 500x250 padded by one halo of 4 on each axis (504x254); rows: 4 x 254 x 4 B, columns:
	// 4 x 504 x 4 B.
	in := SplitInput{Prog: loadF32(t, "j2d5pt"), Shape: []int{1000, 500}, Steps: 100, Parts: 4, Cols: 2, Period: 4, Link: Link{GBs: 100, LatencyUs: 10}, Rate: 1e9}
	pr, err := PredictSplit(in)
	if err != nil {
		t.Fatal(err)
	}
	wantBytes := int64(4*254*4 + 4*504*4)
	wantEx := 24 * (2*10e-6 + float64(wantBytes)/100e9 + 2*float64(4*504*4)/(PackGBs*1e9))
	if pr.PartRows != 504 || pr.PartCols != 254 || pr.ExchangeBytes != wantBytes || pr.Messages != 2 || math.Abs(pr.Exchange-wantEx) > 1e-12 || math.Abs(pr.Compute-504*254*100/1e9) > 1e-12 {
		t.Errorf("2x2: %+v, want 504x254 parts, %d bytes, exchanges %g s", pr, wantBytes, wantEx)
	}
	oneD, err := load.Source("heat1d.stencil", "stencil heat1d\naxes x\nstate u boundary clamp\nupdate u = 0.5 * u + 0.25 * (u[x-1] + u[x+1])\n", load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	in = SplitInput{Prog: oneD, Shape: []int{4096}, Steps: 100, Parts: 4, Period: 4, Link: Links["nvlink4"], Rate: 1e9}
	if best, all, err := ChooseGrid(in, false); err != nil || best.GridText() != "4x1" || len(all) != 1 {
		t.Errorf("1D program: %s among %d candidates, %v", best.GridText(), len(all), err)
	}
	if _, _, err := ChooseGrid(in, true); err == nil || !strings.Contains(err.Error(), "one-dimensional") {
		t.Errorf("1D program on a 2D grid: %v", err)
	}
}

// TestExchangePeriod holds the rule near the periods of the fastest measured runs on 4 x
// H200 (10000 steps, fast math, plans from tempest tune, sub-domains whole; docs/performance.md,
// "Several GPUs with plans from tempest tune"): j2d5pt 16386^2 (its plan for a quarter, depth
// 11, 2405 GCells/s on the part) ran at 8359, 8623, 8685 and 8712 GCells/s with periods 22, 44,
// 55 and 66; 65538x16386 (depth 10) at 9606 and 9626 with 30 and 60; star3d1r 514^3 (depth
// 4, 674 GCells/s on the part) at 1966, 1999-2007, 1967, 1939 and 1832 with 4, 8, 12, 16 and
// 24, and 2050x514^2 (788 GCells/s) at 2863, 2862-2876, 2811, 2780 and 2698.
func TestExchangePeriod(t *testing.T) {
	link := Links["nvlink4"]
	for _, c := range []struct {
		name                       string
		rate                       float64
		row                        int64
		reach, depth, rows, lo, hi int
	}{
		{"j2d5pt strong, a quarter's plan", 2405e9, 16386, 1, 11, 4097, 44, 66},
		{"j2d5pt weak", 2469e9, 16386, 1, 10, 16385, 30, 70},
		{"star3d1r strong, a quarter's plan", 674e9, 514 * 514, 1, 4, 129, 8, 8},
		{"star3d1r weak", 788e9, 514 * 514, 1, 4, 513, 4, 8},
		{"no rate: the plan's depth", 0, 16386, 1, 4, 4096, 4, 4},
		{"thin parts stay shallow", 2721e9, 16386, 1, 4, 64, 4, 8},
	} {
		got := ExchangePeriod(c.rate, c.row, c.reach, c.depth, c.rows, link)
		if got < c.lo || got > c.hi || got%c.depth != 0 {
			t.Errorf("%s: period %d, want a multiple of %d in %d..%d", c.name, got, c.depth, c.lo, c.hi)
		}
	}
}
