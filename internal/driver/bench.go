package driver

import (
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"tempest/internal/bench"
	"tempest/internal/cpu"
	"tempest/internal/gpu"
	"tempest/internal/gpurun"
	"tempest/internal/ir"
	"tempest/internal/model"
	"tempest/internal/plan"
	"tempest/internal/probe"
)

// BenchOptions are the settings of `tempest bench`.
type BenchOptions struct {
	Suite     string  // an5d | sl | lift | inplane | schafer-fey | all
	Type      string  // element type of every program ("" : each suite's, else the program's own)
	Backend   string  // auto | cuda | opencl | cpu
	Plan      string  // force a plan on every stencil ("" : chosen by Tune)
	Tune      string  // none | cached | model | full ("" : cached, else model)
	Steps     int     // 0: the suite's
	SizeScale float64 // interior extents times this (0 or 1: the benchmark sizes)
	Reps      int     // timed runs per measurement (0: 5); the median is reported
	Stencils  []string
	Scaling   string // stencil of the scaling chart and tuning surface ("" : j2d5pt, else the first n5d-capable one; "none": skip)
	JSON, CSV string
	Report    string // HTML file; charts go beside it as PNG
	Root      string // directory holding examples/ ("" : the current directory)
	NoNaive   bool   // skip the naive comparison runs
	// FastMath compiles every plan with fast math (the chosen ones, the naive comparison and
	// the scaling series), except a --plan that says fastmath=... itself.
	FastMath bool
	Command  []string

	// GPUs, when positive, benchmarks runs split over this many devices against one
	// (benchsplit.go); Link names the interconnect the split model assumes; Overlap (auto, on,
	// off) whether the split runs overlap exchanges with their interiors.
	GPUs    int
	Link    string
	Overlap string
	// Split is --split for the split runs: 1d, 2d, PxQ or auto (the model's choice, reported).
	Split string
}

// benchDevice compiles each kernel source once: runners for repeated measurements get the
// same module, so that every timed run starts from freshly uploaded initial data without
// paying for compilation again.
type benchDevice struct {
	gpu.Device
	mods map[string]gpu.Module
}

type keptModule struct{ gpu.Module }

func (keptModule) Close() error { return nil }

func (d *benchDevice) Compile(name, src string, opt gpu.CompileOptions) (gpu.Module, error) {
	key := fmt.Sprintf("%v|%d|%s", opt.FastMath, opt.MaxRegs, src)
	if m, ok := d.mods[key]; ok {
		return keptModule{m}, nil
	}
	m, err := d.Device.Compile(name, src, opt)
	if err != nil {
		return nil, err
	}
	d.mods[key] = m
	return keptModule{m}, nil
}

func (d *benchDevice) release() {
	keys := make([]string, 0, len(d.mods))
	for k := range d.mods {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		d.mods[k].Close()
	}
	d.mods = map[string]gpu.Module{}
}

type bencher struct {
	o    BenchOptions
	dev  *benchDevice
	prof *probe.Profile
	log  io.Writer
	// overlap says whether split runs (--gpus) overlap exchanges with interiors, why says why.
	overlap bool
	why     string
	// cpuLabel is what computed the CPU engine's last timed run (cpu.Engine.Label).
	cpuLabel string
}

// selectSuites are the suites of --suite, each with --type replacing its element type.
func selectSuites(o BenchOptions) ([]bench.Suite, error) {
	suites, err := bench.Select(o.Suite)
	if err != nil {
		return nil, err
	}
	if o.Type == "" {
		return suites, nil
	}
	if _, ok := ir.ParseType(o.Type); !ok {
		return nil, fmt.Errorf("--type %q: element types are f32, f64, i32 and i64", o.Type)
	}
	out := make([]bench.Suite, len(suites))
	for i, su := range suites {
		su.Type = o.Type
		out[i] = su
	}
	return out, nil
}

