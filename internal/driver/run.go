// Package driver carries out the CLI's commands: it loads a program, prepares its data, picks
// an engine, runs, verifies and writes results. cmd/tempest only maps flags onto it.
package driver

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"

	"tempest/internal/analysis"
	"tempest/internal/cpu"
	"tempest/internal/gpu"
	"tempest/internal/gpurun"
	"tempest/internal/gridio"
	"tempest/internal/ir"
	"tempest/internal/load"
	"tempest/internal/native"
	"tempest/internal/ref"
	"tempest/internal/state"
)

// RunOptions are the settings of `tempest run`.
type RunOptions struct {
	File    string
	Source  string // the program's text, named File in messages; empty: read from File
	Size    string // "4096x4096"; empty: taken from an --init .npy file, else a default
	Steps   int
	Params  []string // name=value
	Inits   []string // grid=file.npy | grid=file.txt | grid=random[:seed] | grid=zero
	Type    string   // overrides the program's default element type
	Seed    uint64
	Out     string // .npy of the final state grid(s)
	PNG     string // heat map of the final state grid(s)
	Backend string // auto | cuda | opencl | cpu
	Plan    string // GPU plan, e.g. "tiled:bx=32,by=8"; empty: chosen by Tune
	Tune    string // without --plan: none | cached | model | full ("": cached, else model)
	// FastMath compiles the plan with fast math (and looks up or tunes fast plans), unless
	// the plan's text says fastmath=... itself.
	FastMath bool
	Verify   bool
	// NoBound skips --verify's error bound (the bounded reference is far slower than the CPU
	// engine on big runs).
	NoBound bool
	Quiet   bool // no progress bar

	// Observables (observe.go): the CSV and the plot of the observations, the steps between
	// observations and between until checks (0: defaults).
	Observables    string
	ObservablesPNG string
	ObserveEvery   int
	CheckEvery     int

	// SnapshotEvery writes every state grid as Snapshots/NAME_000100.npy (the step, zero
	// padded) at every multiple of this many steps, step 0 included.
	SnapshotEvery int
	Snapshots     string // the snapshot directory (made if missing)
	// GIF writes each state grid's evolution as an animated GIF (one per grid, named as --png
	// names them), a frame every GIFEvery steps (default SnapshotEvery).
	GIF      string
	GIFEvery int
	// Checkpoint is the checkpoint file (.npz) written at the end of the run, every
	// CheckpointEvery steps, and when a signal stops the run; empty: written only on a signal
	// or with CheckpointEvery, to DefaultCheckpoint.
	Checkpoint      string
	CheckpointEvery int
	// Resume continues the run a checkpoint holds. Steps stays the total: the run ends at step
	// Steps, so the interrupted command with --resume added finishes the same run.
	Resume string
	// Env, where set, is how Run reads the environment: the variables of a launcher
	// (torchrun, mpirun, srun: launcher.go) make this process a rank of a multi-process run
	// without --ranks, and TEMPEST_SECRET authenticates the ranks. Nil reads none (tests).
	Env func(string) string
	// Signals makes SIGINT and SIGTERM end the run at the end of the current chunk of launches,
	// write a checkpoint and return an error wrapping ErrInterrupted that says how to resume.
	Signals bool
	// Events are more consumers of the run's state, called after Tempest's own at their steps.
	Events []Event

	// Multi splits the run into sub-domains (multi.go).
	Multi MultiOptions
}

// DefaultCheckpoint is the checkpoint file of a run that names none.
func DefaultCheckpoint(prog string) string { return prog + ".checkpoint.npz" }

// defaultSizes are used when neither --size nor an .npy file gives one.
var defaultSizes = map[int]string{1: "65536", 2: "512x512", 3: "128x128x128"}

// loadProgram reads a program with an optional element-type override.
func loadProgram(path, typ string) (*ir.Program, error) {
	opt, err := typeOption(typ, "--type")
	if err != nil {
		return nil, err
	}
	return load.File(path, opt)
}

