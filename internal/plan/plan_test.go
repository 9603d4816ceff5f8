package plan_test

import (
	"slices"
	"strings"
	"testing"

	"tempest/internal/load"
	"tempest/internal/plan"
	"tempest/internal/testkit"
)

// TestInplaneVec4Needs4ByteElements checks that vec=4 is refused, with the way out, for a
// stencil reading 8-byte elements (a 32-byte vector) and accepted for 4-byte ones.
func TestInplaneVec4Needs4ByteElements(t *testing.T) {
	src := func(ty string) string {
		return "axes z, y, x\ntype " + ty + "\nstate u boundary fixed\nupdate u = 2*u + u[x-1] + u[x+1] + u[y-1] + u[y+1] + u[z-1] + u[z+1]\n"
	}
	for _, c := range []struct {
		ty, plan, err string
	}{
		{"f32", "inplane:vec=4", ""},
		{"f64", "inplane:vec=2", ""},
		{"f64", "inplane:vec=4", "use vec=2"},
		{"i64", "inplane:vec=4", "grid u (i64)"},
	} {
		p, pl := testkit.Parsed(t, src(c.ty), c.plan)
		err := pl.Validate(p, plan.Limits{}, 0)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s %s: %v", c.ty, c.plan, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s %s: got %v, want an error mentioning %q", c.ty, c.plan, err, c.err)
		}
	}
}

// TestN5DShflRefused checks that warp-shuffle tiles (shfl), removed as a measured loss, are
// refused as an unknown key, like any other.
func TestN5DShflRefused(t *testing.T) {
	p, err := load.Source("t.stencil", "axes y, x\nstate u boundary fixed\nupdate u = u[x-1] + u[x+1] + u[y-1] + u[y+1]\n", load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plan.Parse("n5d:bx=64,rx=2,shfl=true", p); err == nil || !strings.Contains(err.Error(), `unknown parameter "shfl"`) {
		t.Errorf("shfl=true: got %v, want an unknown parameter", err)
	}
}

func TestDepths(t *testing.T) {
	for _, c := range []struct {
		bt   int
		want []int
	}{
		{0, []int{1}}, {1, []int{1}}, {2, []int{2, 1}}, {3, []int{3, 1}}, {4, []int{4, 2, 1}},
		{11, []int{11, 5, 2, 1}}, {12, []int{12, 6, 3, 1}}, {16, []int{16, 8, 4, 2, 1}},
	} {
		if got := (plan.Plan{Strategy: "n5d", BT: c.bt}).Depths(); !slices.Equal(got, c.want) {
			t.Errorf("bt=%d: depths %v, want %v", c.bt, got, c.want)
		}
	}
}

// TestN5DSpan pins the n5d tile along x: outputs start at a multiple of the alignment and are
// a multiple of it wide, with at least the reach times bt of halo on either side.
func TestN5DSpan(t *testing.T) {
	for _, c := range []struct {
		cells, r, bt, align, before, out int
	}{
		{256, 1, 9, 1, 9, 238},
		{256, 1, 9, 2, 10, 236},
		{256, 1, 10, 2, 10, 236},
		{256, 2, 3, 4, 8, 240},
		{64, 1, 3, 2, 4, 56},
		{16, 1, 7, 2, 8, 0}, // nothing left
		{32, 0, 4, 4, 0, 32},
	} {
		if b, o := plan.N5DSpan(c.cells, c.r, c.bt, c.align); b != c.before || o != c.out {
			t.Errorf("N5DSpan(%d, %d, %d, %d) = %d, %d; want %d, %d", c.cells, c.r, c.bt, c.align, b, o, c.before, c.out)
		}
	}
}

// TestN5DVec: n5d takes vec=1 (scalar accesses) or no vec, reads it back, and refuses other
// widths; FitBT leaves an aligned tile at least one aligned output run.
func TestN5DVec(t *testing.T) {
	src := "axes y, x\nstate u boundary fixed\nupdate u = u[x-1] + u[x+1] + u[y-1] + u[y+1]\n"
	p, err := load.Source("t.stencil", src, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ plan, err string }{
		{"n5d:bx=32,rx=2,vec=1", ""},
		{"n5d:bx=32,rx=2", ""},
		{"n5d:bx=32,rx=2,vec=2", "vec is 1"},
	} {
		pl, err := plan.Parse(c.plan, p)
		if err != nil {
			t.Fatal(err)
		}
		if back, err := plan.Parse(pl.String(), p); c.err == "" && (err != nil || back != pl) {
			t.Errorf("%s: %s reads back as %v (%v)", c.plan, pl, back, err)
		}
		err = pl.Validate(p, plan.Limits{}, 0)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.plan, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: got %v, want an error mentioning %q", c.plan, err, c.err)
		}
	}
	// 16 cells in pairs: bt=7 would need 8 cells before (7 rounded up to 2) and 7 after.
	pl, _ := plan.Parse("n5d:bx=8,rx=2,bt=16", p)
	if err := pl.FitBT(p); err != nil || pl.BT != 6 {
		t.Errorf("FitBT with pairs: bt=%d, %v; want 6", pl.BT, err)
	}
	pl, _ = plan.Parse("n5d:bx=8,rx=2,bt=16,vec=1", p)
	if err := pl.FitBT(p); err != nil || pl.BT != 7 {
		t.Errorf("FitBT with pairs, scalar accesses: bt=%d, %v; want 7", pl.BT, err)
	}
	pl, _ = plan.Parse("n5d:bx=16,bt=16", p)
	if err := pl.FitBT(p); err != nil || pl.BT != 7 {
		t.Errorf("FitBT with single cells: bt=%d, %v; want 7", pl.BT, err)
	}
}

