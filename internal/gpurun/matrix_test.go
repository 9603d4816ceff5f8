package gpurun

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"tempest/internal/analysis"
	"tempest/internal/gpu"
	"tempest/internal/ir"
	"tempest/internal/load"
	"tempest/internal/lower"
	"tempest/internal/plan"
	"tempest/internal/ref"
	"tempest/internal/state"
	"tempest/internal/testkit"
)

// openDevice opens a backend for the tests. A missing backend skips, unless
// TEMPEST_REQUIRE_<BACKEND>=1 says it must be there (CI sets it for OpenCL).
func openDevice(t *testing.T, backend string) gpu.Device {
	t.Helper()
	dev, err := gpu.Open(backend)
	if err != nil {
		if os.Getenv("TEMPEST_REQUIRE_"+strings.ToUpper(backend)) == "1" || !errors.Is(err, gpu.ErrUnavailable) {
			t.Fatalf("opening %s: %v", backend, err)
		}
		t.Skipf("%s not available: %v", backend, err)
	}
	t.Cleanup(func() { dev.Close() })
	return dev
}

// Tolerances for float results, relative to the largest magnitude of the reference field:
// GPU compilers contract a*b+c into FMAs and their math functions differ from Go's by a few
// units in the last place, so float results agree to rounding, not bitwise.
const (
	tolF32 = 2e-5
	tolF64 = 1e-12
)

// agree compares a GPU state with the reference: integers bitwise, floats within the
// tolerance of their type. It returns a description of the first disagreement.
func agree(want, got *state.State) string {
	for _, u := range want.Prog.Updates {
		g := u.Grid
		a, b := want.Cur[g.Index].Float64s(), got.Cur[g.Index].Float64s()
		scale := 1.0
		for _, v := range a {
			if !math.IsInf(v, 0) && !math.IsNaN(v) {
				scale = max(scale, math.Abs(v))
			}
		}
		tol := 0.0
		switch g.Type {
		case ir.F32:
			tol = tolF32 * scale
		case ir.F64:
			tol = tolF64 * scale
		}
		for i := range a {
			if math.IsNaN(a[i]) && math.IsNaN(b[i]) || a[i] == b[i] {
				continue
			}
			if math.Abs(a[i]-b[i]) > tol || math.IsNaN(b[i]) || math.IsNaN(a[i]) {
				return fmt.Sprintf("grid %s cell %d: got %v, reference %v (tolerance %.3g)", g.Name, i, b[i], a[i], tol)
			}
		}
	}
	return ""
}

// awkwardShapes are sizes that catch indexing mistakes: ones, primes, sizes below a tile.
var awkwardShapes = map[int][][]int{
	1: {{1}, {37}, {300}},
	2: {{1, 1}, {1, 9}, {7, 1}, {13, 29}, {37, 70}},
	3: {{1, 1, 1}, {5, 7, 11}, {9, 2, 35}},
}

// vectorShapes are sizes at which the inplane variants' blocks away from the edges exist (for
// reaches up to 6) and so take the aligned vector path: rows of 60 elements, a multiple of 4,
// and of 62, a multiple of 2 only (vec=4 then falls back to scalar loads). Only inplane runs
// them.
var vectorShapes = [][]int{{4, 30, 60}, {3, 30, 62}}

// interiorShapes are sizes at which n5d's sampled 3D variant has blocks whose planes and
// columns lie wholly inside the interior, so its loop without rim checks runs, and the
// pipelined forward plane's small blocks have steps wholly inside, so their updates without
// any test run. Only n5d and forwardplane run them (the 2D awkward sizes already reach n5d's
// loop).
var interiorShapes = [][]int{{20, 12, 20}}

// extraShape says which strategies run the 3D shape at index si past the awkward ones.
func extraShape(si int) ([]int, []string) {
	si -= len(awkwardShapes[3])
	if si < len(vectorShapes) {
		return vectorShapes[si], []string{"inplane"}
	}
	return interiorShapes[si-len(vectorShapes)], []string{"n5d", "forwardplane"}
}

