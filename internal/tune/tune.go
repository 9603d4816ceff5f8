// Package tune searches the plan space of a stencil on a device: it enumerates the plans of
// every applicable strategy, prunes those that cannot run (threads, shared memory and, after
// compilation, registers), ranks the rest with the performance models of internal/model,
// compiles the best candidates in parallel and times them one at a time, and keeps the results
// in a persistent cache keyed by stencil, element type, size class, device, driver, compiler
// and Tempest's version.
//
// Modes: top-k (the k best predictions), beta (every prediction within beta percent of the
// best, as the in-plane paper prunes), exhaustive (everything). In top-k and beta modes the
// pyramid model is first calibrated from measured PH=1 and PH=2 runs of the pyramid block
// shapes that made the selection (SL's pyramid-height model), and the ranking is redone. A
// candidate that fails to compile or launch is recorded with its reason and skipped; top-k
// then measures the next one. The ranking is deterministic for a seed (ties are broken by a
// seeded hash of the plan).
package tune

import (
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"

	"tempest/internal/analysis"
	"tempest/internal/gpu"
	"tempest/internal/gpurun"
	"tempest/internal/gridio"
	"tempest/internal/ir"
	"tempest/internal/lower"
	"tempest/internal/model"
	"tempest/internal/plan"
	"tempest/internal/probe"
	"tempest/internal/state"
)

// Mode is how many of the ranked candidates are measured.
type Mode string

const (
	TopK       Mode = "topk"
	Beta       Mode = "beta"
	TopKBeta   Mode = "topk+beta" // the k best and every plan within beta percent of the best
	Exhaustive Mode = "exhaustive"
)

// ParseMode reads a mode name.
func ParseMode(s string) (Mode, error) {
	switch Mode(strings.ToLower(strings.TrimSpace(s))) {
	case TopK, "top-k", "":
		return TopK, nil
	case Beta:
		return Beta, nil
	case TopKBeta:
		return TopKBeta, nil
	case Exhaustive, "full", "all":
		return Exhaustive, nil
	}
	return "", fmt.Errorf("tuning mode %q: choose topk, beta, topk+beta or exhaustive", s)
}

// Status is a candidate's state.
type Status string

const (
	Pruned     Status = "pruned"     // cannot run: lowering, validation or the model said so
	Unmeasured Status = "unmeasured" // ranked, not selected
	Measured   Status = "measured"
	Failed     Status = "failed" // compile, register limit or launch failure
)

// Options control a search.
type Options struct {
	Mode Mode
	K    int     // top-k: successful measurements wanted (default 5)
	Beta float64 // beta: percent above the best prediction (default 5)
	Seed uint64
	// Steps is how many steps one timed run advances (0: automatic, about 50 ms per run for
	// each candidate, judged from a short warm-up; see chooseSteps).
	Steps int
	// Reps is the number of timed runs per candidate after one warm-up run (default 3).
	Reps int
	// Parallel is the number of concurrent compilations (default GOMAXPROCS).
	Parallel int
	// Strategies restricts the search (nil: Strategies()).
	Strategies []string
	// FastMath compiles every candidate with fast math (Plan.FastMath), the given Candidates
	// included; it is part of the cache key, so that fast and exact results never mix.
	FastMath bool
	// Candidates replaces the enumerated space (tests, or a user's own list).
	Candidates []plan.Plan
	// Limits replaces the device's limits in validation (tests and what-if studies).
	Limits *plan.Limits
	// Profile is the device profile the models use (nil: estimated from the properties).
	Profile *probe.Profile
	// NoCalibrate skips the pyramid calibration of top-k and beta modes.
	NoCalibrate bool
	// NoRefine skips the refinement of the best measured plan (see refine).
	NoRefine bool
	// Cache keeps results and lets a search resume (nil: nothing is kept).
	Cache   *Cache
	Version string // Tempest's version, part of the cache key
	// Progress receives a progress bar when it is a terminal; Log receives lines of text.
	Progress io.Writer
	Log      io.Writer
	// Budget bounds the search's wall time (0: none): no candidate is timed that would end
	// past it by the median time the candidates so far took, once some candidate has run;
	// what was measured is kept (and cached), so a second search resumes where this one
	// stopped.
	Budget time.Duration
	// Start is when the budget's clock started (zero: when Tune starts): `tempest tune` starts
	// it before it prepares the state, so that the budget bounds the command's wall time.
	Start time.Time
}

// Candidate is one plan of the search.
type Candidate struct {
	Plan           plan.Plan
	Rank           int // 1-based position by prediction (0: pruned)
	Pred           model.Prediction
	Predicted      float64 // predicted seconds per step
	Status         Status
	Reason         string
	SecondsPerStep float64   // measured median per step
	SamplesMs      []float64 // each timed run
	Steps          int
	Regs           int
	SharedBytes    int
	Cached         bool // the measurement comes from the cache (resumed)
	// Refined marks a variant of the space's best plan that the refinement made (a register
	// cap, a deeper prefetch): not part of the enumerated space, so not ranked against it.
	Refined bool

	low *lower.Lowered // lowered by compile when measured, dropped once timed
}

// resume takes a cached record's outcome as the candidate's own.
func (c *Candidate) resume(r *Record) {
	c.Status, c.Reason, c.SecondsPerStep, c.SamplesMs, c.Steps, c.Regs, c.Cached = r.Status, r.Reason, r.SecondsPerStep, r.SamplesMs, r.Steps, r.Regs, true
}

// Result is a search's outcome.
type Result struct {
	Key        Key
	Mode       Mode
	Steps      int          // steps of a timed run (automatic steps: at most; Candidate.Steps has each one's)
	Candidates []*Candidate // viable ones ranked by prediction, then the pruned ones
	Best       *Candidate   // fastest measured (nil if none)
	// SpaceBest is the fastest measured plan of the enumerated space, before the refinement
	// (Best when no refined variant beat it).
	SpaceBest *Candidate
	Elapsed   time.Duration // wall time of the search
	// Counts of this search (resumed records not included in Measured and Failed).
	Measured, Failed, Pruned, Resumed int
	// Skipped counts the candidates the search would have timed after its Budget was spent.
	Skipped      int
	Calibrations []*model.PyramidCal
	// Waited is the part of Elapsed the search spent waiting for a candidate's compilation
	// with nothing to time, and Timing the part spent setting up and timing candidates:
	// where a search's minute goes, and so what a faster search must shorten.
	Waited, Timing time.Duration
}

// Selected are the candidates measured or failed, in rank order.
func (r *Result) Selected() []*Candidate {
	var out []*Candidate
	for _, c := range r.Candidates {
		if c.Status == Measured || c.Status == Failed {
			out = append(out, c)
		}
	}
	return out
}

// limits are the device's limits, or the replacement the options give.
func (o *Options) limits(dev gpu.Device) plan.Limits {
	if o.Limits != nil {
		return *o.Limits
	}
	return gpurun.Limits(dev)
}

func (o *Options) defaults() {
	if o.Mode == "" {
		o.Mode = TopK
	}
	if o.K <= 0 {
		o.K = 5
	}
	if o.Beta <= 0 {
		o.Beta = 5
	}
	if o.Reps <= 0 {
		o.Reps = 3
	}
	if o.Parallel <= 0 {
		o.Parallel = runtime.GOMAXPROCS(0)
	}
}

// Rank enumerates, prunes and ranks the plan space without measuring anything. Viable
// candidates come first in rank order, pruned ones after with their reasons.
func Rank(dev gpu.Device, s *state.State, o Options) ([]*Candidate, error) {
	o.defaults()
	p := s.Prog
	props := dev.Props()
	prof := o.Profile
	if prof == nil {
		prof = probe.Estimate(props)
	}
	lim := o.limits(dev)
	sum := analysis.Analyze(p)
	for _, name := range o.Strategies {
		if _, ok := plan.Lookup(name); !ok {
			return nil, fmt.Errorf("unknown strategy %q; the tuner searches %s", name, strings.Join(Strategies(), ", "))
		}
	}
	plans := o.Candidates
	if plans == nil {
		plans = Enumerate(p, s.Shape, o.Strategies, o.FastMath)
		padded := 0
		for i := range plans {
			if oddRows(s.Shape, plans[i]) {
				plans[i].Align, padded = true, padded+1
			}
		}
		if n := s.Shape[len(s.Shape)-1]; padded > 0 && o.Log != nil {
			fmt.Fprintf(o.Log, "rows of %d cells are no multiple of n5d's vectors: %d n5d plans pad them to %d (align)\n", n, padded, plan.RowPitch(n))
		}
	} else {
		plans = slices.Clone(plans)
		for i := range plans {
			plans[i].FastMath = o.FastMath
		}
	}
	if len(plans) == 0 {
		return nil, fmt.Errorf("no plan applies to %s", p.Name)
	}
	cands := make([]*Candidate, len(plans))
	var wg sync.WaitGroup
	sem := make(chan struct{}, o.Parallel)
	for i, pl := range plans {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int, pl plan.Plan) {
			defer func() { <-sem; wg.Done() }()
			cands[i] = newCandidate(s, sum, prof, lim, pl)
		}(i, pl)
	}
	wg.Wait()
	sortCandidates(cands, o.Seed)
	return cands, nil
}

// newCandidate lowers, validates and predicts one plan; a plan that cannot run is Pruned
// with the reason.
func newCandidate(s *state.State, sum *analysis.Summary, prof *probe.Profile, lim plan.Limits, pl plan.Plan) (c *Candidate) {
	p := s.Prog
	c = &Candidate{Plan: pl, Status: Unmeasured}
	defer func() {
		if r := recover(); r != nil {
			c.Status, c.Reason = Pruned, fmt.Sprintf("internal error while lowering or predicting: %v", r)
		}
	}()
	// Only the shared memory is needed here: compile lowers what it measures.
	shared, err := lower.SharedBytes(p, s.Shape, s.Layers, pl)
	if err != nil {
		c.Status, c.Reason = Pruned, err.Error()
		return c
	}
	if err := pl.Validate(p, lim, shared); err != nil {
		c.Status, c.Reason = Pruned, err.Error()
		return c
	}
	c.SharedBytes = shared
	pred, err := model.Predict(model.Input{Prog: p, Sum: sum, Plan: pl, Shape: s.Shape, Steps: 1000, Dev: prof, SharedBytes: shared})
	if err != nil {
		c.Status, c.Reason = Pruned, err.Error()
		return c
	}
	c.Pred, c.Predicted = pred, pred.Seconds/1000
	return c
}

// tiebreak is a seeded hash of a plan's text.
func tiebreak(seed uint64, s string) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d|%s", seed, s)
	return h.Sum64()
}

// sortCandidates orders viable candidates by prediction (ties by the seeded hash) and puts
// pruned ones last in their enumeration order; it sets Rank.
func sortCandidates(cands []*Candidate, seed uint64) {
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if (a.Status == Pruned) != (b.Status == Pruned) {
			return b.Status == Pruned
		}
		if a.Status == Pruned {
			return false
		}
		if a.Predicted != b.Predicted {
			return a.Predicted < b.Predicted
		}
		return tiebreak(seed, a.Plan.String()) < tiebreak(seed, b.Plan.String())
	})
	for i, c := range cands {
		c.Rank = 0
		if c.Status != Pruned {
			c.Rank = i + 1
		}
	}
}

