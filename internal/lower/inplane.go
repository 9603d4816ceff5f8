package lower

import (
	"fmt"
	"sort"

	"tempest/internal/ir"
	"tempest/internal/kir"
	"tempest/internal/plan"
)

// This file holds the two z-streaming plans of the in-plane paper (in-plane-method.txt,
// sections III-B and III-C): forwardplane, the NVIDIA SDK's 3D finite-difference kernel, and
// inplane, the paper's in-plane method.

// forwardplane: 2D thread blocks over (y, x) walk z. A grid level read only straight along z
// off the current plane keeps its column in a register queue of 2r+1 values per thread (the
// forward plane z+r is loaded into the queue's head); the current plane goes to shared memory,
// each thread storing its own queue centre (the interior) and then the threads on the block's
// edges loading the halos (nvstencil's pattern, Fig. 4 of the paper). A grid level read at
// offsets on z and in-plane at once keeps a ring of 2r+1 planes in shared memory instead.
// Blocks whose columns and halos lie inside the domain at the current z load the queues and
// halos without boundary handling.
func lowerForwardPlane(p *ir.Program, shape []int, pl plan.Plan, wide bool) (*Lowered, error) {
	if p.Dims() != 3 {
		return nil, fmt.Errorf("plan %s: forwardplane needs a 3D grid", pl)
	}
	if err := pl.Validate(p, plan.Limits{}, 0); err != nil {
		return nil, err
	}
	return lowerStreaming(p, shape, pl, wide, true)
}

// inPlaneDiagonal reports whether a grid level is read at offsets on both in-plane axes at
// once (then the plane's corners are needed).
func inPlaneDiagonal(p *ir.Program, gl gridLevel) bool {
	found := false
	for _, u := range p.Updates {
		ir.WalkDeep(u.Value, func(e ir.Expr) {
			if l, is := e.(*ir.Load); is && l.G.Index == gl.g && l.Level == gl.level && l.Layer == nil && l.Off[1] != 0 && l.Off[2] != 0 {
				found = true
			}
		})
	}
	return found
}

// edgeFill stores the current plane of a register-queue level into shared memory the way the
// NVIDIA SDK kernel does: every thread its own cell (the queue centre), then threads near the
// block's edges the halo rows and columns (and the corners, when the stencil reads them).
func edgeFill(em *emitter, g *ir.Grid, level int, t tileInfo, centre kir.Expr, pl plan.Plan, diag, general bool) []kir.Stmt {
	W := t.dims[2]
	h1, h2 := t.halo[1], t.halo[2]
	TY := pl.BY // the tile's rows
	at := func(row, col kir.Expr) kir.Expr { return kir.At(t.name, kir.Add(kir.Mul(row, kir.I(W)), col)) }
	read := func(y, x kir.Expr) kir.Expr {
		if !general {
			return em.globalReadAt(g, level, nil, []kir.Expr{kir.Id("z"), y, x}, []int{0, 0, 0}, false)
		}
		return em.globalReadAt(g, level, nil, []kir.Expr{kir.Id("z"), y, x}, nil, true)
	}
	l1, l2, o1, o2, c1, c2 := kir.Id("l1"), kir.Id("l2"), kir.Id("o1"), kir.Id("o2"), kir.Id("c1"), kir.Id("c2")
	row := kir.Add(l1, kir.I(h1))
	col := kir.Add(l2, kir.I(h2))
	out := []kir.Stmt{kir.Set(at(row, col), centre)}
	iv, jv := "ih_"+t.name, "jh_"+t.name
	ih, jh := kir.Id(iv), kir.Id(jv)
	if h1 > 0 {
		out = append(out, &kir.For{Var: iv, From: l1, To: kir.I(h1), Step: pl.BY, Body: []kir.Stmt{
			kir.Set(at(ih, col), read(kir.Add(kir.Bin("-", o1, kir.I(h1)), ih), c2)),
			kir.Set(at(kir.Add(ih, kir.I(TY+h1)), col), read(kir.Add(kir.Add(o1, kir.I(TY)), ih), c2)),
		}})
	}
	if h2 > 0 {
		out = append(out, &kir.For{Var: jv, From: l2, To: kir.I(h2), Step: pl.BX, Body: []kir.Stmt{
			kir.Set(at(row, jh), read(c1, kir.Add(kir.Bin("-", o2, kir.I(h2)), jh))),
			kir.Set(at(row, kir.Add(jh, kir.I(pl.BX+h2))), read(c1, kir.Add(kir.Add(o2, kir.I(pl.BX)), jh))),
		}})
	}
	if diag && h1 > 0 && h2 > 0 {
		var corners []kir.Stmt
		for _, top := range []bool{true, false} {
			for _, left := range []bool{true, false} {
				r, y := ih, kir.Add(kir.Bin("-", o1, kir.I(h1)), ih)
				if !top {
					r, y = kir.Add(ih, kir.I(TY+h1)), kir.Add(kir.Add(o1, kir.I(TY)), ih)
				}
				c, x := jh, kir.Add(kir.Bin("-", o2, kir.I(h2)), jh)
				if !left {
					c, x = kir.Add(jh, kir.I(pl.BX+h2)), kir.Add(kir.Add(o2, kir.I(pl.BX)), jh)
				}
				corners = append(corners, kir.Set(at(r, c), read(y, x)))
			}
		}
		out = append(out, &kir.For{Var: iv, From: l1, To: kir.I(h1), Step: pl.BY, Body: []kir.Stmt{
			&kir.For{Var: jv, From: l2, To: kir.I(h2), Step: pl.BX, Body: corners}}})
	}
	return out
}

