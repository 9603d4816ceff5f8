package gpu

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// With the library names pointed at nothing, Open fails with an error that
// names the library and the backend, and wraps ErrUnavailable.
func TestMissingLibrary(t *testing.T) {
	t.Setenv(envLibCUDA, "")
	t.Setenv(envNVRTC, "")
	t.Setenv(envLibOpenCL, "")
	cases := []struct {
		backend string
		names   *[]string
		lib     string
	}{
		{"cuda", &cudaLibNames, "/nonexistent/libcuda.so.1"},
		{"opencl", &openclLibNames, "/nonexistent/libOpenCL.so.1"},
	}
	for _, c := range cases {
		saved := *c.names
		*c.names = []string{c.lib, "/nonexistent/other.so"}
		_, err := Open(c.backend)
		*c.names = saved
		if err == nil {
			t.Fatalf("%s: Open succeeded with a missing library", c.backend)
		}
		msg := err.Error()
		t.Logf("%s: %s", c.backend, msg)
		if !strings.Contains(msg, c.lib) || !strings.Contains(msg, c.backend+" backend") || !strings.Contains(msg, "cannot load") {
			t.Errorf("%s: error %q does not name the library and the backend", c.backend, msg)
		}
		if !errors.Is(err, ErrUnavailable) {
			t.Errorf("%s: error does not wrap ErrUnavailable", c.backend)
		}
	}
	// NVRTC is loaded by the CUDA backend after libcuda; check its loader directly.
	saved := nvrtcLibNames
	nvrtcLibNames = []string{"/nonexistent/libnvrtc.so"}
	_, err := loadNVRTC()
	nvrtcLibNames = saved
	if err == nil || !strings.Contains(err.Error(), "cuda backend: cannot load /nonexistent/libnvrtc.so") {
		t.Errorf("NVRTC error: %v", err)
	}

	// "auto" with both missing is unavailable too.
	savedC, savedO := cudaLibNames, openclLibNames
	cudaLibNames, openclLibNames = []string{"/nonexistent/a.so"}, []string{"/nonexistent/b.so"}
	_, err = Open("auto")
	cudaLibNames, openclLibNames = savedC, savedO
	if err == nil || !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "/nonexistent/a.so") || !strings.Contains(err.Error(), "/nonexistent/b.so") {
		t.Errorf("Open(auto) = %v", err)
	}
}

func TestEnvOverrideFirst(t *testing.T) {
	t.Setenv(envLibOpenCL, "/custom/libOpenCL.so")
	c := expandCandidates([]string{"libOpenCL.so.1"}, envLibOpenCL)
	if len(c) != 2 || c[0] != "/custom/libOpenCL.so" {
		t.Errorf("candidates = %v", c)
	}
}

func TestCompileErrorFormat(t *testing.T) {
	src := strings.Join([]string{
		"// 1", "// 2", "// 3", "// 4", "int x = oops;", "// 6", "// 7", "// 8", "// 9",
		"// 10", "// 11", "// 12", "// 13", "// 14", "// 15", "float y = bad;", "// 17",
	}, "\n")
	for _, log := range []string{
		// NVRTC
		"k.cu(5): error: identifier \"oops\" is undefined\n\nk.cu(16): error: identifier \"bad\" is undefined\n\n2 errors detected in the compilation of \"k.cu\".\n",
		// clang-based OpenCL (PoCL, NVIDIA)
		"<source>:5:9: error: use of undeclared identifier 'oops'\nint x = oops;\n        ^\n<source>:16:11: error: use of undeclared identifier 'bad'\n",
		// PoCL
		"error: /root/.cache/pocl/kcache/tempfile_LcKfNG.cl:5:16: use of undeclared identifier 'oops'\nerror: /root/.cache/pocl/kcache/tempfile_LcKfNG.cl:16:3: use of undeclared identifier 'bad'\nDevice x failed to build the program\n",
		// GCC-style without a column
		"k.cl:5: error: oops\nk.cl:16: error: bad\n",
	} {
		e := newCompileError("cuda", "k", "sm_90", "NVRTC_ERROR_COMPILATION", log, src)
		if len(e.Lines) != 2 || e.Lines[0] != 5 || e.Lines[1] != 16 {
			t.Errorf("Lines = %v for log %q", e.Lines, log)
		}
		msg := e.Error()
		for _, want := range []string{
			"cuda: compiling k for sm_90 failed (NVRTC_ERROR_COMPILATION)",
			"   2 | // 2", ">  5 | int x = oops;", "   8 | // 8", "  ...", "  13 | // 13", "> 16 | float y = bad;", "  17 | // 17",
		} {
			if !strings.Contains(msg, want) {
				t.Errorf("message lacks %q:\n%s", want, msg)
			}
		}
		if strings.Contains(msg, "| // 1\n") || strings.Contains(msg, "| // 9") {
			t.Errorf("message shows lines beyond the context:\n%s", msg)
		}
	}
	// Overlapping windows merge without repeating lines.
	e := newCompileError("opencl", "k", "", "CL_BUILD_PROGRAM_FAILURE", "<source>:3:1: error: a\n<source>:5:1: error: b\n", src)
	if msg := e.Error(); strings.Count(msg, "| // 4") != 1 || strings.Contains(msg, "...") {
		t.Errorf("overlapping windows:\n%s", msg)
	}
}