// Tune runs a search on the state's program and size. The state's arrays are uploaded for
// every candidate and never modified (each timed candidate runs on a copy of the state's
// step counter; its results are not downloaded).
func Tune(dev gpu.Device, s *state.State, o Options) (*Result, error) {
	o.defaults()
	start := time.Now()
	if !o.Start.IsZero() {
		start = o.Start
	}
	props := dev.Props()
	if o.Profile == nil {
		o.Profile = probe.Estimate(props)
	}
	res := &Result{Key: KeyFor(s.Prog, s.Shape, props, o.Version, o.FastMath), Mode: o.Mode}
	cands, err := Rank(dev, s, o)
	if err != nil {
		return nil, err
	}
	res.Candidates = cands
	var viable []*Candidate
	for _, c := range cands {
		if c.Status == Pruned {
			res.Pruned++
		} else {
			viable = append(viable, c)
		}
	}
	if len(viable) == 0 {
		return res, fmt.Errorf("no viable plan for %s: %s", s.Prog.Name, cands[0].Reason)
	}
	res.Steps = o.Steps
	quantum := 0
	if res.Steps <= 0 {
		res.Steps, quantum = chooseSteps(viable)
	}
	// Resume: what the cache holds for this key is taken as measured (or failed).
	if o.Cache != nil {
		e, err := o.Cache.Load(res.Key)
		if err != nil {
			return nil, err
		}
		for _, c := range viable {
			if r := e.Lookup(c.Plan.String()); r != nil && (r.Status == Measured || r.Status == Failed) {
				c.resume(r)
				res.Resumed++
			}
		}
	}
	t := &tuner{dev: dev, s: s, o: o, res: res, quantum: quantum, start: start}
	t.startBar()
	defer t.finishBar()
	defer func() { t.initial.Free() }()

	switch o.Mode {
	case Exhaustive:
		t.measure(viable)
	case TopK, Beta, TopKBeta:
		if !o.NoCalibrate {
			t.calibrate(viable)
		}
		withinBeta := func() []*Candidate {
			best := viable[0].Predicted
			var sel []*Candidate
			for _, c := range viable {
				if c.Predicted <= best*(1+o.Beta/100) && c.Status == Unmeasured {
					sel = append(sel, c)
				}
			}
			return sel
		}
		if o.Mode == Beta {
			t.measure(withinBeta())
		} else {
			// The k best that run: walking the ranking, measured candidates (resumed from the
			// cache, or calibration runs that rank this high) count, failed ones are passed
			// over, and unmeasured ones are measured until k have run.
			for {
				ok, next := 0, []*Candidate{}
				for _, c := range viable {
					if ok+len(next) >= o.K {
						break
					}
					switch c.Status {
					case Measured:
						ok++
					case Unmeasured:
						next = append(next, c)
					}
				}
				if len(next) == 0 {
					break
				}
				if t.spent() {
					res.Skipped += len(next)
					break
				}
				t.measure(next)
			}
			if o.Mode == TopKBeta {
				t.measure(withinBeta())
			}
		}
	default:
		return nil, fmt.Errorf("unknown tuning mode %q", o.Mode)
	}
	if !o.NoRefine && o.Mode != Exhaustive && s.Prog.Dims() == 3 {
		t.measure(leaders(viable))
	}
	res.SpaceBest = fastest(res.Candidates)
	if !o.NoRefine && res.SpaceBest != nil {
		t.pickContenders()
		t.refine(t.contenders())
		t.neighbours(fastest(res.Candidates))
		t.runnerUpWalk(runnerUpFactor, false)
		t.spareBudget(viable)
	}
	for _, c := range res.Candidates {
		switch {
		case c.Status == Measured:
			if !c.Cached {
				res.Measured++
			}
		case c.Status == Failed && !c.Cached:
			res.Failed++
		}
	}
	res.Best = fastest(res.Candidates)
	res.Elapsed = time.Since(start)
	if res.Best == nil {
		return res, fmt.Errorf("no candidate of %s could be measured (%d failed, %d pruned)", s.Prog.Name, res.Failed, res.Pruned)
	}
	return res, nil
}

// spareBudget spends what a bounded search has left after its walks on the plans of the
// space it has not timed, of the fastest plan's strategy, best predicted first, k at a time,
// and walks again from a plan of them that overtakes the fastest. The model ranks the plans
// of the forward plane and the in-plane method, which differ in their blocks and steps, almost
// flat (within 4% on star3d3r where the H200 measured them 209 to 268 GCells/s), and the 3D
// stars' and boxes' searches (H200, 2026-11-29) ended after 12-20 s of their minute: star3d3r's
// had timed 5 of its 26 forward-plane plans of the space (and 20 refinements of two of them).
// n5d's space plans lack the settings the walks add (10-40% of the tuned plans' speed), so an
// n5d search spends its rest on walks from other families instead.
func (t *tuner) spareBudget(viable []*Candidate) {
	best := fastest(t.res.Candidates)
	if t.o.Budget <= 0 || best == nil {
		return
	}
	if best.Plan.Strategy == plan.N5D {
		// n5d's space is too wide to time whole: the time left walks from the fastest plans
		// of the families not walked yet, within spareWalkFactor of the fastest, those of a
		// temporal depth not walked first, fastest first. star3d1r's search on the H200
		// (2026-11-29) ended after 37 s of its 60 on 16x32 threads at bt=3, 753 GCells/s,
		// with 16x32 threads at bt=4 25% behind; walked from, that family reached 873
		// (32x32 threads, chunk 424) within the same minute (docs/performance.md).
		for t.runnerUpWalk(spareWalkFactor, true) {
		}
		return
	}
	for !t.spent() {
		var next []*Candidate
		for _, c := range viable {
			if c.Status == Unmeasured && c.Plan.Strategy == best.Plan.Strategy {
				if next = append(next, c); len(next) == max(t.o.K, 1) {
					break
				}
			}
		}
		if len(next) == 0 {
			return
		}
		t.logf("budget left: timing %d more %s plans of the space", len(next), best.Plan.Strategy)
		t.measure(next)
	}
	if b := fastest(t.res.Candidates); b != best && !b.Refined {
		t.refine([]*Candidate{b})
		t.neighbours(fastest(t.res.Candidates))
	}
}

// pickContenders measures the contenders of the space with PickRules' settings, each as a
// contender of the refinement itself: what `tempest run` takes without tuning must not beat
// what a search finds. The suite's float searches (H200, 2026-11-28) ended on plans without
// them where the model's pick had them and ran faster: star2d3r 971.9 GCells/s tuned against
// 1,048.6 picked, star2d4r 800.1 against 874.4 (docs/performance.md, 2026-11-29). Every
// contender gets them, not the fastest alone: the steps after refine only the fastest plan,
// and a family timed with the settings beside others timed without wins by them alone
// (star3d1r's search, the settings on its fastest plan only, took 32x32 threads at bt=3
// to the end, 617 GCells/s; the suite's search of the day before had taken 16x32 threads at
// bt=4 to 785).
func (t *tuner) pickContenders() {
	for _, c := range contenders(t.res.Candidates) {
		t.pickRules(c)
	}
}

// pickRules measures c with PickRules' settings (see pickContenders), unless they add none;
// where they win, c is superseded: the refinement varies the plan with them instead.
func (t *tuner) pickRules(c *Candidate) {
	pl := PickRules(t.s.Prog, t.dev.Props(), c.Plan)
	if pl.String() == c.Plan.String() {
		return
	}
	v := t.variants()(pl)
	if v == nil {
		return
	}
	v.Refined = false // the model's pick: refined as the space's plans are
	t.refined(c, []*Candidate{v})
	if v.Status == Measured && c.Status == Measured && v.SecondsPerStep < c.SecondsPerStep {
		if t.superseded == nil {
			t.superseded = map[*Candidate]bool{}
		}
		t.superseded[c] = true
	}
}

// contenders are the plans the refinement varies (contenders), less those the pick's settings
// superseded (pickRules): their register caps, prefetches and copies are the same family's as
// the plan with the settings, which wins. The searches of 2026-11-29 (H200) spent 9 or 10 of
// their 31-55 timed plans on such a plan's variants (j2d5pt, star2d1r, box3d1r, j3d27pt,
// star3d1r, star3d2r), and none of them led to the plan the search ended with.
func (t *tuner) contenders() []*Candidate {
	var live []*Candidate
	for _, c := range t.res.Candidates {
		if !t.superseded[c] {
			live = append(live, c)
		}
	}
	return contenders(live)
}

// leaders are, of every strategy none of whose plans has been measured (or has failed), its
// best-ranked plan predicted within leaderFactor of the best prediction. The ranking of
// strategies against each other is where the model errs most: on AN5D's star3d3r and
// star3d4r its top five were all naive, the search stopped after 3.5 s of its minute with
// them, and no n5d, stream25d or inplane plan was timed (2026-11-28). One plan each costs a
// compilation and a timed run, and a strategy that wins then gets the refinement. 3D only:
// in 2D n5d won every search of the records, and the 2D searches spend their whole minute
// refining it.
func leaders(viable []*Candidate) []*Candidate {
	if len(viable) == 0 {
		return nil
	}
	tried := map[string]bool{}
	for _, c := range viable {
		if c.Status == Measured || c.Status == Failed {
			tried[c.Plan.Strategy] = true
		}
	}
	var out []*Candidate
	for _, c := range viable {
		if c.Status != Unmeasured || tried[c.Plan.Strategy] || c.Predicted > viable[0].Predicted*leaderFactor {
			continue
		}
		tried[c.Plan.Strategy] = true
		out = append(out, c)
	}
	return out
}

// leaderFactor bounds the predictions of the strategies' leaders (see leaders): the model's
// misrankings of strategies in the suite's searches stayed within 1.5x (star3d3r: naive
// predicted 0.65 ms a step, n5d 0.67; box3d4r: forwardplane 8.47 ms, inplane 8.67), so three
// times leaves room while keeping out what the model puts far behind.
const leaderFactor = 3.0

// fastest is the measured candidate of least time per step (nil if none).
func fastest(cands []*Candidate) *Candidate {
	var best *Candidate
	for _, c := range cands {
		if c.Status == Measured && (best == nil || c.SecondsPerStep < best.SecondsPerStep) {
			best = c
		}
	}
	return best
}

// contenders are the measured plans of the space worth refining: the best and up to two
// more within 10% of it (a plan a little slower as it stands may gain more from a register
// cap, e.g. a deeper block whose registers held fewer blocks resident), fastest first.
func contenders(cands []*Candidate) []*Candidate {
	var out []*Candidate
	for _, c := range near(cands, 1.1) {
		if !c.Refined {
			out = append(out, c)
		}
	}
	return out[:min(len(out), 3)]
}

// refineAsync are the planes ahead that the refinement tries with asynchronous copies
// (n5d's async): one plane ahead is too little to hide the load, and the best depth beyond
// two differs between stencils, so two and a deeper five are measured
// (docs/performance.md, "Measurements once kept in code comments").
var refineAsync = []int{2, 5}

