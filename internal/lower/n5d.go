package lower

import (
	"fmt"

	"tempest/internal/ir"
	"tempest/internal/kir"
	"tempest/internal/plan"
)

// n5d: AN5D's N.5D blocking. A block covers a tile of the fastest axes (overlapped by the
// stencil's reach per time step, like a pyramid) and streams along the slowest axis through
// a chunk of hSN planes plus its halo. Level t of plane m is computed when level t-1 of plane
// m+R is known, so one pass over the planes advances BT steps with one global read and one
// global write per cell.
//
// What makes it scale (AN5D section 4.2):
//   - Fixed registers: the plane loop is unrolled 2(2R+1) times, so every register queue,
//     partial-sum accumulator and shared-memory slot is addressed statically (a plane pushed
//     overwrites one register; nothing shifts, no slot is computed at run time).
//   - Diagonal-access free stars keep their column in a register queue and publish only the
//     centre plane of each level to a double-buffered shared plane.
//   - Associative stencils (sums of coefficient x neighbour terms, boxes included) publish
//     each new plane once to a double-buffered shared plane and add its contribution to the
//     2R+1 outputs it feeds (partial sums in registers), so boxes need two planes per level
//     instead of 2(2R+1).
//   - Other stencils keep a ring of 2(2R+1) shared planes per level.
//   - Halo threads compute like the others (on padded shared planes) and their results are
//     simply never stored: no divergent guards. Programs that read other grids from global
//     memory keep a guard, since a halo thread's coordinates may lie outside the domain.
//   - The next plane is loaded one iteration ahead (a register prefetch; pf planes ahead
//     with the plan's pf), so the global latency overlaps BT levels of work; with async=D
//     (CUDA, sm_80+) the planes are instead copied D ahead into a ring of shared planes by
//     asynchronous copies (cp.async), which hold no registers.
//
// The fixed boundary is AN5D's: rim cells keep their values, and cells outside the domain are
// never needed.
func lowerN5D(p *ir.Program, shape []int, pl plan.Plan, wide, sizeOnly bool) (*Lowered, error) {
	d := p.Dims()
	if err := pl.Validate(p, plan.Limits{}, 0); err != nil {
		return nil, err
	}
	if d == 2 && pl.BY > 1 {
		return nil, fmt.Errorf("plan %s: a 2D n5d block is one row of threads (by=1)", pl)
	}
	main, shared, err := n5dKernel(p, shape, pl, wide, pl.BT, "tempest_n5d", sizeOnly)
	if err != nil {
		return nil, err
	}
	if sizeOnly {
		// The shallower kernels' errors still count; their shared memory is never more.
		low := &Lowered{SharedBytes: shared}
		for i, b := range pl.Depths() {
			if i > 0 {
				if _, _, err := n5dKernel(p, shape, pl, wide, b, "", true); err != nil {
					return nil, err
				}
			}
			low.Launches = append(low.Launches, Launch{Steps: b})
		}
		return low, nil
	}
	low := &Lowered{Module: &kir.Module{Kernels: []*kir.Kernel{main.k}, Uses64: uses64(p)}, SharedBytes: shared}
	low.Launches = append(low.Launches, main.launch)
	for _, b := range pl.Depths()[1:] {
		// Shallower blocks for the steps bt does not divide (the host's schedule).
		sh, _, err := n5dKernel(p, shape, pl, wide, b, fmt.Sprintf("tempest_n5d_%d", b), false)
		if err != nil {
			return nil, err
		}
		low.Module.Kernels = append(low.Module.Kernels, sh.k)
		low.Launches = append(low.Launches, sh.launch)
	}
	return low, nil
}

// N5DRound is the planes of one unrolled round of p's n5d loop under pl (plan.N5DRound): every
// register queue, accumulator and shared slot repeats within it, so the prefetch distance pf
// must divide it.
func N5DRound(p *ir.Program, pl plan.Plan) int { return pl.N5DRound(p.Reach()[0]) }

