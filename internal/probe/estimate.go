package probe

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	"tempest/internal/gpu"
)

func shortHash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])[:10]
}

// fp32Lanes is FP32 lanes per multiprocessor by compute capability (NVIDIA's tables).
func fp32Lanes(major, minor int) int {
	switch {
	case major >= 9, major == 8 && minor >= 6:
		return 128
	case major == 8, major == 7, major == 6 && minor == 0:
		return 64
	case major > 0:
		return 128
	}
	return 0
}

// fp64Ratio is FP64 throughput relative to FP32.
func fp64Ratio(major, minor int) float64 {
	switch {
	case major == 9 && minor == 0, major == 8 && minor == 0, major == 7 && minor == 0, major == 6 && minor == 0:
		return 0.5
	case major >= 10:
		return 0.5
	}
	return 1.0 / 32
}

// NominalPeakGFLOPs is a CUDA device's floating-point peak for words of the given size (4:
// FP32, 8: FP64) from its data sheet figures: multiprocessors x FMA lanes per multiprocessor
// (by compute capability; sm_90: 128 FP32, 64 FP64) x 2 FLOPs per FMA x the boost clock. It is
// the figure efficiencies ("% of peak") are reported against; the FMA rate `tempest probe`
// measures stays below it. It is 0 (unknown) where
// the lanes are not known: OpenCL devices, and devices that report no multiprocessors or clock.
func NominalPeakGFLOPs(p gpu.Props, word int) float64 {
	if p.Backend != "cuda" || p.SMs <= 0 || p.ClockKHz <= 0 || p.ComputeMajor <= 0 {
		return 0
	}
	g := float64(p.SMs) * float64(fp32Lanes(p.ComputeMajor, p.ComputeMinor)) * 2 * float64(p.ClockKHz) / 1e6
	if word >= 8 {
		g *= fp64Ratio(p.ComputeMajor, p.ComputeMinor)
	}
	return g
}

// Estimate is a profile of nominal values derived from the device's properties, for when
// nothing has been measured: on CUDA devices the theoretical DRAM bandwidth and FP32 lanes x 2
// x clock at the shares the H100's probe measured of them (cudaCopy, cudaFMA), L2 at that
// probe's multiple of the copy rate, 128 bytes of shared memory per multiprocessor and clock.
// CPU OpenCL devices get modest per-core guesses. It is good enough to rank plans, not to
// report efficiencies.
func Estimate(p gpu.Props) *Profile {
	pr := &Profile{Key: Key(p), Device: p, Created: time.Now().UTC().Truncate(time.Second), Estimated: true}
	sms := float64(max(p.SMs, 1))
	clock := float64(p.ClockKHz) * 1e3
	if clock <= 0 {
		clock = 1.5e9
	}
	switch {
	case p.Backend == "cuda":
		q := p // the nominal peak, with the assumed clock and at least one multiprocessor
		q.SMs, q.ClockKHz = int(sms), int(clock/1e3)
		pr.FMAF32GFLOPs, pr.FMAF64GFLOPs = cudaFMA*NominalPeakGFLOPs(q, 4), cudaFMA*NominalPeakGFLOPs(q, 8)
		if p.MemClockKHz > 0 && p.MemBusWidthBits > 0 {
			pr.DRAMCopyGBs = cudaCopy * 2 * float64(p.MemClockKHz) * 1e3 * float64(p.MemBusWidthBits) / 8 / 1e9
		} else {
			pr.DRAMCopyGBs = 500
		}
		pr.SharedF32GBs = sms * 128 * clock / 1e9
		pr.LaunchUs, pr.LaunchSyncUs = 2.5, 8
	case LooksLikeCPU(p):
		pr.FMAF32GFLOPs = sms * 32 * clock / 1e9
		pr.FMAF64GFLOPs = pr.FMAF32GFLOPs / 2
		pr.DRAMCopyGBs = 8 * sms
		pr.SharedF32GBs = 60 * sms
		pr.LaunchUs, pr.LaunchSyncUs = 20, 40
	default: // another OpenCL GPU
		pr.FMAF32GFLOPs = sms * 128 * clock / 1e9
		pr.FMAF64GFLOPs = pr.FMAF32GFLOPs / 16
		pr.DRAMCopyGBs = 400
		pr.SharedF32GBs = sms * 128 * clock / 1e9
		pr.LaunchUs, pr.LaunchSyncUs = 5, 15
	}
	pr.DRAMTriadGBs = pr.DRAMCopyGBs
	pr.SharedF64GBs = pr.SharedF32GBs
	pr.L2GBs = 2.5 * pr.DRAMCopyGBs
	if p.Backend == "cuda" {
		pr.L2GBs = cudaL2 * pr.DRAMCopyGBs
	}
	return pr
}

// What `tempest probe` measured on the H100 (H100) against its nominal figures: the copy
// kernel at 67% of the theoretical DRAM bandwidth, L2 at 5.9 times the copy rate, the FMA
// loop at 84% of the nominal peak. The models are calibrated with measured profiles; an
// estimate at other ratios ranks plans as no measured profile would (at 85% of the
// bandwidth and L2 at 2.5 times it, an H200's estimate ranked star3d1r's two-level n5d plan
// first, which ran at 465 GCells/s against 553 for the four-level plan a probed profile
// ranks first; docs/performance.md).
const (
	cudaCopy = 0.674
	cudaL2   = 5.88
	cudaFMA  = 0.835
)

// The accessors below are what models read: the measured value, or the estimate where the
// measurement is missing. Rates are in bytes or FLOPs per second, times in seconds.

func (pr *Profile) orEstimate(v float64, f func(e *Profile) float64) float64 {
	if v > 0 {
		return v
	}
	return f(Estimate(pr.Device))
}

// DRAMBytesPerSec is the copy bandwidth.
func (pr *Profile) DRAMBytesPerSec() float64 {
	return 1e9 * pr.orEstimate(pr.DRAMCopyGBs, func(e *Profile) float64 { return e.DRAMCopyGBs })
}

// L2BytesPerSec is the L2 read bandwidth (never below DRAM's).
func (pr *Profile) L2BytesPerSec() float64 {
	return max(pr.DRAMBytesPerSec(), 1e9*pr.orEstimate(pr.L2GBs, func(e *Profile) float64 { return e.L2GBs }))
}

// SharedBytesPerSec is the shared-memory bandwidth for words of the given size (4 or 8).
func (pr *Profile) SharedBytesPerSec(word int) float64 {
	if word >= 8 {
		if pr.SharedF64GBs > 0 {
			return 1e9 * pr.SharedF64GBs
		}
	}
	return 1e9 * pr.orEstimate(pr.SharedF32GBs, func(e *Profile) float64 { return e.SharedF32GBs })
}

// FLOPsPerSec is the peak (all-FMA) rate for words of the given size.
func (pr *Profile) FLOPsPerSec(word int) float64 {
	if word >= 8 {
		return 1e9 * pr.orEstimate(pr.FMAF64GFLOPs, func(e *Profile) float64 { return e.FMAF64GFLOPs })
	}
	return 1e9 * pr.orEstimate(pr.FMAF32GFLOPs, func(e *Profile) float64 { return e.FMAF32GFLOPs })
}

// LaunchSeconds is the interval between back-to-back launches.
func (pr *Profile) LaunchSeconds() float64 {
	return 1e-6 * pr.orEstimate(pr.LaunchUs, func(e *Profile) float64 { return e.LaunchUs })
}