// asyncVariants are an n5d plan with asynchronous copies instead of its prefetch (CUDA on
// sm_80+; the device's limits prune them elsewhere): refineAsync planes ahead, and in 3D,
// for a plan of one row per thread, the deepest of them with two
// rows per thread over the same tile (half the threads) and over a tile twice as tall. Async
// belongs here rather than in the ranked space: what it changes (registers, load latency) is
// what the model cannot rank, and in the space its twins crowded the model's top-5 (box2d1r's
// and j2d9pt-gol's best depths fell out of it; every 3D top-5 became unmeasured 2x2 tiles).
// regs is the plan's compiled registers per thread (0: unknown): the tall tile, twice the
// cells per thread at the same threads, is capped (maxregs) where twice as many would not let
// its block launch within regsPerBlock, and left out where the cap would be below the
// plan's own registers (it would spill most of the second row).
func asyncVariants(p *ir.Program, pl plan.Plan, regs, regsPerBlock int) []plan.Plan {
	if !pl.Takes("async") || pl.Async > 0 {
		return nil
	}
	var out []plan.Plan
	deepest := 0
	for _, a := range refineAsync {
		v := pl
		v.Prefetch, v.Async = 0, a
		if v.Validate(p, plan.Limits{}, 0) == nil {
			out = append(out, v)
			deepest = a
		}
	}
	if deepest == 0 || p.Dims() != 3 || max(pl.RY, 1) > 1 || pl.RX < 2 {
		return out
	}
	if regsPerBlock <= 0 {
		regsPerBlock = 65536
	}
	for _, by := range []int{pl.BY / 2, pl.BY} {
		v := pl
		v.Prefetch, v.Async, v.RY, v.BY = 0, deepest, 2, by
		if by < 1 || v.FitBT(p) != nil || v.BT != pl.BT || v.Validate(p, plan.Limits{}, 0) != nil {
			continue
		}
		if most := regsPerBlock / v.Threads() / 8 * 8; 2*regs > most && (v.MaxRegs == 0 || v.MaxRegs > most) {
			if most < regs {
				continue
			}
			v.MaxRegs = most
		}
		out = append(out, v)
	}
	return out
}

// refinePF are the prefetch distances the refinement tries on an n5d plan (the lowering
// refuses those that do not divide its unrolled round; at most two are kept).
var refinePF = []int{2, 3, 5}

// registerCaps are the register caps (multiples of 8, from 40 up) at which one and two more
// blocks of a kernel with regs registers per thread (capped at maxRegs if positive) reside on
// a multiprocessor; none where threads or shared memory bound the blocks instead.
func registerCaps(props gpu.Props, threads, shared, regs, maxRegs int) []int {
	if props.RegsPerSM <= 0 || regs <= 0 {
		return nil
	}
	limit := regs
	if maxRegs > 0 {
		limit = min(limit, maxRegs)
	}
	var caps []int
	now := gpu.ResidentBlocks(props, threads, shared, limit)
	for want := now + 1; want <= now+2; want++ {
		if gpu.ResidentBlocks(props, threads, shared, 0) < want {
			break
		}
		if c := regCap(props, threads, shared, limit, want); c > 0 && c < limit {
			caps = append(caps, c)
		}
	}
	return caps
}

// regCap is the largest register cap, a multiple of 8 from 40 up to limit, at which want
// blocks of threads and shared bytes reside on a multiprocessor, or 0 if none is.
func regCap(props gpu.Props, threads, shared, limit, want int) int {
	c := limit / 8 * 8
	for c >= 40 && gpu.ResidentBlocks(props, threads, shared, c) < want {
		c -= 8
	}
	if c < 40 {
		return 0
	}
	return c
}

// refine measures variants of measured plans of the space that the models cannot rank: register
// caps that let one or two more blocks reside on a multiprocessor (the compiler then spills a
// little or schedules tighter, which pays for n5d's blocks of many registers), deeper prefetches
// for n5d (pf: a gain on some stencils, a loss on others), and both together; for n5d also
// asynchronous copies instead of the prefetch (asyncVariants). Each plan's own registers, threads
// and shared memory, as compiled, decide the caps, so the variants are measured rather than
// predicted; they join the candidates marked Refined, and the fastest of all is the result.
func (t *tuner) refine(plans []*Candidate) {
	variant := t.variants()
	for _, best := range plans {
		caps := registerCaps(t.dev.Props(), best.Plan.Threads(), best.SharedBytes, best.Regs, best.Plan.MaxRegs)
		pfs := []int{best.Plan.Prefetch}
		// Deeper prefetches are n5d's: the forward plane's halos two or three planes ahead
		// lost on every 3D star its searches timed them on (up to 3.7x slower under a cap).
		if best.Plan.Strategy == plan.N5D && best.Plan.Prefetch <= 1 && best.Plan.Async == 0 {
			for _, pf := range refinePF {
				if lower.N5DRound(t.s.Prog, best.Plan)%pf == 0 && len(pfs) < 3 {
					pfs = append(pfs, pf)
				}
			}
		}
		var vars []*Candidate
		for _, pf := range pfs {
			for _, c := range append([]int{best.Plan.MaxRegs}, caps...) {
				pl := best.Plan
				pl.Prefetch, pl.MaxRegs = pf, c
				if pl == best.Plan {
					continue
				}
				if v := variant(pl); v != nil {
					vars = append(vars, v)
				}
			}
		}
		for _, pl := range asyncVariants(t.s.Prog, best.Plan, best.Regs, t.dev.Props().RegsPerBlock) {
			if v := variant(pl); v != nil {
				vars = append(vars, v)
			}
		}
		t.refined(best, vars)
	}
}

// variants returns the maker of refinement candidates: a plan's candidate marked Refined,
// resumed from the cache where it was measured before, or nil where the limits prune it.
func (t *tuner) variants() func(plan.Plan) *Candidate {
	lim := t.o.limits(t.dev)
	sum := analysis.Analyze(t.s.Prog)
	var cached *Entry
	if t.o.Cache != nil {
		if e, err := t.o.Cache.Load(t.res.Key); err == nil {
			cached = e
		}
	}
	return func(pl plan.Plan) *Candidate {
		v := newCandidate(t.s, sum, t.o.Profile, lim, pl)
		v.Refined = true
		if v.Status == Pruned {
			return nil
		}
		if cached != nil {
			if r := cached.Lookup(pl.String()); r != nil && (r.Status == Measured || r.Status == Failed) {
				v.resume(r)
				t.res.Resumed++
			}
		}
		return v
	}
}

// neighbours measures, after the refinement, the best plan with a stream chunk a quarter
// shorter and a quarter longer (the halo planes a block recomputes against how evenly the
// blocks fill the multiprocessors' last wave, which no model ranks) and, for n5d, with scalar
// global accesses instead of vectors (vec=1: the vectors gain on most 2D stencils and may
// lose in 3D), with phased loops
// and with short rounds (roundVariants), and in 3D with two-row threads (rowVariants); a
// best plan with the rim's blocks at longer chunks (rimBlockChunks); and last the chunks close
// to the best plan's (fineChunks).
func (t *tuner) neighbours(best *Candidate) {
	if best == nil {
		return
	}
	variant := t.variants()
	// A forward-plane block of another shape within 3% of the best, before the best's
	// neighbours are measured, gets its own chunks and planes a step: the first measurements
	// of two shapes often tie, and the one that loses the tie may be the one that gains from
	// them (star3d3r: 64x4 won the tie at chunk 128, 32x8 at chunk 84 is 8% faster than
	// either). Chosen first: the best's neighbours would widen the gap the tie is judged by.
	rival := otherShape(t.res.Candidates, best, 1.03)
	t.refined(best, t.unmeasured(variant, neighbourPlans(t.s.Prog, t.s.Shape, best.Plan, true)))
	if rival != nil {
		t.refined(rival, t.unmeasured(variant, neighbourPlans(t.s.Prog, t.s.Shape, rival.Plan, true)))
	}
	t.combine(variant, best)
	t.compiledSwitches(variant)
	// The two-row variants hold more registers than the plans the refinement capped: the
	// occupancy variants of the plans now within 10% of the best, these among them, are
	// measured last, four at most (the fastest plan may already share an SM with another block
	// and have no such variant, while one a little behind it runs alone and gains from one).
	var occ []*Candidate
	for _, c := range near(t.res.Candidates, 1.1) {
		vars := t.unmeasured(variant, occupancyVariants(t.s.Prog, t.dev.Props(), c.Plan, c.Regs, c.SharedBytes))
		if len(occ)+len(vars) > 4 {
			break
		}
		t.refined(c, vars)
		occ = append(occ, vars...)
	}
	// A shorter block that won is a shape the steps before never saw: its own chunk and loop
	// variants are measured once (short rounds, say, may pay on it).
	if b := fastest(t.res.Candidates); slices.Contains(occ, b) {
		t.refined(b, t.unmeasured(variant, neighbourPlans(t.s.Prog, t.s.Shape, b.Plan, false)))
	}
	// A thread of one more row over the same tile, after all that, and its own neighbours if
	// it wins (deeperRows), then its chunk further the way that won (chunkWalk).
	if b := fastest(t.res.Candidates); b != nil {
		if nb := t.refineShape(variant, b, deeperRows(t.s.Prog, b.Plan)); nb != nil {
			t.chunkWalk(variant, nb)
		}
	}
	// A 3D tile twice as wide or as tall, and its neighbours if it wins (widerTiles).
	if b := fastest(t.res.Candidates); b != nil {
		t.refineShape(variant, b, widerTiles(t.s.Prog, b.Plan))
	}
	// A best plan with the rim's planes in blocks of their own at longer chunks.
	if b := fastest(t.res.Candidates); b != nil {
		t.refined(b, t.unmeasured(variant, rimBlockChunks(t.s.Shape, b.Plan)))
	}
	// The chunks close to the best plan's (fineChunks), and for the forward plane those of
	// the fastest block of another shape within 2% of it: how evenly a chunk's blocks fill
	// the last wave differs between shapes, and two shapes' best chunks tie often (star3d3r
	// on the H200: 64x4 at chunk 84 and 32x8 at chunk 96 0.3% apart, 1.25x AN5D; 32x8 at
	// chunk 84 1.32x in a search the day before; docs/performance.md).
	if b := fastest(t.res.Candidates); b != nil {
		t.refined(b, t.unmeasured(variant, fineChunks(t.s.Shape, b.Plan)))
		if c := otherShape(t.res.Candidates, b, 1.02); c != nil {
			t.refined(c, t.unmeasured(variant, fineChunks(t.s.Shape, c.Plan)))
		}
	}
	// Last, the best plan compiled for the run's size (plan.ConstSize): faster on some plans
	// and slower on others, a change of the code's schedule that only a measurement decides.
	if b := fastest(t.res.Candidates); b != nil && b.Plan.Takes("constsize") && !b.Plan.ConstSize {
		v := b.Plan
		v.ConstSize = true
		t.refined(b, t.unmeasured(variant, []plan.Plan{v}))
	}
	// Then with its rows padded to whole lines (alignPays), and the neighbours of the padded
	// plan where it wins: the chunks and planes a step the dense plan's walk chose need not
	// be the padded plan's (star3d3r on the H200, 2026-11-29: the search's plan, 64x8 at rz=2,
	// padded ran 294 GCells/s; 64x8 at rz=3 padded 299 in another call).
	if b := fastest(t.res.Candidates); b != nil && alignPays(t.s.Shape, b.Plan) {
		v := b.Plan
		v.Align = true
		t.refineShape(variant, b, []plan.Plan{v})
	}
	// Then with its launches chained (plan.Chain, CUDA on sm_90 and newer; pruned elsewhere):
	// a gain on some 2D plans and a loss on others, so it is measured (chainPays).
	if b := fastest(t.res.Candidates); b != nil && chainPays(t.s.Prog, b.Plan) {
		v := b.Plan
		v.Chain = true
		t.refined(b, t.unmeasured(variant, []plan.Plan{v}))
	}
}