// typeOption is the load option of an element-type override ("": the program's own); what
// names it in the message (--type, or a library's option).
func typeOption(typ, what string) (load.Options, error) {
	opt := load.Options{}
	if typ != "" {
		t, ok := ir.ParseType(typ)
		if !ok {
			return opt, fmt.Errorf("%s %q: element types are f32, f64, i32 and i64", what, typ)
		}
		opt.DefaultType = &t
	}
	return opt, nil
}

// initSpec is one --init flag.
type initSpec struct {
	grid *ir.Grid
	kind string // npy, text, random, zero
	path string
	seed uint64
	arr  *gridio.Array
	text *gridio.Text
}

func parseInits(p *ir.Program, flags []string) ([]initSpec, error) {
	var specs []initSpec
	seen := map[string]string{}
	for _, f := range flags {
		name, what, ok := strings.Cut(f, "=")
		if !ok {
			return nil, fmt.Errorf("--init %q: write grid=file.npy, grid=random[:seed] or grid=zero", f)
		}
		if prev, twice := seen[name]; twice {
			return nil, fmt.Errorf("--init %s and --init %s: grid %s is given twice; keep one", prev, f, name)
		}
		seen[name] = f
		var g *ir.Grid
		for _, gr := range p.Grids {
			if gr.Name == name {
				g = gr
			}
		}
		if g == nil {
			var names []string
			for _, gr := range p.Grids {
				names = append(names, gr.Name)
			}
			return nil, fmt.Errorf("--init %s: %s has no grid %q (grids: %s)", f, p.Name, name, strings.Join(names, ", "))
		}
		sp := initSpec{grid: g}
		switch {
		case what == "zero":
			sp.kind = "zero"
		case what == "random" || strings.HasPrefix(what, "random:"):
			sp.kind, sp.seed = "random", 1
			if s, ok := strings.CutPrefix(what, "random:"); ok {
				n, err := strconv.ParseUint(s, 10, 64)
				if err != nil {
					return nil, fmt.Errorf("--init %s: seed %q is not a whole number", f, s)
				}
				sp.seed = n
			}
		default:
			if err := readInitFile(&sp, f, what); err != nil {
				return nil, err
			}
		}
		specs = append(specs, sp)
	}
	return specs, nil
}

// Prepared is a program with its initial state, ready for an engine.
type Prepared struct {
	Prog    *ir.Program
	Summary *analysis.Summary
	State   *state.State
	Notes   []string // notes and warnings about the data, for stderr
	// Resumed holds a checkpoint's record of the outputs it had made (GIF frames,
	// observations; checkpoint.resumed), which a resumed run continues.
	Resumed map[string]*gridio.Array
}

