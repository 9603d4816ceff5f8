package lower

import (
	"fmt"
	"strings"

	"tempest/internal/ir"
	"tempest/internal/kir"
	"tempest/internal/plan"
)

// n5dBuilder is one n5d kernel under construction, for n5dKernel's stages: the layout it is
// built on, the kernel's statements so far, and what each stage declares for those after it.
// The stages declare the kernel's variables in the body as they go, so their order is the
// order of the generated kernel's text.
type n5dBuilder struct {
	p     *ir.Program
	shape []int
	pl    plan.Plan
	wide  bool
	bt    int
	lay   N5DLayout
	sp    n5dPlanes
	R     int // the reach along the streamed axis
	NC    int // cells per thread (RX x RY)

	k     *kir.Kernel
	args  []Arg
	chunk int // planes per block along the streamed axis
	// sizes are the sizes declared as constants (plan.ConstSize), pre what comes ahead of
	// everything else (edgesfirst's block order, the chain's wait), body the rest.
	sizes, pre, body []kir.Stmt
	em0              *emitter // addresses of global elements

	// The tile geometry (coordinates): edgeAt is the block's place in edgesfirst's order,
	// local[a] the thread's first cell in the block along a, col[a][i] cell i's coordinate along a (possibly
	// outside the domain) and ccol[a][i] the same clamped into the domain, for loads.
	edgeAt    [3]kir.Expr
	local     []kir.Expr
	col, ccol [][]kir.Expr
	// liveAt[t] says the thread's warp computes level t (plan.Shrink; nil: every warp does).
	liveAt map[int]kir.Expr
	// The chunk (chunkBounds): rimCut says it runs in pieces (rimPieces); rimBlocks, that
	// blocks of their own take the planes within rimLo and rimHi of the ends (N5DRimBlocks).
	rimCut, rimBlocks bool
	rimLo, rimHi      int
	// rimCol[g][i] says cell i's column lies in g's fixed rim (or outside the domain).
	rimCol map[*ir.Grid][]kir.Expr

	// How the program streams (streaming): guard says reads of other grids are guarded;
	// assoc, that levels add partial sums (sums) plane by plane; shType is the shared planes'
	// one element type; U the planes a level reads (2R+1), copies those of an unrolled
	// round, dbl those of a double-buffered window; wave and ascend the levels' order (plan.Wave,
	// plan.Ascend) and L the lag between levels.
	guard, assoc      bool
	sums              []n5dSum
	shType            ir.Type
	U, copies, dbl, L int
	wave, ascend      bool

	// The storage (storage, asyncRing): ringWin is level 0's ring of shared planes that
	// asynchronous copies fill (0: none), win each grid's and level's window, shElems and
	// shared the shared memory in elements and bytes, PD the planes prefetched into registers,
	// D the planes copied ahead
	// asynchronously into rings of S slots, windows that other threads read shared planes
	// (barriers), private that the copies have rings of their own (at ringBase, ringPlane
	// elements a slot), edges that blocks on an in-plane edge run the edge loop (runCol its
	// clamped runs), read[i] that other threads read cell i.
	ringWin                      int
	win                          map[[2]int]*n5dWindow
	shElems, shared              int
	PD                           int
	D, S                         int
	windows, private, edges      bool
	runCol                       map[int]kir.Expr
	threads, ringPlane, ringBase int
	ringOf                       map[*ir.Grid]int
	read                         []bool
}

// n5dWindow is a level's storage of a state grid's planes.
type n5dWindow struct {
	queue [][]string // queue[k][i]: register k of cell i's queue of U planes (not in assoc mode)
	sh    int        // element offset of its planes in smem
	ring  int        // shared planes: 0, dbl (2: double-buffered, or U), the round or ringWin
	every bool       // the ring holds every plane (the round or ringWin), not only the latest
}

// newN5DBuilder starts p's n5d kernel name of bt steps under pl: its layout, its parameters
// (the program's, then the chunk) and its launch bounds.
func newN5DBuilder(p *ir.Program, shape []int, pl plan.Plan, wide bool, bt int, name string) (*n5dBuilder, error) {
	lay, err := N5DLayoutOf(p, pl, bt)
	if err != nil {
		return nil, err
	}
	b := &n5dBuilder{p: p, shape: shape, pl: pl, wide: wide, bt: bt, lay: lay, R: lay.Reach[0], NC: lay.RX * lay.RY}
	ps, args := params(p, readRoles)
	if pl.Align {
		ps, args = pitchParam(ps, args)
	}
	ps = append(ps, kir.Param{Name: "chunk", Type: kir.I32})
	b.chunk = pl.ChunkOf(shape[0])
	b.args = append(args, Arg{Kind: ArgConst, Value: int64(b.chunk)})
	if pl.Ranges {
		ps = append(ps, kir.Param{Name: "zlo", Type: kir.I32}, kir.Param{Name: "zhi", Type: kir.I32})
		b.args = append(b.args, Arg{Kind: ArgRowsLo}, Arg{Kind: ArgRowsHi})
	}
	b.k = &kir.Kernel{Name: name, Params: ps}
	if bt < pl.BT || pl.Threads() > 512 {
		// A shallower remainder kernel can take more registers than the main one (grad's
		// bt=1 kernel 80 against the bt=3 kernel's 64 or fewer, so 1024-thread blocks could not
		// launch it): launch bounds keep it within the block. Not on the main kernel of up to
		// 512 threads: there they override the plan's register cap (maxregs), which costs.
		// Main kernels of
		// 1024 threads need them: deep ones take more than the 64 registers a thread of such a
		// block can have (star3d1r at bt=5, 64 x 32 cells: 71 registers, and the launch
		// failed).
		b.k.MaxThreads = pl.Threads()
	}
	b.sp = n5dPlanesOf(p, lay)
	b.em0 = b.newEm(nil, nil, nil)
	return b, nil
}

// decl declares a variable of the kernel at the end of its body so far and names it.
func (b *n5dBuilder) decl(name string, t kir.Type, init kir.Expr) kir.Expr {
	b.body = append(b.body, &kir.Decl{Name: name, Type: t, Init: init})
	return kir.Id(name)
}

// newEm is an emitter for cells at coords (step: steps done before the level).
func (b *n5dBuilder) newEm(coords []kir.Expr, step kir.Expr, out *[]kir.Stmt) *emitter {
	return &emitter{p: b.p, wide: b.wide, fast: b.pl.FastMath, coords: coords, step: step, lets: map[*ir.Let]string{}, out: out, pitched: b.pl.Align}
}