// planVariants are the plans and sampled parameters the matrix runs per dimension; cuda adds
// the variants that only CUDA runs (asynchronous copies, chained launches).
func planVariants(p *ir.Program, cuda bool) []plan.Plan {
	var out []plan.Plan
	only := os.Getenv("TEMPEST_MATRIX_PLANS") // a comma-separated subset, for quick runs
	for _, s := range plan.Strategies {
		if only != "" && !strings.Contains(","+only+",", ","+s+",") {
			continue
		}
		def, err := plan.Default(s, p)
		if err != nil {
			continue
		}
		reach := slices.Max(p.Reach())
		wide := reach > 2 // n5d's unrolled loops grow as (2R+1) x bt, and so does compilation
		if s == "n5d" && !cuda && p.Dims() == 2 && reach >= 4 && analysis.Analyze(p).Shape == analysis.Box {
			// PoCL (the CI) leaves out n5d for the 2D boxes of reach 4: their 81-point sums
			// unrolled over 2 x 9 planes took over two of its ten minutes to compile; reach 3
			// covers the same paths, and the CUDA matrix runs them.
			continue
		}
		if s != "n5d" || !wide {
			out = append(out, def) // wide n5d programs run the sampled variant only
		}
		alt := def
		switch p.Dims() {
		case 1:
			alt.BX = 64
		case 2:
			alt.BX, alt.BY = 8, 4
			if s == "pyramid" {
				alt.BX, alt.BY = 16, 16
			}
		case 3:
			alt.BX, alt.BY = 4, 4
			if alt.BZ > 1 {
				alt.BZ = 2
			}
		}
		if s == "pyramid" {
			alt.PH = 3
			if alt.FitPH(p) != nil {
				continue
			}
		}
		if s == "stream25d" || s == "forwardplane" {
			alt.Chunk = 4
		}
		if s == "forwardplane" {
			// Blocks narrower than the halo: edge threads load several halo rows and columns,
			// here two planes ahead (several halo registers a thread); the halos a plane
			// ahead (alt); steps of several planes where the stencil is a star along z: three
			// planes a step of the 4x4 blocks (chunks of 4 end in a step of one plane), two of
			// blocks one thread tall (chunks of 5).
			tiny := def
			tiny.BX, tiny.BY, tiny.Chunk, tiny.Prefetch = 2, 1, 3, 2
			out = append(out, tiny)
			alt.Prefetch = 1
			if q := alt; true {
				q.RZ = 3
				if q.Validate(p, plan.Limits{}, 0) == nil {
					alt = q
				}
			}
			steps := def
			steps.BX, steps.BY, steps.Chunk, steps.Prefetch, steps.RZ = 4, 1, 5, 1, 2
			steps.ConstSize = true // compiled for the shape it runs
			if steps.Validate(p, plan.Limits{}, 0) == nil {
				out = append(out, steps)
			}
		}
		if s == "inplane" {
			// Vertical loading, 2x3 register tiles, pairs; horizontal, 3x1 tiles, quads (pairs
			// for 8-byte elements, which take no quads). The horizontal tile is 18 wide, so only
			// every other block column starts at a multiple of 4 and may take vector loads.
			alt.Chunk, alt.Load, alt.RX, alt.RY, alt.Vec = 5, 0, 2, 3, 2
			hor := def
			hor.BX, hor.BY, hor.Chunk, hor.Load, hor.RX, hor.RY, hor.Vec = 6, 2, 3, 1, 3, 1, 4
			for _, g := range p.Grids {
				if g.Type.Size() == 8 {
					hor.Vec = 2
				}
			}
			out = append(out, hor)
		}
		if s == "n5d" {
			// Short chunks, three steps per launch, several cells per thread along x (and
			// rows along y in 3D), the other level order than the default's (wave order or
			// one barrier per level), two planes loaded ahead, the edge tiles launched first,
			// the planes near the streaming axis's ends in blocks of their own (where the
			// shape has planes between them), the loop without checks loading unclamped, the
			// warps whose rows feed no output skipping the deeper levels (3D).
			alt.Chunk, alt.BT, alt.RX, alt.Wave, alt.Prefetch, alt.EdgesFirst, alt.RimBlocks = 5, 3, 2, !def.Wave, 2, true, true
			alt.Unclamped = true
			alt.Shrink = true // idle warps skip levels where the 3D tile's rows allow (one warp a row)
			if p.Dims() == 3 && reach == 1 {
				alt.RY = 2 // first-order only: wider boxes' unrolled kernels grow with the cells (CI time)
			}
			if wide {
				alt.BT = 2
			}
			if p.Dims() == 2 {
				// Pairs for first-order programs: their blocks inside the interior of the
				// 37x70 shape load and store aligned vectors; triples (no vectors) for the rest.
				alt.BX, alt.BY, alt.RX = 8, 1, 3
				if p.Reach()[1] == 1 {
					alt.RX = 2
				}
				if wide && analysis.Analyze(p).Shape == analysis.Box {
					// One cell per thread for boxes of reach 3: box2d2r's triples cover the
					// same paths, and box2d3r's (a 1 MB kernel) took two minutes of PoCL's
					// compilation in CI.
					alt.RX = 1
				}
			}
			if alt.FitBT(p) != nil {
				continue
			}
			if cuda {
				// Asynchronous copies (CUDA): one plane ahead on the default plan, its levels
				// lowest first where the program is a star (ascend), and two on the sampled
				// variant (short chunks, register tiles, vector copies in the interior blocks,
				// the edge loop, the other level order; reach 2 and more along the streaming
				// axis take a ring of more planes than three, the fewest that divide the round;
				// compiled for the shape it runs, plan.ConstSize).
				as := def
				as.Async = 1
				as.Ascend = as.Wave && lower.N5DAscends(p)
				out = append(out, as)
				as = alt
				as.Prefetch, as.Async, as.ConstSize = 0, 2, true
				as.Edges = lower.N5DEdges(p, as) // the edge loop's copies of clamped runs
				out = append(out, as)
				// Chained launches (plan.Chain, CUDA sm_90): each block of a launch waits for
				// its neighbouring blocks of the launch before, not for the whole launch.
				ch := def
				ch.Chain = true
				out = append(out, ch)
				if p.Dims() == 2 && analysis.Analyze(p).Shape == analysis.Box {
					// What the model's pick adds for 2D boxes on CUDA (tune.PickRules): copies
					// five planes ahead, the rim's blocks, the edge tiles first.
					pk := def
					pk.Async, pk.RimBlocks, pk.EdgesFirst = 5, true, true
					out = append(out, pk)
				}
			}
			if reach == 1 && lower.N5DShortRound(p) {
				// Short rounds of 2R+1 planes (rings of three shared planes per level) with
				// phased loops at depth three, a prefetch as deep as the round, chunks cut
				// at the rim (the short chunks make every block one to three pieces) and the
				// edge loop (2D shapes reach it; TestN5DEdgesOpenCL runs 3D); first order
				// only (CI time). Its rows padded to whole lines (plan.Align, which the
				// model's pick and the search take at row lengths no multiple of the
				// vector): the awkward shapes' odd rows run their vectors, the edge runs
				// clamped to the pitch.
				sr := alt
				sr.Unroll, sr.Phased, sr.Prefetch, sr.BT, sr.RimCut, sr.RimBlocks, sr.Edges = 3, true, 3, 3, true, false, lower.N5DEdges(p, alt)
				sr.Align = true
				if sr.FitBT(p) == nil && sr.BT == 3 {
					out = append(out, sr)
				}
			}
		}
		out = append(out, alt)
	}
	return out
}

