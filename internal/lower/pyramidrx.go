package lower

import (
	"fmt"

	"tempest/internal/ir"
	"tempest/internal/kir"
	"tempest/internal/plan"
)

// pyramidRX: the pyramid of a 1D program with a register tile (plan pyramid with rx > 1). A
// block of bx threads covers a tile of bx x rx cells, each thread rx neighbouring cells held
// in registers, and advances them ph steps: per step a thread publishes only its first and
// last R cells (R the reach) to shared memory, waits at one barrier, and reads the R cells on
// either side of its run from its neighbours' published edges; every other read of the update
// comes from its own registers. The shared-memory pyramid reads and writes every cell's whole
// neighbourhood in shared memory each step, one cell per thread; here a step costs 4R shared
// accesses per rx cells, so 1D stencils, whose tiles are long and cheap, run at the compute
// rate of their registers (FlashFFTStencil and LoRAStencil fuse 5 to 14 steps of 1D heat per
// launch). The edges alternate between two buffers, so that one barrier per step suffices: a
// thread overwrites a buffer only after the barrier that every reader of its old contents
// passed after reading. The tile is loaded and stored through shared memory in coalesced rows
// (each thread's run lies rx cells apart from its neighbour's: direct accesses would stride).
// Cells outside the tile's valid region read garbage from the tile's ends, which never reaches
// an output: the halo shrinks by R a step, as in any pyramid. Only 1D programs whose state
// grids keep one time level and hold a fixed rim at least R wide (plan.PyramidRXApplies).
func lowerPyramidRX(p *ir.Program, shape []int, pl plan.Plan, wide bool) (*Lowered, error) {
	if err := plan.PyramidRXApplies(p); err != nil {
		return nil, fmt.Errorf("plan %s: %w", pl, err)
	}
	main, shared, err := pyramidRXKernel(p, pl, wide, pl.PH, "tempest_pyramid")
	if err != nil {
		return nil, err
	}
	low := &Lowered{Module: &kir.Module{Kernels: []*kir.Kernel{main.k}, Uses64: uses64(p)}, SharedBytes: shared}
	low.Launches = append(low.Launches, main.launch)
	for _, ph := range plan.Halvings(pl.PH)[1:] {
		// Shallower launches for the steps ph does not divide (the host's schedule): a
		// remainder takes about log2(ph) launches instead of one a step.
		sh, _, err := pyramidRXKernel(p, pl, wide, ph, fmt.Sprintf("tempest_pyramid_%d", ph))
		if err != nil {
			return nil, err
		}
		low.Module.Kernels = append(low.Module.Kernels, sh.k)
		low.Launches = append(low.Launches, sh.launch)
	}
	return low, nil
}

