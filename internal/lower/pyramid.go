package lower

import (
	"fmt"

	"tempest/internal/ir"
	"tempest/internal/kir"
	"tempest/internal/plan"
)

// pyramid: overlapped temporal tiling (SL, Meng-Skadron; LIFT's overlapped tiling). A block
// loads a tile of every state grid into shared memory, advances it PH steps there while the
// valid region shrinks by the stencil's reach each step, and writes the centre. Cells outside
// the domain are kept inside the tile as the reference defines them: along periodic axes they
// are computed like the cells they wrap to (every state grid must be periodic along the same
// axes); otherwise each step refills them from the tile by the grid's boundary rule.
func lowerPyramid(p *ir.Program, shape []int, pl plan.Plan, wide bool) (*Lowered, error) {
	if pl.RX > 1 {
		return lowerPyramidRX(p, shape, pl, wide)
	}
	if err := periodicAgree(p); err != nil {
		return nil, fmt.Errorf("plan %s: %w", pl, err)
	}
	main, shared, err := pyramidKernel(p, shape, pl, wide, pl.PH, "tempest_pyramid")
	if err != nil {
		return nil, err
	}
	low := &Lowered{Module: &kir.Module{Kernels: []*kir.Kernel{main.k}, Uses64: uses64(p)}, SharedBytes: shared}
	low.Launches = append(low.Launches, main.launch)
	if pl.PH > 1 {
		one, _, err := pyramidKernel(p, shape, pl, wide, 1, "tempest_pyramid_1")
		if err != nil {
			return nil, err
		}
		low.Module.Kernels = append(low.Module.Kernels, one.k)
		low.Launches = append(low.Launches, one.launch)
	}
	return low, nil
}

// periodicAgree checks that every state grid is periodic along the same axes.
func periodicAgree(p *ir.Program) error {
	var first *ir.Grid
	for _, u := range p.Updates {
		if first == nil {
			first = u.Grid
			continue
		}
		for a := range p.Axes {
			if (u.Grid.BC[a].Kind == ir.Periodic) != (first.BC[a].Kind == ir.Periodic) {
				return fmt.Errorf("overlapped tiling needs every state grid periodic along the same axes (%s and %s differ along %s)", first.Name, u.Grid.Name, p.Axes[a])
			}
		}
	}
	return nil
}

type builtKernel struct {
	k      *kir.Kernel
	launch Launch
}

