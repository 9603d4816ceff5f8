package probe

import "tempest/internal/gpu"

// H100 is the profile `tempest probe` measured on an NVIDIA H100 80GB HBM3 on 2026-11-21
// (docs/performance.md): the device the models are calibrated for. Tests that replay H100
// measurements predict with it, so that their results do not depend on the machine they run on.
func H100() *Profile {
	return &Profile{
		Device: gpu.Props{Backend: "cuda", Name: "NVIDIA H100 80GB HBM3", ComputeMajor: 9, SMs: 132, WarpSize: 32, MaxThreadsPerBlock: 1024,
			SharedPerBlock: 49152, SharedPerBlockOptin: 232448, SharedPerSM: 233472, RegsPerBlock: 65536, RegsPerSM: 65536,
			MaxThreadsPerSM: 2048, ClockKHz: 1980000, MemClockKHz: 2619000, MemBusWidthBits: 5120, L2Bytes: 50 << 20, GlobalMem: 80 << 30},
		DRAMCopyGBs: 2258.6, DRAMTriadGBs: 2622.4, L2GBs: 13283.6, SharedF32GBs: 32396.5, SharedF64GBs: 32867.2,
		FMAF32GFLOPs: 55890.2, FMAF64GFLOPs: 31970.4, LaunchUs: 26.36, LaunchSyncUs: 44.9,
	}
}