// n5dHasFastLoop says p's n5d blocks have a loop without the rim's checks, which blocks whose
// planes and columns lie inside the interior run: p has a fixed rim and reads only its state
// grids (others need a guard on every read).
func n5dHasFastLoop(p *ir.Program) bool {
	rim := false
	for _, u := range p.Updates {
		rim = rim || nonzero(u.Grid.Rim)
	}
	return rim && !n5dGuarded(p)
}

// n5dGuarded says p reads grids other than its state grids (or layers of them): guard-free
// halo threads need every read to come from registers or shared memory, so such reads are
// guarded, and so is every block.
func n5dGuarded(p *ir.Program) bool {
	guard := false
	for _, u := range p.Updates {
		ir.WalkDeep(u.Value, func(e ir.Expr) {
			if l, ok := e.(*ir.Load); ok && (l.G.Update == nil || l.Layer != nil) {
				guard = true
			}
		})
	}
	return guard
}

// N5DRimCuts says p's n5d chunks can be cut at the rim (plan.RimCut changes the kernel): p has
// a loop without the rim's checks, which the middle piece of a chunk that reaches the rim runs.
func N5DRimCuts(p *ir.Program) bool { return n5dHasFastLoop(p) }

// rimPieces wraps an n5d kernel's body (which computes planes pb .. pe-1) in the loop over the
// pieces of the block's chunk zb0 .. ze0-1 (plan.RimCut): the planes before lo, those from lo
// to hi, and those after hi, each clamped into the chunk; a chunk away from the rim is one
// piece. A barrier ends each piece: the next one refills the same shared planes.
func rimPieces(body []kir.Stmt, chunkIdx kir.Expr, lo, hi kir.Expr) []kir.Stmt {
	eq := func(v int) kir.Expr { return &kir.Binary{Op: "==", X: kir.Id("pc"), Y: kir.I(v)} }
	sel := func(a, b, c kir.Expr) kir.Expr { return &kir.Cond{C: eq(0), A: a, B: &kir.Cond{C: eq(1), A: b, B: c}} }
	piece := append(append([]kir.Stmt(nil), body...), &kir.Barrier{})
	return []kir.Stmt{
		&kir.Decl{Name: "zb0", Type: kir.I32, Init: kir.Mul(chunkIdx, kir.Id("chunk"))},
		&kir.Decl{Name: "ze0", Type: kir.I32, Init: kir.Min(kir.Add(kir.Id("zb0"), kir.Id("chunk")), kir.Id("n0"))},
		&kir.Decl{Name: "z1", Type: kir.I32, Init: kir.Min(kir.Max(lo, kir.Id("zb0")), kir.Id("ze0"))},
		&kir.Decl{Name: "z2", Type: kir.I32, Init: kir.Min(kir.Max(hi, kir.Id("z1")), kir.Id("ze0"))},
		&kir.For{Var: "pc", From: kir.I(0), To: kir.I(3), Step: 1, Body: []kir.Stmt{
			&kir.Decl{Name: "pb", Type: kir.I32, Init: sel(kir.Id("zb0"), kir.Id("z1"), kir.Id("z2"))},
			&kir.Decl{Name: "pe", Type: kir.I32, Init: sel(kir.Id("z1"), kir.Id("z2"), kir.Id("ze0"))},
			&kir.If{Cond: &kir.Binary{Op: "<", X: kir.Id("pb"), Y: kir.Id("pe")}, Then: piece},
		}},
	}
}

// N5DShortRound says p's n5d blocks can run rounds of 2R+1 planes (plan.Unroll): every level's
// shared planes then form a ring of 2R+1, which holds a plane only while no neighbour reads it
// where a level publishes its latest plane alone (stars, and boxes through partial sums), but
// not where a level keeps a ring of every plane (other programs that read neighbouring planes
// in-plane).
func N5DShortRound(p *ir.Program) bool {
	_, assoc := n5dAssociative(p)
	return N5DAscends(p) || (assoc && p.Reach()[0] > 0 && !n5dGuarded(p))
}

