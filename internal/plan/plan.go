// Package plan describes how a stencil runs on a GPU: a strategy and its parameters, as data.
// Lowering turns a plan into kernels; the tuner enumerates plans; people write them on the
// command line as `tiled:bx=32,by=8`.
package plan

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"tempest/internal/analysis"
	"tempest/internal/ir"
)

// Plan is a strategy with its parameters.
type Plan struct {
	Strategy string
	// BX, BY, BZ are the thread-block sizes along the fastest, second and third-fastest axes
	// (BZ unused by streaming plans, which walk the slowest axis).
	BX, BY, BZ int
	// PH is the pyramid height: time steps per launch (pyramid only).
	PH int
	// Chunk is the length of the slowest axis one streaming block covers (0: the whole axis);
	// for n5d it is AN5D's stream block length hSN.
	Chunk int
	// BT is the temporal block of n5d: time steps per launch, streamed through registers.
	BT int
	// FastMath compiles with fast math (as AN5D's comparisons do).
	FastMath bool
	// MaxRegs caps registers per thread (0: no cap).
	MaxRegs int
	// Load is the in-plane loading variant (inplane only): 0 vertical (top and bottom halos
	// loaded with the interior), 1 horizontal (left and right halos with the interior),
	// 2 full slice (the whole plane with its halo as one region).
	Load int
	// RX, RY are the register tile: each thread computes RX x RY outputs, strided by the
	// block size along x and y (inplane), or neighbouring along x and y (n5d: rx in 2D and
	// 3D, ry in 3D), so that neighbours within the tile come from registers and a block of
	// few threads covers a wide tile, whose halo costs less. A 1D pyramid takes rx too: each
	// thread keeps rx neighbouring cells in registers through the launch's ph steps and
	// exchanges only its R edge cells a side through shared memory (lower's pyramidRX; 1D
	// programs with a fixed rim, PyramidRXApplies).
	RX, RY int
	// RZ is the planes a forward-plane step computes between two barriers (1 or left out:
	// one): its register queues hold 2r+RZ values and its halos and shared buffers RZ planes,
	// so the barrier, the loop and the step's tests are paid once for RZ planes.
	RZ int
	// Wave skews n5d's levels one plane further apart so that one barrier per plane serves
	// all of them (the pipelined wavefront of Schafer and Fey) instead of one per level.
	Wave bool
	// Vec is the width of the vector loads along x (inplane): 1, 2 or 4 elements. Blocks
	// whose plane lies inside the domain load it with aligned vector loads when the row length
	// and the buffers allow (checked at run time), else with vec scalar loads per thread; the
	// boundary blocks load scalars. vec=4 takes 4-byte elements only (16 bytes per load).
	// n5d takes 0 (its interior blocks load and store a thread's rx cells as one vector where
	// rx is 2 or 4, the tiles' outputs aligned to rx along x) or 1 (scalar accesses, tiles
	// unaligned).
	Vec int
	// Prefetch is how many planes ahead n5d loads its input (0 or 1: the next plane). Deeper
	// prefetches keep more loads in flight per thread, at pf registers per cell.
	Prefetch int
	// Async is how many planes ahead n5d copies its input into a ring of shared planes with
	// asynchronous copies (cp.async, CUDA on sm_80 and later), instead of loading them into
	// prefetch registers (0: off). The registers it frees let wider tiles and deeper temporal
	// blocks keep their occupancy. The ring has N5DRing planes.
	Async int
	// Unroll is the planes per unrolled round of n5d's plane loop: 0 (the default) or
	// 2(2R+1) for reach R along the streaming axis, the least common multiple of the register
	// queues' 2R+1 planes and the double-buffered shared planes; or 2R+1, half the code, with
	// 2R+1 shared planes per level in place of two. Deep blocks' rounds outgrow the
	// instruction cache, and the shorter round halves them at the price of the extra planes.
	Unroll int
	// Phased runs every n5d block in three loops, a head that skips the levels with no needed
	// plane yet, the rounds where all are active, and a tail that skips the levels already
	// done, instead of one loop that computes them all; blocks of bt <= 2 always do. Deep
	// blocks' three copies of the round can outgrow the instruction cache, but the skipped
	// warm-up may pay (it did in 3D), so it is the tuner's to choose.
	Phased bool
	// RimCut splits an n5d chunk that reaches the fixed rim of the streaming axis (the first
	// and last chunks of every tile) into up to three pieces: the planes near the rim in the
	// loop with the rim's checks, the rest in the loop without them, which blocks away from
	// the rim run alone. Without it such a chunk runs the checked loop throughout: with 3D
	// tiles of 80 planes, two chunks in seven. Each piece pays its own warm-up.
	RimCut bool
	// RimBlocks gives the planes of the streaming axis that need the rim's checks n5d blocks
	// of their own: per tile, one block from the first plane to the first the loop without
	// checks may start at, one over the last planes, and between them chunks of Chunk planes
	// that all run without the checks. Otherwise the first and last chunks of every tile run
	// the checked loop throughout, and the last of them, launched last, end the launch: a last
	// chunk that is a full one reaching the rim is slower than a short one. Where rimcut splits
	// such a chunk inside its block (a loop over pieces, more registers), this splits the
	// launch. It pays on some tuned plans and costs others (more registers may leave a block
	// fewer per SM), so it is the tuner's to choose. With it no chunk reaches the rim, and
	// longer chunks may pay where without it they lost. Not with rimcut.
	RimBlocks bool
	// Unclamped lets the n5d loop without the rim's checks load its planes without clamping
	// their index into the domain: the blocks that run it keep as many planes more from the
	// streaming axis's end as the prefetch reads past the rim (lower.n5dRimMargins). It drops
	// the clamp's min and max per load, but nvcc allocates registers differently without
	// them: capped registers may spill more, or a block fewer may fit an SM, so it is the
	// tuner's to choose. Register prefetches only (asynchronous copies keep clamping).
	Unclamped bool
	// Shrink lets the warps of an n5d block skip the levels at which none of their cells
	// feeds an output (N5DLiveWarps): the tile's halo shrinks by a reach per level, so on
	// blocks whose warps cover whole rows of a 3D tile the rows near its edges are idle
	// at the deeper levels instead of computing values that are never stored. Levels with a
	// dead warp run under a warp-uniform condition; blocks whose warps all feed every level
	// are unchanged.
	Shrink bool
	// Ascend runs wave order's levels lowest first, each only R planes behind the level below
	// (R the reach along the streaming axis) instead of R+1, for stars: programs whose in-plane
	// neighbours are read on the centre plane only. A level then publishes the plane it has just
	// computed into a ring of at least R+1 shared planes (N5DPlanes) and the level above reads
	// it R planes later, still with one barrier per plane; its register queue is read right
	// after the level below wrote the newest plane, so 2R of its 2R+1 planes stay live between
	// planes instead of all of them (rx x ry x bt registers fewer), and the chunk's warm-up is
	// bt planes shorter. Needs wave.
	Ascend bool
	// Edges runs the n5d blocks on the in-plane edges of the domain whose planes lie inside
	// the interior (a sixth of the 3D tiles at AN5D's sizes) in the loop without the rim's
	// checks, on clamped columns, with a select that keeps each rim column's value, instead of
	// the loop that checks every cell and plane. Only where every rim is as wide as the reach
	// (lower.N5DEdges).
	Edges bool
	// EdgesFirst launches the n5d blocks of the tiles on the in-plane edges first, then the
	// others in the usual order: the edge tiles run the loop with the rim's checks (or the
	// edge loop), the slowest per plane, and launched where the raster order puts them the last
	// of them finish long after the rest (longest first is the classic cure for such a tail).
	// It paid on most 2D stencils and lost in 3D, so it is the tuner's to choose.
	EdgesFirst bool
	// ConstSize compiles the n5d and forward-plane kernels for the run's size: the sizes are
	// constants of the kernel text instead of arguments, so that the compiler folds the index
	// arithmetic of every global access (a thread's rows lie a constant stride apart, one
	// address and immediate offsets) and loads no size from the constant bank. The run compiles
	// its kernels at run time for the size it runs anyway; only `tempest gen`, whose code serves
	// every size, refuses it. It may also cost (the loops compile differently), so it is the
	// tuner's to choose.
	ConstSize bool
	// Align pads every row of the device arrays (the last axis) to a whole number of 128-byte
	// lines (RowPitch elements), so that every row starts on a line: at AN5D's sizes (518 or
	// 16386 cells a row) rows otherwise start at four or more offsets within a line and a
	// warp's row load touches one sector more than it needs, and at a row length no multiple
	// of their width n5d's and the in-plane method's vector accesses never run (n5d, forwardplane
	// and inplane take it). The kernels take the row pitch; the
	// run packs and unpacks the rows at its uploads and downloads. One device only (the
	// decomposition's exchanges address dense arrays), and `tempest gen`'s code takes dense
	// arrays, so it refuses it.
	Align bool
	// CentreFirst writes, under fast math, every weighted sum's terms that read the centre
	// column (offsets along the streaming axis only) before those that read in-plane
	// neighbours (lower.orderTerms). The kernels add a sum's terms in the written order, and in
	// n5d the centre column comes from registers while in-plane neighbours are shared-memory
	// loads, so the order decides where the chain waits, for better on some stencils and worse
	// on others. Another order rounds differently; errbound's fast-math bound holds for any
	// order of a sum's terms.
	CentreFirst bool
	// Chain runs consecutive n5d launches of one kernel as programmatic dependent launches
	// (CUDA, sm_90 and newer): a launch may start while the launch before it still runs, and
	// each of its blocks waits only until the blocks of that launch whose outputs it reads, or
	// whose inputs it overwrites, have stored a completion flag (lower: kir.ChainWait,
	// kir.ChainSignal), instead of for the whole launch. The blocks of the next launch then
	// fill the multiprocessors that the launch before leaves idle while its last blocks run.
	// Its kernels take their input without __restrict__, so that the compiler keeps the reads
	// off the non-coherent read-only path (the input is written while they run). It pays on
	// some plans and costs others, so it is a plan setting, which the tuner's last step
	// measures.
	Chain bool
	// Ranges makes n5d's kernels take the planes of the streamed axis they write, zlo to
	// zhi-1 (two more arguments), their chunks counted from zlo: a launch over a range reads
	// the planes beyond it as a chunk's warm-up does and writes exactly its range, so that
	// launches over ranges that tile a domain compute what one launch over it would, bitwise,
	// and a run can compute some planes before others (split runs: the planes a neighbour
	// needs first, then the rest while the exchange travels). The runner passes the whole
	// axis unless told otherwise. With rimblocks the rim's blocks take what the range holds of
	// the planes near the axis's ends. Not with rimcut or chain, whose pieces or flags follow
	// the whole axis.
	Ranges bool
}

