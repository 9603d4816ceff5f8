package tune

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"

	"tempest/internal/analysis"
	"tempest/internal/ir"
	"tempest/internal/load"
	"tempest/internal/lower"
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
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "#") {
			continue
		}
		fs := strings.Split(sc.Text(), "|")
		if len(fs) != 4 {
			t.Fatalf("%s: %q", path, sc.Text())
		}
		file := strings.TrimSpace(fs[0])
		r := byFile[file]
		if r == nil {
			r = &replayRun{file: file}
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

// replayTop ranks a run's measured plans as the tuner would (the models with the H100's
// profile, pyramid calibrated from its PH=1 and PH=2 measurements) and says how the k first
// plans and the plans within 5% of the best prediction measured.
func replayTop(t *testing.T, r *replayRun, k int) replayResult {
	t.Helper()
	p, err := load.File("../../"+r.file, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sum := analysis.Analyze(p)
	dev := probe.H100()
	type cand struct {
		pl   plan.Plan
		ms   float64
		pred float64
		sh   int
	}
	space := map[string]bool{}
	for _, pl := range Enumerate(p, r.shape, nil, strings.Contains(r.plans[0], "fastmath=true")) {
		space[pl.String()] = true
	}
	var cs []*cand
	for i, text := range r.plans {
		pl, err := plan.Parse(text, p)
		if err != nil {
			t.Fatalf("%s: %v", r.file, err)
		}
		if !space[pl.String()] {
			continue // measured then, no longer in the tuner's space
		}
		low, err := lower.Lower(p, r.shape, nil, pl)
		if err != nil {
			t.Fatalf("%s %s: %v", r.file, text, err)
		}
		cs = append(cs, &cand{pl: pl, ms: r.ms[i], sh: low.SharedBytes})
	}
	predict := func(c *cand, cal *model.PyramidCal) {
		pr, err := model.Predict(model.Input{Prog: p, Sum: sum, Plan: c.pl, Shape: r.shape, Steps: 1000, Dev: dev, SharedBytes: c.sh, Cal: cal})
		c.pred = math.Inf(1)
		if err == nil {
			c.pred = pr.Seconds
		}
	}
	for _, c := range cs {
		predict(c, nil)
	}
	calibratePyramids(p, sum, r.shape, dev, cs, func(c *cand) (plan.Plan, float64, int) { return c.pl, c.ms, c.sh }, func(c *cand, cal *model.PyramidCal) { predict(c, cal) })
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].pred < cs[j].pred })
	if os.Getenv("REPLAYSHOW") != "" && strings.Contains(r.file, os.Getenv("REPLAYSHOW")) {
		for _, c := range cs[:min(14, len(cs))] {
			t.Logf("%-60s meas %.4f pred %.4f", c.pl, c.ms, c.pred)
		}
	}
	best, top, beta, nBeta := math.Inf(1), math.Inf(1), math.Inf(1), 0
	for i, c := range cs {
		best = math.Min(best, c.ms)
		if i < k {
			top = math.Min(top, c.ms)
		}
		if c.pred <= cs[0].pred*1.05 {
			beta = math.Min(beta, c.ms)
			nBeta++
		}
	}
	return replayResult{top: best / top, beta: best / beta, nBeta: nBeta, first: cs[0].pl.String()}
}

// replayResult is how the top-k and beta = 5% selections of one run did: the best measured
// time over the best of the selection, and how many plans beta would time.
type replayResult struct {
	top, beta float64
	nBeta     int
	first     string
}

// calibratePyramids calibrates each pyramid block shape that has PH=1 and PH=2 measurements
// and re-predicts that shape's plans, as the tuner does after timing those two heights.
func calibratePyramids[C any](p *ir.Program, sum *analysis.Summary, shape []int, dev *probe.Profile, cs []C, get func(C) (plan.Plan, float64, int), repredict func(C, *model.PyramidCal)) {
	type key struct{ bx, by, bz int }
	ph := map[key]map[int]C{}
	for _, c := range cs {
		pl, _, _ := get(c)
		if pl.Strategy != "pyramid" || (pl.PH != 1 && pl.PH != 2) {
			continue
		}
		k := key{pl.BX, pl.BY, pl.BZ}
		if ph[k] == nil {
			ph[k] = map[int]C{}
		}
		ph[k][pl.PH] = c
	}
	for k, m := range ph {
		c1, ok1 := m[1]
		c2, ok2 := m[2]
		if !ok1 || !ok2 {
			continue
		}
		pl1, ms1, sh1 := get(c1)
		_, ms2, _ := get(c2)
		cal, err := model.CalibratePyramid(model.Input{Prog: p, Sum: sum, Plan: pl1, Shape: shape, Dev: dev, SharedBytes: sh1}, 1000, ms1, 1000, ms2)
		if err != nil {
			continue
		}
		for _, c := range cs {
			if pl, _, _ := get(c); pl.Strategy == "pyramid" && pl.BX == k.bx && pl.BY == k.by && pl.BZ == k.bz {
				repredict(c, cal)
			}
		}
	}
}

// TestReplayH100 re-ranks the plans of the exhaustive tuner runs on the H100
// (testdata/h100-exhaustive.txt: nine AN5D stencils at 16384^2 / 512^3 with fast math, the
// 11 stencils of the in-plane suite at 512^2 x 256) with the current models and space, as the
// top-5 tuner would, and checks that the best of its five first plans measured at least 95%
// of the best plan, and that the topk+beta selection (those five and every plan predicted
// within 5% of the first) reaches 95% everywhere. It guards the models' ranking across plan
// families, which no model's own test sees. With top-5 alone Poisson is known to fall short
// (docs/performance.md: n5d shapes that measure within 7% of each other); its current ratio
// is a floor that a model change must not lower.
func TestReplayH100(t *testing.T) {
	known := map[string]float64{
		"examples/inplane/poisson.stencil": 0.93,
	}
	var b strings.Builder
	for _, r := range readReplay(t, "testdata/h100-exhaustive.txt") {
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
