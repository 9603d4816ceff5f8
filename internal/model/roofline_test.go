package model

import (
	"math"
	"os"
	"strings"
	"testing"

	"tempest/internal/analysis"
	"tempest/internal/gpu"
	"tempest/internal/ir"
	"tempest/internal/load"
	"tempest/internal/plan"
	"tempest/internal/probe"
)

// h100 is a profile with the H100's properties and measured copy bandwidth
// (docs/benchmarks.md); the other rates are plausible values.
func h100() *probe.Profile {
	return &probe.Profile{
		Device: gpu.Props{Backend: "cuda", Name: "H100", ComputeMajor: 9, SMs: 132, WarpSize: 32, MaxThreadsPerBlock: 1024,
			SharedPerBlock: 49152, SharedPerBlockOptin: 232448, SharedPerSM: 233472, RegsPerBlock: 65536, RegsPerSM: 65536,
			MaxThreadsPerSM: 2048, ClockKHz: 1980000, L2Bytes: 50 << 20, GlobalMem: 80 << 30},
		DRAMCopyGBs: 2843, DRAMTriadGBs: 2900, L2GBs: 7000, SharedF32GBs: 30000, SharedF64GBs: 30000,
		FMAF32GFLOPs: 60000, FMAF64GFLOPs: 30000, LaunchUs: 2.5, LaunchSyncUs: 8,
	}
}

func prog(t *testing.T, name string) (*ir.Program, *analysis.Summary) {
	t.Helper()
	// name@f64 (or @f32) loads the program in that element type instead of its own.
	var opt load.Options
	if base, ty, ok := strings.Cut(name, "@"); ok {
		typ, ok := ir.ParseType(ty)
		if !ok {
			t.Fatalf("%s: no element type %q", name, ty)
		}
		name, opt.DefaultType = base, &typ
	}
	file := "../../examples/an5d/" + name + ".stencil"
	for _, dir := range []string{"inplane", "peers"} {
		if _, err := os.Stat(file); err != nil {
			file = "../../examples/" + dir + "/" + name + ".stencil"
		}
	}
	p, err := load.File(file, opt)
	if err != nil {
		t.Fatal(err)
	}
	return p, analysis.Analyze(p)
}