// N5DAscends says p's n5d levels can run lowest first in wave order (plan.Ascend): it reads
// in-plane neighbours of its state grids on the centre plane only (stars), so a level needs
// nothing of the plane the level below has just computed but its own cells' values.
func N5DAscends(p *ir.Program) bool {
	off := false
	for _, u := range p.Updates {
		ir.WalkDeep(u.Value, func(e ir.Expr) {
			if l, ok := e.(*ir.Load); ok && l.G.Update != nil && nonzero(l.Off[1:]) && l.Off[0] != 0 {
				off = true
			}
		})
	}
	return !off
}

// edgesFirstBlocks reorders an n5d launch of d dimensions (plan.EdgesFirst): the linear block
// index (x fastest, the chunks slowest) takes first the edge tiles, those in the first or
// last column or row of tiles, chunk by chunk, and then the interior tiles in raster order,
// chunk by chunk. It returns the declarations and the tile and chunk indices along launch
// axes x, y (3D) and the chunk axis, a permutation of the launch's blocks for every grid
// (grids of one or two tiles along an axis have no interior: all tiles are edges).
func edgesFirstBlocks(d int) ([]kir.Stmt, [3]kir.Expr) {
	var pre []kir.Stmt
	decl := func(name string, init kir.Expr) kir.Expr {
		pre = append(pre, &kir.Decl{Name: name, Type: kir.I32, Init: init})
		return kir.Id(name)
	}
	lt := func(x, y kir.Expr) kir.Expr { return &kir.Binary{Op: "<", X: x, Y: y} }
	cond := func(c, a, b kir.Expr) kir.Expr { return &kir.Cond{C: c, A: a, B: b} }
	grid := func(i int) kir.Expr { return &kir.Builtin{D: kir.GridDim, Axis: i} }
	block := func(i int) kir.Expr { return &kir.Builtin{D: kir.BlockIdx, Axis: i} }
	var at [3]kir.Expr
	gx := decl("eg_x", grid(0))
	if d == 2 {
		gz := grid(1)
		bl := decl("eb_l", kir.Add(kir.Mul(block(1), gx), block(0)))
		ni := decl("eb_ni", kir.Max(kir.Bin("-", gx, kir.I(2)), kir.I(0)))
		ne := decl("eb_ne", kir.Bin("-", gx, ni))
		bi := decl("eb_i", kir.Bin("-", bl, kir.Mul(ne, gz)))
		edge := lt(bi, kir.I(0))
		at[0] = decl("eb_x", cond(edge, cond(&kir.Binary{Op: "==", X: kir.Bin("%", bl, ne), Y: kir.I(0)}, kir.I(0), kir.Bin("-", gx, kir.I(1))), kir.Add(kir.I(1), kir.Bin("%", bi, ni))))
		at[1] = decl("eb_z", cond(edge, kir.Bin("/", bl, ne), kir.Bin("/", bi, ni)))
		return pre, at
	}
	gy := decl("eg_y", grid(1))
	gz := grid(2)
	bl := decl("eb_l", kir.Add(kir.Mul(kir.Add(kir.Mul(block(2), gy), block(1)), gx), block(0)))
	nx := decl("eb_nx", kir.Max(kir.Bin("-", gx, kir.I(2)), kir.I(0)))
	ni := decl("eb_ni", kir.Mul(nx, kir.Max(kir.Bin("-", gy, kir.I(2)), kir.I(0))))
	ne := decl("eb_ne", kir.Bin("-", kir.Mul(gx, gy), ni))
	bi := decl("eb_i", kir.Bin("-", bl, kir.Mul(ne, gz)))
	edge := lt(bi, kir.I(0))
	// An edge tile's index et runs along the first row of tiles, the last row, then the
	// first and last columns of the rows between, two per row; with no interior, row-major.
	et := decl("eb_t", kir.Bin("%", bl, ne))
	ring := kir.Bin("-", et, kir.Mul(kir.I(2), gx))
	noInterior := &kir.Binary{Op: "==", X: ni, Y: kir.I(0)}
	ex := cond(noInterior, kir.Bin("%", et, gx), cond(lt(et, gx), et, cond(lt(et, kir.Mul(kir.I(2), gx)), kir.Bin("-", et, gx),
		cond(&kir.Binary{Op: "==", X: kir.Bin("%", ring, kir.I(2)), Y: kir.I(0)}, kir.I(0), kir.Bin("-", gx, kir.I(1))))))
	ey := cond(noInterior, kir.Bin("/", et, gx), cond(lt(et, gx), kir.I(0), cond(lt(et, kir.Mul(kir.I(2), gx)), kir.Bin("-", gy, kir.I(1)),
		kir.Add(kir.I(1), kir.Bin("/", ring, kir.I(2))))))
	it := kir.Bin("%", bi, ni) // an interior tile's index
	at[0] = decl("eb_x", cond(edge, ex, kir.Add(kir.I(1), kir.Bin("%", it, nx))))
	at[1] = decl("eb_y", cond(edge, ey, kir.Add(kir.I(1), kir.Bin("/", it, nx))))
	at[2] = decl("eb_z", cond(edge, kir.Bin("/", bl, ne), kir.Bin("/", bi, ni)))
	return pre, at
}

