package driver

import (
	"strings"
	"testing"

	"tempest/internal/decomp"
	"tempest/internal/gpu"
	"tempest/internal/tune"
)

// propsDevice answers Props only: the split model reads no more of a device.
type propsDevice struct {
	gpu.Device
	props gpu.Props
}

func (d propsDevice) Props() gpu.Props { return d.props }

// TestSplitPrediction: a split run's prediction takes the plan's rate from the tuning cache,
// the sub-domains' record before the whole grid's, prices a slower record slower, falls back
// on the plan's model without one, and prices no OpenCL run.
func TestSplitPrediction(t *testing.T) {
	t.Setenv("TEMPEST_CACHE_DIR", t.TempDir())
	pr, err := Prepare(RunOptions{File: "../../examples/an5d/j2d5pt.stencil", Size: "4098x4098", Steps: 100, Backend: "cpu"}, 1)
	if err != nil {
		t.Fatal(err)
	}
	dev := propsDevice{props: gpu.Props{Backend: "cuda", Name: "NVIDIA H200", ComputeMajor: 9, SMs: 132, WarpSize: 32,
		MaxThreadsPerBlock: 1024, SharedPerBlock: 49152, SharedPerBlockOptin: 232448, SharedPerSM: 233472, RegsPerBlock: 65536,
		RegsPerSM: 65536, MaxThreadsPerSM: 2048, ClockKHz: 1980000, MemClockKHz: 3201000, MemBusWidthBits: 6144, L2Bytes: 50 << 20,
		GlobalMem: 140 << 30, Driver: "CUDA driver 13.0", Compiler: "NVRTC 13.0"}}
	pl, err := parsePlan("n5d:bt=4", pr.Prog, false)
	if err != nil {
		t.Fatal(err)
	}
	m := MultiOptions{GPUs: 4}
	l, err := decomp.NewLayout(pr.Prog, pr.State.Shape, 4, 8)
	if err != nil {
		t.Fatal(err)
	}
	model, ok := predictSplitRun(pr, pl, dev, m, l, 8, 100, false)
	if !ok || model.from != "the plan's model" {
		t.Fatalf("no record: %+v, %v", model, ok)
	}
	cache, err := tune.OpenCache("")
	if err != nil {
		t.Fatal(err)
	}
	put := func(shape []int, sps float64) {
		if err := cache.Put(tune.KeyFor(pr.Prog, shape, dev.Props(), Version, false),
			tune.Record{Plan: pl.String(), Status: tune.Measured, SecondsPerStep: sps, Shape: shape}); err != nil {
			t.Fatal(err)
		}
	}
	put(pr.State.Shape, 1e-3)
	whole, ok := predictSplitRun(pr, pl, dev, m, l, 8, 100, false)
	if !ok || !strings.Contains(whole.from, "tempest tune at 4098x4098") {
		t.Fatalf("whole grid's record: %+v, %v", whole, ok)
	}
	put(SubdomainShape(pr.State.Shape, 4), 0.125e-3) // a quarter of the grid at twice the rate per cell
	part, ok := predictSplitRun(pr, pl, dev, m, l, 8, 100, false)
	if !ok || !strings.Contains(part.from, "tempest tune at 1025x4098") || part.seconds >= whole.seconds {
		t.Fatalf("sub-domain's record: %+v (whole grid's: %+v)", part, whole)
	}
	if line := part.line(float64(pr.State.Cells())*100, 1); !strings.HasPrefix(line, "split model: ") || !strings.Contains(line, "an error of") {
		t.Errorf("line: %s", line)
	}
	dev.props.Backend = "opencl"
	if p, ok := predictSplitRun(pr, pl, dev, m, l, 8, 100, false); ok {
		t.Errorf("OpenCL priced: %+v", p)
	}
}