// runnerUpWalk, while the budget lasts, walks the neighbours of the fastest plan of another
// family than the fastest's (runnerUp) as neighbours walked the fastest's, with the fastest's
// family out of sight, so that the walk's steps take the other family's plans for the best:
// the walk varies one family, and a family behind at the start may be the one its settings
// carry further. star3d1r's search on the H200 (2026-11-29) walked 32x32 threads at bt=3 to
// 617 GCells/s and ended after 20 s of its 60, with 16x32 threads at bt=4 3.9% behind at the
// start; the suite's search of the day before had walked that family to 785. The plans the
// walk finds join the candidates; the fastest of all is the result.
//
// It returns whether it walked. Each family walked from, and the fastest's, is walked from
// once (t.walked), and every such family stays out of the walk's sight.
//
// newDepth (the rest of the budget's walks) takes first the fastest family of a temporal depth
// no family walked from has: families of one depth and tile share their ceiling, and the
// structural choice a walk can still change is the depth. star3d1r's search on the H200
// (2026-11-29) spent its rest on 32x32 threads at bt=3, the tile of the 16x32 two-cell threads
// it had walked, while 16x32 at bt=4 (the suite's 785 GCells/s) stayed unwalked.
func (t *tuner) runnerUpWalk(factor float64, newDepth bool) bool {
	best := fastest(t.res.Candidates)
	if best == nil || t.spent() {
		return false
	}
	if t.walked == nil {
		t.walked = map[string]int{}
	}
	t.walked[family(best.Plan)] = best.Plan.BT
	var r *Candidate
	if newDepth {
		r = runnerUp(t.res.Candidates, best, factor, t.walked, true)
	}
	if r == nil {
		r = runnerUp(t.res.Candidates, best, factor, t.walked, false)
	}
	if r == nil {
		return false
	}
	t.walked[family(r.Plan)] = r.Plan.BT
	t.logf("walking from %s, the fastest plan of another family (%.1f%% behind)", r.Plan, (r.SecondsPerStep/best.SecondsPerStep-1)*100)
	all := t.res.Candidates
	var view []*Candidate
	for _, c := range all {
		f := family(c.Plan)
		if _, ok := t.walked[f]; ok && f != family(r.Plan) {
			t.hidden = append(t.hidden, c)
		} else {
			view = append(view, c)
		}
	}
	t.res.Candidates = view
	t.neighbours(r)
	inView := map[*Candidate]bool{}
	for _, c := range view {
		inView[c] = true
	}
	var added []*Candidate
	for _, c := range t.res.Candidates {
		if !inView[c] {
			added = append(added, c)
		}
	}
	t.hidden = nil
	t.res.Candidates = beforePruned(all, added)
	return true
}

// spareWalkFactor bounds how far behind the fastest plan a family walked from with a
// search's time left may be (spareBudget).
const spareWalkFactor = 1.35

// runnerUpFactor bounds how far behind the fastest plan the runner-up may be (runnerUpWalk):
// the contenders' 10%.
const runnerUpFactor = 1.1

// runnerUp is the fastest measured plan of another family than best's and of none walked from
// (walked: a family's temporal depth), with newDepth of a depth no walked family has, within
// factor of the fastest, or nil.
func runnerUp(cands []*Candidate, best *Candidate, factor float64, walked map[string]int, newDepth bool) *Candidate {
	fam := family(best.Plan)
	for _, c := range near(cands, factor) {
		f := family(c.Plan)
		if _, done := walked[f]; f == fam || done || newDepth && depthWalked(walked, c.Plan.BT) {
			continue
		}
		return c
	}
	return nil
}

// depthWalked says a family of temporal depth bt has been walked from.
func depthWalked(walked map[string]int, bt int) bool {
	for _, d := range walked {
		if d == bt {
			return true
		}
	}
	return false
}

// family is what a walk from a plan does not vary early: the strategy, the block, the
// temporal depth and the cells a thread computes.
func family(pl plan.Plan) string {
	return fmt.Sprintf("%s %dx%dx%d bt=%d rx=%d ry=%d rz=%d", pl.Strategy, pl.BX, pl.BY, pl.BZ, pl.BT, pl.RX, pl.RY, pl.RZ)
}

// otherShape is, where best is a forward-plane plan, the fastest measured forward-plane plan
// of another block shape within factor of the fastest candidate, or nil.
func otherShape(cands []*Candidate, best *Candidate, factor float64) *Candidate {
	if best.Plan.Strategy != plan.ForwardPlane {
		return nil
	}
	for _, c := range near(cands, factor) {
		if c.Plan.Strategy == plan.ForwardPlane && (c.Plan.BX != best.Plan.BX || c.Plan.BY != best.Plan.BY) {
			return c
		}
	}
	return nil
}

// alignPays says a search measures pl with the device arrays' rows padded to whole 128-byte
// lines (plan.Align): plans that take it, not padded yet, on rows that are not whole lines
// already. Measured on the H200 (2026-11-29, docs/performance.md): +4% on star3d3r's and
// star3d1r's plans, +6% on star3d3r in double, -1 to -3% on star3d2r's, star3d4r's and
// box3d1r's; at odd row lengths the in-plane method's -8% (box3d2r) to +1.5% (box3d3r): a
// change only a measurement decides.
func alignPays(shape []int, pl plan.Plan) bool {
	n := shape[len(shape)-1]
	return pl.Takes("align") && !pl.Align && plan.RowPitch(n) != n
}

// oddRows says an n5d plan's vectors meet dense rows of a length no multiple of the vector,
// where every block takes the checked scalar loop: j2d5pt's tuned plan on the H200 ran at 1,515
// GCells/s at 16386x16417 against 2,397 at 16386x16416, star3d1r's at 628 at 514x514x545
// against 783 at 514x514x544 (2026-11-29). With rows padded to whole lines (plan.Align) the
// vectors run at any length, so the space's plans pad such rows (split runs' sub-domains too:
// their halo copies address the padded rows).
//
// The in-plane method's scalar fills cost it little at such lengths, and its padded rows lost
// there too (box3d2r 516x516x545: 163.6 GCells/s dense, 150.9 padded; box3d3r 518x518x545:
// 95.1 and 96.5), so its plans stay dense; the search's end measures them padded (alignPays).
func oddRows(shape []int, pl plan.Plan) bool {
	return pl.Strategy == plan.N5D && pl.N5DAlign() > 1 && shape[len(shape)-1]%pl.N5DAlign() != 0
}

// chainPays says a search measures pl with its launches chained (plan.Chain): 2D plans that
// take it, not chained yet. In 3D chained launches lost in all 12 pairs the H200's searches of
// AN5D's suite timed (geomean 0.91, the best 0.96); in 2D they won 18 of 36.
func chainPays(p *ir.Program, pl plan.Plan) bool {
	return p.Dims() == 2 && pl.Takes("chain") && !pl.Chain
}

// compiledSwitches measures the fastest plan compiled for the run's size (plan.ConstSize),
// with its launches chained (plan.Chain) and with both, at once, early in the walk: the hand
// sweeps found them in most tuned 2D plans (constsize in 7 and chain in 6 of the 11 float
// plans of the AN5D table, both in the H200's j2d5pt plans for 2 and 4 sub-domains), and a
// search that met them only at its end spent its budget first (j2d5pt 16386^2 in 60 s, 2026-11-28).
// The steps that follow then vary a plan that has them where they won; the end of the walk
// tries them again on whatever is fastest by then.
func (t *tuner) compiledSwitches(variant func(plan.Plan) *Candidate) {
	b := fastest(t.res.Candidates)
	if b == nil {
		return
	}
	var pls []plan.Plan
	cs, ch := b.Plan.Takes("constsize") && !b.Plan.ConstSize, chainPays(t.s.Prog, b.Plan)
	if cs {
		v := b.Plan
		v.ConstSize = true
		pls = append(pls, v)
	}
	if ch {
		v := b.Plan
		v.Chain = true
		pls = append(pls, v)
	}
	if cs && ch {
		v := b.Plan
		v.ConstSize, v.Chain = true, true
		pls = append(pls, v)
	}
	t.refined(b, t.unmeasured(variant, pls))
}

// refineShape measures plans of another block shape than best's as its variants and, where one
// of them is then the fastest, that plan's own chunk and loop variants (neighbourPlans), a
// shape the steps before never saw; it returns that plan, or nil where none won.
func (t *tuner) refineShape(variant func(plan.Plan) *Candidate, best *Candidate, pls []plan.Plan) *Candidate {
	vars := t.unmeasured(variant, pls)
	t.refined(best, vars)
	nb := fastest(t.res.Candidates)
	if !slices.Contains(vars, nb) {
		return nil
	}
	t.refined(nb, t.unmeasured(variant, neighbourPlans(t.s.Prog, t.s.Shape, nb.Plan, false)))
	return nb
}

// combine measures, while a plan other than from is the fastest, that plan's own loop
// variants (roundVariants) not measured yet: switches that each won alone over from are then
// tried together, one more per round, until no variant of the fastest wins: switches that
// each win alone may win more together, and a plan missing one of a good combination can
// mislead the steps that follow.
func (t *tuner) combine(variant func(plan.Plan) *Candidate, from *Candidate) {
	for b := fastest(t.res.Candidates); b != nil && b != from && b.Plan.Takes("phased"); b = fastest(t.res.Candidates) {
		vars := t.unmeasured(variant, roundVariants(t.s.Prog, b.Plan))
		if len(vars) == 0 {
			return
		}
		t.refined(b, vars)
		from = b
	}
}

// chunkWalk goes on, while the fastest plan is from at a quarter shorter or longer chunk
// (neighbourPlans), a quarter further the same way, three steps at most: a plan the steps
// before saw at its parent's chunk may want a chunk more than one step away (a deeper tile
// reached from a shallower one at a long chunk may run best at a chunk half as long).
func (t *tuner) chunkWalk(variant func(plan.Plan) *Candidate, from *Candidate) {
	for range 3 {
		b := fastest(t.res.Candidates)
		if b == nil || b == from || from.Plan.Chunk <= 0 || b.Plan.Chunk == from.Plan.Chunk {
			return
		}
		same := b.Plan
		same.Chunk = from.Plan.Chunk
		if same.String() != from.Plan.String() {
			return
		}
		n := quarterChunk(b.Plan.Chunk, b.Plan.Chunk > from.Plan.Chunk)
		if n == b.Plan.Chunk || n >= t.s.Shape[0] {
			return
		}
		v := b.Plan
		v.Chunk = n
		vars := t.unmeasured(variant, []plan.Plan{v})
		if len(vars) == 0 {
			return
		}
		t.refined(b, vars)
		from = b
	}
}