// matrixModules is the matrix's cache of compiled kernels (each is compiled once for all
// sizes). On PoCL it compiles without optimization: the matrix checks what the generated code
// computes, and LLVM's optimization of every variant is most of the PoCL matrix's time in CI.
// GPUs compile as users' runs do.
func matrixModules(dev gpu.Device) *Modules {
	mods := NewModules(dev)
	if strings.Contains(dev.Props().Platform, "Portable Computing Language") {
		mods.Extra = []string{"-cl-opt-disable"}
	}
	return mods
}

func examples(t *testing.T) []string {
	var files []string
	filepath.WalkDir("../../examples", func(path string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(path, ".stencil") {
			files = append(files, path)
		}
		return nil
	})
	sort.Strings(files)
	if len(files) == 0 {
		t.Fatal("no examples")
	}
	return files
}

// quickExamples are the examples the OpenCL matrix runs in the README's go test ./...: one of
// each kind (1D, 2D and 3D stars and boxes with n5d's partial sums, several grids, a previous
// level, an input grid, integers, the in-plane suite). The long tests (testkit.Long) run every
// example.
var quickExamples = []string{"an5d/box2d1r", "an5d/star2d1r", "an5d/star3d1r", "demos/grayscott", "demos/wave",
	"inplane/laplacian", "lift/hotspot2d", "morph/dilate2d", "sl/pathfinder"}

