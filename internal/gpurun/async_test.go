package gpurun

import (
	"path/filepath"
	"strings"
	"testing"

	"tempest/internal/ir"
	"tempest/internal/load"
	"tempest/internal/plan"
	"tempest/internal/state"
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
