package driver

import (
	"fmt"
	"io"
	"strings"

	"tempest/internal/cpu"
	"tempest/internal/gpu"
	"tempest/internal/gpurun"
	"tempest/internal/gridio"
	"tempest/internal/ir"
	"tempest/internal/load"
	"tempest/internal/state"
)

// An Engine is a prepared program running on the engine `tempest run` would pick for the same
// options (openBackend, then the plan ChoosePlanName or o.Plan gives), held open between calls:
// programs that embed Tempest (package sim, and `tempest serve` for Python) step it in
// pieces, read and write grids and parameters between the pieces, and pay the device's set-up
// and the kernels' compilation once. It is not safe for concurrent use.
type Engine struct {
	Prog *ir.Program
	// State is the host copy of the run's data: its Steps and Params are the engine's own, its
	// grids hold the engine's values after Sync.
	State    *state.State
	Backend  string // cuda, opencl, cpu or ref
	Device   string
	Plan     string
	FastMath bool

	st     stepper
	dev    gpu.Device
	runner *gpurun.Runner
	cpu    *cpu.Engine
	// stale says the engine advanced since the host arrays were last synced.
	stale bool
}

// loadRunProgram loads the program of a run: o.Source when set (o.File then names it in
// messages), else the file o.File.
func loadRunProgram(o RunOptions, typ string) (*ir.Program, error) {
	if o.Source == "" {
		return loadProgram(o.File, typ)
	}
	opt, err := typeOption(typ, "type")
	if err != nil {
		return nil, err
	}
	return load.Source(o.File, o.Source, opt)
}

// OpenEngine starts the engine of o.Backend (auto, cuda, opencl, cpu or ref) with o.Plan, or
// the plan o.Tune and o.FastMath choose, over pr's state; notes (the backend auto picked, a
// plan that could not be looked up) go to log. Options of whole runs (outputs, events,
// split runs) do not apply.
func OpenEngine(o RunOptions, pr *Prepared, log io.Writer) (*Engine, error) {
	if log == nil {
		log = io.Discard
	}
	if o.Multi.Active() {
		return nil, fmt.Errorf("split runs (--gpus, --subdomains, --ranks) are only available from tempest run")
	}
	dev, err := openBackend(o.Backend, o.Plan, log)
	if err != nil {
		return nil, err
	}
	e := &Engine{Prog: pr.Prog, State: pr.State, dev: dev}
	switch {
	case dev != nil:
		res := &Result{}
		r, err := startGPU(dev, o, pr, res, io.Discard, log, 0, "")
		if err != nil {
			dev.Close()
			return nil, err
		}
		e.runner, e.st = r, gpuStepper{r}
		e.Backend, e.Device, e.Plan, e.FastMath = res.Backend, res.Device, res.Plan, res.FastMath
	case o.Backend == "ref":
		e.st = newRefStepper(pr.State)
		e.Backend, e.Device, e.Plan = "ref", cpuName(), "reference interpreter"
	default:
		e.cpu = cpu.New(pr.State)
		e.st = cpuStepper{e.cpu}
		e.Backend, e.Device, e.Plan = "cpu", cpuName(), "cpu engine ("+e.cpu.Code()+")"
	}
	return e, nil
}

// Granule is the step count that keeps a GPU plan's launches at their deepest: advancing in
// multiples of it costs nothing over one long advance (1 on the CPU engines).
func (e *Engine) Granule() int { return e.st.Granule() }

// Advance runs n steps and returns the seconds they took (device time on a GPU). It ends so
// that Observe may follow.
func (e *Engine) Advance(n int) (float64, error) {
	if n < 0 {
		panic(fmt.Sprintf("internal error: advancing %d steps", n))
	}
	if n == 0 {
		return 0, nil
	}
	e.stale = true
	return e.st.(observer).AdvanceObserved(n)
}

// Enqueue runs n steps without waiting for them on a GPU, where the launches queue behind
// what runs: a program stepping in short chunks (a Python loop of step(10)) then keeps the GPU
// busy while it talks to Tempest, instead of idling it for each round trip. Every call that
// reads the device waits for them first (Sync, Read, Write, Observe, Checkpoint); a launch's
// failure shows there. The CPU engines and the reference run the steps at once.
func (e *Engine) Enqueue(n int) error {
	if n < 0 {
		panic(fmt.Sprintf("internal error: enqueueing %d steps", n))
	}
	if e.runner == nil {
		_, err := e.Advance(n)
		return err
	}
	if n == 0 {
		return nil
	}
	e.stale = true
	if err := e.runner.RunObserved(n); err != nil {
		return fmt.Errorf("launching steps at step %d: %w", e.State.Steps, err)
	}
	return nil
}

// Wait returns once the steps queued on a GPU (Enqueue) have run.
func (e *Engine) Wait() error {
	if e.runner == nil || !e.stale {
		return nil
	}
	if err := e.runner.Device().Synchronize(); err != nil {
		return fmt.Errorf("running the steps before step %d: %w", e.State.Steps, err)
	}
	return nil
}

