package gpurun

import (
	"fmt"
	"math"
	"testing"

	"tempest/internal/gpu"
	"tempest/internal/ir"
	"tempest/internal/load"
	"tempest/internal/lower"
	"tempest/internal/plan"
	"tempest/internal/ref"
	"tempest/internal/state"
	"tempest/internal/testkit"
)

// switchCase is a plan and a shape at which a plan switch changes which code the blocks run
// or in what order, but not the arithmetic.
type switchCase struct {
	example, plan string
	shape         []int
}

// testSources are programs the switch tests run that are no example, by the name a case gives.
var testSources = map[string]string{"rd1d": rd1D}

// initialState is an example's program (or testSources') and its initial state at shape.
func initialState(t *testing.T, example string, shape []int) (*ir.Program, *state.State) {
	t.Helper()
	var p *ir.Program
	var err error
	if src, ok := testSources[example]; ok {
		p, err = load.Source(example+".stencil", src, load.Options{})
	} else {
		p, err = load.File("../../examples/"+example+".stencil", load.Options{})
	}
	if err != nil {
		t.Fatal(err)
	}
	s, err := state.New(p, shape, state.DefaultParams(p), 4)
	if err != nil {
		t.Fatal(err)
	}
	ref.Init(s)
	return p, s
}

// checkSwitch runs each case with the switch off and on (set turns it on): both must agree
// with the reference within the matrix's tolerances and bitwise with each other.
func checkSwitch(t *testing.T, name string, set func(*plan.Plan), cases []switchCase) {
	checkSwitchOn(t, "opencl", name, set, cases)
}

// checkSwitchOn is checkSwitch on a backend's device.
func checkSwitchOn(t *testing.T, backend, name string, set func(*plan.Plan), cases []switchCase) {
	dev := openDevice(t, backend)
	mods := matrixModules(dev)
	defer mods.Close()
	for _, c := range cases {
		p, s := initialState(t, c.example, c.shape)
		const steps = 7 // the main kernel and a shallower one
		want := s.Clone()
		ref.Run(want, steps)
		var got []*state.State
		for _, on := range []bool{false, true} {
			pl, err := plan.Parse(c.plan, p)
			if err != nil {
				t.Fatal(err)
			}
			if on {
				set(&pl)
			}
			gs := s.Clone()
			r, err := prepareSwitch(dev, gs, pl, mods)
			if err != nil {
				t.Fatalf("%s %s: %v", c.example, pl, err)
			}
			if err := r.Run(steps); err != nil {
				t.Fatalf("%s %s: %v", c.example, pl, err)
			}
			if err := r.Download(); err != nil {
				t.Fatalf("%s %s: %v", c.example, pl, err)
			}
			r.Close()
			if msg := agree(want, gs); msg != "" {
				t.Errorf("%s %s size %v after %d steps: %s", c.example, pl, c.shape, steps, msg)
			}
			got = append(got, gs)
		}
		for _, u := range p.Updates {
			a, b := got[0].Cur[u.Grid.Index].Float64s(), got[1].Cur[u.Grid.Index].Float64s()
			for i := range a {
				if a[i] != b[i] && !(math.IsNaN(a[i]) && math.IsNaN(b[i])) {
					t.Errorf("%s %s size %v: grid %s cell %d is %v with %s, %v without", c.example, c.plan, c.shape, u.Grid.Name, i, b[i], name, a[i])
					break
				}
			}
		}
	}
}

// prepareSwitch is PrepareWith, except that plans with asynchronous copies, which OpenCL
// refuses, are lowered and run directly: OpenCL prints the copies synchronously
// (TestAsyncRingOnOpenCL), so their rings and the loops around them run on PoCL.
func prepareSwitch(dev gpu.Device, s *state.State, pl plan.Plan, mods *Modules) (*Runner, error) {
	if pl.Async == 0 {
		return PrepareWith(dev, s, pl, mods)
	}
	low, err := lower.Lower(s.Prog, s.Shape, s.Layers, pl)
	if err != nil {
		return nil, err
	}
	return NewWith(dev, s, low, gpu.CompileOptions{}, pl.String(), mods)
}

