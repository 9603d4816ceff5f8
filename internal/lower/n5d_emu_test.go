package lower

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"tempest/internal/ir"
	"tempest/internal/kir"
	"tempest/internal/load"
	"tempest/internal/plan"
	"tempest/internal/ref"
	"tempest/internal/state"
	"tempest/internal/testkit"
)

// emuPrelude lets a CUDA n5d kernel run as C++ on the CPU: every GPU thread of a block is a
// coroutine (ucontext) that runs until its next barrier, and the next phase starts when all
// of them have arrived (a thread that finished while others wait is reported, as that would
// hang the GPU). The block's shared memory is bounds-checked and filled with NaN (an output
// that depends on a word nobody wrote shows). The host code runs groups of blocks together
// (all of size one now that no plan clusters blocks).
const emuPrelude = `#include <ucontext.h>
#include <vector>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
struct dim3_ { unsigned x, y, z; };
dim3_ threadIdx, blockIdx, gridDim;
struct float2 { float x, y; };
inline float2 make_float2(float a, float b) { return {a, b}; }
struct alignas(16) float4 { float x, y, z, w; };
inline float4 make_float4(float a, float b, float c, float d) { return {a, b, c, d}; }
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
struct Smem {
  float* p; long n;
  float& operator[](long i) const {
    if (i < 0 || i >= n) { fprintf(stderr, "shared index %ld outside 0..%ld\n", i, n - 1); exit(3); }
    return p[i];
  }
};
Smem tl_smem;
Smem cl_smem[8];
ucontext_t emu_main;
std::vector<ucontext_t> emu_ctx;
int emu_cur;
inline void emu_sync() { swapcontext(&emu_ctx[emu_cur], &emu_main); }
inline void emu_block_sync() { emu_sync(); }
`

