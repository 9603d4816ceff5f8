package gpu

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"
)

// openOrSkip opens a backend; when it is unavailable the test skips, unless
// TEMPEST_REQUIRE_CUDA=1 / TEMPEST_REQUIRE_OPENCL=1 asks for it.
func openOrSkip(t *testing.T, backend string) Device {
	t.Helper()
	d, err := Open(backend)
	if err != nil {
		require := os.Getenv("TEMPEST_REQUIRE_"+strings.ToUpper(backend)) == "1"
		if errors.Is(err, ErrUnavailable) && !require {
			t.Skipf("%s unavailable: %v", backend, err)
		}
		t.Fatalf("Open(%q): %v", backend, err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return d
}

// Kernels, once per dialect.
var testSources = map[string]string{
	"cuda": `
extern "C" __global__ void saxpy(int n, float a, const float* x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

// Block-wise reversal through dynamic shared memory.
extern "C" __global__ void reverse_blocks(int n, const float* in, float* out) {
    extern __shared__ float s[];
    int t = threadIdx.x, b = blockDim.x;
    int i = blockIdx.x * b + t;
    s[t] = i < n ? in[i] : 0.0f;
    __syncthreads();
    int j = blockIdx.x * b + (b - 1 - t);
    if (j < n) out[j] = s[t];
}

// Scalar argument marshalling of every width.
extern "C" __global__ void scalars(int a, long long b, float c, double d, double* out) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        out[0] = (double)a; out[1] = (double)b; out[2] = (double)c; out[3] = d;
        out[4] = SCALE;
    }
}
`,
	"opencl": `
__kernel void saxpy(int n, float a, __global const float* x, __global float* y) {
    int i = get_global_id(0);
    if (i < n) y[i] = a * x[i] + y[i];
}

// Block-wise reversal through dynamic local memory (the last parameter).
__kernel void reverse_blocks(int n, __global const float* in, __global float* out, __local float* s) {
    int t = get_local_id(0), b = get_local_size(0);
    int i = get_group_id(0) * b + t;
    s[t] = i < n ? in[i] : 0.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    int j = get_group_id(0) * b + (b - 1 - t);
    if (j < n) out[j] = s[t];
}

// Scalar argument marshalling of every width.
__kernel void scalars(int a, long b, float c, double d, __global double* out) {
    if (get_global_id(0) == 0) {
        out[0] = (double)a; out[1] = (double)b; out[2] = (double)c; out[3] = d;
        out[4] = SCALE;
    }
}
`,
}

// A compile error on a known line (line 4 of the source).
var badSources = map[string]string{
	"cuda": "extern \"C\" __global__ void bad(float* y) {\n" +
		"    int i = threadIdx.x;\n" +
		"    float t = y[i];\n" +
		"    y[i] = t * undefined_thing_42;\n" +
		"}\n",
	"opencl": "__kernel void bad(__global float* y) {\n" +
		"    int i = get_global_id(0);\n" +
		"    float t = y[i];\n" +
		"    y[i] = t * undefined_thing_42;\n" +
		"}\n",
}

func TestBackends(t *testing.T) {
	for _, backend := range Backends {
		t.Run(backend, func(t *testing.T) { testBackend(t, backend) })
	}
}

func testBackend(t *testing.T, backend string) {
	d := openOrSkip(t, backend)
	p := d.Props()
	t.Logf("%s", p)
	if cd, ok := d.(*clDevice); ok {
		t.Logf("OpenCL event timing: launch events = %v", cd.launchTiming)
	}
	if p.Backend != backend || p.Name == "" || p.SMs <= 0 || p.MaxThreadsPerBlock <= 0 || p.SharedPerBlock <= 0 ||
		p.SharedPerBlockOptin < p.SharedPerBlock || p.GlobalMem <= 0 || p.WarpSize <= 0 || p.Compiler == "" {
		t.Errorf("implausible props: %+v", p)
	}
	if backend == "cuda" && (p.ComputeMajor < 3 || p.WarpSize != 32 || p.RegsPerSM <= 0) {
		t.Errorf("implausible CUDA props: %+v", p)
	}

	start := time.Now()
	mod, err := d.Compile("tempest_test", testSources[backend], CompileOptions{Defines: map[string]string{"SCALE": "2.5"}})
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	t.Logf("compile: %v", time.Since(start))
	defer mod.Close()

	t.Run("rect", func(t *testing.T) { testRect(t, d) })
	t.Run("saxpy", func(t *testing.T) {
		const n = 1000003
		x := make([]float32, n)
		y := make([]float32, n)
		for i := range x {
			x[i] = float32(i%1000) * 0.5
			y[i] = float32(i % 7)
		}
		bx, err := AllocSlice(d, x)
		if err != nil {
			t.Fatal(err)
		}
		defer bx.Free()
		by, err := AllocSlice(d, y)
		if err != nil {
			t.Fatal(err)
		}
		defer by.Free()
		if bx.Size() != 4*n {
			t.Errorf("Size = %d", bx.Size())
		}
		k, err := mod.Kernel("saxpy")
		if err != nil {
			t.Fatal(err)
		}
		const block = 128
		grid := (n + block - 1) / block
		e0, err := d.NewEvent()
		if err != nil {
			t.Fatal(err)
		}
		defer e0.Free()
		e1, err := d.NewEvent()
		if err != nil {
			t.Fatal(err)
		}
		defer e1.Free()
		if err := e0.Record(); err != nil {
			t.Fatal(err)
		}
		if err := k.Launch([3]int{grid, 1, 1}, [3]int{block, 1, 1}, 0, int32(n), float32(3), bx, by); err != nil {
			t.Fatal(err)
		}
		if err := e1.Record(); err != nil {
			t.Fatal(err)
		}
		if err := e1.Synchronize(); err != nil {
			t.Fatal(err)
		}
		ms, err := e1.ElapsedMs(e0)
		if err != nil {
			t.Fatalf("ElapsedMs: %v", err)
		}
		if !(ms > 0) || ms > 10000 {
			t.Errorf("elapsed %v ms, want a positive time", ms)
		}
		t.Logf("saxpy over %d elements: %.3f ms", n, ms)
		if err := d.Synchronize(); err != nil {
			t.Fatal(err)
		}
		got := make([]float32, n)
		if err := ReadSlice(by, got); err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if want := 3*x[i] + y[i]; got[i] != want {
				t.Fatalf("y[%d] = %v, want %v", i, got[i], want)
			}
		}
		// A chained launch (CUDA) runs the same kernel: y += 3x once more.
		if ck, ok := k.(ChainedKernel); ok {
			if err := ck.LaunchChained([3]int{grid, 1, 1}, [3]int{block, 1, 1}, 0, int32(n), float32(3), bx, by); err != nil {
				t.Fatal(err)
			}
			if err := ReadSlice(by, got); err != nil {
				t.Fatal(err)
			}
			for i := range got {
				if want := 3*x[i] + (3*x[i] + y[i]); got[i] != want {
					t.Fatalf("chained launch: y[%d] = %v, want %v", i, got[i], want)
				}
			}
		}
		// Errors that must not reach the device.
		if err := k.Launch([3]int{grid, 1, 1}, [3]int{block, 1, 1}, 0, n, float32(3), bx, by); err == nil || !strings.Contains(err.Error(), "int32 or int64") {
			t.Errorf("Go int argument: err = %v", err)
		}
		if err := k.Launch([3]int{0, 1, 1}, [3]int{block, 1, 1}, 0, int32(n), float32(3), bx, by); err == nil || !strings.Contains(err.Error(), "saxpy") {
			t.Errorf("zero grid: err = %v", err)
		}
		if err := bx.Write(make([]byte, 4*n+1)); err == nil {
			t.Error("oversized write succeeded")
		}
	})

	t.Run("shared_reverse", func(t *testing.T) {
		const n, block = 1000, 64 // the last block is partial
		in := make([]float32, n)
		for i := range in {
			in[i] = float32(i)
		}
		bin, err := AllocSlice(d, in)
		if err != nil {
			t.Fatal(err)
		}
		defer bin.Free()
		bout, err := d.Alloc(4 * n)
		if err != nil {
			t.Fatal(err)
		}
		defer bout.Free()
		k, err := mod.Kernel("reverse_blocks")
		if err != nil {
			t.Fatal(err)
		}
		grid := (n + block - 1) / block
		if err := k.Launch([3]int{grid, 1, 1}, [3]int{block, 1, 1}, block*4, int32(n), bin, bout); err != nil {
			t.Fatal(err)
		}
		got := make([]float32, n)
		if err := ReadSlice(bout, got); err != nil {
			t.Fatal(err)
		}
		for b := 0; b < grid; b++ {
			for tt := 0; tt < block; tt++ {
				i, j := b*block+tt, b*block+block-1-tt
				if j < n {
					want := float32(0)
					if i < n {
						want = in[i]
					}
					if got[j] != want {
						t.Fatalf("out[%d] = %v, want %v", j, got[j], want)
					}
				}
			}
		}
	})

	t.Run("scalars", func(t *testing.T) {
		out, err := d.Alloc(5 * 8)
		if err != nil {
			t.Fatal(err)
		}
		defer out.Free()
		k, err := mod.Kernel("scalars")
		if err != nil {
			t.Fatal(err)
		}
		if err := k.Launch([3]int{1, 1, 1}, [3]int{1, 1, 1}, 0, int32(-7), int64(1)<<40+3, float32(1.5), math.Pi, out); err != nil {
			t.Fatal(err)
		}
		got := make([]float64, 5)
		if err := ReadSlice(out, got); err != nil {
			t.Fatal(err)
		}
		want := []float64{-7, float64(int64(1)<<40 + 3), 1.5, math.Pi, 2.5}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("out[%d] = %v, want %v", i, got[i], want[i])
			}
		}
	})

	t.Run("concurrent", func(t *testing.T) {
		// Goroutines sharing one kernel object, each with its own buffers.
		k, err := mod.Kernel("saxpy")
		if err != nil {
			t.Fatal(err)
		}
		const workers, n, reps = 4, 4099, 5
		errs := make(chan error, workers)
		for w := 0; w < workers; w++ {
			go func(w int) {
				errs <- func() error {
					x := make([]float32, n)
					for i := range x {
						x[i] = float32(w + 1)
					}
					bx, err := AllocSlice(d, x)
					if err != nil {
						return err
					}
					defer bx.Free()
					by, err := AllocSlice(d, make([]float32, n))
					if err != nil {
						return err
					}
					defer by.Free()
					for r := 0; r < reps; r++ {
						if err := k.Launch([3]int{(n + 127) / 128, 1, 1}, [3]int{128, 1, 1}, 0, int32(n), float32(1), bx, by); err != nil {
							return err
						}
					}
					got := make([]float32, n)
					if err := ReadSlice(by, got); err != nil {
						return err
					}
					for i, v := range got {
						if v != float32(reps*(w+1)) {
							return fmt.Errorf("worker %d: y[%d] = %v, want %v", w, i, v, reps*(w+1))
						}
					}
					return nil
				}()
			}(w)
		}
		for w := 0; w < workers; w++ {
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}
	})

	t.Run("attrs", func(t *testing.T) {
		k, err := mod.Kernel("saxpy")
		if err != nil {
			t.Fatal(err)
		}
		a := k.Attrs()
		t.Logf("saxpy attrs: %+v", a)
		if a.MaxThreadsPerBlock <= 0 || a.MaxThreadsPerBlock > p.MaxThreadsPerBlock || a.Regs < 0 || a.LocalBytes < 0 || a.StaticShared < 0 {
			t.Errorf("implausible attrs %+v", a)
		}
		if backend == "cuda" && (a.Regs <= 0 || a.Regs > 255) {
			t.Errorf("registers = %d", a.Regs)
		}
		n, err := k.MaxActiveBlocksPerSM(128, 0)
		if err != nil || n <= 0 {
			t.Errorf("MaxActiveBlocksPerSM(128, 0) = %d, %v", n, err)
		}
		if n, err := k.MaxActiveBlocksPerSM(128, p.SharedPerBlockOptin+1); err != nil || n != 0 {
			t.Errorf("MaxActiveBlocksPerSM over the shared limit = %d, %v; want 0", n, err)
		}
		if _, err := mod.Kernel("no_such_kernel"); err == nil {
			t.Error("Kernel(no_such_kernel) succeeded")
		}
	})

	t.Run("compile_error", func(t *testing.T) {
		_, err := d.Compile("broken_kernel", badSources[backend], CompileOptions{})
		if err == nil {
			t.Fatal("compile of a broken kernel succeeded")
		}
		var ce *CompileError
		if !errors.As(err, &ce) {
			t.Fatalf("error is %T, want *CompileError: %v", err, err)
		}
		msg := err.Error()
		t.Logf("%s", msg)
		for _, want := range []string{"broken_kernel", "undefined_thing_42", "> 4 |     y[i] = t * undefined_thing_42;", "  1 |"} {
			if !strings.Contains(msg, want) {
				t.Errorf("compile error lacks %q", want)
			}
		}
		if len(ce.Lines) == 0 || ce.Lines[0] != 4 {
			t.Errorf("Lines = %v, want [4]", ce.Lines)
		}
	})

	t.Run("closed_module", func(t *testing.T) {
		m2, err := d.Compile("closing", testSources[backend], CompileOptions{Defines: map[string]string{"SCALE": "2.5"}})
		if err != nil {
			t.Fatal(err)
		}
		k, err := m2.Kernel("scalars")
		if err != nil {
			t.Fatal(err)
		}
		out, err := d.Alloc(40)
		if err != nil {
			t.Fatal(err)
		}
		defer out.Free()
		if err := m2.Close(); err != nil {
			t.Fatal(err)
		}
		if err := m2.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
		err = k.Launch([3]int{1, 1, 1}, [3]int{1, 1, 1}, 0, int32(1), int64(2), float32(3), 4.0, out)
		if err == nil || !strings.Contains(err.Error(), "closed") {
			t.Errorf("launch after module Close: %v", err)
		}
		if _, err := m2.Kernel("scalars"); err == nil {
			t.Error("Kernel after Close succeeded")
		}
	})

	t.Run("ranges", func(t *testing.T) { testRanges(t, d) })
	if backend == "cuda" {
		t.Run("large_shared", func(t *testing.T) { testLargeShared(t, d) })
	}
}

