package tune

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"tempest/internal/cpu"
	"tempest/internal/gpu"
	"tempest/internal/gpurun"
	"tempest/internal/ir"
	"tempest/internal/load"
	"tempest/internal/plan"
	"tempest/internal/probe"
	"tempest/internal/ref"
	"tempest/internal/state"
)

// openDevice opens OpenCL for the tests. A missing platform skips, unless
// TEMPEST_REQUIRE_OPENCL=1 says it must be there (CI sets it).
func openDevice(t *testing.T) gpu.Device {
	t.Helper()
	dev, err := gpu.Open("opencl")
	if err != nil {
		if os.Getenv("TEMPEST_REQUIRE_OPENCL") == "1" || !errors.Is(err, gpu.ErrUnavailable) {
			t.Fatalf("opening opencl: %v", err)
		}
		t.Skipf("opencl not available: %v", err)
	}
	t.Cleanup(func() { dev.Close() })
	return unoptimized{dev}
}

// unoptimized compiles without optimization on PoCL: the tests check which plans the tuner
// measures and keeps, not how fast they are, and LLVM's optimization of the deep n5d
// variants was most of their time in CI.
type unoptimized struct{ gpu.Device }

func (d unoptimized) Compile(name, src string, opt gpu.CompileOptions) (gpu.Module, error) {
	if strings.Contains(d.Props().Platform, "Portable Computing Language") {
		opt.Extra = append(opt.Extra[:len(opt.Extra):len(opt.Extra)], "-cl-opt-disable")
	}
	return d.Device.Compile(name, src, opt)
}

