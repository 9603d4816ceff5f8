package model

import (
	"fmt"
	"math"

	"tempest/internal/analysis"
	"tempest/internal/gpu"
	"tempest/internal/ir"
	"tempest/internal/lower"
	"tempest/internal/plan"
	"tempest/internal/probe"
)

// The n5d model (registered under "n5d") predicts Tempest's own N.5D kernel
// (internal/lower/n5d.go) rather than AN5D's: AN5D's formulas (an5d.go, still available as
// AN5DModel) were 2.5-6x optimistic for it and favoured deep temporal blocks, because the
// kernel is limited by what they leave out: instruction issue, bank-conflicted shared-memory
// accesses, and the latency of a barrier per time level against the blocks that fit on a
// multiprocessor.
//
// What one thread does per plane of the streamed axis (b = the launch's time levels):
//
//	level 0     one global load per cell (prefetched a plane ahead; with async, copied into a
//	            ring of shared planes and read back from it, which frees the prefetch
//	            registers), a shared store, a barrier
//	level 1..b  the in-plane neighbour reads from shared memory (those outside the thread's own
//	            rx cells), the update's arithmetic (boxes: each plane's partial sums added to
//	            2R+1 accumulators), a shared store and a barrier (level b: a predicated
//	            global store instead)
//
// Per block and plane, in cycles of one multiprocessor:
//
//	issue    X = warps x instructions per thread / 4 warp-instructions per clock (the
//	         arithmetic at the FP32 or FP64 rate)
//	shared   Y = warps x wavefronts per thread: scalar accesses to rx consecutive cells per
//	         thread conflict gcd(rx, 32)-fold in the banks (rx = 4 costs 4x; rx = 2 costs 2x with a
//	         barrier per level and nothing measurable in wave order)
//	alone    A = b x (barrier and load latency + instructions per thread x max(warps / 4,
//	         cycles per instruction of a lone warp / rx) [+ the partial-sum chain of boxes])
//	time     max(Z, A / B), Z the smooth maximum of X and Y, B the blocks resident per
//	         multiprocessor (threads, estimated registers, shared memory): a block alone
//	         exposes every level's latency, several hide it behind each other's work
//
// Global memory moves the compulsory bytes plus a share of the halo and overlap re-reads
// (the rest hits L2) at the probe's copy bandwidth times a factor; rx consecutive cells per
// thread load and store with strided scalar accesses, which costs global efficiency. A launch
// takes the smooth maximum of its compute and memory times over its blocks in waves (AN5D's
// SM efficiency), at least the launch interval; a run is I_T / b launches of the b-level
// kernel plus I_T mod b one-level launches (what gpurun issues).

