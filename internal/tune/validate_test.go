package tune

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"tempest/internal/gpu"
	"tempest/internal/ir"
	"tempest/internal/load"
	"tempest/internal/probe"
	"tempest/internal/ref"
	"tempest/internal/state"
)

// TestValidateAN5D is the tuner's validation on a GPU (issue item 6): for every AN5D example
// at the benchmark sizes (16384^2 or 512^3 interior cells plus the fixed rim) it runs the
// model-pruned search (top-5) and the exhaustive search of the same space, and reports per
// stencil the best plan of each, their ratio, the Spearman rank correlation of the model's
// predictions with the exhaustive measurements, and the tuning times.
//
// It is skipped unless TEMPEST_TUNE_VALIDATE=1. Build the binary here and run it on the GPU
// machine from this directory (it reads ../../examples):
//
//	CGO_ENABLED=0 go test -c -o .gpu/tune.test ./internal/tune
//	cd internal/tune && TEMPEST_TUNE_VALIDATE=1 TEMPEST_TUNE_REPORT=/tmp/tune-report.md \
//	    ../../.gpu/tune.test -test.run ValidateAN5D -test.v -test.timeout 0
//
// Settings (environment):
//
//	TEMPEST_TUNE_REPORT      markdown report, rewritten after every stencil (default: test log only)
//	TEMPEST_TUNE_BACKEND     cuda (default), opencl or auto
//	TEMPEST_TUNE_SUITE       the examples folder: an5d (default) or inplane (then 3D sizes
//	                         default to the in-plane paper's 512x512x256, x y z)
//	TEMPEST_TUNE_STENCILS    comma-separated names (default: all of the suite)
//	TEMPEST_TUNE_TYPE        f32 (default) or f64
//	TEMPEST_TUNE_N2D, _N3D   interior extent (default 16384 and 512)
//	TEMPEST_TUNE_NZ          3D extent along the slowest axis (default: _N3D; inplane: 256)
//	TEMPEST_TUNE_STEPS       steps per timed run (default: about 50 ms by the best prediction)
//	TEMPEST_TUNE_REPS        timed runs per candidate after a warm-up (default 3)
//	TEMPEST_TUNE_STRATEGIES  comma-separated strategies (default: all)
//	TEMPEST_TUNE_FASTMATH    1: every candidate compiled with fast math (AN5D's setting)
//	TEMPEST_TUNE_TOPONLY     1: only the top-5 tuner (to set against an earlier exhaustive run)
//	TEMPEST_TUNE_MODE        the pruned search set against exhaustive: topk (default, k = 5),
//	                         beta or topk+beta (beta = 5%); the report still says "top-5"
//	TEMPEST_CACHE_DIR        where the device profile is read (or probed and saved)
//
// No tuning cache is used: both searches measure from scratch.
func TestValidateAN5D(t *testing.T) {
	if os.Getenv("TEMPEST_TUNE_VALIDATE") != "1" {
		t.Skip("set TEMPEST_TUNE_VALIDATE=1 to run the tuner's validation on a GPU")
	}
	backend := envOr("TEMPEST_TUNE_BACKEND", "cuda")
	dev, err := gpu.Open(backend)
	if err != nil {
		t.Fatalf("opening %s: %v", backend, err)
	}
	defer dev.Close()
	props := dev.Props()
	prof, err := probe.Load(props, "")
	if err != nil {
		t.Logf("no saved profile of %s (%v): probing", props.Name, err)
		if prof, err = probe.Run(dev, probe.Options{Log: os.Stderr}); err != nil {
			t.Fatal(err)
		}
		if path, err := probe.Save(prof, ""); err == nil {
			t.Logf("profile saved to %s", path)
		}
	}
	t.Logf("device profile:\n%s", prof.Table())

	suite := envOr("TEMPEST_TUNE_SUITE", "an5d")
	files, _ := filepath.Glob("../../examples/" + suite + "/*.stencil")
	if only := os.Getenv("TEMPEST_TUNE_STENCILS"); only != "" {
		var keep []string
		for _, f := range files {
			name := strings.TrimSuffix(filepath.Base(f), ".stencil")
			if strings.Contains(","+only+",", ","+name+",") {
				keep = append(keep, f)
			}
		}
		files = keep
	}
	if len(files) == 0 {
		t.Fatal("no stencils")
	}
	var opt load.Options
	if ty := os.Getenv("TEMPEST_TUNE_TYPE"); ty != "" {
		typ, ok := ir.ParseType(ty)
		if !ok {
			t.Fatalf("TEMPEST_TUNE_TYPE=%s", ty)
		}
		opt.DefaultType = &typ
	}
	n2, n3 := envInt("TEMPEST_TUNE_N2D", 16384), envInt("TEMPEST_TUNE_N3D", 512)
	nz := n3
	if suite == "inplane" {
		nz = 256
	}
	nz = envInt("TEMPEST_TUNE_NZ", nz)
	base := Options{Seed: 1, Steps: envInt("TEMPEST_TUNE_STEPS", 0), Reps: envInt("TEMPEST_TUNE_REPS", 3), Profile: prof, Log: os.Stderr}
	if s := os.Getenv("TEMPEST_TUNE_STRATEGIES"); s != "" {
		base.Strategies = strings.Split(s, ",")
	}
	base.FastMath = os.Getenv("TEMPEST_TUNE_FASTMATH") == "1"
	pruned, err := ParseMode(envOr("TEMPEST_TUNE_MODE", "topk"))
	if err != nil || pruned == Exhaustive {
		t.Fatalf("TEMPEST_TUNE_MODE: want topk, beta or topk+beta (%v)", err)
	}

	var rows []validationRow
	var topOnly []string
	for _, f := range files {
		p, err := load.File(f, opt)
		if err != nil {
			t.Fatal(err)
		}
		n := n2
		if p.Dims() == 3 {
			n = n3
		}
		shape := make([]int, p.Dims())
		for a := range shape {
			r := 0
			for _, u := range p.Updates {
				r = max(r, u.Grid.Rim[a])
			}
			shape[a] = n + 2*r
			if a == 0 && p.Dims() == 3 {
				shape[a] = nz + 2*r
			}
		}
		s, err := state.New(p, shape, state.DefaultParams(p), 1.5)
		if err != nil {
			t.Fatal(err)
		}
		ref.Init(s)
		cells := 1.0
		for a, e := range shape {
			r := 0
			for _, u := range p.Updates {
				r = max(r, u.Grid.Rim[a])
			}
			cells *= float64(e - 2*r)
		}

		fmt.Fprintf(os.Stderr, "== %s %v %s: top-5\n", p.Name, shape, strings.TrimPrefix(f, "../../"))
		o := base
		o.Mode, o.K, o.Beta = pruned, 5, 5
		top, err := Tune(dev, s, o)
		if err != nil {
			t.Errorf("%s top-5: %v", p.Name, err)
			continue
		}
		if os.Getenv("TEMPEST_TUNE_TOPONLY") == "1" {
			// Only the model-pruned tuner, to compare with an exhaustive run made before.
			line := fmt.Sprintf("| %s | %s | `%s` | %.1f | %d | %.0f s |\n", p.Name, strings.Trim(strings.ReplaceAll(fmt.Sprint(shape), " ", "x"), "[]"),
				top.Best.Plan, cells/top.Best.SecondsPerStep/1e9, top.Measured, top.Elapsed.Seconds())
			topOnly = append(topOnly, line)
			t.Logf("top-5 %s", line)
			if path := os.Getenv("TEMPEST_TUNE_REPORT"); path != "" {
				head := "| stencil | size | best top-5 | GCells/s | timed | time |\n|---|---|---|---|---|---|\n"
				if err := os.WriteFile(path, []byte(head+strings.Join(topOnly, "")), 0o644); err != nil {
					t.Errorf("writing the report: %v", err)
				}
			}
			continue
		}
		fmt.Fprintf(os.Stderr, "== %s %v %s: exhaustive\n", p.Name, shape, strings.TrimPrefix(f, "../../"))
		o = base
		o.Mode, o.NoRefine = Exhaustive, true // the space alone: what the model ranks
		all, err := Tune(dev, s, o)
		if err != nil {
			t.Errorf("%s exhaustive: %v", p.Name, err)
			continue
		}
		row := validationRow{name: p.Name, shape: shape, cells: cells, top: top, all: all}
		row.compute()
		rows = append(rows, row)
		t.Logf("%s", row.line())
		writeReport(t, rows, props, prof, base)
	}
}