// N5DPhased says n5d blocks of depth bt run phased loops (Phased).
func (pl Plan) N5DPhased(bt int) bool { return bt <= 2 || pl.Phased }

// N5DRound is the planes of one unrolled round of the n5d loop for reach R along the
// streaming axis (Unroll): every register queue, accumulator and shared slot repeats within it.
func (pl Plan) N5DRound(R int) int {
	if pl.Unroll == 2*R+1 {
		return 2*R + 1
	}
	return 2 * (2*R + 1)
}

// N5DPlanes is the shared planes per level of the n5d windows that would otherwise be
// double-buffered: two where the round is even, else a ring of the round's 2R+1. With Ascend
// a level publishes its newest plane while the level above still reads the one R planes
// older, so the ring holds at least R+1 planes: the fewest that divide the round.
func (pl Plan) N5DPlanes(R int) int {
	r := pl.N5DRound(R)
	if pl.Ascend {
		n := R + 1
		for r%n != 0 {
			n++
		}
		return n
	}
	if r%2 != 0 {
		return r
	}
	return 2
}

// N5DLag is the planes each level of an n5d block runs behind the level below, for reach R
// along the streaming axis: R, or R+1 in wave order, where every level reads only planes
// published a copy earlier (descending levels), unless Ascend lets the levels read the
// plane published R copies earlier.
func (pl Plan) N5DLag(R int) int {
	if pl.Wave && !pl.Ascend {
		return R + 1
	}
	return R
}