// N5DCalibration holds the constants of the n5d model. They were refitted on 2026-11-22 (by
// TestN5DFit) to the n5d plans of the exhaustive tuner validations on the H100, the target
// device (testdata/n5d-h100-exhaustive.txt: nine AN5D stencils at 16384^2 / 512^3, fast math,
// wave order; n5d-h100-inplane-suite.txt: the in-plane suite at 512^2 x 256, exact math),
// weighing how far the best of the model's five first plans falls below the best measured,
// plus the older level-order sweeps of 2026-11-21 (n5d-h100-sweep.txt, n5d-h200-sweep.txt on
// an H200), all predicted with the H100's probed profile (probe.H100). Instruction counts were
// checked against the SASS of j2d5pt and box2d1r. Refit when the kernel changes.
type N5DCalibration struct {
	// BWFactor is the kernel's effective DRAM bandwidth over the probe's copy bandwidth
	// (Tempest's stream of loads a plane ahead and stores reaches past the copy kernel's).
	BWFactor float64
	// HaloDRAM is the share of the re-read halo columns and overlapping planes that misses L2.
	HaloDRAM float64
	// GlobalRX is the extra global time per extra cell per thread (strided scalar accesses).
	GlobalRX float64
	// Overhead is issued instructions per cell and level beside the arithmetic and shared
	// accesses (moves, predicates, index arithmetic).
	Overhead float64
	// PlaneOverhead is instructions per thread and plane (prefetch address, loop, store test).
	PlaneOverhead float64
	// Div* and Special* are instructions per division and special function (sqrt, exp, ...):
	// by a constant (one multiplication under fast math, a multiplication and two FMAs
	// otherwise), by anything else, and special functions, fast and exact. The exact ones
	// are nominal; only their sum was fitted (gradient2d's 1/sqrt without fast math).
	DivConstFast, DivConstExact, DivFast, DivExact, SpecialFast, SpecialExact float64
	// LevelLatency is the cycles per time level a block cannot overlap with itself: the
	// barrier, the shared loads after it and the store before the next one.
	LevelLatency float64
	// GuardLatency is added to a level's latency when it reads other grids from global
	// memory (guarded programs such as Poisson's source term): an L1/L2 round trip.
	GuardLatency float64
	// WarpCPI is cycles per instruction of one warp running alone (dependent arithmetic and
	// shared loads); rx independent cells per thread divide it.
	WarpCPI float64
	// AssocChain is the cycles per level of the dependent chain of partial sums (boxes):
	// level t adds the plane level t-1 published in this same iteration, so the shared load,
	// the arithmetic, the store and the barrier follow each other. FMALatency is the latency
	// of one of its dependent multiply-adds ((2R+1)^(d-1) + 1 of them: a plane's part and its
	// accumulation). Stars publish the centre of their queue, computed R planes earlier, and
	// have no such chain.
	AssocChain, FMALatency float64
	// Smooth is the exponent of the smooth maxima (higher: closer to the plain maximum).
	Smooth float64
	// RegBase, RegPerQueue and RegPerAcc estimate registers per thread: RegBase + RegPerQueue
	// (stars) or RegPerAcc (boxes) x (2R+1) x levels x rx, the slots of the register queues
	// or partial-sum accumulators. They were fitted to ptxas's counts (CUDA 11.8, sm_90) for
	// the eleven stencils at bt 1..16 and rx 1, 2, 4 (270 kernels, RMS error 12 registers).
	// RegScale, fitted to the measurements, scales them to the H100's CUDA 13, which
	// allocates more than CUDA 11.8; the fit's 1.4 also stands for what else the estimate
	// misses.
	RegBase, RegPerQueue, RegPerAcc, RegScale float64
	// RegWord64 is the 4-byte register slots the estimate counts per 8-byte value (naively
	// 2): ptxas's counts for double-precision n5d kernels grow by less than twice the float
	// kernels' per value held (EBISU's and LoRAStencil's shapes on CUDA 13: about 1.45x).
	RegWord64 float64
	// SpillCost is instructions per thread and level per register beyond a maxregs cap or 255.
	SpillCost float64
	// HideWarps is the warps per scheduler (a quarter of a multiprocessor) it takes to hide
	// the latencies of the shared loads and dependent multiply-adds between a plane's
	// barriers: with fewer resident, issue runs at that fraction of its rate. Without it the
	// model over-predicted register-heavy plans the more, the fewer warps they kept: on the
	// plans tuned for EBISU's 2D stencils on the H200 (2026-11-28; ptxas's registers) its
	// error was 0.98x at 32 resident warps, 1.16x at 16 and 1.37x at 8 (up to 3.4x).
	// Fitted with the other constants (TestN5DFit with TEMPEST_N5D_PEERS=1) to 2.45.
	HideWarps float64
	// AsyncPlane is instructions per thread and plane that asynchronous copies (async) add:
	// the wait, the commit and the ring's shared addresses. Nominal, not yet fitted: no async
	// plan had been measured when it was set.
	AsyncPlane float64
}

