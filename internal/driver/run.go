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
	"tempest/internal/ref"
	"tempest/internal/state"
)

// RunOptions are the settings of `tempest run`.
type RunOptions struct {
	File    string
	Size    string // "4096x4096"; empty: taken from an --init .npy file, else a default
	Steps   int
	Params  []string // name=value
	Inits   []string // grid=file.npy | grid=random[:seed] | grid=zero
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
	Quiet    bool // no progress bar

	// Multi splits the run into sub-domains (multi.go).
	Multi MultiOptions
}

// defaultSizes are used when neither --size nor an .npy file gives one.
var defaultSizes = map[int]string{1: "65536", 2: "512x512", 3: "128x128x128"}

// loadProgram reads a program with an optional element-type override.
func loadProgram(path, typ string) (*ir.Program, error) {
	opt := load.Options{}
	if typ != "" {
		t, ok := ir.ParseType(typ)
		if !ok {
			return nil, fmt.Errorf("--type %q: element types are f32, f64, i32 and i64", typ)
		}
		opt.DefaultType = &t
	}
	return load.File(path, opt)
}

// initSpec is one --init flag.
type initSpec struct {
	grid *ir.Grid
	kind string // npy, random, zero
	path string
	seed uint64
	arr  *gridio.Array
}

func parseInits(p *ir.Program, flags []string) ([]initSpec, error) {
	var specs []initSpec
	for _, f := range flags {
		name, what, ok := strings.Cut(f, "=")
		if !ok {
			return nil, fmt.Errorf("--init %q: write grid=file.npy, grid=random[:seed] or grid=zero", f)
		}
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
		case strings.HasSuffix(what, ".npy"):
			a, err := gridio.ReadNPY(what)
			if err != nil {
				return nil, fmt.Errorf("--init %s: %w", f, err)
			}
			sp.kind, sp.path, sp.arr = "npy", what, a
		default:
			return nil, fmt.Errorf("--init %s: %q is not a .npy file, random[:seed] or zero", f, what)
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
}

// Prepare loads the program and builds its initial state from the options.
func Prepare(o RunOptions, copies float64) (*Prepared, error) {
	p, err := loadProgram(o.File, o.Type)
	if err != nil {
		return nil, err
	}
	params := state.DefaultParams(p)
	for _, kv := range o.Params {
		if err := state.SetParam(p, params, kv); err != nil {
			return nil, err
		}
	}
	inits, err := parseInits(p, o.Inits)
	if err != nil {
		return nil, err
	}
	size := o.Size
	if size == "" {
		for _, in := range inits {
			if in.arr != nil && in.grid.Layers == nil {
				size = strings.Trim(strings.ReplaceAll(fmt.Sprint(in.arr.Shape), " ", "x"), "[]")
				break
			}
		}
	}
	if size == "" {
		size = defaultSizes[p.Dims()]
	}
	shape, err := state.ParseShape(p, size)
	if err != nil {
		return nil, err
	}
	s, err := state.New(p, shape, params, copies)
	if err != nil {
		return nil, err
	}
	if o.Seed != 0 {
		s.Seed = o.Seed
	}
	ref.Init(s)
	for _, in := range inits {
		if err := applyInit(s, in); err != nil {
			return nil, err
		}
	}
	return &Prepared{Prog: p, Summary: analysis.Analyze(p), State: s}, nil
}

func applyInit(s *state.State, in initSpec) error {
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
	case "npy":
		if fmt.Sprint(in.arr.Shape) != fmt.Sprint(want) {
			return fmt.Errorf("--init %s=%s: the file holds an array of shape %v but grid %s needs %v (--size %s); make them agree",
				g.Name, in.path, in.arr.Shape, g.Name, want, strings.Trim(strings.ReplaceAll(fmt.Sprint(s.Shape), " ", "x"), "[]"))
		}
		a, err := in.arr.Convert(state.DType(g.Type))
		if err != nil {
			return fmt.Errorf("--init %s=%s: %w", g.Name, in.path, err)
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
	Steps      int      `json:"steps"`
	Type       string   `json:"type"`
	Seconds    float64  `json:"seconds"`
	GCellsPerS float64  `json:"gcellsPerSecond"`
	GFLOPPerS  float64  `json:"gflopPerSecond"`
	MaxAbsErr  *float64 `json:"maxAbsError,omitempty"`
	RMSErr     *float64 `json:"rmsError,omitempty"`
}

// openBackend opens the device --backend names: auto tries CUDA, then OpenCL, and returns a
// nil device (the CPU engine) when neither is usable; cpu takes no --plan.
func openBackend(backend, planText string) (gpu.Device, error) {
	switch backend {
	case "", "auto":
		d, err := gpu.Open("auto")
		switch {
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
	case "cpu":
		if planText != "" {
			return nil, fmt.Errorf("--plan %s: plans describe GPU kernels; the CPU engine takes none (drop --plan or choose --backend cuda or opencl)", planText)
		}
		return nil, nil
	}
	return nil, fmt.Errorf("--backend %q: choose auto, cuda, opencl or cpu", backend)
}

// Run carries out `tempest run`.
func Run(o RunOptions, stdout, stderr io.Writer) (*Result, error) {
	if o.Steps < 0 {
		return nil, fmt.Errorf("--steps %d: the number of steps cannot be negative", o.Steps)
	}
	if o.Multi.Active() {
		return runMulti(o, stdout, stderr)
	}
	dev, err := openBackend(o.Backend, o.Plan)
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
	s := pr.State
	var initial *state.State
	if o.Verify {
		initial = s.Clone()
	}
	res := &Result{Program: pr.Prog.Name, Size: s.Shape, Steps: o.Steps, Type: pr.Prog.DefaultType.String()}
	if dev != nil {
		if err := runGPU(dev, o, pr, res, stdout, stderr); err != nil {
			return nil, err
		}
	} else {
		runCPU(o, pr, res, stdout, stderr)
	}
	cells := UpdatedCells(s) * float64(o.Steps)
	if res.Seconds > 0 {
		res.GCellsPerS = cells / res.Seconds / 1e9
		res.GFLOPPerS = cells * float64(pr.Summary.FLOPs) / res.Seconds / 1e9
	}
	fmt.Fprintf(stdout, "time %.3f s, %.3f GCells/s, %.2f GFLOP/s (%d FLOP/cell)\n", res.Seconds, res.GCellsPerS, res.GFLOPPerS, pr.Summary.FLOPs)

	if o.Verify {
		// GPU results are checked against the CPU engine, which the tests hold bitwise equal
		// to the reference interpreter and which finishes big runs in reasonable time; CPU
		// results are checked against the interpreter itself.
		what := "the reference interpreter"
		if dev != nil {
			what = "the reference (CPU engine)"
			eng := cpu.New(initial)
			eng.Run(o.Steps, nil)
			eng.Sync()
		} else {
			vbar := newBar(o, stderr, "reference")
			for i := 0; i < o.Steps; i++ {
				ref.Step(initial)
				if vbar != nil {
					vbar.Set(i + 1)
				}
			}
			if vbar != nil {
				vbar.Finish()
				fmt.Fprintln(stderr)
			}
		}
		maxAbs, rms := ref.Compare(initial, s)
		res.MaxAbsErr, res.RMSErr = &maxAbs, &rms
		fmt.Fprintf(stdout, "verify against %s: max abs error %.3g, RMS error %.3g\n", what, maxAbs, rms)
	}
	if err := writeOutputs(o, pr, stdout); err != nil {
		return nil, err
	}
	return res, nil
}

func runCPU(o RunOptions, pr *Prepared, res *Result, stdout, stderr io.Writer) {
	s := pr.State
	res.Backend, res.Device, res.Plan = "cpu", cpuName(), "cpu engine"
	fmt.Fprintf(stdout, "%s: %s, %s, %d steps, cpu engine on %s\n", pr.Prog.Name, sizeString(s.Shape), res.Type, o.Steps, res.Device)
	bar := newBar(o, stderr, "running")
	eng := cpu.New(s)
	start := time.Now()
	eng.Run(o.Steps, func(done int) {
		if bar != nil {
			bar.Set(done)
		}
	})
	res.Seconds = time.Since(start).Seconds()
	eng.Sync()
	if bar != nil {
		bar.Finish()
		fmt.Fprintln(stderr)
	}
}

// runGPU compiles the plan and times the whole launch sequence with device events
// (transfers excluded, as AN5D and SL measure).
func runGPU(dev gpu.Device, o RunOptions, pr *Prepared, res *Result, stdout, stderr io.Writer) error {
	s := pr.State
	name := o.Plan
	if name == "" {
		name = ChoosePlanName(dev, pr, o.Tune, o.FastMath, stderr)
	}
	pl, err := parsePlan(name, pr.Prog, o.FastMath)
	if err != nil {
		return fmt.Errorf("--plan: %w", err)
	}
	props := dev.Props()
	res.Backend, res.Device, res.Plan = props.Backend, props.Name, pl.String()
	fmt.Fprintf(stdout, "%s: %s, %s, %d steps, %s on %s (%s)\n", pr.Prog.Name, sizeString(s.Shape), res.Type, o.Steps, pl, props.Name, props.Backend)
	r, err := gpurun.Prepare(dev, s, pl)
	if err != nil {
		return err
	}
	defer r.Close()
	for _, line := range r.KernelReport() {
		fmt.Fprintln(stdout, line)
	}
	ms, err := r.Timed(o.Steps)
	if err != nil {
		return err
	}
	res.Seconds = ms / 1e3
	return r.Download()
}

// DefaultPlan is the plan used when none is given and nothing is tuned.
func DefaultPlan(p *ir.Program) string {
	return "tiled"
}

func newBar(o RunOptions, stderr io.Writer, what string) *progressbar.ProgressBar {
	if o.Quiet || o.Steps < 2 {
		return nil
	}
	if f, ok := stderr.(*os.File); !ok || !isTerminal(f) {
		return nil
	}
	return progressbar.NewOptions(o.Steps, progressbar.OptionSetWriter(stderr), progressbar.OptionSetDescription(what),
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
			if err := gridio.WriteNPY(path, a); err != nil {
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