// Default gives a strategy's default parameters for a program (Registry).
func Default(strategy string, p *ir.Program) (Plan, error) {
	pl := Plan{Strategy: strategy}
	s, ok := Lookup(strategy)
	if !ok {
		return pl, unknownStrategy(strategy)
	}
	if s.applies != nil {
		if err := s.applies(p); err != nil {
			return pl, err
		}
	}
	err := s.defaults(&pl, p)
	return pl, err
}

// FitPH lowers a pyramid's height until every block axis keeps at least one output cell
// (2*reach*PH < block); it fails when even one step does not fit.
func (pl *Plan) FitPH(p *ir.Program) error {
	r := p.Reach()
	cells := pl.PyramidCells()
	block := cells[:]
	for a, v := range r {
		b := block[len(r)-1-a]
		if v == 0 {
			continue
		}
		if b <= 2*v {
			return fmt.Errorf("plan pyramid: a block of %d cells along %s cannot cover a reach of %d; pyramid does not fit this stencil with these blocks", b, p.Axes[a], v)
		}
		pl.PH = min(pl.PH, (b-1)/(2*v))
	}
	return nil
}

// PyramidRXApplies says whether a pyramid with a register tile (rx > 1) can run p: a 1D grid
// whose state grids keep one time level and hold a fixed rim at least the reach wide, the same
// on every state grid (the rim's cells keep their values, and cells beyond it are never read
// by a cell that computes).
func PyramidRXApplies(p *ir.Program) error {
	if p.Dims() != 1 {
		return fmt.Errorf("pyramid's register tile (rx) is for 1D grids; %s is %dD: drop rx", p.Name, p.Dims())
	}
	R := p.Reach()[0]
	for _, u := range p.Updates {
		g := u.Grid
		switch {
		case g.Levels > 1:
			return fmt.Errorf("pyramid's register tile (rx) keeps one time level, but grid %s keeps two: drop rx", g.Name)
		case g.BC[0].Kind != ir.Fixed || g.Rim[0] < R:
			return fmt.Errorf("pyramid's register tile (rx) needs a fixed boundary at least the reach (%d) wide (grid %s is %s, rim %d): drop rx", R, g.Name, g.BC[0].Kind, g.Rim[0])
		case g.Rim[0] != p.Updates[0].Grid.Rim[0]:
			return fmt.Errorf("pyramid's register tile (rx) needs one rim width on every state grid (%s has %d, %s %d): drop rx", g.Name, g.Rim[0], p.Updates[0].Grid.Name, p.Updates[0].Grid.Rim[0])
		}
	}
	return nil
}

