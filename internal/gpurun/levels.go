package gpurun

import "tempest/internal/gpu"

// Level is the device buffer that holds grid's level (0: the current values, 1: the previous
// step's, for two-level grids) between Runs; halo exchanges read and write slabs of it. The
// buffer changes after every Run (buffers rotate), so callers ask again each time.
func (r *Runner) Level(grid, level int) gpu.Buffer {
	g := r.s.Prog.Grids[grid]
	if level < 0 || level >= g.Levels {
		panic("internal error: grid " + g.Name + " has no such level")
	}
	return r.slots[grid][level]
}

// Device is the device the runner launches on.
func (r *Runner) Device() gpu.Device { return r.dev }

// Pitch is the elements from one row (the last axis) of the device buffers to the next when
// the plan pads rows (plan.Align), 0 when rows are dense.
func (r *Runner) Pitch() int { return r.low.Pitch }