// quarterChunk is a stream chunk a quarter shorter or longer than c, a multiple of 16 planes
// and at least 16.
func quarterChunk(c int, longer bool) int {
	n := c * 3 / 4
	if longer {
		n = c * 5 / 4
	}
	return max(n/16*16, 16)
}

// rimBlockChunks are an n5d plan with the rim's planes in blocks of their own
// (plan.RimBlocks) at chunks 1.5, 2 and 2.5 times as long (multiples of 16, shorter than the
// streaming axis). No chunk of such a plan reaches the rim, so the short last chunk that made
// the chunk's quarter steps pay no longer decides, and the longer chunk's smaller share of
// warm-up does: chunks that lost without the rim's blocks may win with them.
func rimBlockChunks(shape []int, pl plan.Plan) []plan.Plan {
	if !pl.Takes("rimblocks") || !pl.RimBlocks || pl.Chunk <= 0 {
		return nil
	}
	var out []plan.Plan
	for _, f := range []int{3, 4, 5} {
		n := pl.Chunk * f / 2 / 16 * 16
		if n > pl.Chunk && n < shape[0] {
			v := pl
			v.Chunk = n
			out = append(out, v)
		}
	}
	return out
}

// fineChunks are a plan at stream chunks an eighth and a twentieth shorter and longer (multiples
// of 8 planes, of 4 below 128; shorter than the streaming axis). Time per plane is no smooth
// function of the chunk (docs/performance.md, "Chunks close to the tuned ones"): it moves in
// steps that the quarter steps of neighbours and chunkWalk pass over.
func fineChunks(shape []int, pl plan.Plan) []plan.Plan {
	c := pl.Chunk
	if c <= 0 {
		return nil
	}
	q := 8
	if c < 128 {
		q = 4
	}
	var out []plan.Plan
	seen := map[int]bool{c: true}
	for _, f := range [][2]int{{7, 8}, {19, 20}, {21, 20}, {9, 8}} {
		n := int(math.Round(float64(c*f[0])/float64(f[1])/float64(q))) * q
		if n < q || n >= shape[0] || seen[n] {
			continue
		}
		seen[n] = true
		v := pl
		v.Chunk = n
		out = append(out, v)
	}
	return out
}

// deeperRows is a 3D n5d plan of two or more rows per thread (bt <= 2) with one row more per
// thread over the same tile (fewer threads), uncapped, with its loop switches and without: the
// rows of a thread share their loads and, under fast math, a factored box's paired sums
// (pairSums in lower), which may outweigh the fewer warps resident; a row more again may
// not, as its registers grow.
func deeperRows(p *ir.Program, pl plan.Plan) []plan.Plan {
	// Plans that take bt are n5d's register-streamed temporal tiles, whose shapes the tile
	// variants (deeperRows, widerTiles, occupancyVariants, neighbourPlans) change.
	if p.Dims() != 3 || !pl.Takes("bt") || pl.BT > 2 || pl.RY < 2 {
		return nil
	}
	rows := pl.BY * pl.RY
	if rows%(pl.RY+1) != 0 {
		return nil
	}
	v := pl
	v.RY, v.BY, v.MaxRegs = pl.RY+1, rows/(pl.RY+1), 0
	if v.Validate(p, plan.Limits{}, 0) != nil {
		return nil
	}
	out := []plan.Plan{v}
	// The loop switches were chosen for the shallower rows: the deeper tile also goes
	// without them (a switch inherited from the two-row tile can cost the deeper one, and a
	// tuning that measured only the inherited plan would miss the tile).
	w := v
	w.Phased, w.RimCut, w.RimBlocks, w.Unclamped, w.Edges, w.EdgesFirst, w.Unroll = false, false, false, false, false, false, 0
	if w.String() != v.String() && w.Validate(p, plan.Limits{}, 0) == nil {
		out = append(out, w)
	}
	return out
}

// widerTiles are a 3D n5d plan with twice the threads along x, and along y, up to 1024 per
// block: a tile whose halo is a smaller share of it, which a multiprocessor may then hold
// only once. The space and the steps before keep the blocks that share one, yet one wide
// block per multiprocessor may run faster than two narrow ones.
func widerTiles(p *ir.Program, pl plan.Plan) []plan.Plan {
	if p.Dims() != 3 || !pl.Takes("bt") {
		return nil
	}
	wide, tall := pl, pl
	wide.BX *= 2
	tall.BY *= 2
	var out []plan.Plan
	for _, v := range []plan.Plan{wide, tall} {
		if v.Validate(p, plan.Limits{MaxThreadsPerBlock: 1024}, 0) == nil {
			out = append(out, v)
		}
	}
	return out
}

// neighbourPlans are the variants neighbours measures of a plan: its chunk a quarter shorter
// and longer, and for n5d scalar accesses, register prefetches (two planes ahead) instead of
// asynchronous copies, the loop variants (roundVariants) and, with rows, two-row threads
// (rowVariants). The refinement tries copies for prefetches on the space's plans; the way
// back matters where a copying plan won there: its neighbours may lose with copies where the
// same tile with the prefetch gains.
func neighbourPlans(p *ir.Program, shape []int, best plan.Plan, rows bool) []plan.Plan {
	var pls []plan.Plan
	if c := best.Chunk; c > 0 {
		for _, n := range []int{quarterChunk(c, false), quarterChunk(c, true)} {
			if n != c && n < shape[0] {
				pl := best
				pl.Chunk = n
				pls = append(pls, pl)
			}
		}
	}
	if best.Takes("bt") && best.N5DAlign() > 1 {
		pl := best
		pl.Vec = 1
		pls = append(pls, pl)
	}
	if best.Takes("async") && best.Async > 0 {
		pl := best
		pl.Async = 0
		pl.Prefetch = prefetchTwo(p, pl)
		pls = append(pls, pl)
	}
	if best.Takes("phased") {
		pls = append(pls, roundVariants(p, best)...)
		if rows {
			pls = append(pls, rowVariants(p, best)...)
		}
	}
	if best.Strategy == plan.ForwardPlane && best.Prefetch > 0 {
		// The other planes a step: the model's registers for the deeper queues are rough.
		for _, rz := range []int{1, 2, 3, 4} {
			if rz != max(best.RZ, 1) {
				pl := best
				pl.RZ = rz
				if pl.Validate(p, plan.Limits{}, 0) == nil {
					pls = append(pls, pl)
				}
			}
		}
	}
	return pls
}

// near are the measured candidates within a factor of the fastest's time, fastest first.
func near(cands []*Candidate, factor float64) []*Candidate {
	best := fastest(cands)
	if best == nil {
		return nil
	}
	var out []*Candidate
	for _, c := range cands {
		if c.Status == Measured && c.SecondsPerStep <= best.SecondsPerStep*factor {
			out = append(out, c)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].SecondsPerStep < out[j].SecondsPerStep })
	return out
}

// unmeasured are the candidates (made by variant) of the plans that are not candidates yet.
func (t *tuner) unmeasured(variant func(plan.Plan) *Candidate, pls []plan.Plan) []*Candidate {
	have := map[string]bool{}
	for _, c := range slices.Concat(t.res.Candidates, t.hidden) {
		have[c.Plan.String()] = true
	}
	var vars []*Candidate
	for _, pl := range pls {
		if have[pl.String()] {
			continue
		}
		have[pl.String()] = true
		if v := variant(pl); v != nil {
			vars = append(vars, v)
		}
	}
	return vars
}

// occupancyVariants are a 3D n5d plan whose blocks run alone on an SM (its registers, regs per
// thread as compiled, hold one) with a tile three quarters as tall, under the register cap, if
// one is needed, that lets two of the shorter blocks share an SM. A block alone exposes every
// barrier to the SM (the 27-point stencils' two-row blocks of 512 threads and 96 registers wait
// at theirs), and a quarter shorter is the least tile lost for which two blocks of such a
// kernel keep 80 registers. The same tiles under a cap for one more block spill and lose, as
// do blocks that already share an SM. shared is the plan's shared memory per block; the
// shorter tile's is taken in proportion to its rows. Caps below three quarters of the registers
// are left out: they spill, and a capped variant prefetches two planes ahead at most (a
// deeper prefetch under the cap spills). A copying plan's shorter block is also measured with
// the register prefetch.
func occupancyVariants(p *ir.Program, props gpu.Props, pl plan.Plan, regs, shared int) []plan.Plan {
	if p.Dims() != 3 || !pl.Takes("bt") || regs <= 0 || props.RegsPerSM <= 0 {
		return nil
	}
	if pl.MaxRegs > 0 {
		regs = min(regs, pl.MaxRegs)
	}
	if gpu.ResidentBlocks(props, pl.Threads(), shared, regs) > 1 {
		return nil
	}
	v := pl
	v.BY = pl.BY * 3 / 4
	if v.BY < 2 || v.Validate(p, plan.Limits{}, 0) != nil {
		return nil
	}
	sh := shared * v.BY / pl.BY
	if gpu.ResidentBlocks(props, v.Threads(), sh, regs) < 2 {
		caps := registerCaps(props, v.Threads(), sh, regs, 0)
		if len(caps) == 0 || caps[0] < regs*3/4 {
			return nil
		}
		v.MaxRegs = caps[0]
		if v.Prefetch > 2 {
			v.Prefetch = prefetchTwo(p, v)
		}
	}
	out := []plan.Plan{v}
	// A copying plan's shorter block also goes back to the register prefetch, under the cap
	// that keeps two blocks: its registers are not known before it is compiled, and the cap is
	// harmless where it needs fewer. The shorter block may run faster with the prefetch than
	// with the copies its parent won with.
	if pl.Async > 0 {
		w := v
		w.Async, w.MaxRegs = 0, 0
		w.Prefetch = prefetchTwo(p, w)
		c := regCap(props, w.Threads(), sh, 255, 2)
		if c >= max(40, regs) && w.Validate(p, plan.Limits{}, 0) == nil {
			if gpu.ResidentBlocks(props, w.Threads(), sh, 255) < 2 {
				w.MaxRegs = c
			}
			out = append(out, w)
		}
	}
	return out
}

// prefetchTwo is the prefetch of two planes ahead for pl where that divides its unrolled
// round, else none (the next plane).
func prefetchTwo(p *ir.Program, pl plan.Plan) int {
	if pl.N5DRound(p.Reach()[0])%2 == 0 {
		return 2
	}
	return 0
}