// inplane: the in-plane method. 2D thread blocks over (y, x) walk z; each thread computes
// RX x RY outputs strided by the block (register tiling). Every plane p of every grid level
// read at an in-plane offset is loaded once, with the in-plane halo its reads reach (none along
// an axis they do not), into shared memory; a grid level read only at in-plane offset (0, 0) is
// read directly instead, each thread loading its own RX x RY cells of plane p from global
// memory into registers, since no other thread needs them (a shared plane would only add
// stores, loads and barrier work); a program with no shared plane has no barrier. Then each
// pending output z = p-r .. p+r adds the terms of its update that read plane p (the update, a
// sum of coefficient x neighbour terms, is split by z offset), so output z is complete, and
// written, once plane z+r is in (the partial-sum recurrence of eqs. 3-5). Planes are loaded as
// one or more rectangular regions (load=2 full slice, load=0 vertical, load=1 horizontal) whose
// work is assigned to warps at 32-thread boundaries. A block whose plane lies wholly inside the
// domain loads without boundary handling; the others load every element through the grids'
// boundary rules. With vec > 1 (section III-C2, memory-level parallelism) an inside block loads
// aligned vectors of vec elements (vectorFill) when vec divides the row length and its origin
// column and the buffers are aligned, a run-time test (vec_ok); otherwise, and on the boundary,
// each thread loads vec consecutive elements of a row as scalars.
func lowerInPlane(p *ir.Program, shape []int, pl plan.Plan, wide bool) (*Lowered, error) {
	if err := pl.Validate(p, plan.Limits{}, 0); err != nil {
		return nil, err
	}
	parts, rz, err := inPlaneParts(p, pl)
	if err != nil {
		return nil, err
	}
	b := newInPlaneBuilder(p, pl, wide, parts, rz)
	b.planes()
	if b.shared > staticSharedLimit {
		return nil, fmt.Errorf("plan %s: its planes need %d bytes of shared memory (at most %d); choose smaller blocks or register tiles", pl, b.shared, staticSharedLimit)
	}
	b.accumulators()
	loop := b.loads()
	loop = append(loop, b.sums()...)
	b.barrier(&loop)
	loop = append(loop, b.storeAndShift()...)
	b.body = append(b.body, &kir.For{Var: "pz", From: kir.Bin("-", kir.Id("zbeg"), kir.I(rz)), To: kir.Add(kir.Id("zend"), kir.I(rz)), Step: 1, Body: loop})
	ps, args := params(p, readRoles)
	if pl.Align {
		ps, args = pitchParam(ps, args)
	}
	ps = append(ps, kir.Param{Name: "chunk", Type: kir.I32})
	chunk := pl.ChunkOf(shape[0])
	args = append(args, Arg{Kind: ArgConst, Value: int64(chunk)})
	k := &kir.Kernel{Name: "tempest_inplane", Params: ps, Body: b.body}
	block := [3]int{pl.BX, pl.BY, 1}
	return &Lowered{
		Module:      &kir.Module{Kernels: []*kir.Kernel{k}, Uses64: uses64(p)},
		Launches:    []Launch{{Kernel: k.Name, Block: block, Args: args, Steps: 1}},
		SharedBytes: b.shared,
	}, nil
}

// inPlaneParts splits each update of p by the z offset of its reads (parts[u][kz]: the terms
// of update u that read plane z+kz), with the widest offset rz, or says why inplane cannot
// take p.
func inPlaneParts(p *ir.Program, pl plan.Plan) (parts []map[int]ir.Expr, rz int, err error) {
	parts = make([]map[int]ir.Expr, len(p.Updates))
	for i, u := range p.Updates {
		bad := ""
		ir.WalkDeep(u.Value, func(e ir.Expr) {
			switch e := e.(type) {
			case *ir.Coord:
				bad = "reads a coordinate"
			case *ir.Load:
				if e.Layer != nil {
					bad = "reads a layered grid"
				}
			}
		})
		if bad != "" {
			return nil, 0, fmt.Errorf("plan %s: the update of %s %s; inplane takes sums of coefficient x neighbour terms", pl, u.Grid.Name, bad)
		}
		m, ok := splitZ(inlineLets(u.Value))
		if !ok {
			return nil, 0, fmt.Errorf("plan %s: the update of %s is not a sum of terms each reading one plane", pl, u.Grid.Name)
		}
		parts[i] = m
		for kz := range m {
			rz = max(rz, abs(kz))
		}
	}
	return parts, rz, nil
}

// inPlaneBuilder is an inplane kernel under construction (lowerInPlane): the program split by
// plane, the body so far, and the planes' loads.
type inPlaneBuilder struct {
	p       *ir.Program
	pl      plan.Plan
	TX, TY  int // the block's tile: BX x RX by BY x RY cells
	threads int
	parts   []map[int]ir.Expr // inPlaneParts
	rz      int
	// em emits a cell's expressions through the boundary rules, fast those of a block whose
	// plane lies inside the domain (no rules needed).
	em, fast *emitter
	body     []kir.Stmt
	// The planes: a shared tile per grid level read at an in-plane offset, direct registers
	// for one read only at (0, 0); their shared bytes, the widest halo along y and x, and
	// their loads (inside the domain or not, as vectors, and the direct ones), with the
	// buffers the vector loads need aligned.
	tiles                                               map[gridLevel]tileInfo
	direct                                              map[gridLevel]bool
	shared, H1, H2                                      int
	fastFill, slowFill, vecFill, fastDirect, slowDirect []kir.Stmt
	aligned                                             []kir.Expr
	// ci and cj are the cell of the thread's register tile whose terms the emitter reads.
	ci, cj int
}

// The thread's coordinates within the block and the block's origin, along y (1) and x (2).
var (
	inPlaneL1, inPlaneL2 = kir.Id("l1"), kir.Id("l2")
	inPlaneO1, inPlaneO2 = kir.Id("o1"), kir.Id("o2")
)

// newInPlaneBuilder starts the kernel: the thread's coordinates, the block's origin and its
// chunk of planes.
func newInPlaneBuilder(p *ir.Program, pl plan.Plan, wide bool, parts []map[int]ir.Expr, rz int) *inPlaneBuilder {
	BX, BY, RX, RY := pl.BX, pl.BY, pl.RX, pl.RY
	b := &inPlaneBuilder{p: p, pl: pl, TX: BX * RX, TY: BY * RY, threads: BX * BY, parts: parts, rz: rz,
		tiles: map[gridLevel]tileInfo{}, direct: map[gridLevel]bool{}}
	b.body = []kir.Stmt{
		&kir.Decl{Name: "l2", Type: kir.I32, Init: &kir.Builtin{D: kir.ThreadIdx, Axis: 0}},
		&kir.Decl{Name: "l1", Type: kir.I32, Init: &kir.Builtin{D: kir.ThreadIdx, Axis: 1}},
		&kir.Decl{Name: "o2", Type: kir.I32, Init: kir.Mul(&kir.Builtin{D: kir.BlockIdx, Axis: 0}, kir.I(b.TX))},
		&kir.Decl{Name: "o1", Type: kir.I32, Init: kir.Mul(&kir.Builtin{D: kir.BlockIdx, Axis: 1}, kir.I(b.TY))},
		&kir.Decl{Name: "tid", Type: kir.I32, Init: kir.Add(kir.Mul(inPlaneL1, kir.I(BX)), inPlaneL2)},
		&kir.Decl{Name: "zbeg", Type: kir.I32, Init: kir.Mul(&kir.Builtin{D: kir.BlockIdx, Axis: 2}, kir.Id("chunk"))},
		&kir.Decl{Name: "zend", Type: kir.I32, Init: &kir.Call{Fn: "min", T: kir.I32, Args: []kir.Expr{kir.Add(kir.Id("zbeg"), kir.Id("chunk")), kir.Id("n0")}}},
	}
	b.em = &emitter{p: p, wide: wide, coords: []kir.Expr{kir.Id("zo"), nil, nil}, step: kir.Id("step0"), lets: map[*ir.Let]string{}, pitched: pl.Align}
	fast := *b.em
	fast.interior = true
	b.fast = &fast
	return b
}