// Prepare loads the program and builds its initial state from the options, or, with
// o.Resume, the state a checkpoint holds (after checking that it is of this program, type,
// size and parameters).
func Prepare(o RunOptions, copies float64) (*Prepared, error) {
	var ck *checkpoint
	if o.Resume != "" {
		var err error
		if ck, err = readCheckpoint(o.Resume); err != nil {
			return nil, err
		}
	}
	p, err := loadRunProgram(o, o.Type)
	if err != nil {
		return nil, err
	}
	if ck != nil && o.Type == "" && p.DefaultType.String() != ck.meta.Type {
		if p, err = loadRunProgram(o, ck.meta.Type); err != nil {
			return nil, err
		}
	}
	if ck != nil {
		if err := ck.checkProgram(p); err != nil {
			return nil, err
		}
	}
	params := state.DefaultParams(p)
	given := map[string]bool{}
	for _, kv := range o.Params {
		if err := state.SetParam(p, params, kv); err != nil {
			return nil, err
		}
		name, _, _ := strings.Cut(kv, "=")
		given[strings.TrimSpace(name)] = true
	}
	if ck != nil {
		if err := ck.applyParams(p, params, given); err != nil {
			return nil, err
		}
	}
	inits, err := parseInits(p, o.Inits)
	if err != nil {
		return nil, err
	}
	size := o.Size
	if size == "" && ck != nil {
		size = sizeString(ck.meta.Size)
	}
	if size == "" {
		if size, err = sizeFromInits(p, inits); err != nil {
			return nil, err
		}
	}
	if size == "" {
		size = defaultSizes[p.Dims()]
	}
	shape, err := state.ParseShape(p, size)
	if err != nil {
		return nil, err
	}
	if ck != nil {
		if err := ck.checkShape(shape); err != nil {
			return nil, err
		}
		if o.Seed != 0 && ck.meta.Seed != o.Seed {
			return nil, ck.refuse("seed", fmt.Sprint(ck.meta.Seed), fmt.Sprint(o.Seed), "resume without --seed")
		}
	}
	s, err := state.New(p, shape, params, copies)
	if err != nil {
		return nil, err
	}
	if o.Seed != 0 {
		s.Seed = o.Seed
	}
	if ck == nil {
		ref.Init(s)
	}
	var notes []string
	inputs := map[int]bool{}
	for _, in := range inits {
		if ck != nil && in.grid.Update != nil {
			return nil, fmt.Errorf("--init %s with --resume: a resumed run takes state grid %s from the checkpoint; drop --init %s", in.grid.Name, in.grid.Name, in.grid.Name)
		}
		if err := applyInit(s, in, &notes); err != nil {
			return nil, err
		}
		inputs[in.grid.Index] = true
	}
	if ck != nil {
		if err := ck.restore(s, inputs); err != nil {
			return nil, err
		}
	}
	notes = append(notes, defaultWarnings(p, inits)...)
	pr := &Prepared{Prog: p, Summary: analysis.Analyze(p), State: s, Notes: notes}
	if ck != nil {
		pr.Resumed = ck.resumed()
	}
	return pr, nil
}

func applyInit(s *state.State, in initSpec, notes *[]string) error {
	g := in.grid
	want := s.GridShape(g)
	switch in.kind {
	case "zero":
		s.Cur[g.Index] = gridio.NewArray(state.DType(g.Type), want)
	case "random":
		a := gridio.NewArray(state.DType(g.Type), want)
		for i := 0; i < a.Len(); i++ {
			r := ref.Rand(in.seed, g.Index, 0, i, ir.F64)
			if g.Type.IsInt() {
				state.Set(a, i, ir.MakeInt(g.Type, int64(r*2))) // 0 or 1: a random field of integers
			} else {
				state.Set(a, i, ir.MakeFloat(g.Type, r))
			}
		}
		s.Cur[g.Index] = a
	case "npy", "text":
		a, err := fileArray(s, in, want, notes)
		if err != nil {
			return err
		}
		s.Cur[g.Index] = a
	}
	if g.Levels > 1 && g.Prev == nil {
		s.Prev[g.Index] = state.CopyArray(s.Cur[g.Index])
	}
	return nil
}

// UpdatedCells is the number of cell updates one step performs (fixed rims excluded),
// summed over the state grids and divided by their number, so that it counts domain cells.
func UpdatedCells(s *state.State) float64 {
	total := 0.0
	for _, u := range s.Prog.Updates {
		n := 1.0
		for a, d := range s.Shape {
			n *= float64(max(0, d-2*u.Grid.Rim[a]))
		}
		total += n
	}
	return total / float64(max(1, len(s.Prog.Updates)))
}

// Result is what a run measured.
type Result struct {
	Program    string   `json:"program"`
	Plan       string   `json:"plan"`
	Backend    string   `json:"backend"`
	Device     string   `json:"device"`
	Size       []int    `json:"size"`
	Steps      int      `json:"steps"`               // steps this run advanced
	StartStep  int      `json:"startStep,omitempty"` // the checkpoint's step it resumed from
	Type       string   `json:"type"`
	Seconds    float64  `json:"seconds"`
	GCellsPerS float64  `json:"gcellsPerSecond"`
	GFLOPPerS  float64  `json:"gflopPerSecond"`
	MaxAbsErr  *float64 `json:"maxAbsError,omitempty"`
	RMSErr     *float64 `json:"rmsError,omitempty"`
	FastMath   bool     `json:"fastMath,omitempty"`
	// ErrorBound is the largest per-cell bound --verify computed for the engine's rounding,
	// and WithinBound whether every cell lay within its own.
	ErrorBound  *float64 `json:"errorBound,omitempty"`
	WithinBound *bool    `json:"withinBound,omitempty"`
}

