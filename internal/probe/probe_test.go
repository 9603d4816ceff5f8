package probe

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"tempest/internal/gpu"
)

// openDevice opens OpenCL for the tests. A missing platform skips, unless
// TEMPEST_REQUIRE_OPENCL=1 says it must be there (CI sets it).
func openDevice(t *testing.T) gpu.Device {
	t.Helper()
	dev, err := gpu.Open("opencl")
	if err != nil {
		if os.Getenv("TEMPEST_REQUIRE_OPENCL") == "1" || !errors.Is(err, gpu.ErrUnavailable) {
			t.Fatalf("opening opencl: %v", err)
		}
		t.Skipf("opencl not available: %v", err)
	}
	t.Cleanup(func() { dev.Close() })
	return dev
}

func TestProbeQuickWritesProfile(t *testing.T) {
	dev := openDevice(t)
	t.Setenv("TEMPEST_CACHE_DIR", t.TempDir())
	start := time.Now()
	var log strings.Builder
	pr, err := Run(dev, Options{Quick: true, Reps: 3, Log: &log})
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	t.Logf("probe took %v\n%s", time.Since(start), pr.Table())
	for name, v := range map[string]float64{
		"copy": pr.DRAMCopyGBs, "triad": pr.DRAMTriadGBs, "l2": pr.L2GBs, "shared f32": pr.SharedF32GBs,
		"fma f32": pr.FMAF32GFLOPs, "launch": pr.LaunchUs, "launch+sync": pr.LaunchSyncUs,
	} {
		if !(v > 0) {
			t.Errorf("%s: got %v, want a positive measurement", name, v)
		}
	}
	if !pr.Quick || pr.Estimated {
		t.Errorf("quick=%v estimated=%v", pr.Quick, pr.Estimated)
	}
	path, err := Save(pr, "")
	if err != nil {
		t.Fatal(err)
	}
	dir, _ := Dir()
	if !strings.HasPrefix(path, dir) || !strings.HasSuffix(path, pr.Key+".json") {
		t.Errorf("saved to %s, want %s/%s.json", path, dir, pr.Key)
	}
	back, err := Load(dev.Props(), "")
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(pr)
	b, _ := json.Marshal(back)
	if string(a) != string(b) {
		t.Errorf("round trip differs:\n%s\n%s", a, b)
	}
}

func TestKeyAndEstimate(t *testing.T) {
	h100 := gpu.Props{Backend: "cuda", Name: "NVIDIA H100 80GB HBM3", Platform: "NVIDIA CUDA", ComputeMajor: 9, ComputeMinor: 0,
		SMs: 132, ClockKHz: 1980000, MemClockKHz: 2619000, MemBusWidthBits: 5120, Driver: "CUDA driver 13.0", MaxThreadsPerSM: 2048}
	k := Key(h100)
	if !strings.HasPrefix(k, "cuda-nvidia-h100-80gb-hbm3-sm90-") {
		t.Errorf("key %q", k)
	}
	other := h100
	other.Driver = "CUDA driver 12.8"
	if Key(other) == k {
		t.Error("the driver must be part of the key")
	}
	e := Estimate(h100)
	// The nominal 132 SMs x 128 lanes x 2 x 1.98 GHz = 66.9 TFLOP/s and 2 x 2.619 GHz x 640 B =
	// 3.35 TB/s, at the shares the H100's probe measured: the estimate of an H100 is its
	// measured profile within 1%.
	probed := H100()
	for _, c := range []struct {
		what      string
		got, want float64
	}{{"FP32", e.FMAF32GFLOPs, probed.FMAF32GFLOPs}, {"DRAM", e.DRAMCopyGBs, probed.DRAMCopyGBs}, {"L2", e.L2GBs, probed.L2GBs}} {
		if math.Abs(c.got/c.want-1) > 0.01 {
			t.Errorf("%s estimate %v, the H100's probe %v", c.what, c.got, c.want)
		}
	}
	if e.FMAF64GFLOPs*2 != e.FMAF32GFLOPs {
		t.Errorf("FP64 estimate %v", e.FMAF64GFLOPs)
	}
	var empty Profile
	empty.Device = h100
	if empty.DRAMBytesPerSec() != e.DRAMCopyGBs*1e9 || empty.LaunchSeconds() <= 0 {
		t.Error("accessors must fall back to the estimate")
	}
}

// TestNominalPeak holds the peaks efficiencies are reported against to the data sheet
// figures, and unknown (0) where the lanes per multiprocessor are not known.
func TestNominalPeak(t *testing.T) {
	h100 := H100().Device
	a100 := gpu.Props{Backend: "cuda", ComputeMajor: 8, SMs: 108, ClockKHz: 1410000}
	for _, c := range []struct {
		name string
		p    gpu.Props
		word int
		want float64
	}{
		{"H100 FP32", h100, 4, 132 * 128 * 2 * 1.98}, // 66.9 TFLOP/s
		{"H100 FP64", h100, 8, 132 * 64 * 2 * 1.98},  // 33.5 TFLOP/s
		{"A100 FP32", a100, 4, 108 * 64 * 2 * 1.41},  // 19.5 TFLOP/s
		{"A100 FP64", a100, 8, 108 * 32 * 2 * 1.41},  // 9.7 TFLOP/s
		{"OpenCL", gpu.Props{Backend: "opencl", SMs: 4, ClockKHz: 3000000}, 4, 0},
		{"no clock", gpu.Props{Backend: "cuda", ComputeMajor: 9, SMs: 132}, 4, 0},
		{"no SMs", gpu.Props{Backend: "cuda", ComputeMajor: 9, ClockKHz: 1980000}, 8, 0},
	} {
		if got := NominalPeakGFLOPs(c.p, c.word); math.Abs(got-c.want) > 1e-6*c.want {
			t.Errorf("%s: %v GFLOP/s, want %v", c.name, got, c.want)
		}
	}
}

func TestMedian(t *testing.T) {
	if m := Median([]float64{3, 1, 2}); m != 2 {
		t.Error(m)
	}
	if m := Median([]float64{4, 1, 2, 3}); m != 2.5 {
		t.Error(m)
	}
}
