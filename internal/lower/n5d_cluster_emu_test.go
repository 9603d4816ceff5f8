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
)

// emuPrelude lets a CUDA n5d kernel run as C++ on the CPU: every GPU thread of a cluster is
// a coroutine (ucontext) that runs until its next barrier, block or cluster, and the next
// phase starts when all of them have arrived (a cluster's blocks meet at the same barriers,
// so one kind serves both; a thread that finished while others wait is reported, as that
// would hang the GPU). The blocks' shared memory is bounds-checked and filled with NaN (an
// output that depends on a word nobody wrote shows), and a store into another block's
// shared memory is a plain store into that block's array (a cluster address is its rank).
const emuPrelude = `#include <ucontext.h>
#include <vector>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
struct dim3_ { unsigned x, y, z; };
dim3_ threadIdx, blockIdx;
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
inline void emu_cluster_sync() { emu_sync(); }
inline unsigned tempest_cluster_addr(Smem, int rank) { return (unsigned)rank; }
inline void tempest_st_cluster(unsigned b, int i, float v) { cl_smem[b][i] = v; }
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
	if i := strings.Index(cu, "__device__ __forceinline__ unsigned tempest_cluster_addr"); i >= 0 {
		cu = cu[:i] + cu[strings.Index(cu, "extern \"C\""):]
	}
	cu = strings.ReplaceAll(cu, `asm volatile("barrier.cluster.arrive.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory");`, "emu_cluster_sync();")
	// An arrive and its wait: the wait completes the barrier (nothing between them touches
	// shared memory).
	cu = strings.ReplaceAll(cu, `asm volatile("barrier.cluster.arrive.aligned;" ::: "memory");`, "")
	cu = strings.ReplaceAll(cu, `asm volatile("barrier.cluster.wait.aligned;" ::: "memory");`, "emu_cluster_sync();")
	cu = strings.ReplaceAll(cu, "__syncthreads();", "emu_block_sync();")
	cu = strings.ReplaceAll(cu, "extern __shared__ float smem[];", "Smem smem = tl_smem;")
	cu = regexp.MustCompile(`extern "C" __global__ void (__launch_bounds__\(\d+\) )?(__cluster_dims__\(\d+, \d+, \d+\) )?`).ReplaceAllString(cu, "void ")
	return strings.ReplaceAll(cu, "__restrict__", "")
}

// TestN5DClusterEmulated runs n5d kernels in thread-block clusters on the CPU (the printed
// CUDA compiled as C++, emuPrelude) through the host's schedule of deep and shallow launches
// and compares the result with the reference interpreter (tolerance 1e-4 relative, float):
// the blocks of a cluster must find every cell their neighbours own in their ghost words, at
// shapes with partial clusters and blocks wholly outside the domain. It needs a C++
// compiler (skipped without one, and with -short).
func TestN5DClusterEmulated(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles C++")
	}
	cxx := emuCXX()
	if cxx == "" {
		t.Skip("no C++ compiler")
	}
	cases := []struct {
		file, plan string
		shape      []int
		steps      int
	}{
		// split rows (rx=2, first order), pushes to the four sides, bt=3 plus a remainder
		{"an5d/star3d1r", "n5d:bx=4,by=4,rx=2,bt=3,cx=2,cy=2,pf=2", []int{9, 30, 45}, 5},
		// middle blocks with neighbours on both sides (cx=4), scalar accesses
		{"an5d/star3d1r", "n5d:bx=4,by=4,bt=2,cx=4,cy=2,vec=1", []int{9, 21, 70}, 4},
		// partial sums, corners, one barrier per level
		{"an5d/box3d1r", "n5d:bx=8,by=4,bt=3,cx=2,cy=2,wave=false", []int{9, 33, 47}, 3},
		// 2D, reach 2, cells side by side
		{"an5d/box2d2r", "n5d:bx=16,rx=2,bt=2,cx=2", []int{12, 150}, 3},
	}
	for _, c := range cases {
		p, err := load.File("../../examples/"+c.file+".stencil", load.Options{})
		if err != nil {
			t.Fatal(err)
		}
		pl, err := plan.Parse(c.plan, p)
		if err != nil {
			t.Fatal(err)
		}
		pl.Chunk = 5
		l, err := Lower(p, c.shape, nil, pl)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Updates) != 1 || p.Updates[0].Grid.Type != ir.F32 || len(p.Params) > 0 {
			t.Fatalf("%s: the emulation takes one f32 state grid and no parameters", c.file)
		}
		s, err := state.New(p, c.shape, state.DefaultParams(p), 4)
		if err != nil {
			t.Fatal(err)
		}
		ref.Init(s)
		in := s.Cur[0].Float64s()
		w := s.Clone()
		ref.Run(w, c.steps)
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
		write("in.bin", in)
		write("want.bin", w.Cur[0].Float64s())
		// The host's schedule: the deepest launches that fit, then shallower ones.
		var sched strings.Builder
		left := c.steps
		for i, la := range l.Launches {
			for ; left >= la.Steps; left -= la.Steps {
				k := l.Module.Kernels[i]
				cl := k.Cluster
				if !k.Clustered() {
					cl = [3]int{1, 1, 1}
				}
				fmt.Fprintf(&sched, "  launch(%s, {%d, %d, %d}, {%d, %d, %d}, {%d, %d, %d}, %d, %d);\n", k.Name,
					la.Grid[0], la.Grid[1], la.Grid[2], la.Block[0], la.Block[1], la.Block[2], cl[0], cl[1], cl[2], la.Shared/4, la.Steps)
			}
		}
		sizes := ""
		for _, v := range c.shape {
			sizes += fmt.Sprintf(", %d", v)
		}
		chunk := 0
		for _, a := range l.Launches[0].Args {
			if a.Kind == ArgConst {
				chunk = int(a.Value)
			}
		}
		host := fmt.Sprintf(`