// pyramidRXKernel is the kernel of ph steps (lowerPyramidRX).
func pyramidRXKernel(p *ir.Program, pl plan.Plan, wide bool, ph int, name string) (builtKernel, int, error) {
	R, bx, rx := p.Reach()[0], pl.BX, pl.RX
	T := pl.PyramidCells()[0]
	out := T - 2*R*ph
	if out < 1 {
		return builtKernel{}, 0, fmt.Errorf("plan %s: a tile of %d cells (bx x rx) leaves nothing after %d steps of reach %d; use a larger tile or a lower ph", pl, T, ph, R)
	}
	ps, args := params(p, readRoles)
	k := &kir.Kernel{Name: name, Params: ps}
	tid := kir.Id("tid")
	body := []kir.Stmt{
		&kir.Decl{Name: "tid", Type: kir.I32, Init: &kir.Builtin{D: kir.ThreadIdx, Axis: 0}},
		// The tile's first cell: outputs start R ph cells in.
		&kir.Decl{Name: "first", Type: kir.I32, Init: kir.Bin("-", kir.Mul(&kir.Builtin{D: kir.BlockIdx, Axis: 0}, kir.I(out)), kir.I(R*ph))},
	}
	// One shared array per state grid: the staging rows of the tile's load and store (rx+1
	// words a thread, so that a thread's run is conflict-free), reused between them for the
	// two buffers of edges (2R rows of bx words each).
	stage := bx * (rx + 1)
	words := max(stage, 2*2*R*bx)
	shared := 0
	for _, u := range p.Updates {
		g := u.Grid
		body = append(body, &kir.ArrayDecl{Name: "s_" + g.Name, Type: kir.FromIR(g.Type), Space: kir.Shared, Len: words})
		shared += words * g.Type.Size()
	}
	if shared > staticSharedLimit {
		return builtKernel{}, 0, fmt.Errorf("plan %s: its tiles need %d bytes of shared memory (at most %d); choose a smaller bx or rx", pl, shared, staticSharedLimit)
	}
	vName := func(g *ir.Grid, i int) string { return fmt.Sprintf("v_%s_%d", g.Name, i) }
	// Tile cell q (0 .. T-1) of row s = q / bx, loaded by thread q % bx, lies at word
	// (q / rx)(rx+1) + q % rx of the staging rows.
	stageAt := func(q kir.Expr) kir.Expr {
		return kir.Add(kir.Mul(kir.Bin("/", q, kir.I(rx)), kir.I(rx+1)), kir.Bin("%", q, kir.I(rx)))
	}
	em0 := &emitter{p: p, wide: wide, lets: map[*ir.Let]string{}}
	n0 := kir.Id("n0")
	for s := 0; s < rx; s++ {
		q := kir.Add(kir.I(s*bx), tid)
		c := kir.Min(kir.Max(kir.Add(kir.Id("first"), q), kir.I(0)), kir.Bin("-", n0, kir.I(1)))
		for _, u := range p.Updates {
			g := u.Grid
			body = append(body, kir.Set(kir.At("s_"+g.Name, stageAt(q)), kir.At(bufName(g, In0), em0.linear([]kir.Expr{c}, nil))))
		}
	}
	body = append(body, &kir.Barrier{})
	for _, u := range p.Updates {
		g := u.Grid
		for i := 0; i < rx; i++ {
			body = append(body, &kir.Decl{Name: vName(g, i), Type: kir.FromIR(g.Type),
				Init: kir.At("s_"+g.Name, kir.Add(kir.Mul(tid, kir.I(rx+1)), kir.I(i)))})
		}
	}
	// The edges reuse the staging rows: every thread has read its run first.
	body = append(body, &kir.Barrier{})

	// One step: publish the edges, wait, compute the run from registers and the neighbours'
	// edges, then take the new values.
	kk := kir.Id("k")
	buf := kir.Mul(kir.Bin("&", kk, kir.I(1)), kir.I(2*R*bx))
	edge := func(row int, thread kir.Expr) kir.Expr { return kir.Add(buf, kir.Add(kir.I(row*bx), thread)) }
	var step []kir.Stmt
	for _, u := range p.Updates {
		g := u.Grid
		for j := 0; j < R; j++ {
			step = append(step,
				kir.Set(kir.At("s_"+g.Name, edge(j, tid)), kir.Id(vName(g, j))),
				kir.Set(kir.At("s_"+g.Name, edge(R+j, tid)), kir.Id(vName(g, rx-R+j))))
		}
	}
	step = append(step, &kir.Barrier{})
	// l_g_j is cell -R+j of the run (the left neighbour's last R), r_g_j cell rx+j (the right
	// neighbour's first R). The first and last threads read their block's other end: garbage
	// for cells that feed no output.
	lName := func(g *ir.Grid, j int) string { return fmt.Sprintf("l_%s_%d", g.Name, j) }
	rName := func(g *ir.Grid, j int) string { return fmt.Sprintf("r_%s_%d", g.Name, j) }
	for _, u := range p.Updates {
		g := u.Grid
		for j := 0; j < R; j++ {
			step = append(step,
				&kir.Decl{Name: lName(g, j), Type: kir.FromIR(g.Type), Init: kir.At("s_"+g.Name, edge(R+j, kir.Bin("-", tid, kir.I(1))))},
				&kir.Decl{Name: rName(g, j), Type: kir.FromIR(g.Type), Init: kir.At("s_"+g.Name, edge(j, kir.Add(tid, kir.I(1))))})
		}
	}
	// n_g_i is cell i's new value: its old one where the cell keeps it (the rim).
	nName := func(g *ir.Grid, i int) string { return fmt.Sprintf("n_%s_%d", g.Name, i) }
	var sets []kir.Stmt
	for _, u := range p.Updates {
		g := u.Grid
		for i := 0; i < rx; i++ {
			step = append(step, &kir.Decl{Name: nName(g, i), Type: kir.FromIR(g.Type), Init: kir.Id(vName(g, i))})
			sets = append(sets, kir.Set(kir.Id(vName(g, i)), kir.Id(nName(g, i))))
		}
	}
	loop := func(checked bool) []kir.Stmt {
		st := append([]kir.Stmt(nil), step...)
		for i := 0; i < rx; i++ {
			st = append(st, &kir.Block{Body: pyramidRXCell(p, wide, i, rx, R, checked, vName, lName, rName, nName)})
		}
		return []kir.Stmt{&kir.For{Var: "k", From: kir.I(0), To: kir.I(ph), Step: 1, Body: append(st, sets...)}}
	}
	// Blocks whose tile lies inside the interior (all but the two at the ends) skip the rim's
	// checks: the condition is uniform over the block, so every thread reaches the barriers
	// of the loop it runs.
	rim := p.Updates[0].Grid.Rim[0]
	inside := and(ge(kir.Id("first"), kir.I(rim)), &kir.Binary{Op: "<=", X: kir.Add(kir.Id("first"), kir.I(T)), Y: kir.Bin("-", n0, kir.I(rim))})
	body = append(body, &kir.If{Cond: inside, Then: loop(false), Else: loop(true)})

	// Store the centre through the staging rows, once every thread has read its last edges.
	body = append(body, &kir.Barrier{})
	for _, u := range p.Updates {
		g := u.Grid
		for i := 0; i < rx; i++ {
			body = append(body, kir.Set(kir.At("s_"+g.Name, kir.Add(kir.Mul(tid, kir.I(rx+1)), kir.I(i))), kir.Id(vName(g, i))))
		}
	}
	body = append(body, &kir.Barrier{})
	for s := 0; s < rx; s++ {
		q := kir.Add(kir.I(s*bx), tid)
		qn := fmt.Sprintf("q%d", s)
		c := kir.Add(kir.Id("first"), kir.Id(qn))
		var st []kir.Stmt
		for _, u := range p.Updates {
			g := u.Grid
			st = append(st, kir.Set(kir.At(bufName(g, Out0), em0.linear([]kir.Expr{c}, nil)), kir.At("s_"+g.Name, stageAt(kir.Id(qn)))))
		}
		cond := and(and(ge(kir.Id(qn), kir.I(R*ph)), lt(kir.Id(qn), kir.I(T-R*ph))), and(ge(c, kir.I(0)), lt(c, n0)))
		body = append(body, &kir.Block{Body: []kir.Stmt{&kir.Decl{Name: qn, Type: kir.I32, Init: q}, &kir.If{Cond: cond, Then: st}}})
	}
	k.Body = body
	return builtKernel{k: k, launch: Launch{Kernel: name, Block: [3]int{bx, 1, 1}, Args: args, Steps: ph}}, shared, nil
}