// planes declares a shared plane (with in-plane halo) per grid level read at an in-plane
// offset and builds its loads; a level read only at in-plane offset (0, 0) is read straight
// from global memory instead (direct): each thread loads its own cells of plane pz, which no
// other thread needs, so the level costs no shared memory and no barrier.
func (b *inPlaneBuilder) planes() {
	p, pl, RX, RY := b.p, b.pl, b.pl.RX, b.pl.RY
	l1, l2, o1, o2 := inPlaneL1, inPlaneL2, inPlaneO1, inPlaneO2
	reachOf, order := footprints(p)
	for _, gl := range order {
		h := reachOf[gl]
		g := p.Grids[gl.g]
		if h[1] == 0 && h[2] == 0 {
			b.direct[gl] = true
			t := kir.FromIR(g.Type)
			for cj := 0; cj < RY; cj++ {
				for ci := 0; ci < RX; ci++ {
					d := directName(g, gl.level, cj, ci)
					b.body = append(b.body, &kir.Decl{Name: d, Type: t, Init: zeroOf(t)})
					pos := []kir.Expr{kir.Id("pz"), kir.Add(kir.Add(o1, l1), kir.I(cj*pl.BY)), kir.Add(kir.Add(o2, l2), kir.I(ci*pl.BX))}
					b.fastDirect = append(b.fastDirect, kir.Set(kir.Id(d), b.fast.globalReadAt(g, gl.level, nil, pos, []int{0, 0, 0}, false)))
					b.slowDirect = append(b.slowDirect, kir.Set(kir.Id(d), b.em.globalReadAt(g, gl.level, nil, pos, nil, true)))
				}
			}
			continue
		}
		// With vector loads the plane's x halo is padded to a whole vector on either side (when
		// vec divides TX): every aligned vector of the global row then lands on an aligned
		// vector of the plane, and vectorFill stores it with one vector store.
		pad, align := h[2], 0
		if pl.Vec > 1 && b.TX%pl.Vec == 0 {
			pad, align = ceilDiv(h[2], pl.Vec)*pl.Vec, pl.Vec*g.Type.Size()
		}
		t := newTile(fmt.Sprintf("plane_%s_%d", g.Name, gl.level), []int{1, b.TY, b.TX}, []int{0, h[1], pad})
		b.tiles[gl] = t
		b.H1, b.H2 = max(b.H1, h[1]), max(b.H2, h[2])
		b.shared += t.len * g.Type.Size()
		b.body = append(b.body, &kir.ArrayDecl{Name: t.name, Type: kir.FromIR(g.Type), Space: kir.Shared, Len: t.len, Align: align})
		regs := loadRegions(pl.Load, b.TY, b.TX, h[1], h[2], inPlaneDiagonal(p, gl))
		b.fastFill = append(b.fastFill, regionFill(b.fast, g, gl.level, t, h[2], regs, pl.Vec, b.threads, false)...)
		b.slowFill = append(b.slowFill, regionFill(b.em, g, gl.level, t, h[2], regs, pl.Vec, b.threads, true)...)
		if pl.Vec > 1 {
			b.vecFill = append(b.vecFill, vectorFill(b.em, g, gl.level, t, h[2], regs, pl.Vec, b.threads)...)
			b.aligned = append(b.aligned, &kir.Aligned{Ptr: bufName(g, levelRole(gl.level)), Bytes: pl.Vec * g.Type.Size()})
		}
	}
}

// vecOK says the vector path may run: rows start at multiples of vec (n2 is, or the rows are
// padded, plan.Align: a unit past the row's end then reads the row's padding, up to the
// aligned column at or after n2, at most the pitch), the block's origin column is one (always
// so when vec divides TX) and every buffer the fills read is aligned to a vector. It is
// decided once per block, at run time, so that no size, tile or allocator can make a vector
// load misaligned. Without shared planes nothing is loaded as vectors and there is nothing to
// decide (nil).
func (b *inPlaneBuilder) vecOK() kir.Expr {
	vec := b.pl.Vec
	if vec <= 1 || len(b.tiles) == 0 {
		return nil
	}
	var ok kir.Expr = &kir.BoolLit{V: true}
	if !b.pl.Align {
		ok = &kir.Binary{Op: "==", X: kir.Bin("%", kir.Id("n2"), kir.I(vec)), Y: kir.I(0)}
	}
	if b.TX%vec != 0 {
		ok = and(ok, &kir.Binary{Op: "==", X: kir.Bin("%", inPlaneO2, kir.I(vec)), Y: kir.I(0)})
	}
	for _, a := range b.aligned {
		ok = and(ok, a)
	}
	return ok
}

// interior says the plane lies inside the domain: no boundary rules needed for any of its
// elements.
func (b *inPlaneBuilder) interior() kir.Expr {
	pz, o1, o2 := kir.Id("pz"), inPlaneO1, inPlaneO2
	return and(and(&kir.Binary{Op: ">=", X: pz, Y: kir.I(0)}, &kir.Binary{Op: "<", X: pz, Y: kir.Id("n0")}),
		and(and(&kir.Binary{Op: ">=", X: o1, Y: kir.I(b.H1)}, &kir.Binary{Op: "<=", X: kir.Add(o1, kir.I(b.TY+b.H1)), Y: kir.Id("n1")}),
			and(&kir.Binary{Op: ">=", X: o2, Y: kir.I(b.H2)}, &kir.Binary{Op: "<=", X: kir.Add(o2, kir.I(b.TX+b.H2)), Y: kir.Id("n2")})))
}