// Bench carries out `tempest bench`.
func Bench(o BenchOptions, stdout, stderr io.Writer) (*bench.Report, error) {
	suites, err := selectSuites(o)
	if err != nil {
		return nil, err
	}
	if err := CheckTuneMode(o.Tune); err != nil {
		return nil, err
	}
	if o.Reps <= 0 {
		o.Reps = 5
	}
	if o.SizeScale <= 0 {
		o.SizeScale = 1
	}
	if o.Steps < 0 {
		return nil, fmt.Errorf("--steps %d: the number of steps cannot be negative", o.Steps)
	}
	if o.GPUs > 0 {
		return nil, benchSplit(o, stdout, stderr)
	}
	b := &bencher{o: o, log: stderr}
	rep := &bench.Report{Schema: bench.SchemaVersion, Tempest: Version, CommandLine: o.Command, Suite: o.Suite, Tune: o.Tune, Reps: o.Reps,
		SizeScale: o.SizeScale, FastMath: o.FastMath, Type: o.Type, Anchors: []bench.Anchor{}, Results: []bench.Result{}}
	if rep.Tune == "" {
		rep.Tune = "cached, else model"
	}
	if o.Plan != "" {
		rep.Tune = "--plan " + o.Plan
	}
	for _, a := range bench.AN5DAnchors {
		a.Source, a.Measurement = bench.AnchorSource, bench.AnchorConditions
		rep.Anchors = append(rep.Anchors, a)
	}
	dev, err := openBackend(o.Backend, o.Plan, stderr)
	if err != nil {
		return nil, err
	}
	if dev != nil {
		defer dev.Close()
		b.dev = &benchDevice{Device: dev, mods: map[string]gpu.Module{}}
		defer b.dev.release()
		props := dev.Props()
		rep.Backend, rep.Device, rep.Driver, rep.Compiler = props.Backend, props.Name, props.Driver, props.Compiler
		b.prof = loadDeviceProfile(dev, false, nil)
		rep.Profile = &bench.Profile{DRAMGBs: b.prof.DRAMCopyGBs, FMAF32GFLOPs: b.prof.FMAF32GFLOPs, FMAF64GFLOPs: b.prof.FMAF64GFLOPs, Estimated: b.prof.Estimated,
			NominalF32GFLOPs: probe.NominalPeakGFLOPs(props, 4), NominalF64GFLOPs: probe.NominalPeakGFLOPs(props, 8)}
		if b.prof.Estimated {
			rep.Notes = append(rep.Notes, "no measured profile of this device: roofline and model use estimated rates (run `tempest probe`)")
		}
	} else {
		rep.Backend, rep.Device, rep.Driver, rep.Compiler = "cpu", cpuName(), "-", cpuCompiler()
		rep.Notes = append(rep.Notes, "CPU engine: no plans, so no naive comparison, model prediction, scaling or tuning surface; % roof is of the memory bandwidth (tempest probe --backend cpu), above 100% where steps are blocked in time")
		if b.prof = hostProfile(stderr); b.prof != nil {
			rep.Profile = &bench.Profile{DRAMGBs: b.prof.DRAMCopyGBs}
		}
		if o.FastMath {
			rep.FastMath = false
			rep.Notes = append(rep.Notes, "--fastmath has no effect on the CPU engine, which computes exactly")
		}
	}
	for _, su := range suites {
		steps := su.Steps
		if o.Steps > 0 {
			steps = o.Steps
		}
		rep.Sizes = append(rep.Sizes, bench.SizeRow{Suite: su.Name, Sizes: sizeDoc(su, o.SizeScale, steps)})
		files, err := filepath.Glob(filepath.Join(o.Root, su.Dir, "*.stencil"))
		if err != nil {
			return nil, err
		}
		sort.Strings(files)
		if len(files) == 0 {
			return nil, fmt.Errorf("suite %s: no programs in %s (run tempest bench from the repository root)", su.Name, filepath.Join(o.Root, su.Dir))
		}
		for _, file := range files {
			name := strings.TrimSuffix(filepath.Base(file), ".stencil")
			if len(o.Stencils) > 0 && !contains(o.Stencils, name) {
				continue
			}
			p, err := loadProgram(file, su.Type)
			if err != nil {
				rep.Results = append(rep.Results, bench.Result{Suite: su.Name, Stencil: name, File: filepath.ToSlash(file), Steps: steps, Error: err.Error()})
				continue
			}
			for _, interior := range interiors(su, p.Dims(), o.SizeScale) {
				res := b.one(su, file, name, p, interior, steps)
				rep.Results = append(rep.Results, res)
				if res.Error != "" {
					fmt.Fprintf(stderr, "%s/%s: %s\n", su.Name, name, res.Error)
				} else {
					fmt.Fprintf(stderr, "%s/%s %s: %s, %.3f ms, %.2f GCells/s\n", su.Name, name, bench.SizeText(res.Size), res.Plan, res.Seconds*1e3, res.GCellsPerS)
				}
			}
		}
	}
	if b.dev != nil && o.Scaling != "none" {
		b.scaling(rep, suites)
	}
	rep.WriteTable(stdout)
	if o.JSON != "" {
		if err := bench.WriteFile(o.JSON, rep.WriteJSON); err != nil {
			return rep, fmt.Errorf("--json: %w", err)
		}
		fmt.Fprintf(stdout, "wrote %s\n", o.JSON)
	}
	if o.CSV != "" {
		if err := bench.WriteFile(o.CSV, rep.WriteCSV); err != nil {
			return rep, fmt.Errorf("--csv: %w", err)
		}
		fmt.Fprintf(stdout, "wrote %s\n", o.CSV)
	}
	if o.Report != "" {
		files, err := rep.WriteHTML(o.Report)
		if err != nil {
			return rep, fmt.Errorf("--report: %w", err)
		}
		fmt.Fprintf(stdout, "wrote %s\n", strings.Join(files, ", "))
	}
	return rep, nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// interiors are the interior extents a suite runs a program of d dimensions at.
func interiors(su bench.Suite, d int, scale float64) [][]int {
	var out [][]int
	if d == 3 && len(su.Cubes) > 0 {
		for _, n := range su.Cubes {
			m := bench.Scale(n, scale)
			out = append(out, []int{m, m, m})
		}
		return out
	}
	base, ok := su.Interior[d]
	if !ok {
		// A dimension the suite has no size for: the 2D/3D size's first axes.
		base = []int{1 << 20, 8192, 256}[min(d, 3)-1 : min(d, 3)]
		for len(base) < d {
			base = append(base, base[0])
		}
	}
	in := make([]int, d)
	for i := range in {
		in[i] = bench.Scale(base[i], scale)
	}
	return append(out, in)
}

func sizeDoc(su bench.Suite, scale float64, steps int) string {
	var parts []string
	if len(su.Cubes) > 0 {
		for _, n := range su.Cubes {
			parts = append(parts, strconv.Itoa(bench.Scale(n, scale))+"^3")
		}
	}
	for d := 1; d <= 3; d++ {
		if in, ok := su.Interior[d]; ok {
			sc := make([]int, len(in))
			for i, n := range in {
				sc[i] = bench.Scale(n, scale)
			}
			parts = append(parts, fmt.Sprintf("%dD %s", d, bench.SizeText(sc)))
		}
	}
	typ := su.Type
	if typ == "" {
		typ = "each program's type"
	}
	return fmt.Sprintf("%s interior (plus fixed rims), %d steps, %s; %s", strings.Join(parts, ", "), steps, typ, su.Why)
}

// prepareAt builds the initial state of a program at an interior size (the fixed rim added).
func (b *bencher) prepareAt(file, typ string, p *ir.Program, interior []int) (*Prepared, error) {
	size := make([]int, len(interior))
	copy(size, interior)
	for a := range size {
		rim := 0
		for _, u := range p.Updates {
			if a < len(u.Grid.Rim) {
				rim = max(rim, u.Grid.Rim[a])
			}
		}
		size[a] += 2 * rim
	}
	return Prepare(RunOptions{File: file, Type: typ, Size: bench.SizeText(size), Seed: 1}, 2.5)
}

// timeIt measures a plan (nil: the CPU engine): one warm-up run, then o.Reps timed runs, each
// from the initial data. It also returns the plan's kernels as compiled (nil for the CPU engine).
func (b *bencher) timeIt(pr *Prepared, pl *plan.Plan, steps, reps int) ([]float64, []gpurun.KernelUse, error) {
	init := pr.State
	var out []float64
	var kernels []gpurun.KernelUse
	for i := 0; i <= reps; i++ {
		var sec float64
		if pl == nil {
			st := init.Clone()
			eng := cpu.New(st)
			eng.WaitNative()
			b.cpuLabel = eng.Label()
			start := time.Now()
			eng.Run(steps, nil)
			sec = time.Since(start).Seconds()
		} else {
			st := *init // its own step counter; the arrays are uploaded and never written back
			st.Steps = 0
			r, err := gpurun.Prepare(b.dev, &st, *pl)
			if err != nil {
				return nil, nil, err
			}
			if kernels == nil {
				kernels = r.Kernels()
			}
			ms, err := r.Timed(steps)
			r.Close()
			if err != nil {
				return nil, nil, err
			}
			sec = ms / 1e3
		}
		if i > 0 { // the first run warms up
			out = append(out, sec)
		}
	}
	return out, kernels, nil
}

func (b *bencher) one(su bench.Suite, file, name string, p *ir.Program, interior []int, steps int) bench.Result {
	res := bench.Result{Suite: su.Name, Stencil: name, File: filepath.ToSlash(file), Steps: steps}
	pr, err := b.prepareAt(file, su.Type, p, interior)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	s, sum := pr.State, pr.Summary
	res.Size, res.Type = s.Shape, pr.Prog.DefaultType.String()
	if res.Type == "f32" { // the anchors were measured in float
		res.Anchor = bench.AnchorFor(su.Name, name)
	}
	res.CellsPerStep = UpdatedCells(s)
	res.FLOPsPerCell, res.BytesPerCell = sum.FLOPs, sum.BytesRead+sum.BytesWritten
	if res.BytesPerCell > 0 {
		res.Intensity = float64(res.FLOPsPerCell) / float64(res.BytesPerCell)
	}
	var pl *plan.Plan
	if b.dev != nil {
		name := b.o.Plan
		if name == "" {
			name = ChoosePlanName(b.dev.Device, pr, b.o.Tune, b.o.FastMath, nil)
		}
		x, err := parsePlan(name, pr.Prog, b.o.FastMath)
		if err != nil {
			res.Error = "--plan: " + err.Error()
			return res
		}
		pl = &x
		res.Plan = x.String()
	} else {
		res.Plan = "cpu engine"
	}
	samples, kernels, err := b.timeIt(pr, pl, steps, b.o.Reps)
	if pl == nil {
		res.Plan = "cpu engine (" + b.cpuLabel + ")"
	}
	if err != nil {
		res.Error = err.Error()
		b.dev.releaseIf()
		return res
	}
	res.Samples = samples
	res.Seconds = probe.Median(samples)
	cells := res.CellsPerStep * float64(steps)
	if res.Seconds > 0 {
		res.GCellsPerS = cells / res.Seconds / 1e9
		res.GFLOPPerS = res.GCellsPerS * float64(res.FLOPsPerCell)
		res.GBPerS = res.GCellsPerS * float64(res.BytesPerCell)
	}
	if b.prof != nil && res.BytesPerCell > 0 {
		bound := b.prof.DRAMCopyGBs / float64(res.BytesPerCell)
		peak := b.prof.FMAF32GFLOPs
		if res.Type == "f64" || res.Type == "i64" {
			peak = b.prof.FMAF64GFLOPs
		}
		if res.FLOPsPerCell > 0 && peak > 0 {
			bound = min(bound, peak/float64(res.FLOPsPerCell))
		}
		if bound > 0 {
			res.BoundGCells = bound
			res.RooflinePct = 100 * res.GCellsPerS / bound
		}
	}
	if b.dev != nil {
		props := b.dev.Props()
		res.PeakGFLOPs = typePeak(props, res.Type)
		if res.PeakGFLOPs > 0 && res.GFLOPPerS > 0 {
			res.PeakPct = 100 * res.GFLOPPerS / res.PeakGFLOPs
		}
		res.Shared = sharedUse(props, kernels)
	}
	if res.Anchor != nil && res.Anchor.GCellsPerS > 0 {
		res.SpeedupAnchor = res.GCellsPerS / res.Anchor.GCellsPerS
	}
	if pl != nil {
		if pred, err := model.Predict(model.Input{Prog: pr.Prog, Sum: sum, Plan: *pl, Shape: s.Shape, Steps: steps, Dev: b.prof}); err == nil {
			res.Predicted, res.Bottleneck = pred.Seconds, string(pred.Bottleneck)
		}
		if !b.o.NoNaive {
			nv, err := parsePlan("naive", pr.Prog, b.o.FastMath)
			if err == nil {
				res.NaivePlan = nv.String()
				if nv.String() == pl.String() {
					res.NaiveSeconds = res.Seconds
				} else if ns, _, err := b.timeIt(pr, &nv, steps, b.o.Reps); err == nil {
					res.NaiveSeconds = probe.Median(ns)
				}
				if res.NaiveSeconds > 0 && res.Seconds > 0 {
					res.SpeedupNaive = res.NaiveSeconds / res.Seconds
				}
			}
		}
	}
	b.dev.releaseIf()
	return res
}

// typePeak is the device's nominal floating-point peak for a program's element type: FP32 for
// f32, FP64 for f64, 0 (unknown) for integer types, whose operations no FP peak describes.
func typePeak(props gpu.Props, typ string) float64 {
	switch typ {
	case "f32":
		return probe.NominalPeakGFLOPs(props, 4)
	case "f64":
		return probe.NominalPeakGFLOPs(props, 8)
	}
	return 0
}

// sharedUse is the shared memory of the plan's kernel that takes the most per block (the first
// in launch order among equals) against the device's limits; nil without kernels.
func sharedUse(props gpu.Props, kernels []gpurun.KernelUse) *bench.SharedUse {
	if len(kernels) == 0 {
		return nil
	}
	top := kernels[0]
	for _, k := range kernels[1:] {
		if k.Shared > top.Shared {
			top = k
		}
	}
	limit := props.SharedPerBlockOptin
	if limit <= 0 {
		limit = props.SharedPerBlock
	}
	return bench.NewSharedUse(top.Kernel, top.Shared, limit, top.Blocks, props.SharedPerSM)
}

// releaseIf frees the compiled modules of the last stencil (nil-safe).
func (d *benchDevice) releaseIf() {
	if d != nil {
		d.release()
	}
}

// scaling measures the temporal-depth series and the n5d tuning surface of one stencil.
func (b *bencher) scaling(rep *bench.Report, suites []bench.Suite) {
	target := b.o.Scaling
	var pick *bench.Result
	for i := range rep.Results {
		x := &rep.Results[i]
		if x.Error != "" {
			continue
		}
		if (target != "" && x.Stencil == target) || (target == "" && x.Stencil == "j2d5pt") {
			pick = x
			break
		}
	}
	if pick == nil && target == "" {
		for i := range rep.Results {
			x := &rep.Results[i]
			if x.Error == "" && len(x.Size) >= 2 {
				if p, err := loadProgram(x.File, suiteType(suites, x.Suite)); err == nil {
					if _, err := plan.Parse("n5d", p); err == nil {
						pick = x
						break
					}
				}
			}
		}
	}
	if pick == nil {
		rep.Notes = append(rep.Notes, fmt.Sprintf("scaling and tuning surface: no measured stencil %q", target))
		return
	}
	pr, err := Prepare(RunOptions{File: pick.File, Type: suiteType(suites, pick.Suite), Size: bench.SizeText(pick.Size), Seed: 1}, 2.5)
	if err != nil {
		rep.Notes = append(rep.Notes, "scaling: "+err.Error())
		return
	}
	defer b.dev.release()
	reps := min(b.o.Reps, 3)
	cells := pick.CellsPerStep * float64(pick.Steps)
	measure := func(text string) bench.Point {
		pt := bench.Point{Plan: text}
		pl, err := parsePlan(text, pr.Prog, b.o.FastMath)
		if err != nil {
			pt.Error = err.Error()
			return pt
		}
		pt.Plan = pl.String()
		ts, _, err := b.timeIt(pr, &pl, pick.Steps, reps)
		if err != nil {
			pt.Error = firstLineOf(err.Error())
			return pt
		}
		pt.Seconds = probe.Median(ts)
		if pt.Seconds > 0 {
			pt.GCellsPerS = cells / pt.Seconds / 1e9
		}
		return pt
	}
	sc := &bench.Scaling{Stencil: pick.Stencil, Size: pick.Size, Steps: pick.Steps}
	for _, spec := range []struct {
		name, key string
		n         int
	}{{"n5d", "bt", 8}, {"pyramid", "ph", 4}} {
		se := bench.Series{Name: spec.name, Param: spec.key}
		for v := 1; v <= spec.n; v++ {
			se.Values = append(se.Values, v)
			se.Points = append(se.Points, measure(fmt.Sprintf("%s:%s=%d", spec.name, spec.key, v)))
		}
		sc.Series = append(sc.Series, se)
		fmt.Fprintf(b.log, "scaling %s %s: done\n", pick.Stencil, spec.name)
	}
	rep.Scaling = sc
	su := &bench.Surface{Stencil: pick.Stencil, Strategy: "n5d", Size: pick.Size, Steps: pick.Steps, XParam: "bx", YParam: "bt",
		XValues: []int{32, 64, 128, 256, 512}, YValues: []int{1, 2, 3, 4, 6, 8}}
	for _, bt := range su.YValues {
		row := make([]float64, len(su.XValues))
		plans := make([]string, len(su.XValues))
		for i, bx := range su.XValues {
			pt := measure(fmt.Sprintf("n5d:bx=%d,bt=%d", bx, bt))
			row[i], plans[i] = pt.GCellsPerS, pt.Plan
		}
		su.GCells = append(su.GCells, row)
		su.Plans = append(su.Plans, plans)
	}
	fmt.Fprintf(b.log, "tuning surface %s: done\n", pick.Stencil)
	rep.Surface = su
}

func suiteType(suites []bench.Suite, name string) string {
	for _, s := range suites {
		if s.Name == name {
			return s.Type
		}
	}
	return ""
}

func firstLineOf(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