// TestEdgesFirstTiles checks that edgesfirst is accepted in 2D and 3D and reads back, and that
// thread-block clusters (cx, cy), removed as a measured loss, are refused as unknown keys.
func TestEdgesFirstTiles(t *testing.T) {
	load2 := "axes y, x\nstate u boundary fixed\nupdate u = u[x-1] + u[x+1] + u[y-1] + u[y+1]\n"
	load3 := "axes z, y, x\nstate u boundary fixed\nupdate u = u[x-1] + u[x+1] + u[y-1] + u[y+1] + u[z+1]\n"
	for _, c := range []struct{ src, plan string }{
		{load3, "n5d:bx=16,by=32,rx=2,edgesfirst=true"},
		{load2, "n5d:bx=128,rx=2,edges=true,edgesfirst=true"},
	} {
		p, pl := testkit.Parsed(t, c.src, c.plan)
		if back, err := plan.Parse(pl.String(), p); err != nil || back.String() != pl.String() {
			t.Errorf("%s: %s reads back as %v (%v)", c.plan, pl, back, err)
		}
		if err := pl.Validate(p, plan.Limits{}, 0); err != nil {
			t.Errorf("%s: %v", c.plan, err)
		}
	}
	p, err := load.Source("t.stencil", load3, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"n5d:bx=16,by=32,cx=2", "n5d:bx=16,by=32,cy=2"} {
		if _, err := plan.Parse(text, p); err == nil {
			t.Errorf("%s: accepted; clusters are no plan setting", text)
		}
	}
}