// inPlaneAcc names an accumulator: acc<u>_<j>_<i>_<m> holds update u's output z = pz - rz + m
// of the thread's cell (j, i).
func inPlaneAcc(u, j, i, m int) string { return fmt.Sprintf("acc%d_%d_%d_%d", u, j, i, m) }

// accumulators declares the accumulators of the 2rz+1 pending outputs of every cell.
func (b *inPlaneBuilder) accumulators() {
	for ui, u := range b.p.Updates {
		t := kir.FromIR(u.Value.Type())
		for j := 0; j < b.pl.RY; j++ {
			for i := 0; i < b.pl.RX; i++ {
				for m := 0; m <= 2*b.rz; m++ {
					b.body = append(b.body, &kir.Decl{Name: inPlaneAcc(ui, j, i, m), Type: t, Init: zeroOf(t)})
				}
			}
		}
	}
}

// barrier appends a barrier to loop, where the kernel has shared planes: without them no
// thread reads what another loaded.
func (b *inPlaneBuilder) barrier(loop *[]kir.Stmt) {
	if len(b.tiles) > 0 {
		*loop = append(*loop, &kir.Barrier{})
	}
}

// loads begins the loop's body with plane pz's loads, then a barrier: inside the domain
// without boundary rules (as vectors where vec_ok), the others through them.
func (b *inPlaneBuilder) loads() []kir.Stmt {
	var loop []kir.Stmt
	fastFill := b.fastFill
	if vecOK := b.vecOK(); vecOK != nil {
		b.body = append(b.body, &kir.Decl{Name: "vec_ok", Type: kir.Bool, Init: vecOK})
		fastFill = []kir.Stmt{&kir.If{Cond: kir.Id("vec_ok"), Then: b.vecFill, Else: fastFill}}
	}
	// Direct reads go first: their loads are in flight while the shared planes fill.
	fastLoads, slowLoads := append(b.fastDirect, fastFill...), append(b.slowDirect, b.slowFill...)
	if len(fastLoads) > 0 || len(slowLoads) > 0 {
		loop = append(loop, &kir.If{Cond: b.interior(), Then: fastLoads, Else: slowLoads})
	}
	b.barrier(&loop)
	return loop
}

// read is how the kernel reads a grid level at the cell (cj, ci) of the thread's register
// tile: from its direct registers or its shared plane.
func (b *inPlaneBuilder) read(em *emitter, l *ir.Load) kir.Expr {
	gl := gridLevel{l.G.Index, l.Level}
	if b.direct[gl] {
		if l.Off[1] != 0 || l.Off[2] != 0 {
			panic(fmt.Sprintf("internal error: inplane reads %s at in-plane offset (%d, %d) from its direct registers", l.G.Name, l.Off[1], l.Off[2]))
		}
		return kir.Id(directName(l.G, l.Level, b.cj, b.ci))
	}
	t, ok := b.tiles[gl]
	if !ok {
		panic("internal error: inplane reads " + l.G.Name + ", which has neither a shared plane nor direct registers")
	}
	row := kir.Add(inPlaneL1, kir.I(b.cj*b.pl.BY+t.halo[1]+l.Off[1]))
	col := kir.Add(inPlaneL2, kir.I(b.ci*b.pl.BX+t.halo[2]+l.Off[2]))
	return kir.At(t.name, kir.Add(kir.Mul(row, kir.I(t.dims[2])), col))
}

// sums are the partial sums: output z = pz - kz takes the terms reading plane pz (offset kz).
func (b *inPlaneBuilder) sums() []kir.Stmt {
	var loop []kir.Stmt
	b.em.read = b.read
	for ui := range b.p.Updates {
		keys := make([]int, 0, len(b.parts[ui]))
		for kz := range b.parts[ui] {
			keys = append(keys, kz)
		}
		sort.Ints(keys)
		for b.cj = 0; b.cj < b.pl.RY; b.cj++ {
			for b.ci = 0; b.ci < b.pl.RX; b.ci++ {
				for _, kz := range keys {
					m := b.rz - kz
					var stmts []kir.Stmt
					b.em.out = &stmts
					v := b.em.expr(b.parts[ui][kz])
					acc := kir.Id(inPlaneAcc(ui, b.cj, b.ci, m))
					loop = append(loop, stmts...)
					loop = append(loop, kir.Set(acc, kir.Add(acc, v)))
				}
			}
		}
	}
	return loop
}

// storeAndShift writes output z = pz - rz, which is complete (rim cells keep their values),
// then shifts the accumulators' queues.
func (b *inPlaneBuilder) storeAndShift() []kir.Stmt {
	var store []kir.Stmt
	for cj := 0; cj < b.pl.RY; cj++ {
		for ci := 0; ci < b.pl.RX; ci++ {
			store = append(store, b.storeCell(cj, ci)...)
		}
	}
	loop := []kir.Stmt{
		&kir.Decl{Name: "zo", Type: kir.I32, Init: kir.Bin("-", kir.Id("pz"), kir.I(b.rz))},
		&kir.If{Cond: &kir.Binary{Op: ">=", X: kir.Id("zo"), Y: kir.Id("zbeg")}, Then: store},
	}
	for ui, u := range b.p.Updates {
		t := kir.FromIR(u.Value.Type())
		for j := 0; j < b.pl.RY; j++ {
			for i := 0; i < b.pl.RX; i++ {
				for m := 0; m < 2*b.rz; m++ {
					loop = append(loop, kir.Set(kir.Id(inPlaneAcc(ui, j, i, m)), kir.Id(inPlaneAcc(ui, j, i, m+1))))
				}
				loop = append(loop, kir.Set(kir.Id(inPlaneAcc(ui, j, i, 2*b.rz)), zeroOf(t)))
			}
		}
	}
	return loop
}