// N5DCal is the calibration the "n5d" model uses.
var N5DCal = N5DCalibration{
	BWFactor:      1.16,
	HaloDRAM:      0.25,
	GlobalRX:      0.0617,
	Overhead:      1.119,
	PlaneOverhead: 16.74,
	DivConstFast:  1, DivConstExact: 3, DivFast: 2, DivExact: 8, SpecialFast: 2, SpecialExact: 10,
	LevelLatency: 40.24,
	GuardLatency: 303.6,
	WarpCPI:      1.028,
	AssocChain:   0.3294, FMALatency: 4,
	Smooth:  2.898,
	RegBase: 22, RegPerQueue: 1.4, RegPerAcc: 2.5, RegScale: 1.486, RegWord64: 1.45,
	SpillCost:  0.1709,
	HideWarps:  2.453,
	AsyncPlane: 4,
}

// n5dFacts are the properties of a program the n5d model needs, as the lowering sees them.
type n5dFacts struct {
	d, R, U   int
	reach     []int
	word      int
	nState    int
	assoc     bool    // boxes: partial sums, one shared plane per level
	guard     bool    // reads of other grids from global memory
	ring      bool    // general stencils: a ring of 2U shared planes, read at plane offsets
	reads     [][]int // distinct offsets of state-grid reads (with the grid index first)
	fpBase    float64 // FP instructions per cell-level without divisions and special functions
	divConst  int     // divisions by a constant
	divPow2   int     // ... by a power of two (one exact multiplication)
	divOther  int
	special   int
	parts     int // planes an update's partial sums read (assoc)
	globalRds int // distinct global reads per cell and level (guarded programs)
	inputs    int // grids read from global memory (guarded programs): each launch reads them whole
	fp64      bool
}

func n5dFactsOf(p *ir.Program, s *analysis.Summary) *n5dFacts {
	f := &n5dFacts{d: p.Dims(), reach: p.Reach(), word: p.DefaultType.Size(), nState: len(p.Updates)}
	if f.word == 0 {
		f.word = 4
	}
	f.fp64 = f.word >= 8
	f.R = f.reach[0]
	f.U = 2*f.R + 1
	seen := map[string]bool{}
	planes := map[int]bool{}
	offPlaneInPlane := false
	for _, u := range p.Updates {
		ir.WalkDeep(u.Value, func(e ir.Expr) {
			switch x := e.(type) {
			case *ir.Load:
				if x.G.Update == nil || x.Layer != nil {
					f.guard = true
					k := fmt.Sprint("g", x.G.Index, x.Off)
					if !seen[k] {
						seen[k] = true
						f.globalRds++
					}
					if g := fmt.Sprint("grid", x.G.Index); !seen[g] {
						seen[g] = true
						f.inputs++
					}
					return
				}
				planes[x.Off[0]] = true
				inPlane := false
				for _, o := range x.Off[1:] {
					inPlane = inPlane || o != 0
				}
				if inPlane && x.Off[0] != 0 {
					offPlaneInPlane = true
				}
				k := fmt.Sprint(x.G.Index, x.Off)
				if !seen[k] {
					seen[k] = true
					f.reads = append(f.reads, append([]int{x.G.Index}, x.Off...))
				}
			case *ir.Binary:
				if x.T.IsFloat() && x.Op == "/" {
					if c, ok := x.Y.(*ir.Const); ok {
						if fr, _ := math.Frexp(c.V.F); fr == 0.5 || fr == -0.5 {
							f.divPow2++
						} else {
							f.divConst++
						}
					}
				}
			}
		})
	}
	o := s.Ops
	f.divOther = max(0, o.Div-f.divConst-f.divPow2)
	f.special = o.Special
	f.fpBase = float64(o.FMA+o.FMAPairs) + float64(max(0, o.Mul-o.FMAPairs)) + float64(max(0, o.Add-o.FMAPairs)) +
		float64(o.MinMax+o.Compare+o.IntOps)
	f.assoc = s.Associative && offPlaneInPlane && f.R > 0 && !f.guard
	f.ring = offPlaneInPlane && !f.assoc
	f.parts = max(len(planes), 1)
	return f
}