// constSizes declares the sizes as constants of the kernel (plan.ConstSize; the arguments
// stay, unread), ahead of everything else: the pieces of rimcut read n0 outside the body.
func (b *n5dBuilder) constSizes() {
	if b.pl.ConstSize {
		b.sizes = constSizeDecls(b.k, b.shape, b.pl.Align)
	}
}

// constSizeDecls renames kernel k's size parameters n0, n1, ... (and with pitched, its row
// pitch) to n0_arg, ... (the launch still passes them, unread) and returns their declarations
// as constants of shape, which go ahead of everything that reads them (plan.ConstSize).
func constSizeDecls(k *kir.Kernel, shape []int, pitched bool) []kir.Stmt {
	var decls []kir.Stmt
	constant := func(n string, v int) {
		for j := range k.Params {
			if k.Params[j].Name == n {
				k.Params[j].Name = n + "_arg"
			}
		}
		decls = append(decls, &kir.Decl{Name: n, Type: kir.I32, Init: kir.I(v), Const: true})
	}
	for a := range shape {
		constant(fmt.Sprintf("n%d", a), shape[a])
	}
	if pitched {
		constant(pitchName, plan.RowPitch(shape[len(shape)-1]))
	}
	return decls
}

// lt is x < y, for the n5d kernel's conditions.
func lt(x, y kir.Expr) kir.Expr { return &kir.Binary{Op: "<", X: x, Y: y} }

// ge is x >= y.
func ge(x, y kir.Expr) kir.Expr { return &kir.Binary{Op: ">=", X: x, Y: y} }

// orKir is x || y, where nil is no condition: the rim tests are built up from none.
func orKir(x, y kir.Expr) kir.Expr {
	if x == nil {
		return y
	}
	if y == nil {
		return x
	}
	return &kir.Binary{Op: "||", X: x, Y: y}
}

// clamp clamps x into 0 .. n-1, a coordinate into the domain for loads.
func clamp(x kir.Expr, n kir.Expr) kir.Expr {
	return kir.Min(kir.Max(x, kir.I(0)), kir.Bin("-", n, kir.I(1)))
}

// cx is cell c's column along x among the thread's RX x RY cells.
func (b *n5dBuilder) cx(c int) int { return c % b.lay.RX }

// cy is cell c's row along y among the thread's RX x RY cells.
func (b *n5dBuilder) cy(c int) int { return c / b.lay.RX }

// blockAt is the block's index along launch axis i (0 = x): the launch's own, or with
// edgesfirst the place the reordering gives it (declared ahead of everything, pre).
func (b *n5dBuilder) blockAt(i int) kir.Expr {
	if b.pl.EdgesFirst {
		return b.edgeAt[i]
	}
	return &kir.Builtin{D: kir.BlockIdx, Axis: i}
}

// tileLo is the first cell of the block's tile along in-plane axis a.
func (b *n5dBuilder) tileLo(a int) kir.Expr {
	lay := b.lay
	return kir.Bin("-", kir.Mul(b.blockAt(lay.Dims-1-a), kir.I(lay.Out[a])), kir.I(lay.Before[a]))
}

// coordinates declares the thread's place in the tile geometry: with edgesfirst the block's
// place in the reordered launch (pre), and per in-plane axis
// the thread's first cell and its cells' columns, as they are and clamped, then its word in a
// shared plane (tid).
func (b *n5dBuilder) coordinates() {
	lay := b.lay
	d, X, Y := lay.Dims, lay.X, lay.Y
	if b.pl.EdgesFirst {
		b.pre, b.edgeAt = edgesFirstBlocks(d)
	}
	// Cell i of the thread's RX cells along x: local coordinate lx + i, column cx_i; likewise
	// its RY rows along y in 3D.
	b.local = make([]kir.Expr, d)
	b.col = make([][]kir.Expr, d)
	b.ccol = make([][]kir.Expr, d)
	for a := d - 1; a >= 1; a-- {
		dim := d - 1 - a
		n := kir.Id(fmt.Sprintf("n%d", a))
		cells := 1
		if a == X {
			cells = lay.RX
		} else if a == Y {
			cells = lay.RY
		}
		var l kir.Expr = &kir.Builtin{D: kir.ThreadIdx, Axis: dim}
		if cells > 1 {
			l = kir.Mul(l, kir.I(cells))
		}
		b.local[a] = b.decl(fmt.Sprintf("l%d", a), kir.I32, l)
		base := b.decl(fmt.Sprintf("c%d", a), kir.I32, kir.Add(b.tileLo(a), b.local[a]))
		for i := 0; i < cells; i++ {
			ci := base
			sfx := ""
			if cells > 1 {
				sfx = fmt.Sprintf("_%d", i)
				ci = b.decl(fmt.Sprintf("c%d%s", a, sfx), kir.I32, kir.Add(base, kir.I(i)))
			}
			b.col[a] = append(b.col[a], ci)
			b.ccol[a] = append(b.ccol[a], b.decl(fmt.Sprintf("cc%d%s", a, sfx), kir.I32, clamp(ci, n)))
		}
	}
	// tid is the thread's word in a shared plane: its row and its place in the row's runs.
	var tid kir.Expr = &kir.Builtin{D: kir.ThreadIdx, Axis: 0}
	if !b.sp.split {
		tid = b.local[X]
	}
	for a := X - 1; a >= 1; a-- {
		tid = kir.Add(kir.Mul(b.local[a], kir.I(b.sp.tstride[a])), tid)
	}
	b.decl("tid", kir.I32, tid)
}

// cellOf is cell c's coordinates from cols (col or ccol).
func (b *n5dBuilder) cellOf(cols [][]kir.Expr, c int) []kir.Expr {
	d, X, Y := b.lay.Dims, b.lay.X, b.lay.Y
	out := make([]kir.Expr, d)
	for a := 1; a < d; a++ {
		switch {
		case a == X:
			out[a] = cols[a][b.cx(c)]
		case a == Y:
			out[a] = cols[a][b.cy(c)]
		default:
			out[a] = cols[a][0]
		}
	}
	return out
}