// storeCell writes output z = zo of the thread's cell (cj, ci) where it lies in the domain.
func (b *inPlaneBuilder) storeCell(cj, ci int) []kir.Stmt {
	y := kir.Add(kir.Add(inPlaneO1, inPlaneL1), kir.I(cj*b.pl.BY))
	x := kir.Add(kir.Add(inPlaneO2, inPlaneL2), kir.I(ci*b.pl.BX))
	yn, xn := fmt.Sprintf("y%d_%d", cj, ci), fmt.Sprintf("x%d_%d", cj, ci)
	coords := []kir.Expr{kir.Id("zo"), kir.Id(yn), kir.Id(xn)}
	var st []kir.Stmt
	in := "idx" + fmt.Sprint(cj, "_", ci)
	st = append(st, &kir.Decl{Name: in, Type: b.em.idxType(), Init: b.em.linear(coords, nil)})
	for ui, u := range b.p.Updates {
		g := u.Grid
		set := kir.Set(kir.At(bufName(g, Out0), kir.Id(in)), kir.Id(inPlaneAcc(ui, cj, ci, 0)))
		if rim := inRim(g, coords); rim != nil {
			keep := kir.Set(kir.At(bufName(g, Out0), kir.Id(in)), kir.At(bufName(g, In0), kir.Id(in)))
			st = append(st, &kir.If{Cond: rim, Then: []kir.Stmt{keep}, Else: []kir.Stmt{set}})
		} else {
			st = append(st, set)
		}
	}
	return []kir.Stmt{
		&kir.Decl{Name: yn, Type: kir.I32, Init: y},
		&kir.Decl{Name: xn, Type: kir.I32, Init: x},
		&kir.If{Cond: and(&kir.Binary{Op: "<", X: kir.Id(yn), Y: kir.Id("n1")}, &kir.Binary{Op: "<", X: kir.Id(xn), Y: kir.Id("n2")}), Then: st},
	}
}

// directName is the register that holds a direct grid level's cell (cj, ci) of the thread's
// register tile on plane pz.
func directName(g *ir.Grid, level, cj, ci int) string {
	return fmt.Sprintf("d_%s_%d_%d_%d", g.Name, level, cj, ci)
}

// region is a rectangle of a shared plane, in plane coordinates (halo included): column c is
// x = o2 + c - h2 with h2 the stencil's x halo; the plane may pad its x halo beyond h2 (its
// tile's halo[2]), which shifts every column by the padding.
type region struct{ r0, c0, rows, cols int }

// loadRegions splits a plane of ty x tx outputs with halos h1 (y) and h2 (x) into the regions
// of a loading variant (Fig. 6 of the paper): 2 full slice, 0 vertical, 1 horizontal. Corners
// are loaded only when the stencil reads them (diag) or the variant covers them anyway.
func loadRegions(load, ty, tx, h1, h2 int, diag bool) []region {
	W, Hh := tx+2*h2, ty+2*h1
	switch load {
	case 0:
		regs := []region{{0, h2, Hh, tx}}
		if h2 > 0 {
			r0, rn := h1, ty
			if diag {
				r0, rn = 0, Hh
			}
			regs = append(regs, region{r0, 0, rn, h2}, region{r0, h2 + tx, rn, h2})
		}
		return regs
	case 1:
		regs := []region{{h1, 0, ty, W}}
		if h1 > 0 {
			c0, cn := h2, tx
			if diag {
				c0, cn = 0, W
			}
			regs = append(regs, region{0, c0, h1, cn}, region{h1 + ty, c0, h1, cn})
		}
		return regs
	}
	return []region{{0, 0, Hh, W}}
}

// regionFill loads plane pz of a grid level into its shared plane, region by region. The
// regions' work units (vec consecutive elements of a row) are numbered one after the other,
// each region starting at a multiple of 32, and thread tid takes units tid, tid+threads, ...:
// a warp never straddles two regions. general says elements may lie outside the domain.
func regionFill(em *emitter, g *ir.Grid, level int, t tileInfo, h2 int, regs []region, vec, threads int, general bool) []kir.Stmt {
	W := t.dims[2]
	h1, shift := t.halo[1], t.halo[2]-h2
	v := "u_" + t.name
	total := 0
	starts := make([]int, len(regs))
	for i, r := range regs {
		if len(regs) > 1 {
			total = (total + 31) / 32 * 32
		}
		starts[i] = total
		total += r.rows * ceilDiv(r.cols, vec)
	}
	var chain []kir.Stmt
	for i := len(regs) - 1; i >= 0; i-- {
		r := regs[i]
		units := ceilDiv(r.cols, vec)
		lu := kir.Bin("-", kir.Id(v), kir.I(starts[i]))
		rn, cn := fmt.Sprintf("r_%s", t.name), fmt.Sprintf("c_%s", t.name)
		st := []kir.Stmt{
			&kir.Decl{Name: rn, Type: kir.I32, Init: kir.Add(kir.Bin("/", lu, kir.I(units)), kir.I(r.r0))},
			&kir.Decl{Name: cn, Type: kir.I32, Init: kir.Add(kir.Mul(kir.Bin("%", lu, kir.I(units)), kir.I(vec)), kir.I(r.c0))},
		}
		for e := 0; e < vec; e++ {
			row, col := kir.Id(rn), kir.Add(kir.Id(cn), kir.I(e))
			pos := []kir.Expr{kir.Id("pz"), kir.Add(kir.Id("o1"), kir.Bin("-", row, kir.I(h1))), kir.Add(kir.Id("o2"), kir.Bin("-", col, kir.I(h2)))}
			var rd kir.Expr
			if general {
				rd = em.globalReadAt(g, level, nil, pos, nil, true)
			} else {
				rd = em.globalReadAt(g, level, nil, pos, []int{0, 0, 0}, false)
			}
			s := kir.Set(kir.At(t.name, kir.Add(kir.Mul(row, kir.I(W)), kir.Add(col, kir.I(shift)))), rd)
			if r.cols%vec != 0 && e > 0 {
				// The row's last unit may be partial.
				st = append(st, &kir.If{Cond: &kir.Binary{Op: "<", X: col, Y: kir.I(r.c0 + r.cols)}, Then: []kir.Stmt{s}})
			} else {
				st = append(st, s)
			}
		}
		var cond kir.Expr = &kir.Binary{Op: "<", X: kir.Id(v), Y: kir.I(starts[i] + r.rows*units)}
		if i > 0 {
			cond = and(&kir.Binary{Op: ">=", X: kir.Id(v), Y: kir.I(starts[i])}, cond)
		}
		chain = []kir.Stmt{&kir.If{Cond: cond, Then: st, Else: chain}}
	}
	return []kir.Stmt{&kir.For{Var: v, From: kir.Id("tid"), To: kir.I(total), Step: threads, Body: chain}}
}