// openBackend opens the device --backend names: auto tries CUDA, then OpenCL, and returns a
// nil device (the CPU engine) when neither is usable; cpu and ref (the reference interpreter,
// slow, for checking) take no --plan.
func openBackend(backend, planText string, stderr io.Writer) (gpu.Device, error) {
	switch backend {
	case "", "auto":
		d, err := gpu.Open("auto")
		switch {
		case err == nil && d.Props().CPU && planText == "":
			// OpenCL on the host's processor (PoCL) ran 3-30x slower than the CPU engine
			// (star3d1r f64 128^3: 85 s against 2.7 s), its compilation included.
			fmt.Fprintf(stderr, "backend auto: the CPU engine (no GPU; the OpenCL device %s is this machine's processor, where the CPU engine is faster; --backend opencl runs it there)\n", d.Props().Name)
			d.Close()
			return nil, nil
		case err == nil:
			return d, nil
		case errors.Is(err, gpu.ErrUnavailable):
			return nil, nil // no GPU here: the CPU engine runs it
		}
		return nil, err
	case "cuda", "opencl":
		d, err := gpu.Open(backend)
		if err != nil {
			return nil, fmt.Errorf("--backend %s: %w", backend, err)
		}
		return d, nil
	case "cpu", "ref":
		if planText != "" {
			return nil, fmt.Errorf("--plan %s: plans describe GPU kernels; the CPU engine takes none (drop --plan or choose --backend cuda or opencl)", planText)
		}
		return nil, nil
	}
	return nil, fmt.Errorf("--backend %q: choose auto, cuda, opencl, cpu or ref", backend)
}

// cpuCompiler says what builds the CPU engine's steps: the C compiler, or Go and why.
func cpuCompiler() string {
	if !cpu.UseNative {
		return "Go " + strings.TrimPrefix(runtime.Version(), "go")
	}
	cc, err := native.Find()
	if err != nil {
		return "Go " + strings.TrimPrefix(runtime.Version(), "go") + " (" + err.Error() + ")"
	}
	return "C: " + cc.Name() + " " + strings.Join(native.Flags[:3], " ")
}

// cpuFastMathNote says that --fastmath changes nothing on an engine that computes as written.
func cpuFastMathNote(o RunOptions, engine string, stderr io.Writer) {
	if o.FastMath {
		fmt.Fprintf(stderr, "note: --fastmath has no effect on %s, which computes every operation as written; it applies to the GPU backends\n", engine)
	}
}