type validationRow struct {
	name       string
	shape      []int
	cells      float64
	top, all   *Result
	rho        float64 // Spearman: predicted vs measured over the exhaustive measurements
	sameRun    float64 // exhaustive's own time for top-5's best plan / exhaustive best
	modelPick  float64 // exhaustive's time for the model's first choice / exhaustive best
	nMeasured  int
	nViable    int
	nTopTimed  int
	modelFirst string
}

func (r *validationRow) compute() {
	var pred, meas []float64
	byPlan := map[string]*Candidate{}
	first := true
	for _, c := range r.all.Candidates {
		if c.Status != Pruned {
			r.nViable++
		}
		if c.Status != Measured {
			continue
		}
		byPlan[c.Plan.String()] = c
		pred = append(pred, c.Predicted)
		meas = append(meas, c.SecondsPerStep)
		if first {
			r.modelFirst, first = c.Plan.String(), false
		}
	}
	r.nMeasured = len(pred)
	r.rho = Spearman(pred, meas)
	best := r.all.Best.SecondsPerStep
	r.sameRun, r.modelPick = math.NaN(), math.NaN()
	if c := byPlan[r.top.SpaceBest.Plan.String()]; c != nil {
		r.sameRun = c.SecondsPerStep / best
	}
	if c := byPlan[r.modelFirst]; c != nil {
		r.modelPick = c.SecondsPerStep / best
	}
	r.nTopTimed = r.top.Measured
}