// cellLocal is cell c's local coordinate along a.
func (b *n5dBuilder) cellLocal(a, c int) kir.Expr {
	switch {
	case a == b.lay.X && b.cx(c) > 0:
		return kir.Add(b.local[a], kir.I(b.cx(c)))
	case a == b.lay.Y && b.cy(c) > 0:
		return kir.Add(b.local[a], kir.I(b.cy(c)))
	}
	return b.local[a]
}

// owners declares own_i: cell i's column is one this block stores.
func (b *n5dBuilder) owners() {
	lay := b.lay
	for i := 0; i < b.NC; i++ {
		cell := b.cellOf(b.col, i)
		var o kir.Expr = &kir.BoolLit{V: true}
		for a := 1; a < lay.Dims; a++ {
			n := kir.Id(fmt.Sprintf("n%d", a))
			li := b.cellLocal(a, i)
			o = and(o, and(and(ge(cell[a], kir.I(0)), lt(cell[a], n)), and(ge(li, kir.I(lay.Before[a])), lt(li, kir.I(lay.Before[a]+lay.Out[a])))))
		}
		b.decl(fmt.Sprintf("own_%d", i), kir.Bool, o)
	}
}

// liveWarps declares live_t: the thread's warp has cells that feed an output at level t
// (plan.Shrink); declared only for the levels that leave some warp idle.
func (b *n5dBuilder) liveWarps() {
	b.liveAt = map[int]kir.Expr{}
	if !b.pl.Shrink {
		return
	}
	live, ok := b.pl.N5DLiveWarps(b.lay.Dims, b.lay.Reach, b.bt)
	if !ok {
		return
	}
	var lin kir.Expr = &kir.Builtin{D: kir.ThreadIdx, Axis: 0}
	if b.lay.Dims == 3 {
		lin = kir.Add(kir.Mul(&kir.Builtin{D: kir.ThreadIdx, Axis: 1}, kir.I(b.pl.BX)), lin)
	}
	wid := b.decl("wid", kir.I32, kir.Bin(">>", lin, kir.I(5)))
	last := (b.lay.Block[0]*b.lay.Block[1]+plan.WarpSize-1)/plan.WarpSize - 1
	for t, w := range live {
		var c kir.Expr = &kir.BoolLit{V: true}
		if w[0] > 0 {
			c = ge(wid, kir.I(w[0]))
		}
		if w[1] < last {
			c = and(c, lt(wid, kir.I(w[1]+1)))
		}
		if _, all := c.(*kir.BoolLit); !all {
			b.liveAt[t+1] = b.decl(fmt.Sprintf("live_%d", t+1), kir.Bool, c)
		}
	}
}

// rimMargins are the planes the rim's blocks of their own take at each end of the streamed
// axis (Launch.Rim), zero without them.
func (b *n5dBuilder) rimMargins() [2]int {
	if !b.rimBlocks {
		return [2]int{}
	}
	return [2]int{b.rimLo, b.rimHi}
}

// chunkDim is the launch axis of the chunks along the streamed axis.
func (b *n5dBuilder) chunkDim() int { return b.lay.Dims - 1 }

// chunkBounds declares the block's planes zb .. ze-1 along the streamed axis.
func (b *n5dBuilder) chunkBounds() {
	p, pl := b.p, b.pl
	// rimCut: the chunk runs in pieces (rimPieces), this one of planes pb .. pe-1.
	b.rimCut = pl.RimCut && n5dHasFastLoop(p)
	// rimBlocks: where the axis has planes between the margins (n0 > lo+hi, a test the
	// kernel makes, so that it serves every size), chunk 0 is the planes before lo, the last
	// chunk those from n0-hi on, and the chunks between start at lo, chunk planes each, the
	// last of them cut at n0-hi; otherwise the chunks are the usual ones.
	b.rimLo, b.rimHi, b.rimBlocks = N5DRimBlocks(p, pl, b.bt)
	rimLo, rimHi := b.rimLo, b.rimHi
	switch {
	case b.rimCut:
		b.decl("zb", kir.I32, kir.Id("pb"))
		b.decl("ze", kir.I32, kir.Id("pe"))
	case b.rimBlocks:
		blk := b.blockAt(b.chunkDim())
		eq := func(x, y kir.Expr) kir.Expr { return &kir.Binary{Op: "==", X: x, Y: y} }
		cond := func(c, x, y kir.Expr) kir.Expr { return &kir.Cond{C: c, A: x, B: y} }
		split := b.decl("rimsplit", kir.Bool, &kir.Binary{Op: ">", X: kir.Id("n0"), Y: kir.I(rimLo + rimHi)})
		first := eq(blk, kir.I(0))
		last := eq(blk, kir.Bin("-", &kir.Builtin{D: kir.GridDim, Axis: b.chunkDim()}, kir.I(1)))
		top := kir.Bin("-", kir.Id("n0"), kir.I(rimHi))
		if !pl.Ranges {
			b.decl("zb", kir.I32, cond(split, cond(first, kir.I(0), cond(last, top, kir.Add(kir.I(rimLo), kir.Mul(kir.Bin("-", blk, kir.I(1)), kir.Id("chunk"))))),
				kir.Mul(blk, kir.Id("chunk"))))
			b.decl("ze", kir.I32, cond(split, cond(first, kir.I(rimLo), cond(last, kir.Id("n0"), kir.Min(kir.Add(kir.I(rimLo), kir.Mul(blk, kir.Id("chunk"))), top))),
				kir.Min(kir.Add(kir.Id("zb"), kir.Id("chunk")), kir.Id("n0"))))
			break
		}
		// With ranges the rim's blocks take the range's planes before rimLo and from n0-rimHi
		// on (zrl and zrh, cut to the range: either block may be empty and return at once),
		// and the chunks between start at zrl (N5DRangeChunks counts them so).
		lo, hi := kir.Id("zlo"), kir.Id("zhi")
		zrl := b.decl("zrl", kir.I32, kir.Min(kir.Max(kir.I(rimLo), lo), hi))
		zrh := b.decl("zrh", kir.I32, kir.Max(kir.Min(top, hi), zrl))
		b.decl("zb", kir.I32, cond(split, cond(first, lo, cond(last, zrh, kir.Add(zrl, kir.Mul(kir.Bin("-", blk, kir.I(1)), kir.Id("chunk"))))),
			kir.Add(lo, kir.Mul(blk, kir.Id("chunk")))))
		b.decl("ze", kir.I32, cond(split, cond(first, zrl, cond(last, hi, kir.Min(kir.Add(zrl, kir.Mul(blk, kir.Id("chunk"))), zrh))),
			kir.Min(kir.Add(kir.Id("zb"), kir.Id("chunk")), hi)))
		b.body = append(b.body, &kir.If{Cond: &kir.Binary{Op: ">=", X: kir.Id("zb"), Y: kir.Id("ze")}, Then: []kir.Stmt{&kir.Return{}}})
	case b.pl.Ranges:
		b.decl("zb", kir.I32, kir.Add(kir.Id("zlo"), kir.Mul(b.blockAt(b.chunkDim()), kir.Id("chunk"))))
		b.decl("ze", kir.I32, kir.Min(kir.Add(kir.Id("zb"), kir.Id("chunk")), kir.Id("zhi")))
	default:
		b.decl("zb", kir.I32, kir.Mul(b.blockAt(b.chunkDim()), kir.Id("chunk")))
		b.decl("ze", kir.I32, kir.Min(kir.Add(kir.Id("zb"), kir.Id("chunk")), kir.Id("n0")))
	}
}