// n5dSum is an update in associative form: outer(sum over plane offsets o of parts[o]),
// where parts[o] reads only plane m+o and outer is an optional product or quotient by a
// coefficient applied once to the completed sum.
type n5dSum struct {
	parts map[int]ir.Expr
	op    string  // "", "*" or "/"
	coef  ir.Expr // the coefficient of op
}

// n5dPartialSums says n5d sums an associative program's updates plane by plane (partial
// sums): only where off-centre planes are read in-plane (boxes), since stars keep their columns
// in registers either way, along a streaming axis it reads across, without guards.
func n5dPartialSums(p *ir.Program) bool {
	offPlaneInPlane := false
	for _, u := range p.Updates {
		ir.WalkDeep(u.Value, func(e ir.Expr) {
			if l, ok := e.(*ir.Load); ok && l.G.Update != nil && nonzero(l.Off[1:]) && l.Off[0] != 0 {
				offPlaneInPlane = true
			}
		})
	}
	return offPlaneInPlane && p.Reach()[0] > 0 && !n5dGuarded(p)
}

// n5dAssociative splits every update into per-plane parts, or reports false.
func n5dAssociative(p *ir.Program) ([]n5dSum, bool) {
	var out []n5dSum
	for _, u := range p.Updates {
		e := inlineLets(u.Value)
		s := n5dSum{}
		if b, ok := e.(*ir.Binary); ok && b.T.IsFloat() {
			switch {
			case b.Op == "/" && readsNothing(b.Y):
				s.op, s.coef, e = "/", b.Y, b.X
			case b.Op == "*" && readsNothing(b.Y):
				s.op, s.coef, e = "*", b.Y, b.X
			case b.Op == "*" && readsNothing(b.X):
				s.op, s.coef, e = "*", b.X, b.Y
			}
		}
		ok := true
		ir.WalkDeep(e, func(x ir.Expr) {
			switch x := x.(type) {
			case *ir.Load:
				if x.Layer != nil || x.G.Update == nil {
					ok = false
				}
			case *ir.Coord, *ir.Step:
				ok = false
			}
		})
		if !ok {
			return nil, false
		}
		parts, ok := splitZ(e)
		if !ok {
			return nil, false
		}
		s.parts = parts
		out = append(out, s)
	}
	return out, true
}

// readsNothing says e reads no grid and no coordinate (a coefficient).
func readsNothing(e ir.Expr) bool {
	ok := true
	ir.WalkDeep(e, func(x ir.Expr) {
		switch x.(type) {
		case *ir.Load, *ir.Coord, *ir.Step, *ir.Size:
			ok = false
		}
	})
	return ok
}

// addKir is x + y, or y where x is nil.
func addKir(x, y kir.Expr) kir.Expr {
	if x == nil {
		return y
	}
	return kir.Add(x, y)
}

// n5dStart is how many planes before its chunk an n5d block's loop starts, for reach R, lag L
// and depth bt (see the loop in n5dKernel): blocks of bt <= 2 run phased loops.
func n5dStart(R, L, bt int) int {
	if bt <= 2 {
		return L * bt
	}
	return R * bt
}

// mod is the non-negative remainder.
func mod(a, b int) int { return ((a % b) + b) % b }