// pyramidCheck is the pyramid plan's checks beyond its parameters' ranges: a register tile
// only where it applies.
func pyramidCheck(pl Plan, p *ir.Program, lim Limits) error {
	if pl.RX > 1 {
		if err := PyramidRXApplies(p); err != nil {
			return fmt.Errorf("plan %s: %w", pl, err)
		}
	}
	return nil
}

// n5dApplies says whether N.5D blocking can run p: a 2D or 3D grid whose state grids keep one
// time level and hold their outer cells fixed on every axis (AN5D's setting).
func n5dApplies(p *ir.Program) error {
	if p.Dims() < 2 {
		return fmt.Errorf("plan n5d streams along the slowest axis of a 2D or 3D grid; %s is %dD", p.Name, p.Dims())
	}
	for _, u := range p.Updates {
		if u.Grid.Levels > 1 {
			return fmt.Errorf("plan n5d does not keep two time levels (grid %s); use pyramid", u.Grid.Name)
		}
		for a, bc := range u.Grid.BC {
			if bc.Kind != ir.Fixed {
				return fmt.Errorf("plan n5d needs a fixed boundary on every axis (grid %s is %s along %s); use pyramid", u.Grid.Name, bc.Kind, p.Axes[a])
			}
		}
	}
	return nil
}

// inplaneApplies says whether the in-plane method can run p: a 3D grid whose updates are
// associative sums of coefficient x neighbour terms (their z contributions are accumulated
// plane by plane, eqs. 3-5 of the in-plane paper).
func inplaneApplies(p *ir.Program) error {
	if p.Dims() != 3 {
		return fmt.Errorf("plan inplane streams z through a 2D block over (y, x) of a 3D grid; %s is %dD", p.Name, p.Dims())
	}
	if !analysis.Analyze(p).Associative {
		return fmt.Errorf("plan inplane needs every update to be a sum of coefficient x neighbour terms (associative); %s is not: use forwardplane or stream25d", p.Name)
	}
	return nil
}

// wideRead is the first grid with 8-byte elements that an update reads (nil: none). A vector
// of four of them is 32 bytes, wider than any vector load the in-plane plan issues.
func wideRead(p *ir.Program) *ir.Grid {
	var found *ir.Grid
	for _, u := range p.Updates {
		ir.WalkDeep(u.Value, func(e ir.Expr) {
			if l, ok := e.(*ir.Load); ok && found == nil && l.G.Type.Size() == 8 {
				found = l.G
			}
		})
	}
	return found
}

