package decomp

import (
	"tempest/internal/cpu"
	"tempest/internal/gpu"
	"tempest/internal/gpurun"
	"tempest/internal/gridio"
	"tempest/internal/ir"
	"tempest/internal/plan"
	"tempest/internal/state"
)

// Part is one sub-domain's engine over its padded state.
type Part interface {
	// State is the padded local state; it holds the part's values after Sync.
	State() *state.State
	// Run advances the part by n steps (a device part may return before they finish).
	Run(n int) error
	// Buffer is the device buffer holding grid's level between runs; nil for a host part,
	// whose State holds its values between runs.
	Buffer(grid, level int) gpu.Buffer
	// Depth is the deepest step count one launch advances: exchange periods are multiples.
	Depth() int
	// Wait returns when the part's runs so far have finished.
	Wait() error
	// Sync brings the part's values into State.
	Sync() error
	Close()
}

// Scatter builds part i's padded state from the global state: every grid's rows of the part
// and its halos (wrapped on periodic domains), both levels, and the step count.
func (l *Layout) Scatter(g *state.State, i int) (*state.State, error) {
	params := g.Params
	if l.Origin >= 0 {
		params = append(append([]ir.Value(nil), params...), ir.Value{T: ir.I32, I: int64(l.Own[i][0] - l.Below[i])})
	}
	if l.Cols != nil && l.Cols.Origin >= 0 {
		_, b := l.slots(i)
		params = append(append([]ir.Value(nil), params...), ir.Value{T: ir.I32, I: int64(l.Cols.Own[b][0] - l.Cols.Below[b])})
	}
	s, err := state.New(l.Prog, l.PartShape(i), params, 1)
	if err != nil {
		return nil, err
	}
	s.Steps, s.Seed = g.Steps, g.Seed
	for _, gr := range g.Prog.Grids {
		for lv, arrs := range [][]*gridio.Array{s.Cur, s.Prev} {
			src := [][]*gridio.Array{g.Cur, g.Prev}[lv][gr.Index]
			dst := arrs[gr.Index]
			if src == nil || dst == nil {
				continue
			}
			if src.DType != dst.DType {
				// An --init file may have replaced the array with another element type.
				c, err := src.Convert(dst.DType)
				if err != nil {
					return nil, err
				}
				src = c
			}
			layers := max(g.Layers[gr.Index], 1)
			for r := 0; r < l.Rows(i); r++ {
				for y := 0; y < layers; y++ {
					l.scatterRow(dst, y, r, src, l.Global(i, r), i)
				}
			}
		}
	}
	return s, nil
}

// Gather copies part i's owned cells of its state grids (both levels) into the global state.
func (l *Layout) Gather(g, s *state.State, i int) {
	for _, lv := range Exchanged(g.Prog) {
		copyRect(levelArray(g, lv).Bytes(), l.owned(g, lv.Grid, i, true), levelArray(s, lv).Bytes(), l.owned(s, lv.Grid, i, false))
	}
}

// rowElems is the number of cells in one row of the split axis.
func rowElems(shape []int) int {
	n := 1
	for _, d := range shape[Axis+1:] {
		n *= d
	}
	return n
}

// pitched is a part whose buffers' rows (the last axis) may be padded: Pitch is the elements
// from one row to the next, 0 when rows are dense.
type pitched interface{ Pitch() int }

// bufShape is the shape of part p's arrays as its buffers hold them: the last axis widened to
// the row pitch when the part's plan pads rows (plan.Align). Halo copies address the buffers
// through it; the part's State stays dense.
func bufShape(p Part) []int {
	s := p.State().Shape
	pp, ok := p.(pitched)
	if !ok || pp.Pitch() == 0 {
		return s
	}
	out := append([]int(nil), s...)
	out[len(out)-1] = pp.Pitch()
	return out
}

// bufRowBytes is the size of one row of the split axis of grid gi in part p's buffers.
func bufRowBytes(p Part, gi int) int64 {
	return int64(rowElems(bufShape(p)) * p.State().Prog.Grids[gi].Type.Size())
}

func copyRows(dst *gridio.Array, dr int, src *gridio.Array, sr, rows, elems int) {
	gridio.CopyElems(dst.Data, dr*elems, src.Data, sr*elems, rows*elems)
}

// hostPart runs a sub-domain on the CPU engine. Its state holds the values between runs, so
// exchanges copy rows of host arrays; each run builds the engine afresh over the state.
type hostPart struct{ s *state.State }

// NewHostPart is a sub-domain on the CPU engine.
func NewHostPart(s *state.State) Part { return &hostPart{s: s} }

func (h *hostPart) State() *state.State               { return h.s }
func (h *hostPart) Buffer(grid, level int) gpu.Buffer { return nil }
func (h *hostPart) Depth() int                        { return 1 }
func (h *hostPart) Sync() error                       { return nil }
func (h *hostPart) Close()                            {}
func (h *hostPart) Run(n int) error {
	e := cpu.New(h.s)
	e.Run(n, nil)
	e.Sync()
	return nil
}

// devicePart runs a sub-domain with a single-device plan.
type devicePart struct {
	s *state.State
	r *gpurun.Runner
}

// NewDevicePart compiles the plan for part state s on dev (modules from cache when not nil)
// and uploads s.
func NewDevicePart(dev gpu.Device, s *state.State, pl plan.Plan, cache *gpurun.Modules) (Part, error) {
	r, err := gpurun.PrepareWith(dev, s, pl, cache)
	if err != nil {
		return nil, err
	}
	return &devicePart{s: s, r: r}, nil
}

// Runner is the part's single-device runner (for kernel reports and timing).
func (d *devicePart) Runner() *gpurun.Runner            { return d.r }
func (d *devicePart) State() *state.State               { return d.s }
func (d *devicePart) Run(n int) error                   { return d.r.Run(n) }
func (d *devicePart) Buffer(grid, level int) gpu.Buffer { return d.r.Level(grid, level) }
func (d *devicePart) Depth() int                        { return d.r.Depth() }
func (d *devicePart) Pitch() int                        { return d.r.Pitch() }
func (d *devicePart) Sync() error                       { return d.r.Download() }
func (d *devicePart) Close()                            { d.r.Close() }

func (h *hostPart) Wait() error   { return nil }
func (d *devicePart) Wait() error { return d.r.Device().Synchronize() }
