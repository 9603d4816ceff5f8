// Package sim runs Tempest stencil programs inside other Go programs: a solver that injects
// sources between steps, a driver that couples Tempest to other code, a test harness. It
// loads a program (.stencil, SL .sl or C loop nest .c), starts it on the engine `tempest run`
// would pick (CUDA, OpenCL, or the CPU engine) with the plan it would pick, and keeps the
// device and the compiled kernels for as long as the Sim lives, so that stepping in small
// pieces costs little more than one long run. Grids and parameters are read and written as
// typed slices between steps, observables are evaluated on the device, and checkpoints are
// the ones `tempest run --checkpoint` writes and `--resume` reads.
//
// A Sim computes exactly what `tempest run` computes from the same program, sizes,
// parameters and initial values: stepping 10 steps at a time gives bitwise the state of one
// run of all the steps. What a run does around its steps is the caller's here: a program's
// until test is not applied (Observe, then decide), and outputs, snapshots and split runs
// (--gpus, --subdomains, --ranks) remain tempest run's.
//
// Python programs reach the same operations through `tempest serve` (package
// tempest/internal/serve and the tempest module under python/), since Tempest builds without
// cgo and so cannot be a shared library that Python loads.
package sim

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"tempest/internal/driver"
	"tempest/internal/ir"
	"tempest/internal/load"
)

// A Program is a checked stencil program, ready to be run at any size.
type Program struct {
	name, text string
	p          *ir.Program
}

// Load reads and checks the program at path; the extension picks the language (.stencil, .sl
// or .c). Mistakes in the program are errors that Diagnostics takes apart.
func Load(path string) (*Program, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading program: %w", err)
	}
	return Parse(path, string(text))
}

// Parse checks program text; name stands for its file in messages and its extension picks
// the language (none: .stencil). Programs written inline, in a notebook or a test, need no
// file.
func Parse(name, text string) (*Program, error) {
	p, err := load.Source(name, text, load.Options{})
	if err != nil {
		return nil, err
	}
	return &Program{name: name, text: text, p: p}, nil
}

// Name is the program's name (its stencil line).
func (p *Program) Name() string { return p.p.Name }

// Axes are the program's axis names, slowest first: the order of sizes and array shapes.
func (p *Program) Axes() []string { return append([]string(nil), p.p.Axes...) }

// Type is the program's default element type: f32, f64, i32 or i64.
func (p *Program) Type() string { return p.p.DefaultType.String() }

// Grids describes the program's grids in declaration order.
func (p *Program) Grids() []GridInfo { return gridInfos(p.p) }

// Params describes the program's parameters with their default values.
func (p *Program) Params() []ParamInfo {
	var out []ParamInfo
	for _, pr := range p.p.Params {
		out = append(out, ParamInfo{Name: pr.Name, Type: pr.Type.String(), Value: value(pr.Default)})
	}
	return out
}

// Observables are the names of the program's observables, in the order Observe returns them.
func (p *Program) Observables() []string {
	var out []string
	for _, o := range p.p.Observes {
		out = append(out, o.Name)
	}
	return out
}

// GridInfo describes one grid of a program.
type GridInfo struct {
	Name string
	Type string // f32, f64, i32 or i64
	// State says the program updates the grid every step; other grids are inputs, which only
	// change when written.
	State bool
	// Levels is 2 where the program reads the grid's previous level (NAME.prev), else 1.
	Levels int
	// Layered says the grid has a leading layer axis before the program's axes.
	Layered bool
}

func gridInfos(p *ir.Program) []GridInfo {
	var out []GridInfo
	for _, g := range p.Grids {
		out = append(out, GridInfo{Name: g.Name, Type: g.Type.String(), State: g.Update != nil, Levels: g.Levels, Layered: g.Layers != nil})
	}
	return out
}

// ParamInfo is a parameter and its value: a float64 for float parameters (an f32 value
// exactly), an int64 for integer ones, a bool for bool ones.
type ParamInfo struct {
	Name  string
	Type  string
	Value any
}

func value(v ir.Value) any {
	switch {
	case v.T.IsFloat():
		return v.F
	case v.T.IsInt():
		return v.I
	}
	return v.B
}