// runMatrix runs every example x plan x shape x step count on a backend against the reference.
func runMatrix(t *testing.T, backend string) {
	dev := openDevice(t, backend)
	mods := matrixModules(dev)
	defer mods.Close()
	runs := 0
	// TEMPEST_MATRIX_EXAMPLES: a comma-separated subset of example folders or names (an5d,
	// morph/dilate2d), for quick runs.
	only := os.Getenv("TEMPEST_MATRIX_EXAMPLES")
	if only == "" && backend == "opencl" && !testkit.Long() {
		only = strings.Join(quickExamples, ",")
		t.Logf("the quick examples only (%s); TEMPEST_LONG=1 runs every example", only)
	}
	k := -1
	for _, f := range examples(t) {
		name := strings.TrimSuffix(strings.TrimPrefix(f, "../../examples/"), ".stencil")
		if only != "" && !slices.ContainsFunc(strings.Split(only, ","), func(o string) bool {
			return name == o || strings.HasPrefix(name, strings.TrimSuffix(o, "/")+"/")
		}) {
			continue
		}
		if only == "" && backend == "opencl" && strings.HasPrefix(name, "peers/") {
			// The peers' stencils are stars and boxes of radius 1 to 6, the AN5D examples'
			// shapes, whose code paths those cover; their wide kernels cost PoCL minutes of
			// compilation in CI. The CUDA matrix runs them.
			continue
		}
		if k++; !testkit.OwnsIndex(k) {
			continue // another shard's example (TEMPEST_SHARD)
		}
		p, err := load.File(f, load.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if backend == "opencl" && p.Dims() == 3 && slices.Max(p.Reach()) >= 4 && analysis.Analyze(p).Shape == analysis.Box {
			// The 729-point box took PoCL 60-90 s to compile in every strategy; the 343-point
			// box of reach 3 runs the same code paths, and the CUDA matrix runs this one.
			t.Logf("%s: left to the CUDA matrix", name)
			continue
		}
		start := time.Now()
		plans := planVariants(p, backend == "cuda")
		n := matrixProgram(t, dev, mods, name, p, plans)
		t.Logf("%s: %d comparisons in %.1fs", name, n, time.Since(start).Seconds())
		runs += n
	}
	t.Logf("%s: %d comparisons with the reference", backend, runs)
}

// matrixProgram runs one program under the given plans at every matrix shape and step count
// against the reference and returns the number of comparisons.
func matrixProgram(t *testing.T, dev gpu.Device, mods *Modules, name string, p *ir.Program, all []plan.Plan) int {
	runs := 0
	shapes := awkwardShapes[p.Dims()]
	if p.Dims() == 3 {
		shapes = append(shapes[:len(shapes):len(shapes)], vectorShapes...)
		shapes = append(shapes, interiorShapes...)
	}
	for si, shape := range shapes {
		plans := all
		if si >= len(awkwardShapes[p.Dims()]) {
			_, only := extraShape(si)
			plans = nil
			for _, pl := range all {
				if slices.Contains(only, pl.Strategy) {
					plans = append(plans, pl)
				}
			}
			if len(plans) == 0 {
				continue
			}
		}
		runs += matrixShape(t, dev, mods, name, p, plans, shape)
	}
	return runs
}

// matrixShape runs one program under the given plans at one shape for every step count
// against the reference and returns the number of comparisons.
func matrixShape(t *testing.T, dev gpu.Device, mods *Modules, name string, p *ir.Program, plans []plan.Plan, shape []int) int {
	steps := []int{1, 3, 5}
	runs := 0
	s, err := state.New(p, shape, state.DefaultParams(p), 4)
	if err != nil {
		t.Fatal(err)
	}
	ref.Init(s)
	// The reference after each checkpoint, computed once for every plan.
	wants := make([]*state.State, len(steps))
	w := s.Clone()
	done := 0
	for i, n := range steps {
		ref.Run(w, n-done)
		done = n
		wants[i] = w.Clone()
	}
	for _, pl := range plans {
		gs := s.Clone()
		r, err := PrepareWith(dev, gs, pl, mods)
		if err != nil {
			t.Errorf("%s %s: %v", name, pl, err)
			continue
		}
		done := 0
		for i, n := range steps {
			if err := r.Run(n - done); err != nil {
				t.Fatalf("%s %s %v: %v", name, pl, shape, err)
			}
			done = n
			if err := r.Download(); err != nil {
				t.Fatalf("%s %s %v: %v", name, pl, shape, err)
			}
			if msg := agree(wants[i], gs); msg != "" {
				t.Errorf("%s %s size %v after %d steps: %s", name, pl, shape, n, msg)
			}
			runs++
		}
		r.Close()
	}
	return runs
}

// TestMatrixOpenCL is the correctness matrix on OpenCL (PoCL in CI).
func TestMatrixOpenCL(t *testing.T) { runMatrix(t, "opencl") }

// TestMatrixCUDA is the same matrix on CUDA; it runs on the GPU machine.
func TestMatrixCUDA(t *testing.T) { runMatrix(t, "cuda") }

// directPrograms read grids only at in-plane offset (0, 0), which the inplane plan reads
// straight from global memory with no shared plane and, with none at all, no barrier: two
// levels, periodic, constant and mirror rules, reads two planes away.
var directPrograms = map[string]string{
	"zonly": `axes z, y, x
type f32
input w init sin(0.1 * x) + cos(0.2 * y) + 0.3 * z
state u init 0.01 * f32(x + y + z) prev 0 boundary z: periodic, y: constant(1), x: mirror
update u = 0.5 * (w[z+1] - w[z-1]) + 0.25 * u.prev[z-2] + 0.1 * u`,
}

// TestMatrixOpenCLInPlaneDirect runs directPrograms under the inplane variants of the matrix.
func TestMatrixOpenCLInPlaneDirect(t *testing.T) {
	t.Parallel()
	dev := openDevice(t, "opencl")
	mods := matrixModules(dev)
	defer mods.Close()
	for name, src := range directPrograms {
		p, err := load.Source(name+".stencil", src, load.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var plans []plan.Plan
		for _, pl := range planVariants(p, false) {
			if pl.Strategy == "inplane" {
				plans = append(plans, pl)
			}
		}
		if len(plans) == 0 {
			t.Fatalf("%s: no inplane variant", name)
		}
		t.Logf("%s: %d comparisons with the reference", name, matrixProgram(t, dev, mods, name, p, plans))
	}
}

// TestMatrixOpenCLInPlaneDouble runs the in-plane suite (examples/inplane) in double
// precision under the forward-plane and in-plane plans: vector loads become double2 there
// (vec=4 is refused for 8-byte elements, so those variants are skipped) and the tolerance
// tightens to 1e-12.
func TestMatrixOpenCLInPlaneDouble(t *testing.T) {
	testkit.LongTest(t)
	t.Parallel()
	dev := openDevice(t, "opencl")
	mods := matrixModules(dev)
	defer mods.Close()
	files, err := filepath.Glob("../../examples/inplane/*.stencil")
	if err != nil || len(files) == 0 {
		t.Fatalf("no in-plane examples: %v", err)
	}
	f64 := ir.F64
	total := 0
	for _, f := range files {
		p, err := load.File(f, load.Options{DefaultType: &f64})
		if err != nil {
			t.Fatal(err)
		}
		// The forward-plane default and the in-plane variants that remain valid in double
		// (the default and the sampled vec=2 one), to keep CI short.
		var plans []plan.Plan
		fp := false
		for _, pl := range planVariants(p, false) {
			switch {
			case pl.Strategy == "forwardplane" && !fp:
				fp = true
				plans = append(plans, pl)
			case pl.Strategy == "inplane" && pl.Validate(p, plan.Limits{}, 0) == nil:
				plans = append(plans, pl)
			}
		}
		name := "f64/" + strings.TrimSuffix(filepath.Base(f), ".stencil")
		total += matrixProgram(t, dev, mods, name, p, plans)
	}
	t.Logf("opencl: %d comparisons in double", total)
}
