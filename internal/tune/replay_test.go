package tune

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"tempest/internal/analysis"
	"tempest/internal/ir"
	"tempest/internal/load"
	"tempest/internal/model"
	"tempest/internal/plan"
	"tempest/internal/probe"
)

// replayRun is one stencil's exhaustive run: every plan that ran, with its time per step.
type replayRun struct {
	file  string
	shape []int
	plans []string
	ms    []float64
	// quantum is the step count whose multiples the record's timed runs took (a header line
	// "# steps: multiples of N"; 48 where none says), or 0 for runs in whole launches of each
	// plan's own depth ("# steps: whole launches").
	quantum int
}

func readReplay(t *testing.T, path string) []*replayRun {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var runs []*replayRun
	byFile := map[string]*replayRun{}
	quantum := 48
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "#") {
			if v, ok := strings.CutPrefix(sc.Text(), "# steps: "); ok {
				quantum = 0
				if n, ok := strings.CutPrefix(v, "multiples of "); ok {
					quantum, _ = strconv.Atoi(n)
				}
			}
			continue
		}
		fs := strings.Split(sc.Text(), "|")
		if len(fs) != 4 {
			t.Fatalf("%s: %q", path, sc.Text())
		}
		file := strings.TrimSpace(fs[0])
		r := byFile[file]
		if r == nil {
			r = &replayRun{file: file, quantum: quantum}
			for _, n := range strings.Split(strings.TrimSpace(fs[1]), "x") {
				v, _ := strconv.Atoi(n)
				r.shape = append(r.shape, v)
			}
			byFile[file] = r
			runs = append(runs, r)
		}
		ms, err := strconv.ParseFloat(strings.TrimSpace(fs[3]), 64)
		if err != nil {
			t.Fatalf("%s: %q", path, sc.Text())
		}
		r.plans = append(r.plans, strings.TrimSpace(fs[2]))
		r.ms = append(r.ms, ms)
	}
	return runs
}