// TestN5DAsync checks where asynchronous copies are accepted: CUDA devices of compute
// capability 8.0 or later (or an unknown one), fewer planes ahead than the unrolled round
// (6 planes for reach 1, 10 for reach 2), not together with a register prefetch; the ring's
// planes (the fewest, at least async+1, that divide the round); and that the plan prints back
// to itself.
func TestN5DAsync(t *testing.T) {
	r1 := "axes y, x\nstate u boundary fixed\nupdate u = u[x-1] + u[x+1] + u[y-1] + u[y+1]\n"
	r2 := "axes z, y, x\nstate u boundary fixed\nupdate u = u[x-2] + u[x+1] + u[z+2] + u[y-1]\n"
	for _, c := range []struct {
		src, plan string
		lim       plan.Limits
		err       string
	}{
		{r1, "n5d:bx=64,rx=2,async=1", plan.Limits{}, ""},
		{r1, "n5d:bx=64,rx=2,async=2", plan.Limits{SM: 90}, ""},
		{r1, "n5d:bx=64,async=5", plan.Limits{SM: 80}, ""},
		{r1, "n5d:bx=64,async=3", plan.Limits{}, ""},
		{r1, "n5d:bx=64,async=6", plan.Limits{}, "use async=5 or less"},
		{r1, "n5d:bx=64,async=2,pf=3", plan.Limits{}, "not both"},
		{r1, "n5d:bx=64,ranges=true", plan.Limits{}, ""},
		{r1, "n5d:bx=64,ranges=true,rimblocks=true", plan.Limits{}, ""},
		{r1, "n5d:bx=64,ranges=true,rimcut=true", plan.Limits{}, "drop them with ranges"},
		{r1, "n5d:bx=64,ranges=true,chain=true", plan.Limits{}, "drop them with ranges"},
		{r1, "n5d:bx=64,async=9", plan.Limits{}, "0 (off) to 8"},
		{r1, "n5d:bx=64,async=1", plan.Limits{NoAsync: true}, "CUDA only"},
		{r1, "n5d:bx=64,async=1", plan.Limits{SM: 75}, "compute capability 8.0 or later; this device is 7.5"},
		{r1, "n5d:bx=64,async=0", plan.Limits{NoAsync: true, SM: 75}, ""},
		{r2, "n5d:bx=16,by=16,rx=2,ry=2,async=4", plan.Limits{}, ""},
		{r2, "n5d:bx=16,by=16,rx=2,ry=2,async=2", plan.Limits{}, ""},
	} {
		p, pl := testkit.Parsed(t, c.src, c.plan)
		if back, err := plan.Parse(pl.String(), p); err != nil || back != pl {
			t.Errorf("%s: %s reads back as %v (%v)", c.plan, pl, back, err)
		}
		err := pl.Validate(p, c.lim, 0)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s %+v: %v", c.plan, c.lim, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s %+v: got %v, want an error mentioning %q", c.plan, c.lim, err, c.err)
		}
	}
}

// TestN5DRing: the ring of n5d's asynchronous copies is the fewest planes, at least async+1,
// that divide the unrolled round.
func TestN5DRing(t *testing.T) {
	for _, c := range []struct{ async, round, want int }{
		{0, 6, 0}, {1, 6, 2}, {2, 6, 3}, {3, 6, 6}, {5, 6, 6}, {1, 10, 2}, {2, 10, 5}, {4, 10, 5}, {5, 10, 10}, {3, 14, 7},
	} {
		if got := (plan.Plan{Async: c.async}).N5DRing(c.round); got != c.want {
			t.Errorf("async=%d, round %d: %d planes, want %d", c.async, c.round, got, c.want)
		}
	}
}

// TestN5DRounds checks the rounds and phases settings: unroll is the default 2(2R+1) or 2R+1
// planes, with 2R+1 shared planes per level in place of two; phased loops run at every depth
// with phased=true and at depths up to two without; and they (and rimcut, rimblocks and edges)
// print back to themselves.
func TestN5DRounds(t *testing.T) {
	r1 := "axes y, x\nstate u boundary fixed\nupdate u = u[x-1] + u[x+1] + u[y-1] + u[y+1]\n"
	r2 := "axes y, x\nstate u boundary fixed\nupdate u = u[x-2] + u[x+2] + u[y-2] + u[y+2]\n"
	for _, c := range []struct {
		src, plan     string
		round, planes int
		phased        bool // at the plan's depth
		err           string
	}{
		{r1, "n5d:bx=64,bt=4", 6, 2, false, ""},
		{r1, "n5d:bx=64,bt=4,unroll=3", 3, 3, false, ""},
		{r1, "n5d:bx=64,bt=4,unroll=6,phased=true", 6, 2, true, ""},
		{r1, "n5d:bx=64,bt=4,unroll=3,phased=true,rimcut=true", 3, 3, true, ""},
		{r1, "n5d:bx=64,bt=4,rimcut=true,edges=true", 6, 2, false, ""},
		{r1, "n5d:bx=64,bt=4,rimblocks=true,edges=true,edgesfirst=true", 6, 2, false, ""},
		{r1, "n5d:bx=64,bt=4,rimcut=true,rimblocks=true", 0, 0, false, "rimblocks and rimcut both"},
		{r1, "n5d:bx=64,bt=2", 6, 2, true, ""},
		{r2, "n5d:bx=64,bt=3,unroll=5,phased=true", 5, 5, true, ""},
		{r2, "n5d:bx=64,bt=3,unroll=3", 0, 0, false, "unroll, the planes per unrolled round, is 5 or 10"},
		{r1, "n5d:bx=64,unroll=3,async=3", 0, 0, false, "use async=2 or less"},
	} {
		p, pl := testkit.Parsed(t, c.src, c.plan)
		err := pl.Validate(p, plan.Limits{}, 0)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: got %v, want an error mentioning %q", c.plan, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.plan, err)
			continue
		}
		R := p.Reach()[0]
		if got := pl.N5DRound(R); got != c.round {
			t.Errorf("%s: round %d, want %d", c.plan, got, c.round)
		}
		if got := pl.N5DPlanes(R); got != c.planes {
			t.Errorf("%s: %d planes per level, want %d", c.plan, got, c.planes)
		}
		if got := pl.N5DPhased(pl.BT); got != c.phased {
			t.Errorf("%s: phased %v, want %v", c.plan, got, c.phased)
		}
		back, err := plan.Parse(pl.String(), p)
		if err != nil || back != pl {
			t.Errorf("%s prints as %s, which reads back as %+v (%v)", c.plan, pl, back, err)
		}
	}
}