// vectorFill is regionFill's vector path, for blocks whose plane lies inside the domain and
// whose rows and buffer are aligned to vec elements (the kernel's vec_ok, with o2 a multiple
// of vec). Its work units are aligned vectors of the global row: a region's row segment, which
// starts lead = (c0-h2) mod vec elements past an aligned column, is covered by
// ceil((lead+cols)/vec) vectors starting lead elements before it. Each unit is one vector load
// (in0_u + idx, idx a multiple of vec), and its lanes that fall inside the region are stored to
// shared memory one by one. A unit reaching outside the region still reads inside the row:
// its first element is at or after the aligned column at or before o2-h2 >= 0, and its end at or
// before the aligned column at or after o2+TX+h2 <= n2, a multiple of vec. Units are numbered
// region by region from multiples of 32, as in regionFill.
//
// When the plane's rows and its padded x halo are whole vectors (lowerInPlane pads them so
// when vec divides TX), a unit is also an aligned vector of the plane and is stored with one
// vector store, lanes outside the region included: those fall in the padding or in columns
// of the same rows that hold the same cells (the variants' regions never share a row segment
// once widened to vectors), so no guard is needed and no other thread's cell is overwritten.
func vectorFill(em *emitter, g *ir.Grid, level int, t tileInfo, h2 int, regs []region, vec, threads int) []kir.Stmt {
	W := t.dims[2]
	h1, shift := t.halo[1], t.halo[2]-h2
	whole := W%vec == 0 && t.halo[2]%vec == 0
	v := "u_" + t.name
	lead := make([]int, len(regs))
	units := make([]int, len(regs))
	starts := make([]int, len(regs))
	total := 0
	for i, r := range regs {
		lead[i] = ((r.c0-h2)%vec + vec) % vec
		units[i] = ceilDiv(lead[i]+r.cols, vec)
		if len(regs) > 1 {
			total = (total + 31) / 32 * 32
		}
		starts[i] = total
		total += r.rows * units[i]
	}
	vn, rn, cn := "v_"+t.name, "r_"+t.name, "c_"+t.name
	var chain []kir.Stmt
	for i := len(regs) - 1; i >= 0; i-- {
		r := regs[i]
		lu := kir.Bin("-", kir.Id(v), kir.I(starts[i]))
		row, c := kir.Id(rn), kir.Id(cn)
		pos := []kir.Expr{kir.Id("pz"), kir.Add(kir.Id("o1"), kir.Bin("-", row, kir.I(h1))), kir.Add(kir.Id("o2"), kir.Bin("-", c, kir.I(h2)))}
		st := []kir.Stmt{
			&kir.Decl{Name: rn, Type: kir.I32, Init: kir.Add(kir.Bin("/", lu, kir.I(units[i])), kir.I(r.r0))},
			&kir.Decl{Name: cn, Type: kir.I32, Init: kir.Add(kir.Mul(kir.Bin("%", lu, kir.I(units[i])), kir.I(vec)), kir.I(r.c0-lead[i]))},
			&kir.VecLoad{Name: vn, T: kir.FromIR(g.Type), Width: vec, Array: kir.Id(bufName(g, levelRole(level))), Idx: em.linear(pos, nil)},
		}
		if whole {
			idx := kir.Add(kir.Mul(row, kir.I(W)), kir.Add(c, kir.I(shift)))
			st = append(st, &kir.VecStore{Vec: vn, T: kir.FromIR(g.Type), Width: vec, Array: t.name, Idx: idx})
		}
		// Lanes before the region occur in a row's first unit, lanes after it in its last.
		lastIn := r.cols + lead[i] - (units[i]-1)*vec // lanes of the last unit inside the region
		for e := 0; e < vec && !whole; e++ {
			col := kir.Add(c, kir.I(e))
			var guard kir.Expr
			if e < lead[i] {
				guard = &kir.Binary{Op: ">=", X: col, Y: kir.I(r.c0)}
			}
			if e >= lastIn {
				hi := &kir.Binary{Op: "<", X: col, Y: kir.I(r.c0 + r.cols)}
				if guard == nil {
					guard = hi
				} else {
					guard = and(guard, hi)
				}
			}
			s := kir.Set(kir.At(t.name, kir.Add(kir.Mul(row, kir.I(W)), kir.Add(col, kir.I(shift)))), &kir.Lane{Vec: vn, I: e})
			if guard != nil {
				s = &kir.If{Cond: guard, Then: []kir.Stmt{s}}
			}
			st = append(st, s)
		}
		var cond kir.Expr = &kir.Binary{Op: "<", X: kir.Id(v), Y: kir.I(starts[i] + r.rows*units[i])}
		if i > 0 {
			cond = and(&kir.Binary{Op: ">=", X: kir.Id(v), Y: kir.I(starts[i])}, cond)
		}
		chain = []kir.Stmt{&kir.If{Cond: cond, Then: st, Else: chain}}
	}
	return []kir.Stmt{&kir.For{Var: v, From: kir.Id("tid"), To: kir.I(total), Step: threads, Body: chain}}
}

// levelRole is the input buffer that holds a grid's level (0 current, 1 previous).
func levelRole(level int) Role {
	if level == 1 {
		return In1
	}
	return In0
}

// inlineLets replaces let references by their values.
func inlineLets(e ir.Expr) ir.Expr {
	switch e := e.(type) {
	case *ir.LetRef:
		return inlineLets(e.L.Value)
	case *ir.Unary:
		return &ir.Unary{Op: e.Op, X: inlineLets(e.X), T: e.T}
	case *ir.Binary:
		return &ir.Binary{Op: e.Op, X: inlineLets(e.X), Y: inlineLets(e.Y), T: e.T}
	case *ir.Select:
		return &ir.Select{C: inlineLets(e.C), A: inlineLets(e.A), B: inlineLets(e.B), T: e.T}
	case *ir.Call:
		args := make([]ir.Expr, len(e.Args))
		for i, a := range e.Args {
			args[i] = inlineLets(a)
		}
		return &ir.Call{Fn: e.Fn, Args: args, T: e.T}
	case *ir.Convert:
		return &ir.Convert{X: inlineLets(e.X), To: e.To}
	case *ir.Load:
		if e.Layer != nil {
			return &ir.Load{G: e.G, Level: e.Level, Off: e.Off, Layer: inlineLets(e.Layer)}
		}
	}
	return e
}

// zOffsets is the set of z offsets at which e reads grids (layer expressions included).
func zOffsets(e ir.Expr) map[int]bool {
	s := map[int]bool{}
	ir.Walk(e, func(x ir.Expr) {
		if l, ok := x.(*ir.Load); ok {
			s[l.Off[0]] = true
		}
	})
	return s
}