// n5dRimMargins are the planes an n5d chunk of depth bt keeps from the streaming axis's ends
// to run the loop without the rim's checks (the plane condition of the interior test in
// n5dKernel): it starts at lo or later and ends at n0-hi or earlier. Level bt's first input
// lies 2 L bt planes before the chunk (L the lag between levels), its last L bt plus a round
// after it, and the widest fixed rim along the axis comes on top. The loop's loads run pf
// planes ahead of the plane entering level 0 (whose last lies a round less two planes past
// ze + L bt), so with plan.Unclamped a deeper prefetch than the rim covers widens hi: the
// loop then reads planes inside the domain without clamping their index.
func n5dRimMargins(p *ir.Program, pl plan.Plan, bt int) (lo, hi int) {
	rim := 0
	for _, u := range p.Updates {
		rim = max(rim, u.Grid.Rim[0])
	}
	L := pl.N5DLag(p.Reach()[0])
	hi = rim
	if pl.Unclamped {
		hi = max(rim, n5dPrefetch(pl)-1)
	}
	return rim + 2*L*bt, hi + L*bt + N5DRound(p, pl)
}

// n5dPrefetch is how many planes ahead of the one entering level 0 an n5d loop loads.
func n5dPrefetch(pl plan.Plan) int { return max(pl.Prefetch, 1) }

// N5DRimBlocks are, for an n5d launch of depth bt under plan pl, the margins of the blocks that
// plan.RimBlocks gives the planes near the streaming axis's ends, and whether it gives them
// any: only where the program has the loop without the rim's checks and the plan does not cut
// chunks at the rim instead. A launch over n0 planes then has 2 + ceil((n0-lo-hi)/chunk)
// blocks along the chunk axis where n0 > lo+hi, and the usual ceil(n0/chunk) otherwise (the
// kernel tells the two apart by n0); generated host code (internal/gen) sizes its grid so.
func N5DRimBlocks(p *ir.Program, pl plan.Plan, bt int) (lo, hi int, ok bool) {
	if !pl.RimBlocks || pl.RimCut || !n5dHasFastLoop(p) {
		return 0, 0, false
	}
	lo, hi = n5dRimMargins(p, pl, bt)
	return lo, hi, true
}

// N5DChunks is the number of n5d blocks along the chunk axis for n0 planes (N5DRimBlocks).
func N5DChunks(n0, chunk, lo, hi int, rimBlocks bool) int {
	if rimBlocks && n0 > lo+hi {
		return 2 + ceilDiv(n0-lo-hi, chunk)
	}
	return ceilDiv(n0, chunk)
}

// N5DRangeChunks is the number of n5d blocks along the chunk axis of a launch over planes lo
// to hi-1 of n0 (plan.Ranges) whose kernel's rim blocks take rim[0] and rim[1] planes at the
// axis's ends (Launch.Rim, zero without them): where the axis has planes between the margins,
// one block over the range's planes before rim[0], one over those from n0-rim[1] on (either
// may be empty) and chunks between; otherwise chunks from lo.
func N5DRangeChunks(n0, lo, hi, chunk int, rim [2]int) int {
	if rim != [2]int{} && n0 > rim[0]+rim[1] {
		a := min(max(rim[0], lo), hi)
		b := max(min(n0-rim[1], hi), a)
		return 2 + ceilDiv(b-a, chunk)
	}
	return ceilDiv(hi-lo, chunk)
}

// N5DChunkPlanes is the planes of every n5d block of depth bt along the chunk axis for n0
// planes under pl, as the kernel and its launch grid have them (the rim's blocks of their own
// included, N5DRimBlocks): the model costs a block by them.
func N5DChunkPlanes(p *ir.Program, pl plan.Plan, bt, n0 int) []int {
	lo, hi, rim := N5DRimBlocks(p, pl, bt)
	bounds := n5dChunkBounds(n0, pl.ChunkOf(n0), lo, hi, rim)
	planes := make([]int, len(bounds))
	for i, b := range bounds {
		planes[i] = b[1] - b[0]
	}
	return planes
}

