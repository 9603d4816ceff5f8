package gen

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"tempest/internal/cpu"
	"tempest/internal/gridio"
	"tempest/internal/ir"
	"tempest/internal/load"
	"tempest/internal/plan"
	"tempest/internal/ref"
	"tempest/internal/state"
	"tempest/internal/testkit"
)

// e2eCases are the programs the end-to-end tests generate, build with plain cc or nvcc, run and
// compare with the Go CPU engine (what `tempest run --backend cpu` computes). Plans nil: every
// strategy that applies, with its defaults, plus the extra variants listed.
var e2eCases = []struct {
	file  string
	shape []int
	steps int
	plans []string // extra plan variants
}{
	{"an5d/j2d5pt.stencil", []int{300, 70}, 7, []string{"stream25d:chunk=16", "pyramid:bx=16,by=16,ph=3", "n5d:bx=64,bt=3,chunk=32", "n5d:bx=64,bt=3,wave=true,rimblocks=true,chunk=32"}},
	{"demos/grayscott.stencil", []int{40, 33}, 7, []string{"pyramid:bx=16,by=16,ph=3"}},
	{"demos/life.stencil", []int{29, 41}, 9, nil},
	{"demos/wave.stencil", []int{37, 70}, 7, []string{"pyramid:bx=16,by=16,ph=3"}},
	{"sl/pathfinder.stencil", []int{300}, 7, nil},
	{"lift/hotspot2d.stencil", []int{37, 70}, 5, nil},
	{"an5d/star3d1r.stencil", []int{9, 10, 35}, 5, []string{"n5d:bx=4,by=4,rx=2,ry=2,bt=2,chunk=4"}},
}

// e2ePlans lists the plans of a case: each strategy's default where it applies, then extras.
func e2ePlans(p *ir.Program, extra []string) []plan.Plan {
	var out []plan.Plan
	for _, s := range plan.Strategies {
		if pl, err := plan.Default(s, p); err == nil {
			out = append(out, pl)
		}
	}
	for _, e := range extra {
		if pl, err := plan.Parse(e, p); err == nil {
			out = append(out, pl)
		}
	}
	return out
}

// toolchain says how a target's generated code is built and run here.
type toolchain struct {
	target string
	build  func(dir, name string) *exec.Cmd
	env    func(dir string) []string
	// unavailable recognises a harness failure that means "no device here" (skipped, not failed,
	// unless the target is required).
	unavailable []string
}

func requireEnv(target string) bool {
	return os.Getenv("TEMPEST_REQUIRE_"+strings.ToUpper(target)) == "1"
}