// rimColumns declares rimc_<g>_i: cell i's column lies in g's fixed rim (or outside the
// domain).
func (b *n5dBuilder) rimColumns() {
	b.rimCol = map[*ir.Grid][]kir.Expr{}
	for _, u := range b.p.Updates {
		g := u.Grid
		for i := 0; i < b.NC; i++ {
			cell := b.cellOf(b.col, i)
			var rc kir.Expr
			for a := 1; a < b.lay.Dims; a++ {
				if g.Rim[a] > 0 {
					n := kir.Id(fmt.Sprintf("n%d", a))
					rc = orKir(rc, orKir(lt(cell[a], kir.I(g.Rim[a])), ge(cell[a], kir.Bin("-", n, kir.I(g.Rim[a])))))
				}
			}
			if rc != nil {
				b.rimCol[g] = append(b.rimCol[g], b.decl(fmt.Sprintf("rimc_%s_%d", g.Name, i), kir.Bool, rc))
			}
		}
	}
}

// rimAt is the condition that cell i of plane m lies in g's fixed rim, in a body of the given
// mode: none in blocks inside the interior (n5dFast), only the columns' in the edge loop,
// whose planes are inside (n5dEdge), nil where there is no rim.
func (b *n5dBuilder) rimAt(mode n5dMode, g *ir.Grid, m kir.Expr, i int) kir.Expr {
	switch mode {
	case n5dFast:
		return nil
	case n5dEdge:
		if rc := b.rimCol[g]; rc != nil {
			return rc[i]
		}
		return nil
	}
	var r kir.Expr
	if g.Rim[0] > 0 {
		r = orKir(lt(m, kir.I(g.Rim[0])), ge(m, kir.Bin("-", kir.Id("n0"), kir.I(g.Rim[0]))))
	}
	if rc := b.rimCol[g]; rc != nil {
		r = orKir(rc[i], r)
	}
	return r
}

// inputAt reads plane z of g's input at cell i's column as it is (z inside the domain).
func (b *n5dBuilder) inputAt(g *ir.Grid, z kir.Expr, i int) kir.Expr {
	pos := b.cellOf(b.ccol, i)
	pos[0] = z
	return kir.At(bufName(g, In0), b.em0.linear(pos, nil))
}

// loadAt reads plane z (clamped into the domain) of g's input at cell i's column.
func (b *n5dBuilder) loadAt(g *ir.Grid, z kir.Expr, i int) kir.Expr {
	return b.inputAt(g, clamp(z, kir.Id("n0")), i)
}

// streaming settles how the program streams through the planes, or says why it cannot under
// the plan: partial sums or register queues, the shared planes' element type, and the order
// and lag of the levels.
func (b *n5dBuilder) streaming() error {
	p, pl, R := b.p, b.pl, b.R
	// Guard-free halo threads need every read to come from registers or shared memory.
	b.guard = n5dGuarded(p)
	b.sums, b.assoc = n5dAssociative(p)
	b.assoc = b.assoc && n5dPartialSums(p)
	if N5DRound(p, pl)%2 != 0 && !N5DShortRound(p) {
		return fmt.Errorf("plan %s: %s reads other planes' in-plane neighbours without partial sums, so each level keeps a ring of every plane, which a round of %d planes cannot hold (a plane is refilled while its neighbours still read it); drop unroll", pl, p.Name, N5DRound(p, pl))
	}
	// One element type for every state grid: all planes live in one dynamic shared array, so
	// blocks may use the opt-in maximum (227 KB on Hopper) rather than 48 KB of static arrays.
	for i, u := range p.Updates {
		if i == 0 {
			b.shType = u.Grid.Type
		} else if u.Grid.Type != b.shType {
			return fmt.Errorf("plan %s: n5d needs state grids of one element type (%s is %s, %s is %s)", pl, p.Updates[0].Grid.Name, b.shType, u.Grid.Name, u.Grid.Type)
		}
	}
	b.U = 2*R + 1
	b.copies = N5DRound(p, pl)
	b.dbl = pl.N5DPlanes(R) // the planes of windows that would be double-buffered
	// wave: levels run deepest first, each one plane further behind the level below (lag
	// R+1 instead of R), so that all of them read shared planes published in the previous
	// copy and one barrier per plane suffices (Schafer and Fey's pipelined wavefront).
	b.wave = pl.Wave
	b.L = pl.N5DLag(R)
	// ascend: wave order with the levels lowest first, each R planes behind the level below
	// and reading the plane it published R copies earlier (plan.Ascend): stars only, whose
	// levels read in-plane neighbours on the centre plane alone.
	b.ascend = b.wave && pl.Ascend
	if b.ascend && b.sp.offPlaneInPlane {
		return fmt.Errorf("plan %s: ascend reads each level's in-plane neighbours on the centre plane only, R planes after it was published, but %s reads in-plane neighbours on other planes too (a box); drop ascend", pl, p.Name)
	}
	return nil
}

// dName names the register of grid g's cell i at level lv kept from the previous copy (wave
// order with partial sums).
func (b *n5dBuilder) dName(g *ir.Grid, lv, i int) string {
	return fmt.Sprintf("d_%s_%d_%d", g.Name, lv, i)
}