// n5dChunkBounds is the planes [zb, ze) of every n5d block along the chunk axis, as the
// kernel computes them (N5DChunks).
func n5dChunkBounds(n0, chunk, lo, hi int, rimBlocks bool) [][2]int {
	n := N5DChunks(n0, chunk, lo, hi, rimBlocks)
	b := make([][2]int, n)
	for c := range b {
		switch {
		case rimBlocks && n0 > lo+hi && c == 0:
			b[c] = [2]int{0, lo}
		case rimBlocks && n0 > lo+hi && c == n-1:
			b[c] = [2]int{n0 - hi, n0}
		case rimBlocks && n0 > lo+hi:
			b[c] = [2]int{lo + (c-1)*chunk, min(lo+c*chunk, n0-hi)}
		default:
			b[c] = [2]int{c * chunk, min((c+1)*chunk, n0)}
		}
	}
	return b
}

// n5dChainReach is how many chunks before and after its own a chained n5d block waits for
// (plan.Chain): enough that every plane within m of its chunk, which it may read or whose
// readers it may overwrite, lies in one of them.
func n5dChainReach(bounds [][2]int, m int) int {
	k := 1
	for c, b := range bounds {
		for d := 1; c-d >= 0 && bounds[c-d][1] > b[0]-m; d++ {
			k = max(k, d)
		}
		for d := 1; c+d < len(bounds) && bounds[c+d][0] < b[1]+m; d++ {
			k = max(k, d)
		}
	}
	return k
}

// n5dMode is which of an n5d kernel's loops a body is built for: blocks whose planes and
// columns lie inside the interior skip every rim check (n5dFast); blocks on an in-plane edge
// whose planes are inside run the same unguarded loop on clamped columns and keep their rim
// columns through a select (n5dEdge); the others test the rim per cell and plane (n5dChecked).
type n5dMode int

const (
	n5dFast n5dMode = iota
	n5dEdge
	n5dChecked
)

// N5DEdges says p's n5d blocks on the in-plane edges can run the edge loop under pl
// (plan.Edges, n5dEdge): p has a loop without the rim's checks, and every grid's rim along
// each in-plane axis is at least the reach, so cells outside the domain (whose clamped loads
// hold any in-domain value) feed only rim cells, which keep their values.
func N5DEdges(p *ir.Program, pl plan.Plan) bool {
	if !n5dHasFastLoop(p) {
		return false
	}
	h := p.Reach()
	for _, u := range p.Updates {
		for a := 1; a < p.Dims(); a++ {
			if u.Grid.Rim[a] < h[a] {
				return false
			}
		}
	}
	return true
}

// n5dKernel builds p's n5d kernel name of bt steps under pl for a domain of the given shape,
// with its launch and its shared memory in bytes (sizeOnly: the shared memory alone, and the
// plan's errors), as a recipe of stages over one n5dBuilder: the tile geometry, the storage
// and rings, the loads ahead of the loop, the loops of per-plane bodies, and the chain.
func n5dKernel(p *ir.Program, shape []int, pl plan.Plan, wide bool, bt int, name string, sizeOnly bool) (builtKernel, int, error) {
	b, err := newN5DBuilder(p, shape, pl, wide, bt, name)
	if err != nil {
		return builtKernel{}, 0, err
	}
	// The tile geometry: where the thread's cells lie, which it owns, the block's planes.
	b.constSizes()
	b.coordinates()
	b.owners()
	b.liveWarps()
	b.chunkBounds()
	b.rimColumns()
	// The storage: registers, shared planes and rings, and the plan's errors about them.
	if err := b.streaming(); err != nil {
		return builtKernel{}, 0, err
	}
	b.storage()
	if err := b.prefetch(); err != nil {
		return builtKernel{}, 0, err
	}
	if err := b.asyncRing(); err != nil {
		return builtKernel{}, 0, err
	}
	if sizeOnly {
		return builtKernel{}, b.shared, nil // nothing below fails or changes the shared memory
	}
	// The loads ahead of the loop, the loops, the chain.
	b.firstLoads()
	b.readCells()
	b.loops()
	b.chain()
	return b.launch(), b.shared, nil
}