func pyramidKernel(p *ir.Program, shape []int, pl plan.Plan, wide bool, ph int, name string) (builtKernel, int, error) {
	d := p.Dims()
	block := blockDims(pl)
	h := p.Reach()
	bsize := make([]int, d)
	outSize := make([]int, d)
	for a := 0; a < d; a++ {
		bsize[a] = block[d-1-a]
		outSize[a] = bsize[a] - 2*h[a]*ph
		if outSize[a] < 1 {
			return builtKernel{}, 0, fmt.Errorf("plan %s: a block of %d cells along %s leaves nothing after %d steps of reach %d; use a larger block or a lower ph",
				pl, bsize[a], p.Axes[a], ph, h[a])
		}
	}
	roles := func(g *ir.Grid) []Role {
		r := readRoles(g)
		if g.Update != nil && g.Levels > 1 {
			r = append(r, Out1)
		}
		return r
	}
	ps, args := params(p, roles)
	k := &kir.Kernel{Name: name, Params: ps}
	var body []kir.Stmt
	local := make([]kir.Expr, d)
	u := make([]kir.Expr, d)   // unwrapped global coordinates
	eff := make([]kir.Expr, d) // coordinates the cell computes as (wrapped along periodic axes)
	inDom := make([]kir.Expr, d)
	T := 1
	tstride := make([]int, d)
	for a := d - 1; a >= 0; a-- {
		tstride[a] = T
		T *= bsize[a]
	}
	periodic := make([]bool, d)
	if len(p.Updates) > 0 {
		for a := range periodic {
			periodic[a] = p.Updates[0].Grid.BC[a].Kind == ir.Periodic
		}
	}
	for a := d - 1; a >= 0; a-- {
		dim := d - 1 - a
		n := kir.Id(fmt.Sprintf("n%d", a))
		local[a] = kir.Id(fmt.Sprintf("l%d", a))
		u[a] = kir.Id(fmt.Sprintf("u%d", a))
		body = append(body,
			&kir.Decl{Name: fmt.Sprintf("l%d", a), Type: kir.I32, Init: &kir.Builtin{D: kir.ThreadIdx, Axis: dim}},
			&kir.Decl{Name: fmt.Sprintf("u%d", a), Type: kir.I32, Init: kir.Add(kir.Bin("-", kir.Mul(&kir.Builtin{D: kir.BlockIdx, Axis: dim}, kir.I(outSize[a])), kir.I(h[a]*ph)), local[a])})
		inDom[a] = &kir.Binary{Op: "&&", X: &kir.Binary{Op: ">=", X: u[a], Y: kir.I(0)}, Y: &kir.Binary{Op: "<", X: u[a], Y: n}}
		eff[a] = u[a]
		if periodic[a] {
			body = append(body, &kir.Decl{Name: fmt.Sprintf("e%d", a), Type: kir.I32, Init: mapIndex(ir.Periodic, u[a], n, anyOffset)})
			eff[a] = kir.Id(fmt.Sprintf("e%d", a))
		}
	}
	tid := kir.Expr(local[0])
	for a := 1; a < d; a++ {
		tid = kir.Add(kir.Mul(tid, kir.I(bsize[a])), local[a])
	}
	body = append(body, &kir.Decl{Name: "tid", Type: kir.I32, Init: tid})
	// emulated: the cell lies in the domain along every non-periodic axis, so it computes.
	var emulated kir.Expr = &kir.BoolLit{V: true}
	for a := 0; a < d; a++ {
		if !periodic[a] {
			emulated = and(emulated, inDom[a])
		}
	}
	body = append(body, &kir.Decl{Name: "computes", Type: kir.Bool, Init: emulated})

	// Shared slots per state grid: two (levels 1) or three (levels 2) tiles.
	shared := 0
	slots := map[int]int{}
	for _, up := range p.Updates {
		g := up.Grid
		n := 2
		if g.Levels > 1 {
			n = 3
		}
		slots[g.Index] = n
		body = append(body, &kir.ArrayDecl{Name: "s_" + g.Name, Type: kir.FromIR(g.Type), Space: kir.Shared, Len: n * T})
		shared += n * T * g.Type.Size()
	}
	if shared > staticSharedLimit {
		return builtKernel{}, 0, fmt.Errorf("plan %s: its tiles need %d bytes of shared memory (at most %d); choose smaller blocks", pl, shared, staticSharedLimit)
	}
	// Slot offsets at internal step kk: cur (and prev) read, next written.
	slotOff := func(g *ir.Grid, which int, kk kir.Expr) kir.Expr {
		// which: 0 = cur, -1 = prev, 1 = next
		if slots[g.Index] == 2 {
			return kir.Mul(kir.Bin("%", kir.Add(kk, kir.I(max(which, 0))), kir.I(2)), kir.I(T))
		}
		return kir.Mul(kir.Bin("%", kir.Add(kk, kir.I(which+1)), kir.I(3)), kir.I(T))
	}
	// Level 0: every tile cell reads its value through the boundary rules.
	em := &emitter{p: p, wide: wide, coords: u, step: kir.Id("step0"), lets: map[*ir.Let]string{}}
	for _, up := range p.Updates {
		g := up.Grid
		body = append(body, kir.Set(kir.At("s_"+g.Name, kir.Add(slotOff(g, 0, kir.I(0)), kir.Id("tid"))), em.globalReadAt(g, 0, nil, u, nil, true)))
		if g.Levels > 1 {
			body = append(body, kir.Set(kir.At("s_"+g.Name, kir.Add(slotOff(g, -1, kir.I(0)), kir.Id("tid"))), em.globalReadAt(g, 1, nil, u, nil, true)))
		}
	}
	body = append(body, &kir.Barrier{})

	// One internal step.
	kk := kir.Id("k")
	var step []kir.Stmt
	// valid: the cell is at least (k+1) reaches from the tile's edge.
	var valid kir.Expr = &kir.BoolLit{V: true}
	for a := 0; a < d; a++ {
		if h[a] == 0 {
			continue
		}
		lo := kir.Mul(kir.Add(kk, kir.I(1)), kir.I(h[a]))
		valid = and(valid, &kir.Binary{Op: "&&", X: &kir.Binary{Op: ">=", X: local[a], Y: lo}, Y: &kir.Binary{Op: "<", X: local[a], Y: kir.Bin("-", kir.I(bsize[a]), lo)}})
	}
	step = append(step, &kir.Decl{Name: "valid", Type: kir.Bool, Init: valid})
	cem := &emitter{p: p, wide: wide, coords: eff, step: kir.Add(kir.Id("step0"), kk), lets: map[*ir.Let]string{}}
	cem.read = func(em *emitter, l *ir.Load) kir.Expr {
		if l.G.Update == nil || l.Layer != nil {
			return em.globalRead(l.G, l.Level, l.Layer, eff, l.Off)
		}
		which := 0
		if l.Level == 1 {
			which = -1
		}
		idx := kir.Add(slotOff(l.G, which, kk), kir.Id("tid"))
		for a, o := range l.Off {
			idx = kir.Add(idx, kir.I(o*tstride[a]))
		}
		return kir.At("s_"+l.G.Name, idx)
	}
	var compute []kir.Stmt
	cem.out = &compute
	cem.declareUpdateLets(p.Updates)
	for _, up := range p.Updates {
		g := up.Grid
		dst := kir.At("s_"+g.Name, kir.Add(slotOff(g, 1, kk), kir.Id("tid")))
		store := kir.Set(dst, cem.expr(up.Value))
		if rim := inRim(g, eff); rim != nil {
			keep := kir.Set(dst, kir.At("s_"+g.Name, kir.Add(slotOff(g, 0, kk), kir.Id("tid"))))
			compute = append(compute, &kir.If{Cond: rim, Then: []kir.Stmt{keep}, Else: []kir.Stmt{store}})
		} else {
			compute = append(compute, store)
		}
	}
	step = append(step, &kir.If{Cond: and(kir.Id("valid"), kir.Id("computes")), Then: compute})
	step = append(step, &kir.Barrier{})
	// Ghost cells along non-periodic axes take their boundary value from the new level.
	var fill []kir.Stmt
	for _, up := range p.Updates {
		g := up.Grid
		fill = append(fill, kir.Set(kir.At("s_"+g.Name, kir.Add(slotOff(g, 1, kk), kir.Id("tid"))),
			ghostValue(p, g, u, local, bsize, tstride, periodic, inDom, kir.Add(slotOff(g, 1, kk), kir.I(0)), kir.Add(kir.Id("step0"), kir.Add(kk, kir.I(1))))))
	}
	if !allPeriodic(periodic) {
		// Only blocks whose tile reaches past the domain along a non-periodic axis have ghost
		// cells: the others skip the fill and its barrier (the one after the compute orders
		// the levels: each reads the slot the level before wrote and writes the other).
		step = append(step, &kir.If{Cond: pyramidGhosts(periodic, outSize, bsize, h, ph), Then: []kir.Stmt{
			&kir.If{Cond: and(kir.Id("valid"), &kir.Unary{Op: "!", X: kir.Id("computes")}), Then: fill},
			&kir.Barrier{},
		}})
	}
	body = append(body, &kir.For{Var: "k", From: kir.I(0), To: kir.I(ph), Step: 1, Body: step})

	// Write the centre.
	var out kir.Expr = &kir.BoolLit{V: true}
	for a := 0; a < d; a++ {
		lo := kir.I(h[a] * ph)
		out = and(out, and(&kir.Binary{Op: ">=", X: local[a], Y: lo}, &kir.Binary{Op: "<", X: local[a], Y: kir.I(bsize[a] - h[a]*ph)}))
		out = and(out, inDom[a])
	}
	var write []kir.Stmt
	write = append(write, &kir.Decl{Name: "idx", Type: em.idxType(), Init: em.linear(u, nil)})
	for _, up := range p.Updates {
		g := up.Grid
		write = append(write, kir.Set(kir.At(bufName(g, Out0), kir.Id("idx")), kir.At("s_"+g.Name, kir.Add(slotOff(g, 0, kir.I(ph)), kir.Id("tid")))))
		if g.Levels > 1 {
			write = append(write, kir.Set(kir.At(bufName(g, Out1), kir.Id("idx")), kir.At("s_"+g.Name, kir.Add(slotOff(g, -1, kir.I(ph)), kir.Id("tid")))))
		}
	}
	body = append(body, &kir.If{Cond: out, Then: write})
	k.Body = body

	return builtKernel{k: k, launch: Launch{Kernel: name, Block: block, Args: args, Steps: ph}}, shared, nil
}

