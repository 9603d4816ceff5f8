package driver

import (
	"io"
	"strconv"
	"strings"
	"testing"

	"tempest/internal/gpu"
	"tempest/internal/gpurun"
	"tempest/internal/probe"
)

// TestBenchPeakAndShared checks the figures `tempest bench` adds per stencil: the nominal peak
// by element type, and the shared memory of the plan's hungriest kernel against the limits,
// on the H100's properties and on an OpenCL device's (no registers, no FP lanes).
func TestBenchPeakAndShared(t *testing.T) {
	h100 := probe.H100().Device
	pocl := gpu.Props{Backend: "opencl", Name: "pthread", SMs: 2, ClockKHz: 3000000, SharedPerBlock: 524288, SharedPerBlockOptin: 524288, SharedPerSM: 524288}
	for _, c := range []struct {
		name    string
		props   gpu.Props
		typ     string
		kernels []gpurun.KernelUse
		peak    float64
		shared  string // kernel, bytes, block %, blocks, SM % as the table prints them ("" : no figures)
	}{
		{"H100 f32 n5d", h100, "f32", []gpurun.KernelUse{
			{Kernel: "tempest_n5d_bt2", Threads: 128, Shared: 17408, Regs: 64, Blocks: 7},
			{Kernel: "tempest_n5d", Threads: 128, Shared: 34816, Regs: 96, Blocks: 4},
			{Kernel: "tempest_n5d_bt1", Threads: 128, Shared: 34816, Regs: 40, Blocks: 6}},
			66908.16, "tempest_n5d 34816 15.0 4 59.6"},
		{"H100 f64", h100, "f64", []gpurun.KernelUse{{Kernel: "tempest_naive", Threads: 256, Regs: 16, Blocks: 8}}, 33454.08, "tempest_naive 0 0.0 8 0.0"},
		{"H100 i32", h100, "i32", nil, 0, ""},
		{"OpenCL", pocl, "f32", []gpurun.KernelUse{{Kernel: "tempest_tiled", Threads: 256, Shared: 1360}}, 0, "tempest_tiled 1360 0.3 - -"},
	} {
		if got := typePeak(c.props, c.typ); got < c.peak*(1-1e-9) || got > c.peak*(1+1e-9) {
			t.Errorf("%s: peak %v, want %v", c.name, got, c.peak)
		}
		u := sharedUse(c.props, c.kernels)
		got := ""
		if u != nil {
			blocks := "-"
			if u.BlocksPerSM > 0 {
				blocks = strconv.Itoa(u.BlocksPerSM)
			}
			got = u.Kernel + " " + strconv.Itoa(u.BytesPerBlock) + " " + pctText(u.BlockPercent) + " " + blocks + " " + pctText(u.SMPercent)
		}
		if got != c.shared {
			t.Errorf("%s: shared %q, want %q", c.name, got, c.shared)
		}
	}
}

func pctText(p *float64) string {
	if p == nil {
		return "-"
	}
	return strconv.FormatFloat(*p, 'f', 1, 64)
}

// TestBenchPeakSharedDevice benches AN5D stencils at tiny sizes with an n5d plan on a GPU
// in float and double and checks the new figures against the device's own limits: on CUDA
// the peak, its share and the resident blocks are all known. (OpenCL, where only the
// per-block share is, is TestBenchOpenCL's in internal/bench, for CI's time.)
func TestBenchPeakSharedDevice(t *testing.T) {
	for _, c := range []struct {
		backend  string
		stencils []string
		types    []string
	}{{"cuda", []string{"j2d5pt", "star3d1r"}, []string{"f32", "f64"}}} { // OpenCL: TestBenchOpenCL in internal/bench
		backend := c.backend
		t.Run(backend, func(t *testing.T) {
			needBackend(t, backend)
			dev, err := gpu.Open(backend)
			if err != nil {
				t.Fatal(err)
			}
			props := dev.Props()
			dev.Close()
			o := BenchOptions{Suite: "an5d", Backend: backend, Plan: "n5d:bt=2", SizeScale: 0.004, Steps: 4, Reps: 1,
				Stencils: c.stencils, Scaling: "none", Root: "../..", NoNaive: true}
			for _, typ := range c.types {
				o.Type = typ
				rep, err := Bench(o, io.Discard, io.Discard)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range rep.Results {
					if r.Error != "" || r.Type != typ {
						t.Fatalf("%s %s: type %s, %s", r.Stencil, typ, r.Type, r.Error)
					}
					u := r.Shared
					if u == nil || !strings.HasPrefix(u.Kernel, "tempest_n5d") || u.BytesPerBlock <= 0 || u.BlockPercent == nil ||
						*u.BlockPercent <= 0 || *u.BlockPercent > 100 {
						t.Errorf("%s %s: shared memory %+v", r.Stencil, typ, u)
						continue
					}
					word := map[string]int{"f32": 4, "f64": 8}[typ]
					if want := probe.NominalPeakGFLOPs(props, word); want <= 0 || r.PeakGFLOPs != want || r.PeakPct <= 0 || r.PeakPct > 100 {
						t.Errorf("%s %s: peak %v (%v%%), want %v", r.Stencil, typ, r.PeakGFLOPs, r.PeakPct, want)
					}
					if u.BlocksPerSM <= 0 || u.SMPercent == nil || *u.SMPercent <= 0 || *u.SMPercent > 100 {
						t.Errorf("%s %s: resident share %+v", r.Stencil, typ, u)
					}
				}
			}
		})
	}
}