// testRanges checks the partial reads, writes and device-to-device copies that halo
// exchanges use, including their bounds checks.
func testRanges(t *testing.T, d Device) {
	a, err := AllocSlice(d, []int32{0, 1, 2, 3, 4, 5, 6, 7})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Free()
	b, err := AllocSlice(d, []int32{10, 11, 12, 13, 14, 15, 16, 17})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Free()
	ra, rb := a.(RangeBuffer), b.(RangeBuffer)
	if !SameDevice(a, b) {
		t.Fatal("two buffers of one device are not on the same device")
	}
	// b[1:3] = a[5:7] on the device; a[0:2] = {20, 21} from the host; b[6:8] = a[0:2] through CopyRange.
	if err := rb.CopyFrom(a, 20, 4, 8); err != nil {
		t.Fatal(err)
	}
	if err := ra.WriteAt(bytesOf([]int32{20, 21}), 0); err != nil {
		t.Fatal(err)
	}
	if err := CopyRange(b, 24, a, 0, 8); err != nil {
		t.Fatal(err)
	}
	got := make([]int32, 3)
	if err := rb.ReadAt(bytesOf(got), 4); err != nil {
		t.Fatal(err)
	}
	all := make([]int32, 8)
	if err := ReadSlice(b, all); err != nil {
		t.Fatal(err)
	}
	if want := []int32{10, 5, 6, 13, 14, 15, 20, 21}; fmt.Sprint(all) != fmt.Sprint(want) || fmt.Sprint(got) != fmt.Sprint(want[1:4]) {
		t.Errorf("after range copies b = %v (ReadAt %v), want %v", all, got, want)
	}
	if err := ra.ReadAt(make([]byte, 8), 28); err == nil {
		t.Error("ReadAt past the end succeeded")
	}
	if err := rb.CopyFrom(a, 0, -4, 4); err == nil {
		t.Error("CopyFrom to a negative offset succeeded")
	}
	if pb, ok := a.(PointerBuffer); ok {
		if p, err := pb.DevicePtr(); err != nil || p == 0 {
			t.Errorf("DevicePtr = %#x, %v", p, err)
		}
	}
}

