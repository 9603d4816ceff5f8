package gpurun

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"tempest/internal/gpu"
	"tempest/internal/load"
	"tempest/internal/lower"
	"tempest/internal/plan"
	"tempest/internal/state"
)

// kernelLine finds the kernels a CUDA or OpenCL program defines.
var kernelLine = regexp.MustCompile(`(?m)^(?:extern "C" __global__|__kernel) void (?:__launch_bounds__\(\d+\) )?(\w+)\(`)

// recordingDevice compiles nothing: it records each program's kernels and hands back a
// module that knows them.
type recordingDevice struct {
	gpu.Device
	backend string
	fail    string // a kernel whose program fails to compile
	mu      sync.Mutex
	progs   [][]string // the kernels each compiled program defines
	closed  int
}

func (d *recordingDevice) Props() gpu.Props { return gpu.Props{Backend: d.backend} }

func (d *recordingDevice) Compile(name, src string, opt gpu.CompileOptions) (gpu.Module, error) {
	var ks []string
	for _, m := range kernelLine.FindAllStringSubmatch(src, -1) {
		ks = append(ks, m[1])
	}
	d.mu.Lock()
	d.progs = append(d.progs, ks)
	d.mu.Unlock()
	if slices.Contains(ks, d.fail) {
		return nil, fmt.Errorf("%s: cannot compile %s", name, d.fail)
	}
	return &recordedModule{d: d, kernels: ks}, nil
}

type recordedModule struct {
	d       *recordingDevice
	kernels []string
}

func (m *recordedModule) Kernel(name string) (gpu.Kernel, error) {
	if !slices.Contains(m.kernels, name) {
		return nil, fmt.Errorf("no kernel %s", name)
	}
	return nil, nil
}

func (m *recordedModule) Close() error {
	m.d.mu.Lock()
	m.d.closed++
	m.d.mu.Unlock()
	return nil
}

// TestCompileParts: on CUDA a module of several kernels compiles as one program per kernel
// (CompileDeep: the deepest launches' kernels now, the others when first asked for), while
// OpenCL keeps one program; Close frees every part.
func TestCompileParts(t *testing.T) {
	p, err := load.File("../../examples/an5d/j2d5pt.stencil", load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := state.New(p, []int{66, 300}, state.DefaultParams(p), 4)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := plan.Parse("n5d:bx=32,bt=7,rx=2", p)
	if err != nil {
		t.Fatal(err)
	}
	low, err := lower.Lower(p, s.Shape, s.Layers, pl)
	if err != nil {
		t.Fatal(err)
	}
	var all, deep []string
	for _, k := range low.Module.Kernels {
		all = append(all, k.Name)
	}
	for _, l := range low.Launches {
		if l.Steps == low.Depth {
			deep = append(deep, l.Kernel)
		}
	}
	if len(all) < 3 || len(deep) != 1 {
		t.Fatalf("the plan has kernels %v, the deepest launch's %v: want three or more and one", all, deep)
	}
	sorted := func(progs [][]string) []string {
		var ks []string
		for _, pr := range progs {
			if len(pr) != 1 {
				t.Errorf("a program defines kernels %v, want one", pr)
			}
			ks = append(ks, pr...)
		}
		slices.Sort(ks)
		return ks
	}

	d := &recordingDevice{backend: "cuda"}
	m, err := Compile(d, "j2d5pt", low.Module, gpu.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sorted(d.progs), slices.Sorted(slices.Values(all)); !slices.Equal(got, want) {
		t.Errorf("Compile compiled programs of kernels %v, want %v", got, want)
	}
	for _, k := range all {
		if _, err := m.Kernel(k); err != nil {
			t.Errorf("Kernel(%s): %v", k, err)
		}
	}
	m.Close()
	if d.closed != len(all) {
		t.Errorf("Close freed %d programs, want %d", d.closed, len(all))
	}

	d = &recordingDevice{backend: "cuda"}
	m, err = CompileDeep(d, "j2d5pt", low, gpu.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := sorted(d.progs); !slices.Equal(got, deep) {
		t.Errorf("CompileDeep compiled %v at once, want %v", got, deep)
	}
	for _, k := range all {
		if want := !slices.Contains(deep, k); Pending(m, k) != want {
			t.Errorf("Pending(%s) = %v, want %v", k, !want, want)
		}
	}
	if _, err := m.Kernel(all[len(all)-1]); err != nil {
		t.Fatal(err)
	}
	if len(d.progs) != 2 || Pending(m, all[len(all)-1]) {
		t.Errorf("asking for a pending kernel compiled %d programs in all (want 2), pending still %v", len(d.progs), Pending(m, all[len(all)-1]))
	}
	m.Close()
	if d.closed != 2 {
		t.Errorf("Close freed %d programs, want 2", d.closed)
	}

	d = &recordingDevice{backend: "cuda", fail: all[1]}
	if _, err := Compile(d, "j2d5pt", low.Module, gpu.CompileOptions{}); err == nil || !strings.Contains(err.Error(), all[1]) {
		t.Errorf("Compile with kernel %s failing: error %v, want one naming it", all[1], err)
	}
	if d.closed != len(all)-1 {
		t.Errorf("a failed Compile freed %d programs, want the %d compiled", d.closed, len(all)-1)
	}

	d = &recordingDevice{backend: "opencl"}
	if _, err := CompileDeep(d, "j2d5pt", low, gpu.CompileOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(d.progs) != 1 || len(d.progs[0]) != len(all) {
		t.Errorf("OpenCL compiled programs of kernels %v, want one of all %d", d.progs, len(all))
	}
}