// TestN5DLiveWarps: the warps each level of an n5d block computes (plan.Shrink). Whole-row
// warps of a 3D tile lose a row of warps on each side as the halo shrinks past it; warps of
// several rows only where the shrink spans them; 2D warps only where a level's halo is a
// warp wide.
func TestN5DLiveWarps(t *testing.T) {
	for _, c := range []struct {
		example, plan string
		want          [][2]int // nil: no level leaves a warp idle
	}{
		// 64 x 24 cells of two-row threads, warps of one thread row (two cell rows): level t
		// needs rows t .. 23-t.
		{"an5d/star3d1r", "n5d:bx=32,by=12,bt=4,rx=2,ry=2", [][2]int{{0, 11}, {1, 10}, {1, 10}, {2, 9}}},
		// 32 x 48 cells, warps of two thread rows (four cell rows): only level 4 leaves the
		// first and last warps idle.
		{"an5d/star3d1r", "n5d:bx=16,by=24,bt=4,rx=2,ry=2", [][2]int{{0, 11}, {0, 11}, {0, 11}, {1, 10}}},
		// One-row threads of warps of two rows: level 2 already.
		{"an5d/star3d1r", "n5d:bx=16,by=32,bt=4,rx=2", [][2]int{{0, 15}, {1, 14}, {1, 14}, {2, 13}}},
		{"an5d/j3d27pt", "n5d:bx=16,by=16,bt=2,rx=2,ry=2", nil},
		{"an5d/j2d5pt", "n5d:bx=128,bt=10,rx=2", nil},
		// 96 cells of reach 4 at depth 8: level 8 needs cells 32 .. 63, the middle warp.
		{"an5d/star2d4r", "n5d:bx=96,bt=8", [][2]int{{0, 2}, {0, 2}, {0, 2}, {0, 2}, {0, 2}, {0, 2}, {0, 2}, {1, 1}}},
	} {
		p, pl := testkit.ExampleParsed(t, c.example, c.plan)
		live, ok := pl.N5DLiveWarps(p.Dims(), p.Reach(), pl.BT)
		if !ok {
			live = nil
		}
		if !slices.Equal(live, c.want) {
			t.Errorf("%s %s: live warps %v, want %v", c.example, c.plan, live, c.want)
		}
	}
}