// roundVariants are an n5d plan with phased loops (where its depth runs one loop), with chunks
// cut at the rim or the planes near it in blocks of their own (where a chunk can reach it,
// lower.N5DRimCuts; a last chunk that reaches the rim in full runs slower than one leaving a
// short one), with the edge loop for the
// blocks on the in-plane edges (lower.N5DEdges), with the edge tiles launched first
// (plan.EdgesFirst), with the loop without checks loading its planes unclamped (register
// prefetches only, plan.Unclamped), with idle warps skipping the levels that feed no output
// (where some warp is idle at some level, plan.Shrink), and with rounds of 2R+1 planes
// (where the program allows them, lower.N5DShortRound; a prefetch that does not divide the
// round goes as deep as the round and, under a register cap, also none at all, where a deeper
// prefetch would spill), and under fast math with its sums' centre-column terms first (where
// that reorders a sum, lower.OrdersTerms). Each changes the code's size, the
// warm-up's cost or what runs the checked loop, which the model does not rank, and each won
// on some stencils and lost on others.
func roundVariants(p *ir.Program, pl plan.Plan) []plan.Plan {
	var out []plan.Plan
	if !pl.N5DPhased(pl.BT) {
		v := pl
		v.Phased = true
		out = append(out, v)
	}
	if !pl.RimCut && !pl.RimBlocks && lower.N5DRimCuts(p) {
		v := pl
		v.RimCut = true
		out = append(out, v)
		v = pl
		v.RimBlocks = true
		out = append(out, v)
	}
	if !pl.Unclamped && pl.Async == 0 && lower.N5DRimCuts(p) {
		v := pl
		v.Unclamped = true
		out = append(out, v)
	}
	if !pl.Edges && lower.N5DEdges(p, pl) {
		v := pl
		v.Edges = true
		out = append(out, v)
	}
	if !pl.EdgesFirst {
		v := pl
		v.EdgesFirst = true
		if v.Validate(p, plan.Limits{}, 0) == nil {
			out = append(out, v)
		}
	}
	if pl.FastMath && !pl.CentreFirst && lower.OrdersTerms(p) {
		v := pl
		v.CentreFirst = true
		out = append(out, v)
	}
	if !pl.Shrink {
		v := pl
		v.Shrink = true
		if _, ok := v.N5DLiveWarps(p.Dims(), p.Reach(), v.BT); ok && v.Validate(p, plan.Limits{}, 0) == nil {
			out = append(out, v)
		}
	}
	// Levels lowest first (ascend) in 3D only: it paid in 3D and lost on the 2D stars' tuned
	// plans, whose own searches with it found nothing faster (docs/performance.md, "Levels
	// lowest first").
	if !pl.Ascend && pl.Wave && p.Dims() == 3 && lower.N5DAscends(p) {
		v := pl
		v.Ascend = true
		if v.Validate(p, plan.Limits{}, 0) == nil {
			out = append(out, v)
		}
	}
	if u := 2*p.Reach()[0] + 1; pl.Unroll == 0 && lower.N5DShortRound(p) {
		v := pl
		v.Unroll = u
		if v.Prefetch > 1 && u%v.Prefetch != 0 {
			v.Prefetch = u
			if pl.MaxRegs > 0 {
				w := v
				w.Prefetch = 0
				if w.Validate(p, plan.Limits{}, 0) == nil {
					out = append(out, w)
				}
			}
		}
		if v.Validate(p, plan.Limits{}, 0) == nil {
			out = append(out, v)
		}
	}
	return out
}

// rowVariants are a shallow 3D n5d plan (bt <= 2) with threads of two rows (ry=2): the same
// tile with half the rows of threads, and a tile twice as wide with the plan's thread count.
// Their register queues double, which the model's register estimate does not see (it
// over-predicted ry plans at deeper blocks, where they lost), so the space leaves ry out and
// only this step measures it: two-row threads paid on the 27-point stencils at bt=2 and lost
// on deeper blocks.
func rowVariants(p *ir.Program, pl plan.Plan) []plan.Plan {
	if p.Dims() != 3 || pl.BT > 2 || pl.RY > 1 || pl.BY < 2 || pl.BY%2 != 0 || pl.Async > 0 {
		return nil
	}
	var out []plan.Plan
	for _, w := range []int{1, 2} {
		v := pl
		v.BX, v.BY, v.RY = pl.BX*w, pl.BY/2, 2
		if v.Validate(p, plan.Limits{}, 0) == nil {
			out = append(out, v)
		}
	}
	return out
}

// refined measures the variants of one plan and places them after the ranked candidates,
// before the pruned ones.
func (t *tuner) refined(best *Candidate, vars []*Candidate) {
	if len(vars) == 0 {
		return
	}
	t.logf("refining %s (%d registers): %d variants", best.Plan, best.Regs, len(vars))
	t.measure(vars)
	t.res.Candidates = beforePruned(t.res.Candidates, vars)
}

// beforePruned is cs with vars inserted ahead of its pruned candidates, which stay last.
func beforePruned(cs, vars []*Candidate) []*Candidate {
	i := len(cs)
	for i > 0 && cs[i-1].Status == Pruned {
		i--
	}
	return slices.Concat(cs[:i], vars, cs[i:])
}

// targetRun is the length of a timed run the automatic step count aims at.
const targetRun = 0.05 // seconds

// chooseSteps picks the steps of a timed run: about 50 ms by the best prediction, at least
// twice the deepest temporal block (PH, BT) among the candidates, at most 600, rounded up to a
// multiple of the quantum: 12, or 48 when blocks deeper than 4 steps are among them, so that
// most blocks divide it. Each candidate's warm-up run of one quantum then shortens its own
// timed runs towards 50 ms (a candidate ten times slower than the best prediction is not
// timed ten times longer).
func chooseSteps(viable []*Candidate) (steps, quantum int) {
	best := viable[0].Predicted
	n := 12
	if best > 0 {
		n = int(math.Ceil(targetRun / best))
	}
	deep := 1
	for _, c := range viable {
		deep = max(deep, c.Plan.PH, c.Plan.BT)
	}
	n = min(max(n, 2*deep, 12), 600)
	m := 12
	if deep > 4 {
		m = 48
	}
	return (n + m - 1) / m * m, m
}

type tuner struct {
	dev     gpu.Device
	s       *state.State
	o       Options
	res     *Result
	quantum int // automatic steps: the warm-up length and the multiple of timed runs (0: fixed Steps)
	bar     *progressbar.ProgressBar
	todo    int
	// timeFor, where set, times a candidate in place of the device (tests of the search's
	// steps on made-up times).
	timeFor func(*Candidate)
	start   time.Time       // the search's start, for Options.Budget
	took    []time.Duration // how long each timed candidate took, compilation wait included
	// slowest is the longest compilation so far: the search waits for the compilations under
	// way when it stops, so the budget keeps that much in reserve (mu guards it).
	mu      sync.Mutex
	slowest time.Duration
	// since, where set, replaces time.Since (tests of the budget on a made-up clock).
	since func(time.Time) time.Duration
	// initial holds device copies of the state's arrays, made at the first timing, from
	// which every candidate's buffers are filled on the device (initialMade: tried).
	initial     gpurun.Initial
	initialMade bool
	// hidden are the candidates runnerUpWalk keeps out of the walk's sight: not walked
	// from, not measured again; walked, the families walked from so far and their
	// temporal depths.
	hidden []*Candidate
	walked map[string]int

	// superseded are the plans of the space whose variant with the pick's settings ran
	// faster (pickRules): not refined themselves.
	superseded map[*Candidate]bool
}

// initialCopies are the device copies the candidates start from: one upload of the state for
// the whole search instead of one per candidate (for a gigabyte grid about 0.2 s of the 1 s a
// candidate took). None where the state is over a sixth of the device's memory: a candidate
// holds up to four copies of each grid itself.
func (t *tuner) initialCopies() gpurun.Initial {
	if !t.initialMade {
		t.initialMade = true
		bytes := int64(0)
		for _, g := range t.s.Prog.Grids {
			for _, a := range []*gridio.Array{t.s.Cur[g.Index], t.s.Prev[g.Index]} {
				if a != nil {
					bytes += int64(len(a.Bytes()))
				}
			}
		}
		if mem := t.dev.Props().GlobalMem; mem > 0 && bytes*6 <= mem {
			t.initial = gpurun.NewInitial(t.dev, t.s)
		}
	}
	return t.initial
}

// spent says the search's time budget is used up and it has a result to show: the candidates
// not yet timed are left.
func (t *tuner) spent() bool {
	since := time.Since
	if t.since != nil {
		since = t.since
	}
	if el := since(t.start); t.o.Budget <= 0 || (el < t.o.Budget && el+t.nextTakes()+t.compileReserve() <= t.o.Budget) {
		return false
	}
	return t.res == nil || fastest(t.res.Candidates) != nil
}

// compileReserve is what the compilations under way when the search stops may still take:
// the longest one so far. Without it the searches of the AN5D suite ran 3-4 s past a 60 s
// budget waiting for their last batch's compilations (2026-11-28, H200).
func (t *tuner) compileReserve() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.slowest
}

// compiledIn records how long a compilation took, for compileReserve.
func (t *tuner) compiledIn(d time.Duration) {
	t.mu.Lock()
	t.slowest = max(t.slowest, d)
	t.mu.Unlock()
}

// nextTakes is what the next candidate is expected to take: the median of those timed so far.
func (t *tuner) nextTakes() time.Duration {
	if len(t.took) == 0 {
		return 0
	}
	d := slices.Clone(t.took)
	slices.Sort(d)
	return d[len(d)/2]
}

// timing returns a function that records, when called, how long a candidate took since.
func (t *tuner) timing() func() {
	since := time.Since
	if t.since != nil {
		since = t.since
	}
	before := since(t.start)
	return func() { t.took = append(t.took, since(t.start)-before) }
}

func (t *tuner) logf(format string, a ...any) {
	if t.o.Log != nil {
		if t.bar != nil {
			t.bar.Clear()
		}
		fmt.Fprintf(t.o.Log, format+"\n", a...)
	}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func (t *tuner) startBar() {
	if t.o.Progress == nil || !isTerminal(t.o.Progress) {
		return
	}
	t.bar = progressbar.NewOptions(1, progressbar.OptionSetWriter(t.o.Progress), progressbar.OptionSetDescription("tuning"),
		progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true), progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish())
}

func (t *tuner) grow(n int) {
	t.todo += n
	if t.bar != nil {
		t.bar.ChangeMax(t.todo)
	}
}

func (t *tuner) step(desc string) {
	if t.bar != nil {
		t.bar.Describe(desc)
		t.bar.Add(1)
	}
}

func (t *tuner) finishBar() {
	if t.bar != nil {
		t.bar.Finish()
	}
}