// fp is the floating-point (and other arithmetic) instructions of one cell's update.
func (f *n5dFacts) fp(fast bool, c N5DCalibration) float64 {
	n := f.fpBase + float64(f.divPow2)
	if fast {
		n += c.DivConstFast*float64(f.divConst) + c.DivFast*float64(f.divOther) + c.SpecialFast*float64(f.special)
	} else {
		n += c.DivConstExact*float64(f.divConst) + c.DivExact*float64(f.divOther) + c.SpecialExact*float64(f.special)
	}
	if f.assoc {
		n += float64(f.parts - 1) // adding each plane's partial sum to its accumulator
	}
	return max(n, 1)
}

// sharedReads is the distinct shared-memory loads per thread and level: in-plane neighbours
// of the thread's rx x ry cells that are not among them (those come from registers).
func (f *n5dFacts) sharedReads(rx, ry int) int {
	seen := map[string]bool{}
	for _, r := range f.reads {
		off := r[1:]
		inPlane := false
		for _, o := range off[1:] {
			inPlane = inPlane || o != 0
		}
		if !inPlane && !f.assoc {
			continue // the column: register queues
		}
		for c := 0; c < rx*ry; c++ {
			i, k := c%rx, c/rx
			own := true
			dy := 0
			for a := 1; a < f.d-1; a++ {
				if a == f.d-2 {
					dy = off[a]
					own = own && k+dy >= 0 && k+dy < ry
				} else {
					own = own && off[a] == 0
				}
			}
			if j := i + off[f.d-1]; own && j >= 0 && j < rx {
				continue // the thread's own cell
			}
			key := fmt.Sprint(r[0], k+dy, i+off[f.d-1]) // the word: its row and column in the block
			if f.ring {
				key += fmt.Sprint(" z", off[0])
			}
			seen[key] = true
		}
	}
	return len(seen)
}

// n5dGeometry is one launch's blocks and planes.
type n5dGeometry struct {
	threads, warps int
	cellsPerPlane  int     // cells one block computes per plane and level (halo included)
	blocks         int     // in-plane blocks x stream blocks
	planes         float64 // planes a block walks, averaged over the stream blocks
	out            float64 // cells stored per launch
	// live is the share of the block's warps that compute a level, averaged over its
	// levels: below 1 where idle warps skip the levels that feed no output (plan.Shrink).
	live float64
}

func n5dGeometryOf(p *ir.Program, f *n5dFacts, pl plan.Plan, shape []int, b int) (n5dGeometry, error) {
	var g n5dGeometry
	lay, err := lower.N5DLayoutOf(p, pl, b)
	if err != nil {
		return g, fmt.Errorf("n5d: %w", err)
	}
	g.threads = lay.Block[0] * lay.Block[1]
	g.warps = ceilDiv(g.threads, 32)
	g.cellsPerPlane = g.threads * lay.RX * lay.RY
	// The launch's blocks as lowering grids them, and the planes each block streams, the
	// rim's blocks of their own included (plan.RimBlocks).
	grid, err := lower.LaunchGrid(p, pl, lower.Launch{Block: lay.Block, Steps: b}, shape)
	if err != nil {
		return g, fmt.Errorf("n5d: %w", err)
	}
	copies := pl.N5DRound(f.R)
	chunks := lower.N5DChunkPlanes(p, pl, b, shape[0])
	total := 0
	for _, n := range chunks {
		total += ceilDiv(n+2*f.R*b, copies) * copies
	}
	ns := len(chunks)
	g.blocks = grid[0] * grid[1] * grid[2]
	g.live = 1
	if pl.Shrink {
		if live, ok := pl.N5DLiveWarps(f.d, f.reach, b); ok {
			n := 0
			for _, w := range live {
				n += w[1] - w[0] + 1
			}
			g.live = float64(n) / float64(b*g.warps)
		}
	}
	g.planes = float64(total) / float64(ns)
	g.out = cellsOf(shape)
	return g, nil
}