// Run carries out `tempest run`: it prepares the state (fresh, or from a checkpoint), starts
// an engine and advances the run in segments (loop.go) whose ends serve the events:
// observations and until checks (observe.go), snapshots, GIF frames, checkpoints and o.Events.
// The reported time is the engine's alone.
func Run(o RunOptions, stdout, stderr io.Writer) (*Result, error) {
	if o.Steps < 0 {
		return nil, fmt.Errorf("--steps %d: the number of steps cannot be negative", o.Steps)
	}
	if err := checkEventOptions(o); err != nil {
		return nil, err
	}
	if err := checkOutputPaths(o); err != nil {
		return nil, err
	}
	if err := applyLauncher(&o, stderr); err != nil {
		return nil, err
	}
	if o.Multi.Active() {
		return runMulti(o, stdout, stderr)
	}
	dev, err := openBackend(o.Backend, o.Plan, stderr)
	if err != nil {
		return nil, err
	}
	if dev != nil {
		defer dev.Close()
	}
	copies := 2.0 // the engine's buffers
	if o.Verify {
		copies++
	}
	pr, err := Prepare(o, copies+1)
	if err != nil {
		return nil, err
	}
	if err := checkObserveFlags(o, pr.Prog); err != nil {
		return nil, err
	}
	s := pr.State
	for _, n := range pr.Notes {
		fmt.Fprintln(stderr, n)
	}
	start := s.Steps
	if start > o.Steps {
		return nil, fmt.Errorf("--resume %s: the checkpoint is at step %d, past --steps %d (with --resume, --steps is the step the run ends at)", o.Resume, start, o.Steps)
	}
	steps := o.Steps - start
	var initial *state.State
	if o.Verify {
		initial = s.Clone()
	}
	res := &Result{Program: pr.Prog.Name, Size: s.Shape, Steps: steps, StartStep: start, Type: pr.Prog.DefaultType.String()}
	from := ""
	if start > 0 {
		from = fmt.Sprintf(" (from step %d of a checkpoint)", start)
	}
	l := &loop{s: s, target: o.Steps}
	var cpuEng *cpu.Engine
	if dev != nil {
		r, err := startGPU(dev, o, pr, res, stdout, stderr, steps, from)
		if err != nil {
			return nil, err
		}
		defer r.Close()
		l.eng, l.runner = gpuStepper{r}, r
	} else if o.Backend == "ref" {
		cpuFastMathNote(o, "the reference interpreter", stderr)
		res.Backend, res.Device, res.Plan = "ref", cpuName(), "reference interpreter"
		fmt.Fprintf(stdout, "%s: %s, %s, %d steps%s, reference interpreter\n", pr.Prog.Name, sizeString(s.Shape), res.Type, steps, from)
		l.eng = newRefStepper(s)
	} else {
		cpuFastMathNote(o, "the CPU engine", stderr)
		eng := cpu.New(s)
		if (o.Tune == "" || o.Tune == "cached") && os.Getenv(cpu.EnvBT) == "" {
			if bt := tunedSweep(pr.Prog, s.Shape); bt > 0 && eng.SetStepsPerSweep(bt) != nil {
				fmt.Fprintf(stderr, "note: the tuned steps per sweep (%d) do not apply here; the model's pick runs\n", bt)
			}
		}
		res.Backend, res.Device, res.Plan = "cpu", cpuName(), "cpu engine ("+eng.Code()+")"
		fmt.Fprintf(stdout, "%s: %s, %s, %d steps%s, cpu engine on %s (%s)\n", pr.Prog.Name, sizeString(s.Shape), res.Type, steps, from, res.Device, eng.Code())
		l.eng, cpuEng = cpuStepper{eng}, eng
	}
	ss, err := newSession(o, pr, l, true, stdout, stderr)
	if err != nil {
		return nil, err
	}
	defer ss.abort()
	if res.Seconds, err = ss.run(l, steps, stdout, stderr); err != nil {
		return nil, err
	}
	if s.Steps != o.Steps {
		steps = s.Steps - start // an event ended the run early
		res.Steps = steps
		fmt.Fprintf(stdout, "the run ended at step %d\n", s.Steps)
	}
	cells := UpdatedCells(s) * float64(steps)
	if res.Seconds > 0 {
		res.GCellsPerS = cells / res.Seconds / 1e9
		res.GFLOPPerS = cells * float64(pr.Summary.FLOPs) / res.Seconds / 1e9
	}
	fmt.Fprintf(stdout, "time %.3f s, %.3f GCells/s, %.2f GFLOP/s (%d FLOP/cell)\n", res.Seconds, res.GCellsPerS, res.GFLOPPerS, pr.Summary.FLOPs)
	if cpuEng != nil {
		if at, ok := cpuEng.TookOver(); ok {
			fmt.Fprintf(stdout, "the C code took over from the Go code at step %d (%s); later runs load it from the cache\n", at, cpuEng.Code())
		}
	}
	warnNonFinite(s, stderr)
	ss.obs.warnNonFinite(stderr)

	if o.Verify {
		if err := verify(o, res, initial, s, dev != nil, stdout, stderr); err != nil {
			return nil, err
		}
	}
	if err := ss.finish(stdout); err != nil {
		return nil, err
	}
	if err := writeOutputs(o, pr, stdout); err != nil {
		return nil, err
	}
	return res, nil
}