// skipOrFail skips a test whose toolchain or device is missing, unless TEMPEST_REQUIRE_<TARGET>=1.
func skipOrFail(t *testing.T, target, format string, args ...any) {
	t.Helper()
	if requireEnv(target) {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}

var (
	openclOnce  sync.Once
	openclError string
)

// openclToolchain checks once that cc, the OpenCL headers, libOpenCL.so and a platform exist.
func openclToolchain(t *testing.T) toolchain {
	openclOnce.Do(func() {
		cc, err := exec.LookPath("cc")
		if err != nil {
			openclError = "no C compiler (cc)"
			return
		}
		dir, err := os.MkdirTemp("", "tempest-clprobe-")
		if err != nil {
			openclError = err.Error()
			return
		}
		defer os.RemoveAll(dir)
		src := `#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
int main(void) { cl_uint n = 0; return clGetPlatformIDs(0, NULL, &n) == CL_SUCCESS && n > 0 ? 0 : 3; }
`
		if err := os.WriteFile(filepath.Join(dir, "probe.c"), []byte(src), 0o644); err != nil {
			openclError = err.Error()
			return
		}
		if out, err := exec.Command(cc, "-o", filepath.Join(dir, "probe"), filepath.Join(dir, "probe.c"), "-lOpenCL").CombinedOutput(); err != nil {
			openclError = "the OpenCL headers or libOpenCL.so are missing (Debian: apt-get install ocl-icd-opencl-dev): " + strings.TrimSpace(string(out))
			return
		}
		cmd := exec.Command(filepath.Join(dir, "probe"))
		cmd.Env = append(os.Environ(), "POCL_CACHE_DIR="+dir)
		if err := cmd.Run(); err != nil {
			openclError = "no OpenCL platform (Debian: apt-get install pocl-opencl-icd): " + err.Error()
		}
	})
	if openclError != "" {
		skipOrFail(t, "opencl", "%s", openclError)
	}
	return toolchain{
		target: "opencl",
		build: func(dir, name string) *exec.Cmd {
			return exec.Command("cc", "-O2", "main.c", name+"_host.c", "-lOpenCL", "-lm", "-o", name)
		},
		// PoCL's kernel cache: one per harness directory, since processes building into one
		// cache at once can abort PoCL's linker. PoCL builds the kernels without optimization:
		// the test checks what the generated code computes, and LLVM's optimization of the
		// n5d kernels was most of its time in CI.
		env: func(dir string) []string {
			return []string{"POCL_CACHE_DIR=" + filepath.Join(dir, "pocl"), "POCL_EXTRA_BUILD_FLAGS=-cl-opt-disable"}
		},
	}
}

// nvcc finds the CUDA compiler: on PATH, else the toolkit's usual place.
func nvcc() string {
	if p, err := exec.LookPath("nvcc"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/local/cuda/bin/nvcc"); err == nil {
		return "/usr/local/cuda/bin/nvcc"
	}
	return ""
}

func cudaToolchain(t *testing.T) toolchain {
	nv := nvcc()
	if nv == "" {
		skipOrFail(t, "cuda", "nvcc not found (PATH, /usr/local/cuda/bin)")
	}
	arch := os.Getenv("TEMPEST_CUDA_ARCH")
	if arch == "" {
		arch = "sm_90"
	}
	return toolchain{
		target: "cuda",
		build: func(dir, name string) *exec.Cmd {
			return exec.Command(nv, "-O3", "-arch="+arch, "main.cu", name+".cu", "-o", name)
		},
		env:         func(string) []string { return nil },
		unavailable: []string{"no CUDA-capable device", "CUDA driver version is insufficient"},
	}
}

// TestOpenCLEndToEnd builds the generated OpenCL host code and harness with cc against
// libOpenCL, runs them on the machine's OpenCL platform (PoCL in CI) with the harness's own CPU
// check, and compares the grids they write with the Go CPU engine from the same initial data:
// the program's init expressions (as `tempest run` computes them) and raw data given with -i.
func TestOpenCLEndToEnd(t *testing.T) { endToEnd(t, openclToolchain(t)) }

// TestCUDAEndToEnd does the same with nvcc and the CUDA runtime; it runs on the GPU machine
// (from a test binary built with CGO_ENABLED=0 go test -c, run in this directory).
func TestCUDAEndToEnd(t *testing.T) { endToEnd(t, cudaToolchain(t)) }

// endToEnd runs every case of e2eCases under every plan. Without the long tests
// (testkit.Long), OpenCL runs one plan of each program, a different strategy for each, and
// one n5d plan: a harness build and two runs on PoCL take seconds each.
func endToEnd(t *testing.T, tc toolchain) {
	quick := tc.target == "opencl" && !testkit.Long()
	n5d, dealt := false, 0
	for k, c := range e2eCases {
		p, err := load.File(filepath.Join("../../examples", c.file), load.Options{})
		if err != nil {
			t.Fatal(err)
		}
		plans := e2ePlans(p, c.plans)
		for i, pl := range plans {
			if quick && i != k%len(plans) && (n5d || pl.Strategy != "n5d") {
				continue
			}
			n5d = n5d || pl.Strategy == "n5d"
			if dealt++; !quick && !testkit.OwnsIndex(dealt-1) {
				continue // another shard's case (TEMPEST_SHARD)
			}
			name := strings.TrimSuffix(filepath.Base(c.file), ".stencil") + "/" + pl.String()
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				runCase(t, tc, p, pl, c.shape, c.steps)
			})
		}
	}
}