// TestN5DEdgesOpenCL runs n5d plans with the edge loop (edges=true) at shapes where blocks on
// the in-plane edges have chunks inside the streaming axis's rim, so that they run it: stars
// (a select keeps the rim columns' register values), boxes through partial sums (the rim
// columns reload their value) in 3D and 2D, with vectors and with scalar accesses. Each must
// agree with the reference within the matrix's tolerances and be bitwise the plan without
// edges=true, whose blocks run the checked loop instead (the same arithmetic in the same order).
func TestN5DEdgesOpenCL(t *testing.T) {
	testkit.LongTest(t)
	cases := []switchCase{
		{"an5d/star3d1r", "n5d:bx=4,by=8,rx=2,bt=2,wave=true,pf=3,chunk=5", []int{30, 14, 22}},
		{"an5d/star3d1r", "n5d:bx=8,by=8,rx=2,bt=3,wave=true,pf=3,phased=true,unroll=3,chunk=4", []int{34, 17, 36}},
		{"an5d/box3d1r", "n5d:bx=4,by=8,rx=2,bt=2,wave=true,vec=1,chunk=5", []int{30, 14, 22}},
		{"an5d/j2d9pt", "n5d:bx=8,rx=2,bt=2,wave=true,pf=5,chunk=4", []int{40, 70}},
		{"an5d/box2d1r", "n5d:bx=8,rx=2,bt=3,chunk=4", []int{40, 70}},
	}
	for _, c := range cases {
		p, err := load.File("../../examples/"+c.example+".stencil", load.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !lower.N5DEdges(p, plan.Plan{}) {
			t.Fatalf("%s: no edge loop", c.example)
		}
	}
	checkSwitch(t, "edges=true", func(pl *plan.Plan) { pl.Edges = true }, cases)
}

// TestN5DEdgesAsyncOpenCL runs the edge loop (edges=true) with asynchronous copies: stars
// copying into level 0's shared planes (scalar copies of clamped cells) and into rings of their
// own (vector copies of clamped runs), boxes through partial sums, gradient2d, in 2D and in 3D
// with two rows per thread, with the rim's blocks and the edge tiles first as the tuned plans
// combine them. Each must agree with the reference and bitwise with the plan without the
// edge loop.
func TestN5DEdgesAsyncOpenCL(t *testing.T) {
	testkit.LongTest(t)
	checkSwitch(t, "edges=true", func(pl *plan.Plan) { pl.Edges = true }, []switchCase{
		{"an5d/star2d1r", "n5d:bx=8,rx=2,bt=3,wave=true,async=2,chunk=4", []int{40, 70}},
		{"an5d/star2d1r", "n5d:bx=8,rx=2,bt=3,wave=true,async=4,rimblocks=true,chunk=4", []int{40, 70}},
		{"an5d/box2d1r", "n5d:bx=8,rx=2,bt=3,wave=true,async=5,rimblocks=true,edgesfirst=true,chunk=4", []int{40, 70}},
		// The settings the model's pick adds for 2D boxes (tune.PickRules), second order and
		// one cell a thread.
		{"an5d/box2d2r", "n5d:bx=8,rx=2,bt=2,wave=true,async=5,rimblocks=true,edgesfirst=true,chunk=4", []int{40, 70}},
		{"an5d/j2d9pt-gol", "n5d:bx=16,bt=3,wave=true,async=5,rimblocks=true,edgesfirst=true,chunk=6", []int{40, 70}},
		{"an5d/gradient2d", "n5d:bx=8,rx=2,bt=3,wave=true,async=5,rimblocks=true,chunk=4", []int{40, 70}},
		{"an5d/star3d1r", "n5d:bx=8,by=6,rx=2,ry=2,bt=3,wave=true,async=2,phased=true,rimblocks=true,edgesfirst=true,chunk=4", []int{34, 27, 46}},
		{"an5d/box3d1r", "n5d:bx=4,by=4,rx=2,ry=2,bt=2,wave=true,async=1,chunk=5", []int{30, 14, 22}},
	})
}

// TestN5DEdgesFirstOpenCL runs n5d plans with the edge tiles launched first (edgesfirst=true)
// on grids of tiles where the reordering takes each of its paths: many tiles along each
// in-plane axis (a ring of edge tiles around an interior), one or two along an axis (no
// interior: all tiles are edges), with chunks cut at the rim and with the edge loop. A block
// the permutation missed or took twice leaves cells at their old values: each run must agree
// with the reference and bitwise with the plan in raster order.
func TestN5DEdgesFirstOpenCL(t *testing.T) {
	testkit.LongTest(t)
	checkSwitch(t, "edgesfirst=true", func(pl *plan.Plan) { pl.EdgesFirst = true }, []switchCase{
		{"an5d/star3d1r", "n5d:bx=4,by=8,rx=2,bt=2,wave=true,pf=3,chunk=5", []int{30, 14, 22}}, // 6 x 3 tiles
		{"an5d/star3d1r", "n5d:bx=4,by=8,rx=2,bt=2,wave=true,pf=3,chunk=5", []int{12, 30, 5}},  // 1 x 7
		{"an5d/star3d1r", "n5d:bx=4,by=8,rx=2,bt=2,wave=true,pf=3,chunk=5", []int{12, 8, 26}},  // 7 x 2
		{"an5d/box3d1r", "n5d:bx=4,by=8,rx=2,bt=2,wave=true,vec=1,rimcut=true,chunk=5", []int{30, 14, 22}},
		{"an5d/star3d1r", "n5d:bx=8,by=8,rx=2,bt=3,wave=true,pf=3,phased=true,edges=true,chunk=4", []int{34, 17, 36}},
		{"an5d/j2d9pt", "n5d:bx=8,rx=2,bt=2,wave=true,pf=5,chunk=4", []int{40, 70}},       // 17 tiles
		{"an5d/box2d1r", "n5d:bx=8,rx=2,bt=3,chunk=4", []int{40, 12}},                     // 2
		{"an5d/box2d1r", "n5d:bx=8,rx=2,bt=3,chunk=4", []int{40, 5}},                      // 1
		{"an5d/j2d5pt", "n5d:bx=8,rx=2,bt=3,wave=true,edges=true,chunk=4", []int{40, 70}}, // with the edge loop
	})
}

// TestN5DRimBlocksOpenCL runs n5d plans whose planes near the streaming axis's ends are blocks
// of their own (rimblocks=true): 3D and 2D, first and second order, wave and level order,
// phased loops, with the edge loop and the edge tiles first, and along axes too short to hold
// planes between the two margins (the kernel falls back to plain chunks). A chunk the new
// bounds missed or took twice leaves cells at their old values or repeats them: each run must
// agree with the reference and bitwise with the plan without the setting.
func TestN5DRimBlocksOpenCL(t *testing.T) {
	testkit.LongTest(t)
	checkSwitch(t, "rimblocks=true", func(pl *plan.Plan) { pl.RimBlocks = true }, []switchCase{
		{"an5d/star3d1r", "n5d:bx=4,by=8,rx=2,bt=2,wave=true,pf=3,chunk=5", []int{30, 14, 22}}, // margins 9 and 11: 2 chunks between
		{"an5d/star3d1r", "n5d:bx=4,by=8,rx=2,bt=2,wave=true,pf=3,chunk=5", []int{18, 14, 22}}, // 18 planes: plain chunks
		{"an5d/star3d1r", "n5d:bx=8,by=8,rx=2,bt=3,wave=true,pf=3,phased=true,unroll=3,chunk=4", []int{34, 17, 36}},
		{"an5d/box3d1r", "n5d:bx=4,by=8,rx=2,bt=2,wave=true,vec=1,edgesfirst=true,chunk=5", []int{30, 14, 22}},
		{"an5d/j2d9pt", "n5d:bx=8,rx=2,bt=2,wave=true,pf=5,chunk=4", []int{40, 70}}, // reach 2: margins 14 and 18
		{"an5d/box2d1r", "n5d:bx=8,rx=2,bt=3,chunk=4", []int{40, 70}},               // level order: 7 and 10
		{"an5d/j2d5pt", "n5d:bx=8,rx=2,bt=3,wave=true,edges=true,edgesfirst=true,chunk=4", []int{40, 70}},
		{"an5d/j2d5pt", "n5d:bx=8,rx=2,bt=3,wave=true,chunk=64", []int{60, 70}}, // one chunk between the margins
	})
}

// TestN5DUnclampedOpenCL runs n5d plans whose loop without the rim's checks loads its planes
// without clamping their index (unclamped=true), with prefetches as deep as the rim and deeper
// (which widen the margin the blocks in that loop keep from the streaming axis's end), with
// the rim's blocks, chunks cut at the rim and the edge loop, in 2D and 3D, first and second
// order: each run must agree with the reference and bitwise with the plan that clamps.
// (lower's TestN5DFastLoopLoadsInside checks under AddressSanitizer that no load leaves the
// input.)
func TestN5DUnclampedOpenCL(t *testing.T) {
	testkit.LongTest(t)
	checkSwitch(t, "unclamped=true", func(pl *plan.Plan) { pl.Unclamped = true }, []switchCase{
		{"an5d/star3d1r", "n5d:bx=4,by=8,rx=2,bt=2,wave=true,pf=3,rimblocks=true,chunk=5", []int{30, 14, 22}},
		{"an5d/star3d1r", "n5d:bx=8,by=8,rx=2,bt=3,wave=true,pf=3,phased=true,rimcut=true,chunk=4", []int{34, 17, 36}},
		{"an5d/j2d9pt", "n5d:bx=8,rx=2,bt=2,wave=true,pf=5,chunk=4", []int{40, 70}}, // pf 5 over a rim of 2
		{"an5d/j2d5pt", "n5d:bx=8,rx=2,bt=3,wave=true,pf=6,edges=true,rimblocks=true,chunk=4", []int{41, 70}},
		{"an5d/box2d1r", "n5d:bx=8,rx=2,bt=3,chunk=4", []int{40, 70}}, // the next plane only: no widening
	})
}

// TestN5DShrinkOpenCL runs n5d plans whose warps cover whole rows of a 3D tile with the idle
// warps skipping the deeper levels (shrink=true): stars through register queues, with
// asynchronous copies into level 0's planes and with a barrier per level, a box through
// partial sums, and a non-linear box whose levels keep a ring of every plane; warps of one,
// two and four thread rows. Each plan has a level with an idle warp (the test says so), and
// each must agree with the reference and bitwise with the plan without shrink. (The PoCL
// and CUDA matrices' sampled n5d variant carries shrink too: one-row warps, the other level
// order, every 3D example.) Live warps one too few at the top fail every case.
func TestN5DShrinkOpenCL(t *testing.T) {
	testkit.LongTest(t)
	cases := []switchCase{
		{"an5d/star3d1r", "n5d:bx=32,by=8,rx=2,ry=2,bt=3,wave=true,pf=3,chunk=5", []int{12, 34, 70}},
		{"an5d/star3d1r", "n5d:bx=16,by=12,rx=2,ry=2,bt=4,wave=true,async=2,phased=true,rimblocks=true,edgesfirst=true,chunk=4", []int{22, 40, 50}},
		{"an5d/star3d1r", "n5d:bx=8,by=16,rx=2,bt=4,wave=false,chunk=6", []int{17, 30, 21}},
		{"an5d/box3d1r", "n5d:bx=32,by=8,rx=2,bt=2,wave=true,chunk=5", []int{10, 22, 70}},
		{"morph/dilate3d", "n5d:bx=32,by=8,bt=2,chunk=5", []int{9, 20, 40}},
	}
	for _, c := range cases {
		p, pl := testkit.ExampleParsed(t, c.example, c.plan)
		if _, ok := pl.N5DLiveWarps(p.Dims(), p.Reach(), pl.BT); !ok {
			t.Fatalf("%s %s: no level leaves a warp idle", c.example, c.plan)
		}
	}
	checkSwitch(t, "shrink=true", func(pl *plan.Plan) { pl.Shrink = true }, cases)
}

// TestN5DAscendOpenCL runs wave order with the levels lowest first (plan.Ascend) against the
// reference and bitwise against the descending order: stars of reach 1, 2 and 3 along the
// streaming axis (rings of 2, 5 and 7 shared planes per level), 2D and 3D, with the register
// prefetch and with asynchronous copies straight into level 0's planes, short rounds, phased
// loops, the rim's blocks, the edge loop and idle warps.
func TestN5DAscendOpenCL(t *testing.T) {
	testkit.LongTest(t)
	cases := []switchCase{
		{"an5d/star2d1r", "n5d:bx=16,rx=2,bt=5,wave=true,pf=3,unroll=3,rimblocks=true,edges=true,edgesfirst=true,chunk=9", []int{40, 70}},
		{"an5d/j2d5pt", "n5d:bx=16,rx=2,bt=4,wave=true,pf=3,phased=true,unclamped=true,rimblocks=true,chunk=7", []int{53, 61}},
		{"an5d/star2d2r", "n5d:bx=8,rx=2,bt=3,wave=true,pf=5,edges=true,rimblocks=true,chunk=6", []int{40, 70}},
		{"an5d/j2d9pt", "n5d:bx=8,rx=2,bt=2,wave=true,pf=5,unroll=5,chunk=4", []int{40, 70}},
		{"an5d/gradient2d", "n5d:bx=8,rx=2,bt=3,wave=true,async=3,rimblocks=true,chunk=4", []int{40, 70}},
		{"an5d/star2d3r", "n5d:bx=16,bt=2,wave=true,chunk=5", []int{33, 70}},
		{"an5d/star3d1r", "n5d:bx=16,by=12,rx=2,ry=2,bt=4,wave=true,async=2,phased=true,rimblocks=true,edgesfirst=true,shrink=true,chunk=4", []int{22, 40, 50}},
		{"an5d/star3d1r", "n5d:bx=8,by=8,rx=2,bt=3,wave=true,pf=2,edges=true,chunk=5", []int{17, 30, 21}},
		{"an5d/star3d2r", "n5d:bx=16,by=16,bt=2,wave=true,chunk=6", []int{20, 24, 36}},
	}
	checkSwitch(t, "ascend=true", func(pl *plan.Plan) { pl.Ascend = true }, cases)
}

// TestN5DConstSizeOpenCL runs an n5d plan compiled for its size (plan.ConstSize: the sizes are
// constants of the kernels) on PoCL, the main kernel and a shallower one, on a size no tile
// divides, with the rim's blocks and the edge loop, and with chunks cut at the rim: it must agree with the reference and bitwise
// with the plan that takes its sizes as arguments. TestConstSizeKernels checks the kernel text
// and TestNeighboursTryChunksAndScalarAccesses a tuning that ends with such a plan.
func TestN5DConstSizeOpenCL(t *testing.T) {
	testkit.LongTest(t)
	cases := []switchCase{
		{"an5d/box2d1r", "n5d:bx=8,rx=2,bt=2,wave=true,pf=2,rimblocks=true,edges=true,chunk=6,fastmath=true", []int{41, 37}},
		// Chunks cut at the rim: the pieces' bounds read n0 outside the loops.
		{"an5d/j2d5pt", "n5d:bx=16,rx=2,bt=3,wave=true,pf=2,rimcut=true,edges=true,edgesfirst=true,chunk=8", []int{45, 70}},
	}
	checkSwitch(t, "constsize=true", func(pl *plan.Plan) { pl.ConstSize = true }, cases)
}

// rd1D is a 1D reaction-diffusion with two state grids of a fixed rim, an input grid read at
// an offset, a let and the cell's coordinate: what a register tile's cells read besides their
// own grid's registers (TestPyramidRXOpenCL).
const rd1D = `stencil rd1d
axes x
type f32
param D = 0.1
input k: f32
  init 0.04 + 0.02 * rand()
state u
  init rand()
  boundary fixed
state v
  init 0.5 * rand()
  boundary fixed
let uvv = u * v * v
update u = u + D * (u[x-1] - 2 * u + u[x+1]) - uvv + k * (1 - u)
update v = v + 0.5 * D * (v[x-1] - 2 * v + v[x+1]) + uvv - (k[x+1] + 0.05) * v + 0.0001 * f32(x % 3)
`

// TestPyramidRXOpenCL runs 1D pyramids with a register tile (rx cells a thread, lower's
// pyramidRX) against the reference and bitwise against the pyramid of one cell a thread:
// reach 1, 2 and 3, tiles of 3 to 8 cells, lengths no tile divides and one shorter than a tile
// (every block reaches the rim), the main kernel and the shallower ones of the remainder (7
// steps: 4+2+1 or 6+1), two state grids with an input grid read at an offset.
func TestPyramidRXOpenCL(t *testing.T) {
	testkit.LongTest(t)
	for _, g := range []struct {
		rx    int
		cases []switchCase
	}{
		{4, []switchCase{
			{"peers/conv_1d1r", "pyramid:bx=16,ph=4", []int{203}},
			{"rd1d", "pyramid:bx=16,ph=6", []int{301}},
		}},
		{8, []switchCase{
			{"peers/conv_1d2r", "pyramid:bx=32,ph=6", []int{517}},
			{"peers/conv_1d1r", "pyramid:bx=16,ph=4", []int{90}},
		}},
		{3, []switchCase{
			{"peers/flash_1d7p", "pyramid:bx=32,ph=4", []int{411}},
			{"rd1d", "pyramid:bx=16,ph=4", []int{150}},
		}},
	} {
		checkSwitch(t, fmt.Sprintf("rx=%d", g.rx), func(pl *plan.Plan) { pl.RX = g.rx }, g.cases)
	}
}