// startGPU compiles the plan and uploads the state; the loop then times each chunk's launches
// with device events (transfers excluded, as AN5D and SL measure) and sums them.
func startGPU(dev gpu.Device, o RunOptions, pr *Prepared, res *Result, stdout, stderr io.Writer, steps int, from string) (*gpurun.Runner, error) {
	s := pr.State
	name := o.Plan
	if name == "" {
		name = ChoosePlanName(dev, pr, o.Tune, o.FastMath, stderr)
	}
	pl, err := parsePlan(name, pr.Prog, o.FastMath)
	if err != nil {
		return nil, fmt.Errorf("--plan: %w", err)
	}
	props := dev.Props()
	res.Backend, res.Device, res.Plan, res.FastMath = props.Backend, props.Name, pl.String(), pl.FastMath
	fmt.Fprintf(stdout, "%s: %s, %s, %d steps%s, %s on %s (%s)\n", pr.Prog.Name, sizeString(s.Shape), res.Type, steps, from, pl, props.Name, props.Backend)
	r, err := gpurun.Prepare(dev, s, pl)
	if err != nil {
		return nil, err
	}
	for _, line := range r.KernelReport() {
		fmt.Fprintln(stdout, line)
	}
	return r, nil
}

// DefaultPlan is the plan used when none is given and nothing is tuned.
func DefaultPlan(p *ir.Program) string {
	return "tiled"
}

func newBar(o RunOptions, stderr io.Writer, what string, steps int) *progressbar.ProgressBar {
	if o.Quiet || steps < 2 {
		return nil
	}
	if f, ok := stderr.(*os.File); !ok || !isTerminal(f) {
		return nil
	}
	return progressbar.NewOptions(steps, progressbar.OptionSetWriter(stderr), progressbar.OptionSetDescription(what),
		progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true), progressbar.OptionThrottle(100*time.Millisecond))
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func sizeString(shape []int) string {
	parts := make([]string, len(shape))
	for i, n := range shape {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, "x")
}

func cpuName() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				return strings.TrimSpace(v)
			}
		}
	}
	return "CPU"
}

// outputPath names the file for one grid: the path itself when one grid is written, else the
// grid's name before the extension.
func outputPath(path, grid string, many bool) string {
	if !many {
		return path
	}
	ext := filepath.Ext(path)
	return strings.TrimSuffix(path, ext) + "_" + grid + ext
}

func writeOutputs(o RunOptions, pr *Prepared, stdout io.Writer) error {
	s := pr.State
	many := len(pr.Prog.Updates) > 1
	for _, u := range pr.Prog.Updates {
		a := s.Cur[u.Grid.Index]
		if o.Out != "" {
			path := outputPath(o.Out, u.Grid.Name, many)
			if err := writeGrid(path, a); err != nil {
				return fmt.Errorf("writing %s: %w", path, err)
			}
			fmt.Fprintf(stdout, "wrote %s (%s %v)\n", path, a.DType, a.Shape)
		}
		if o.PNG != "" {
			path := outputPath(o.PNG, u.Grid.Name, many)
			title := fmt.Sprintf("%s: %s after %d steps", pr.Prog.Name, u.Grid.Name, s.Steps)
			if err := gridio.WritePNG(path, a, gridio.PNGOptions{Title: title}); err != nil {
				return fmt.Errorf("writing %s: %w", path, err)
			}
			fmt.Fprintf(stdout, "wrote %s\n", path)
		}
	}
	return nil
}

// Check carries out `tempest check`: the analysis summary as text or JSON.
func Check(path, typ string, asJSON bool, stdout io.Writer) error {
	p, err := loadProgram(path, typ)
	if err != nil {
		return err
	}
	s := analysis.Analyze(p)
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}
	_, err = io.WriteString(stdout, s.Text())
	return err
}