// Options say how to start a Sim. The zero value runs the program at its default size on
// the best engine with its initial values.
type Options struct {
	// Size is the number of cells per axis, slowest first (nil: the size of the first .npy
	// file Inits names, else 65536 / 512x512 / 128x128x128 for 1, 2 and 3 axes).
	Size []int
	// Type replaces the program's default element type: f32, f64, i32 or i64.
	Type string
	// Params set parameters as "name=value", the value a constant expression (0.25, 2*pi,
	// sqrt(2)/2, other parameters' names), in order, as tempest run --param.
	Params []string
	// Inits set grids' initial values as tempest run --init does: grid=file.npy,
	// grid=file.txt, grid=random[:seed] or grid=zero. Arrays can be written after New.
	Inits []string
	// Seed seeds rand() in the program's initial values (0: 1).
	Seed uint64
	// Backend is auto (CUDA, then OpenCL unless its device is this machine's processor,
	// then the CPU engine), cuda, opencl, cpu, or ref (the reference interpreter: slow,
	// for checking).
	Backend string
	// Plan is the GPU plan, e.g. "tiled:bx=32,by=8"; empty: the tuning cache's best for
	// this program, size and device, else the performance model's pick (see Tune).
	Plan string
	// Tune says how to choose a plan without Plan: none, cached, model or full (tune now),
	// as tempest run --tune; empty: cached, else model.
	Tune string
	// FastMath compiles the GPU kernels with fast math (tempest run --fastmath).
	FastMath bool
	// Resume starts from a checkpoint (Sim.Checkpoint, tempest run --checkpoint) instead of
	// the initial values: same program, type and size; its parameters are taken.
	Resume string
	// Log receives notes (the engine auto chose, a plan that could not be looked up, data
	// that changed type); nil discards them.
	Log io.Writer
}

// A Sim is a program running on an engine. Its methods are not safe for concurrent use.
type Sim struct {
	prog  *Program
	eng   *driver.Engine
	grids map[string]*ir.Grid
	// chunk is the steps StepWith advances between progress calls, learnt across calls so that
	// short calls in a loop do not each start small.
	chunk int
}

// New starts the program on an engine with the options' sizes, parameters and initial
// values; the device's set-up and the kernels' compilation happen here, once.
func (p *Program) New(opt Options) (*Sim, error) {
	if err := driver.CheckTuneMode(opt.Tune); err != nil {
		return nil, err
	}
	var size []string
	for _, n := range opt.Size {
		size = append(size, fmt.Sprint(n))
	}
	o := driver.RunOptions{File: p.name, Source: p.text, Size: strings.Join(size, "x"), Type: opt.Type, Params: opt.Params,
		Inits: opt.Inits, Seed: opt.Seed, Backend: opt.Backend, Plan: opt.Plan, Tune: opt.Tune, FastMath: opt.FastMath,
		Resume: opt.Resume}
	log := opt.Log
	if log == nil {
		log = io.Discard
	}
	// The engine's buffers (two per state grid on the CPU engine, up to four on a GPU) beside
	// the host copy.
	pr, err := driver.Prepare(o, 3)
	if err != nil {
		return nil, err
	}
	for _, n := range pr.Notes {
		fmt.Fprintln(log, n)
	}
	eng, err := driver.OpenEngine(o, pr, log)
	if err != nil {
		return nil, err
	}
	s := &Sim{prog: &Program{name: p.name, text: p.text, p: pr.Prog}, eng: eng, grids: map[string]*ir.Grid{}}
	for _, g := range pr.Prog.Grids {
		s.grids[g.Name] = g
	}
	return s, nil
}

// Program is the program the Sim runs (in the element type it runs in).
func (s *Sim) Program() *Program { return s.prog }

// Backend names the engine: cuda, opencl, cpu or ref.
func (s *Sim) Backend() string { return s.eng.Backend }

// Device names the device the engine runs on.
func (s *Sim) Device() string { return s.eng.Device }

// Plan is the GPU plan the kernels were compiled from, or what computes on the CPU.
func (s *Sim) Plan() string { return s.eng.Plan }

// Shape is the number of cells per axis, slowest first.
func (s *Sim) Shape() []int { return append([]int(nil), s.eng.State.Shape...) }

// Steps is the number of steps done since the initial values (a resumed run counts the
// checkpoint's steps too).
func (s *Sim) Steps() int { return s.eng.State.Steps }