// n5dChainReaches are, per grid dimension, the blocks of the previous chained launch a block
// waits for (plan.Chain): those that wrote what it reads or read what it overwrites, within
// the reach of the kernel's steps of its outputs (along the streamed axis, plus the planes
// loaded ahead, counted in chunks).
func n5dChainReaches(lay N5DLayout, pl plan.Plan, n0, chunk, rimLo, rimHi int, rimBlocks bool, chunkDim int) []int {
	var reach []int
	bt, R := lay.Steps, lay.Reach[0]
	for i := 0; i < lay.Dims; i++ {
		if i == chunkDim {
			m := bt*R + pl.N5DRound(R) + 1
			reach = append(reach, n5dChainReach(n5dChunkBounds(n0, chunk, rimLo, rimHi, rimBlocks), m))
			continue
		}
		a := lay.Dims - 1 - i
		reach = append(reach, max(1, ceilDiv(lay.Steps*lay.Reach[a], lay.Out[a])))
	}
	return reach
}

// n5dChain is a chained launch's wait, at the kernel's start, for the blocks within reach
// of the launch before, and its signal, at the end, of this block's own completion.
func n5dChain(d int, blockAt func(int) kir.Expr, reach []int) (wait, signal kir.Stmt) {
	var pos, dims []kir.Expr
	for i := 0; i < d; i++ {
		pos = append(pos, blockAt(i))
		dims = append(dims, &kir.Builtin{D: kir.GridDim, Axis: i})
	}
	return &kir.ChainWait{Flags: "chainflags", Wait: kir.Id("chainwait"), Pos: pos, Dims: dims, Reach: reach},
		&kir.ChainSignal{Flags: "chainflags", Epoch: kir.Id("chainepoch"), Pos: pos, Dims: dims}
}

// n5dInside is the test that lets a block skip the fixed rim's checks, uniform over the block
// (so the barriers inside both loops are reached by all of its threads): its planes, zb >=
// fastLo and ze <= n0-fastHi written as reaches from the rim, and its columns, halos included,
// lie inside the interior (tileLo gives a tile's first cell along an in-plane axis). planes
// is the first half alone, for the edge loop. Vector accesses add rows of a multiple of rx
// cells and aligned buffers to both.
func n5dInside(p *ir.Program, pl plan.Plan, lay N5DLayout, rim []int, tileLo func(int) kir.Expr, fastLo, fastHi int) (inside, planes kir.Expr) {
	ge := func(x, y kir.Expr) kir.Expr { return &kir.Binary{Op: ">=", X: x, Y: y} }
	planes = and(ge(kir.Bin("-", kir.Id("zb"), kir.I(fastLo-rim[0])), kir.I(rim[0])),
		&kir.Binary{Op: "<=", X: kir.Add(kir.Id("ze"), kir.I(fastHi-rim[0])), Y: kir.Bin("-", kir.Id("n0"), kir.I(rim[0]))})
	inside = planes
	for a := 1; a < lay.Dims; a++ {
		lo := tileLo(a)
		n := kir.Id(fmt.Sprintf("n%d", a))
		inside = and(inside, and(ge(lo, kir.I(rim[a])), &kir.Binary{Op: "<=", X: kir.Add(lo, kir.I(lay.BlockCells[a])), Y: kir.Bin("-", n, kir.I(rim[a]))}))
	}
	if lay.VW > 1 {
		// (The conditions are chained in this order: grouped otherwise, nvcc compiled
		// j3d27pt's kernel slower.)
		// A row length of a multiple of the vector keeps every row's start aligned and the
		// edge runs, clamped to the row's end, on whole vectors. Padded rows (plan.Align)
		// start aligned at any length, and their edge runs clamp to the pitch (edgeRuns):
		// a grid of an odd row length runs its vectors too.
		var aligned []kir.Expr
		if !pl.Align {
			n := kir.Id(fmt.Sprintf("n%d", lay.X))
			aligned = append(aligned, &kir.Binary{Op: "==", X: kir.Bin("%", n, kir.I(pl.N5DAlign())), Y: kir.I(0)})
		}
		for _, u := range p.Updates {
			for _, role := range []Role{In0, Out0} {
				aligned = append(aligned, &kir.Aligned{Ptr: bufName(u.Grid, role), Bytes: lay.VW * u.Grid.Type.Size()})
			}
		}
		for _, c := range aligned {
			inside, planes = and(inside, c), and(planes, c)
		}
	}
	return inside, planes
}

