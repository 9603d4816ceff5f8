package driver

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"tempest/internal/state"
	"time"

	"tempest/internal/gpu"
	"tempest/internal/ir"
	"tempest/internal/plan"
	"tempest/internal/tune"
)

// Version is Tempest's version, part of every tuning cache key; cmd/tempest sets it.
var Version = "0.1.0-dev"

// TuneOptions are the settings of `tempest tune`.
type TuneOptions struct {
	File, Size, Type string
	Params           []string
	Seed             uint64
	Backend          string // auto | cuda | opencl
	Mode             string // topk | beta | exhaustive
	K                int
	Beta             float64
	Steps            int      // steps per timed run (0: automatic)
	Reps             int      // timed runs per candidate (0: 3)
	Strategies       []string // restrict the search (nil: every strategy)
	FastMath         bool     // compile every candidate with fast math (a separate cache entry)
	Fresh            bool     // measure again what the cache already holds
	NoRefine         bool     // skip the refinement of the best plans (register caps, prefetch, chunks, vec)
	// Budget bounds the search's wall time (0: none); a search it cuts short resumes from
	// the cache next time.
	Budget time.Duration
	// Parts, above 1, tunes one sub-domain of a run split into that many along its slowest
	// axis (--gpus, --ranks, --subdomains), whose plan such runs look up first.
	Parts int
	// Split is the run's --split with Parts: 1d (or "") or PxQ; the tuned shape is one part's.
	Split string
	JSON  bool
	Quiet bool
}

// TuneModes are the values of `tempest run --tune`.
var TuneModes = []string{"none", "cached", "model", "full"}

// CheckTuneMode validates a `--tune` value ("" is the default: cached, else model).
func CheckTuneMode(mode string) error {
	if mode == "" {
		return nil
	}
	for _, m := range TuneModes {
		if mode == m {
			return nil
		}
	}
	return fmt.Errorf("--tune %q: choose none, cached, model or full (default: cached, else model)", mode)
}

// Tune carries out `tempest tune`: it searches the plan space of a program at a size on the
// device, records every measurement in the tuning cache (resuming what is there) and prints
// the candidates and the best plan.
func Tune(o TuneOptions, stdout, stderr io.Writer) error {
	began := time.Now() // --budget bounds the command: preparing the state counts
	mode, err := tune.ParseMode(o.Mode)
	if err != nil {
		return fmt.Errorf("--mode: %w", err)
	}
	if o.Backend == "cpu" {
		return tuneCPU(o, stdout, stderr)
	}
	dev, err := openGPUBackend(o.Backend)
	if err != nil {
		return err
	}
	defer dev.Close()
	size, err := tuneSize(o)
	if err != nil {
		return err
	}
	pr, err := Prepare(RunOptions{File: o.File, Size: size, Type: o.Type, Params: o.Params, Seed: o.Seed}, 1.5)
	if err != nil {
		return err
	}
	var log io.Writer
	if !o.Quiet {
		log = stderr
	}
	if o.Parts > 1 && log != nil {
		fmt.Fprintf(log, "tuning one sub-domain of a run split %d ways: %s\n", o.Parts, size)
	}
	prof := loadDeviceProfile(dev, true, log)
	cache, err := tune.OpenCache("")
	if err != nil {
		return err
	}
	opt := tune.Options{Mode: mode, K: o.K, Beta: o.Beta, Seed: o.Seed, Steps: o.Steps, Reps: o.Reps, Strategies: o.Strategies,
		FastMath: o.FastMath, Profile: prof, Cache: cache, Version: Version, Log: log, NoRefine: o.NoRefine, Budget: o.Budget, Start: began}
	if !o.Quiet {
		opt.Progress = stderr
	}
	if o.Fresh {
		opt.Cache = nil
	}
	s := pr.State
	props := dev.Props()
	if log != nil {
		fmt.Fprintf(log, "tuning %s: %s, %s, %s, on %s (%s), mode %s\n", pr.Prog.Name, sizeString(s.Shape), pr.Prog.DefaultType, mathName(o.FastMath),
			props.Name, props.Backend, mode)
	}
	res, err := tune.Tune(dev, s, opt)
	if o.Fresh && res != nil {
		// Measured afresh: the results still go to the cache.
		for _, c := range res.Selected() {
			cache.Put(res.Key, recordOf(c, res, s.Shape))
		}
	}
	if err != nil {
		if res != nil && !o.JSON {
			tune.Report(stdout, res, 3)
		}
		return err
	}
	cells := UpdatedCells(s)
	if o.JSON {
		return writeTuneJSON(stdout, res, cells)
	}
	tune.Report(stdout, res, 3)
	b := res.Best
	fmt.Fprintf(stdout, "\nbest: %s  %.4f ms/step, %.1f GCells/s (predicted %.4f ms/step, %s)\n", b.Plan, b.SecondsPerStep*1e3,
		cells/b.SecondsPerStep/1e9, b.Predicted*1e3, b.Pred.Bottleneck)
	if sb := res.SpaceBest; sb != nil && sb != b {
		fmt.Fprintf(stdout, "refined from %s (%.1f GCells/s): %.1f%% faster\n", sb.Plan, cells/sb.SecondsPerStep/1e9, (sb.SecondsPerStep/b.SecondsPerStep-1)*100)
	}
	fmt.Fprintf(stdout, "%d measured, %d failed, %d pruned, %d from the cache; up to %d steps per timed run; %.1f s (%.1f s timing, %.1f s waiting for compilations)\n",
		res.Measured, res.Failed, res.Pruned, res.Resumed, res.Steps, res.Elapsed.Seconds(), res.Timing.Seconds(), res.Waited.Seconds())
	if res.Skipped > 0 {
		fmt.Fprintf(stdout, "the time budget (--budget %v) was spent with %d candidates untimed: run again to go on from the cache, or give a longer budget (0: none)\n", o.Budget, res.Skipped)
	}
	if !o.Fresh {
		fmt.Fprintf(stdout, "cached in %s (key %s, size class %s)\n", cache.Dir, res.Key.ID(), res.Key.SizeClass)
	}
	if prof.Estimated {
		fmt.Fprintln(stdout, "note: the model used estimated device rates; run `tempest probe` for measured ones")
	}
	return nil
}