// pyramidRXCell is cell i's step of a pyramidRX run: its coordinate, and its new values
// computed from the run's registers (v), the neighbours' edges (l, r) and other grids in
// global memory, into n, unless the cell lies in the rim (or outside the domain; checked:
// the tile reaches the rim, else no cell of it does).
func pyramidRXCell(p *ir.Program, wide bool, i, rx, R int, checked bool, v, l, r, n func(*ir.Grid, int) string) []kir.Stmt {
	cname := fmt.Sprintf("c%d", i)
	cell := []kir.Stmt{&kir.Decl{Name: cname, Type: kir.I32, Init: kir.Add(kir.Id("first"), kir.Add(kir.Mul(kir.Id("tid"), kir.I(rx)), kir.I(i)))}}
	coords := []kir.Expr{kir.Id(cname)}
	em := &emitter{p: p, wide: wide, coords: coords, step: kir.Add(kir.Id("step0"), kir.Id("k")), lets: map[*ir.Let]string{}}
	em.read = func(em *emitter, ld *ir.Load) kir.Expr {
		if ld.G.Update == nil || ld.Layer != nil {
			// Other grids from global memory: the cell computes only inside the interior.
			return em.globalRead(ld.G, ld.Level, ld.Layer, coords, ld.Off)
		}
		switch j := i + ld.Off[0]; {
		case j < 0:
			return kir.Id(l(ld.G, R+j))
		case j >= rx:
			return kir.Id(r(ld.G, j-rx))
		default:
			return kir.Id(v(ld.G, j))
		}
	}
	var compute []kir.Stmt
	em.out = &compute
	em.declareUpdateLets(p.Updates)
	for _, u := range p.Updates {
		compute = append(compute, kir.Set(kir.Id(n(u.Grid, i)), em.expr(u.Value)))
	}
	// Rim cells (and cells outside the domain) keep their values: every state grid's rim is
	// at least the reach wide (plan.PyramidRXApplies), and the first grid's decides.
	if !checked {
		return append(cell, compute...)
	}
	rim := inRim(p.Updates[0].Grid, coords)
	return append(cell, &kir.If{Cond: &kir.Unary{Op: "!", X: rim}, Then: compute})
}