// n5dTile is the cells a thread computes along x and y (ry in 3D only).
func n5dTile(f *n5dFacts, pl plan.Plan) (rx, ry int) {
	rx, ry = max(pl.RX, 1), 1
	if f.d == 3 {
		ry = max(pl.RY, 1)
	}
	return rx, ry
}

// n5dRegisters estimates registers per thread (before any cap: more than 255 spill) for
// cells cells per thread.
func n5dRegisters(f *n5dFacts, cells, b int, c N5DCalibration) int {
	slots := float64(f.U*b*cells*f.nState) * n5dWordSlots(f, c)
	per := c.RegPerQueue
	if f.assoc {
		per = c.RegPerAcc
	}
	r := (c.RegBase + per*slots) * c.RegScale
	return int(math.Ceil(r/8)) * 8
}

// n5dWordSlots is the 4-byte register slots the estimate counts per value of the program's
// element type (RegWord64 for 8-byte values where set).
func n5dWordSlots(f *n5dFacts, c N5DCalibration) float64 {
	if f.word >= 8 && c.RegWord64 > 0 {
		return c.RegWord64 * float64(f.word) / 8
	}
	return float64(f.word) / 4
}

// n5dPlanRegisters is n5dRegisters for a plan's tile at b levels. The fitted counts hold a
// prefetch register per cell and state grid (pf=1), which asynchronous copies (async) leave in
// shared memory.
func n5dPlanRegisters(f *n5dFacts, pl plan.Plan, b int, c N5DCalibration) int {
	rx, ry := n5dTile(f, pl)
	regs := n5dRegisters(f, rx*ry, b, c)
	if pl.Async > 0 {
		freed := float64(rx*ry*f.nState) * n5dWordSlots(f, c) * c.RegScale
		if n5dStarRing(f, pl) > 0 {
			// Level 0's queue too: level 1 reads the copies in shared memory.
			freed += c.RegPerQueue * float64(f.U*rx*ry*f.nState) * n5dWordSlots(f, c) * c.RegScale
		}
		regs = max(regs-int(math.Round(freed)), 16)
	}
	if pl.Wave && pl.Ascend && !f.assoc {
		// Levels lowest first: 2R of each queue's 2R+1 planes stay live between planes, the
		// newest arriving just before the level above reads it (level 0's queue is gone
		// where the copies fill its planes).
		queues := b
		if pl.Async > 0 && n5dStarRing(f, pl) > 0 {
			queues--
		}
		freed := c.RegPerQueue * float64(queues*rx*ry*f.nState) * n5dWordSlots(f, c) * c.RegScale
		regs = max(regs-int(math.Round(freed)), 16)
	}
	return regs
}

// n5dStarRing is the lowering's ring of level 0's planes that a star's asynchronous copies
// fill (plan.N5DStarRing; 0: none, the copies keep a ring of their own).
func n5dStarRing(f *n5dFacts, pl plan.Plan) int {
	if f.assoc || f.ring {
		return 0
	}
	return pl.N5DStarRing(f.R, pl.N5DRound(f.R))
}

// n5dLaunch is the model of one launch of b time levels.
type n5dLaunch struct {
	seconds                float64
	kernel                 float64 // the kernel's own time, launch interval aside
	comp, shared, global   float64 // resource times (seconds), for the prediction's fields
	effSM                  float64
	blocks, threads, perSM int
	bottleneck             Bottleneck
}