func (r *validationRow) gcells(c *Candidate) float64 { return r.cells / c.SecondsPerStep / 1e9 }

func (r *validationRow) line() string {
	return fmt.Sprintf("%s: exhaustive best %s %.1f GCells/s (%d timed, %.0f s); top-5 best %s %.1f GCells/s (%d timed, %.0f s); top-5/exhaustive %.3f (same run %.3f); model's first pick %.3f; spearman %.3f; refined %s %.1f GCells/s",
		r.name, r.all.Best.Plan, r.gcells(r.all.Best), r.nMeasured, r.all.Elapsed.Seconds(), r.top.SpaceBest.Plan, r.gcells(r.top.SpaceBest), r.nTopTimed,
		r.top.Elapsed.Seconds(), r.all.Best.SecondsPerStep/r.top.SpaceBest.SecondsPerStep, 1/r.sameRun, 1/r.modelPick, r.rho, r.top.Best.Plan, r.gcells(r.top.Best))
}

func writeReport(t *testing.T, rows []validationRow, props gpu.Props, prof *probe.Profile, o Options) {
	var b strings.Builder
	fmt.Fprintf(&b, "# Tuner validation: model-pruned top-5 against exhaustive search\n\n")
	fmt.Fprintf(&b, "%s, %s (%s; %s), %s. Profile: DRAM copy %.0f GB/s, shared %.0f GB/s, FMA %.0f GFLOP/s, launch %.1f us%s.\n",
		time.Now().UTC().Format("2006-01-02"), props.Name, props.Backend, props.Driver, props.Compiler, prof.DRAMCopyGBs, prof.SharedF32GBs,
		prof.FMAF32GFLOPs, prof.LaunchUs, map[bool]string{true: " (estimated)", false: ""}[prof.Estimated])
	steps := "about 50 ms per timed run (steps chosen per candidate after a short warm-up)"
	if o.Steps > 0 {
		steps = fmt.Sprintf("%d steps per timed run", o.Steps)
	}
	mathMode := "exact math"
	if o.FastMath {
		mathMode = "fast math"
	}
	fmt.Fprintf(&b, "Median of %d timed runs after a warm-up, %s, %s. GCells/s counts interior cells.\n\n", o.Reps, steps, mathMode)
	fmt.Fprintf(&b, "| stencil | size | plans | best exhaustive | GCells/s | best top-5 | GCells/s | top-5 / exh. | same run | model's pick | Spearman | exh. time | top-5 time | refined top-5 | GCells/s |\n")
	fmt.Fprintf(&b, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	var ratios, same, picks, rhos []float64
	for _, r := range rows {
		size := strings.Trim(strings.ReplaceAll(fmt.Sprint(r.shape), " ", "x"), "[]")
		ratio := r.all.Best.SecondsPerStep / r.top.SpaceBest.SecondsPerStep
		refined := "-"
		if r.top.Best != r.top.SpaceBest {
			refined = "`" + r.top.Best.Plan.String() + "`"
		}
		fmt.Fprintf(&b, "| %s | %s | %d (%d timed) | `%s` | %.1f | `%s` | %.1f | %.3f | %.3f | %.3f | %.3f | %.0f s | %.0f s (%d timed) | %s | %.1f |\n",
			r.name, size, r.nViable, r.nMeasured, r.all.Best.Plan, r.gcells(r.all.Best), r.top.SpaceBest.Plan, r.gcells(r.top.SpaceBest),
			ratio, 1/r.sameRun, 1/r.modelPick, r.rho, r.all.Elapsed.Seconds(), r.top.Elapsed.Seconds(), r.nTopTimed, refined, r.gcells(r.top.Best))
		ratios, same, picks, rhos = append(ratios, ratio), append(same, 1/r.sameRun), append(picks, 1/r.modelPick), append(rhos, r.rho)
	}
	fmt.Fprintf(&b, "| geometric mean / mean | | | | | | | %.3f | %.3f | %.3f | %.3f | | | | |\n\n", geomean(ratios), geomean(same), geomean(picks), mean(rhos))
	fmt.Fprintf(&b, "top-5 / exh.: GCells/s of top-5's best over exhaustive's best (two separate runs: timing noise can make it exceed 1).\n")
	fmt.Fprintf(&b, "same run: exhaustive's own measurement of top-5's best plan over exhaustive's best (no run-to-run noise).\n")
	fmt.Fprintf(&b, "model's pick: the same for the model's first-ranked plan, untimed (what `tempest run --tune model` would take).\n")
	fmt.Fprintf(&b, "Spearman: rank correlation of the uncalibrated predictions with the exhaustive measurements.\n")
	fmt.Fprintf(&b, "top-5 time includes the pyramid calibration runs (PH=1, PH=2), compilation and the refinement.\n")
	fmt.Fprintf(&b, "best top-5: the best plan of the space that top-5 timed; refined top-5: the variant of it (register cap, prefetch) that the refinement found faster, if any (the exhaustive run is not refined).\n")
	if path := os.Getenv("TEMPEST_TUNE_REPORT"); path != "" {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Errorf("writing the report: %v", err)
		}
	}
	t.Logf("\n%s", b.String())
}

func geomean(xs []float64) float64 {
	s, n := 0.0, 0
	for _, x := range xs {
		if x > 0 && !math.IsNaN(x) {
			s += math.Log(x)
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return math.Exp(s / float64(n))
}

func mean(xs []float64) float64 {
	s, n := 0.0, 0
	for _, x := range xs {
		if !math.IsNaN(x) {
			s += x
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return s / float64(n)
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func envInt(k string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(k)); err == nil && v > 0 {
		return v
	}
	return def
}