// splitZ splits a let-free expression into parts by the z offset of their reads, so that e
// is the sum of its parts: a subexpression reading one plane (or none: offset 0) is one part;
// sums, differences, negations, float conversions and products or float quotients by
// coefficients distribute. It fails for anything else that reads several planes.
func splitZ(e ir.Expr) (map[int]ir.Expr, bool) {
	zs := zOffsets(e)
	if len(zs) <= 1 {
		for kz := range zs {
			return map[int]ir.Expr{kz: e}, true
		}
		return map[int]ir.Expr{0: e}, true
	}
	mapAll := func(m map[int]ir.Expr, f func(ir.Expr) ir.Expr) map[int]ir.Expr {
		out := map[int]ir.Expr{}
		for kz, v := range m {
			out[kz] = f(v)
		}
		return out
	}
	switch e := e.(type) {
	case *ir.Unary:
		if e.Op == "-" {
			m, ok := splitZ(e.X)
			return mapAll(m, func(x ir.Expr) ir.Expr { return &ir.Unary{Op: "-", X: x, T: e.T} }), ok
		}
	case *ir.Convert:
		if e.To.IsFloat() && e.X.Type().IsFloat() {
			m, ok := splitZ(e.X)
			return mapAll(m, func(x ir.Expr) ir.Expr { return &ir.Convert{X: x, To: e.To} }), ok
		}
	case *ir.Binary:
		switch e.Op {
		case "+", "-":
			if !e.T.IsFloat() && !e.T.IsInt() {
				return nil, false
			}
			mx, ok1 := splitZ(e.X)
			my, ok2 := splitZ(e.Y)
			if !ok1 || !ok2 {
				return nil, false
			}
			out := map[int]ir.Expr{}
			for kz, x := range mx {
				out[kz] = x
			}
			for kz, y := range my {
				if x, ok := out[kz]; ok {
					out[kz] = &ir.Binary{Op: e.Op, X: x, Y: y, T: e.T}
				} else if e.Op == "-" {
					out[kz] = &ir.Unary{Op: "-", X: y, T: e.T}
				} else {
					out[kz] = y
				}
			}
			return out, true
		case "*":
			if len(zOffsets(e.X)) == 0 {
				m, ok := splitZ(e.Y)
				return mapAll(m, func(y ir.Expr) ir.Expr { return &ir.Binary{Op: "*", X: e.X, Y: y, T: e.T} }), ok
			}
			if len(zOffsets(e.Y)) == 0 {
				m, ok := splitZ(e.X)
				return mapAll(m, func(x ir.Expr) ir.Expr { return &ir.Binary{Op: "*", X: x, Y: e.Y, T: e.T} }), ok
			}
		case "/":
			if e.T.IsFloat() && len(zOffsets(e.Y)) == 0 {
				m, ok := splitZ(e.X)
				return mapAll(m, func(x ir.Expr) ir.Expr { return &ir.Binary{Op: "/", X: x, Y: e.Y, T: e.T} }), ok
			}
		}
	case *ir.Call:
		if e.Fn == "fma" {
			// Fast math's fused product (fuseProducts) splits as the sum it fuses.
			prod := &ir.Binary{Op: "*", X: e.Args[0], Y: e.Args[1], T: e.T}
			return splitZ(&ir.Binary{Op: "+", X: prod, Y: e.Args[2], T: e.T})
		}
	}
	return nil, false
}

// edgePipe is the forward plane's halo pipeline (pf steps deep): each halo element a thread
// loads is a register queue of pf steps' planes (pf*rz values), loaded pf steps before the
// step that stores its plane, so the halo loads' latency overlaps pf steps of compute rather
// than stalling every step's barrier. The halo's elements are dealt to the block's threads in turn (tid, tid +
// threads, ...: rows above and below, then the columns left and right, then the corners where
// the stencil reads them), so every warp loads about as much as any other and waits as little
// at the barrier; which elements a thread owns is worked out once, before the plane loop.
type edgePipe struct {
	decls, prime []kir.Stmt
	// stores put the step's planes z .. z+rz-1 (the queue centres and the halo registers'
	// oldest values) into shared memory and advance the halo queues; loads (fast: without
	// boundary handling) fill their newest values from planes z+pf*rz .. z+pf*rz+rz-1.
	stores, loads, fastLoads []kir.Stmt
}

// edgeSlot is the k-th halo element of a thread: the thread's test for owning one (nil: every
// thread does), its tile place, its grid coordinates in the plane, and its register queue.
type edgeSlot struct {
	cond      kir.Expr
	index     kir.Expr // in the plane's tile
	y, x      kir.Expr
	registers []string // oldest first
}