// Granule is the step count that a GPU plan advances per launch at most: stepping in
// multiples of it keeps every launch at full depth (1 on the CPU).
func (s *Sim) Granule() int { return s.eng.Granule() }

// Step advances the run by n steps. On a GPU the steps may still run when it returns: they
// queue behind the ones before, and every call that reads the state (Grid, Box, Observe,
// Checkpoint) or writes it waits for them, so a loop of short steps keeps the GPU busy.
func (s *Sim) Step(n int) error { return s.StepWith(n, nil) }

// Wait returns once every step queued on a GPU has run (Step), with the error of any that
// failed; for timing a loop of steps, or before reading the clock.
func (s *Sim) Wait() error { return s.eng.Wait() }

// ErrStopped is returned (wrapped) when a progress function stopped a StepWith.
var ErrStopped = errors.New("stopped")

// chunkTarget is how long StepWith lets the engine run between calls of its progress
// function: often enough for a progress bar and an interruption to feel immediate, seldom
// enough that the returns to the host cost nothing measurable.
const chunkTarget = 200 * time.Millisecond

// StepWith advances the run by n steps, calling progress (unless nil) about every 200 ms
// with the steps done so far; progress returning false stops the run there with an error
// wrapping ErrStopped (the steps done stay done). Results do not depend on where it stops.
func (s *Sim) StepWith(n int, progress func(done int) bool) error {
	if n < 0 {
		return fmt.Errorf("step %d: the number of steps cannot be negative", n)
	}
	g := s.eng.Granule()
	chunk := max(g, s.chunk)
	if progress == nil || n <= chunk {
		// Short enough to need no progress: on a GPU the steps queue and the call returns
		// (Engine.Enqueue), so that short chunks from a loop cost the GPU no idle time.
		if err := s.eng.Enqueue(n); err != nil {
			return err
		}
		if progress != nil {
			progress(n)
		}
		return nil
	}
	defer func() { s.chunk = chunk }()
	for done := 0; done < n; {
		k := min(chunk, n-done)
		if r := k % g; r != 0 && done+k != n {
			k -= r
		}
		start := time.Now()
		if _, err := s.eng.Advance(k); err != nil {
			return err
		}
		done += k
		if !progress(done) && done < n {
			return fmt.Errorf("%w at step %d, %d of %d steps done", ErrStopped, s.Steps(), done, n)
		}
		switch took := time.Since(start); {
		case took < chunkTarget/2 && chunk < 1<<30:
			chunk *= 2
		case took > 2*chunkTarget && chunk > g:
			chunk = max(g, chunk/2/g*g)
		}
	}
	return nil
}

// Observation is the value of one observable.
type Observation struct {
	Name  string
	Value float64
}

// Observe evaluates the program's observables on the current state, in declaration order
// (on a GPU, on the device: only the values come back).
func (s *Sim) Observe() ([]Observation, error) {
	v, err := s.eng.Observe()
	if err != nil {
		return nil, err
	}
	out := make([]Observation, len(v))
	for i, o := range s.prog.p.Observes {
		out[i] = Observation{Name: o.Name, Value: v[o.Index]}
	}
	return out, nil
}

// Params are the parameters' current values.
func (s *Sim) Params() []ParamInfo {
	var out []ParamInfo
	for _, pr := range s.prog.p.Params {
		out = append(out, ParamInfo{Name: pr.Name, Type: pr.Type.String(), Value: value(s.eng.State.Params[pr.Index])})
	}
	return out
}

// SetParam sets a parameter to a constant expression (as Options.Params) for the steps that
// follow; nothing is recompiled. A parameter that gives a layered grid its layer count is
// fixed once the Sim exists.
func (s *Sim) SetParam(name, expr string) error {
	return s.eng.SetParam(name + "=" + expr)
}

// Checkpoint writes the run's state to path as tempest run --checkpoint does (an .npz
// archive numpy.load reads); Options.Resume and tempest run --resume continue from it.
func (s *Sim) Checkpoint(path string) error { return s.eng.Checkpoint(path) }

// Close frees the device's resources. The Sim cannot be used afterwards.
func (s *Sim) Close() error {
	s.eng.Close()
	return nil
}