// calibrate measures PH=1 and PH=2 of every pyramid block shape among the candidates the
// selection would measure, fits SL's model to each, re-predicts that shape's pyramids and
// re-ranks.
func (t *tuner) calibrate(viable []*Candidate) {
	n := t.o.K
	if t.o.Mode == Beta || t.o.Mode == TopKBeta {
		nb := 0
		for _, c := range viable {
			if c.Predicted <= viable[0].Predicted*(1+t.o.Beta/100) {
				nb++
			}
		}
		if t.o.Mode == Beta {
			n = nb
		} else {
			n = max(n, nb)
		}
	}
	type shape struct{ bx, by, bz, rx int }
	var shapes []shape
	seen := map[shape]bool{}
	for i := 0; i < len(viable) && i < n; i++ {
		pl := viable[i].Plan
		if sh := (shape{pl.BX, pl.BY, pl.BZ, pl.RX}); pl.Takes("ph") && !seen[sh] {
			seen[sh] = true
			shapes = append(shapes, sh)
		}
	}
	if len(shapes) == 0 {
		return
	}
	find := func(sh shape, ph int) *Candidate {
		for _, c := range viable {
			pl := c.Plan
			if pl.Takes("ph") && pl.BX == sh.bx && pl.BY == sh.by && pl.BZ == sh.bz && pl.RX == sh.rx && pl.PH == ph {
				return c
			}
		}
		return nil
	}
	var runs []*Candidate
	for _, sh := range shapes {
		for _, ph := range []int{1, 2} {
			if c := find(sh, ph); c != nil && c.Status == Unmeasured {
				runs = append(runs, c)
			}
		}
	}
	t.measure(runs)
	sum := analysis.Analyze(t.s.Prog)
	changed := false
	for _, sh := range shapes {
		c1, c2 := find(sh, 1), find(sh, 2)
		if c1 == nil || c2 == nil || c1.Status != Measured || c2.Status != Measured {
			continue
		}
		in := model.Input{Prog: t.s.Prog, Sum: sum, Plan: c1.Plan, Shape: t.s.Shape, Dev: t.o.Profile, SharedBytes: c1.SharedBytes}
		cal, err := model.CalibratePyramid(in, c1.Steps, c1.SecondsPerStep*float64(c1.Steps), c2.Steps, c2.SecondsPerStep*float64(c2.Steps))
		if err != nil {
			t.logf("calibrating pyramid %dx%dx%d: %v", sh.bx, sh.by, sh.bz, err)
			continue
		}
		t.res.Calibrations = append(t.res.Calibrations, cal)
		for _, c := range viable {
			if !c.Plan.Takes("ph") || c.Plan.BX != sh.bx || c.Plan.BY != sh.by || c.Plan.BZ != sh.bz || c.Plan.RX != sh.rx {
				continue
			}
			in := model.Input{Prog: t.s.Prog, Sum: sum, Plan: c.Plan, Shape: t.s.Shape, Steps: 1000, Dev: t.o.Profile, SharedBytes: c.SharedBytes, Regs: c.Regs, Cal: cal}
			if p, err := model.Predict(in); err == nil {
				c.Pred, c.Predicted = p, p.Seconds/1000
				changed = true
			}
		}
	}
	if changed {
		sortCandidates(t.res.Candidates, t.o.Seed)
		sort.SliceStable(viable, func(i, j int) bool { return viable[i].Rank < viable[j].Rank })
	}
}

// compiled is a candidate's compiled module, or why it has none.
type compiled struct {
	mod gpu.Module
	err error
	// blocks is how many blocks of the module's first kernel reside on a multiprocessor (0:
	// the device does not say).
	blocks int
	// lowered, built and checked are how long the lowering, the backend's
	// compilation and the kernels' checks took: the search's log says where its waits go.
	lowered, built, checked time.Duration
}

// compile builds a candidate and checks its registers against the device.
func (t *tuner) compile(c *Candidate) (cm compiled) {
	began := time.Now()
	defer func() { t.compiledIn(time.Since(began)) }()
	defer func() {
		if r := recover(); r != nil {
			cm = compiled{err: fmt.Errorf("internal error while compiling: %v", r)}
		}
	}()
	if c.low == nil {
		low, err := lower.Lower(t.s.Prog, t.s.Shape, t.s.Layers, c.Plan)
		if err != nil {
			return compiled{err: err}
		}
		c.low = low
	}
	name := fmt.Sprintf("%s (%s)", t.s.Prog.Name, c.Plan)
	lowered := time.Since(began)
	// The kernels of the shallower launches are compiled only if a timed run launches them:
	// its steps are whole numbers of the deepest launches (time).
	mod, err := gpurun.CompileDeep(t.dev, name, c.low, gpu.CompileOptions{FastMath: c.Plan.FastMath, MaxRegs: c.Plan.MaxRegs})
	if err != nil {
		return compiled{err: fmt.Errorf("compile: %s", firstLine(err.Error()))}
	}
	built := time.Since(began) - lowered
	defer func() { cm.lowered, cm.built, cm.checked = lowered, built, time.Since(began)-lowered-built }()
	props := t.dev.Props()
	threads := c.Plan.Threads()
	blocks := 0
	for i, k := range c.low.Module.Kernels {
		if gpurun.Pending(mod, k.Name) {
			continue
		}
		kk, err := mod.Kernel(k.Name)
		if err != nil {
			mod.Close()
			return compiled{err: err}
		}
		a := kk.Attrs()
		c.Regs = max(c.Regs, a.Regs)
		if a.MaxThreadsPerBlock > 0 && threads > a.MaxThreadsPerBlock {
			mod.Close()
			return compiled{err: fmt.Errorf("kernel %s takes at most %d threads per block (%d registers per thread), the plan has %d", k.Name, a.MaxThreadsPerBlock, a.Regs, threads)}
		}
		if props.RegsPerBlock > 0 && a.Regs*threads > props.RegsPerBlock {
			mod.Close()
			return compiled{err: fmt.Errorf("kernel %s needs %d registers x %d threads, the device has %d per block", k.Name, a.Regs, threads, props.RegsPerBlock)}
		}
		if n, err := kk.MaxActiveBlocksPerSM(threads, 0); err == nil && n == 0 {
			mod.Close()
			return compiled{err: fmt.Errorf("kernel %s: no block of %d threads fits on a multiprocessor", k.Name, threads)}
		}
		if i == 0 && a.Regs > 0 {
			blocks = gpu.ResidentBlocks(props, threads, launchShared(c.low, k.Name)+a.StaticShared, a.Regs)
		}
	}
	return compiled{mod: mod, blocks: blocks}
}

// launchShared is the dynamic shared memory of low's first launch of kernel name.
func launchShared(low *lower.Lowered, name string) int {
	for _, l := range low.Launches {
		if l.Kernel == name {
			return l.Shared
		}
	}
	return 0
}

// measure compiles the candidates (in parallel; measuring starts with the first ready one on
// GPUs, after all are compiled on CPU devices whose cores the compiler would take) and times
// them one after the other in the given order. Outcomes go to the cache as they come.
func (t *tuner) measure(cands []*Candidate) {
	var todo []*Candidate
	for _, c := range cands {
		if c.Status == Unmeasured {
			todo = append(todo, c)
		}
	}
	if len(todo) == 0 {
		return
	}
	if t.spent() {
		t.skip(todo, false)
		return
	}
	if t.timeFor != nil {
		for i, c := range todo {
			if t.spent() {
				t.skip(todo[i:], false)
				return
			}
			done := t.timing()
			t.timeFor(c)
			done()
		}
		return
	}
	t.grow(len(todo))
	ready := make([]chan compiled, len(todo))
	for i := range ready {
		ready[i] = make(chan compiled, 1)
	}
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < min(t.o.Parallel, len(todo)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			gpu.Background(func() { // the timed runs keep the cores they need
				for i := range next {
					ready[i] <- t.compile(todo[i])
				}
			})
		}()
	}
	go func() {
		for i := range todo {
			if t.spent() {
				break // no more compilations once the budget is spent
			}
			next <- i
		}
		close(next)
	}()
	if probe.LooksLikeCPU(t.dev.Props()) {
		wg.Wait()
	}
	defer func() {
		// Compilations the budget left untimed: free their modules.
		wg.Wait()
		for _, r := range ready {
			select {
			case cm := <-r:
				if cm.mod != nil {
					cm.mod.Close()
				}
			default:
			}
		}
	}()
	for i, c := range todo {
		if t.spent() {
			t.skip(todo[i:], true)
			return
		}
		done := t.timing()
		w := time.Now()
		cm := <-ready[i]
		timed := time.Now()
		if cm.err == nil {
			cm.err = t.time(c, cm)
		}
		if t.res != nil {
			t.res.Waited += timed.Sub(w)
			t.res.Timing += time.Since(timed)
		}
		if cm.err != nil {
			c.Status, c.Reason = Failed, cm.err.Error()
			t.logf("  %-40s failed: %s", c.Plan, firstLine(c.Reason))
		} else {
			c.Status = Measured
			t.logf("  %-40s %10.4f ms/step (predicted %.4f, %s; waited %.2f s: lowered %.2f, compiled %.2f, checked %.2f)", c.Plan, c.SecondsPerStep*1e3, c.Predicted*1e3, c.Pred.Bottleneck,
				timed.Sub(w).Seconds(), cm.lowered.Seconds(), cm.built.Seconds(), cm.checked.Seconds())
		}
		c.low = nil // measured: its module is no longer needed
		done()
		t.record(c)
		t.step(c.Plan.String())
	}
}

// skip leaves candidates untimed because the budget is spent; counted says the progress bar
// counts them already.
func (t *tuner) skip(cands []*Candidate, counted bool) {
	if t.res != nil {
		t.res.Skipped += len(cands)
	}
	if counted {
		for range cands {
			t.step("skipped: time budget spent")
		}
	}
}

// time uploads the state, runs a warm-up and Reps timed runs of Steps steps.
func (t *tuner) time(c *Candidate, cm compiled) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("internal error while running: %v", r)
		}
	}()
	st := *t.s // a copy of the state: its own step counter, the arrays shared and only read
	// The module was compiled while other candidates were timed (measure); the runner takes it
	// over, so that uploads and launches stay on the measuring goroutine.
	r, err := gpurun.NewCompiled(t.dev, &st, c.low, cm.mod, t.initialCopies())
	if err != nil {
		return err
	}
	defer r.Close()
	steps := t.res.Steps
	if t.quantum > 0 {
		// Automatic steps: warm up with one quantum, then aim each timed run at targetRun.
		// Both are whole multiples of the candidate's own temporal depth as well, so that
		// every step runs in its deepest launch: a remainder would run one-step launches
		// (the host schedule for step counts that bT does not divide), which cost several
		// times more per step and would penalise depths that do not divide the quantum.
		k := max(c.Plan.PH, c.Plan.BT, 1)
		q := (t.quantum + k - 1) / k * k // the warm-up: the quantum rounded up to whole launches
		warm, err := r.Timed(q)
		if err != nil {
			return fmt.Errorf("launch: %w", err)
		}
		steps = max(steps/q*q, q)
		if per := warm / 1e3 / float64(q); per > 0 {
			n := int(targetRun/per) / q * q
			steps = min(max(n, q), steps)
		}
	} else if _, err := r.Timed(steps); err != nil {
		return fmt.Errorf("launch: %w", err)
	}
	var ms []float64
	for i := 0; i < t.o.Reps; i++ {
		m, err := r.Timed(steps)
		if err != nil {
			return fmt.Errorf("launch: %w", err)
		}
		ms = append(ms, m)
	}
	med := probe.Median(ms)
	if !(med > 0) {
		return errors.New("the device timer measured no time")
	}
	c.SamplesMs, c.Steps, c.SecondsPerStep = ms, steps, med/1e3/float64(steps)
	return nil
}