// pipelineEdges builds level's edgePipe for tile t, pf steps deep, for blocks of threads
// threads whose steps compute len(centres) planes each: centres[j] is the thread's cell of the
// step's plane j, base(j) the element offset of that plane's buffer (nil for one buffer).
func pipelineEdges(em, fast *emitter, g *ir.Grid, level int, t tileInfo, centres []kir.Expr, pl plan.Plan, diag bool, pf, threads int, base func(j int) kir.Expr) edgePipe {
	W := t.dims[2]
	h1, h2 := t.halo[1], t.halo[2]
	rz := len(centres)
	BX, TY := pl.BX, pl.BY
	at := func(j int, i kir.Expr) kir.Expr {
		if b := base(j); b != nil {
			i = kir.Add(b, i)
		}
		return kir.At(t.name, i)
	}
	l1, l2, o1, o2 := kir.Id("l1"), kir.Id("l2"), kir.Id("o1"), kir.Id("o2")
	var ep edgePipe
	for j, centre := range centres {
		ep.stores = append(ep.stores, kir.Set(at(j, kir.Add(kir.Mul(kir.Add(l1, kir.I(h1)), kir.I(W)), kir.Add(l2, kir.I(h2)))), centre))
	}
	// The halo's regions in the order they are dealt: rows above, rows below, both sides'
	// columns (row by row), corners.
	type region struct {
		n    int
		tile func(h kir.Expr) (row, col []kir.Stmt) // h: the element's index in the region
	}
	hr, hc := func(k int) string { return fmt.Sprintf("hr_%s_%d", t.name, k) }, func(k int) string { return fmt.Sprintf("hc_%s_%d", t.name, k) }
	sides := func(h kir.Expr, k int, firstRow func(q kir.Expr) kir.Expr) []kir.Stmt {
		// 2*h2 elements a row: h2 on the left, h2 on the right of the tile.
		m := kir.Bin("%", h, kir.I(2*h2))
		return []kir.Stmt{
			kir.Set(kir.Id(hr(k)), firstRow(kir.Bin("/", h, kir.I(2*h2)))),
			kir.Set(kir.Id(hc(k)), &kir.Cond{C: &kir.Binary{Op: "<", X: m, Y: kir.I(h2)}, A: m, B: kir.Add(m, kir.I(BX))}),
		}
	}
	var regions []func(h kir.Expr, k int) []kir.Stmt
	var sizes []int
	if h1 > 0 {
		for _, first := range []int{0, TY + h1} {
			sizes = append(sizes, h1*BX)
			regions = append(regions, func(h kir.Expr, k int) []kir.Stmt {
				return []kir.Stmt{
					kir.Set(kir.Id(hr(k)), kir.Add(kir.Bin("/", h, kir.I(BX)), kir.I(first))),
					kir.Set(kir.Id(hc(k)), kir.Add(kir.Bin("%", h, kir.I(BX)), kir.I(h2))),
				}
			})
		}
	}
	if h2 > 0 {
		sizes = append(sizes, 2*h2*TY)
		regions = append(regions, func(h kir.Expr, k int) []kir.Stmt {
			return sides(h, k, func(q kir.Expr) kir.Expr { return kir.Add(q, kir.I(h1)) })
		})
	}
	if diag && h1 > 0 && h2 > 0 {
		sizes = append(sizes, 4*h1*h2)
		regions = append(regions, func(h kir.Expr, k int) []kir.Stmt {
			return sides(h, k, func(q kir.Expr) kir.Expr {
				return &kir.Cond{C: &kir.Binary{Op: "<", X: q, Y: kir.I(h1)}, A: q, B: kir.Add(q, kir.I(TY))}
			})
		})
	}
	H := 0
	for _, n := range sizes {
		H += n
	}
	var slots []edgeSlot
	ty := kir.FromIR(g.Type)
	for k := 0; k*threads < H; k++ {
		hv := fmt.Sprintf("hh_%s_%d", t.name, k)
		h := kir.Id(hv)
		ep.decls = append(ep.decls,
			&kir.Decl{Name: hv, Type: kir.I32, Init: kir.Add(kir.Id("tid"), kir.I(k*threads))},
			&kir.Decl{Name: hr(k), Type: kir.I32, Init: kir.I(0)},
			&kir.Decl{Name: hc(k), Type: kir.I32, Init: kir.I(0)})
		// The last region holding h: if h >= start(last) {...} else if h >= start(last-1) ...
		starts := make([]int, len(sizes))
		for i := 1; i < len(sizes); i++ {
			starts[i] = starts[i-1] + sizes[i-1]
		}
		var place func(i int) []kir.Stmt
		place = func(i int) []kir.Stmt {
			if i == 0 {
				return regions[0](h, k)
			}
			return []kir.Stmt{&kir.If{Cond: &kir.Binary{Op: ">=", X: h, Y: kir.I(starts[i])},
				Then: regions[i](kir.Bin("-", h, kir.I(starts[i])), k), Else: place(i - 1)}}
		}
		chain := place(len(regions) - 1)
		ep.decls = append(ep.decls, chain...)
		slot := edgeSlot{
			index: kir.Add(kir.Mul(kir.Id(hr(k)), kir.I(W)), kir.Id(hc(k))),
			y:     kir.Add(kir.Bin("-", o1, kir.I(h1)), kir.Id(hr(k))),
			x:     kir.Add(kir.Bin("-", o2, kir.I(h2)), kir.Id(hc(k))),
		}
		if (k+1)*threads > H {
			slot.cond = &kir.Binary{Op: "<", X: h, Y: kir.I(H)}
		}
		for d := 0; d < pf*rz; d++ {
			name := fmt.Sprintf("hq_%s_%d_%d", t.name, k, d)
			slot.registers = append(slot.registers, name)
			ep.decls = append(ep.decls, &kir.Decl{Name: name, Type: ty, Init: zeroOf(ty)})
		}
		slots = append(slots, slot)
	}
	each := func(stmt func(s edgeSlot) []kir.Stmt) []kir.Stmt {
		var out []kir.Stmt
		for _, s := range slots {
			if s.cond == nil {
				out = append(out, stmt(s)...)
			} else {
				out = append(out, &kir.If{Cond: s.cond, Then: stmt(s)})
			}
		}
		return out
	}
	read := func(e *emitter, z kir.Expr, s edgeSlot, general bool) kir.Expr {
		if general {
			return e.globalReadAt(g, level, nil, []kir.Expr{z, s.y, s.x}, nil, true)
		}
		return e.globalReadAt(g, level, nil, []kir.Expr{z, s.y, s.x}, []int{0, 0, 0}, false)
	}
	// The queues hold planes z .. z+pf*rz-1 at a step's start: the step stores its rz planes,
	// moves the rest down and loads planes z+pf*rz .. z+pf*rz+rz-1.
	n := pf * rz
	for d := 0; d < n; d++ {
		z := kir.Add(kir.Id("zbeg"), kir.I(d))
		ep.prime = append(ep.prime, each(func(s edgeSlot) []kir.Stmt {
			return []kir.Stmt{kir.Set(kir.Id(s.registers[d]), read(em, z, s, true))}
		})...)
	}
	ep.stores = append(ep.stores, each(func(s edgeSlot) []kir.Stmt {
		var out []kir.Stmt
		for j := 0; j < rz; j++ {
			out = append(out, kir.Set(at(j, s.index), kir.Id(s.registers[j])))
		}
		for d := 0; d+rz < n; d++ {
			out = append(out, kir.Set(kir.Id(s.registers[d]), kir.Id(s.registers[d+rz])))
		}
		return out
	})...)
	loads := func(e *emitter, general bool) []kir.Stmt {
		return each(func(s edgeSlot) []kir.Stmt {
			var out []kir.Stmt
			for j := 0; j < rz; j++ {
				zn := kir.Add(kir.Id("z"), kir.I(n+j))
				out = append(out, kir.Set(kir.Id(s.registers[n-rz+j]), read(e, zn, s, general)))
			}
			return out
		})
	}
	ep.loads, ep.fastLoads = loads(em, true), loads(fast, false)
	return ep
}
