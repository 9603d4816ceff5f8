package tune

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"tempest/internal/gpu"
	"tempest/internal/ir"
	"tempest/internal/load"
	"tempest/internal/probe"
	"tempest/internal/state"
)

// fakeDevice answers Props only: ranking needs no device.
type fakeDevice struct {
	gpu.Device
	props gpu.Props
}

func (d fakeDevice) Props() gpu.Props { return d.props }

var h100Props = gpu.Props{Backend: "cuda", Name: "NVIDIA H100 80GB HBM3", ComputeMajor: 9, SMs: 132, WarpSize: 32,
	MaxThreadsPerBlock: 1024, SharedPerBlock: 49152, SharedPerBlockOptin: 232448, SharedPerSM: 233472, RegsPerBlock: 65536,
	RegsPerSM: 65536, MaxThreadsPerSM: 2048, ClockKHz: 1980000, MemClockKHz: 2619000, MemBusWidthBits: 5120, L2Bytes: 50 << 20,
	GlobalMem: 80 << 30, Driver: "CUDA driver 13.0", Compiler: "NVRTC 13.0"}

// shapeless is a state with a program and a size but no arrays: enough to rank.
func shapeless(p *ir.Program, shape []int) *state.State {
	return &state.State{Prog: p, Shape: shape, Layers: make([]int, len(p.Grids))}
}

// benchShape is AN5D's benchmark size: 16384^2 or 512^3 interior cells plus the fixed rim.
func benchShape(p *ir.Program) []int {
	n := 16384
	if p.Dims() == 3 {
		n = 512
	}
	shape := make([]int, p.Dims())
	for a := range shape {
		r := 0
		for _, u := range p.Updates {
			r = max(r, u.Grid.Rim[a])
		}
		shape[a] = n + 2*r
	}
	return shape
}

// TestRankIsDeterministic ranks the AN5D suite at the benchmark sizes for an H100 (from its
// properties alone): every viable plan gets a positive prediction and a bottleneck, the same
// seed gives the same order, and another seed reorders only exact ties.
func TestRankIsDeterministic(t *testing.T) {
	files, _ := filepath.Glob("../../examples/an5d/*.stencil")
	if len(files) == 0 {
		t.Fatal("no AN5D examples")
	}
	dev := fakeDevice{props: h100Props}
	prof := probe.Estimate(h100Props)
	for _, f := range files {
		p, err := load.File(f, load.Options{})
		if err != nil {
			t.Fatal(err)
		}
		s := shapeless(p, benchShape(p))
		o := Options{Seed: 3, Profile: prof}
		a, err := Rank(dev, s, o)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := Rank(dev, s, o)
		o.Seed = 4
		c, _ := Rank(dev, s, o)
		viable := 0
		for i := range a {
			if a[i].Plan.String() != b[i].Plan.String() || a[i].Predicted != b[i].Predicted {
				t.Fatalf("%s: rank %d differs between runs: %s / %s", p.Name, i+1, a[i].Plan, b[i].Plan)
			}
			if a[i].Predicted != c[i].Predicted {
				t.Fatalf("%s: another seed changed the prediction order at %d", p.Name, i+1)
			}
			if a[i].Status == Pruned {
				continue
			}
			viable++
			if !(a[i].Predicted > 0) || a[i].Pred.Bottleneck == "" || a[i].Rank != i+1 {
				t.Errorf("%s %s: %+v", p.Name, a[i].Plan, a[i].Pred)
			}
		}
		if viable < 20 {
			t.Errorf("%s: only %d viable plans", p.Name, viable)
		}
		t.Logf("%-11s %3d viable, best %-34s %.3f ms/step (%s)", p.Name, viable, a[0].Plan, a[0].Predicted*1e3, a[0].Pred.Bottleneck)
	}
}

func TestEnumerate(t *testing.T) {
	p, err := load.File("../../examples/an5d/star2d4r.stencil", load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	all := Enumerate(p, []int{16392, 16392}, nil)
	seen := map[string]bool{}
	per := map[string]int{}
	for _, pl := range all {
		if seen[pl.String()] {
			t.Errorf("duplicate %s", pl)
		}
		seen[pl.String()] = true
		per[pl.Strategy]++
		if pl.Strategy == "pyramid" && 2*4*pl.PH >= min(pl.BX, pl.BY) {
			t.Errorf("%s leaves no output cell for radius 4", pl)
		}
	}
	for _, s := range []string{"naive", "tiled", "stream25d", "pyramid"} {
		if per[s] == 0 {
			t.Errorf("no %s plans", s)
		}
	}
	// A tiny domain keeps one block shape per strategy and whole-axis chunks.
	small := Enumerate(p, []int{9, 9}, []string{"naive", "stream25d"})
	for _, pl := range small {
		if pl.Strategy == "stream25d" && pl.Chunk != 0 {
			t.Errorf("%s: a chunk longer than the axis should be the whole axis", pl)
		}
	}
	if len(small) == 0 {
		t.Error("nothing for a tiny domain")
	}
	if _, err := ParseMode("exhaustive"); err != nil {
		t.Error(err)
	}
	if _, err := ParseMode("random"); err == nil || !strings.Contains(err.Error(), "topk") {
		t.Errorf("bad mode: %v", err)
	}
}

func TestSpearman(t *testing.T) {
	if r := Spearman([]float64{1, 2, 3, 4}, []float64{10, 20, 30, 40}); math.Abs(r-1) > 1e-12 {
		t.Error(r)
	}
	if r := Spearman([]float64{1, 2, 3, 4}, []float64{4, 3, 2, 1}); math.Abs(r+1) > 1e-12 {
		t.Error(r)
	}
	// Ranks 1,2,3,4 against 1,3,2,4: 1 - 6*2/(4*15) = 0.8.
	if r := Spearman([]float64{1, 2, 3, 4}, []float64{1, 3, 2, 4}); math.Abs(r-0.8) > 1e-12 {
		t.Error(r)
	}
	// Ties take average ranks.
	if r := Spearman([]float64{1, 1, 2}, []float64{1, 2, 3}); math.Abs(r-math.Sqrt(0.75)) > 1e-12 {
		t.Error(r)
	}
}