// FitBT lowers n5d's temporal block until every in-plane block axis keeps output cells.
func (pl *Plan) FitBT(p *ir.Program) error {
	r := p.Reach()
	block := []int{pl.BX * max(pl.RX, 1), pl.BY * max(pl.RY, 1)}
	for a := 1; a < len(r); a++ {
		b := block[len(r)-1-a]
		if r[a] == 0 {
			continue
		}
		x := a == len(r)-1
		if _, out := pl.N5DTile(b, r[a], 1, x); out < 1 {
			return fmt.Errorf("plan n5d: a block of %d cells along %s cannot cover a reach of %d", b, p.Axes[a], r[a])
		}
		for pl.BT > 1 {
			if _, out := pl.N5DTile(b, r[a], pl.BT, x); out >= 1 {
				break
			}
			pl.BT--
		}
	}
	return nil
}

// N5DRing is the shared planes of the ring that n5d's asynchronous copies fill, for an
// unrolled round of round planes: the fewest, at least async+1 (a plane in flight for each of
// the async planes ahead, and the one being read), that divide the round, so that every
// plane's slot is static in the unrolled loop (6-plane rounds: async=1 takes 2 planes, 2
// takes 3, 3 to 5 take 6). 0 without async.
func (pl Plan) N5DRing(round int) int {
	if pl.Async <= 0 {
		return 0
	}
	n := pl.Async + 1
	for round%n != 0 {
		n++
	}
	return n
}

// N5DStarRing is the shared planes into which a star's asynchronous copies go when they go
// straight into level 0's planes (n5d's lowering), for reach r along the streaming axis and an
// unrolled round of round planes: the fewest, at least async+L+r+1 (L the lag between levels:
// N5DLag), that divide the round; 0 where none does (the copies then keep a
// ring of their own, N5DRing) or without async.
func (pl Plan) N5DStarRing(r, round int) int {
	if pl.Async <= 0 {
		return 0
	}
	for n := pl.Async + pl.N5DLag(r) + r + 1; n <= round; n++ {
		if round%n == 0 {
			return n
		}
	}
	return 0
}

// N5DAlign is the cells that an n5d tile's first output and its output width along x are
// multiples of: rx for rx = 2 or 4, so that a thread's rx cells are one aligned vector in
// global memory and it loads and stores them with one access instead of rx strided ones
// (which move excess L1 and L2 sectors), else 1.
// With vec=1 (scalar accesses) nothing is aligned: odd depths keep their widest tile.
func (pl Plan) N5DAlign() int {
	if pl.Vec != 1 && (pl.RX == 2 || pl.RX == 4) {
		return pl.RX
	}
	return 1
}

// N5DSpan is the halo cells before an n5d tile's outputs and the outputs, for a tile of
// cells cells along an axis of reach r blocked bt steps deep whose outputs start at a
// multiple of align: the halo is r*bt rounded up to align, and the outputs the most cells,
// a multiple of align, that leave at least r*bt cells of halo after them.
func N5DSpan(cells, r, bt, align int) (before, out int) {
	before = (r*bt + align - 1) / align * align
	out = max(cells-before-r*bt, 0) / align * align
	return before, out
}

// N5DTile is N5DSpan for the plan's tiles: aligned to N5DAlign along x (the fastest axis),
// unaligned along the others.
func (pl Plan) N5DTile(cells, r, bt int, x bool) (before, out int) {
	align := 1
	if x {
		align = pl.N5DAlign()
	}
	return N5DSpan(cells, r, bt, align)
}

// PyramidCells is the cells a pyramid block's tile spans along x, y and z: its threads, times
// the register tile's rx cells along x (1D).
func (pl Plan) PyramidCells() [3]int { return [3]int{pl.BX * max(pl.RX, 1), pl.BY, pl.BZ} }

// Depths is the temporal depths of an n5d plan's launches, deepest first: bt, then its
// halvings down to 1. The host covers a step count that bt does not divide with the deepest
// launches that fit, so a remainder takes at most about log2(bt) shallow launches instead
// of one single-step launch per step (a single step costs several times a step of a deep
// block).
func (pl Plan) Depths() []int { return Halvings(pl.BT) }

// Halvings is n, then its halvings down to 1: the depths of launches that cover any step count
// deepest first (n5d's Depths, the register-tiled pyramid's heights).
func Halvings(n int) []int {
	out := []int{max(n, 1)}
	for b := out[0] / 2; b >= 1; b /= 2 {
		out = append(out, b)
	}
	return out
}

// WarpSize is the threads of a warp, the unit in which shrink's levels skip work
// (N5DLiveWarps).
const WarpSize = 32