// tuneSize is the size `tempest tune` measures at: the given one (or the program's default),
// or with Parts one sub-domain of it (SubdomainShape).
func tuneSize(o TuneOptions) (string, error) {
	if o.Parts <= 1 {
		return o.Size, nil
	}
	p, err := loadRunProgram(RunOptions{File: o.File, Type: o.Type, Params: o.Params}, o.Type)
	if err != nil {
		return "", err
	}
	size := o.Size
	if size == "" {
		size = defaultSizes[p.Dims()]
	}
	shape, err := state.ParseShape(p, size)
	if err != nil {
		return "", err
	}
	part, ok, err := subdomainShapeFor(shape, o.Parts, o.Split)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("--split %s: the split model picks that grid when the run starts; tune for the grid it picks (--split PxQ, as the run reports it) or for slabs (1d)", o.Split)
	}
	return sizeString(part), nil
}

// mathName says how plans are compiled, for reports.
func mathName(fast bool) string {
	if fast {
		return "fast math"
	}
	return "exact math"
}

func recordOf(c *tune.Candidate, res *tune.Result, shape []int) tune.Record {
	return tune.Record{Plan: c.Plan.String(), Status: c.Status, Reason: c.Reason, SecondsPerStep: c.SecondsPerStep, SamplesMs: c.SamplesMs,
		Steps: c.Steps, Predicted: c.Predicted, Bottleneck: string(c.Pred.Bottleneck), Regs: c.Regs, Shape: shape,
		When: time.Now().UTC().Truncate(time.Second)}
}

type tuneJSON struct {
	Key        tune.Key        `json:"key"`
	KeyID      string          `json:"keyId"`
	Mode       tune.Mode       `json:"mode"`
	Steps      int             `json:"stepsPerRun"`
	Seconds    float64         `json:"tuningSeconds"`
	Timing     float64         `json:"timingSeconds"`  // of Seconds: setting up and timing candidates
	Waited     float64         `json:"waitingSeconds"` // of Seconds: waiting for compilations
	Best       string          `json:"best"`
	SpaceBest  string          `json:"spaceBest"` // the best plan of the enumerated space, before the refinement
	BestGCells float64         `json:"bestGCellsPerSecond"`
	Measured   int             `json:"measured"`
	Failed     int             `json:"failed"`
	Pruned     int             `json:"pruned"`
	Resumed    int             `json:"resumed"`
	Candidates []candidateJSON `json:"candidates"`
}

type candidateJSON struct {
	Rank           int     `json:"rank"`
	Plan           string  `json:"plan"`
	Status         string  `json:"status"`
	Reason         string  `json:"reason,omitempty"`
	Predicted      float64 `json:"predictedSecondsPerStep,omitempty"`
	Bottleneck     string  `json:"bottleneck,omitempty"`
	SecondsPerStep float64 `json:"secondsPerStep,omitempty"`
	Regs           int     `json:"regs,omitempty"`
	Cached         bool    `json:"cached,omitempty"`
	Refined        bool    `json:"refined,omitempty"`
}