// accName names accumulator k of grid g's cell i at level t (partial sums).
func (b *n5dBuilder) accName(g *ir.Grid, t, k, i int) string {
	return fmt.Sprintf("acc_%s_%d_%d_%d", g.Name, t, k, i)
}

// vName names grid g's value of cell i at level t, just computed in a copy.
func (b *n5dBuilder) vName(g *ir.Grid, t, i int) string {
	return fmt.Sprintf("v_%s_%d_%d", g.Name, t, i)
}

// pfName names prefetch register k of grid g's cell i (one per cell where PD is 1).
func (b *n5dBuilder) pfName(g *ir.Grid, k, i int) string {
	if b.PD == 1 {
		return fmt.Sprintf("pf_%s_%d", g.Name, i)
	}
	return fmt.Sprintf("pf_%s_%d_%d", g.Name, k, i)
}

// storage declares the levels' registers and lays out their shared planes: the d_ registers
// of wave order with partial sums, each level's window (its register queue and its shared
// planes) and the partial sums' accumulators.
func (b *n5dBuilder) storage() {
	p, pl, bt, NC, U := b.p, b.pl, b.bt, b.NC, b.U
	if b.wave && b.assoc {
		for _, u := range p.Updates {
			for lv := 0; lv < bt; lv++ {
				for i := 0; i < NC; i++ {
					b.decl(b.dName(u.Grid, lv, i), kir.FromIR(u.Grid.Type), zeroOf(kir.FromIR(u.Grid.Type)))
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
	if !b.assoc && !b.sp.offPlaneInPlane {
		b.ringWin = pl.N5DStarRing(b.R, b.copies)
	}
	b.win = map[[2]int]*n5dWindow{}
	for _, u := range p.Updates {
		g := u.Grid
		t := kir.FromIR(g.Type)
		for lv := 0; lv < bt; lv++ {
			w := &n5dWindow{}
			if !b.assoc && !(lv == 0 && b.ringWin > 0) {
				for k := 0; k < U; k++ {
					var regs []string
					for i := 0; i < NC; i++ {
						nm := fmt.Sprintf("q_%s_%d_%d_%d", g.Name, lv, k, i)
						regs = append(regs, nm)
						b.decl(nm, t, zeroOf(t))
					}
					w.queue = append(w.queue, regs)
				}
			}
			switch {
			case lv == 0 && b.ringWin > 0:
				w.ring, w.every = b.ringWin, true
			case !b.sp.inPlaneReads[g]:
			case b.assoc:
				w.ring = b.dbl
			case b.sp.offPlaneInPlane:
				w.ring, w.every = b.copies, true
			default:
				w.ring = b.dbl
			}
			if w.ring > 0 {
				w.sh = b.shElems
				b.shElems += w.ring * b.sp.stride
				b.shared += w.ring * b.sp.stride * g.Type.Size()
			}
			b.win[[2]int{g.Index, lv}] = w
		}
	}
	if b.assoc {
		for _, u := range p.Updates {
			t := kir.FromIR(u.Value.Type())
			for lv := 1; lv <= bt; lv++ {
				for k := 0; k < U; k++ {
					for i := 0; i < NC; i++ {
						b.decl(b.accName(u.Grid, lv, k, i), t, zeroOf(t))
					}
				}
			}
		}
	}
}

// prefetch settles the prefetch: PD planes in flight per cell, plane x in register x mod PD
// (static, since PD divides the 2U copies of a round), so a load has PD planes of work to
// arrive in.
func (b *n5dBuilder) prefetch() error {
	b.PD = n5dPrefetch(b.pl)
	if b.copies%b.PD != 0 {
		var fits []string
		for _, f := range []int{1, 2, 3, 5} {
			if b.copies%f == 0 {
				fits = append(fits, fmt.Sprintf("pf=%d", f))
			}
		}
		return fmt.Errorf("plan %s: the prefetch distance pf must divide the %d planes of an unrolled round (reach %d along %s); try %s", b.pl, b.copies, b.R, b.p.Axes[0], strings.Join(fits, " or "))
	}
	return nil
}

// asyncRing settles the asynchronous copies, or says why the plan cannot have them, and lays
// out their ring: instead of prefetch registers, a ring of S >= D+1 shared planes per state
// grid (plan.N5DRing) that asynchronous copies fill D planes ahead. Plane first+x (first: the
// loop's first plane) lives in slot x mod S, static since S divides the round. Each thread
// copies and reads only its own cells, so the ring needs no barrier: the thread's own wait
// makes its copies visible to it. A slot is refilled at least one copy after it was read (the
// copy for plane jr+D goes to the slot of plane jr+D-S), with the plane's barrier between
// them where the kernel has shared planes. A thread's cells lie in runs of VW, each run of
// every thread side by side, so that a run is one aligned 4-, 8- or 16-byte copy and one
// vector read (whole rows of a warp: no bank conflicts beyond the vector's own phases). It
// also settles the edge loop, whose clamped runs (edgeRuns) come before the ring's
// declarations.
func (b *n5dBuilder) asyncRing() error {
	pl, copies := b.pl, b.copies
	b.D, b.S = pl.Async, pl.N5DRing(copies)
	if b.ringWin > 0 {
		b.S = b.ringWin
	}
	if b.D >= copies {
		return fmt.Errorf("plan %s: async=%d copies further ahead than the %d planes of an unrolled round; use async=%d or less", pl, b.D, copies, copies-1)
	}
	if b.D > 0 && b.PD > 1 {
		return fmt.Errorf("plan %s: async replaces the register prefetch; give pf or async, not both", pl)
	}
	b.windows = b.shElems > 0             // shared planes that other threads read: barriers
	b.private = b.D > 0 && b.ringWin == 0 // the copies' own ring
	// edges: blocks on an in-plane edge whose planes are inside run the edge loop (plan.Edges).
	b.edges = pl.Edges && N5DEdges(b.p, pl)
	b.edgeRuns()
	b.threads = b.lay.Block[0] * b.lay.Block[1]
	b.ringPlane = b.NC * b.threads
	b.ringOf = map[*ir.Grid]int{}
	for n, u := range b.p.Updates {
		b.ringOf[u.Grid] = n
	}
	if b.private {
		// The ring starts 16-byte aligned (the dynamic array is), for 16-byte copies.
		al := max(16/b.shType.Size(), 1)
		b.shElems = (b.shElems + al - 1) / al * al
		b.ringBase = b.shElems
		b.shElems += len(b.p.Updates) * b.S * b.ringPlane
		b.shared = b.shElems * b.shType.Size()
		var tl kir.Expr = &kir.Builtin{D: kir.ThreadIdx, Axis: 0}
		if b.lay.Dims == 3 {
			tl = kir.Add(kir.Mul(&kir.Builtin{D: kir.ThreadIdx, Axis: 1}, kir.I(b.lay.Block[0])), tl)
		}
		b.decl("tlin", kir.I32, tl)
		// The copies address the ring from the thread's first element: one 32-bit register.
		b.body = append(b.body, &kir.SharedBase{Name: "sring", Idx: kir.Add(kir.Mul(kir.Id("tlin"), kir.I(b.lay.VW)), kir.I(b.ringBase))})
	}
	return nil
}

// edgeRuns declares the clamped position of each aligned run of VW cells along x for the edge
// loop (runOf). Padded rows (plan.Align) clamp to the pitch: a run past an odd row's end then
// reads and writes the row's padding, which holds no cell (the cells of such a run outside the
// domain take the rim's select, and nothing inside reads them).
func (b *n5dBuilder) edgeRuns() {
	b.runCol = map[int]kir.Expr{}
	X, VW := b.lay.X, b.lay.VW
	if !b.edges || VW <= 1 {
		return
	}
	n := kir.Id(fmt.Sprintf("n%d", X))
	if b.pl.Align {
		n = kir.Id(pitchName)
	}
	for i := 0; i < b.lay.RX; i += VW {
		hi := kir.Bin("-", n, kir.I(VW))
		b.runCol[i] = b.decl(fmt.Sprintf("cv%d_%d", X, i), kir.I32, kir.Min(kir.Max(b.col[X][i], kir.I(0)), hi))
	}
}

// runOf is the clamped position of the aligned run of VW cells that starts at cell i (edge
// loop): a run lies wholly inside or wholly outside the domain (rows of a multiple of VW
// cells), so the clamped run is in the domain and aligned; in padded rows (plan.Align) a run
// may reach past the row's end into its padding, and the clamped run is in the row's pitch.
func (b *n5dBuilder) runOf(i int) []kir.Expr {
	pos := b.cellOf(b.ccol, i)
	pos[b.lay.X] = b.runCol[b.cx(i)]
	return pos
}

// runAt is the position of the aligned run of VW cells that starts at cell i, as a vector
// access takes it: as it is in blocks inside the interior, clamped (runOf) in the edge loop.
func (b *n5dBuilder) runAt(i int, edge bool) []kir.Expr {
	if edge {
		return b.runOf(i)
	}
	return b.cellOf(b.col, i)
}

// ringOff is cell i's element in slot slot of g's ring, past the thread's first one.
func (b *n5dBuilder) ringOff(g *ir.Grid, slot, i int) int {
	VW := b.lay.VW
	return b.ringOf[g]*b.S*b.ringPlane + slot*b.ringPlane + i/VW*b.threads*VW + i%VW
}

// ringAt addresses cell i's element in slot slot of g's ring.
func (b *n5dBuilder) ringAt(g *ir.Grid, slot, i int) kir.Expr {
	return kir.Add(kir.Mul(kir.Id("tlin"), kir.I(b.lay.VW)), kir.I(b.ringBase+b.ringOff(g, slot, i)))
}

// loadIdx is the element of g's input holding plane z (clamped into the domain) at cell
// i's column: clamped for a scalar access (w == 1), the run's position (runAt) for a vector
// of w cells.
func (b *n5dBuilder) loadIdx(z kir.Expr, i, w int, edge bool) kir.Expr {
	pos := b.cellOf(b.ccol, i)
	if w > 1 {
		pos = b.runAt(i, edge)
	}
	pos[0] = clamp(z, kir.Id("n0"))
	return b.em0.linear(pos, nil)
}

// asyncPlane copies plane z of every state grid into ring slot slot and commits it as one
// group. The edge loop's vector copies take each run from its clamped position, as its
// vector loads do: a run outside the domain then copies an in-domain run, whose values
// feed only rim cells.
func (b *n5dBuilder) asyncPlane(z kir.Expr, slot int, vec, edge bool) []kir.Stmt {
	var out []kir.Stmt
	for _, u := range b.p.Updates {
		g := u.Grid
		w := 1
		if vec && b.private {
			w = b.lay.VW
		}
		for i := 0; i < b.NC; i += w {
			var dst int
			if b.private {
				dst = b.ringOff(g, slot, i)
			} else {
				dst = b.smemWord(b.win[[2]int{g.Index, 0}], slot, i, nil)
			}
			out = append(out, &kir.AsyncCopy{T: kir.FromIR(g.Type), Width: w, Src: bufName(g, In0), SrcIdx: b.loadIdx(z, i, w, edge), IdxType: b.em0.idxType(), DstBase: "sring", DstIdx: kir.I(dst)})
		}
	}
	return append(out, &kir.AsyncCommit{})
}

// firstLoads starts the loop's loads ahead of its first plane: D planes' asynchronous copies,
// or PD planes into the prefetch registers.
func (b *n5dBuilder) firstLoads() {
	start := n5dStart(b.R, b.L, b.bt)
	if b.D > 0 && !b.private {
		// The copies address level 0's planes from the thread's word in them.
		b.body = append(b.body, &kir.SharedBase{Name: "sring", Idx: kir.Id("tid")})
	}
	if b.D > 0 {
		for k := 0; k < b.D; k++ {
			b.body = append(b.body, b.asyncPlane(kir.Bin("-", kir.Id("zb"), kir.I(start-k)), k, false, false)...)
		}
		return
	}
	for _, u := range b.p.Updates {
		for k := 0; k < b.PD; k++ {
			for i := 0; i < b.NC; i++ {
				b.decl(b.pfName(u.Grid, k, i), kir.FromIR(u.Grid.Type), b.loadAt(u.Grid, kir.Bin("-", kir.Id("zb"), kir.I(start-k)), i))
			}
		}
	}
}

// smemWord is the word that cell i's neighbour at in-plane offset off (nil: the cell itself)
// has in a window's slot, past tid. Cell i + dx of the thread is cell (i+dx) mod RX of the
// thread floor((i+dx) / RX) places along: both static, so the address is tid plus a
// constant. Reads that leave the row land in the pad or a neighbouring row: only halo
// cells, whose results no output uses, make them.
func (b *n5dBuilder) smemWord(w *n5dWindow, slot, i int, off []int) int {
	X, Y, RX := b.lay.X, b.lay.Y, b.lay.RX
	o := 0
	j := b.cx(i)
	o += b.cy(i) * b.sp.tstride[Y] // the cell's row among the thread's RY rows (none in 2D)
	if off != nil {
		for a := 1; a < X; a++ {
			o += off[a] * b.sp.tstride[a]
		}
		j += off[X]
	}
	if !b.sp.split {
		o += j
	} else {
		o += mod(j, RX)*b.sp.rs + (j-mod(j, RX))/RX
	}
	return w.sh + slot*b.sp.stride + b.sp.pad + o
}

// smemAt addresses the word of smemWord.
func (b *n5dBuilder) smemAt(w *n5dWindow, slot, i int, off []int) kir.Expr {
	return kir.At("smem", kir.Add(kir.Id("tid"), kir.I(b.smemWord(w, slot, i, off))))
}

// publish stores cell i's value v of a level into its word of a window's slot.
func (b *n5dBuilder) publish(w *n5dWindow, slot, i int, v kir.Expr) []kir.Stmt {
	word := b.smemWord(w, slot, i, nil)
	return []kir.Stmt{kir.Set(kir.At("smem", kir.Add(kir.Id("tid"), kir.I(word))), v)}
}

// inThread says a read at l's in-plane offset from cell i lands on the thread's own cell
// i+dx (same row, x offset only), whose value is in a register.
func (b *n5dBuilder) inThread(l *ir.Load, i int) (int, bool) {
	X, Y, RX, RY := b.lay.X, b.lay.Y, b.lay.RX, b.lay.RY
	jy := b.cy(i)
	for a := 1; a < X; a++ {
		if a == Y {
			jy += l.Off[a]
		} else if l.Off[a] != 0 {
			return 0, false
		}
	}
	j := b.cx(i) + l.Off[X]
	return jy*RX + j, j >= 0 && j < RX && jy >= 0 && jy < RY
}

// readCells settles read[i]: another thread reads cell i of a state grid's shared plane.
// Where the levels keep register queues, a thread reads its own cells from registers, so a
// cell no neighbour reaches is never published: with rx = 4 and reach 1 along x, the two
// middle cells of a 2D thread (half its shared stores).
func (b *n5dBuilder) readCells() {
	X, Y, RX, RY := b.lay.X, b.lay.Y, b.lay.RX, b.lay.RY
	b.read = make([]bool, b.NC)
	for _, u := range b.p.Updates {
		ir.WalkDeep(u.Value, func(e ir.Expr) {
			l, ok := e.(*ir.Load)
			if !ok || l.G.Update == nil || !nonzero(l.Off[1:]) {
				return
			}
			for i := 0; i < b.NC; i++ {
				if _, own := b.inThread(l, i); own {
					continue
				}
				ty := b.cy(i)
				if RY > 1 {
					ty = mod(ty+l.Off[Y], RY)
				}
				b.read[ty*RX+mod(b.cx(i)+l.Off[X], RX)] = true
			}
		})
	}
}

// enter puts cell i's value v of plane x (its place in the round) of a level into the
// level's register queue and, where other threads read it, its shared window: the newest
// plane into a ring of every plane (or, with ascend, the plane the level above reads R
// copies later); with two double-buffered planes the queue's centre, the plane the level
// above computes next (partial sums publish the newest).
func (b *n5dBuilder) enter(w *n5dWindow, x, i int, v kir.Expr) []kir.Stmt {
	var out []kir.Stmt
	if !b.assoc {
		out = append(out, kir.Set(kir.Id(w.queue[mod(x, b.U)][i]), v))
	}
	switch {
	case w.ring == 0:
	case b.ascend:
		if b.read[i] {
			out = append(out, b.publish(w, mod(x, w.ring), i, v)...)
		}
	case w.ring == 2:
		if b.assoc {
			out = append(out, b.publish(w, mod(x, w.ring), i, v)...)
		} else if b.read[i] {
			out = append(out, b.publish(w, mod(x-b.R, w.ring), i, kir.Id(w.queue[mod(x-b.R, b.U)][i]))...)
		}
	default:
		out = append(out, b.publish(w, mod(x, w.ring), i, v)...)
	}
	return out
}

// slack is how many planes ahead of its first output a level's plane is needed: level t's
// plane m_t is needed for the block's output from zb-R(bt-t) to ze+R(bt-t)-1; with partial
// sums its accumulators fill 2R planes ahead of the first output.
func (b *n5dBuilder) slack() int {
	if b.assoc {
		return 2 * b.R
	}
	return 0
}

// active is level t's condition in the head and tail phases (uniform over the block):
// outside it the level's planes feed no output, so it is skipped.
func (b *n5dBuilder) active(t int, row kir.Expr) kir.Expr {
	return and(ge(row, kir.Bin("-", kir.Id("zb"), kir.I(b.R*(b.bt-t)+b.slack()))), lt(row, kir.Add(kir.Id("ze"), kir.I(b.R*(b.bt-t)))))
}

// first is the loop's first plane. The first plane any output needs is zb-R*bt (level 0's
// reach over bt levels); in wave order a level lags L = R+1 planes, so level bt's last output
// comes L*bt planes after the loaded one, but nothing before zb-R*bt is ever needed: the
// single loop of deep blocks starts there, bt planes later than the lag alone would say,
// which saves their warm-up. The phased loops of shallow blocks skip inactive levels at the
// head anyway; starting them later measured slower on the 3D boxes at bt=2 (the same rounds,
// but the compiler's registers moved), so they keep zb-L*bt.
func (b *n5dBuilder) first() kir.Expr {
	return kir.Bin("-", kir.Id("zb"), kir.I(n5dStart(b.R, b.L, b.bt)))
}

// end is the plane after the loop's last: level bt's last output lags L*bt planes behind.
func (b *n5dBuilder) end() kir.Expr { return kir.Add(kir.Id("ze"), kir.I(b.L*b.bt)) }

// rounds is a loop over planes from .. to-1 in whole rounds of copies of the loop body.
func (b *n5dBuilder) rounds(from, to kir.Expr, mode n5dMode, phased bool) kir.Stmt {
	var round []kir.Stmt
	for r := 0; r < b.copies; r++ {
		round = append(round, &kir.Block{Body: append([]kir.Stmt{&kir.Decl{Name: "jr", Type: kir.I32, Init: kir.Add(kir.Id("j"), kir.I(r))}}, b.bodyAt(r, mode, phased)...)})
	}
	return &kir.For{Var: "j", From: from, To: to, Step: b.copies, Body: round}
}

// loop runs planes zb-n5dStart .. ze+L*bt-1 in whole rounds of 2U copies; the last round may
// run past the end, reading clamped planes and storing nothing. (Copies under a condition
// would put barriers inside it, which some OpenCL compilers mishandle.) For bt <= 2, three
// phases: a head whose copies skip the levels that have no needed plane yet, an inner loop of
// rounds where every level is active, and a tail that skips the levels already past their
// last needed plane (from jh on and from jt on, loopBounds). Deeper blocks run one loop unless
// the plan says phased: their unrolled rounds are long, and three of them may overflow the
// instruction cache, which the shorter rounds of bt = 2 do not.
func (b *n5dBuilder) loop(mode n5dMode) []kir.Stmt {
	first, end := b.first(), b.end()
	if !b.pl.N5DPhased(b.bt) {
		return []kir.Stmt{b.rounds(first, end, mode, false)}
	}
	return []kir.Stmt{
		b.rounds(first, kir.Min(kir.Id("jh"), end), mode, true),
		b.rounds(kir.Id("jh"), kir.Id("jt"), mode, false),
		b.rounds(kir.Id("jt"), end, mode, true),
	}
}

// loopBounds declares jh and jt, where the phased loop's inner rounds start and end. Every
// level is active from plane zb+L*bt-slack on (level bt is the last to start) and up to
// ze+R*bt+(L-R)-1 (level 1 is the first to stop; all of them at ze+R*bt-1 when L = R).
func (b *n5dBuilder) loopBounds() {
	R, L, bt, copies := b.R, b.L, b.bt, b.copies
	headRounds := (n5dStart(R, L, bt) + L*bt - b.slack() + copies - 1) / copies
	b.decl("jh", kir.I32, kir.Add(b.first(), kir.I(headRounds*copies)))
	inner := &kir.Binary{Op: "/", X: kir.Max(kir.Bin("-", kir.Add(kir.Id("ze"), kir.I(R*bt+L-R)), kir.Id("jh")), kir.I(0)), Y: kir.I(copies)}
	b.decl("jt", kir.I32, kir.Add(kir.Id("jh"), kir.Mul(kir.I(copies), inner)))
}

// loops builds the block's loops over its planes: blocks whose planes and columns, halos
// included, all lie inside the interior (nearly all of them) skip the fixed rim's checks: the
// condition is uniform over the block, so the barriers inside both loops are reached by all
// of its threads. With rimcut the chunk runs them in pieces.
func (b *n5dBuilder) loops() {
	p, pl, bt := b.p, b.pl, b.bt
	b.loopBounds()
	rim := make([]int, b.lay.Dims)
	for _, u := range p.Updates {
		for a := range rim {
			rim[a] = max(rim[a], u.Grid.Rim[a])
		}
	}
	// The planes a chunk keeps from the streaming axis's ends to run without the rim's checks.
	fastLo, fastHi := n5dRimMargins(p, pl, bt)
	if n5dHasFastLoop(p) { // nonzero(rim) && !guard
		inside, planes := n5dInside(p, pl, b.lay, rim, b.tileLo, fastLo, fastHi)
		// The few blocks on the rim run one phased loop, to keep the code small.
		var rest []kir.Stmt = []kir.Stmt{b.rounds(b.first(), b.end(), n5dChecked, pl.N5DPhased(bt))}
		if b.edges {
			// Blocks on an in-plane edge whose planes are inside (a sixth of the 3D tiles at
			// AN5D's sizes) run one unguarded loop with selects for their rim columns.
			rest = []kir.Stmt{&kir.If{Cond: planes, Then: []kir.Stmt{b.rounds(b.first(), b.end(), n5dEdge, false)}, Else: rest}}
		}
		b.body = append(b.body, &kir.If{Cond: inside, Then: b.loop(n5dFast), Else: rest})
	} else {
		b.body = append(b.body, b.loop(n5dChecked)...)
	}
	if b.D > 0 {
		// Nothing may land in shared memory after the block has left it.
		b.body = append(b.body, &kir.AsyncWait{Pending: 0})
	}
	if b.rimCut {
		// The pieces' bounds are the first and last planes of a chunk that the test above
		// lets run without the rim's checks.
		b.body = rimPieces(b.body, b.blockAt(b.chunkDim()), kir.I(fastLo), kir.Bin("-", kir.Id("n0"), kir.I(fastHi)))
	}
}

// chain makes the kernel's launches chained ones (plan.Chain): the kernel waits at its start
// for the blocks within reach of the launch before and signals its own completion at its end,
// through the chain's three arguments.
func (b *n5dBuilder) chain() {
	if !b.pl.Chain {
		return
	}
	reach := n5dChainReaches(b.lay, b.pl, b.shape[0], b.chunk, b.rimLo, b.rimHi, b.rimBlocks, b.chunkDim())
	wait, signal := n5dChain(b.lay.Dims, b.blockAt, reach)
	b.pre = append(b.pre, wait)
	b.body = append(b.body, signal)
	b.k.Params = append(b.k.Params, kir.Param{Name: "chainflags", Type: kir.U32, Pointer: true},
		kir.Param{Name: "chainepoch", Type: kir.U32}, kir.Param{Name: "chainwait", Type: kir.U32})
	b.args = append(b.args, Arg{Kind: ArgChainFlags}, Arg{Kind: ArgChainEpoch}, Arg{Kind: ArgChainWait})
	b.k.Chained = true
}

// launch finishes the kernel (its statements and dynamic shared memory) and its launch over
// the domain.
func (b *n5dBuilder) launch() builtKernel {
	k, lay := b.k, b.lay
	k.Body = append(append(b.sizes, b.pre...), b.body...)
	if b.shElems > 0 {
		k.DynShared = kir.FromIR(b.shType)
	}
	return builtKernel{k: k, launch: Launch{Kernel: k.Name, Block: lay.Block, Args: b.args, Steps: b.bt, Shared: b.shared, Chain: b.pl.Chain, Rim: b.rimMargins()}}
}