func TestOptions(t *testing.T) {
	got := strings.Join(nvrtcOptions("sm_90", CompileOptions{FastMath: true, MaxRegs: 64, Defines: map[string]string{"B": "2", "A": "1", "F": ""}}), " ")
	want := "--gpu-architecture=sm_90 -default-device -std=c++17 -use_fast_math --maxrregcount=64 -DA=1 -DB=2 -DF"
	if got != want {
		t.Errorf("nvrtc options:\n got %s\nwant %s", got, want)
	}
	exact := strings.Join(nvrtcOptions("sm_90", CompileOptions{}), " ")
	if exact != "--gpu-architecture=sm_90 -default-device -std=c++17 --fmad=false" {
		t.Errorf("exact nvrtc options: %s", exact)
	}
	if twice := nvrtcOptions("sm_90", CompileOptions{Extra: []string{"--fmad=false"}}); slices.Index(twice, "--fmad=false") != len(twice)-1 {
		t.Errorf("--fmad=false given twice: %v", twice)
	}
	d := &clDevice{nvidia: true}
	s, err := d.clBuildOptions(CompileOptions{FastMath: true, MaxRegs: 32, Defines: map[string]string{"N": "4"}})
	if err != nil || s != "-cl-fast-relaxed-math -cl-nv-maxrregcount=32 -DN=4" {
		t.Errorf("opencl options %q, %v", s, err)
	}
	d.nvidia = false
	if s, _ := d.clBuildOptions(CompileOptions{MaxRegs: 32}); s != "" {
		t.Errorf("non-NVIDIA OpenCL got %q", s)
	}
	if _, err := d.clBuildOptions(CompileOptions{Defines: map[string]string{"X": "a b"}}); err == nil {
		t.Error("define with a space accepted")
	}
}

func TestPackCUDAArgs(t *testing.T) {
	buf := &cudaBuffer{ptr: 0xdeadbeef00, size: 16}
	slab, params, err := packCUDAArgs([]any{int32(-2), float32(1.5), int64(-3), math.E, buf, uint32(7), uint64(9)})
	if err != nil {
		t.Fatal(err)
	}
	if len(slab) != 7 || len(params) != 7 {
		t.Fatalf("len %d %d", len(slab), len(params))
	}
	for i := range params {
		if params[i] != unsafe.Pointer(&slab[i]) {
			t.Errorf("params[%d] does not point at its slot", i)
		}
	}
	if *(*int32)(params[0]) != -2 || *(*float32)(params[1]) != 1.5 || *(*int64)(params[2]) != -3 ||
		*(*float64)(params[3]) != math.E || *(*uint64)(params[4]) != 0xdeadbeef00 ||
		*(*uint32)(params[5]) != 7 || *(*uint64)(params[6]) != 9 {
		t.Errorf("slab = %x", slab)
	}
	if _, _, err := packCUDAArgs([]any{3}); err == nil || !strings.Contains(err.Error(), "int32 or int64") {
		t.Errorf("Go int: %v", err)
	}
	if _, _, err := packCUDAArgs([]any{&clBuffer{}}); err == nil || !strings.Contains(err.Error(), "not a CUDA buffer") {
		t.Errorf("OpenCL buffer: %v", err)
	}
	if _, _, err := packCUDAArgs([]any{&cudaBuffer{}}); err == nil {
		t.Error("freed buffer accepted")
	}
}