func writeTuneJSON(w io.Writer, r *tune.Result, cells float64) error {
	out := tuneJSON{Key: r.Key, KeyID: r.Key.ID(), Mode: r.Mode, Steps: r.Steps, Seconds: r.Elapsed.Seconds(), Timing: r.Timing.Seconds(), Waited: r.Waited.Seconds(), Best: r.Best.Plan.String(), SpaceBest: r.SpaceBest.Plan.String(),
		BestGCells: cells / r.Best.SecondsPerStep / 1e9, Measured: r.Measured, Failed: r.Failed, Pruned: r.Pruned, Resumed: r.Resumed}
	for _, c := range r.Candidates {
		out.Candidates = append(out.Candidates, candidateJSON{Rank: c.Rank, Plan: c.Plan.String(), Status: string(c.Status), Reason: c.Reason,
			Predicted: c.Predicted, Bottleneck: string(c.Pred.Bottleneck), SecondsPerStep: c.SecondsPerStep, Regs: c.Regs, Cached: c.Cached, Refined: c.Refined})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// TuneList carries out `tempest tune --list`: what the tuning cache holds.
func TuneList(asJSON bool, stdout io.Writer) error {
	cache, err := tune.OpenCache("")
	if err != nil {
		return err
	}
	es, err := cache.List()
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if es == nil {
			es = []*tune.Entry{}
		}
		return enc.Encode(es)
	}
	_, err = io.WriteString(stdout, tune.ListText(es, cache.Dir))
	return err
}

// ChoosePlan picks the plan of `tempest run --tune MODE` when no --plan is given:
//
//	none    DefaultPlan
//	cached  the best measured plan in the tuning cache for this stencil, type, size class,
//	        device, version and math mode; DefaultPlan when there is none
//	model   the best plan by the performance models that compiles (nothing is timed)
//	full    tune now (top-5, resuming the cache) and take the best measured plan
//	""      cached, else model
//
// With fast set, plans are compiled with fast math and the cache entry of fast searches is
// used. It reports its choice on log (nil: silent). An error means the mode could not choose
// (no cache entry for "cached" falls back instead of failing).
func ChoosePlan(dev gpu.Device, pr *Prepared, mode string, fast bool, log io.Writer) (plan.Plan, error) {
	if err := CheckTuneMode(mode); err != nil {
		return plan.Plan{}, err
	}
	p, s := pr.Prog, pr.State
	say := func(format string, a ...any) {
		if log != nil {
			fmt.Fprintf(log, format+"\n", a...)
		}
	}
	def := func() (plan.Plan, error) { return parsePlan(DefaultPlan(p), p, fast) }
	if mode == "none" {
		return def()
	}
	if mode == "" || mode == "cached" {
		pl, b, err := cachedPlan(dev, p, s.Shape, fast)
		if err != nil {
			say("note: %v", err)
		} else if b != nil {
			say("plan %s from the tuning cache (%.4f ms/step measured at %v)", pl, b.SecondsPerStep*1e3, sizeString(b.Shape))
			return pl, nil
		}
		if mode == "cached" {
			hint := "`tempest tune`"
			if fast {
				hint = "`tempest tune --fastmath`"
			}
			say("no tuned plan for %s at size class %s (%s) on this device: using the default (run %s to fill the cache)", p.Name, tune.SizeClass(s.Shape), mathName(fast), hint)
			return def()
		}
		mode = "model"
	}
	prof := loadDeviceProfile(dev, false, nil)
	opt := tune.Options{Profile: prof, Version: Version, FastMath: fast}
	if mode == "model" {
		o := opt
		o.Log = log
		c, err := tune.Pick(dev, s, o)
		if err != nil {
			return plan.Plan{}, err
		}
		est := ""
		if prof.Estimated {
			est = ", estimated device rates"
		}
		say("plan %s chosen by the model (predicted %.4f ms/step, %s%s)", c.Plan, c.Predicted*1e3, c.Pred.Bottleneck, est)
		return c.Plan, nil
	}
	// full
	cache, err := tune.OpenCache("")
	if err != nil {
		return plan.Plan{}, err
	}
	opt.Profile = loadDeviceProfile(dev, true, log)
	opt.Cache, opt.Mode, opt.Log, opt.Progress = cache, tune.TopK, nil, log
	opt.Budget = time.Minute // as `tempest tune`'s default: a run tunes in a minute at most
	res, err := tune.Tune(dev, s, opt)
	if err != nil {
		return plan.Plan{}, err
	}
	say("plan %s tuned: %.4f ms/step (%d measured, %d from the cache, %.1f s)", res.Best.Plan, res.Best.SecondsPerStep*1e3, res.Measured, res.Resumed, res.Elapsed.Seconds())
	return res.Best.Plan, nil
}

// cachedPlan is the tuning cache's best plan for p at shape's size class on dev (nil record:
// none); the error is the cache's own (unreadable), not a miss.
func cachedPlan(dev gpu.Device, p *ir.Program, shape []int, fast bool) (plan.Plan, *tune.Record, error) {
	cache, err := tune.OpenCache("")
	if err != nil {
		return plan.Plan{}, nil, nil
	}
	e, err := cache.Load(tune.KeyFor(p, shape, dev.Props(), Version, fast))
	if err != nil {
		return plan.Plan{}, nil, err
	}
	if b := e.Best(); b != nil {
		if pl, err := plan.Parse(b.Plan, p); err == nil {
			return pl, b, nil
		}
	}
	return plan.Plan{}, nil, nil
}

// SubdomainShape is the shape tuned for, and looked up in the tuning cache, for a run split
// into parts along its slowest axis: the largest part's owned rows (its halos, a few rows,
// leave the size class as it is).
func SubdomainShape(shape []int, parts int) []int {
	out := append([]int(nil), shape...)
	out[0] = (shape[0] + parts - 1) / parts
	return out
}

// subdomainShapeFor is SubdomainShape for a run split as --split says: slabs (1d, ""), or a
// grid of PxQ parts over the two slowest axes (the largest part's owned cells along each).
// ok is false where the split model picks the grid at run time (2d, auto), which no tuning
// can know beforehand, or where the split does not make parts sub-domains.
func subdomainShapeFor(shape []int, parts int, split string) (out []int, ok bool, err error) {
	sm, err := parseSplit(split)
	if err != nil {
		return nil, false, err
	}
	switch sm.mode {
	case "1d":
		if shape[0] < parts {
			return nil, false, fmt.Errorf("--gpus %d: the slowest axis has %d cells, fewer than the sub-domains", parts, shape[0])
		}
		return SubdomainShape(shape, parts), true, nil
	case "grid":
		if sm.rows*sm.cols != parts {
			return nil, false, fmt.Errorf("--split %dx%d makes %d sub-domains, not %d: make --split and --gpus agree", sm.rows, sm.cols, sm.rows*sm.cols, parts)
		}
		if len(shape) < 2 {
			return nil, false, fmt.Errorf("--split %s: a one-dimensional grid splits along its axis alone (use --split 1d)", split)
		}
		if shape[0] < sm.rows || shape[1] < sm.cols {
			return nil, false, fmt.Errorf("--split %s: the grid's %dx%d cells along its two slowest axes are fewer than the sub-domains", split, shape[0], shape[1])
		}
		out = append([]int(nil), shape...)
		out[0] = (shape[0] + sm.rows - 1) / sm.rows
		out[1] = (shape[1] + sm.cols - 1) / sm.cols
		return out, true, nil
	}
	return nil, false, nil
}

// ChoosePlanName is ChoosePlan for runGPU: the plan's text, DefaultPlan when the choice
// fails (the reason goes to log).
func ChoosePlanName(dev gpu.Device, pr *Prepared, mode string, fast bool, log io.Writer) string {
	pl, err := ChoosePlan(dev, pr, mode, fast, log)
	if err != nil {
		if log != nil {
			fmt.Fprintf(log, "note: --tune %s: %v; using the default plan\n", strings.TrimSpace(mode), err)
		}
		return DefaultPlan(pr.Prog)
	}
	return pl.String()
}

// parsePlan reads a plan's text and, when fast is set, compiles it with fast math unless the
// text says fastmath=... itself (a plan's own setting wins over --fastmath).
func parsePlan(text string, p *ir.Program, fast bool) (plan.Plan, error) {
	pl, err := plan.Parse(text, p)
	if err != nil || !fast {
		return pl, err
	}
	_, args, _ := strings.Cut(text, ":")
	for _, kv := range strings.Split(args, ",") {
		if k, _, _ := strings.Cut(strings.TrimSpace(kv), "="); k == "fastmath" {
			return pl, nil
		}
	}
	pl.FastMath = true
	return pl, nil
}

// TuneStrategies are the strategies `tempest tune` searches (those the model prices), for the
// command line's help: one list, the tuner's own.
func TuneStrategies() []string { return tune.Strategies() }

// PlanHelp is --plan's help: the plans and the keys each takes (plan.Params).
func PlanHelp() string { return plan.Help() }

// PlanGuide is the strategies, one a line with what each does, for the long help of the
// commands that take --plan (plan.Registry).
func PlanGuide() string { return plan.Guide() }
