package lower

import (
	"fmt"
	"slices"
	"sort"
	"strings"

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
		for _, b := range pl.Depths()[1:] {
			if _, _, err := n5dKernel(p, shape, pl, wide, b, "", true); err != nil {
				return nil, err
			}
		}
		return &Lowered{SharedBytes: shared}, nil
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
// hold any in-domain value) feed only rim cells, which keep their values; and pl does not
// group blocks in clusters (which must run the same rounds).
func N5DEdges(p *ir.Program, pl plan.Plan) bool {
	if !n5dHasFastLoop(p) || pl.CX > 1 || (p.Dims() == 3 && pl.CY > 1) {
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

func n5dKernel(p *ir.Program, shape []int, pl plan.Plan, wide bool, bt int, name string, sizeOnly bool) (builtKernel, int, error) {
	lay, err := N5DLayoutOf(p, pl, bt)
	if err != nil {
		return builtKernel{}, 0, err
	}
	d, h, X, Y, RX, RY := lay.Dims, lay.Reach, lay.X, lay.Y, lay.RX, lay.RY
	R := h[0]
	NC := RX * RY
	cx := func(c int) int { return c % RX }
	cy := func(c int) int { return c / RX }
	shfl := pl.Shfl // validated by lowerN5D: 2D, whole warps per block
	tiles, block, cd, clustered := lay.Tiles, lay.Block, lay.Cluster, lay.Clustered
	bsize, outSize, before, VW := lay.BlockCells, lay.Out, lay.Before, lay.VW
	ps, args := params(p, readRoles)
	ps = append(ps, kir.Param{Name: "chunk", Type: kir.I32})
	chunk := pl.Chunk
	if chunk <= 0 || chunk > shape[0] {
		chunk = shape[0]
	}
	args = append(args, Arg{Kind: ArgConst, Value: int64(chunk)})
	k := &kir.Kernel{Name: name, Params: ps}
	if bt < pl.BT || pl.Threads() > 512 {
		// A shallower remainder kernel can take more registers than the main one (grad's
		// bt=1 kernel 80 against the bt=3 kernel's 64 or fewer, so 1024-thread blocks could not
		// launch it): launch bounds keep it within the block. Not on the main kernel of up to
		// 512 threads: there they override the plan's register cap (maxregs) and measured
		// slower on star3d1r (514 against 574 GCells/s at 512 threads, H100). Main kernels of
		// 1024 threads need them: deep ones take more than the 64 registers a thread of such a
		// block can have (star3d1r at bt=5, 64 x 32 cells: 71 registers, and the launch
		// failed).
		k.MaxThreads = pl.Threads()
	}
	var body []kir.Stmt
	decl := func(name string, t kir.Type, init kir.Expr) kir.Expr {
		body = append(body, &kir.Decl{Name: name, Type: t, Init: init})
		return kir.Id(name)
	}
	// sizes declares the sizes as constants of the kernel (plan.ConstSize; the arguments stay,
	// unread), ahead of everything else: the pieces of rimcut read n0 outside the body.
	var sizes []kir.Stmt
	if pl.ConstSize {
		for a := range shape {
			n := fmt.Sprintf("n%d", a)
			for j := range k.Params {
				if k.Params[j].Name == n {
					k.Params[j].Name = n + "_arg"
				}
			}
			sizes = append(sizes, &kir.Decl{Name: n, Type: kir.I32, Init: kir.I(shape[a]), Const: true})
		}
	}
	lt := func(x, y kir.Expr) kir.Expr { return &kir.Binary{Op: "<", X: x, Y: y} }
	ge := func(x, y kir.Expr) kir.Expr { return &kir.Binary{Op: ">=", X: x, Y: y} }
	or := func(x, y kir.Expr) kir.Expr {
		if x == nil {
			return y
		}
		if y == nil {
			return x
		}
		return &kir.Binary{Op: "||", X: x, Y: y}
	}
	clamp := func(x kir.Expr, n kir.Expr) kir.Expr {
		return kir.Min(kir.Max(x, kir.I(0)), kir.Bin("-", n, kir.I(1)))
	}
	// Cell i of the thread's RX cells along x: local coordinate lx + i, column cx_i; likewise
	// its RY rows along y in 3D.
	// blockAt is the block's index along launch axis i (0 = x): the launch's own, or with
	// edgesfirst the place the reordering gives it (declared ahead of everything, pre).
	var pre []kir.Stmt
	blockAt := func(i int) kir.Expr { return &kir.Builtin{D: kir.BlockIdx, Axis: i} }
	if pl.EdgesFirst {
		var at [3]kir.Expr
		pre, at = edgesFirstBlocks(d)
		blockAt = func(i int) kir.Expr { return at[i] }
	}
	// tileIdx is the tile's index along in-plane axis a.
	tileIdx := func(a int) kir.Expr {
		b := blockAt(d - 1 - a)
		if shfl && a == X {
			warp := kir.Bin(">>", &kir.Builtin{D: kir.ThreadIdx, Axis: 0}, kir.I(5))
			b = kir.Add(kir.Mul(b, kir.I(tiles)), warp)
		}
		return b
	}
	// kc[a] is the block's place in its cluster along a (clustered axes only); tileLo is the
	// first cell of the block's tile.
	kc := make([]kir.Expr, d)
	for a := d - 1; a >= 1; a-- {
		if cd[a] > 1 {
			kc[a] = decl(fmt.Sprintf("k%d", a), kir.I32, kir.Bin("%", &kir.Builtin{D: kir.BlockIdx, Axis: d - 1 - a}, kir.I(cd[a])))
		}
	}
	tileLo := func(a int) kir.Expr {
		if cd[a] == 1 {
			return kir.Bin("-", kir.Mul(tileIdx(a), kir.I(outSize[a])), kir.I(before[a]))
		}
		cl := kir.Bin("/", &kir.Builtin{D: kir.BlockIdx, Axis: d - 1 - a}, kir.I(cd[a]))
		return kir.Add(kir.Bin("-", kir.Mul(cl, kir.I(outSize[a])), kir.I(before[a])), kir.Mul(kc[a], kir.I(bsize[a])))
	}
	local := make([]kir.Expr, d)
	col := make([][]kir.Expr, d)  // col[a][i]: cell i's coordinate along a, possibly outside the domain
	ccol := make([][]kir.Expr, d) // the same clamped into the domain, for loads
	for a := d - 1; a >= 1; a-- {
		dim := d - 1 - a
		n := kir.Id(fmt.Sprintf("n%d", a))
		cells := 1
		if a == X {
			cells = RX
		} else if a == Y {
			cells = RY
		}
		var l kir.Expr = &kir.Builtin{D: kir.ThreadIdx, Axis: dim}
		if shfl && a == X {
			l = kir.Bin("&", l, kir.I(plan.WarpSize-1)) // the lane
		}
		if cells > 1 {
			l = kir.Mul(l, kir.I(cells))
		}
		local[a] = decl(fmt.Sprintf("l%d", a), kir.I32, l)
		base := decl(fmt.Sprintf("c%d", a), kir.I32, kir.Add(tileLo(a), local[a]))
		for i := 0; i < cells; i++ {
			ci := base
			sfx := ""
			if cells > 1 {
				sfx = fmt.Sprintf("_%d", i)
				ci = decl(fmt.Sprintf("c%d%s", a, sfx), kir.I32, kir.Add(base, kir.I(i)))
			}
			col[a] = append(col[a], ci)
			ccol[a] = append(ccol[a], decl(fmt.Sprintf("cc%d%s", a, sfx), kir.I32, clamp(ci, n)))
		}
	}
	// cellOf is cell c's coordinates from cols (col or ccol).
	cellOf := func(cols [][]kir.Expr, c int) []kir.Expr {
		out := make([]kir.Expr, d)
		for a := 1; a < d; a++ {
			switch {
			case a == X:
				out[a] = cols[a][cx(c)]
			case a == Y:
				out[a] = cols[a][cy(c)]
			default:
				out[a] = cols[a][0]
			}
		}
		return out
	}
	// cellLocal is cell c's local coordinate along a.
	cellLocal := func(a, c int) kir.Expr {
		switch {
		case a == X && cx(c) > 0:
			return kir.Add(local[a], kir.I(cx(c)))
		case a == Y && cy(c) > 0:
			return kir.Add(local[a], kir.I(cy(c)))
		}
		return local[a]
	}
	// tileLocal is cell c's coordinate along a in the cluster's tile (cellLocal without
	// clusters).
	tileLocal := func(a, c int) kir.Expr {
		if cd[a] == 1 {
			return cellLocal(a, c)
		}
		return kir.Add(kir.Mul(kc[a], kir.I(bsize[a])), cellLocal(a, c))
	}
	sp := n5dPlanesOf(p, pl, lay)
	inPlaneReads, offPlaneInPlane := sp.inPlaneReads, sp.offPlaneInPlane
	TX, split, gx, RS, tstride := sp.tx, sp.split, sp.gx, sp.rs, sp.tstride
	pad, stride := sp.pad, sp.stride
	// tid is the thread's word in a shared plane: its row and its place in the row's runs.
	var tid kir.Expr = kir.Add(&kir.Builtin{D: kir.ThreadIdx, Axis: 0}, kir.I(gx))
	if !split {
		tid = kir.Add(local[X], kir.I(gx))
	}
	for a := X - 1; a >= 1; a-- {
		tid = kir.Add(kir.Mul(local[a], kir.I(tstride[a])), tid)
	}
	decl("tid", kir.I32, tid)
	// own_i: cell i's column is one this block stores.
	own := make([]kir.Expr, NC)
	for i := 0; i < NC; i++ {
		cell := cellOf(col, i)
		var o kir.Expr = &kir.BoolLit{V: true}
		for a := 1; a < d; a++ {
			n := kir.Id(fmt.Sprintf("n%d", a))
			li := tileLocal(a, i)
			o = and(o, and(and(ge(cell[a], kir.I(0)), lt(cell[a], n)), and(ge(li, kir.I(before[a])), lt(li, kir.I(before[a]+outSize[a])))))
		}
		own[i] = decl(fmt.Sprintf("own_%d", i), kir.Bool, o)
	}
	// live_t: the thread's warp has cells that feed an output at level t (plan.Shrink);
	// declared only for the levels that leave some warp idle.
	liveAt := map[int]kir.Expr{}
	if pl.Shrink {
		if live, ok := pl.N5DLiveWarps(d, h, bt); ok {
			var lin kir.Expr = &kir.Builtin{D: kir.ThreadIdx, Axis: 0}
			if d == 3 {
				lin = kir.Add(kir.Mul(&kir.Builtin{D: kir.ThreadIdx, Axis: 1}, kir.I(pl.BX)), lin)
			}
			wid := decl("wid", kir.I32, kir.Bin(">>", lin, kir.I(5)))
			last := (block[0]*block[1]+plan.WarpSize-1)/plan.WarpSize - 1
			for t, w := range live {
				var c kir.Expr = &kir.BoolLit{V: true}
				if w[0] > 0 {
					c = ge(wid, kir.I(w[0]))
				}
				if w[1] < last {
					c = and(c, lt(wid, kir.I(w[1]+1)))
				}
				if _, all := c.(*kir.BoolLit); !all {
					liveAt[t+1] = decl(fmt.Sprintf("live_%d", t+1), kir.Bool, c)
				}
			}
		}
	}
	chunkDim := d - 1
	// rimCut: the chunk runs in pieces (rimPieces), this one of planes pb .. pe-1.
	rimCut := pl.RimCut && n5dHasFastLoop(p)
	// rimBlocks: where the axis has planes between the margins (n0 > lo+hi, a test the
	// kernel makes, so that it serves every size), chunk 0 is the planes before lo, the last
	// chunk those from n0-hi on, and the chunks between start at lo, chunk planes each, the
	// last of them cut at n0-hi; otherwise the chunks are the usual ones.
	rimLo, rimHi, rimBlocks := N5DRimBlocks(p, pl, bt)
	switch {
	case rimCut:
		decl("zb", kir.I32, kir.Id("pb"))
		decl("ze", kir.I32, kir.Id("pe"))
	case rimBlocks:
		b := blockAt(chunkDim)
		eq := func(x, y kir.Expr) kir.Expr { return &kir.Binary{Op: "==", X: x, Y: y} }
		cond := func(c, x, y kir.Expr) kir.Expr { return &kir.Cond{C: c, A: x, B: y} }
		split := decl("rimsplit", kir.Bool, &kir.Binary{Op: ">", X: kir.Id("n0"), Y: kir.I(rimLo + rimHi)})
		first := eq(b, kir.I(0))
		last := eq(b, kir.Bin("-", &kir.Builtin{D: kir.GridDim, Axis: chunkDim}, kir.I(1)))
		top := kir.Bin("-", kir.Id("n0"), kir.I(rimHi))
		decl("zb", kir.I32, cond(split, cond(first, kir.I(0), cond(last, top, kir.Add(kir.I(rimLo), kir.Mul(kir.Bin("-", b, kir.I(1)), kir.Id("chunk"))))),
			kir.Mul(b, kir.Id("chunk"))))
		decl("ze", kir.I32, cond(split, cond(first, kir.I(rimLo), cond(last, kir.Id("n0"), kir.Min(kir.Add(kir.I(rimLo), kir.Mul(b, kir.Id("chunk"))), top))),
			kir.Min(kir.Add(kir.Id("zb"), kir.Id("chunk")), kir.Id("n0"))))
	default:
		decl("zb", kir.I32, kir.Mul(blockAt(chunkDim), kir.Id("chunk")))
		decl("ze", kir.I32, kir.Min(kir.Add(kir.Id("zb"), kir.Id("chunk")), kir.Id("n0")))
	}
	// rimc_<g>_i: cell i's column lies in g's fixed rim (or outside the domain).
	rimCol := map[*ir.Grid][]kir.Expr{}
	for _, u := range p.Updates {
		g := u.Grid
		for i := 0; i < NC; i++ {
			cell := cellOf(col, i)
			var rc kir.Expr
			for a := 1; a < d; a++ {
				if g.Rim[a] > 0 {
					n := kir.Id(fmt.Sprintf("n%d", a))
					rc = or(rc, or(lt(cell[a], kir.I(g.Rim[a])), ge(cell[a], kir.Bin("-", n, kir.I(g.Rim[a])))))
				}
			}
			if rc != nil {
				rimCol[g] = append(rimCol[g], decl(fmt.Sprintf("rimc_%s_%d", g.Name, i), kir.Bool, rc))
			}
		}
	}
	rimAt := func(g *ir.Grid, m kir.Expr, i int) kir.Expr {
		var r kir.Expr
		if g.Rim[0] > 0 {
			r = or(lt(m, kir.I(g.Rim[0])), ge(m, kir.Bin("-", kir.Id("n0"), kir.I(g.Rim[0]))))
		}
		if rc := rimCol[g]; rc != nil {
			r = or(rc[i], r)
		}
		return r
	}
	// newEm is an emitter for cells at coords (step: steps done before the level).
	newEm := func(coords []kir.Expr, step kir.Expr, out *[]kir.Stmt) *emitter {
		return &emitter{p: p, wide: wide, fast: pl.FastMath, coords: coords, step: step, lets: map[*ir.Let]string{}, out: out}
	}
	em0 := newEm(nil, nil, nil)
	// inputAt reads plane z of g's input at cell i's column as it is (z inside the domain).
	inputAt := func(g *ir.Grid, z kir.Expr, i int) kir.Expr {
		pos := cellOf(ccol, i)
		pos[0] = z
		return kir.At(bufName(g, In0), em0.linear(pos, nil))
	}
	// loadAt reads plane z (clamped into the domain) of g's input at cell i's column.
	loadAt := func(g *ir.Grid, z kir.Expr, i int) kir.Expr { return inputAt(g, clamp(z, kir.Id("n0")), i) }

	// Guard-free halo threads need every read to come from registers or shared memory.
	guard := n5dGuarded(p)
	sums, assoc := n5dAssociative(p)
	assoc = assoc && n5dPartialSums(p)
	if N5DRound(p, pl)%2 != 0 && !N5DShortRound(p) {
		return builtKernel{}, 0, fmt.Errorf("plan %s: %s reads other planes' in-plane neighbours without partial sums, so each level keeps a ring of every plane, which a round of %d planes cannot hold (a plane is refilled while its neighbours still read it); drop unroll", pl, p.Name, N5DRound(p, pl))
	}

	// One element type for every state grid: all planes live in one dynamic shared array, so
	// blocks may use the opt-in maximum (227 KB on Hopper) rather than 48 KB of static arrays.
	var shType ir.Type
	for i, u := range p.Updates {
		if i == 0 {
			shType = u.Grid.Type
		} else if u.Grid.Type != shType {
			return builtKernel{}, 0, fmt.Errorf("plan %s: n5d needs state grids of one element type (%s is %s, %s is %s)", pl, p.Updates[0].Grid.Name, shType, u.Grid.Name, u.Grid.Type)
		}
	}
	U := 2*R + 1
	copies := N5DRound(p, pl)
	dbl := pl.N5DPlanes(R) // the planes of windows that would be double-buffered
	// wave: levels run deepest first, each one plane further behind the level below (lag
	// R+1 instead of R), so that all of them read shared planes published in the previous
	// copy and one barrier per plane suffices (Schafer and Fey's pipelined wavefront).
	wave := pl.Wave
	L := pl.N5DLag(R)
	// ascend: wave order with the levels lowest first, each R planes behind the level below
	// and reading the plane it published R copies earlier (plan.Ascend): stars only, whose
	// levels read in-plane neighbours on the centre plane alone.
	ascend := wave && pl.Ascend
	if ascend && offPlaneInPlane {
		return builtKernel{}, 0, fmt.Errorf("plan %s: ascend reads each level's in-plane neighbours on the centre plane only, R planes after it was published, but %s reads in-plane neighbours on other planes too (a box); drop ascend", pl, p.Name)
	}
	dName := func(g *ir.Grid, lv, i int) string { return fmt.Sprintf("d_%s_%d_%d", g.Name, lv, i) }
	if wave && assoc {
		for _, u := range p.Updates {
			for lv := 0; lv < bt; lv++ {
				for i := 0; i < NC; i++ {
					decl(dName(u.Grid, lv, i), kir.FromIR(u.Grid.Type), zeroOf(kir.FromIR(u.Grid.Type)))
				}
			}
		}
	}
	// Stars with asynchronous copies (async=D) take them straight into level 0's shared
	// planes: a ring of ringWin planes in the planes' own layout, which level 1 reads for all
	// its inputs, the column above and below included, so that level 0 keeps no register
	// queue, stores nothing and reads nothing back. Each thread copies its own cells; level 1
	// reads them after the plane's barrier (each thread waits for its own copies before it),
	// and a slot is refilled only once no level reads it in the same copy: D planes ahead of
	// the newest, behind the oldest that level 1 reads (lag L, reach R), so at least D+L+R+1
	// planes, and a divisor of the round for static slots. Other stencils, and depths with no
	// such divisor, copy into a ring of their own (below).
	ringWin := 0
	if !assoc && !offPlaneInPlane && !shfl {
		ringWin = pl.N5DStarRing(R, copies)
	}
	type window struct {
		queue [][]string // queue[k][i]: register k of cell i's queue of U planes (not in assoc mode)
		sh    int        // element offset of its planes in smem
		ring  int        // shared planes: 0, dbl (2: double-buffered, or U), the round or ringWin
		every bool       // the ring holds every plane (the round or ringWin), not only the latest
	}
	shElems, shared := 0, 0
	win := map[[2]int]*window{}
	for _, u := range p.Updates {
		g := u.Grid
		t := kir.FromIR(g.Type)
		for lv := 0; lv < bt; lv++ {
			w := &window{}
			if !assoc && !(lv == 0 && ringWin > 0) {
				for k := 0; k < U; k++ {
					var regs []string
					for i := 0; i < NC; i++ {
						nm := fmt.Sprintf("q_%s_%d_%d_%d", g.Name, lv, k, i)
						regs = append(regs, nm)
						decl(nm, t, zeroOf(t))
					}
					w.queue = append(w.queue, regs)
				}
			}
			switch {
			case lv == 0 && ringWin > 0:
				w.ring, w.every = ringWin, true
			case !inPlaneReads[g] || shfl:
			case assoc:
				w.ring = dbl
			case offPlaneInPlane:
				w.ring, w.every = copies, true
			default:
				w.ring = dbl
			}
			if w.ring > 0 {
				w.sh = shElems
				shElems += w.ring * stride
				shared += w.ring * stride * g.Type.Size()
			}
			win[[2]int{g.Index, lv}] = w
		}
	}
	accName := func(g *ir.Grid, t, k, i int) string { return fmt.Sprintf("acc_%s_%d_%d_%d", g.Name, t, k, i) }
	if assoc {
		for _, u := range p.Updates {
			t := kir.FromIR(u.Value.Type())
			for lv := 1; lv <= bt; lv++ {
				for k := 0; k < U; k++ {
					for i := 0; i < NC; i++ {
						decl(accName(u.Grid, lv, k, i), t, zeroOf(t))
					}
				}
			}
		}
	}
	// The prefetch: PD planes in flight per cell, plane x in register x mod PD (static, since
	// PD divides the 2U copies of a round), so a load has PD planes of work to arrive in.
	PD := n5dPrefetch(pl)
	if copies%PD != 0 {
		var fits []string
		for _, f := range []int{1, 2, 3, 5} {
			if copies%f == 0 {
				fits = append(fits, fmt.Sprintf("pf=%d", f))
			}
		}
		return builtKernel{}, 0, fmt.Errorf("plan %s: the prefetch distance pf must divide the %d planes of an unrolled round (reach %d along %s); try %s", pl, copies, R, p.Axes[0], strings.Join(fits, " or "))
	}
	pfName := func(g *ir.Grid, k, i int) string {
		if PD == 1 {
			return fmt.Sprintf("pf_%s_%d", g.Name, i)
		}
		return fmt.Sprintf("pf_%s_%d_%d", g.Name, k, i)
	}
	// pushes[i] is where cell i's published values go besides its own word: the ghost words
	// of each neighbouring block of the cluster that reads the cell (a direction e per
	// clustered axis, diagonals only where some read is diagonal), under a flag that holds
	// for the threads within reach of that shared edge.
	type push struct {
		flag, base string
		shift      int // the cell's word in the neighbour's plane, from its own word
	}
	pushes := make([][]push, NC)
	if clustered && shElems > 0 {
		var offs [][]int
		for _, u := range p.Updates {
			ir.WalkDeep(u.Value, func(e ir.Expr) {
				if l, ok := e.(*ir.Load); ok && l.G.Update != nil && l.Layer == nil && nonzero(l.Off[1:]) {
					offs = append(offs, l.Off)
				}
			})
		}
		axes := []int{X}
		if d == 3 {
			axes = []int{Y, X}
		}
		n := 0
		for _, e := range pl.ClusterPushes(d, offs) {
			// The neighbour's rank (x fastest) and where the cell lies in its plane.
			var rank kir.Expr = kir.I(0)
			shift := 0
			for _, a := range axes {
				if cd[a] == 1 {
					continue
				}
				var ka kir.Expr = kc[a]
				if e[a] != 0 {
					ka = kir.Bin("%", kir.Add(kc[a], kir.I(e[a]+cd[a])), kir.I(cd[a]))
				}
				if a == X {
					rank = kir.Add(rank, ka)
				} else {
					rank = kir.Add(rank, kir.Mul(ka, kir.I(cd[X])))
				}
				switch {
				case a == X && split:
					shift -= e[a] * TX
				case a == X:
					shift -= e[a] * bsize[X]
				default:
					shift -= e[a] * bsize[a] * tstride[a]
				}
			}
			base := fmt.Sprintf("rb_%d", n)
			decl(base, kir.U32, &kir.ClusterAddr{Rank: rank})
			for i := 0; i < NC; i++ {
				var cond kir.Expr = &kir.BoolLit{V: true}
				possible := true
				for _, a := range axes {
					if e[a] == 0 {
						continue
					}
					lo, hi := cx(i), (TX-1)*RX+cx(i)
					if a != X {
						lo, hi = cy(i), (block[d-1-a]-1)*RY+cy(i)
					}
					li := cellLocal(a, i)
					if e[a] < 0 {
						possible = possible && lo < h[a]
						cond = and(cond, and(&kir.Binary{Op: ">", X: kc[a], Y: kir.I(0)}, lt(li, kir.I(h[a]))))
					} else {
						possible = possible && hi >= bsize[a]-h[a]
						cond = and(cond, and(lt(kc[a], kir.I(cd[a]-1)), ge(li, kir.I(bsize[a]-h[a]))))
					}
				}
				if possible {
					flag := fmt.Sprintf("push_%d_%d", n, i)
					decl(flag, kir.Bool, cond)
					pushes[i] = append(pushes[i], push{flag: flag, base: base, shift: shift})
				}
			}
			n++
		}
	}
	// smemAt addresses the word that cell i's neighbour at in-plane offset off (nil: the
	// cell itself) has in a window's slot. Cell i + dx of the thread is cell (i+dx) mod RX of
	// the thread floor((i+dx) / RX) places along: both static, so the address is tid plus a
	// constant. Reads that leave the row land in the pad or a neighbouring row: only halo
	// cells, whose results no output uses, make them.
	smemWord := func(w *window, slot, i int, off []int) int {
		o := 0
		j := cx(i)
		o += cy(i) * tstride[Y] // the cell's row among the thread's RY rows (none in 2D)
		if off != nil {
			for a := 1; a < X; a++ {
				o += off[a] * tstride[a]
			}
			j += off[X]
		}
		if !split {
			o += j
		} else {
			o += mod(j, RX)*RS + (j-mod(j, RX))/RX
		}
		return w.sh + slot*stride + pad + o
	}
	// Async: instead of prefetch registers, a ring of S >= D+1 shared planes per state grid
	// (plan.N5DRing) that asynchronous copies fill D planes ahead. Plane first+x (first: the
	// loop's first plane) lives in slot x mod S, static since S divides the round. Each thread
	// copies and
	// reads only its own cells, so the ring needs no barrier: the thread's own wait makes its
	// copies visible to it. A slot is refilled at least one copy after it was read (the copy
	// for plane jr+D goes to the slot of plane jr+D-S), with the plane's barrier between them
	// where the kernel has shared planes. A thread's cells lie in runs of VW, each run of every thread
	// side by side, so that a run is one aligned 4-, 8- or 16-byte copy and one vector read
	// (whole rows of a warp: no bank conflicts beyond the vector's own phases).
	D, S := pl.Async, pl.N5DRing(copies)
	if ringWin > 0 {
		S = ringWin
	}
	if D >= copies {
		return builtKernel{}, 0, fmt.Errorf("plan %s: async=%d copies further ahead than the %d planes of an unrolled round; use async=%d or less", pl, D, copies, copies-1)
	}
	if D > 0 && clustered {
		return builtKernel{}, 0, fmt.Errorf("plan %s: async and clusters (cx, cy) do not combine; give one of them", pl)
	}
	if D > 0 && PD > 1 {
		return builtKernel{}, 0, fmt.Errorf("plan %s: async replaces the register prefetch; give pf or async, not both", pl)
	}
	windows := shElems > 0           // shared planes that other threads read: barriers
	private := D > 0 && ringWin == 0 // the copies' own ring
	// edges: blocks on an in-plane edge whose planes are inside run the edge loop (plan.Edges).
	edges := pl.Edges && N5DEdges(p, pl)
	// runOf is the clamped position of the aligned run of VW cells that starts at cell i (edge
	// loop): a run lies wholly inside or wholly outside the domain (rows of a multiple of VW
	// cells), so the clamped run is in the domain and aligned.
	runCol := map[int]kir.Expr{}
	if edges && VW > 1 {
		n := kir.Id(fmt.Sprintf("n%d", X))
		for i := 0; i < RX; i += VW {
			hi := kir.Bin("-", n, kir.I(VW))
			runCol[i] = decl(fmt.Sprintf("cv%d_%d", X, i), kir.I32, kir.Min(kir.Max(col[X][i], kir.I(0)), hi))
		}
	}
	runOf := func(i int) []kir.Expr {
		pos := cellOf(ccol, i)
		pos[X] = runCol[cx(i)]
		return pos
	}
	// runAt is the position of the aligned run of VW cells that starts at cell i, as a vector
	// access takes it: as it is in blocks inside the interior, clamped (runOf) in the edge loop.
	runAt := func(i int, edge bool) []kir.Expr {
		if edge {
			return runOf(i)
		}
		return cellOf(col, i)
	}
	threads := block[0] * block[1]
	ringPlane := NC * threads
	ringOf := map[*ir.Grid]int{}
	for n, u := range p.Updates {
		ringOf[u.Grid] = n
	}
	// ringOff is cell i's element in slot slot of g's ring, past the thread's first one.
	ringOff := func(g *ir.Grid, slot, i int) int {
		return ringOf[g]*S*ringPlane + slot*ringPlane + i/VW*threads*VW + i%VW
	}
	ringBase := 0
	ringAt := func(g *ir.Grid, slot, i int) kir.Expr {
		return kir.Add(kir.Mul(kir.Id("tlin"), kir.I(VW)), kir.I(ringBase+ringOff(g, slot, i)))
	}
	if private {
		// The ring starts 16-byte aligned (the dynamic array is), for 16-byte copies.
		al := max(16/shType.Size(), 1)
		shElems = (shElems + al - 1) / al * al
		ringBase = shElems
		shElems += len(p.Updates) * S * ringPlane
		shared = shElems * shType.Size()
		var tl kir.Expr = &kir.Builtin{D: kir.ThreadIdx, Axis: 0}
		if d == 3 {
			tl = kir.Add(kir.Mul(&kir.Builtin{D: kir.ThreadIdx, Axis: 1}, kir.I(block[0])), tl)
		}
		decl("tlin", kir.I32, tl)
		// The copies address the ring from the thread's first element: one 32-bit register.
		body = append(body, &kir.SharedBase{Name: "sring", Idx: kir.Add(kir.Mul(kir.Id("tlin"), kir.I(VW)), kir.I(ringBase))})
	}
	if sizeOnly {
		return builtKernel{}, shared, nil // nothing below fails or changes the shared memory
	}
	// loadIdx is the element of g's input holding plane z (clamped into the domain) at cell
	// i's column: clamped for a scalar access (w == 1), the run's position (runAt) for a vector
	// of w cells.
	loadIdx := func(z kir.Expr, i, w int, edge bool) kir.Expr {
		pos := cellOf(ccol, i)
		if w > 1 {
			pos = runAt(i, edge)
		}
		pos[0] = clamp(z, kir.Id("n0"))
		return em0.linear(pos, nil)
	}
	// asyncPlane copies plane z of every state grid into ring slot slot and commits it as one
	// group. The edge loop's vector copies take each run from its clamped position, as its
	// vector loads do: a run outside the domain then copies an in-domain run, whose values
	// feed only rim cells.
	asyncPlane := func(z kir.Expr, slot int, vec, edge bool) []kir.Stmt {
		var out []kir.Stmt
		for _, u := range p.Updates {
			g := u.Grid
			w := 1
			if vec && private {
				w = VW
			}
			for i := 0; i < NC; i += w {
				var dst int
				if private {
					dst = ringOff(g, slot, i)
				} else {
					dst = smemWord(win[[2]int{g.Index, 0}], slot, i, nil)
				}
				out = append(out, &kir.AsyncCopy{T: kir.FromIR(g.Type), Width: w, Src: bufName(g, In0), SrcIdx: loadIdx(z, i, w, edge), IdxType: em0.idxType(), DstBase: "sring", DstIdx: kir.I(dst)})
			}
		}
		return append(out, &kir.AsyncCommit{})
	}
	if D > 0 && !private {
		// The copies address level 0's planes from the thread's word in them.
		body = append(body, &kir.SharedBase{Name: "sring", Idx: kir.Id("tid")})
	}
	if D > 0 {
		for k := 0; k < D; k++ {
			body = append(body, asyncPlane(kir.Bin("-", kir.Id("zb"), kir.I(n5dStart(R, L, bt)-k)), k, false, false)...)
		}
	} else {
		for _, u := range p.Updates {
			for k := 0; k < PD; k++ {
				for i := 0; i < NC; i++ {
					decl(pfName(u.Grid, k, i), kir.FromIR(u.Grid.Type), loadAt(u.Grid, kir.Bin("-", kir.Id("zb"), kir.I(n5dStart(R, L, bt)-k)), i))
				}
			}
		}
	}
	smemAt := func(w *window, slot, i int, off []int) kir.Expr {
		return kir.At("smem", kir.Add(kir.Id("tid"), kir.I(smemWord(w, slot, i, off))))
	}
	// publish stores cell i's value v of a level into its word of a window's slot and, in a
	// cluster, into the ghost words of the neighbouring blocks that read it (pushes[i]).
	publish := func(w *window, slot, i int, v kir.Expr) []kir.Stmt {
		word := smemWord(w, slot, i, nil)
		out := []kir.Stmt{kir.Set(kir.At("smem", kir.Add(kir.Id("tid"), kir.I(word))), v)}
		for _, ps := range pushes[i] {
			st := &kir.ClusterStore{Base: kir.Id(ps.base), Idx: kir.Add(kir.Id("tid"), kir.I(word+ps.shift)), T: kir.FromIR(shType), Val: v}
			out = append(out, &kir.If{Cond: kir.Id(ps.flag), Then: []kir.Stmt{st}})
		}
		return out
	}
	// inThread says a read at l's in-plane offset from cell i lands on the thread's own cell
	// i+dx (same row, x offset only), whose value is in a register.
	inThread := func(l *ir.Load, i int) (int, bool) {
		jy := cy(i)
		for a := 1; a < X; a++ {
			if a == Y {
				jy += l.Off[a]
			} else if l.Off[a] != 0 {
				return 0, false
			}
		}
		j := cx(i) + l.Off[X]
		return jy*RX + j, j >= 0 && j < RX && jy >= 0 && jy < RY
	}
	// read[i] says another thread reads cell i of a state grid's shared plane. Where the
	// levels keep register queues, a thread reads its own cells from registers, so a cell
	// no neighbour reaches is never published: with rx = 4 and reach 1 along x, the two
	// middle cells of a 2D thread (half its shared stores). In a cluster every cell is
	// published, as its pushes to the neighbours' ghost words are (pushes exist only there).
	read := make([]bool, NC)
	for _, u := range p.Updates {
		ir.WalkDeep(u.Value, func(e ir.Expr) {
			l, ok := e.(*ir.Load)
			if !ok || l.G.Update == nil || !nonzero(l.Off[1:]) {
				return
			}
			for i := 0; i < NC; i++ {
				if _, own := inThread(l, i); own {
					continue
				}
				ty := cy(i)
				if RY > 1 {
					ty = mod(ty+l.Off[Y], RY)
				}
				read[ty*RX+mod(cx(i)+l.Off[X], RX)] = true
			}
		})
	}
	for i := range read {
		read[i] = read[i] || clustered
	}
	// enter puts cell i's value v of plane x (its place in the round) of a level into the
	// level's register queue and, where other threads read it, its shared window: the newest
	// plane into a ring of every plane (or, with ascend, the plane the level above reads R
	// copies later); with two double-buffered planes the queue's centre, the plane the level
	// above computes next (partial sums publish the newest).
	enter := func(w *window, x, i int, v kir.Expr) []kir.Stmt {
		var out []kir.Stmt
		if !assoc {
			out = append(out, kir.Set(kir.Id(w.queue[mod(x, U)][i]), v))
		}
		switch {
		case w.ring == 0:
		case ascend:
			if read[i] {
				out = append(out, publish(w, mod(x, w.ring), i, v)...)
			}
		case w.ring == 2:
			if assoc {
				out = append(out, publish(w, mod(x, w.ring), i, v)...)
			} else if read[i] {
				out = append(out, publish(w, mod(x-R, w.ring), i, kir.Id(w.queue[mod(x-R, U)][i]))...)
			}
		default:
			out = append(out, publish(w, mod(x, w.ring), i, v)...)
		}
		return out
	}
	vName := func(g *ir.Grid, t, i int) string { return fmt.Sprintf("v_%s_%d_%d", g.Name, t, i) }
	// across says which cell of which neighbouring lane a read at l's x offset from cell i
	// lands on, when not on the thread's own cells (shfl).
	across := func(l *ir.Load, i int) (cell, lanes int) {
		j := i + l.Off[X]
		cell = mod(j, RX)
		return cell, (j - cell) / RX // floor(j / RX)
	}

	// Level t's plane m_t is needed for the block's output from zb-R(bt-t) to ze+R(bt-t)-1;
	// with partial sums its accumulators fill 2R planes ahead of the first output.
	slack := 0
	if assoc {
		slack = 2 * R
	}
	// active is level t's condition in the head and tail phases (uniform over the block):
	// outside it the level's planes feed no output, so it is skipped.
	active := func(t int, row kir.Expr) kir.Expr {
		return and(ge(row, kir.Bin("-", kir.Id("zb"), kir.I(R*(bt-t)+slack))), lt(row, kir.Add(kir.Id("ze"), kir.I(R*(bt-t)))))
	}
	// bodyAt is copy r of the loop body: plane jr = j + r enters level 0. Plane (j + x) of
	// any level lives in register x mod U of its queue or accumulators and shared slot
	// x mod ring, all static because j advances by a multiple of 2U. phased copies run a
	// level only where it is active (the head and tail phases).
	bodyAt := func(r int, mode n5dMode, phased bool) []kir.Stmt {
		// Blocks of aligned rows without per-plane checks load and store vectors.
		vec := mode != n5dChecked && VW > 1
		rimAt := rimAt
		switch mode {
		case n5dFast:
			rimAt = func(*ir.Grid, kir.Expr, int) kir.Expr { return nil }
		case n5dEdge:
			// The block's planes are inside: only the columns' rim is left.
			rimAt = func(g *ir.Grid, _ kir.Expr, i int) kir.Expr {
				if rc := rimCol[g]; rc != nil {
					return rc[i]
				}
				return nil
			}
		}
		var loop []kir.Stmt
		// late is what clustered wave-order copies run between the arrive and the wait of
		// their cluster barrier: the next plane's global loads and the deepest level's global
		// stores. The arrive's release orders the memory accesses before it, which would make
		// every plane wait for its prefetch and its stores to complete.
		var late []kir.Stmt
		deferGlobal := clustered && wave && windows
		// cur holds each grid's newest plane value per cell of the level below the one being
		// computed, for publishing and partial sums. In wave order the level below has not run
		// yet in this copy: its values from the previous copy wait in the d_ registers.
		cur := map[*ir.Grid][]kir.Expr{}
		keepD := func(g *ir.Grid, lv int, vals []kir.Expr) []kir.Stmt {
			if !(wave && assoc) || lv >= bt {
				return nil
			}
			var out []kir.Stmt
			for i := range vals {
				out = append(out, kir.Set(kir.Id(dName(g, lv, i)), vals[i]))
			}
			return out
		}
		level0 := func() []kir.Stmt {
			var loop []kir.Stmt
			loads := &loop
			if deferGlobal {
				loads = &late
			}
			vals := map[*ir.Grid][]kir.Expr{}
			if D > 0 {
				// Plane jr's group has landed once at most D-1 newer ones are in flight.
				loop = append(loop, &kir.AsyncWait{Pending: D - 1})
			}
			if ringWin > 0 {
				// Level 0 is the copies: level 1 reads them after the plane's barrier.
				return append(loop, asyncPlane(kir.Add(kir.Id("jr"), kir.I(D)), mod(r+D, S), vec, mode == n5dEdge)...)
			}
			for _, u := range p.Updates {
				g := u.Grid
				w := win[[2]int{g.Index, 0}]
				next := kir.Add(kir.Id("jr"), kir.I(PD))
				// Blocks whose planes are inside load inside the domain (n5dRimMargins).
				nextAt := clamp(next, kir.Id("n0"))
				if mode != n5dChecked && pl.Unclamped {
					nextAt = next
				}
				for i := 0; i < NC && D > 0; i++ {
					ty := kir.FromIR(g.Type)
					v := vName(g, 0, i)
					switch {
					case vec && i%VW == 0:
						vn := fmt.Sprintf("a_%s_%d", g.Name, i)
						loop = append(loop, &kir.VecLoad{Name: vn, T: ty, Width: VW, Array: kir.Id("smem"), Idx: ringAt(g, mod(r, S), i), Shared: true})
						fallthrough
					case vec:
						loop = append(loop, &kir.Decl{Name: v, Type: ty, Init: &kir.Lane{Vec: fmt.Sprintf("a_%s_%d", g.Name, i-i%VW), I: i % VW}})
					default:
						loop = append(loop, &kir.Decl{Name: v, Type: ty, Init: kir.At("smem", ringAt(g, mod(r, S), i))})
					}
					vals[g] = append(vals[g], kir.Id(v))
				}
				for i := 0; i < NC && D == 0; i++ {
					v := vName(g, 0, i)
					loop = append(loop, &kir.Decl{Name: v, Type: kir.FromIR(g.Type), Init: kir.Id(pfName(g, mod(r, PD), i))})
					if !vec {
						*loads = append(*loads, kir.Set(kir.Id(pfName(g, mod(r, PD), i)), inputAt(g, nextAt, i)))
					}
					vals[g] = append(vals[g], kir.Id(v))
				}
				if vec && D == 0 {
					// Each run of VW cells of a row with one aligned vector load.
					for i := 0; i < NC; i += VW {
						pos := runAt(i, mode == n5dEdge)
						pos[0] = nextAt
						vn := fmt.Sprintf("w_%s_%d", g.Name, i)
						*loads = append(*loads, &kir.VecLoad{Name: vn, T: kir.FromIR(g.Type), Width: VW, Array: kir.Id(bufName(g, In0)), Idx: em0.linear(pos, nil)})
						for k := 0; k < VW; k++ {
							*loads = append(*loads, kir.Set(kir.Id(pfName(g, mod(r, PD), i+k)), &kir.Lane{Vec: vn, I: k}))
						}
					}
				}
				for i := 0; i < NC; i++ {
					loop = append(loop, enter(w, r, i, vals[g][i])...)
				}
				loop = append(loop, keepD(g, 0, vals[g])...)
			}
			if D > 0 {
				loop = append(loop, asyncPlane(kir.Add(kir.Id("jr"), kir.I(D)), mod(r+D, S), vec, mode == n5dEdge)...)
			}
			if !wave {
				for g, v := range vals {
					cur[g] = v
				}
			}
			return loop
		}
		if !wave || ascend {
			loop = append(loop, level0()...)
			if windows && !wave {
				loop = append(loop, &kir.Barrier{Cluster: clustered})
			}
		}
		levels := make([]int, 0, bt)
		for t := 1; t <= bt; t++ {
			levels = append(levels, t)
		}
		if wave && !ascend {
			// Deepest level first: each reads what the level below published in the previous
			// copy, so one barrier per plane serves every level (the pipelined wavefront).
			slices.Reverse(levels)
		}
		for _, t := range levels {
			if wave && assoc {
				for _, u := range p.Updates {
					cur[u.Grid] = nil
					for i := 0; i < NC; i++ {
						cur[u.Grid] = append(cur[u.Grid], kir.Id(dName(u.Grid, t-1, i)))
					}
				}
			}
			row := fmt.Sprintf("m%d", t)
			mrel := r - L*t // plane m_t = j + mrel
			prev := t - 1
			step := kir.Add(kir.Id("step0"), kir.I(t-1))
			lvl := []kir.Stmt{&kir.Decl{Name: row, Type: kir.I32, Init: kir.Bin("-", kir.Id("jr"), kir.I(L*t))}}
			var lateStores []kir.Stmt
			// Shuffles of level t-1's registers, declared ahead of the cells (and of any
			// condition) so that every lane of the warp reaches them; one per source and
			// distance.
			var shf, cells []kir.Stmt
			shCache := map[string]kir.Expr{}
			shuffle := func(src kir.Expr, ty kir.Type, lanes int) kir.Expr {
				key := fmt.Sprintf("%s@%d", src.(*kir.Ident).Name, lanes)
				if v, ok := shCache[key]; ok {
					return v
				}
				nm := fmt.Sprintf("x%d_%d", t, len(shCache))
				shf = append(shf, &kir.Decl{Name: nm, Type: ty, Init: &kir.Shuffle{X: src, Delta: lanes}})
				shCache[key] = kir.Id(nm)
				return shCache[key]
			}
			next := map[*ir.Grid][]kir.Expr{}
			for _, u := range p.Updates {
				for i := 0; i < NC; i++ {
					nv := vName(u.Grid, t, i)
					loop = append(loop, &kir.Decl{Name: nv, Type: kir.FromIR(u.Grid.Type), Init: zeroOf(kir.FromIR(u.Grid.Type))})
					next[u.Grid] = append(next[u.Grid], kir.Id(nv))
				}
			}
			for i := 0; i < NC; i++ {
				var cs []kir.Stmt // cell i's statements
				coords := cellOf(col, i)
				coords[0] = kir.Id(row)
				if assoc {
					// Plane p = m_t + R of level t-1 is published: add its terms to the outputs
					// m_t .. m_t+2R it feeds; output m_t is then complete.
					prel := mrel + R
					for ui, u := range p.Updates {
						g := u.Grid
						ty := kir.FromIR(u.Value.Type())
						s := sums[ui]
						keys := make([]int, 0, len(s.parts))
						for o := range s.parts {
							keys = append(keys, o)
						}
						sort.Sort(sort.Reverse(sort.IntSlice(keys)))
						final := fmt.Sprintf("s_%s", g.Name)
						done := false
						parts := map[int]ir.Expr{}
						terms := map[int][]ir.Expr{}
						for _, o := range keys {
							parts[o] = s.parts[o]
							if pl.FastMath && NC > 1 {
								pos := make([]int, d)
								pos[X] = cx(i)
								if d == 3 {
									pos[Y] = cy(i)
								}
								parts[o] = pairSums(parts[o], pos)
							}
							terms[o] = partTerms(parts[o])
						}
						// Fast math chains a part's terms onto the accumulator where no term is
						// shared by every part (sharedTerm).
						chain := pl.FastMath && len(keys) > 1 && !sharedTerm(keys, terms)
						for _, o := range keys {
							acc := kir.Id(accName(g, t, mod(prel-o, U), i))
							pcoords := append([]kir.Expr{kir.Bin("-", kir.Id(row), kir.I(R-o))}, coords[1:]...)
							em := newEm(pcoords, step, &cs)
							em.read = func(em *emitter, l *ir.Load) kir.Expr {
								if l.Off[0] != o {
									panic("internal error: n5d partial sum reads another plane")
								}
								if j, ok := inThread(l, i); ok {
									return cur[l.G][j]
								}
								if shfl {
									j, lanes := across(l, i)
									return shuffle(cur[l.G][j], kir.FromIR(l.G.Type), lanes)
								}
								return smemAt(win[[2]int{l.G.Index, prev}], mod(prel, win[[2]int{l.G.Index, prev}].ring), i, l.Off)
							}
							var sum kir.Expr // acc (nil for the first part) plus the part
							if o != -R {
								sum = acc
							}
							if chain {
								for _, x := range terms[o] {
									sum = addKir(sum, em.expr(x))
								}
							} else {
								sum = addKir(sum, em.expr(parts[o]))
							}
							switch {
							case o == R:
								cs = append(cs, &kir.Decl{Name: final, Type: ty, Init: sum})
								done = true
							default:
								cs = append(cs, kir.Set(acc, sum))
							}
						}
						if !done {
							cs = append(cs, &kir.Decl{Name: final, Type: ty, Init: kir.Id(accName(g, t, mod(mrel, U), i))})
						}
						if _, ok := s.parts[-R]; !ok {
							cs = append(cs, kir.Set(kir.Id(accName(g, t, mod(prel+R, U), i)), zeroOf(ty)))
						}
						em := newEm(coords, step, &cs)
						var val kir.Expr = kir.Id(final)
						switch s.op {
						case "/":
							if k, ok := s.coef.(*ir.Const); ok {
								if q := em.divByConst(val, k.V); q != nil {
									val = q
									break
								}
							}
							val = &kir.Binary{Op: "/", X: val, Y: em.expr(s.coef)}
						case "*":
							val = &kir.Binary{Op: "*", X: val, Y: em.expr(s.coef)}
						}
						cs = append(cs, kir.Set(next[g][i], val))
						if rim := rimAt(g, kir.Id(row), i); rim != nil {
							cs = append(cs, &kir.If{Cond: rim, Then: []kir.Stmt{kir.Set(next[g][i], loadAt(g, kir.Id(row), i))}})
						}
					}
				} else {
					em := newEm(coords, step, nil)
					em.read = func(em *emitter, l *ir.Load) kir.Expr {
						if l.G.Update == nil || l.Layer != nil {
							return em.globalRead(l.G, l.Level, l.Layer, coords, l.Off)
						}
						w := win[[2]int{l.G.Index, prev}]
						if j, ok := inThread(l, i); ok && w.queue != nil {
							return kir.Id(w.queue[mod(mrel+l.Off[0], U)][j])
						}
						if shfl {
							j, lanes := across(l, i)
							return shuffle(kir.Id(w.queue[mod(mrel+l.Off[0], U)][j]), kir.FromIR(l.G.Type), lanes)
						}
						if !w.every {
							return smemAt(w, mod(mrel, w.ring), i, l.Off)
						}
						return smemAt(w, mod(mrel+l.Off[0], w.ring), i, l.Off)
					}
					var compute []kir.Stmt
					em.out = &compute
					var vals []ir.Expr
					for _, u := range p.Updates {
						vals = append(vals, u.Value)
					}
					em.declareLets(vals...)
					var sets []kir.Stmt
					for _, u := range p.Updates {
						g := u.Grid
						w := win[[2]int{g.Index, prev}]
						var keep kir.Expr
						if w.queue != nil {
							keep = kir.Id(w.queue[mod(mrel, U)][i])
						} else {
							keep = smemAt(w, mod(mrel, w.ring), i, nil) // level 0's copies
						}
						cs = append(cs, kir.Set(next[g][i], keep))
						set := kir.Set(next[g][i], em.expr(u.Value))
						if rim := rimAt(g, kir.Id(row), i); rim != nil {
							if mode == n5dEdge {
								// A select: the same instructions in every thread, no branch.
								set = kir.Set(next[g][i], &kir.Cond{C: rim, A: keep, B: em.expr(u.Value)})
							} else {
								set = &kir.If{Cond: &kir.Unary{Op: "!", X: rim}, Then: []kir.Stmt{set}}
							}
						}
						sets = append(sets, set)
					}
					compute = append(compute, sets...)
					if guard {
						valid := and(ge(kir.Id(row), kir.I(0)), lt(kir.Id(row), kir.Id("n0")))
						for a := 1; a < d; a++ {
							n := kir.Id(fmt.Sprintf("n%d", a))
							li := tileLocal(a, i)
							valid = and(valid, and(ge(coords[a], kir.I(0)), lt(coords[a], n)))
							if h[a] > 0 {
								valid = and(valid, and(ge(li, kir.I(h[a]*t)), lt(li, kir.I(cd[a]*bsize[a]-h[a]*t))))
							}
						}
						cs = append(cs, &kir.If{Cond: valid, Then: compute})
					} else {
						cs = append(cs, compute...)
					}
				}
				cells = append(cells, &kir.Block{Body: cs})
			}
			lvl = append(append(lvl, shf...), cells...)
			for _, u := range p.Updates {
				g := u.Grid
				for i := 0; i < NC; i++ {
					v := next[g][i]
					if t == bt {
						// Store plane m of the output if this block owns it; with vectors, each
						// aligned run of VW cells (owned together) with the run's first cell.
						if vec && i%VW != 0 {
							continue
						}
						coords := cellOf(col, i)
						coords[0] = kir.Id(row)
						idx := em0.linear(coords, nil)
						var st kir.Stmt = kir.Set(kir.At(bufName(g, Out0), idx), v)
						if vec {
							st = &kir.VecStore{Vals: next[g][i : i+VW], T: kir.FromIR(g.Type), Width: VW, Array: bufName(g, Out0), Idx: idx, Global: true}
						}
						cond := and(kir.Id(fmt.Sprintf("own_%d", i)), and(ge(kir.Id(row), kir.Id("zb")), lt(kir.Id(row), kir.Id("ze"))))
						if deferGlobal {
							// The condition implies the level is active (phased copies).
							lateStores = append(lateStores, &kir.If{Cond: cond, Then: []kir.Stmt{st}})
							continue
						}
						lvl = append(lvl, &kir.If{Cond: cond, Then: []kir.Stmt{st}})
						continue
					}
					w := win[[2]int{g.Index, t}]
					lvl = append(lvl, enter(w, mrel, i, v)...)
				}
			}
			for _, u := range p.Updates {
				lvl = append(lvl, keepD(u.Grid, t, next[u.Grid])...)
			}
			if !wave {
				for g, v := range next {
					cur[g] = v
				}
			}
			if len(lateStores) > 0 {
				late = append(late, &kir.Block{Body: append([]kir.Stmt{lvl[0]}, lateStores...)})
			}
			var cond kir.Expr = &kir.BoolLit{V: true}
			if phased {
				cond = active(t, kir.Id(row))
			}
			if live := liveAt[t]; live != nil {
				// Idle warps skip the level: what they would compute feeds no output, and
				// the cells that do read only what live warps publish (plan.Shrink).
				cond = and(live, cond)
			}
			if phased || liveAt[t] != nil {
				lvl = []kir.Stmt{lvl[0], &kir.If{Cond: cond, Then: lvl[1:]}}
			}
			loop = append(loop, &kir.Block{Body: lvl})
			if t < bt && windows && !wave {
				loop = append(loop, &kir.Barrier{Cluster: clustered})
			}
		}
		if wave {
			if !ascend {
				loop = append(loop, level0()...)
			}
			switch {
			case deferGlobal:
				loop = append(loop, &kir.ClusterArrive{})
				loop = append(loop, late...)
				loop = append(loop, &kir.ClusterWait{})
			case windows:
				loop = append(loop, &kir.Barrier{Cluster: clustered})
			}
		}
		return loop
	}
	// Planes zb-n5dStart .. ze+L*bt-1 in whole rounds of 2U copies; the last round may run past
	// the end, reading clamped planes and storing nothing. (Copies under a condition would put
	// barriers inside it, which some OpenCL compilers mishandle.) For bt <= 2, three phases: a
	// head whose copies skip the levels that have no needed plane yet, an inner loop of rounds
	// where every level is active, and a tail that skips the levels already past their last
	// needed plane. Deeper blocks run one loop unless the plan says phased: their unrolled
	// rounds are long, and three of them overflow the instruction cache (measured on the H100:
	// 6-23% slower at bt 3-12 in 2D and 3D, while bt = 2 gains 3-5% on the 3D boxes; later
	// star3d1r gained 6% at bt=4, chunk 80, the 2D stencils lost 5-26%).
	phases := pl.N5DPhased(bt)
	// The first plane any output needs is zb-R*bt (level 0's reach over bt levels); in wave
	// order a level lags L = R+1 planes, so level bt's last output comes L*bt planes after the
	// loaded one, but nothing before zb-R*bt is ever needed: the single loop of deep blocks
	// starts there, bt planes later than the lag alone would say (star3d1r +5%, the 2D
	// stencils +2% on the H100). The phased loops of shallow blocks skip inactive levels at
	// the head anyway; starting them later measured 6% slower on the 3D boxes at bt=2 (the
	// same rounds, but the compiler's registers moved), so they keep zb-L*bt.
	start := n5dStart(R, L, bt)
	first := kir.Bin("-", kir.Id("zb"), kir.I(start))
	end := kir.Add(kir.Id("ze"), kir.I(L*bt))
	rounds := func(from, to kir.Expr, mode n5dMode, phased bool) kir.Stmt {
		var round []kir.Stmt
		for r := 0; r < copies; r++ {
			round = append(round, &kir.Block{Body: append([]kir.Stmt{&kir.Decl{Name: "jr", Type: kir.I32, Init: kir.Add(kir.Id("j"), kir.I(r))}}, bodyAt(r, mode, phased)...)})
		}
		return &kir.For{Var: "j", From: from, To: to, Step: copies, Body: round}
	}
	// Every level is active from plane zb+L*bt-slack on (level bt is the last to start) and
	// up to ze+R*bt+(L-R)-1 (level 1 is the first to stop; all of them at ze+R*bt-1 when L = R).
	headRounds := (start + L*bt - slack + copies - 1) / copies
	decl("jh", kir.I32, kir.Add(first, kir.I(headRounds*copies)))
	inner := &kir.Binary{Op: "/", X: kir.Max(kir.Bin("-", kir.Add(kir.Id("ze"), kir.I(R*bt+L-R)), kir.Id("jh")), kir.I(0)), Y: kir.I(copies)}
	decl("jt", kir.I32, kir.Add(kir.Id("jh"), kir.Mul(kir.I(copies), inner)))
	loop := func(mode n5dMode) []kir.Stmt {
		if !phases {
			return []kir.Stmt{rounds(first, end, mode, false)}
		}
		return []kir.Stmt{
			rounds(first, kir.Min(kir.Id("jh"), end), mode, true),
			rounds(kir.Id("jh"), kir.Id("jt"), mode, false),
			rounds(kir.Id("jt"), end, mode, true),
		}
	}
	// Blocks whose planes and columns, halos included, all lie inside the interior (nearly
	// all of them) skip the fixed rim's checks: the condition is uniform over the block, so
	// the barriers inside both loops are reached by all of its threads.
	rim := make([]int, d)
	for _, u := range p.Updates {
		for a := range rim {
			rim[a] = max(rim[a], u.Grid.Rim[a])
		}
	}
	if clustered && shElems > 0 {
		// Every block of the cluster must have started before any stores into its shared
		// memory. (Blocks of a cluster may take different branches below: each runs the same
		// rounds, so they meet at the same cluster barriers.)
		body = append(body, &kir.Barrier{Cluster: true})
	}
	// The planes a chunk keeps from the streaming axis's ends to run without the rim's checks.
	fastLo, fastHi := n5dRimMargins(p, pl, bt)
	if n5dHasFastLoop(p) { // nonzero(rim) && !guard
		inside, planes := n5dInside(p, pl, lay, rim, tileLo, fastLo, fastHi)
		// The few blocks on the rim run one phased loop, to keep the code small.
		var rest []kir.Stmt = []kir.Stmt{rounds(first, end, n5dChecked, phases)}
		if edges {
			// Blocks on an in-plane edge whose planes are inside (a sixth of the 3D tiles at
			// AN5D's sizes) run one unguarded loop with selects for their rim columns.
			rest = []kir.Stmt{&kir.If{Cond: planes, Then: []kir.Stmt{rounds(first, end, n5dEdge, false)}, Else: rest}}
		}
		body = append(body, &kir.If{Cond: inside, Then: loop(n5dFast), Else: rest})
	} else {
		body = append(body, loop(n5dChecked)...)
	}
	if D > 0 {
		// Nothing may land in shared memory after the block has left it.
		body = append(body, &kir.AsyncWait{Pending: 0})
	}
	if rimCut {
		// The pieces' bounds are the first and last planes of a chunk that the test above
		// lets run without the rim's checks.
		body = rimPieces(body, blockAt(chunkDim), kir.I(fastLo), kir.Bin("-", kir.Id("n0"), kir.I(fastHi)))
	}
	if pl.Chain {
		reach := n5dChainReaches(lay, pl, shape[0], chunk, rimLo, rimHi, rimBlocks, chunkDim)
		wait, signal := n5dChain(d, blockAt, reach)
		pre = append(pre, wait)
		body = append(body, signal)
		k.Params = append(k.Params, kir.Param{Name: "chainflags", Type: kir.U32, Pointer: true},
			kir.Param{Name: "chainepoch", Type: kir.U32}, kir.Param{Name: "chainwait", Type: kir.U32})
		args = append(args, Arg{Kind: ArgChainFlags}, Arg{Kind: ArgChainEpoch}, Arg{Kind: ArgChainWait})
		k.Chained = true
	}
	k.Body = append(append(sizes, pre...), body...)
	if shElems > 0 {
		k.DynShared = kir.FromIR(shType)
	}
	grid := [3]int{1, 1, 1}
	for a := 1; a < d; a++ {
		grid[d-1-a] = lay.Blocks(a, shape[a])
	}
	if clustered {
		k.Cluster = [3]int{1, 1, 1}
		for a := 1; a < d; a++ {
			k.Cluster[d-1-a] = cd[a]
		}
	}
	grid[chunkDim] = N5DChunks(shape[0], chunk, rimLo, rimHi, rimBlocks)
	return builtKernel{k: k, launch: Launch{Kernel: name, Grid: grid, Block: block, Args: args, Steps: bt, Shared: shared, Chain: pl.Chain}}, shared, nil
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
		out := lay.Out[a]
		if pl.Shfl && a == lay.X {
			out *= lay.Tiles
		}
		reach = append(reach, max(1, ceilDiv(lay.Steps*lay.Reach[a], out)))
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
		// j3d27pt's kernel 7% slower on the H100.)
		n := kir.Id(fmt.Sprintf("n%d", lay.X))
		aligned := []kir.Expr{&kir.Binary{Op: "==", X: kir.Bin("%", n, kir.I(pl.N5DAlign())), Y: kir.I(0)}}
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
	gx, rs, rowLen  int  // ghost places on either side of a clustered row, places per run, row length
	tstride         []int
	// plane is the words of one plane, pad the room for halo threads' reads on each side,
	// stride the words from one plane to the next.
	plane, pad, stride int
}

// n5dPlanesOf lays out the shared planes of an n5d kernel with layout lay.
func n5dPlanesOf(p *ir.Program, pl plan.Plan, lay N5DLayout) n5dPlanes {
	d, h, X, RX, RY, bsize, cd := lay.Dims, lay.Reach, lay.X, lay.RX, lay.RY, lay.BlockCells, lay.Cluster
	shfl := pl.Shfl
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
	// (docs/performance.md): split gains 4-11% on the first-order stencils, loses 3-16% on
	// those others; plan.Split asks for split on them too.
	TX := bsize[X] / RX
	split := RX > 1 && !shfl && (pl.Split || h[X] < 2 && !(d == 3 && offPlaneInPlane))
	// A row clustered along x has gx ghost places on either side for the neighbours' cells
	// (split: thread places in each run of RS words; side by side: cells). Ghost rows along y
	// lie in the plane's pad.
	gx := 0
	if cd[X] > 1 {
		gx = h[X]
		if split {
			gx = (h[X] + RX - 1) / RX
		}
	}
	RS := TX + 2*gx
	rowLen := bsize[X] + 2*gx
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
	return n5dPlanes{inPlaneReads: inPlaneReads, offPlaneInPlane: offPlaneInPlane, tx: TX, split: split, gx: gx, rs: RS,
		rowLen: rowLen, tstride: tstride, plane: plane, pad: pad, stride: stride}
}