func program(t *testing.T, file string) *ir.Program {
	t.Helper()
	p, err := load.File("../../examples/"+file, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func newState(t *testing.T, p *ir.Program, shape []int) *state.State {
	t.Helper()
	s, err := state.New(p, shape, state.DefaultParams(p), 4)
	if err != nil {
		t.Fatal(err)
	}
	ref.Init(s)
	return s
}

func plans(t *testing.T, p *ir.Program, texts ...string) []plan.Plan {
	t.Helper()
	var out []plan.Plan
	for _, s := range texts {
		pl, err := plan.Parse(s, p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, pl)
	}
	return out
}

// verify runs a plan for n steps on a copy of s and compares it with the CPU engine.
func verify(t *testing.T, dev gpu.Device, s *state.State, pl plan.Plan, n int) {
	t.Helper()
	gs := s.Clone()
	r, err := gpurun.Prepare(dev, gs, pl)
	if err != nil {
		t.Fatalf("best plan %s does not run: %v", pl, err)
	}
	defer r.Close()
	if err := r.Run(n); err != nil {
		t.Fatal(err)
	}
	if err := r.Download(); err != nil {
		t.Fatal(err)
	}
	want := s.Clone()
	e := cpu.New(want)
	e.Run(n, nil)
	e.Sync()
	for _, u := range s.Prog.Updates {
		a, b := want.Cur[u.Grid.Index].Float64s(), gs.Cur[u.Grid.Index].Float64s()
		scale := 1.0
		for _, v := range a {
			scale = math.Max(scale, math.Abs(v))
		}
		for i := range a {
			if math.Abs(a[i]-b[i]) > 2e-5*scale {
				t.Fatalf("plan %s, grid %s cell %d: got %v, CPU engine %v", pl, u.Grid.Name, i, b[i], a[i])
			}
		}
	}
}

// The candidate lists keep PoCL's compilations few: every plan compiles once per test binary
// (PoCL caches kernels by source in the binary's own POCL_CACHE_DIR).
var (
	space2D = []string{"naive:bx=32,by=4", "tiled:bx=16,by=8", "stream25d:bx=32,chunk=16", "pyramid:bx=16,by=16,ph=1", "pyramid:bx=16,by=16,ph=2"}
	space3D = []string{"naive:bx=16,by=4", "tiled:bx=8,by=4,bz=4", "stream25d:bx=8,by=8,chunk=8", "pyramid:bx=8,by=8,bz=8,ph=1", "pyramid:bx=8,by=8,bz=8,ph=2"}
)

func TestTuneModesPickAPlanThatVerifies(t *testing.T) {
	dev := openDevice(t)
	prof, err := probe.Run(dev, probe.Options{Quick: true, Reps: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		file  string
		shape []int
		space []string
	}{
		{"an5d/j2d5pt.stencil", []int{45, 70}, space2D},
		{"an5d/star3d1r.stencil", []int{14, 12, 20}, space3D},
	} {
		p := program(t, c.file)
		s := newState(t, p, c.shape)
		for _, mode := range []Mode{TopK, Beta, TopKBeta, Exhaustive} {
			o := Options{Mode: mode, K: 2, Beta: 30, Seed: 1, Steps: 4, Reps: 2, Candidates: plans(t, p, c.space...),
				Profile: prof, Cache: &Cache{Dir: t.TempDir()}, Version: "test"}
			res, err := Tune(dev, s, o)
			if err != nil {
				t.Fatalf("%s %s: %v", p.Name, mode, err)
			}
			var b strings.Builder
			Report(&b, res, 3)
			t.Logf("%s %s: best %s, %d measured in %v\n%s", p.Name, mode, res.Best.Plan, res.Measured, res.Elapsed.Round(1e6), b.String())
			switch mode {
			case Exhaustive:
				// Every plan of the space, and the refinement's variants of the best besides
				// (a stream chunk close to its own, fineChunks, where the axis allows one).
				space := 0
				for _, cand := range res.Candidates {
					if !cand.Refined && cand.Status == Measured {
						space++
					}
				}
				if space != len(c.space) {
					t.Errorf("exhaustive measured %d of %d", space, len(c.space))
				}
			case TopK:
				// k = 2, plus up to two pyramid calibration runs ranked lower.
				if res.Measured < 2 || res.Measured > 4 {
					t.Errorf("top-2 measured %d", res.Measured)
				}
			case TopKBeta:
				// At least the top 2, and every plan predicted within 30% of the first.
				if res.Measured < 2 {
					t.Errorf("top-2+beta measured %d", res.Measured)
				}
				first := res.Candidates[0].Predicted
				for _, cand := range res.Candidates {
					if cand.Status == Unmeasured && cand.Predicted <= first*1.3 {
						t.Errorf("top-2+beta left %s unmeasured, predicted %.3g against the first's %.3g", cand.Plan, cand.Predicted, first)
					}
				}
			}
			if res.Best.Status != Measured || !(res.Best.SecondsPerStep > 0) {
				t.Errorf("best %+v", res.Best)
			}
			if s.Steps != 0 {
				t.Fatal("tuning must not advance the caller's state")
			}
			verify(t, dev, s, res.Best.Plan, 5)
		}
	}
}

func TestCacheRoundTripAndResume(t *testing.T) {
	dev := openDevice(t)
	p := program(t, "an5d/j2d5pt.stencil")
	s := newState(t, p, []int{45, 70})
	cache := &Cache{Dir: t.TempDir()}
	// No refinement: the leaders of the other strategies and the variants of a stream25d best
	// (fineChunks' chunks, whenever timing noise makes stream25d the fastest) would add
	// measurements.
	o := Options{Mode: TopK, K: 2, Seed: 7, Steps: 4, Reps: 2, Candidates: plans(t, p, space2D...), Cache: cache, Version: "test", NoCalibrate: true, NoRefine: true}
	first, err := Tune(dev, s, o)
	if err != nil {
		t.Fatal(err)
	}
	if first.Measured != 2 || first.Resumed != 0 {
		t.Fatalf("first run: %d measured, %d resumed", first.Measured, first.Resumed)
	}
	// The same search again measures nothing: everything comes from the cache.
	again, err := Tune(dev, s, o)
	if err != nil {
		t.Fatal(err)
	}
	if again.Measured != 0 || again.Resumed != 2 || again.Best.Plan.String() != first.Best.Plan.String() {
		t.Errorf("second run: %d measured, %d resumed, best %s (first %s)", again.Measured, again.Resumed, again.Best.Plan, first.Best.Plan)
	}
	// Exhaustive resumes: only the three not yet measured run.
	o.Mode = Exhaustive
	all, err := Tune(dev, s, o)
	if err != nil {
		t.Fatal(err)
	}
	if all.Measured != len(space2D)-2 || all.Resumed != 2 {
		t.Errorf("exhaustive after top-2: %d measured, %d resumed", all.Measured, all.Resumed)
	}
	// The file round-trips: the key, every record, the best plan.
	e, err := cache.Load(all.Key)
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Records) != len(space2D) || e.Key != all.Key || e.Best().Plan != all.Best.Plan.String() {
		t.Errorf("cache entry %+v (best %s)", e.Key, all.Best.Plan)
	}
	list, err := cache.List()
	if err != nil || len(list) != 1 {
		t.Fatalf("list: %v %d", err, len(list))
	}
	text := ListText(list, cache.Dir)
	if !strings.Contains(text, "j2d5pt") || !strings.Contains(text, all.Best.Plan.String()) || !strings.Contains(text, "2^5x2^6") {
		t.Errorf("list:\n%s", text)
	}
	// Another size class, type or version is another key.
	if k := KeyFor(p, []int{4096, 4096}, dev.Props(), "test", false); k.ID() == all.Key.ID() {
		t.Error("size class must be part of the key")
	}
	if k := KeyFor(p, s.Shape, dev.Props(), "other", false); k.ID() == all.Key.ID() {
		t.Error("version must be part of the key")
	}
	if k := KeyFor(p, s.Shape, dev.Props(), "test", true); k.ID() == all.Key.ID() || !k.FastMath {
		t.Error("fast math must be part of the key")
	}
	// An exact search's key is what it was before fast math joined the key.
	if data, _ := json.Marshal(all.Key); strings.Contains(string(data), "fastMath") {
		t.Errorf("exact key %s", data)
	}
	if SizeClass([]int{45, 70}) != "2^5x2^6" || SizeClass([]int{16386, 514}) != "2^14x2^9" {
		t.Errorf("size classes %s %s", SizeClass([]int{45, 70}), SizeClass([]int{16386, 514}))
	}
}

// TestFastMathSearchesAreCachedApart: a fast-math search compiles every candidate with fast
// math and records them under its own key; an exact search of the same space resumes none of
// them, and the list says which is which.
func TestFastMathSearchesAreCachedApart(t *testing.T) {
	dev := openDevice(t)
	p := program(t, "an5d/j2d5pt.stencil")
	s := newState(t, p, []int{45, 70})
	cache := &Cache{Dir: t.TempDir()}
	o := Options{Mode: Exhaustive, Steps: 4, Reps: 1, Candidates: plans(t, p, "naive:bx=32,by=4", "tiled:bx=16,by=8"), Cache: cache,
		Version: "test", FastMath: true}
	fast, err := Tune(dev, s, o)
	if err != nil {
		t.Fatal(err)
	}
	if !fast.Key.FastMath || fast.Measured != 2 {
		t.Fatalf("fast search: key %+v, %d measured", fast.Key, fast.Measured)
	}
	for _, c := range fast.Candidates {
		if !c.Plan.FastMath || !strings.Contains(c.Plan.String(), "fastmath=true") {
			t.Errorf("%s: not compiled with fast math", c.Plan)
		}
	}
	verify(t, dev, s, fast.Best.Plan, 3)
	o.FastMath = false
	exact, err := Tune(dev, s, o)
	if err != nil {
		t.Fatal(err)
	}
	if exact.Key.FastMath || exact.Resumed != 0 || exact.Measured != 2 || exact.Best.Plan.FastMath {
		t.Errorf("exact search after a fast one: key %+v, %d resumed, %d measured, best %s", exact.Key, exact.Resumed, exact.Measured, exact.Best.Plan)
	}
	list, err := cache.List()
	if err != nil || len(list) != 2 || list[0].Key.FastMath || !list[1].Key.FastMath {
		t.Fatalf("list: %v, %d entries", err, len(list))
	}
	text := ListText(list, cache.Dir)
	if !strings.Contains(text, " fast ") || !strings.Contains(text, " exact ") {
		t.Errorf("list:\n%s", text)
	}
}

func TestFailingCandidatesAreRecordedAndSkipped(t *testing.T) {
	dev := openDevice(t)
	p := program(t, "an5d/j2d5pt.stencil")
	s := newState(t, p, []int{45, 70})
	cache := &Cache{Dir: t.TempDir()}
	props := dev.Props()
	// Limits that let through a block larger than the device takes (it fails when compiled)
	// and refuse shared memory beyond 1 KB (the tiled plan is pruned).
	lim := plan.Limits{MaxThreadsPerBlock: 1 << 20, MaxSharedPerBlock: 1024}
	huge := plan.Plan{Strategy: "naive", BX: 2 * props.MaxThreadsPerBlock, BY: 1, BZ: 1}
	cands := append([]plan.Plan{huge}, plans(t, p, "tiled:bx=32,by=8", "naive:bx=32,by=4")...)
	o := Options{Mode: Exhaustive, Steps: 4, Reps: 2, Candidates: cands, Limits: &lim, Cache: cache, Version: "test"}
	res, err := Tune(dev, s, o)
	if err != nil {
		t.Fatal(err)
	}
	byPlan := map[string]*Candidate{}
	for _, c := range res.Candidates {
		byPlan[c.Plan.String()] = c
	}
	if c := byPlan[huge.String()]; c.Status != Failed || c.Reason == "" {
		t.Errorf("%s: %s %q", huge, c.Status, c.Reason)
	} else {
		t.Logf("%s failed: %s", huge, c.Reason)
	}
	if c := byPlan["tiled:bx=32,by=8"]; c.Status != Pruned || !strings.Contains(c.Reason, "shared memory") {
		t.Errorf("tiled: %s %q", c.Status, c.Reason)
	}
	if res.Best == nil || res.Best.Plan.String() != "naive:bx=32,by=4" || res.Failed != 1 || res.Pruned != 1 {
		t.Fatalf("best %v, %d failed, %d pruned", res.Best, res.Failed, res.Pruned)
	}
	e, _ := cache.Load(res.Key)
	if r := e.Lookup(huge.String()); r == nil || r.Status != Failed || r.Reason == "" {
		t.Errorf("the failure is not in the cache: %+v", r)
	}
	// Resuming does not try it again.
	again, err := Tune(dev, s, o)
	if err != nil {
		t.Fatal(err)
	}
	if again.Failed != 0 || again.Measured != 0 || again.Resumed != 2 {
		t.Errorf("resume: %d failed, %d measured, %d resumed", again.Failed, again.Measured, again.Resumed)
	}
}

func TestAutomaticSteps(t *testing.T) {
	mk := func(pred float64, pl plan.Plan) *Candidate { return &Candidate{Plan: pl, Predicted: pred} }
	// 50 ms at 0.1 ms per step: 500 steps, a multiple of 12.
	if n, q := chooseSteps([]*Candidate{mk(1e-4, plan.Plan{Strategy: "naive"})}); n != 504 || q != 12 {
		t.Errorf("steps %d quantum %d", n, q)
	}
	// A deep temporal block: at least twice it, multiples of 48; never more than 600.
	if n, q := chooseSteps([]*Candidate{mk(1, plan.Plan{Strategy: "naive"}), mk(2, plan.Plan{Strategy: "n5d", BT: 16})}); n != 48 || q != 48 {
		t.Errorf("steps %d quantum %d", n, q)
	}
	if n, _ := chooseSteps([]*Candidate{mk(1e-9, plan.Plan{Strategy: "naive"})}); n != 600 {
		t.Errorf("steps %d", n)
	}
	// On the device: each candidate's timed runs are multiples of the quantum (48: a block
	// deeper than 4 steps is among them) rounded up to whole launches of its own temporal
	// depth (48 for one-step plans, 50 for n5d's bt = 5, which 48 does not divide), within the
	// limit rounded down to such multiples.
	dev := openDevice(t)
	p := program(t, "an5d/j2d5pt.stencil")
	s := newState(t, p, []int{45, 70})
	res, err := Tune(dev, s, Options{Mode: Exhaustive, Reps: 1, Candidates: plans(t, p, "naive:bx=32,by=4", "tiled:bx=16,by=8", "n5d:bx=32,bt=5,chunk=16")})
	if err != nil {
		t.Fatal(err)
	}
	if res.Steps%48 != 0 {
		t.Fatalf("limit %d is not a multiple of the quantum", res.Steps)
	}
	for _, c := range res.Selected() {
		q := 48
		if c.Plan.BT > 1 {
			q = 50
		}
		if c.Steps < q || c.Steps%q != 0 || c.Steps > max(res.Steps/q*q, q) {
			t.Errorf("%s: %d steps (limit %d)", c.Plan, c.Steps, res.Steps)
		}
	}
}

// TestRegisterCaps: the caps that let one and two more blocks reside, on the H100's limits
// (64K registers and 2048 threads per SM, 228 KB of shared memory).
func TestRegisterCaps(t *testing.T) {
	h100 := h100Props
	for _, c := range []struct {
		threads, shared, regs, maxRegs int
		want                           []int
	}{
		{128, 23232, 127, 0, []int{96, 80}}, // star2d1r bt=11: 16 warps, then 20 and 24
		{128, 20000, 160, 0, []int{128, 96}},
		{128, 20000, 160, 128, []int{96, 80}}, // already capped at 128
		{512, 40000, 56, 0, []int{40}},        // 3 blocks need 42 registers or fewer; 4 would need 32
		{128, 100000, 127, 0, nil},            // shared memory holds two blocks whatever the registers
		{1024, 0, 32, 0, nil},                 // threads bound it
		{128, 0, 0, 0, nil},                   // no register count (OpenCL)
	} {
		if got := registerCaps(h100, c.threads, c.shared, c.regs, c.maxRegs); !slices.Equal(got, c.want) {
			t.Errorf("%d threads, %d B shared, %d registers (cap %d): caps %v, want %v", c.threads, c.shared, c.regs, c.maxRegs, got, c.want)
		}
	}
	if got := registerCaps(gpu.Props{}, 128, 0, 127, 0); got != nil {
		t.Errorf("a device without register limits: %v", got)
	}
}

// TestRefineTriesVariantsOfTheBest: after the space, the best n5d plan is measured again with
// deeper prefetches (pf=2 and 3 divide j2d5pt's round of 6 planes); the variants are marked,
// cached, resumed, and the fastest of all is the result.
func TestRefineTriesVariantsOfTheBest(t *testing.T) {
	dev := openDevice(t)
	p := program(t, "an5d/j2d5pt.stencil")
	s := newState(t, p, []int{45, 70})
	cache := &Cache{Dir: t.TempDir()}
	o := Options{Mode: Exhaustive, Steps: 4, Reps: 1, Candidates: plans(t, p, "n5d:bx=32,bt=2,chunk=16", "n5d:bx=16,bt=3,chunk=16"),
		Cache: cache, Version: "test"}
	res, err := Tune(dev, s, o)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	Report(&b, res, 3)
	t.Logf("\n%s", b.String())
	// The other plan is refined too if it timed within 10% of the best.
	var refined []string
	n := 0
	for _, c := range res.Candidates {
		if c.Refined {
			n++
			if c.Status != Measured {
				t.Errorf("variant %s: %s", c.Plan, c.Status)
			}
			// The refinement's prefetch variants (the neighbours' round and chunk variants
			// of the best follow them).
			if c.Plan.BX == res.SpaceBest.Plan.BX && c.Plan.BT == res.SpaceBest.Plan.BT && c.Plan.Chunk == res.SpaceBest.Plan.Chunk && c.Plan.Unroll == 0 && !c.Plan.Phased && !c.Plan.RimCut && !c.Plan.RimBlocks && !c.Plan.Unclamped && !c.Plan.Edges && !c.Plan.EdgesFirst && !c.Plan.Ascend && !c.Plan.ConstSize && !c.Plan.Align {
				refined = append(refined, c.Plan.String())
			}
		}
	}
	if res.SpaceBest == nil || res.SpaceBest.Refined || len(refined) != 2 || !strings.Contains(refined[0], "pf=2") || !strings.Contains(refined[1], "pf=3") {
		t.Fatalf("space best %v, refined %v", res.SpaceBest, refined)
	}
	if res.Measured != 2+n || fastest(res.Candidates) != res.Best {
		t.Errorf("%d measured, best %s", res.Measured, res.Best.Plan)
	}
	if !strings.Contains(b.String(), "ref ") {
		t.Errorf("the report does not mark the variants:\n%s", b.String())
	}
	verify(t, dev, s, res.Best.Plan, 7)
	// Resumed: nothing is measured again, the variants included.
	again, err := Tune(dev, s, o)
	if err != nil {
		t.Fatal(err)
	}
	if again.Measured != 0 || again.Resumed != 2+n || again.Best.Plan != res.Best.Plan {
		t.Errorf("resume: %d measured, %d resumed, best %s (first %s)", again.Measured, again.Resumed, again.Best.Plan, res.Best.Plan)
	}
	// NoRefine measures the space only.
	o.NoRefine, o.Cache = true, nil
	plain, err := Tune(dev, s, o)
	if err != nil {
		t.Fatal(err)
	}
	if plain.Measured != 2 || plain.Best != plain.SpaceBest {
		t.Errorf("without refinement: %d measured", plain.Measured)
	}
}

// TestNeighboursTryChunksAndScalarAccesses: the refinement ends with the fastest plan's stream
// chunk a quarter shorter and longer (multiples of 16) and, for an n5d plan whose threads
// hold pairs of cells, with scalar global accesses (vec=1), phased loops, chunks cut at the rim
// and short rounds; last, the best plan compiled for the run's size (constsize) and with its rows
// padded (align).
func TestNeighboursTryChunksAndScalarAccesses(t *testing.T) {
	dev := openDevice(t)
	p := program(t, "an5d/j2d5pt.stencil")
	s := newState(t, p, []int{100, 70})
	o := Options{Mode: Exhaustive, Steps: 6, Reps: 1, Candidates: plans(t, p, "n5d:bx=16,bt=3,rx=2,chunk=64"), Version: "test"}
	res, err := Tune(dev, s, o)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, c := range res.Candidates {
		if !c.Refined {
			continue
		}
		if c.Status != Measured {
			t.Errorf("variant %s: %s", c.Plan, c.Status)
		}
		switch {
		case c.Plan.Align: // the walk's end: rows of 70 are no whole lines (and the padded plan's neighbours)
			seen["align"] = true
		case c.Plan.Chunk%16 != 0: // only fineChunks leaves the 16-plane grid (on a constsize best too)
			seen["fine chunk"] = true
		case c.Plan.ConstSize: // compiledSwitches and the last step, on the best plan
			seen["constsize"] = true
		case c.Plan.Chunk == 48, c.Plan.Chunk == 80:
			seen[fmt.Sprintf("chunk=%d", c.Plan.Chunk)] = true
		case c.Plan.Vec == 1:
			seen["vec=1"] = true
		case c.Plan.Phased:
			seen["phased"] = true
		case c.Plan.Unroll == 3:
			seen["unroll=3"] = true
		case c.Plan.RimCut:
			seen["rimcut"] = true
		case c.Plan.Edges:
			seen["edges"] = true
		case c.Plan.EdgesFirst:
			seen["edgesfirst"] = true
		}
	}
	for _, want := range []string{"chunk=48", "chunk=80", "vec=1", "phased", "unroll=3", "rimcut", "edges", "edgesfirst", "fine chunk", "constsize", "align"} {
		if !seen[want] {
			t.Errorf("no measured variant with %s among %d candidates", want, len(res.Candidates))
		}
	}
	if fastest(res.Candidates) != res.Best {
		t.Errorf("best %s is not the fastest", res.Best.Plan)
	}
	verify(t, dev, s, res.Best.Plan, 7)
}

// TestRoundVariants: phased loops where the depth runs one loop, chunks cut at the rim, the
// rim's blocks, unclamped loads (not with asynchronous copies) and the edge loop, the
// edge tiles first, idle warps skipping levels (where a warp is idle at
// some level: whole-row warps of 3D tiles, not the four-row warps of j3d27pt's case), short
// rounds where the program allows them, with a prefetch that divides them.
func TestRoundVariants(t *testing.T) {
	checkVariants(t, roundVariants, []variantCase{
		{"an5d/j2d5pt.stencil", "n5d:bx=128,bt=8,rx=2,pf=2", []string{
			"n5d:bx=128,by=1,bt=8,rx=2,wave=true,pf=2,phased=true,chunk=256",
			"n5d:bx=128,by=1,bt=8,rx=2,wave=true,pf=2,rimcut=true,chunk=256",
			"n5d:bx=128,by=1,bt=8,rx=2,wave=true,pf=2,rimblocks=true,chunk=256",
			"n5d:bx=128,by=1,bt=8,rx=2,wave=true,pf=2,unclamped=true,chunk=256",
			"n5d:bx=128,by=1,bt=8,rx=2,wave=true,pf=2,edges=true,chunk=256",
			"n5d:bx=128,by=1,bt=8,rx=2,wave=true,pf=2,edgesfirst=true,chunk=256",
			"n5d:bx=128,by=1,bt=8,rx=2,wave=true,pf=3,unroll=3,chunk=256"}},
		{"an5d/star2d2r.stencil", "n5d:bx=128,bt=2,rx=2,pf=5", []string{
			"n5d:bx=128,by=1,bt=2,rx=2,wave=true,pf=5,rimcut=true,chunk=256",
			"n5d:bx=128,by=1,bt=2,rx=2,wave=true,pf=5,rimblocks=true,chunk=256",
			"n5d:bx=128,by=1,bt=2,rx=2,wave=true,pf=5,unclamped=true,chunk=256",
			"n5d:bx=128,by=1,bt=2,rx=2,wave=true,pf=5,edges=true,chunk=256",
			"n5d:bx=128,by=1,bt=2,rx=2,wave=true,pf=5,edgesfirst=true,chunk=256",
			"n5d:bx=128,by=1,bt=2,rx=2,wave=true,pf=5,unroll=5,chunk=256"}},
		{"an5d/star3d1r.stencil", "n5d:bx=16,by=32,bt=4,rx=2,unroll=3,phased=true,rimcut=true,edges=true,edgesfirst=true,unclamped=true,shrink=true,ascend=true", nil},
		// 3D stars take their levels lowest first (ascend); the boxes below do not.
		{"an5d/star3d1r.stencil", "n5d:bx=16,by=32,bt=4,rx=2,unroll=3,phased=true,rimcut=true,edges=true,edgesfirst=true,unclamped=true,shrink=true", []string{
			"n5d:bx=16,by=32,bt=4,rx=2,wave=true,unroll=3,phased=true,rimcut=true,edges=true,edgesfirst=true,unclamped=true,shrink=true,ascend=true,chunk=64"}},
		// Warps of two rows of one-row threads: the rows near the tile's edges idle from level 2 on.
		{"an5d/star3d1r.stencil", "n5d:bx=16,by=32,bt=4,rx=2,unroll=3,phased=true,rimcut=true,edges=true,edgesfirst=true,unclamped=true", []string{
			"n5d:bx=16,by=32,bt=4,rx=2,wave=true,unroll=3,phased=true,rimcut=true,edges=true,edgesfirst=true,unclamped=true,shrink=true,chunk=64",
			"n5d:bx=16,by=32,bt=4,rx=2,wave=true,unroll=3,phased=true,rimcut=true,edges=true,edgesfirst=true,unclamped=true,ascend=true,chunk=64"}},
		{"an5d/star3d1r.stencil", "n5d:bx=16,by=32,bt=4,rx=2,async=2", []string{
			"n5d:bx=16,by=32,bt=4,rx=2,wave=true,async=2,phased=true,chunk=64",
			"n5d:bx=16,by=32,bt=4,rx=2,wave=true,async=2,rimcut=true,chunk=64",
			"n5d:bx=16,by=32,bt=4,rx=2,wave=true,async=2,rimblocks=true,chunk=64",
			"n5d:bx=16,by=32,bt=4,rx=2,wave=true,async=2,edges=true,chunk=64",
			"n5d:bx=16,by=32,bt=4,rx=2,wave=true,async=2,edgesfirst=true,chunk=64",
			"n5d:bx=16,by=32,bt=4,rx=2,wave=true,async=2,shrink=true,chunk=64",
			"n5d:bx=16,by=32,bt=4,rx=2,wave=true,async=2,ascend=true,chunk=64",
			"n5d:bx=16,by=32,bt=4,rx=2,wave=true,async=2,unroll=3,chunk=64"}},
		{"an5d/j3d27pt.stencil", "n5d:bx=16,by=16,bt=2,rx=2,ry=2,pf=2,fastmath=true", []string{
			"n5d:bx=16,by=16,bt=2,rx=2,ry=2,wave=true,pf=2,rimcut=true,chunk=64,fastmath=true",
			"n5d:bx=16,by=16,bt=2,rx=2,ry=2,wave=true,pf=2,rimblocks=true,chunk=64,fastmath=true",
			"n5d:bx=16,by=16,bt=2,rx=2,ry=2,wave=true,pf=2,unclamped=true,chunk=64,fastmath=true",
			"n5d:bx=16,by=16,bt=2,rx=2,ry=2,wave=true,pf=2,edges=true,chunk=64,fastmath=true",
			"n5d:bx=16,by=16,bt=2,rx=2,ry=2,wave=true,pf=2,edgesfirst=true,chunk=64,fastmath=true",
			"n5d:bx=16,by=16,bt=2,rx=2,ry=2,wave=true,pf=2,chunk=64,fastmath=true,centrefirst=true",
			"n5d:bx=16,by=16,bt=2,rx=2,ry=2,wave=true,pf=3,unroll=3,chunk=64,fastmath=true"}},
		// Under a register cap the short round also goes without a prefetch.
		{"an5d/box3d1r.stencil", "n5d:bx=32,by=12,bt=2,rx=2,ry=2,pf=2,chunk=80,maxregs=80,phased=true,rimcut=true,edges=true,edgesfirst=true", []string{
			"n5d:bx=32,by=12,bt=2,rx=2,ry=2,wave=true,pf=2,phased=true,rimcut=true,edges=true,edgesfirst=true,unclamped=true,chunk=80,maxregs=80",
			"n5d:bx=32,by=12,bt=2,rx=2,ry=2,wave=true,pf=2,phased=true,rimcut=true,edges=true,edgesfirst=true,shrink=true,chunk=80,maxregs=80",
			"n5d:bx=32,by=12,bt=2,rx=2,ry=2,wave=true,unroll=3,phased=true,rimcut=true,edges=true,edgesfirst=true,chunk=80,maxregs=80",
			"n5d:bx=32,by=12,bt=2,rx=2,ry=2,wave=true,pf=3,unroll=3,phased=true,rimcut=true,edges=true,edgesfirst=true,chunk=80,maxregs=80"}},
		// 2D stars do not ascend; the centre's terms, in the middle of the canonical order,
		// may go first.
		{"an5d/star2d1r.stencil", "n5d:bx=128,bt=10,rx=2,pf=2,phased=true,rimcut=true,edges=true,edgesfirst=true,unclamped=true,unroll=3,fastmath=true", []string{
			"n5d:bx=128,by=1,bt=10,rx=2,wave=true,pf=2,unroll=3,phased=true,rimcut=true,edges=true,edgesfirst=true,unclamped=true,chunk=256,fastmath=true,centrefirst=true"}},
		{"morph/dilate2d.stencil", "n5d:bx=32,bt=2", []string{
			"n5d:bx=32,by=1,bt=2,wave=true,rimcut=true,chunk=256",
			"n5d:bx=32,by=1,bt=2,wave=true,rimblocks=true,chunk=256",
			"n5d:bx=32,by=1,bt=2,wave=true,unclamped=true,chunk=256",
			"n5d:bx=32,by=1,bt=2,wave=true,edges=true,chunk=256",
			"n5d:bx=32,by=1,bt=2,wave=true,edgesfirst=true,chunk=256"}},
	})
}

// TestWiderTiles: a 3D n5d plan gets twice its threads along x and along y where a block
// still holds them (1024 threads); blocks that cannot double and 2D plans get none.
func TestWiderTiles(t *testing.T) {
	checkVariants(t, widerTiles, []variantCase{
		{"an5d/star3d1r.stencil", "n5d:bx=16,by=24,bt=4,rx=2,ry=2,unroll=3,ascend=true,chunk=64,maxregs=80", []string{
			"n5d:bx=32,by=24,bt=4,rx=2,ry=2,wave=true,unroll=3,ascend=true,chunk=64,maxregs=80",
			"n5d:bx=16,by=48,bt=4,rx=2,ry=2,wave=true,unroll=3,ascend=true,chunk=64,maxregs=80"}},
		{"an5d/j3d27pt.stencil", "n5d:bx=32,by=8,bt=2,rx=2,ry=3,pf=2,chunk=32", []string{
			"n5d:bx=64,by=8,bt=2,rx=2,ry=3,wave=true,pf=2,chunk=32",
			"n5d:bx=32,by=16,bt=2,rx=2,ry=3,wave=true,pf=2,chunk=32"}},
		{"an5d/star3d1r.stencil", "n5d:bx=32,by=24,bt=4,rx=2,ry=2,chunk=64", nil},
		{"an5d/star3d1r.stencil", "n5d:bx=32,by=16,bt=4,rx=2,chunk=64", []string{
			"n5d:bx=64,by=16,bt=4,rx=2,wave=true,chunk=64",
			"n5d:bx=32,by=32,bt=4,rx=2,wave=true,chunk=64"}},
		{"an5d/star2d1r.stencil", "n5d:bx=128,bt=8,rx=2", nil},
	})
}

// TestRowVariants: a shallow 3D n5d plan gets two-row threads over the same tile and over a
// tile twice as wide; deep, 2D and already two-row plans get none.
func TestRowVariants(t *testing.T) {
	checkVariants(t, rowVariants, []variantCase{
		{"an5d/j3d27pt.stencil", "n5d:bx=16,by=32,bt=2,rx=2,pf=2,fastmath=true", []string{
			"n5d:bx=16,by=16,bt=2,rx=2,ry=2,wave=true,pf=2,chunk=64,fastmath=true",
			"n5d:bx=32,by=16,bt=2,rx=2,ry=2,wave=true,pf=2,chunk=64,fastmath=true"}},
		{"an5d/box3d1r.stencil", "n5d:bx=16,by=32,bt=1,rx=2,vec=1", []string{
			"n5d:bx=16,by=16,bt=1,rx=2,ry=2,wave=true,vec=1,chunk=64",
			"n5d:bx=32,by=16,bt=1,rx=2,ry=2,wave=true,vec=1,chunk=64"}},
		{"an5d/star3d1r.stencil", "n5d:bx=16,by=32,bt=4,rx=2", nil},
		{"an5d/j3d27pt.stencil", "n5d:bx=16,by=16,bt=2,rx=2,ry=2", nil},
		{"an5d/j2d5pt.stencil", "n5d:bx=128,bt=2,rx=2", nil},
	})
}

// TestAsyncVariants: the refinement's asynchronous-copy variants of an n5d plan are two and
// five planes ahead in place of its prefetch, and in 3D two-row tiles five planes ahead,
// capped where a plan of 80 registers would need twice as many as a block of its threads may
// hold (a 1024-thread tile twice as tall, whose cap would be 64, is left out); none for other
// strategies or plans that already copy asynchronously.
func TestAsyncVariants(t *testing.T) {
	checkVariants(t, func(p *ir.Program, pl plan.Plan) []plan.Plan { return asyncVariants(p, pl, 80, 65536) }, []variantCase{
		{"an5d/j2d5pt.stencil", "n5d:bx=128,bt=8,rx=2,pf=3,maxregs=96", []string{
			"n5d:bx=128,by=1,bt=8,rx=2,wave=true,async=2,chunk=256,maxregs=96",
			"n5d:bx=128,by=1,bt=8,rx=2,wave=true,async=5,chunk=256,maxregs=96"}},
		{"an5d/star2d2r.stencil", "n5d:bx=128,bt=4,rx=2", []string{
			"n5d:bx=128,by=1,bt=4,rx=2,wave=true,async=2,chunk=256",
			"n5d:bx=128,by=1,bt=4,rx=2,wave=true,async=5,chunk=256"}},
		{"an5d/star3d1r.stencil", "n5d:bx=16,by=32,bt=4,rx=2,pf=3", []string{
			"n5d:bx=16,by=32,bt=4,rx=2,wave=true,async=2,chunk=64",
			"n5d:bx=16,by=32,bt=4,rx=2,wave=true,async=5,chunk=64",
			"n5d:bx=16,by=16,bt=4,rx=2,ry=2,wave=true,async=5,chunk=64",
			"n5d:bx=16,by=32,bt=4,rx=2,ry=2,wave=true,async=5,chunk=64,maxregs=128"}},
		{"an5d/star3d1r.stencil", "n5d:bx=32,by=32,bt=3,rx=2", []string{
			"n5d:bx=32,by=32,bt=3,rx=2,wave=true,async=2,chunk=64",
			"n5d:bx=32,by=32,bt=3,rx=2,wave=true,async=5,chunk=64",
			"n5d:bx=32,by=16,bt=3,rx=2,ry=2,wave=true,async=5,chunk=64,maxregs=128"}},
		{"an5d/star3d1r.stencil", "n5d:bx=32,by=16,bt=2,async=1", nil},
		{"an5d/j2d5pt.stencil", "pyramid", nil},
	})
}

// TestNeighbourPlans: an n5d plan that copies asynchronously is tried with the register
// prefetch instead (two planes ahead where that divides the round); two-row variants only on
// the first pass.
func TestNeighbourPlans(t *testing.T) {
	p := program(t, "an5d/j3d27pt.stencil")
	shape := []int{514, 514, 514}
	has := func(pls []plan.Plan, want string) bool {
		return slices.ContainsFunc(pls, func(pl plan.Plan) bool { return pl.String() == want })
	}
	async := plans(t, p, "n5d:bx=32,by=16,bt=2,rx=2,ry=2,async=5,edgesfirst=true,chunk=64,fastmath=true")[0]
	if pls, want := neighbourPlans(p, shape, async, true), "n5d:bx=32,by=16,bt=2,rx=2,ry=2,wave=true,pf=2,edgesfirst=true,chunk=64,fastmath=true"; !has(pls, want) {
		t.Errorf("no %s among %v", want, pls)
	}
	pf := plans(t, p, "n5d:bx=16,by=32,bt=2,rx=2,pf=2,chunk=64,fastmath=true")[0]
	for _, pl := range neighbourPlans(p, shape, pf, true) {
		if pl.Async > 0 {
			t.Errorf("%s: a copying variant %s", pf, pl)
		}
	}
	if pls, want := neighbourPlans(p, shape, pf, true), "n5d:bx=16,by=16,bt=2,rx=2,ry=2,wave=true,pf=2,chunk=64,fastmath=true"; !has(pls, want) {
		t.Errorf("no %s among %v", want, pls)
	}
	for _, pl := range neighbourPlans(p, shape, pf, false) {
		if pl.RY > 1 {
			t.Errorf("second pass: a two-row variant %s", pl)
		}
	}
}

// TestRimBlockChunks: a plan with the rim's blocks is tried at chunks 1.5, 2 and 2.5 times as
// long (multiples of 16, shorter than the streaming axis); plans without them get none.
func TestRimBlockChunks(t *testing.T) {
	p := program(t, "an5d/j2d5pt.stencil")
	rb := plans(t, p, "n5d:bx=128,bt=8,rx=2,rimblocks=true,chunk=256")[0]
	var got []int
	for _, pl := range rimBlockChunks([]int{16386, 16386}, rb) {
		got = append(got, pl.Chunk)
		if !pl.RimBlocks || pl.BT != 8 {
			t.Errorf("%s: not the plan's variant", pl)
		}
	}
	if !slices.Equal(got, []int{384, 512, 640}) {
		t.Errorf("chunks %v, want [384 512 640]", got)
	}
	if pls := rimBlockChunks([]int{600, 600}, rb); len(pls) != 2 {
		t.Errorf("a 600-plane axis: %v", pls)
	}
	if pls := rimBlockChunks([]int{16386, 16386}, plans(t, p, "n5d:bx=128,bt=8,rx=2,chunk=256")[0]); pls != nil {
		t.Errorf("without rimblocks: %v", pls)
	}
}

// TestOccupancyVariants: a 3D n5d plan whose registers let one block per SM is tried a quarter
// shorter, capped where two of the shorter blocks would not fit otherwise (the 27-point
// stencils' two-row blocks: 32 x 16 threads at 96 registers need 80; at 72, with asynchronous
// copies, none); blocks that share an SM, unknown registers (OpenCL) and 2D get none.
func TestOccupancyVariants(t *testing.T) {
	with := func(regs, shared int) func(*ir.Program, plan.Plan) []plan.Plan {
		return func(p *ir.Program, pl plan.Plan) []plan.Plan {
			return occupancyVariants(p, h100Props, pl, regs, shared)
		}
	}
	for _, c := range []struct {
		regs, shared int
		cases        []variantCase
	}{
		{96, 33000, []variantCase{
			{"an5d/j3d27pt.stencil", "n5d:bx=32,by=16,bt=2,rx=2,ry=2,pf=2,chunk=80,fastmath=true", []string{
				"n5d:bx=32,by=12,bt=2,rx=2,ry=2,wave=true,pf=2,chunk=80,maxregs=80,fastmath=true"}},
			{"an5d/box3d1r.stencil", "n5d:bx=16,by=16,bt=2,rx=2,ry=2,pf=2,chunk=80", nil}, // two per SM
			// Capped, a deeper prefetch goes to two planes ahead.
			{"an5d/box3d1r.stencil", "n5d:bx=32,by=16,bt=2,rx=2,ry=2,pf=3,chunk=64", []string{
				"n5d:bx=32,by=12,bt=2,rx=2,ry=2,wave=true,pf=2,chunk=64,maxregs=80"}},
			{"an5d/j3d27pt.stencil", "n5d:bx=32,by=12,bt=2,rx=2,ry=2,pf=2,maxregs=80", nil},
			{"an5d/j2d9pt.stencil", "n5d:bx=512,bt=4,rx=2", nil},
		}},
		{72, 33000, []variantCase{
			{"an5d/box3d1r.stencil", "n5d:bx=32,by=16,bt=2,rx=2,ry=2,async=5,edgesfirst=true,chunk=64", []string{
				"n5d:bx=32,by=12,bt=2,rx=2,ry=2,wave=true,async=5,edgesfirst=true,chunk=64",
				// and with the register prefetch instead, capped for two blocks
				"n5d:bx=32,by=12,bt=2,rx=2,ry=2,wave=true,pf=2,edgesfirst=true,chunk=64,maxregs=80"}},
		}},
		// The prefetch's cap would be below the copying plan's registers.
		{88, 33000, []variantCase{
			{"an5d/box3d1r.stencil", "n5d:bx=32,by=16,bt=2,rx=2,ry=2,async=5,chunk=64", []string{
				"n5d:bx=32,by=12,bt=2,rx=2,ry=2,wave=true,async=5,chunk=64,maxregs=80"}},
		}},
		// A block of 1024 threads: two of 768 need 40 registers, which a kernel of 48 may take
		// and one of 64 would spill.
		{48, 20000, []variantCase{{"an5d/star3d1r.stencil", "n5d:bx=32,by=32,bt=2,rx=2", []string{
			"n5d:bx=32,by=24,bt=2,rx=2,wave=true,chunk=64,maxregs=40"}}}},
		{64, 20000, []variantCase{{"an5d/star3d1r.stencil", "n5d:bx=32,by=32,bt=2,rx=2", nil}}},
		// star3d1r's tuned block: two of 16 warps at 64 registers.
		{64, 52480, []variantCase{{"an5d/star3d1r.stencil", "n5d:bx=16,by=32,bt=4,rx=2,pf=3", nil}}},
		{0, 33000, []variantCase{{"an5d/j3d27pt.stencil", "n5d:bx=32,by=16,bt=2,rx=2,ry=2", nil}}},
	} {
		checkVariants(t, with(c.regs, c.shared), c.cases)
	}
}

// variantCase is a plan of a program and the refinement variants wanted of it, printed.
type variantCase struct {
	program, plan string
	want          []string
}

// checkVariants compares the variants of each case's plan with those wanted, in order.
func checkVariants(t *testing.T, variants func(*ir.Program, plan.Plan) []plan.Plan, cases []variantCase) {
	t.Helper()
	for _, c := range cases {
		p := program(t, c.program)
		var got []string
		for _, pl := range variants(p, plans(t, p, c.plan)[0]) {
			got = append(got, pl.String())
		}
		if strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("%s %s:\n got  %v\n want %v", c.program, c.plan, got, c.want)
		}
	}
}

// TestDeeperRows: a shallow 3D n5d plan of two rows per thread gets the same tile with three
// rows per thread, uncapped, with its loop switches and without; one-row plans, deep plans and tiles whose rows three do not
// divide get none.
func TestDeeperRows(t *testing.T) {
	checkVariants(t, deeperRows, []variantCase{
		{"an5d/box3d1r.stencil", "n5d:bx=32,by=12,bt=2,rx=2,ry=2,pf=2,chunk=48,maxregs=80,fastmath=true", []string{
			"n5d:bx=32,by=8,bt=2,rx=2,ry=3,wave=true,pf=2,chunk=48,fastmath=true"}},
		{"an5d/j3d27pt.stencil", "n5d:bx=32,by=6,bt=2,rx=2,ry=2", []string{
			"n5d:bx=32,by=4,bt=2,rx=2,ry=3,wave=true,chunk=64"}},
		// The loop switches inherited, and without them.
		{"an5d/j3d27pt.stencil", "n5d:bx=32,by=12,bt=2,rx=2,ry=2,pf=2,rimblocks=true,edgesfirst=true,chunk=64,maxregs=80,fastmath=true", []string{
			"n5d:bx=32,by=8,bt=2,rx=2,ry=3,wave=true,pf=2,rimblocks=true,edgesfirst=true,chunk=64,fastmath=true",
			"n5d:bx=32,by=8,bt=2,rx=2,ry=3,wave=true,pf=2,chunk=64,fastmath=true"}},
		{"an5d/box3d1r.stencil", "n5d:bx=32,by=16,bt=2,rx=2,ry=2", nil}, // 32 rows
		{"an5d/box3d1r.stencil", "n5d:bx=32,by=12,bt=2,rx=2", nil},
		{"an5d/star3d1r.stencil", "n5d:bx=16,by=12,bt=4,rx=2,ry=2", nil},
		{"an5d/j2d5pt.stencil", "n5d:bx=128,bt=4,rx=2", nil},
	})
}

// TestChunkWalk: after a chunk a quarter shorter won, the walk measures quarter steps further
// the same way while they win (made-up times with the best chunk at 32: 64 -> 48 -> 32, then 16
// loses), at most three, and nothing where the fastest is not a chunk neighbour of the plan.
func TestChunkWalk(t *testing.T) {
	p := program(t, "an5d/j3d27pt.stencil")
	base := plans(t, p, "n5d:bx=32,by=8,bt=2,rx=2,ry=3,pf=2,chunk=64,fastmath=true")[0]
	var timed []int
	lim := gpurun.Limits(fakeDevice{props: h100Props})
	tu := &tuner{dev: fakeDevice{props: h100Props}, s: shapeless(p, benchShape(p)), o: Options{Limits: &lim, Profile: h100Probed(), FastMath: true}, res: &Result{}}
	tu.timeFor = func(c *Candidate) {
		d := float64(c.Plan.Chunk - 32)
		c.Status, c.SecondsPerStep = Measured, (1+d*d/1e4)*1e-3
		timed = append(timed, c.Plan.Chunk)
	}
	variant := tu.variants()
	from := variant(base)
	tu.measure([]*Candidate{from})
	tu.res.Candidates = []*Candidate{from}
	tu.refined(from, tu.unmeasured(variant, neighbourPlans(p, tu.s.Shape, base, false)))
	tu.chunkWalk(variant, from)
	if got := fastest(tu.res.Candidates).Plan.Chunk; got != 32 {
		t.Errorf("best chunk %d, want 32 (timed %v)", got, timed)
	}
	if got, want := fmt.Sprint(timed[len(timed)-2:]), "[32 16]"; got != want {
		t.Errorf("the walk timed %s last, want %s (all: %v)", got, want, timed)
	}
	n := len(timed)
	tu.chunkWalk(variant, fastest(tu.res.Candidates))
	if len(timed) != n {
		t.Errorf("a walk from the fastest timed %v", timed[n:])
	}
}

// TestCombineSwitches: after the loop variants of the best plan, the winner's own variants
// are measured while one of them wins, so switches that each won alone are combined (on
// made-up times: the rim's blocks, unclamped loads and the edge tiles first each shorten a
// step, the other switches lengthen it), and the search stops once no variant of the fastest
// wins.
func TestCombineSwitches(t *testing.T) {
	p := program(t, "an5d/j2d9pt.stencil")
	base := plans(t, p, "n5d:bx=128,bt=7,rx=2,pf=5,chunk=320,maxregs=96,fastmath=true")[0]
	timeOf := func(pl plan.Plan) float64 {
		s := 1.0
		for _, d := range []struct {
			on bool
			by float64
		}{{pl.RimBlocks, -0.03}, {pl.Unclamped, -0.01}, {pl.EdgesFirst, -0.005}, {pl.Phased, 0.1}, {pl.RimCut, 0.02},
			{pl.Edges, 0.05}, {pl.CentreFirst, 0.02}, {pl.Unroll > 0, 0.05}} {
			if d.on {
				s += d.by
			}
		}
		return s * 1e-3
	}
	tu, timedOf := madeUpTuner(p, true, timeOf)
	variant := tu.variants()
	best := variant(base)
	if best == nil {
		t.Fatalf("%s pruned", base)
	}
	tu.measure([]*Candidate{best})
	tu.res.Candidates = []*Candidate{best}
	tu.refined(best, tu.unmeasured(variant, roundVariants(p, base)))
	first := len(timedOf())
	tu.combine(variant, best)
	want := "n5d:bx=128,by=1,bt=7,rx=2,wave=true,pf=5,rimblocks=true,edgesfirst=true,unclamped=true,chunk=320,maxregs=96,fastmath=true"
	if got := fastest(tu.res.Candidates).Plan.String(); got != want {
		t.Errorf("best %s, want %s", got, want)
	}
	// Three rounds: from the rim's blocks, from those with unclamped loads, and from all three
	// (none of whose variants wins); no plan twice.
	seen := map[string]bool{}
	for _, s := range timedOf() {
		if seen[s] {
			t.Errorf("%s timed twice", s)
		}
		seen[s] = true
	}
	if n := len(timedOf()) - first; n < 3 || n > 3*len(roundVariants(p, base)) {
		t.Errorf("%d plans timed by the combination: %v", n, timedOf()[first:])
	}
	// The best plan's variants were all measured before the search stopped.
	for _, v := range roundVariants(p, fastest(tu.res.Candidates).Plan) {
		if !seen[v.String()] {
			t.Errorf("%s not measured", v)
		}
	}
	// A best plan that no variant beat is left alone.
	n := len(timedOf())
	tu.combine(variant, fastest(tu.res.Candidates))
	if len(timedOf()) != n {
		t.Errorf("a second search timed %v", timedOf()[n:])
	}
}

// TestFineChunks: the chunks an eighth and a twentieth either side, on a grid of 8 planes (4
// below 128), none repeated, none the plan's own, none as long as the streaming axis.
func TestFineChunks(t *testing.T) {
	p := program(t, "an5d/j2d5pt.stencil")
	for _, tc := range []struct {
		chunk, axis int
		want        string
	}{
		{640, 16386, "[560 608 672 720]"},
		{512, 16386, "[448 488 536 576]"},
		{32, 514, "[28 36]"},
		{64, 514, "[56 60 68 72]"},
		{640, 700, "[560 608 672]"},
		{0, 16386, "[]"},
	} {
		pl := plans(t, p, "n5d:bx=128,bt=4,rx=2,wave=true")[0]
		pl.Chunk = tc.chunk
		var got []int
		for _, v := range fineChunks([]int{tc.axis, tc.axis}, pl) {
			v2 := v
			v2.Chunk = pl.Chunk
			if v2.String() != pl.String() {
				t.Errorf("chunk %d: variant %s changes more than the chunk", tc.chunk, v)
			}
			got = append(got, v.Chunk)
		}
		if fmt.Sprint(got) != tc.want {
			t.Errorf("chunk %d of %d planes: %v, want %s", tc.chunk, tc.axis, got, tc.want)
		}
	}
}

// TestBudgetStopsTheSearch: no candidate is timed that would end past the budget (by the
// candidates' median time so far: 25 ms each, so 55 ms times two and 75 ms three), less the
// longest compilation so far, which the search waits for when it stops (30 ms: 100 ms times
// two, not four); the skipped ones are counted; a search whose budget is spent before anything
// ran still times its first candidate, so that it has a result.
func TestBudgetStopsTheSearch(t *testing.T) {
	p := program(t, "an5d/j2d5pt.stencil")
	lim := gpurun.Limits(fakeDevice{props: h100Props})
	for _, c := range []struct {
		budget, compile time.Duration
		wantTimed       int
	}{{0, 0, 8}, {time.Nanosecond, 0, 1}, {55 * time.Millisecond, 0, 2}, {75 * time.Millisecond, 0, 3},
		{100 * time.Millisecond, 0, 4}, {100 * time.Millisecond, 30 * time.Millisecond, 2}} {
		var cands []*Candidate
		for _, bx := range []int{32, 64, 96, 128, 160, 192, 224, 256} {
			cands = append(cands, &Candidate{Plan: plans(t, p, fmt.Sprintf("n5d:bx=%d,bt=4", bx))[0], Status: Unmeasured})
		}
		timed := 0
		var clock time.Duration // each timing takes 25 ms of a made-up clock
		tu := &tuner{dev: fakeDevice{props: h100Props}, s: shapeless(p, benchShape(p)),
			o: Options{Limits: &lim, Profile: h100Probed(), Budget: c.budget}, res: &Result{Candidates: cands},
			since: func(time.Time) time.Duration { return clock }}
		tu.compiledIn(c.compile)
		tu.timeFor = func(c *Candidate) {
			clock += 25 * time.Millisecond
			c.Status, c.SecondsPerStep = Measured, 1e-3
			timed++
		}
		tu.measure(cands)
		if timed != c.wantTimed || tu.res.Skipped != 8-timed {
			t.Errorf("budget %v, compilations of %v: %d timed, %d skipped; want %d timed and the rest skipped", c.budget, c.compile, timed, tu.res.Skipped, c.wantTimed)
		}
	}
}

// madeUpTuner is a tuner of p on a made-up H100 whose candidates take timeOf their plans
// (fast: fast math); timed lists the plans timed, in order.
func madeUpTuner(p *ir.Program, fast bool, timeOf func(plan.Plan) float64) (tu *tuner, timed func() []string) {
	var done []string
	lim := gpurun.Limits(fakeDevice{props: h100Props})
	tu = &tuner{dev: fakeDevice{props: h100Props}, s: shapeless(p, benchShape(p)), o: Options{Limits: &lim, Profile: h100Probed(), FastMath: fast}, res: &Result{}}
	tu.timeFor = func(c *Candidate) {
		c.Status, c.SecondsPerStep = Measured, timeOf(c.Plan)
		done = append(done, c.Plan.String())
	}
	return tu, func() []string { return done }
}

// TestCompiledSwitches: the fastest plan is measured compiled for the size, chained and both at
// once, in one batch; the winner carries them into the steps that follow; a plan that has
// both, or a strategy without them, measures nothing.
func TestCompiledSwitches(t *testing.T) {
	p := program(t, "an5d/j2d5pt.stencil")
	base := plans(t, p, "n5d:bx=128,bt=10,rx=2,pf=2,chunk=384,fastmath=true")[0]
	timeOf := func(pl plan.Plan) float64 {
		s := 1.0
		if pl.ConstSize {
			s -= 0.01
		}
		if pl.Chain {
			s -= 0.03
		}
		return s * 1e-3
	}
	tu, timedOf := madeUpTuner(p, true, timeOf)
	variant := tu.variants()
	best := variant(base)
	tu.measure([]*Candidate{best})
	tu.res.Candidates = []*Candidate{best}
	tu.compiledSwitches(variant)
	if len(timedOf()) != 4 {
		t.Fatalf("timed %v, want the plan and its three variants", timedOf())
	}
	b := fastest(tu.res.Candidates).Plan
	if !b.ConstSize || !b.Chain {
		t.Errorf("best %s, want constsize and chain", b)
	}
	tu.compiledSwitches(variant)
	if len(timedOf()) != 4 {
		t.Errorf("a plan with both switches timed %v", timedOf()[4:])
	}
	tu2, timed2 := madeUpTuner(p, false, func(plan.Plan) float64 { return 1e-3 })
	v2 := tu2.variants()
	c := v2(plans(t, p, "naive")[0])
	tu2.measure([]*Candidate{c})
	tu2.res.Candidates = []*Candidate{c}
	tu2.compiledSwitches(v2)
	if n := len(timed2()); n != 1 {
		t.Errorf("naive: %d timed, want only itself", n)
	}
}

// TestLeaders: after the model's top plans, a search times the best-ranked plan of every
// strategy it has not timed (or seen fail), within leaderFactor of the best prediction.
func TestLeaders(t *testing.T) {
	c := func(strategy string, pred float64, st Status) *Candidate {
		return &Candidate{Plan: plan.Plan{Strategy: strategy}, Predicted: pred, Status: st}
	}
	viable := []*Candidate{
		c("naive", 1.0, Measured), c("naive", 1.0, Measured), c("n5d", 1.1, Unmeasured), c("n5d", 1.2, Unmeasured),
		c("inplane", 1.3, Unmeasured), c("stream25d", 1.4, Failed), c("stream25d", 1.5, Unmeasured),
		c("forwardplane", 3.5, Unmeasured),
	}
	got := leaders(viable)
	if len(got) != 2 || got[0] != viable[2] || got[1] != viable[4] {
		var names []string
		for _, g := range got {
			names = append(names, fmt.Sprintf("%s@%g", g.Plan.Strategy, g.Predicted))
		}
		t.Errorf("leaders: %v, want the first n5d and the inplane plan", names)
	}
}

// TestForwardPlaneRefinement: the refinement of forward-plane plans tries register caps, other
// chunks and other planes a step (rz), but never halos loaded deeper than a plane ahead (they
// lost on every 3D star timed), and the plans it measures verify.
func TestForwardPlaneRefinement(t *testing.T) {
	dev := openDevice(t)
	p := program(t, "an5d/star3d1r.stencil")
	s := newState(t, p, []int{20, 16, 40})
	// The H100's profile for the model: on PoCL's own the in-plane model finds no forward-plane
	// block resident.
	o := Options{Mode: Exhaustive, Steps: 2, Reps: 1, Candidates: plans(t, p, "forwardplane:bx=32,by=4,pf=1,chunk=8", "forwardplane:bx=16,by=8,pf=1,chunk=8"),
		Version: "test", Profile: probe.Estimate(h100Props)}
	res, err := Tune(dev, s, o)
	if err != nil {
		t.Fatal(err)
	}
	rz := false
	for _, c := range res.Candidates {
		if !c.Refined {
			continue
		}
		if c.Plan.Prefetch != 1 {
			t.Errorf("a refined forward-plane plan with pf=%d: %s", c.Plan.Prefetch, c.Plan)
		}
		rz = rz || c.Plan.RZ > 1
	}
	if !rz {
		t.Errorf("no refined plan computes several planes a step")
	}
	verify(t, dev, s, res.Best.Plan, 5)
}

// TestChainPays: a search measures chained launches on 2D n5d plans only (none of the 3D pairs
// timed on the H200 gained).
func TestChainPays(t *testing.T) {
	for _, c := range []struct {
		file, plan string
		want       bool
	}{
		{"an5d/j2d5pt.stencil", "n5d:bx=128,bt=8,rx=2", true},
		{"an5d/j2d5pt.stencil", "n5d:bx=128,bt=8,rx=2,chain=true", false},
		{"an5d/star3d1r.stencil", "n5d:bx=16,by=32,bt=4,rx=2", false},
		{"an5d/j2d5pt.stencil", "naive:bx=32,by=8", false},
	} {
		p := program(t, c.file)
		if got := chainPays(p, plans(t, p, c.plan)[0]); got != c.want {
			t.Errorf("%s %s: chainPays %v, want %v", c.file, c.plan, got, c.want)
		}
	}
}

// TestAlignPays: the search pads the rows of n5d and forward-plane plans where
// the rows are not whole lines already, and nowhere else.
func TestAlignPays(t *testing.T) {
	for _, c := range []struct {
		file, plan string
		shape      []int
		want       bool
	}{
		{"an5d/star3d3r.stencil", "forwardplane:bx=64,by=8,rz=3", []int{518, 518, 518}, true},
		{"an5d/star3d3r.stencil", "forwardplane:bx=64,by=8,rz=3,align=true", []int{518, 518, 518}, false},
		{"an5d/star3d1r.stencil", "n5d:bx=16,by=32,bt=4,rx=2", []int{514, 514, 514}, true},
		{"an5d/star3d1r.stencil", "n5d:bx=16,by=32,bt=4,rx=2", []int{514, 514, 544}, false},
		{"an5d/j2d5pt.stencil", "naive:bx=32,by=8", []int{1026, 1026}, false},
		{"an5d/box3d2r.stencil", "inplane:bx=32,by=8,load=2,rx=2,ry=2,vec=2", []int{516, 516, 517}, true},
	} {
		p := program(t, c.file)
		if got := alignPays(c.shape, plans(t, p, c.plan)[0]); got != c.want {
			t.Errorf("%s %s %v: alignPays %v, want %v", c.file, c.plan, c.shape, got, c.want)
		}
	}
}

// TestOddRowsPadded: on rows of a length no multiple of n5d's vector the space's n5d plans pad
// their rows (the vectors then run); rows of a multiple stay dense.
func TestOddRowsPadded(t *testing.T) {
	p := program(t, "an5d/j2d5pt.stencil")
	for _, c := range []struct {
		shape []int
		want  bool
	}{
		{[]int{130, 131}, true},
		{[]int{130, 132}, false},
	} {
		var log strings.Builder
		cands, err := Rank(fakeDevice{props: h100Props}, shapeless(p, c.shape), Options{Profile: probe.Estimate(h100Props), Strategies: []string{plan.N5D}, Log: &log})
		if err != nil {
			t.Fatal(err)
		}
		if said := strings.Contains(log.String(), "n5d plans pad them to 160 (align)"); said != c.want {
			t.Errorf("%v: the log says the rows are padded %v, want %v: %q", c.shape, said, c.want, log.String())
		}
		vec := 0
		for _, cd := range cands {
			if cd.Plan.N5DAlign() > 1 {
				vec++
				if cd.Plan.Align != c.want {
					t.Errorf("%v: %s, want align %v", c.shape, cd.Plan, c.want)
				}
			} else if cd.Plan.Align {
				t.Errorf("%v: %s pads the rows of a plan without vectors", c.shape, cd.Plan)
			}
		}
		if vec == 0 {
			t.Fatalf("%v: no plan with vectors in the space", c.shape)
		}
	}
}

// TestSearchTimesThePick: the search measures each contender of the space with PickRules'
// settings, as contenders the refinement varies in place of the plans they beat (so that a
// search ends no slower than the model's pick, and no family wins by the settings alone: on
// made-up times where they gain 10%, the second plan with them beats the first with them),
// and nothing where the rules add none (an OpenCL device).
func TestSearchTimesThePick(t *testing.T) {
	p := program(t, "an5d/star2d3r.stencil")
	base := plans(t, p, "n5d:bx=128,bt=4,rx=2,chunk=256,fastmath=true", "n5d:bx=256,bt=4,rx=2,chunk=256,fastmath=true")
	timeOf := func(pl plan.Plan) float64 {
		s := 1.0
		if pl.BX == 256 {
			s = 0.95
		}
		if pl.RimBlocks && pl.EdgesFirst {
			s *= 0.9
		}
		return s * 1e-3
	}
	tu, timedOf := madeUpTuner(p, true, timeOf)
	measuredSpace(tu, base)
	tu.pickContenders()
	want := []string{
		"n5d:bx=256,by=1,bt=4,rx=2,wave=true,rimblocks=true,edgesfirst=true,chunk=256,fastmath=true",
		"n5d:bx=128,by=1,bt=4,rx=2,wave=true,rimblocks=true,edgesfirst=true,chunk=256,fastmath=true",
	}
	if got := timedOf(); len(got) != 4 || got[2] != want[0] || got[3] != want[1] {
		t.Fatalf("timed %v, want the plans and then %v", got, want)
	}
	if cs := tu.contenders(); len(cs) != 2 || cs[0].Plan.String() != want[0] || cs[1].Plan.String() != want[1] {
		t.Errorf("contenders %v, want the plans with the rules alone (they supersede the plans without)", cs)
	}
	tu.dev = fakeDevice{props: gpu.Props{Backend: "opencl"}}
	n := len(timedOf())
	tu.pickContenders()
	if len(timedOf()) != n {
		t.Errorf("on OpenCL the search timed %v", timedOf()[n:])
	}
}

// TestRunnerUpWalk: after the walk from the fastest plan, the search walks from the fastest
// plan of another family (made-up times: 32x32 threads at bt=3 ahead at the start, 16x32 at
// bt=4 gaining 15% with the edge tiles, which cost the first 10%), and that family's plan
// ends the fastest; no plan is timed twice, and a walk with no other family near does nothing.
func TestRunnerUpWalk(t *testing.T) {
	p := program(t, "an5d/star3d1r.stencil")
	base := plans(t, p, "n5d:bx=32,by=32,bt=3,chunk=128,fastmath=true", "n5d:bx=16,by=32,bt=4,rx=2,chunk=128,fastmath=true")
	timeOf := func(pl plan.Plan) float64 {
		s := 0.228
		if pl.BX == 16 {
			s = 0.240
			if pl.Edges {
				s *= 0.85
			}
		} else if pl.Edges {
			s *= 1.1
		}
		return s * 1e-3
	}
	tu, timedOf := madeUpTuner(p, true, timeOf)
	measuredSpace(tu, base)
	tu.neighbours(fastest(tu.res.Candidates))
	if b := fastest(tu.res.Candidates); b.Plan.BX != 32 {
		t.Fatalf("after the first walk the fastest is %s, want a 32x32 plan", b.Plan)
	}
	n := len(timedOf())
	tu.runnerUpWalk(runnerUpFactor, false)
	if len(timedOf()) == n {
		t.Fatal("the walk from the runner-up timed nothing")
	}
	if b := fastest(tu.res.Candidates); b.Plan.BX != 16 || !b.Plan.Edges {
		t.Errorf("fastest %s, want a 16x32 plan with the edge tiles", b.Plan)
	}
	seen := map[string]bool{}
	for _, s := range timedOf() {
		if seen[s] {
			t.Errorf("%s timed twice", s)
		}
		seen[s] = true
	}
	if len(tu.res.Candidates) != len(timedOf()) {
		t.Errorf("%d candidates, %d timed: the walk's plans must join the candidates", len(tu.res.Candidates), len(timedOf()))
	}
	// Only one family near: nothing more.
	tu2, timed2 := madeUpTuner(p, true, func(pl plan.Plan) float64 {
		if pl.BX == 16 {
			return 1e-3
		}
		return 0.5e-3
	})
	c := tu2.variants()(base[0])
	d := tu2.variants()(base[1])
	tu2.measure([]*Candidate{c, d})
	tu2.res.Candidates = []*Candidate{c, d}
	tu2.runnerUpWalk(runnerUpFactor, false)
	if len(timed2()) != 2 {
		t.Errorf("with no other family within 10%% the walk timed %v", timed2()[2:])
	}
}

// TestSpareWalks: with time left, an n5d search walks from the families it has not walked
// yet, within spareWalkFactor of the fastest, one of a temporal depth not walked first (32x32
// threads at bt=3 are faster than 16x32 at bt=4 at the start, and walked after them), and
// keeps a family whose settings carry it past the fastest; with no budget it walks from none.
func TestSpareWalks(t *testing.T) {
	p := program(t, "an5d/star3d1r.stencil")
	base := plans(t, p, "n5d:bx=16,by=32,bt=3,rx=2,chunk=128,fastmath=true", "n5d:bx=16,by=32,bt=4,rx=2,chunk=128,fastmath=true",
		"n5d:bx=32,by=32,bt=2,chunk=128,fastmath=true", "n5d:bx=32,by=32,bt=3,chunk=128,fastmath=true")
	timeOf := func(pl plan.Plan) float64 {
		switch {
		case pl.BT == 4 && pl.Edges:
			return 0.17e-3
		case pl.BT == 4:
			return 0.24e-3
		case pl.BT == 3 && pl.RX == 1:
			return 0.21e-3
		case pl.BT == 3:
			return 0.19e-3
		}
		return 0.5e-3 // beyond spareWalkFactor: never walked
	}
	run := func(budget time.Duration) (*tuner, []string) {
		tu, timedOf := madeUpTuner(p, true, timeOf)
		tu.since = func(time.Time) time.Duration { return 0 }
		tu.o.Budget = budget
		measuredSpace(tu, base)
		tu.walked = map[string]int{family(base[0]): base[0].BT}
		tu.spareBudget(nil)
		return tu, timedOf()
	}
	tu, timed := run(time.Hour)
	if b := fastest(tu.res.Candidates).Plan; b.BT != 4 || !b.Edges {
		t.Errorf("fastest %s, want a bt=4 plan with the edge tiles", b)
	}
	for _, s := range timed {
		if strings.Contains(s, "bt=2") && s != base[2].String() {
			t.Errorf("timed %s, of a family beyond spareWalkFactor", s)
		}
	}
	walked := func(pl plan.Plan) bool { _, ok := tu.walked[family(pl)]; return ok }
	if !walked(base[1]) || walked(base[2]) || !walked(base[3]) {
		t.Errorf("walked %v, want bt=4's family and 32x32's at bt=3, not at bt=2", tu.walked)
	}
	first := func(pred func(string) bool) int {
		for i, s := range timed[len(base):] {
			if pred(s) {
				return i
			}
		}
		return len(timed)
	}
	deeper := first(func(s string) bool { return strings.Contains(s, "bt=4") })
	wide3 := first(func(s string) bool { return strings.Contains(s, "bx=32,by=32,bt=3") })
	if deeper >= wide3 {
		t.Errorf("the walks timed 32x32 threads at bt=3 (plan %d) before bt=4 (plan %d): want the other depth first", wide3, deeper)
	}
	if _, timed := run(0); len(timed) != len(base) {
		t.Errorf("with no budget, %d plans timed; want the space's %d", len(timed), len(base))
	}
}

// measuredSpace makes pls the tuner's candidates as plans of the space (not refinements) and
// measures them.
func measuredSpace(tu *tuner, pls []plan.Plan) {
	var space []*Candidate
	for _, pl := range pls {
		c := tu.variants()(pl)
		c.Refined = false
		space = append(space, c)
	}
	tu.measure(space)
	tu.res.Candidates = space
}

// TestSpareBudget: a bounded search with time left after its walks times the untimed space
// plans of its fastest plan's strategy, best predicted first, and walks from one that overtakes
// the fastest; with no budget, or an n5d plan fastest, it times nothing more; the budget stops it.
func TestSpareBudget(t *testing.T) {
	p := program(t, "an5d/star3d3r.stencil")
	var viable []*Candidate
	for _, pl := range Enumerate(p, benchShape(p), []string{plan.ForwardPlane, plan.Naive}, true) {
		viable = append(viable, &Candidate{Plan: pl, Status: Unmeasured})
	}
	fp := 0
	for _, c := range viable {
		if c.Plan.Strategy == plan.ForwardPlane {
			fp++
		}
	}
	// The 64x8 blocks at rz=2 are the fastest, the space's first plan timed is 32x8 at rz=4.
	timeOf := func(pl plan.Plan) float64 {
		s := 0.6e-3
		if pl.BX == 64 && pl.BY == 8 && pl.RZ == 2 {
			s = 0.5e-3
		}
		return s
	}
	run := func(budget time.Duration, first string) (*tuner, []string) {
		tu, timedOf := madeUpTuner(p, true, timeOf)
		var clock time.Duration
		tu.since = func(time.Time) time.Duration { return clock }
		inner := tu.timeFor
		tu.timeFor = func(c *Candidate) { clock += 100 * time.Millisecond; inner(c) }
		tu.o.Budget, tu.o.K = budget, 5
		vs := make([]*Candidate, len(viable))
		for i, c := range viable {
			cc := *c
			vs[i] = &cc
		}
		tu.res.Candidates = vs // as a search's: the space's ranking and what joins it
		for _, c := range vs {
			if c.Plan.String() == first {
				tu.measure([]*Candidate{c})
			}
		}
		if len(timedOf()) != 1 {
			t.Fatalf("%s is not in the space", first)
		}
		tu.spareBudget(vs)
		return tu, timedOf()
	}
	first := "forwardplane:bx=32,by=8,rz=4,pf=1,chunk=128,fastmath=true"
	tu, timed := run(time.Hour, first)
	if got := len(timed); got < fp {
		t.Errorf("with an hour left, %d plans timed; want the %d forward-plane plans of the space and more", got, fp)
	}
	for _, s := range timed {
		if strings.HasPrefix(s, "naive") {
			t.Errorf("timed %s, of another strategy than the fastest's", s)
		}
	}
	if b := fastest(tu.res.Candidates).Plan; b.BX != 64 || b.BY != 8 || b.RZ != 2 {
		t.Errorf("fastest %s, want a 64x8 plan at rz=2", b)
	}
	if _, timed := run(0, first); len(timed) != 1 {
		t.Errorf("with no budget, %d plans timed; want the first alone", len(timed))
	}
	if _, timed := run(time.Second, first); len(timed) >= fp {
		t.Errorf("with a second of budget (0.1 s a plan), %d plans timed", len(timed))
	}
	if _, timed := run(time.Hour, "naive:bx=32,by=4,fastmath=true"); len(timed) < 2 {
		t.Errorf("with a naive plan fastest, %d plans timed; want the naive plans of the space", len(timed))
	}
}