func TestClVersion(t *testing.T) {
	for s, want := range map[string]int{"OpenCL 3.0 PoCL 3.1": 300, "OpenCL 1.2 CUDA 12.4": 120, "garbage": 0} {
		if got := clVersion(s); got != want {
			t.Errorf("clVersion(%q) = %d, want %d", s, got, want)
		}
	}
}

func TestExecutor(t *testing.T) {
	e := newExecutor()
	n := 0
	for i := 0; i < 100; i++ {
		if err := e.do(func() error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.do(func() error { panic("boom") }); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("panic: %v", err)
	}
	if err := e.stop(nil); err != nil {
		t.Fatal(err)
	}
	if err := e.do(func() error { return nil }); !errors.Is(err, ErrClosed) {
		t.Errorf("after stop: %v", err)
	}
	if n != 100 {
		t.Errorf("n = %d", n)
	}
}

// TestExecutorNested: a call made from the executor's own thread runs at once (a batch of
// device calls), where a hand-over would wait for itself forever; other goroutines' calls
// still go through the thread.
func TestExecutorNested(t *testing.T) {
	e := newExecutor()
	defer e.stop(nil)
	done := make(chan error, 1)
	go func() {
		done <- e.do(func() error {
			outer := syscall.Gettid()
			return e.do(func() error {
				if tid := syscall.Gettid(); tid != outer {
					return fmt.Errorf("nested call ran on thread %d, the batch on %d", tid, outer)
				}
				return nil
			})
		})
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a nested call waited for its own batch")
	}
	var inside int
	if err := e.do(func() error { inside = syscall.Gettid(); return nil }); err != nil {
		t.Fatal(err)
	}
	if inside != e.tid || inside == syscall.Gettid() {
		t.Errorf("a call from another goroutine ran on thread %d, the executor's is %d", inside, e.tid)
	}
}

// BenchmarkExecutorDo is one device call's hand-over to the device's thread and back, what a
// call from any other goroutine costs beyond the call itself.
func BenchmarkExecutorDo(b *testing.B) {
	e := newExecutor()
	defer e.stop(nil)
	for b.Loop() {
		e.do(func() error { return nil })
	}
}

// BenchmarkExecutorBatched is the same call made inside a batch (gpu.Batch): no hand-over.
func BenchmarkExecutorBatched(b *testing.B) {
	e := newExecutor()
	defer e.stop(nil)
	e.do(func() error {
		for b.Loop() {
			e.do(func() error { return nil })
		}
		return nil
	})
}

// TestBackground: f runs on a thread of lower priority, and the caller's threads keep theirs.
func TestBackground(t *testing.T) {
	before, err := syscall.Getpriority(syscall.PRIO_PROCESS, 0)
	if err != nil {
		t.Skipf("getpriority: %v", err)
	}
	if 20-before >= backgroundNice {
		t.Skipf("the test runs at nice %d already", 20-before)
	}
	var inside int
	var insideErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		Background(func() { inside, insideErr = syscall.Getpriority(syscall.PRIO_PROCESS, syscall.Gettid()) })
	}()
	<-done
	if insideErr != nil {
		t.Fatal(insideErr)
	}
	// Linux's getpriority returns 20 - nice: a lower value is a lower priority.
	if inside >= before {
		t.Errorf("priority inside Background %d, want below the caller's %d", inside, before)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if now, _ := syscall.Getpriority(syscall.PRIO_PROCESS, syscall.Gettid()); now != before {
		t.Errorf("a thread of the caller has priority %d after Background, want %d", now, before)
	}
}