func (t *tuner) record(c *Candidate) {
	if t.o.Cache == nil {
		return
	}
	r := Record{Plan: c.Plan.String(), Status: c.Status, Reason: c.Reason, SecondsPerStep: c.SecondsPerStep, SamplesMs: c.SamplesMs,
		Steps: c.Steps, Predicted: c.Predicted, Bottleneck: string(c.Pred.Bottleneck), Regs: c.Regs, Shape: t.s.Shape,
		When: time.Now().UTC().Truncate(time.Second)}
	if err := t.o.Cache.Put(t.res.Key, r); err != nil {
		t.logf("tuning cache: %v", err)
	}
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// Pick is the model's choice without measurements: the best-ranked candidate that compiles
// within the device's register limits (compiled once to find out), with PickRules' settings
// added one at a time, each kept only where it compiles and does not leave the main kernel
// (the module's first, the full temporal block) one block per multiprocessor where the plan
// without it had more (loneBlock). The rules rest on timed plans, which a search would have
// dropped where a setting's registers cost too much; a pick times nothing, so it checks them:
// gradient2d's double pick took edgesfirst and rimblocks together at 134 registers a thread,
// one block of 256 threads a multiprocessor where each alone left two, and ran at 236 GCells/s
// against 327-344 (docs/performance.md, 2026-11-29).
func Pick(dev gpu.Device, s *state.State, o Options) (*Candidate, error) {
	cands, err := Rank(dev, s, o)
	if err != nil {
		return nil, err
	}
	t := &tuner{dev: dev, s: s, o: o}
	var firstErr error
	for i, c := range cands {
		if c.Status == Pruned || i >= 8 {
			break
		}
		// The plain plan and the one with every rule compile side by side; one at a time
		// only where the latter loses a block.
		rules := pickRules(s.Prog, dev.Props(), c.Plan)
		withAll := ruled(c, PickRules(s.Prog, dev.Props(), c.Plan))
		if withAll.Plan.String() == c.Plan.String() {
			rules = nil
		}
		var cm, am compiled
		var wg sync.WaitGroup
		if len(rules) > 0 {
			wg.Go(func() { am = t.compile(withAll) })
		}
		cm = t.compile(c)
		wg.Wait()
		if am.mod != nil {
			am.mod.Close()
		}
		if cm.err != nil {
			if firstErr == nil {
				firstErr = cm.err
			}
			c.Status, c.Reason = Failed, cm.err.Error()
			continue
		}
		cm.mod.Close()
		if len(rules) == 0 {
			return c, nil
		}
		if am.err == nil && !loneBlock(cm.blocks, am.blocks) {
			return withAll, nil
		}
		best := c
		for _, r := range rules {
			v := ruled(best, best.Plan)
			r.set(&v.Plan)
			if v.Plan.Validate(s.Prog, plan.Limits{}, 0) != nil {
				continue
			}
			vm := t.compile(v)
			if vm.err != nil {
				continue
			}
			vm.mod.Close()
			if loneBlock(cm.blocks, vm.blocks) {
				t.logf("pick: %s left out: the main kernel's blocks per multiprocessor would drop from %d to %d (%d registers a thread)", r.name, cm.blocks, vm.blocks, v.Regs)
				continue
			}
			best = v
		}
		return best, nil
	}
	if firstErr == nil {
		firstErr = errors.New(cands[0].Reason)
	}
	return nil, fmt.Errorf("no plan of %s compiles: %v", s.Prog.Name, firstErr)
}

// loneBlock says a setting leaves the main kernel one block per multiprocessor where the plan
// without it had more: each of the block's barriers then idles the multiprocessor, with no
// other block to run meanwhile. Fewer blocks short of one are no reason to drop a rule: the
// float picks of star2d2r and j2d9pt lost a block to edgesfirst (5 to 4) and box2d3r one to
// async=5 (3 to 2), and ran 11% and 19% faster with them than without (docs/performance.md,
// 2026-11-29).
func loneBlock(without, with int) bool { return with == 1 && without > 1 }

// ruled is c with plan pl, not yet compiled.
func ruled(c *Candidate, pl plan.Plan) *Candidate {
	v := *c
	v.Plan, v.low, v.Regs = pl, nil, 0
	return &v
}

// PickRules adds to a plan the model ranks first the settings that the model does not rank but
// that measurements say pay for plans of its kind, so that `tempest run` without tuning takes
// them as a search would. Each rule names its evidence (docs/performance.md); the newer rules
// rest on timed plans that TestPickRulesEvidence checks them against (pairs of plans alike but
// for the setting):
//
//   - edge tiles first (plan.EdgesFirst) on 2D n5d plans on CUDA: the tuned 2D float plans on
//     the H100 gained 2-10% with it on seven of eight stencils (box2d2r flat, 2026-11-25), and
//     every one of the 29 pairs with and without it among the plans tuned for EBISU's 2D float
//     stencils on the H200 gained (7.4% geomean, 2026-11-28). In double it lost on three of
//     the eight H100 plans, but 32 of the 37 pairs among the plans tuned for EBISU's and
//     LoRAStencil's 2D double stencils on the H200 gained (3.7% geomean, the worst 0.87,
//     2026-11-28), so double takes it too. In 3D it lost on all four H100 plans and on the
//     three H200 pairs of LoRAStencil's star3d1r (0.76-0.84): 3D keeps the plain plan.
//   - the rim's chunks in blocks of their own (plan.RimBlocks) on 2D n5d plans on CUDA: 74
//     pairs over 18 stencils of the H200 records (EBISU's, LoRAStencil's and four of AN5D's,
//     float and double, fast and exact math), 2.3% geomean, 54 gains, the worst 0.964. In 3D
//     the three pairs lost (0.70-1.01).
//     The 21-stencil searches of AN5D's suite (float and double, 2026-11-28) brought the pairs
//     to 161, 2.3% geomean, the worst 0.958 (box2d1r in double). They also timed 3D pairs: in
//     float 18 over star3d1r, star3d2r, box3d1r and j3d27pt, 6.5% geomean, the worst 0.994,
//     so 3D float n5d plans take the rule; in double star3d1r's lost down to 0.78 and
//     LoRAStencil's star3d1r's to 0.70, so 3D double plans keep the plain plan.
//   - asynchronous copies five planes ahead (plan.Async) on 2D n5d plans of float box
//     stencils on CUDA sm_80 and later: 23 pairs over 10 box stencils of those records, 7.6%
//     geomean, the worst 0.993; stars gained 1.8% with a worst of 0.86 (LoRAStencil's star2d3r
//     in double) and keep their prefetch. The suite's searches split the boxes by type: 22
//     float pairs, 11.2% geomean, the worst 0.997, while double's lost down to 0.83 (j2d9pt-gol) and
//     0.85 (box2d1r) for a geomean near 1, so double boxes keep their prefetch too. In 3D it is
//     the other way round: the suite's 3D pairs in double (and LoRAStencil's) gained, 15 pairs
//     over star3d1r, star3d2r, box3d1r and j3d27pt, 10.0% geomean, the worst 0.988, and float
//     lost (0.92), so 3D double n5d plans copy ahead.
func PickRules(p *ir.Program, props gpu.Props, pl plan.Plan) plan.Plan {
	for _, r := range pickRules(p, props, pl) {
		v := pl
		r.set(&v)
		if v.Validate(p, plan.Limits{}, 0) == nil {
			pl = v
		}
	}
	return pl
}

// pickRule is one of PickRules' settings: its name for the log and how it changes a plan.
type pickRule struct {
	name string
	set  func(*plan.Plan)
}

// pickRules are the settings PickRules adds to pl, in the order it adds them (see PickRules).
func pickRules(p *ir.Program, props gpu.Props, pl plan.Plan) []pickRule {
	if pl.Strategy != "n5d" || props.Backend != "cuda" || (p.Dims() != 2 && p.Dims() != 3) {
		return nil
	}
	rimBlocks := pickRule{"rimblocks", func(v *plan.Plan) { v.RimBlocks = true }}
	async := pickRule{fmt.Sprintf("async=%d", pickAsync), func(v *plan.Plan) { v.Prefetch, v.Async = 0, pickAsync }}
	var rs []pickRule
	if p.Dims() == 3 {
		if !pl.RimBlocks && allFloat32(p) {
			rs = append(rs, rimBlocks)
		}
		if pl.Async == 0 && props.ComputeMajor >= 8 && allOf(p, ir.F64) {
			rs = append(rs, async)
		}
		return rs
	}
	if !pl.EdgesFirst {
		rs = append(rs, pickRule{"edgesfirst", func(v *plan.Plan) { v.EdgesFirst = true }})
	}
	if !pl.RimBlocks {
		rs = append(rs, rimBlocks)
	}
	if pl.Async == 0 && props.ComputeMajor >= 8 && analysis.Analyze(p).Shape == analysis.Box && allFloat32(p) {
		rs = append(rs, async)
	}
	return rs
}

// allFloat32 reports whether every grid of p is float (PickRules' rules part by type).
func allFloat32(p *ir.Program) bool { return allOf(p, ir.F32) }

// allOf says every grid of p holds elements of type t.
func allOf(p *ir.Program, t ir.Type) bool {
	for _, g := range p.Grids {
		if g.Type != t {
			return false
		}
	}
	return true
}

// pickAsync is the planes ahead PickRules copies box stencils' input (see PickRules).
const pickAsync = 5

// Report renders a search's candidates: the measured ones, then the best of the rest.
func Report(w io.Writer, r *Result, rest int) {
	fmt.Fprintf(w, "%-4s %-44s %12s %12s %7s  %-18s %s\n", "rank", "plan", "predicted", "measured", "regs", "bottleneck", "status")
	shown := 0
	for _, c := range r.Candidates {
		if c.Status == Pruned {
			continue
		}
		if c.Status == Unmeasured {
			if shown >= rest {
				continue
			}
			shown++
		}
		meas := "-"
		if c.Status == Measured {
			meas = fmt.Sprintf("%.4f ms", c.SecondsPerStep*1e3)
		}
		regs := "-"
		if c.Regs > 0 {
			regs = fmt.Sprint(c.Regs)
		}
		status := string(c.Status)
		if c.Cached {
			status += " (cached)"
		}
		if c.Status == Failed {
			status += ": " + firstLine(c.Reason)
		}
		if c == r.Best {
			status += "  <- best"
		}
		rank := fmt.Sprint(c.Rank)
		if c.Refined {
			rank = "ref"
		}
		fmt.Fprintf(w, "%-4s %-44s %9.4f ms %12s %7s  %-18s %s\n", rank, c.Plan, c.Predicted*1e3, meas, regs, c.Pred.Bottleneck, status)
	}
	if r.Pruned > 0 {
		fmt.Fprintf(w, "(%d plans pruned, e.g. %s: %s)\n", r.Pruned, firstPruned(r).Plan, firstLine(firstPruned(r).Reason))
	}
}

func firstPruned(r *Result) *Candidate {
	for _, c := range r.Candidates {
		if c.Status == Pruned {
			return c
		}
	}
	return nil
}

// Spearman is the rank correlation of two equally long samples (average ranks for ties).
func Spearman(x, y []float64) float64 {
	n := len(x)
	if n < 2 || len(y) != n {
		return math.NaN()
	}
	rx, ry := ranks(x), ranks(y)
	var mx, my float64
	for i := 0; i < n; i++ {
		mx += rx[i]
		my += ry[i]
	}
	mx /= float64(n)
	my /= float64(n)
	var sxy, sxx, syy float64
	for i := 0; i < n; i++ {
		sxy += (rx[i] - mx) * (ry[i] - my)
		sxx += (rx[i] - mx) * (rx[i] - mx)
		syy += (ry[i] - my) * (ry[i] - my)
	}
	if sxx == 0 || syy == 0 {
		return math.NaN()
	}
	return sxy / math.Sqrt(sxx*syy)
}

func ranks(v []float64) []float64 {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return v[idx[a]] < v[idx[b]] })
	r := make([]float64, len(v))
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && v[idx[j+1]] == v[idx[i]] {
			j++
		}
		avg := float64(i+j)/2 + 1
		for k := i; k <= j; k++ {
			r[idx[k]] = avg
		}
		i = j + 1
	}
	return r
}