// Parse reads `name` or `name:key=value,...` and fills the rest from Default.
func Parse(text string, p *ir.Program) (Plan, error) {
	name, args, _ := strings.Cut(text, ":")
	pl, err := Default(strings.TrimSpace(name), p)
	if err != nil {
		return pl, err
	}
	if strings.TrimSpace(args) == "" {
		return pl, nil
	}
	given := map[string]bool{}
	for _, kv := range strings.Split(args, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return pl, fmt.Errorf("plan %q: %q is not key=value", text, kv)
		}
		q, ok := paramFor(pl.Strategy, k)
		switch {
		case !ok:
			var keys, flags []string
			for _, q := range Params {
				if !q.parsedBy(pl.Strategy) {
					continue
				}
				if q.num != nil {
					keys = append(keys, q.key)
				} else {
					flags = append(flags, q.key)
				}
			}
			sort.Strings(keys)
			sort.Strings(flags)
			return pl, fmt.Errorf("plan %q: unknown parameter %q (parameters: %s, %s)", text, k, strings.Join(keys, ", "), strings.Join(flags, ", "))
		case q.flag != nil:
			b, err := strconv.ParseBool(v)
			if err != nil {
				return pl, fmt.Errorf("plan %q: %s=%s is not true or false", text, k, v)
			}
			*q.flag(&pl) = b
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return pl, fmt.Errorf("plan %q: %s=%s is not a whole number", text, k, v)
		}
		if n < q.least {
			what := "1 or more"
			if q.least == 0 {
				what = "0 (the default) or more"
			}
			return pl, fmt.Errorf("plan %q: %s=%d: %s takes %s", text, k, n, k, what)
		}
		*q.num(&pl) = n
		given[k] = true
	}
	if s := pl.Kind(); s.parsed != nil {
		s.parsed(&pl, p, given)
	}
	return pl, nil
}

// fitPyramidBlocks widens, where the text gave ph, the block sizes it left at their defaults
// until each keeps cells after ph steps (a block of b cells along an axis of reach r keeps
// b - 2 ph r), within 1024 threads a block: pyramid:ph=8 must not fail for a default by=16 it
// never asked for.
func fitPyramidBlocks(pl *Plan, p *ir.Program, given map[string]bool) {
	if !given["ph"] {
		return
	}
	r := p.Reach()
	dims := []*int{&pl.BX, &pl.BY, &pl.BZ}
	for a, v := range r {
		k := len(r) - 1 - a
		b := dims[k]
		if given[[]string{"bx", "by", "bz"}[k]] || v == 0 {
			continue
		}
		cells := 1
		if k == 0 {
			cells = max(pl.RX, 1)
		}
		for *b*cells <= 2*pl.PH*v && pl.BX*pl.BY*max(pl.BZ, 1)*2 <= 1024 {
			*b *= 2
		}
	}
}

// String prints the plan so that Parse reads it back.
func (pl Plan) String() string {
	var parts []string
	for _, q := range Params {
		if q.shown(pl) {
			parts = append(parts, q.text(pl))
		}
	}
	return pl.Strategy + ":" + strings.Join(parts, ",")
}

// Limits are the device limits a plan must respect.
type Limits struct {
	MaxThreadsPerBlock int
	MaxSharedPerBlock  int // the opt-in maximum
	// NoAsync says the backend generates no asynchronous copies (Tempest emits them for CUDA).
	NoAsync bool
	// NoChain says the backend has no programmatic dependent launches (CUDA, sm_90 and newer).
	NoChain bool
	// SM is the CUDA device's compute capability as major*10+minor (90 for Hopper; 0:
	// unknown or not CUDA). Asynchronous copies need 80 or more.
	SM int
}

// ChunkOf is the planes of a slowest axis of n0 planes that one streaming block covers: Chunk,
// or the whole axis where Chunk is 0 or longer. The lowering, the models and gen's host code
// all clamp the chunk so.
func (pl Plan) ChunkOf(n0 int) int {
	if pl.Chunk <= 0 || pl.Chunk > n0 {
		return n0
	}
	return pl.Chunk
}

// Threads is the number of threads per block.
func (pl Plan) Threads() int { return pl.BX * max(pl.BY, 1) * max(pl.BZ, 1) }