// n5dPlanes is the shape of a block's shared planes, derived from the layout alone.
type n5dPlanes struct {
	// inPlaneReads says which state grids are read at in-plane offsets at all;
	// offPlaneInPlane, whether any is read at in-plane offsets on other planes.
	inPlaneReads    map[*ir.Grid]bool
	offPlaneInPlane bool
	tx              int  // threads along x
	split           bool // a thread's cells lie in separate runs of a row (else side by side)
	rs, rowLen      int  // places per run, row length
	tstride         []int
	// plane is the words of one plane, pad the room for halo threads' reads on each side,
	// stride the words from one plane to the next.
	plane, pad, stride int
}

// n5dPlanesOf lays out the shared planes of an n5d kernel with layout lay.
func n5dPlanesOf(p *ir.Program, lay N5DLayout) n5dPlanes {
	d, h, X, RX, RY, bsize := lay.Dims, lay.Reach, lay.X, lay.RX, lay.RY, lay.BlockCells
	// How each state grid's planes are read: in-plane offsets at all, and on other planes.
	inPlaneReads := map[*ir.Grid]bool{}
	offPlaneInPlane := false
	for _, u := range p.Updates {
		ir.WalkDeep(u.Value, func(e ir.Expr) {
			if l, ok := e.(*ir.Load); ok && l.G.Update != nil && nonzero(l.Off[1:]) {
				inPlaneReads[l.G] = true
				if l.Off[0] != 0 {
					offPlaneInPlane = true
				}
			}
		})
	}
	// Shared rows hold a thread's RX cells either split or side by side. Split: cell i of
	// every thread lies in the row's i-th run of TX words, so that a warp's accesses to the
	// same cell of each of its threads are consecutive words (conflict-free). Side by side,
	// a first-order stencil's single reads across the thread boundary (x-1 of cell 0, x+1
	// of the last cell) are RX-way bank conflicts, but a thread's cells can be published with
	// one vector store and pairs of neighbours read with one vector load, which wins where a
	// cell reads two or more words of a neighbouring thread: reach 2 and more along x, and 3D
	// boxes, which read whole row segments of the rows above and below. Measured on the H100
	// (docs/performance.md): split gains on the first-order stencils and loses on those
	// others (a plan setting that asked for split on them too measured a tie or a loss, and
	// went).
	TX := bsize[X] / RX
	split := RX > 1 && h[X] < 2 && !(d == 3 && offPlaneInPlane)
	RS := TX
	rowLen := bsize[X]
	if split {
		rowLen = RX * RS
	}
	if split && d == 3 && TX < 32 && 32%TX == 0 {
		// A warp spans 32/TX threads' rows, RY rows apart: those start TX banks apart so that
		// their runs do not share banks (where RY allows).
		for n := 0; n < 32 && (RY*rowLen)%32 != TX; n++ {
			rowLen++
		}
		if (RY*rowLen)%32 != TX {
			rowLen = RX * RS
		}
	}
	tstride := make([]int, d)
	tstride[d-1] = 1
	for a := d - 2; a >= 1; a-- {
		tstride[a] = rowLen
		if a < d-2 {
			tstride[a] = tstride[a+1] * bsize[a+1]
		}
	}
	plane, pad := 1, 0
	for a := 1; a < d; a++ {
		if a == X {
			plane *= rowLen
		} else {
			plane *= bsize[a]
		}
		pad += h[a] * tstride[a]
	}
	pad = (pad + 3) / 4 * 4
	stride := plane + 2*pad // a shared plane with room for halo threads' reads on both sides
	return n5dPlanes{inPlaneReads: inPlaneReads, offPlaneInPlane: offPlaneInPlane, tx: TX, split: split, rs: RS,
		rowLen: rowLen, tstride: tstride, plane: plane, pad: pad, stride: stride}
}