// pyramidGhosts is the block-uniform condition that a pyramid block's tile reaches past the
// domain along a non-periodic axis (at least one axis is not periodic): only such blocks have
// ghost cells to fill at each level.
func pyramidGhosts(periodic []bool, outSize, bsize, h []int, ph int) kir.Expr {
	d := len(periodic)
	var ghosts kir.Expr
	for a := 0; a < d; a++ {
		if periodic[a] {
			continue
		}
		first := kir.Bin("-", kir.Mul(&kir.Builtin{D: kir.BlockIdx, Axis: d - 1 - a}, kir.I(outSize[a])), kir.I(h[a]*ph))
		var out kir.Expr = &kir.Binary{Op: "||", X: &kir.Binary{Op: "<", X: first, Y: kir.I(0)},
			Y: &kir.Binary{Op: ">", X: kir.Add(first, kir.I(bsize[a])), Y: kir.Id(fmt.Sprintf("n%d", a))}}
		if ghosts != nil {
			out = &kir.Binary{Op: "||", X: ghosts, Y: out}
		}
		ghosts = out
	}
	return ghosts
}

func and(x, y kir.Expr) kir.Expr {
	if b, ok := x.(*kir.BoolLit); ok && b.V {
		return y
	}
	if b, ok := y.(*kir.BoolLit); ok && b.V {
		return x
	}
	return &kir.Binary{Op: "&&", X: x, Y: y}
}