func mustParse(t *testing.T, s string, p *ir.Program) plan.Plan {
	t.Helper()
	pl, err := plan.Parse(s, p)
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

func TestRooflineEveryStrategy(t *testing.T) {
	dev := h100()
	for _, c := range []struct {
		name  string
		shape []int
		plans []string
	}{
		{"j2d5pt", []int{16386, 16386}, []string{"naive", "naive:bx=128,by=2", "tiled", "stream25d", "stream25d:chunk=0", "pyramid", "pyramid:ph=1"}},
		{"star3d1r", []int{514, 514, 514}, []string{"naive", "tiled", "stream25d", "pyramid"}},
		{"box3d1r", []int{514, 514, 514}, []string{"naive", "tiled", "stream25d", "pyramid"}},
	} {
		p, s := prog(t, c.name)
		for _, ps := range c.plans {
			pl := mustParse(t, ps, p)
			in := Input{Prog: p, Sum: s, Plan: pl, Shape: c.shape, Steps: 1000, Dev: dev}
			a, err := Predict(in)
			if err != nil {
				t.Fatalf("%s %s: %v", c.name, pl, err)
			}
			b, _ := Predict(in)
			if a != b {
				t.Errorf("%s %s: not deterministic", c.name, pl)
			}
			if !(a.Seconds > 0) || a.Bottleneck == "" || a.Model == "" {
				t.Errorf("%s %s: %+v", c.name, pl, a)
			}
			t.Logf("%-9s %-34s %s", c.name, pl, a)
		}
	}
}

func TestRooflineMagnitudes(t *testing.T) {
	dev := h100()
	p, s := prog(t, "j2d5pt")
	shape := []int{16386, 16386}
	pred := func(ps string) Prediction {
		a, err := Predict(Input{Prog: p, Sum: s, Plan: mustParse(t, ps, p), Shape: shape, Steps: 1000, Dev: dev})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	// Naive: 8 bytes per cell through DRAM: 16386^2 x 8 x 1000 / 2843 GB/s = 0.76 s (measured:
	// 1.04-1.2 s on the H100, docs/performance.md).
	n := pred("naive")
	if n.Seconds < 0.6 || n.Seconds > 1.0 || n.Bottleneck != GlobalMemory {
		t.Errorf("naive j2d5pt: %v", n)
	}
	// Streaming the whole 16386-plane axis leaves 64 blocks for 132 SMs: latency-bound and far
	// slower than 128-plane chunks (measured 19.2 s against 1.4 s).
	whole, chunk := pred("stream25d:chunk=0"), pred("stream25d:chunk=128")
	if whole.Bottleneck != Latency || whole.Seconds < 5*chunk.Seconds {
		t.Errorf("stream25d whole axis %v, chunks %v", whole, chunk)
	}
	// Pyramid: redundant work grows with PH; a PH beyond the block's reach fails.
	if _, err := Predict(Input{Prog: p, Sum: s, Plan: plan.Plan{Strategy: "pyramid", BX: 8, BY: 8, BZ: 1, PH: 4}, Shape: shape, Steps: 10, Dev: dev}); err == nil {
		t.Error("pyramid 8x8 ph=4 with reach 1 leaves nothing: want an error")
	}
}

func TestPyramidCalibration(t *testing.T) {
	dev := h100()
	p, s := prog(t, "star2d1r")
	shape := []int{4098, 4098}
	in := Input{Prog: p, Sum: s, Plan: mustParse(t, "pyramid:bx=32,by=16,ph=1", p), Shape: shape, Dev: dev}
	truth := &PyramidCal{BX: 32, BY: 16, BZ: 1, Block: 3e-9, Cell: 2e-13}
	run := func(ph, steps int) float64 {
		i := in
		i.Plan.PH, i.Steps, i.Cal = ph, steps, truth
		a, err := Predict(i)
		if err != nil || !a.Calibrated {
			t.Fatalf("%v %+v", err, a)
		}
		return a.Seconds
	}
	t1, t2 := run(1, 20), run(2, 21) // an odd step count: one PH=1 launch in the second run
	got, err := CalibratePyramid(in, 20, t1, 21, t2)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(got.Block-truth.Block) > 1e-6*truth.Block || math.Abs(got.Cell-truth.Cell) > 1e-6*truth.Cell {
		t.Errorf("calibrated %+v, want %+v", got, truth)
	}
	// The calibrated model predicts PH=4 of the same block, and only that block.
	i := in
	i.Plan.PH, i.Steps, i.Cal = 4, 100, got
	a, _ := Predict(i)
	i.Cal = truth
	b, _ := Predict(i)
	if math.Abs(a.Seconds-b.Seconds) > 1e-6*b.Seconds {
		t.Errorf("PH=4: %v vs %v", a.Seconds, b.Seconds)
	}
	i.Plan.BX = 64
	if c, _ := Predict(i); c.Calibrated {
		t.Error("a calibration applies to its own block shape only")
	}
}

func TestN5DModelRegistered(t *testing.T) {
	p, s := prog(t, "j2d5pt")
	in := Input{Prog: p, Sum: s, Plan: plan.Plan{Strategy: "n5d", BX: 256, BY: 1, BZ: 1, BT: 4, Chunk: 512}, Shape: []int{16384, 16384}, Steps: 1000, Dev: h100()}
	a, err := Predict(in)
	if err != nil {
		t.Fatal(err)
	}
	b := in
	b.Plan.BT = 1
	one, _ := Predict(b)
	if !(a.Seconds > 0) || a.Seconds >= one.Seconds {
		t.Errorf("b_T=4 %v should beat b_T=1 %v on a memory-bound stencil", a, one)
	}
	t.Logf("n5d bT=4: %v; bT=1: %v", a, one)
}