func runCase(t *testing.T, tc toolchain, p *ir.Program, pl plan.Plan, shape []int, steps int) {
	out, err := Generate(p, Options{Target: tc.target, Plan: pl, Shape: shape, Harness: true})
	if err != nil {
		if strings.Contains(err.Error(), "does not fit") || strings.Contains(err.Error(), "leaves nothing") {
			t.Skipf("plan does not apply: %v", err)
		}
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, f := range out.Files {
		if err := os.WriteFile(filepath.Join(dir, f.Name), f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	build := tc.build(dir, out.Name)
	build.Dir = dir
	if msg, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building (%s): %v\n%s", strings.Join(build.Args, " "), err, msg)
	}
	size := strings.Trim(strings.ReplaceAll(fmt.Sprint(shape), " ", "x"), "[]")
	run := func(args ...string) string {
		cmd := exec.Command(filepath.Join(dir, out.Name), append([]string{"-s", size, "-t", fmt.Sprint(steps), "-n", "2", "-c"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), tc.env(dir)...)
		msg, err := cmd.CombinedOutput()
		if err != nil {
			for _, u := range tc.unavailable {
				if strings.Contains(string(msg), u) {
					skipOrFail(t, tc.target, "no device: %s", msg)
				}
			}
			t.Fatalf("%s %s: %v\n%s", out.Name, strings.Join(args, " "), err, msg)
		}
		if !strings.Contains(string(msg), "check against the CPU loop") || !strings.Contains(string(msg), ": ok") {
			t.Fatalf("the harness did not report a passing CPU check:\n%s", msg)
		}
		return string(msg)
	}

	// 1. Initial data from the program's init expressions, computed by the harness in C;
	// tempest run computes the same with its default seed.
	s, err := state.New(p, shape, state.DefaultParams(p), 1)
	if err != nil {
		t.Fatal(err)
	}
	ref.Init(s)
	initial := s.Clone()
	log := run("-o", "init_out.raw")
	got := readRaw(t, filepath.Join(dir, "init_out.raw"), initial)
	want := s
	eng := cpu.New(want)
	eng.Run(steps, nil)
	eng.Sync()
	if msg := agree(want, got, true); msg != "" {
		t.Errorf("from the program's initial values: %s\nharness output:\n%s", msg, log)
	}

	// 2. Other initial data (every grid and level random), passed in with -i.
	in := initial.Clone()
	for _, g := range p.Grids {
		randomize(in.Cur[g.Index], g, 0)
		if g.Levels > 1 {
			randomize(in.Prev[g.Index], g, 1)
		}
	}
	writeRaw(t, filepath.Join(dir, "in.raw"), in)
	log = run("-i", "in.raw", "-o", "out.raw")
	got = readRaw(t, filepath.Join(dir, "out.raw"), in)
	want = in.Clone()
	eng = cpu.New(want)
	eng.Run(steps, nil)
	eng.Sync()
	if msg := agree(want, got, true); msg != "" {
		t.Errorf("from data given with -i: %s\nharness output:\n%s", msg, log)
	}
}

// randomize fills an array with values of a deterministic hash: integers 0..9, floats in [0,1).
func randomize(a *gridio.Array, g *ir.Grid, level int) {
	for i := 0; i < a.Len(); i++ {
		r := ref.Rand(7, g.Index, level, i, ir.F64)
		if g.Type.IsInt() {
			state.Set(a, i, ir.MakeInt(g.Type, int64(r*10)))
		} else {
			state.Set(a, i, ir.MakeFloat(g.Type, r))
		}
	}
}

// rawLevels lists the arrays of a state in the harness's raw layout: every grid in
// declaration order, current level then previous.
func rawLevels(s *state.State) []*gridio.Array {
	var out []*gridio.Array
	for _, g := range s.Prog.Grids {
		out = append(out, s.Cur[g.Index])
		if g.Levels > 1 {
			out = append(out, s.Prev[g.Index])
		}
	}
	return out
}

func writeRaw(t *testing.T, path string, s *state.State) {
	var b bytes.Buffer
	for _, a := range rawLevels(s) {
		if err := binary.Write(&b, binary.NativeEndian, a.Data); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// readRaw reads a raw file into a copy of like.
func readRaw(t *testing.T, path string, like *state.State) *state.State {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := like.Clone()
	r := bytes.NewReader(data)
	for _, a := range rawLevels(s) {
		if err := binary.Read(r, binary.NativeEndian, a.Data); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	if r.Len() != 0 {
		t.Fatalf("%s: %d bytes too many", path, r.Len())
	}
	return s
}

// Tolerances against the Go engine, relative to the largest magnitude of the reference field
// (GPU compilers contract into FMAs and their math functions differ in the last place).
const (
	tolF32 = 2e-5
	tolF64 = 1e-12
)

// agree compares every level of every grid: integers and read-only grids bitwise, floats
// within the tolerance of their type.
func agree(want, got *state.State, inputsExact bool) string {
	for _, g := range want.Prog.Grids {
		levels := [][2]*gridio.Array{{want.Cur[g.Index], got.Cur[g.Index]}}
		if g.Levels > 1 {
			levels = append(levels, [2]*gridio.Array{want.Prev[g.Index], got.Prev[g.Index]})
		}
		for l, pair := range levels {
			a, b := pair[0].Float64s(), pair[1].Float64s()
			scale := 1.0
			for _, v := range a {
				if !math.IsInf(v, 0) && !math.IsNaN(v) {
					scale = max(scale, math.Abs(v))
				}
			}
			tol := 0.0
			if g.Update != nil || !inputsExact {
				switch g.Type {
				case ir.F32:
					tol = tolF32 * scale
				case ir.F64:
					tol = tolF64 * scale
				}
			}
			for i := range a {
				if a[i] == b[i] || math.IsNaN(a[i]) && math.IsNaN(b[i]) {
					continue
				}
				if math.Abs(a[i]-b[i]) > tol || math.IsNaN(a[i]) || math.IsNaN(b[i]) {
					return fmt.Sprintf("grid %s level %d element %d: harness %v, Go CPU engine %v (tolerance %.3g)", g.Name, l, i, b[i], a[i], tol)
				}
			}
		}
	}
	return ""
}

func init() {
	var x uint16 = 1
	if *(*byte)(unsafe.Pointer(&x)) != 1 {
		panic(errors.New("the end-to-end tests assume a little-endian machine"))
	}
}

// TestHarnessCheckAmplifiedRounding: gradient2d's update amplifies rounding differences
// (1/sqrt of small sums of squared differences), so a correct build drifts from the harness's
// CPU loop by more than 1e-4 of the largest value; the check allows for the drift the loop
// itself shows against the same loop in double, and passes at the harness's defaults (512^2,
// 100 steps: `make check`), with and without fast math. A device that computes something
// else (eps 5% larger: its kernels, with the CPU loop of the program as written) still fails.
func TestHarnessCheckAmplifiedRounding(t *testing.T) {
	tc := openclToolchain(t)
	src, err := os.ReadFile("../../examples/an5d/gradient2d.stencil")
	if err != nil {
		t.Fatal(err)
	}
	build := func(text, planText string) string {
		p, err := load.Source("gradient2d.stencil", text, load.Options{})
		if err != nil {
			t.Fatal(err)
		}
		pl, err := plan.Parse(planText, p)
		if err != nil {
			t.Fatal(err)
		}
		out, err := Generate(p, Options{Target: "opencl", Plan: pl, Shape: []int{512, 512}, Harness: true})
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		for _, f := range out.Files {
			if err := os.WriteFile(filepath.Join(dir, f.Name), f.Data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	check := func(dir, hostDir string) (string, error) {
		if hostDir != dir {
			data, err := os.ReadFile(filepath.Join(hostDir, "gradient2d_host.c"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "gradient2d_host.c"), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		b := tc.build(dir, "gradient2d")
		b.Dir = dir
		if msg, err := b.CombinedOutput(); err != nil {
			t.Fatalf("building: %v\n%s", err, msg)
		}
		cmd := exec.Command(filepath.Join(dir, "gradient2d"), "-n", "1", "-c")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), tc.env(dir)...)
		msg, err := cmd.CombinedOutput()
		return string(msg), err
	}
	const pl = "tiled:bx=32,by=8"
	for _, text := range []string{pl, pl + ",fastmath=true"} {
		dir := build(string(src), text)
		if msg, err := check(dir, dir); err != nil || !strings.Contains(msg, ": ok") {
			t.Errorf("%s: the check failed a correct build (%v):\n%s", text, err, msg)
		}
	}
	wrong := strings.Replace(string(src), "0.0001", "0.000105", 1)
	if wrong == string(src) {
		t.Fatal("no eps to change in gradient2d.stencil")
	}
	dir := build(string(src), pl)
	if msg, err := check(dir, build(wrong, pl)); err == nil || !strings.Contains(msg, "MISMATCH") {
		t.Errorf("the check passed a device computing eps 5%% larger (%v):\n%s", err, msg)
	}
}