// testLargeShared launches with more than 48 KB of dynamic shared memory,
// which needs cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES).
func testLargeShared(t *testing.T, d Device) {
	p := d.Props()
	bytes := 96 * 1024
	if p.SharedPerBlockOptin < bytes {
		t.Skipf("opt-in shared memory is %d B", p.SharedPerBlockOptin)
	}
	src := `
extern "C" __global__ void big(int words, unsigned* out) {
    extern __shared__ unsigned s[];
    for (int i = threadIdx.x; i < words; i += blockDim.x) s[i] = i;
    __syncthreads();
    if (threadIdx.x == 0) out[blockIdx.x] = s[words - 1];
}`
	mod, err := d.Compile("big_shared", src, CompileOptions{MaxRegs: 64, FastMath: true})
	if err != nil {
		t.Fatal(err)
	}
	defer mod.Close()
	k, err := mod.Kernel("big")
	if err != nil {
		t.Fatal(err)
	}
	out, err := d.Alloc(4 * 4)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Free()
	words := bytes / 4
	if err := k.Launch([3]int{4, 1, 1}, [3]int{256, 1, 1}, bytes, int32(words), out); err != nil {
		t.Fatal(err)
	}
	got := make([]uint32, 4)
	if err := ReadSlice(out, got); err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		if v != uint32(words-1) {
			t.Errorf("out[%d] = %d, want %d", i, v, words-1)
		}
	}
	n, err := k.MaxActiveBlocksPerSM(256, bytes)
	if err != nil || n < 1 {
		t.Errorf("MaxActiveBlocksPerSM(256, %d) = %d, %v", bytes, n, err)
	}
	nmax, err := k.MaxActiveBlocksPerSM(256, p.SharedPerBlockOptin-k.Attrs().StaticShared)
	t.Logf("blocks/SM at 96 KB: %d; at the opt-in maximum: %d (%v)", n, nmax, err)
}