// TestN5DAscend: levels lowest first lag R planes and need a ring of at least R+1 shared
// planes that divides the round; the switch round-trips through the plan's text, and is
// refused without wave.
func TestN5DAscend(t *testing.T) {
	cases := []struct {
		plan      string
		R         int
		lag, ring int
		starRing  int
	}{
		{"n5d:bx=128,bt=8,rx=2,wave=true,pf=3", 1, 2, 2, 0},
		{"n5d:bx=128,bt=8,rx=2,wave=true,pf=3,ascend=true", 1, 1, 2, 0},
		{"n5d:bx=128,bt=8,rx=2,wave=true,unroll=3,ascend=true", 1, 1, 3, 0},
		{"n5d:bx=128,bt=8,rx=2,wave=true,ascend=true", 2, 2, 5, 0},
		{"n5d:bx=128,bt=8,rx=2,wave=true,ascend=true", 3, 3, 7, 0},
		{"n5d:bx=128,bt=8,rx=2,wave=false", 1, 1, 2, 0},
		// Copies two planes ahead into level 0's planes: async+lag+R+1 rounded up to a divisor.
		{"n5d:bx=128,bt=8,rx=2,wave=true,async=2", 1, 2, 2, 6},
		{"n5d:bx=128,bt=8,rx=2,wave=true,async=2,ascend=true", 1, 1, 2, 6},
		{"n5d:bx=128,bt=8,rx=2,wave=true,async=1,ascend=true", 1, 1, 2, 6},
		{"n5d:bx=128,bt=8,rx=2,wave=true,async=1,unroll=3,ascend=true", 1, 1, 3, 0},
	}
	p, err := load.File("../../examples/an5d/star2d1r.stencil", load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		pl, err := plan.Parse(c.plan, p)
		if err != nil {
			t.Fatal(err)
		}
		if got := pl.N5DLag(c.R); got != c.lag {
			t.Errorf("%s R=%d: lag %d, want %d", c.plan, c.R, got, c.lag)
		}
		if got := pl.N5DPlanes(c.R); got != c.ring {
			t.Errorf("%s R=%d: %d shared planes per level, want %d", c.plan, c.R, got, c.ring)
		}
		if got := pl.N5DStarRing(c.R, pl.N5DRound(c.R)); got != c.starRing {
			t.Errorf("%s R=%d: star ring %d, want %d", c.plan, c.R, got, c.starRing)
		}
		back, err := plan.Parse(pl.String(), p)
		if err != nil || back != pl {
			t.Errorf("%s: %s does not read back (%v)", c.plan, pl, err)
		}
	}
	for _, text := range []string{"n5d:bx=64,bt=4,wave=false,ascend=true"} {
		pl, err := plan.Parse(text, p)
		if err == nil {
			err = pl.Validate(p, plan.Limits{}, 0)
		}
		if err == nil || !strings.Contains(err.Error(), "ascend") {
			t.Errorf("%s: got %v, want an error naming ascend", text, err)
		}
	}
}

// checkSwitchPlan checks that plan text good, which sets switch key, parses, validates, sets
// it (on) and reads back, and that every plan of bad is refused with an error naming key.
func checkSwitchPlan(t *testing.T, example, key, good string, on func(plan.Plan) bool, bad []string) {
	t.Helper()
	p, err := load.File("../../examples/"+example+".stencil", load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pl, err := plan.Parse(good, p)
	if err == nil {
		err = pl.Validate(p, plan.Limits{}, 0)
	}
	if err != nil || !on(pl) {
		t.Fatalf("%s: %s %v, %v", good, key, on(pl), err)
	}
	if back, err := plan.Parse(pl.String(), p); err != nil || back != pl || !strings.Contains(pl.String(), key+"=true") {
		t.Errorf("%s does not read back (%v)", pl, err)
	}
	for _, text := range bad {
		pl, err := plan.Parse(text, p)
		if err == nil {
			err = pl.Validate(p, plan.Limits{}, 0)
		}
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: got %v, want an error naming %s", text, err, key)
		}
	}
}

// TestCentreFirst checks that centrefirst reads back and is refused outside fast math, which
// keeps every sum as written.
func TestCentreFirst(t *testing.T) {
	checkSwitchPlan(t, "an5d/j2d5pt", "centrefirst", "n5d:bx=128,bt=10,rx=2,wave=true,chunk=512,fastmath=true,centrefirst=true",
		func(pl plan.Plan) bool { return pl.CentreFirst },
		[]string{"tiled:bx=32,by=8,centrefirst=true"})
}

// TestConstSize checks that constsize reads back and belongs to n5d only.
func TestConstSize(t *testing.T) {
	checkSwitchPlan(t, "an5d/box3d1r", "constsize", "n5d:bx=32,by=8,bt=2,rx=2,ry=3,wave=true,pf=2,chunk=28,fastmath=true,constsize=true",
		func(pl plan.Plan) bool { return pl.ConstSize },
		[]string{"tiled:bx=32,by=8,constsize=true"})
}