// Validate checks the plan's own consistency and the block against the device; sharedBytes
// is what lowering computed the plan needs. The ranges come from Params, the rest from the
// strategy's own checks (Registry).
func (pl Plan) Validate(p *ir.Program, lim Limits, sharedBytes int) error {
	s := pl.Kind()
	if s.applies != nil {
		if err := s.applies(p); err != nil {
			return err
		}
	}
	d := p.Dims()
	for _, q := range Params {
		if err := q.validate(pl, d); err != nil {
			return err
		}
	}
	if pl.CentreFirst && !pl.FastMath {
		return fmt.Errorf("plan %s: centrefirst reorders sums under fast math only (exact builds keep every sum as written); add fastmath=true or drop centrefirst", pl)
	}
	if d == 1 && (pl.BY > 1 || pl.BZ > 1) {
		return fmt.Errorf("plan %s: a 1D grid takes 1D blocks (by=1, bz=1)", pl)
	}
	if d == 2 && pl.BZ > 1 {
		return fmt.Errorf("plan %s: a 2D grid takes 2D blocks (bz=1)", pl)
	}
	if s.Streams && pl.BZ > 1 {
		return fmt.Errorf("plan %s: streaming blocks are one plane thick (bz=1)", pl)
	}
	if s.check != nil {
		if err := s.check(pl, p, lim); err != nil {
			return err
		}
	}
	if lim.MaxThreadsPerBlock > 0 && pl.Threads() > lim.MaxThreadsPerBlock {
		return fmt.Errorf("plan %s: %d threads per block exceed the device's %d", pl, pl.Threads(), lim.MaxThreadsPerBlock)
	}
	if lim.MaxSharedPerBlock > 0 && sharedBytes > lim.MaxSharedPerBlock {
		return fmt.Errorf("plan %s: needs %d bytes of shared memory per block, the device has %d", pl, sharedBytes, lim.MaxSharedPerBlock)
	}
	return nil
}

// inplaneCheck is the in-plane plan's checks beyond its parameters' ranges: the register
// tile's size and the width of its vector loads.
func inplaneCheck(pl Plan, p *ir.Program, lim Limits) error {
	if pl.RX*pl.RY > 32 {
		return fmt.Errorf("plan %s: the register tile rx x ry must be 1..32 outputs", pl)
	}
	if g := wideRead(p); pl.Vec == 4 && g != nil {
		return fmt.Errorf("plan %s: vec=4 would load 32 bytes at once from grid %s (%s), but vector loads are at most 16 bytes (CUDA has no 16-byte-aligned vector of four 8-byte elements); use vec=2", pl, g.Name, g.Type)
	}
	return nil
}

// forwardPlaneCheck: several planes a step (rz) need the halos loaded ahead and every grid
// level read off its plane only straight along the streaming axis (each level a register
// queue whose planes sit in two sets of shared buffers; a level read at offsets on both would
// keep a ring of shared planes, which the steps of several planes do not take).
func forwardPlaneCheck(pl Plan, p *ir.Program, lim Limits) error {
	if pl.RZ <= 1 {
		return nil
	}
	if pl.Prefetch < 1 {
		return fmt.Errorf("plan %s: rz, the planes a step computes, needs the halos loaded a plane ahead: add pf=1", pl)
	}
	for _, u := range p.Updates {
		bad := false
		ir.WalkDeep(u.Value, func(e ir.Expr) {
			if l, ok := e.(*ir.Load); ok && len(l.Off) == 3 && l.Off[0] != 0 && (l.Off[1] != 0 || l.Off[2] != 0) {
				bad = true
			}
		})
		if bad {
			return fmt.Errorf("plan %s: rz takes stencils whose reads off the current plane lie straight along %s (a star along it); %s reads diagonally across planes: drop rz", pl, p.Axes[0], p.Name)
		}
	}
	return nil
}