func TestOpenBogus(t *testing.T) {
	_, err := Open("bogus")
	if err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Fatalf("Open(bogus) = %v", err)
	}
}

// TestOpenCLTimingModes times the same launches with marker and with launch
// events (the fallback for platforms whose markers carry no timestamps).
func TestOpenCLTimingModes(t *testing.T) {
	for _, mode := range []string{"marker", "launch"} {
		t.Run(mode, func(t *testing.T) {
			if mode == "marker" {
				probe := openOrSkip(t, "opencl")
				if probe.(*clDevice).launchTiming {
					t.Skip("markers carry no timestamps on this platform; the probe chose launch timing")
				}
			}
			t.Setenv("TEMPEST_OPENCL_TIMING", mode)
			d := openOrSkip(t, "opencl")
			if got := d.(*clDevice).launchTiming; got != (mode == "launch") {
				t.Fatalf("launchTiming = %v", got)
			}
			mod, err := d.Compile("timing", testSources["opencl"], CompileOptions{Defines: map[string]string{"SCALE": "2.5"}})
			if err != nil {
				t.Fatal(err)
			}
			defer mod.Close()
			k, err := mod.Kernel("saxpy")
			if err != nil {
				t.Fatal(err)
			}
			const n = 1 << 20
			x, err := d.Alloc(4 * n)
			if err != nil {
				t.Fatal(err)
			}
			defer x.Free()
			y, err := d.Alloc(4 * n)
			if err != nil {
				t.Fatal(err)
			}
			defer y.Free()
			launch := func() {
				if err := k.Launch([3]int{n / 128, 1, 1}, [3]int{128, 1, 1}, 0, int32(n), float32(1), x, y); err != nil {
					t.Fatal(err)
				}
			}
			launch() // warm-up
			e0, _ := d.NewEvent()
			e1, _ := d.NewEvent()
			e2, _ := d.NewEvent()
			defer e0.Free()
			defer e1.Free()
			defer e2.Free()
			if _, err := e1.ElapsedMs(e0); err == nil {
				t.Error("ElapsedMs of unrecorded events succeeded")
			}
			d.Synchronize()
			host := time.Now()
			e0.Record()
			launch()
			launch()
			e1.Record()
			e2.Record()
			e2.Synchronize()
			hostMs := float64(time.Since(host)) / 1e6
			ms, err := e1.ElapsedMs(e0)
			if err != nil || !(ms > 0) {
				t.Errorf("elapsed = %v, %v; want > 0", ms, err)
			}
			if ms2, err := e2.ElapsedMs(e1); err != nil || ms2 < 0 || ms2 > ms {
				t.Errorf("elapsed between adjacent events = %v, %v", ms2, err)
			}
			if ms > hostMs {
				t.Errorf("device time %.3f ms exceeds host time %.3f ms", ms, hostMs)
			}
			t.Logf("%s timing: two saxpy launches over %d elements: %.3f ms (host %.3f ms)", mode, n, ms, hostMs)
		})
	}
}

// TestRegsHint: a launch refused for its block size names the register cap that would let the
// block fit only when the kernel's registers are why it does not.
func TestRegsHint(t *testing.T) {
	for _, c := range []struct {
		regs, perBlock, n int
		want              string
	}{
		{151, 65536, 512, " (its 151 registers a thread leave too few for 512 threads: add maxregs=128 to the plan or take a smaller block)"},
		{96, 65536, 1024, " (its 96 registers a thread leave too few for 1024 threads: add maxregs=64 to the plan or take a smaller block)"},
		{128, 65536, 512, ""}, // fits: the refusal has another cause
		{0, 65536, 1024, ""},  // registers unknown (OpenCL)
		{200, 0, 512, ""},     // register file unknown
	} {
		if got := regsHint(KernelAttrs{Regs: c.regs}, c.perBlock, c.n); got != c.want {
			t.Errorf("regsHint(%d regs, %d a block, %d threads) = %q, want %q", c.regs, c.perBlock, c.n, got, c.want)
		}
	}
}