// Sync brings the host state up to date with the engine's, if it is not already.
func (e *Engine) Sync() error {
	if !e.stale {
		return nil
	}
	if err := e.st.Sync(); err != nil {
		return fmt.Errorf("reading the state back at step %d: %w", e.State.Steps, err)
	}
	e.stale = false
	return nil
}

// Observe evaluates the program's observables (by ir.Observe.Index) on the engine's state.
func (e *Engine) Observe() ([]float64, error) {
	v, err := e.st.(observer).Observe()
	if err != nil {
		return nil, fmt.Errorf("evaluating the observables at step %d: %w", e.State.Steps, err)
	}
	return v, nil
}

// Read returns the box lo+shape (in the grid's array axes) of grid g's level (0: current, 1:
// previous). The CPU engine reads its own buffers; the others sync the host state first.
// The box must lie inside the grid (the caller checks).
func (e *Engine) Read(g *ir.Grid, level int, lo, shape []int) (*gridio.Array, error) {
	if e.cpu != nil {
		return e.cpu.Read(g, level, lo, shape), nil
	}
	if err := e.Sync(); err != nil {
		return nil, err
	}
	return CopyBox(e.level(g, level), lo, shape), nil
}

// Write stores a into the box of grid g's level starting at lo, in the engine and in the host
// state. The next steps start from the values written, as a run resumed from a state holding
// them would. The box must lie inside the grid and a must have its element type.
func (e *Engine) Write(g *ir.Grid, level int, lo []int, a *gridio.Array) error {
	switch {
	case e.cpu != nil:
		e.cpu.Write(g, level, lo, a)
		PasteBox(e.level(g, level), lo, a) // the host copy of the box stays right after a Sync
		return nil
	case e.runner != nil:
		if err := e.Sync(); err != nil { // the whole grid goes back up
			return err
		}
		PasteBox(e.level(g, level), lo, a)
		return e.runner.Upload(g)
	}
	PasteBox(e.level(g, level), lo, a) // the reference interpreter steps the host state
	return nil
}

func (e *Engine) level(g *ir.Grid, level int) *gridio.Array {
	if level == 1 {
		return e.State.Prev[g.Index]
	}
	return e.State.Cur[g.Index]
}

// SetParam sets a parameter from "name=value" (the value a constant expression, as --param
// takes it); the next step uses it. A parameter that sizes a layered grid cannot change.
func (e *Engine) SetParam(kv string) error {
	s := e.State
	params := append([]ir.Value(nil), s.Params...)
	if err := state.SetParam(e.Prog, params, kv); err != nil {
		return err
	}
	for _, g := range e.Prog.Grids {
		if g.Layers == nil {
			continue
		}
		if n := state.LayerCount(g.Layers, params); n != int64(s.Layers[g.Index]) {
			name, _, _ := strings.Cut(kv, "=")
			return fmt.Errorf("parameter %s: grid %s has %d layers and would have %d; its layer count is fixed once the run starts (set it when creating the run)",
				strings.TrimSpace(name), g.Name, s.Layers[g.Index], n)
		}
	}
	copy(s.Params, params) // the engines read the state's parameters at every step
	return nil
}

// Checkpoint writes the run's state as a checkpoint (the format of --checkpoint, which
// --resume and Prepare's o.Resume read).
func (e *Engine) Checkpoint(path string) error {
	if err := e.Sync(); err != nil {
		return err
	}
	return WriteCheckpoint(path, e.State)
}

// Close frees the engine's device resources.
func (e *Engine) Close() {
	if e.runner != nil {
		e.runner.Close()
		e.runner = nil
	}
	if e.dev != nil {
		e.dev.Close()
		e.dev = nil
	}
}

// CopyBox returns the box lo+shape of a (which must hold it) as a new array.
func CopyBox(a *gridio.Array, lo, shape []int) *gridio.Array {
	out := gridio.NewArray(a.DType, shape)
	forBox(a.Shape, lo, shape, func(full, box, n int) {
		gridio.CopyElems(out.Data, box, a.Data, full, n)
	})
	return out
}

// PasteBox writes b into a at lo (b's box must lie inside a; same element type).
func PasteBox(a *gridio.Array, lo []int, b *gridio.Array) {
	forBox(a.Shape, lo, b.Shape, func(full, box, n int) {
		gridio.CopyElems(a.Data, full, b.Data, box, n)
	})
}

// forBox calls f for every row (along the last axis) of the box lo+shape of an array of shape
// full, with the row's flat index in the array, in the box, and its length.
func forBox(full, lo, shape []int, f func(full, box, n int)) {
	total := 1
	for _, n := range shape {
		total *= n
	}
	if total == 0 {
		return
	}
	d := len(shape)
	c := make([]int, d)
	for box := 0; box < total; box += shape[d-1] {
		idx := 0
		for a := 0; a < d; a++ {
			idx = idx*full[a] + lo[a] + c[a]
		}
		f(idx, box, shape[d-1])
		for a := d - 2; a >= 0; a-- {
			c[a]++
			if c[a] < shape[a] {
				break
			}
			c[a] = 0
		}
	}
}
