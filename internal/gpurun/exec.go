package gpurun

import (
	"fmt"

	"tempest/internal/gpu"
	"tempest/internal/lower"
	"tempest/internal/plan"
	"tempest/internal/state"
)

// Limits are the plan limits of a device.
func Limits(dev gpu.Device) plan.Limits {
	p := dev.Props()
	return plan.Limits{MaxThreadsPerBlock: p.MaxThreadsPerBlock, MaxSharedPerBlock: p.SharedPerBlockOptin,
		NoAsync: p.Backend != "cuda", NoChain: p.Backend != "cuda" || p.ComputeMajor < 9, SM: p.ComputeMajor*10 + p.ComputeMinor}
}

// Prepare lowers a plan for the state's program and size, validates it against the device and
// compiles it.
func Prepare(dev gpu.Device, s *state.State, pl plan.Plan) (*Runner, error) {
	return PrepareWith(dev, s, pl, nil)
}

// PrepareWith is Prepare reusing compiled modules from cache (nil: none).
func PrepareWith(dev gpu.Device, s *state.State, pl plan.Plan, cache *Modules) (*Runner, error) {
	low, err := lower.Lower(s.Prog, s.Shape, s.Layers, pl)
	if err != nil {
		return nil, err
	}
	if err := pl.Validate(s.Prog, Limits(dev), low.SharedBytes); err != nil {
		return nil, err
	}
	r, err := NewWith(dev, s, low, gpu.CompileOptions{FastMath: pl.FastMath, MaxRegs: pl.MaxRegs}, fmt.Sprintf("%s (%s)", s.Prog.Name, pl), cache)
	if err != nil {
		return nil, fmt.Errorf("plan %s: %w", pl, err)
	}
	return r, nil
}