// replayTop ranks a run's measured plans as the tuner does (Rank with the H100's profile,
// then pyramid shapes calibrated from their measured PH=1 and PH=2 times) and says how the k
// first plans and the plans within 5% of the best prediction measured.
func replayTop(t *testing.T, r *replayRun, k int) replayResult {
	t.Helper()
	p, err := load.File("../../"+r.file, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fast := strings.Contains(r.plans[0], "fastmath=true")
	space := map[string]bool{}
	for _, pl := range Enumerate(p, r.shape, nil, fast) {
		space[pl.String()] = true
	}
	ms := map[string]float64{}
	var plans []plan.Plan
	for i, text := range r.plans {
		pl, err := plan.Parse(text, p)
		if err != nil {
			t.Fatalf("%s: %v", r.file, err)
		}
		// Plans measured then but no longer in the space are left out, and so are temporal
		// depths that do not divide the steps of runs timed in multiples of a quantum: their
		// times include single-step launches for the remainder, which neither the tuner's
		// timing (whole launches of a candidate's depth) nor the host's schedule (shallower
		// blocks, plan.Depths) has now.
		if space[pl.String()] && (r.quantum == 0 || r.quantum%max(pl.BT, pl.PH, 1) == 0) {
			plans = append(plans, pl)
			ms[pl.String()] = r.ms[i]
		}
	}
	o := Options{Seed: 1, Profile: h100Probed(), Candidates: plans, FastMath: fast}
	cands, err := Rank(fakeDevice{props: h100Props}, shapeless(p, r.shape), o)
	if err != nil {
		t.Fatalf("%s: %v", r.file, err)
	}
	calibrateFromTimes(p, r.shape, o.Profile, cands, ms)
	sortCandidates(cands, o.Seed)
	res := replayResult{first: cands[0].Plan.String()}
	best, top, beta := math.Inf(1), math.Inf(1), math.Inf(1)
	for i, c := range cands {
		if c.Status == Pruned {
			break
		}
		m := ms[c.Plan.String()]
		best = math.Min(best, m)
		if i < k {
			top = math.Min(top, m)
		}
		if c.Predicted <= cands[0].Predicted*1.05 {
			beta = math.Min(beta, m)
			res.nBeta++
		}
	}
	res.top, res.beta = best/top, best/beta
	return res
}

// replayResult is how the top-k and beta = 5% selections of one run did: the best measured
// time over the best of the selection, and how many plans beta would time.
type replayResult struct {
	top, beta float64
	nBeta     int
	first     string
}

// calibrateFromTimes does what the tuner's calibrate does with the PH=1 and PH=2 runs it
// times, from recorded times (ms per step): each pyramid block shape with both heights
// measured is calibrated and its plans re-predicted.
func calibrateFromTimes(p *ir.Program, shape []int, dev *probe.Profile, cands []*Candidate, ms map[string]float64) {
	type key struct{ bx, by, bz int }
	ph := map[key]map[int]*Candidate{}
	for _, c := range cands {
		if pl := c.Plan; pl.Strategy == "pyramid" && (pl.PH == 1 || pl.PH == 2) && c.Status != Pruned {
			k := key{pl.BX, pl.BY, pl.BZ}
			if ph[k] == nil {
				ph[k] = map[int]*Candidate{}
			}
			ph[k][pl.PH] = c
		}
	}
	sum := analysis.Analyze(p)
	for k, m := range ph {
		c1, c2 := m[1], m[2]
		if c1 == nil || c2 == nil {
			continue
		}
		in := model.Input{Prog: p, Sum: sum, Plan: c1.Plan, Shape: shape, Dev: dev, SharedBytes: c1.SharedBytes}
		cal, err := model.CalibratePyramid(in, 1000, ms[c1.Plan.String()], 1000, ms[c2.Plan.String()])
		if err != nil {
			continue
		}
		for _, c := range cands {
			if pl := c.Plan; pl.Strategy == "pyramid" && pl.BX == k.bx && pl.BY == k.by && pl.BZ == k.bz && c.Status != Pruned {
				in := model.Input{Prog: p, Sum: sum, Plan: pl, Shape: shape, Steps: 1000, Dev: dev, SharedBytes: c.SharedBytes, Cal: cal}
				if pr, err := model.Predict(in); err == nil {
					c.Pred, c.Predicted = pr, pr.Seconds/1000
				}
			}
		}
	}
}

// TestReplayH100 re-ranks the plans of the exhaustive tuner runs on the H100
// (testdata/h100-exhaustive.txt of 2026-11-22: nine AN5D stencils at 16384^2 / 512^3 with fast
// math, the 11 stencils of the in-plane suite at 512^2 x 256; the 2026-11-24 files: four 2D
// AN5D stencils and star2d1r's n5d plans after that day's kernel changes, then all 11 AN5D
// stencils and the in-plane suite again after the last of them; the 2026-11-26 file: star2d1r
// and j2d9pt after the rim's blocks and unclamped loads) with the current
// models and space, as the
// top-5 tuner would, and checks that the best of its five first plans measured at least 95%
// of the best plan, and that the topk+beta selection (those five and every plan predicted
// within 5% of the first) reaches 95% everywhere. It guards the models' ranking across plan
// families, which no model's own test sees. With top-5 alone Poisson is known to fall short
// (docs/performance.md: n5d shapes that measure within 7% of each other); its current ratio
// is a floor that a model change must not lower.
func TestReplayH100(t *testing.T) {
	known := map[string]float64{
		"examples/inplane/poisson.stencil": 0.91, // 0.93 on the 2026-11-22 records, 0.916 on the second set of 2026-11-24
	}
	var b strings.Builder
	var runs []*replayRun
	for _, f := range []string{"testdata/h100-exhaustive.txt", "testdata/h100-exhaustive-2026-11-24.txt", "testdata/h100-n5d-2026-11-24.txt", "testdata/h100-exhaustive-2026-11-24b.txt", "testdata/h100-exhaustive-2026-11-26.txt"} {
		runs = append(runs, readReplay(t, f)...)
	}
	for _, r := range runs {
		res := replayTop(t, r, 5)
		ratio := res.top
		union := math.Max(res.top, res.beta) // topk+beta: the best of both selections
		fmt.Fprintf(&b, "\n  %-42s top-5 %.3f  beta=5%% %.3f (%3d plans)  topk+beta %.3f  first %s", r.file, ratio, res.beta, res.nBeta, union, res.first)
		if union < 0.95 {
			t.Errorf("%s: topk+beta measured %.3f of the best", r.file, union)
		}
		floor := 0.95
		if f, ok := known[r.file]; ok {
			floor = f
		}
		if ratio < floor {
			t.Errorf("%s: the best of the model's five first plans measured %.3f of the best (want at least %.2f)", r.file, ratio, floor)
		}
	}
	t.Logf("replayed on the H100's measurements:%s", b.String())
}