func n5dPredictLaunch(f *n5dFacts, in Input, b int, c N5DCalibration) (n5dLaunch, error) {
	pl := in.Plan
	dev := in.Dev
	d := dev.Device
	rx, ry := n5dTile(f, pl)
	g, err := n5dGeometryOf(in.Prog, f, pl, in.Shape, b)
	if err != nil {
		return n5dLaunch{}, err
	}
	sms := max(d.SMs, 1)
	clock := float64(d.ClockKHz) * 1e3
	if clock <= 0 {
		clock = 1.5e9
	}
	word := f.word
	// Rates per multiprocessor: lane-instructions (the FMA peak's lanes) and shared lanes.
	laneRate := dev.FLOPsPerSec(4) / 2 / float64(sms)
	fpRate := dev.FLOPsPerSec(word) / 2 / float64(sms)
	shRate := dev.SharedBytesPerSec(word) / float64(word) / float64(sms)

	// Instructions per thread and plane.
	fp := f.fp(pl.FastMath, c)
	reads := float64(f.sharedReads(rx, ry))
	cells := float64(rx * ry * f.nState)
	regs := n5dPlanRegisters(f, pl, b, c)
	spill := 0.0
	if limit := 255; regs > limit || (pl.MaxRegs > 0 && regs > pl.MaxRegs) {
		if pl.MaxRegs > 0 {
			limit = min(limit, pl.MaxRegs)
		}
		spill = c.SpillCost * float64(regs-limit)
		regs = limit
	}
	// Idle warps skip the levels that feed no output (plan.Shrink): the levels' work shrinks
	// with the share of live warps, the global loads and stores of every warp stay. An upper
	// bound: idle warps still wait at every plane's barrier, and the measured gains fell well
	// below the compute this takes off.
	fpInstr := float64(b) * cells * fp * g.live
	// Wave order (pl.Wave) has one barrier per plane for all levels instead of one per level.
	barriers, stores := float64(b), float64(b)*cells
	if pl.Wave {
		barriers = 1
	}
	stores *= g.live
	other := float64(b)*(reads+cells*c.Overhead+float64(f.globalRds)*cells+spill)*g.live + // levels 1..b
		stores + barriers + // shared stores and barriers of levels 0..b-1
		2*cells + c.PlaneOverhead // global load and store
	ring := 0.0
	switch {
	case pl.Async > 0 && n5dStarRing(f, pl) > 0:
		// The copies write level 0's planes (in place of its stores); level 1 reads its
		// column above and below from them: 2R more shared loads per cell and plane.
		ring = float64(2*f.R) * cells
		other += ring + c.AsyncPlane
	case pl.Async > 0:
		// Level 0 reads its cells from the ring, which the copies wrote: two shared accesses
		// per cell and plane.
		ring = 2 * cells
		other += cells + c.AsyncPlane
	}
	// Cycles per block and plane: issue and shared wavefronts.
	wf := float64(gcd(rx, 32))
	if rx == 2 && pl.Wave {
		// Measured, not derived: in wave order rx=2 shows no conflict cost and is the best
		// setting for most AN5D stencils, while with a barrier per level it measured below
		// rx=1 for stars (docs/performance.md).
		wf = 1
	}
	// Blocks per multiprocessor.
	shared := in.SharedBytes
	if shared <= 0 {
		shared = n5dSharedBytes(f, pl, b)
	}
	per := n5dMeanBlocksPerSM(dev, g.threads, shared, regs)
	X := float64(g.warps) * 32 * (fpInstr/fpRate + other/laneRate) * clock
	if c.HideWarps > 0 {
		X /= math.Min(1, per*float64(g.warps)/4/c.HideWarps)
	}
	Y := float64(g.warps) * 32 * (stores + float64(b)*reads*g.live + ring) * wf / shRate * clock
	Z := smoothMaxP(c.Smooth, X, Y)
	// A block alone on the multiprocessor: each scheduler runs warps/4 of its warps, each at
	// WarpCPI cycles per instruction (divided by its rx independent cells: ry rows measured no
	// further gain), and every level waits for the barrier's latency (and, for boxes, for the
	// chain of partial sums).
	perWarp := (fpInstr + other) / float64(b) // instructions per warp and level
	latency := c.LevelLatency
	if f.guard {
		latency += c.GuardLatency
	}
	level := latency + perWarp*math.Max(float64(g.warps)/4, c.WarpCPI/float64(rx))
	if f.assoc {
		// The last plane's part is a chain of multiply-adds over its in-plane points, then
		// the addition to its accumulator.
		level += c.AssocChain + c.FMALatency*(math.Pow(float64(f.U), float64(f.d-1))+1)
	}
	alone := math.Max(float64(b)*level, Z)
	// (Wave order still pays each level's latency in this term: with the levels no longer
	// separated by barriers the model favoured 512-wide blocks, which measured slower.)
	tBP := math.Max(Z, alone/per) // cycles per block-plane, amortised over the resident blocks
	effSM := EffSM(g.blocks, sms, max(int(math.Round(per)), 1))
	blockPlanes := float64(g.blocks) * g.planes
	tComp := blockPlanes * tBP / (float64(sms) * clock * effSM)

	// Global memory.
	loads := blockPlanes * float64(g.cellsPerPlane*f.nState*word)
	compulsory := g.out * float64(f.nState*word)
	dram := compulsory + c.HaloDRAM*math.Max(0, loads-compulsory) + compulsory
	// Grids read from global memory at every level (guarded programs): DRAM once per launch,
	// L2 (or L1) at each level for the block's cells, halos included.
	inputBytes := float64(f.inputs) * g.out * float64(word)
	dram += inputBytes
	// Those per-level reads are strided scalars when a thread has rx cells along x: each
	// load instruction spans rx times the bytes it uses, so the sectors moved grow with rx.
	l2 := loads + compulsory + blockPlanes*float64(g.cellsPerPlane*f.globalRds*word*b*rx)
	tGlob := dram / (c.BWFactor * dev.DRAMBytesPerSec()) * (1 + c.GlobalRX*float64(rx-1))
	tL2 := l2 / dev.L2BytesPerSec()
	kernel := smoothMaxP(c.Smooth, tComp, tGlob, tL2)
	l := n5dLaunch{seconds: math.Max(kernel, dev.LaunchSeconds()), effSM: effSM, blocks: g.blocks, threads: g.threads, perSM: int(math.Round(per))}
	scale := blockPlanes / (float64(sms) * clock * effSM)
	l.kernel, l.comp, l.shared, l.global = kernel, X*scale, Y*scale, math.Max(tGlob, tL2)
	switch {
	case dev.LaunchSeconds() > kernel:
		l.bottleneck = Latency
	case math.Max(tGlob, tL2) >= tComp:
		l.bottleneck = GlobalMemory
	case alone/per > Z || effSM < 0.5:
		l.bottleneck = Latency
	case Y > X:
		l.bottleneck = SharedMemory
	default:
		l.bottleneck = Compute
	}
	return l, nil
}

