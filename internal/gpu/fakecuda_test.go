package gpu

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/ebitengine/purego"
)

// TestFakeCUDA runs the CUDA backend's whole test suite against a fake
// driver + NVRTC (testdata/fakecuda.c) built with the system C compiler. It
// checks what can be checked without a GPU: symbol names and fallbacks
// (CUDA 12 and CUDA 13 spellings), argument marshalling through purego
// (cuLaunchKernel's 11 arguments, kernelParams), that every driver call runs
// on the thread where the context is current, the >48 KB shared-memory
// opt-in, and the NVRTC log formatting. Skips when no C compiler exists.
func TestFakeCUDA(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("linux only")
	}
	cc, err := exec.LookPath("cc")
	if err != nil {
		if cc, err = exec.LookPath("gcc"); err != nil {
			t.Skip("no C compiler to build the fake CUDA driver")
		}
	}
	for _, variant := range []struct{ name, flag string }{{"cuda12", ""}, {"cuda13", "-DCUDA13"}} {
		t.Run(variant.name, func(t *testing.T) {
			lib := filepath.Join(t.TempDir(), "libfakecuda_"+variant.name+".so")
			args := []string{"-shared", "-fPIC", "-O1", "-o", lib, "testdata/fakecuda.c"}
			if variant.flag != "" {
				args = append(args, variant.flag)
			}
			if out, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
				t.Skipf("cannot build the fake driver: %v\n%s", err, out)
			}
			t.Setenv(envLibCUDA, lib)
			t.Setenv(envNVRTC, lib)
			t.Setenv("TEMPEST_REQUIRE_CUDA", "1")

			// Registered first, so it runs after testBackend's Close.
			t.Cleanup(func() {
				h, err := purego.Dlopen(lib, purego.RTLD_NOW)
				if err != nil {
					t.Fatal(err)
				}
				var launches, chained, retained, streams, waits func() int32
				purego.RegisterLibFunc(&launches, h, "fakeLaunches")
				purego.RegisterLibFunc(&chained, h, "fakeChained")
				purego.RegisterLibFunc(&retained, h, "fakeRetained")
				purego.RegisterLibFunc(&streams, h, "fakeStreams")
				purego.RegisterLibFunc(&waits, h, "fakeStreamWaits")
				if n := launches(); n < 4 {
					t.Errorf("fake driver saw %d launches", n)
				}
				if n := chained(); n < 1 {
					t.Errorf("fake driver saw %d chained launches", n)
				}
				if n := streams(); n != 0 {
					t.Errorf("%d streams left after the communicators closed", n)
				}
				if n := waits(); n < 2 {
					t.Errorf("fake driver saw %d stream waits; a started exchange makes two", n)
				}
				if r := retained(); r != 0 {
					t.Errorf("primary context retained %d times after Close", r)
				}
			})
			testBackend(t, "cuda")
			t.Run("nccl", func(t *testing.T) { testFakeNCCL(t, cc) })
		})
	}
}

// testFakeNCCL runs the one-rank NCCL test against a fake NCCL (testdata/fakenccl.c) on the
// fake driver: the 128-byte unique id passed by value, the group's sends and receives, and
// started exchanges on the communicator's own stream.
func testFakeNCCL(t *testing.T, cc string) {
	lib := filepath.Join(t.TempDir(), "libfakenccl.so")
	if out, err := exec.Command(cc, "-shared", "-fPIC", "-O1", "-o", lib, "testdata/fakenccl.c").CombinedOutput(); err != nil {
		t.Skipf("cannot build the fake NCCL: %v\n%s", err, out)
	}
	// TEMPEST_LIBNCCL would win over the list: on a machine with a real NCCL, this test must
	// still load the fake one, which the fake driver's handles suit.
	t.Setenv(envLibNCCL, lib)
	n, err := loadNCCL([]string{lib})
	if err != nil {
		t.Fatal(err)
	}
	if n.Version != "NCCL 2.20.5" {
		t.Errorf("version %q", n.Version)
	}
	testNCCLOneRank(t, n)
	h, err := purego.Dlopen(lib, purego.RTLD_NOW)
	if err != nil {
		t.Fatal(err)
	}
	var side func() int32
	purego.RegisterLibFunc(&side, h, "fakeNCCLSideStream")
	if side() == 0 {
		t.Error("the started exchange's transfers ran on stream 0, not the communicator's stream")
	}
}