typedef void (*kernel_t)(const float*, float*%[1]s, int, int);
std::vector<float> a, b;
int step0 = 0;
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
int main() {
  const long N = %[4]d;
  std::vector<float> want(N);
  a.resize(N);
  FILE* f = fopen("in.bin", "rb"); if (!f || fread(a.data(), 4, N, f) != (size_t)N) return 2; fclose(f);
  f = fopen("want.bin", "rb"); if (!f || fread(want.data(), 4, N, f) != (size_t)N) return 2; fclose(f);
  b = a; // cells no launch stores (the fixed rim) keep their values in both buffers
%[5]s  long bad = 0, first = -1;
  double worst = 0;
  for (long i = 0; i < N; i++) {
    double e = std::fabs((double)a[i] - want[i]);
    if (!(e <= 1e-4 * std::max(1.0, std::fabs((double)want[i])))) { if (first < 0) first = i; bad++; }
    if (!(e <= worst)) worst = e;
  }
  printf("max error %%g, %%ld cells off (first %%ld)\n", worst, bad, first);
  return bad != 0;
}
`, strings.Repeat(", int", len(c.shape)), sizes, chunk, len(in), sched.String())
		src := filepath.Join(dir, "emu.cpp")
		if err := os.WriteFile(src, []byte(emuPrelude+emuSource(kir.Print(l.Module, kir.CUDA))+host), 0o644); err != nil {
			t.Fatal(err)
		}
		bin := filepath.Join(dir, "emu")
		if out, err := exec.Command(cxx, "-std=c++17", "-O1", "-w", src, "-o", bin).CombinedOutput(); err != nil {
			t.Fatalf("%s %s: compiling the emulation: %v\n%s", c.file, pl, err, out)
		}
		cmd := exec.Command(bin)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("%s %s, %v, %d steps: %v: %s", c.file, pl, c.shape, c.steps, err, out)
			continue
		}
		t.Logf("%s %s, %v, %d steps: %s", c.file, pl, c.shape, c.steps, strings.TrimSpace(string(out)))
	}
}