// n5dSharedBytes is what the lowering allocates per block: per state grid and level, two
// planes (stars, boxes; 2R+1 with unroll=2R+1) or a ring of the round's planes (other shapes)
// of the block's cells plus a
// padded halo of the in-plane reach on both sides.
func n5dSharedBytes(f *n5dFacts, pl plan.Plan, b int) int {
	rx, ry := n5dTile(f, pl)
	row := pl.BX * rx
	if f.d == 3 && rx > 1 && pl.BX < 32 && 32%pl.BX == 0 {
		// Rows split by cell start pl.BX banks apart (see lower's n5d kernel).
		for n := 0; n < 32 && (ry*row)%32 != pl.BX; n++ {
			row++
		}
	}
	bsize := []int{row}
	if f.d == 3 {
		bsize = []int{max(pl.BY, 1) * ry, row}
	}
	plane, pad, stride := 1, 0, 1
	for i := len(bsize) - 1; i >= 0; i-- {
		plane *= bsize[i]
		pad += f.reach[i+1] * stride
		stride *= bsize[i]
	}
	pad = (pad + 3) / 4 * 4
	ring := pl.N5DPlanes(f.R)
	if f.ring {
		ring = pl.N5DRound(f.R)
	}
	bytes := f.nState * b * ring * (plane + 2*pad) * f.word
	switch n := n5dStarRing(f, pl); {
	case n > 0:
		// Level 0's planes are the copies' ring of n.
		bytes += f.nState * (n - ring) * (plane + 2*pad) * f.word
	case pl.Async > 0:
		// The ring of planes of the block's own cells, 16-byte aligned.
		bytes = (bytes+15)/16*16 + f.nState*pl.N5DRing(pl.N5DRound(f.R))*pl.BX*max(pl.BY, 1)*rx*ry*f.word
	}
	return bytes
}

