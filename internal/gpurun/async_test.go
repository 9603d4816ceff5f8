package gpurun

import (
	"path/filepath"
	"strings"
	"testing"

	"tempest/internal/gpu"
	"tempest/internal/ir"
	"tempest/internal/load"
	"tempest/internal/lower"
	"tempest/internal/plan"
	"tempest/internal/ref"
	"tempest/internal/state"
	"tempest/internal/testkit"
)

// TestAsyncRefusedOnOpenCL: an n5d plan with asynchronous copies is refused on OpenCL with a
// plan error that says what to drop, before anything is compiled.
func TestAsyncRefusedOnOpenCL(t *testing.T) {
	dev := openDevice(t, "opencl")
	p, err := load.File("../../examples/an5d/star2d1r.stencil", load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pl, err := plan.Parse("n5d:bx=32,rx=2,bt=2,async=1", p)
	if err != nil {
		t.Fatal(err)
	}
	s, err := state.New(p, []int{20, 40}, state.DefaultParams(p), 4)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Prepare(dev, s, pl)
	if err == nil || !strings.Contains(err.Error(), "CUDA only") || !strings.Contains(err.Error(), "drop async") {
		t.Fatalf("async on OpenCL: %v", err)
	}
}

// TestChainRefusedOnOpenCL: chained launches are refused on OpenCL with a plan error that says
// what to drop, before anything is compiled.
func TestChainRefusedOnOpenCL(t *testing.T) {
	dev := openDevice(t, "opencl")
	p, err := load.File("../../examples/an5d/star2d1r.stencil", load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pl, err := plan.Parse("n5d:bx=32,rx=2,bt=2,chunk=8,chain=true", p)
	if err != nil {
		t.Fatal(err)
	}
	s, err := state.New(p, []int{20, 40}, state.DefaultParams(p), 4)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Prepare(dev, s, pl); err == nil || !strings.Contains(err.Error(), "sm_90") || !strings.Contains(err.Error(), "drop chain") {
		t.Fatalf("chain on OpenCL: %v", err)
	}
}

// TestAsyncRingOnOpenCL checks the rings of n5d's asynchronous copies (level 0's planes for
// stars, in 2D and 3D, both level orders, reach 2; rings of their own for boxes and for stars
// copying far ahead: slots, offsets, the prologue, rings longer than async+1, one ring per
// state grid) on OpenCL, whose
// printer renders the copies synchronously: the plans are lowered and run directly (users'
// plans with async are refused there), on the sampled matrix shapes, against the reference
// within the matrix's tolerances. Asynchrony itself (waits, slot reuse) is for the CUDA tests.
func TestAsyncRingOnOpenCL(t *testing.T) {
	testkit.LongTest(t)
	dev := openDevice(t, "opencl")
	mods := matrixModules(dev)
	defer mods.Close()
	for _, c := range []struct {
		example string
		plans   []string
		shapes  [][]int
	}{
		{"an5d/star2d1r", []string{"n5d:bx=8,rx=2,bt=3,chunk=5,async=2", "n5d:bx=16,bt=2,async=4,wave=false"}, [][]int{{13, 29}, {37, 70}}},
		{"an5d/star2d2r", []string{"n5d:bx=16,rx=2,bt=2,async=2"}, [][]int{{37, 70}}},
		{"an5d/box3d1r", []string{"n5d:bx=4,by=4,rx=2,ry=2,bt=2,chunk=5,async=1"}, [][]int{{9, 2, 35}, {20, 12, 20}}},
		{"an5d/star3d1r", []string{"n5d:bx=4,by=4,rx=2,ry=2,bt=2,chunk=5,async=1", "n5d:bx=8,by=8,bt=3,async=2,wave=false"}, [][]int{{9, 2, 35}, {20, 12, 20}}},
		{"inplane/grad", []string{"n5d:bx=4,by=8,rx=2,bt=2,async=2"}, [][]int{{5, 7, 11}, {20, 12, 20}}},
		// Double in 3D five planes ahead, as the model's picks copy (tune.PickRules).
		{"an5d/star3d1r@f64", []string{"n5d:bx=8,by=8,rx=2,bt=3,wave=true,async=5,rimblocks=true,chunk=6"}, [][]int{{20, 12, 20}}},
		{"an5d/j3d27pt@f64", []string{"n5d:bx=4,by=8,rx=2,bt=2,wave=true,async=5,chunk=5"}, [][]int{{20, 12, 20}}},
	} {
		var opt load.Options
		name, ty, typed := strings.Cut(c.example, "@")
		if typed {
			t64 := ir.F64
			if ty != "f64" {
				t.Fatalf("%s: only @f64", c.example)
			}
			opt.DefaultType = &t64
		}
		p, err := load.File("../../examples/"+name+".stencil", opt)
		if err != nil {
			t.Fatal(err)
		}
		for _, text := range c.plans {
			pl, err := plan.Parse(text, p)
			if err != nil {
				t.Fatal(err)
			}
			for _, shape := range c.shapes {
				s, err := state.New(p, shape, state.DefaultParams(p), 4)
				if err != nil {
					t.Fatal(err)
				}
				ref.Init(s)
				want := s.Clone()
				ref.Run(want, 5)
				low, err := lower.Lower(p, shape, s.Layers, pl)
				if err != nil {
					t.Fatalf("%s %s: %v", c.example, pl, err)
				}
				r, err := NewWith(dev, s, low, gpu.CompileOptions{}, pl.String(), mods)
				if err != nil {
					t.Fatalf("%s %s: %v", c.example, pl, err)
				}
				if err := r.Run(5); err != nil {
					t.Fatalf("%s %s %v: %v", c.example, pl, shape, err)
				}
				if err := r.Download(); err != nil {
					t.Fatalf("%s %s %v: %v", c.example, pl, shape, err)
				}
				r.Close()
				if msg := agree(want, s); msg != "" {
					t.Errorf("%s %s size %v after 5 steps: %s", c.example, pl, shape, msg)
				}
			}
		}
	}
}

// TestAsyncCUDA runs the correctness matrix's n5d variants with asynchronous copies (the
// default plan one plane ahead, the sampled variant with the deepest ring that divides the
// round) on every example, in single and double precision, against the reference: the subset
// of TestMatrixCUDA to run after a change to them. It runs on the GPU machine.
func TestAsyncCUDA(t *testing.T) {
	dev := openDevice(t, "cuda")
	mods := matrixModules(dev)
	defer mods.Close()
	total := 0
	f64 := ir.F64
	for _, f := range examples(t) {
		for _, opt := range []load.Options{{}, {DefaultType: &f64}} {
			p, err := load.File(f, opt)
			if err != nil && opt.DefaultType != nil {
				continue // a program that does not take double precision
			}
			if err != nil {
				t.Fatal(err)
			}
			var plans []plan.Plan
			for _, pl := range planVariants(p, true) {
				if pl.Async > 0 {
					plans = append(plans, pl)
				}
			}
			if len(plans) == 0 {
				continue
			}
			name := strings.TrimSuffix(filepath.Base(f), ".stencil")
			if opt.DefaultType != nil {
				name = "f64/" + name
			}
			total += matrixProgram(t, dev, mods, name, p, plans)
		}
	}
	if total == 0 {
		t.Fatal("no async variant ran")
	}
	t.Logf("cuda: %d comparisons of async plans with the reference", total)
}