// n5dCheck is the n5d plan's checks beyond its parameters' ranges: the switches that exclude
// each other, those that need a shape of grid or tile, and those the device must support.
func n5dCheck(pl Plan, p *ir.Program, lim Limits) error {
	d := p.Dims()
	if pl.Async > 0 {
		if pl.Prefetch > 1 {
			return fmt.Errorf("plan %s: async replaces the register prefetch; give pf or async, not both", pl)
		}
		if round := pl.N5DRound(p.Reach()[0]); pl.Async >= round {
			return fmt.Errorf("plan %s: async=%d copies further ahead than the %d planes of an unrolled round (reach %d along %s); use async=%d or less", pl, pl.Async, round, p.Reach()[0], p.Axes[0], round-1)
		}
		if lim.NoAsync {
			return fmt.Errorf("plan %s: asynchronous copies (async=%d) are generated for CUDA only; drop async on this backend", pl, pl.Async)
		}
		if lim.SM > 0 && lim.SM < 80 {
			return fmt.Errorf("plan %s: asynchronous copies (cp.async) need compute capability 8.0 or later; this device is %d.%d: drop async", pl, lim.SM/10, lim.SM%10)
		}
	}
	if R := p.Reach()[0]; pl.Unroll != 0 && pl.Unroll != 2*R+1 && pl.Unroll != 2*(2*R+1) {
		return fmt.Errorf("plan %s: unroll, the planes per unrolled round, is %d or %d for reach %d along %s (or left out)", pl, 2*R+1, 2*(2*R+1), R, p.Axes[0])
	}
	if pl.RY > 1 && d != 3 {
		return fmt.Errorf("plan %s: ry tiles the y axis of a 3D block; a 2D n5d block is one row streaming along %s", pl, p.Axes[0])
	}
	if pl.Ranges && (pl.RimCut || pl.Chain) {
		return fmt.Errorf("plan %s: ranges counts a launch's chunks from the first plane it writes; rimcut and chain follow the whole streaming axis: drop them with ranges", pl)
	}
	if pl.RimBlocks && pl.RimCut {
		return fmt.Errorf("plan %s: rimblocks and rimcut both take the planes near the streaming axis's rim out of the other planes' loop (as blocks of their own, or as pieces of a block); keep one", pl)
	}
	if pl.Ascend && !pl.Wave {
		return fmt.Errorf("plan %s: ascend changes wave order's levels (one barrier per plane); without wave the levels already run lowest first, a barrier each: add wave=true or drop ascend", pl)
	}
	if pl.Chain && (lim.NoChain || lim.SM > 0 && lim.SM < 90) {
		return fmt.Errorf("plan %s: chained launches (chain=true) need CUDA on sm_90 or newer; drop chain on this device", pl)
	}

	return nil
}

// N5DLiveWarps is, for an n5d block of depth bt of a d-dimensional program with reach h per
// axis (plan.Shrink), the warps each level t = 1..bt has to compute: live[t-1] = {first,
// last} warp index (threadIdx.x + threadIdx.y bx, over 32). Level t feeds the block's outputs
// only from the cells within (bt-t) reaches of them along each in-plane axis: the tile's
// halo shrinks by one reach per level (AN5D's trapezoid), and a warp none of whose cells
// lies in that region computes values no output uses. Where a warp covers whole rows of the
// tile, the rows near its edges are such warps at the deeper levels. A level whose live
// warps have holes gets the range around them. ok is false where no level has a dead warp.
func (pl Plan) N5DLiveWarps(d int, h []int, bt int) (live [][2]int, ok bool) {
	if d < 2 || bt < 1 {
		return nil, false
	}
	X, Y := d-1, d-2
	bx, by, rx, ry := pl.BX, 1, max(pl.RX, 1), 1
	if d == 3 {
		by, ry = max(pl.BY, 1), max(pl.RY, 1)
	}
	threads := bx * by
	warps := (threads + WarpSize - 1) / WarpSize
	type span struct{ lo, hi int }
	need := func(a, cells, t int) span {
		before, out := pl.N5DTile(cells, h[a], bt, a == X)
		return span{before - (bt-t)*h[a], before + out + (bt-t)*h[a]}
	}
	meets := func(s span, lo, n int) bool { return lo+n > s.lo && lo < s.hi }
	for t := 1; t <= bt; t++ {
		nx := need(X, bx*rx, t)
		ny := span{0, 1}
		if d == 3 {
			ny = need(Y, by*ry, t)
		}
		first, last := -1, -1
		for w := 0; w < warps; w++ {
			for l := w * WarpSize; l < min((w+1)*WarpSize, threads); l++ {
				tx, ty := l%bx, l/bx
				if meets(nx, tx*rx, rx) && (d != 3 || meets(ny, ty*ry, ry)) {
					if first < 0 {
						first = w
					}
					last = w
					break
				}
			}
		}
		if first < 0 {
			first, last = 0, 0 // no cell needed at all: keep one warp (no plan makes this)
		}
		if first > 0 || last < warps-1 {
			ok = true
		}
		live = append(live, [2]int{first, last})
	}
	return live, ok
}

// RowPitch is the elements of a device array's row (its last axis, n cells) under Align: n
// rounded up to a multiple of 32, whole 128-byte lines for 4-byte elements and pairs of them
// for 8-byte ones.
func RowPitch(n int) int { return (n + 31) / 32 * 32 }