// TestChain checks that chain reads back and is refused on devices without programmatic
// dependent launches.
func TestChain(t *testing.T) {
	checkSwitchPlan(t, "an5d/star2d1r", "chain", "n5d:bx=128,bt=10,rx=2,wave=true,pf=3,rimblocks=true,edgesfirst=true,chunk=512,fastmath=true,chain=true",
		func(pl plan.Plan) bool { return pl.Chain }, nil)
	p, err := load.File("../../examples/an5d/star2d1r.stencil", load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pl, err := plan.Parse("n5d:bx=64,bt=4,rx=2,chain=true", p)
	if err != nil {
		t.Fatal(err)
	}
	for _, lim := range []plan.Limits{{NoChain: true}, {SM: 80}} {
		if err := pl.Validate(p, lim, 0); err == nil || !strings.Contains(err.Error(), "sm_90") || !strings.Contains(err.Error(), "drop chain") {
			t.Errorf("limits %+v: %v", lim, err)
		}
	}
	if err := pl.Validate(p, plan.Limits{SM: 90}, 0); err != nil {
		t.Errorf("on sm_90: %v", err)
	}
}

// TestPyramidDefaultsFitPH: block sizes the text leaves at their defaults grow to keep cells
// after the given pyramid height; sizes the text gives stay as given.
func TestPyramidDefaultsFitPH(t *testing.T) {
	src := "axes y, x\nstate u init 1 boundary clamp\nupdate u = 0.25 * (u[y-1] + u[y+1] + u[x-1] + u[x+1])\n"
	for _, c := range []struct {
		plan   string
		bx, by int
		ph     int
	}{
		{"pyramid:ph=8", 32, 32, 8},
		{"pyramid:ph=2", 32, 16, 2},
		{"pyramid:ph=8,by=16", 32, 16, 8}, // by given: stays (lowering says the block is too small)
		{"pyramid:ph=20", 32, 32, 20},     // no block of 1024 threads holds it: growth stops there
	} {
		_, pl := testkit.Parsed(t, src, c.plan)
		if pl.BX != c.bx || pl.BY != c.by || pl.PH != c.ph {
			t.Errorf("%s: bx=%d by=%d ph=%d, want bx=%d by=%d ph=%d", c.plan, pl.BX, pl.BY, pl.PH, c.bx, c.by, c.ph)
		}
	}
}

// TestParseRefusesZeroSizes: a block size or count of 0 made the lowering divide by zero (a
// panic in run and gen); such values are refused where the plan is read, naming the key,
// while the keys whose 0 means "default" or "off" keep it.
func TestParseRefusesZeroSizes(t *testing.T) {
	p, err := load.File("../../examples/an5d/j2d5pt.stencil", load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ text, want string }{
		{"tiled:bx=0", "bx=0: bx takes 1 or more"},
		{"naive:by=0", "by=0: by takes 1 or more"},
		{"stream25d:bx=-3", "bx=-3: bx takes 1 or more"},
		{"n5d:rx=0", "rx=0: rx takes 1 or more"},
		{"n5d:bt=0", "bt=0: bt takes 1 or more"},
		{"pyramid:ph=0", "ph=0: ph takes 1 or more"},
		{"n5d:chunk=-1", "chunk=-1: chunk takes 0 (the default) or more"},
		{"n5d:chunk=0", ""},
		{"tiled:maxregs=0", ""},
		{"n5d:pf=0", ""},
	} {
		_, err := plan.Parse(c.text, p)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.text, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want %q", c.text, err, c.want)
		}
	}
}

// TestRegistry checks that every strategy's defaults parse back to themselves and that help
// and the unknown-plan message name every strategy and alias of the registry.
func TestRegistry(t *testing.T) {
	p, _ := testkit.Parsed(t, "axes z, y, x\nstate u boundary fixed\nupdate u = u[x-1] + u[x+1] + u[y-1] + u[y+1] + u[z-1] + u[z+1]\n", "naive")
	_, unknown := plan.Parse("bogus", p)
	for _, s := range plan.Registry {
		pl, err := plan.Default(s.Name, p)
		if err != nil {
			t.Errorf("%s: %v", s.Name, err)
			continue
		}
		if back, err := plan.Parse(pl.String(), p); err != nil || back != pl {
			t.Errorf("%s: %s reads back as %v (%v)", s.Name, pl, back, err)
		}
		if err := pl.Validate(p, plan.Limits{}, 0); err != nil {
			t.Errorf("%s: defaults invalid: %v", s.Name, err)
		}
		if !strings.Contains(plan.Help(), s.Name) || !strings.Contains(plan.Guide(), s.Name) || !strings.Contains(unknown.Error(), s.Name) {
			t.Errorf("%s missing from the help or the unknown-plan message", s.Name)
		}
	}
}