func allPeriodic(p []bool) bool {
	for _, v := range p {
		if !v {
			return false
		}
	}
	return true
}

// ghostValue is a cell's boundary value at a new level, from the tile (slot at offset base):
// index rules remap the coordinates of non-periodic axes where the cell lies outside, then the
// first axis with a value rule that is still outside decides, as in the reference.
func ghostValue(p *ir.Program, g *ir.Grid, u, local []kir.Expr, bsize, tstride []int, periodic []bool, inDom []kir.Expr, base kir.Expr, step kir.Expr) kir.Expr {
	d := len(u)
	q := make([]kir.Expr, d)    // coordinates after index rules (raw on value axes)
	near := make([]kir.Expr, d) // nearest position for the tile read
	var valueAxes []int
	for a := 0; a < d; a++ {
		n := kir.Id(fmt.Sprintf("n%d", a))
		switch k := g.BC[a].Kind; {
		case periodic[a]:
			q[a], near[a] = u[a], u[a]
		case k == ir.Constant || k == ir.Edge:
			valueAxes = append(valueAxes, a)
			q[a] = u[a]
			near[a] = mapIndex(ir.Clamp, u[a], n, anyOffset)
		default:
			q[a] = mapIndex(k, u[a], n, anyOffset)
			near[a] = q[a]
		}
	}
	// Tile position of near, clamped into the tile so that cells nobody needs stay in bounds.
	var idx kir.Expr = base
	for a := 0; a < d; a++ {
		origin := kir.Bin("-", u[a], local[a])
		l := &kir.Call{Fn: "min", T: kir.I32, Args: []kir.Expr{&kir.Call{Fn: "max", T: kir.I32, Args: []kir.Expr{kir.Bin("-", near[a], origin), kir.I(0)}}, kir.I(bsize[a] - 1)}}
		idx = kir.Add(idx, kir.Mul(l, kir.I(tstride[a])))
	}
	v := kir.Expr(kir.At("s_"+g.Name, idx))
	em := &emitter{p: p, coords: q, step: step, lets: map[*ir.Let]string{}, edge: v}
	for i := len(valueAxes) - 1; i >= 0; i-- {
		a := valueAxes[i]
		bc := g.BC[a]
		var rule kir.Expr
		if bc.Kind == ir.Constant {
			rule = em.expr(bc.Value)
		} else {
			rule = em.expr(bc.Value)
		}
		v = &kir.Cond{C: &kir.Unary{Op: "!", X: inDom[a]}, A: rule, B: v}
	}
	return v
}