// emuCXX is a C++ compiler, or "" when there is none.
func emuCXX() string {
	for _, c := range []string{"g++", "clang++", "clang++-15"} {
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	return ""
}

// emuSource makes a printed CUDA module C++ for emuPrelude.
func emuSource(cu string) string {
	cu = strings.ReplaceAll(cu, "__syncthreads();", "emu_block_sync();")
	cu = strings.ReplaceAll(cu, "extern __shared__ float smem[];", "Smem smem = tl_smem;")
	cu = regexp.MustCompile(`extern "C" __global__ void (__launch_bounds__\(\d+\) )?`).ReplaceAllString(cu, "void ")
	return strings.ReplaceAll(cu, "__restrict__", "")
}

// TestN5DFastLoopLoadsInside runs n5d kernels whose loop without the rim's checks loads its
// planes without clamping them (a prefetch deeper than the rim: n5dRimMargins widens the
// margin instead, plan.Unclamped) under AddressSanitizer, at streaming-axis lengths that put the last block
// the loop runs in at every phase of the round, and compares the results with the reference
// interpreter: a load past the last plane is a heap overflow of the input. It needs a C++
// compiler with AddressSanitizer (skipped without one, and with -short).
func TestN5DFastLoopLoadsInside(t *testing.T) {
	testkit.LongTest(t) // compiles C++ for every case
	cxx := emuCXX()
	if cxx == "" || !emuHasASan(t, cxx) {
		t.Skip("no C++ compiler with AddressSanitizer")
	}
	asan := []string{"-fsanitize=address", "-fno-omit-frame-pointer"}
	cases := []struct {
		file, plan string
		chunk      int
		shape      []int // n0 runs from shape[0] over a round (6 planes at reach 1, 10 at 2)
		steps      int
	}{
		// pf 6 over a rim of 1: the margin widens by 4 planes; rim blocks end a chunk exactly there
		{"an5d/star2d1r", "n5d:bx=8,bt=3,rx=2,pf=6,rimblocks=true,unclamped=true", 7, []int{60, 18}, 7},
		{"an5d/j2d5pt", "n5d:bx=8,bt=4,rx=2,pf=3,edges=true,unclamped=true", 9, []int{70, 34}, 9},
		// reach 2, wave order off, pf 5 over a rim of 2
		{"an5d/star2d2r", "n5d:bx=8,bt=2,rx=2,pf=5,wave=false,rimblocks=true,unclamped=true", 6, []int{50, 20}, 5},
		// 3D, scalar accesses
		{"an5d/star3d1r", "n5d:bx=8,by=8,bt=2,pf=3,vec=1,rimblocks=true,unclamped=true", 5, []int{40, 12, 13}, 4},
	}
	for _, c := range cases {
		var runs []emuRun
		round := 6
		if strings.HasSuffix(c.file, "2r") {
			round = 10
		}
		for k := 0; k < round; k++ {
			shape := append([]int{c.shape[0] + k}, c.shape[1:]...)
			runs = append(runs, emuRun{shape, c.steps})
		}
		emulateN5D(t, cxx, c.file, c.plan, c.chunk, runs, asan)
	}
}

// emuHasASan says cxx builds and runs a program under AddressSanitizer.
func emuHasASan(t *testing.T, cxx string) bool {
	dir := t.TempDir()
	src, bin := filepath.Join(dir, "a.cpp"), filepath.Join(dir, "a")
	if err := os.WriteFile(src, []byte("int main() { return 0; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if exec.Command(cxx, "-fsanitize=address", src, "-o", bin).Run() != nil {
		return false
	}
	return exec.Command(bin).Run() == nil
}

// emuRun is one run of an emulated kernel: the grid's shape and the steps.
type emuRun struct {
	shape []int
	steps int
}

// emulateN5D lowers the stencil of examples/FILE.stencil under plan (its chunk set to chunk)
// for each run's shape, compiles the kernels once (with the extra compiler flags), runs every
// run's schedule from the reference's initial state and fails t where a cell is off the
// reference interpreter's result by more than 1e-4 relative. The runs must share one module.
func emulateN5D(t *testing.T, cxx, file, planText string, chunk int, runs []emuRun, flags []string) {
	t.Helper()
	p, err := load.File("../../examples/"+file+".stencil", load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pl, err := plan.Parse(planText, p)
	if err != nil {
		t.Fatal(err)
	}
	pl.Chunk = chunk
	if len(p.Updates) != 1 || p.Updates[0].Grid.Type != ir.F32 || len(p.Params) > 0 {
		t.Fatalf("%s: the emulation takes one f32 state grid and no parameters", file)
	}
	dir := t.TempDir()
	write := func(name string, v []float64) {
		b := make([]byte, 4*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(x)))
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	module := ""
	chunkArg := 0 // the first run's chunk argument, which the host passes to every launch
	var calls strings.Builder
	for r, run := range runs {
		l, err := Lower(p, run.shape, nil, pl)
		if err != nil {
			t.Fatal(err)
		}
		cu := kir.Print(l.Module, kir.CUDA)
		if module != "" && cu != module {
			t.Fatalf("%s %s: the module differs between shapes %v and %v", file, pl, runs[0].shape, run.shape)
		}
		module = cu
		for _, a := range l.Launches[0].Args {
			if a.Kind == ArgConst && r == 0 {
				chunkArg = int(a.Value)
			}
		}
		s, err := state.New(p, run.shape, state.DefaultParams(p), 4)
		if err != nil {
			t.Fatal(err)
		}
		ref.Init(s)
		in := s.Cur[0].Float64s()
		w := s.Clone()
		ref.Run(w, run.steps)
		write(fmt.Sprintf("in%d.bin", r), in)
		write(fmt.Sprintf("want%d.bin", r), w.Cur[0].Float64s())
		// The host's schedule: the deepest launches that fit, then shallower ones.
		var sched strings.Builder
		left := run.steps
		for i, la := range l.Launches {
			for ; left >= la.Steps; left -= la.Steps {
				k := l.Module.Kernels[i]
				cl := [3]int{1, 1, 1}
				fmt.Fprintf(&sched, "  launch(%s, {%d, %d, %d}, {%d, %d, %d}, {%d, %d, %d}, %d, %d);\n", k.Name,
					la.Grid[0], la.Grid[1], la.Grid[2], la.Block[0], la.Block[1], la.Block[2], cl[0], cl[1], cl[2], la.Shared/4, la.Steps)
			}
		}
		sizes := ""
		for a, v := range run.shape {
			sizes += fmt.Sprintf("emu_n[%d] = %d; ", a, v)
		}
		fmt.Fprintf(&calls, "  { %sif (start(%d, %d)) return 2;\n%s  bad += check(%d, %q); }\n", sizes, r, len(in), sched.String(), len(in), fmt.Sprint(run.shape))
	}
	sizes := ""
	for a := range runs[0].shape {
		sizes += fmt.Sprintf(", emu_n[%d]", a)
	}
	host := fmt.Sprintf(`
typedef void (*kernel_t)(const float*, float*%[1]s, int, int);
std::vector<float> a, b, want;
int step0 = 0;
int emu_n[3];
kernel_t cur_k;
std::vector<dim3_> emu_tid, emu_bid;
std::vector<int> emu_rank, emu_done;
void emu_entry(int i) {
  cur_k(a.data(), b.data()%[2]s, step0, %[3]d);
  emu_done[i] = 1;
}
void launch(kernel_t k, std::vector<int> grid, std::vector<int> block, std::vector<int> cl, long shElems, int steps) {
  int nb = cl[0] * cl[1], nt = block[0] * block[1], n = nb * nt;
  cur_k = k;
  gridDim = {(unsigned)grid[0], (unsigned)grid[1], (unsigned)grid[2]};
  std::vector<std::vector<char>> stacks(n, std::vector<char>(1 << 18));
  for (int gz = 0; gz < grid[2]; gz++)
  for (int gy = 0; gy < grid[1]; gy += cl[1])
  for (int gx = 0; gx < grid[0]; gx += cl[0]) {
    std::vector<std::vector<float>> mem(nb, std::vector<float>(shElems + 1, NAN));
    for (int r = 0; r < nb; r++) cl_smem[r] = Smem{mem[r].data(), shElems};
    emu_ctx.assign(n, ucontext_t{});
    emu_tid.clear(); emu_bid.clear(); emu_rank.clear(); emu_done.assign(n, 0);
    for (int ky = 0; ky < cl[1]; ky++) for (int kx = 0; kx < cl[0]; kx++) for (int ty = 0; ty < block[1]; ty++) for (int tx = 0; tx < block[0]; tx++) {
      int i = (int)emu_tid.size();
      emu_tid.push_back({(unsigned)tx, (unsigned)ty, 0});
      emu_bid.push_back({(unsigned)(gx + kx), (unsigned)(gy + ky), (unsigned)gz});
      emu_rank.push_back(kx + ky * cl[0]);
      getcontext(&emu_ctx[i]);
      emu_ctx[i].uc_stack.ss_sp = stacks[i].data();
      emu_ctx[i].uc_stack.ss_size = stacks[i].size();
      emu_ctx[i].uc_link = &emu_main;
      makecontext(&emu_ctx[i], (void (*)())emu_entry, 1, i);
    }
    for (;;) { // one phase: every thread to its next barrier or its end
      for (int i = 0; i < n; i++) {
        if (emu_done[i]) continue;
        emu_cur = i; threadIdx = emu_tid[i]; blockIdx = emu_bid[i]; tl_smem = cl_smem[emu_rank[i]];
        swapcontext(&emu_main, &emu_ctx[i]);
      }
      int done = 0;
      for (int i = 0; i < n; i++) done += emu_done[i];
      if (done == n) break;
      if (done > 0) { fprintf(stderr, "%%d of %%d threads ended while the others wait at a barrier\n", done, n); exit(4); }
    }
  }
  std::swap(a, b);
  step0 += steps;
}
// start reads run r's input and expected output (N cells each) into exactly sized buffers.
int start(int r, long N) {
  char name[32];
  a.assign(N, 0); want.assign(N, 0);
  snprintf(name, sizeof name, "in%%d.bin", r);
  FILE* f = fopen(name, "rb"); if (!f || fread(a.data(), 4, N, f) != (size_t)N) return 1; fclose(f);
  snprintf(name, sizeof name, "want%%d.bin", r);
  f = fopen(name, "rb"); if (!f || fread(want.data(), 4, N, f) != (size_t)N) return 1; fclose(f);
  b = a; // cells no launch stores (the fixed rim) keep their values in both buffers
  step0 = 0;
  return 0;
}
// check compares the result with the expected one and prints the run's line.
int check(long N, const char* shape) {
  long bad = 0, first = -1;
  double worst = 0;
  for (long i = 0; i < N; i++) {
    double e = std::fabs((double)a[i] - want[i]);
    if (!(e <= 1e-4 * std::max(1.0, std::fabs((double)want[i])))) { if (first < 0) first = i; bad++; }
    if (!(e <= worst)) worst = e;
  }
  printf("%%s: max error %%g, %%ld cells off (first %%ld)\n", shape, worst, bad, first);
  return bad != 0;
}
int main() {
  int bad = 0;
%[4]s  return bad != 0;
}
`, strings.Repeat(", int", len(runs[0].shape)), sizes, chunkArg, calls.String())
	src := filepath.Join(dir, "emu.cpp")
	if err := os.WriteFile(src, []byte(emuPrelude+emuSource(module)+host), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "emu")
	args := append([]string{"-std=c++17", "-O1", "-w"}, flags...)
	if out, err := exec.Command(cxx, append(args, src, "-o", bin)...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: compiling the emulation: %v\n%s", file, pl, err, out)
	}
	cmd := exec.Command(bin)
	cmd.Dir = dir
	// Switching stacks (ucontext) makes AddressSanitizer warn of possible false positives on
	// stacks; its heap checks, which find loads past a buffer's end, are exact.
	cmd.Env = append(os.Environ(), "ASAN_OPTIONS=detect_stack_use_after_return=0:detect_leaks=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("%s %s, %d runs: %v: %s", file, pl, len(runs), err, out)
		return
	}
	t.Logf("%s %s: %s", file, pl, strings.TrimSpace(string(out)))
}