// n5dBlocksPerSM is the resident blocks per multiprocessor (gpu.ResidentBlocks).
func n5dBlocksPerSM(dev *probe.Profile, threads, shared, regs int) int {
	return gpu.ResidentBlocks(dev.Device, threads, shared, regs)
}

// n5dRegJitter spreads the register estimate (its error is about 15%): the model uses the
// mean of the resident blocks over these multiples of it, so that a plan near a register
// threshold is neither wholly in nor out.
var n5dRegJitter = []float64{0.85, 0.925, 1, 1.075, 1.15}

// n5dMeanBlocksPerSM is n5dBlocksPerSM averaged over n5dRegJitter (registers capped at 255).
func n5dMeanBlocksPerSM(dev *probe.Profile, threads, shared, regs int) float64 {
	sum := 0.0
	for _, j := range n5dRegJitter {
		r := min(int(math.Ceil(float64(regs)*j/8))*8, 255)
		sum += float64(n5dBlocksPerSM(dev, threads, shared, r))
	}
	return sum / float64(len(n5dRegJitter))
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// smoothMaxP is the p-norm of the terms: the largest, raised where others come close.
func smoothMaxP(p float64, ts ...float64) float64 {
	var sum, top float64
	for _, t := range ts {
		top = math.Max(top, t)
	}
	if top <= 0 {
		return 0
	}
	for _, t := range ts {
		sum += math.Pow(t/top, p)
	}
	return top * math.Pow(sum, 1/p)
}

// n5dModel is the calibrated model of Tempest's n5d kernel (see the top of this file).
type n5dModel struct{ cal *N5DCalibration }

func (n5dModel) Name() string {
	return "Tempest n5d (issue, bank-conflicted shared accesses, barrier latency against occupancy, DRAM; calibrated 2026-11-21)"
}

func (m n5dModel) Predict(in Input) (Prediction, error) {
	c := N5DCal
	if m.cal != nil {
		c = *m.cal
	}
	d := in.Prog.Dims()
	if d < 2 || d > 3 {
		return Prediction{}, fmt.Errorf("n5d: N.5D blocking needs a 2D or 3D grid")
	}
	f := n5dFactsOf(in.Prog, in.Sum)
	// The launches of each depth that cover the steps, as the host schedules them.
	depths := in.Plan.Depths()
	counts := lower.Cover(depths, in.Steps)
	main, err := n5dPredictLaunch(f, in, depths[0], c)
	if err != nil {
		return Prediction{}, err
	}
	full := counts[0]
	pred := Prediction{Model: "n5d: " + m.Name(), Bottleneck: main.bottleneck, EffSM: main.effSM, EffOcc: 1,
		EffALU: EffALU(OpsOf(in.Sum)), Blocks: main.blocks, Threads: main.threads, ActivePerSM: main.perSM, Launches: full}
	add := func(l n5dLaunch, n int) {
		k := float64(n)
		pred.Seconds += k * l.seconds
		pred.Compute += k * l.comp
		pred.Shared += k * l.shared
		pred.Global += k * l.global
		pred.Launch += k * (l.seconds - l.kernel)
	}
	add(main, full)
	// The remainder in the shallower launches.
	for i, sb := range depths[1:] {
		n := counts[i+1]
		if n == 0 {
			continue
		}
		sh, err := n5dPredictLaunch(f, in, sb, c)
		if err != nil {
			return Prediction{}, err
		}
		add(sh, n)
		pred.Launches += n
		if full == 0 && pred.Launches == n {
			pred.Bottleneck, pred.EffSM, pred.Blocks, pred.ActivePerSM = sh.bottleneck, sh.effSM, sh.blocks, sh.perSM
		}
	}
	return pred, nil
}
