package lower

import (
	"fmt"

	"tempest/internal/ir"
	"tempest/internal/kir"
	"tempest/internal/plan"
)

// cellCoords declares c0..c{d-1} for a thread-per-cell mapping (x = fastest axis) and returns
// them with the statement that leaves when the thread lies outside the domain.
func cellCoords(d int) ([]kir.Stmt, []kir.Expr) {
	var body []kir.Stmt
	coords := make([]kir.Expr, d)
	var outside kir.Expr
	for a := d - 1; a >= 0; a-- {
		dim := d - 1 - a
		name := fmt.Sprintf("c%d", a)
		body = append(body, &kir.Decl{Name: name, Type: kir.I32, Init: kir.Add(kir.Mul(&kir.Builtin{D: kir.BlockIdx, Axis: dim}, &kir.Builtin{D: kir.BlockDim, Axis: dim}), &kir.Builtin{D: kir.ThreadIdx, Axis: dim})})
		coords[a] = kir.Id(name)
		o := &kir.Binary{Op: ">=", X: kir.Id(name), Y: kir.Id(fmt.Sprintf("n%d", a))}
		if outside == nil {
			outside = o
		} else {
			outside = &kir.Binary{Op: "||", X: outside, Y: o}
		}
	}
	body = append(body, &kir.If{Cond: outside, Then: []kir.Stmt{&kir.Return{}}})
	return body, coords
}

// inRim is the condition that coordinates lie in g's fixed rim (nil when it has none).
func inRim(g *ir.Grid, coords []kir.Expr) kir.Expr {
	var cond kir.Expr
	for a, r := range g.Rim {
		if r == 0 {
			continue
		}
		n := kir.Id(fmt.Sprintf("n%d", a))
		c := &kir.Binary{Op: "||", X: &kir.Binary{Op: "<", X: coords[a], Y: kir.I(r)}, Y: &kir.Binary{Op: ">=", X: coords[a], Y: kir.Bin("-", n, kir.I(r))}}
		if cond == nil {
			cond = c
		} else {
			cond = &kir.Binary{Op: "||", X: cond, Y: c}
		}
	}
	return cond
}

// storeUpdatesSplit is storeUpdates twice: a version without boundary handling for cells at
// least the program's reach from every edge (nearly all of them), and the general one.
func storeUpdatesSplit(em *emitter, idx kir.Expr) []kir.Stmt {
	r := em.p.Reach()
	var cond kir.Expr
	for a, v := range r {
		if v == 0 {
			continue
		}
		n := kir.Id(fmt.Sprintf("n%d", a))
		c := &kir.Binary{Op: "&&", X: &kir.Binary{Op: ">=", X: em.coords[a], Y: kir.I(v)}, Y: &kir.Binary{Op: "<", X: em.coords[a], Y: kir.Bin("-", n, kir.I(v))}}
		if cond == nil {
			cond = c
		} else {
			cond = &kir.Binary{Op: "&&", X: cond, Y: c}
		}
	}
	if cond == nil {
		return storeUpdates(em, idx)
	}
	fast := *em
	fast.interior = true
	fast.lets = map[*ir.Let]string{}
	slow := *em
	slow.lets = map[*ir.Let]string{}
	return []kir.Stmt{&kir.If{Cond: cond, Then: storeUpdates(&fast, idx), Else: storeUpdates(&slow, idx)}}
}

// storeUpdates evaluates every update at the cell and stores it at index idx; rim cells keep
// their current value.
func storeUpdates(em *emitter, idx kir.Expr) []kir.Stmt {
	var body []kir.Stmt
	em.out = &body
	em.declareUpdateLets(em.p.Updates)
	for _, u := range em.p.Updates {
		g := u.Grid
		store := kir.Set(&kir.Index{Array: kir.Id(bufName(g, Out0)), Idx: idx}, em.expr(u.Value))
		if rim := inRim(g, em.coords); rim != nil {
			keep := kir.Set(&kir.Index{Array: kir.Id(bufName(g, Out0)), Idx: idx}, &kir.Index{Array: kir.Id(bufName(g, In0)), Idx: idx})
			body = append(body, &kir.If{Cond: rim, Then: []kir.Stmt{keep}, Else: []kir.Stmt{store}})
		} else {
			body = append(body, store)
		}
	}
	return body
}

// naive: a thread per cell, global memory, one step per launch.
func lowerNaive(p *ir.Program, shape []int, pl plan.Plan, wide bool) (*Lowered, error) {
	d := p.Dims()
	ps, args := params(p, readRoles)
	k := &kir.Kernel{Name: "tempest_naive", Params: ps}
	body, coords := cellCoords(d)
	em := &emitter{p: p, wide: wide, coords: coords, step: kir.Id("step0"), lets: map[*ir.Let]string{}}
	em.read = func(em *emitter, l *ir.Load) kir.Expr { return em.globalRead(l.G, l.Level, l.Layer, coords, l.Off) }
	idx := em.linear(coords, nil)
	body = append(body, &kir.Decl{Name: "idx", Type: em.idxType(), Init: idx})
	body = append(body, storeUpdatesSplit(em, kir.Id("idx"))...)
	k.Body = body
	block := [3]int{pl.BX, pl.BY, pl.BZ}
	return &Lowered{
		Module:   &kir.Module{Kernels: []*kir.Kernel{k}, Uses64: uses64(p)},
		Launches: []Launch{{Kernel: k.Name, Block: block, Args: args, Steps: 1}},
	}, nil
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

func uses64(p *ir.Program) bool {
	for _, g := range p.Grids {
		if g.Type == ir.F64 {
			return true
		}
	}
	for _, pr := range p.Params {
		if pr.Type == ir.F64 {
			return true
		}
	}
	found := false
	check := func(e ir.Expr) {
		ir.WalkDeep(e, func(x ir.Expr) {
			if x.(ir.Expr).Type() == ir.F64 {
				found = true
			}
		})
	}
	for _, u := range p.Updates {
		check(u.Value)
	}
	return found
}

// Lower lowers p for a plan and a domain size.
func Lower(p *ir.Program, shape []int, layers []int, pl plan.Plan) (*Lowered, error) {
	return lowerAs(p, shape, layers, pl, false)
}

// SharedBytes is the dynamic shared memory per block of pl's kernels for p at shape, with the
// errors Lower would give, without building n5d's kernel bodies: the tuner ranks hundreds of
// plans by their shared memory alone, and building a deep n5d kernel's unrolled body was
// most of that ranking's time.
func SharedBytes(p *ir.Program, shape []int, layers []int, pl plan.Plan) (int, error) {
	low, err := lowerAs(p, shape, layers, pl, true)
	if err != nil {
		return 0, err
	}
	return low.SharedBytes, nil
}

// rewritten is p with the rewrites the plan's lowering applies to its updates before any
// strategy lowers them (ordered squares; under fast math sums in their canonical order, centre
// terms first where the plan asks and fast math's algebra).
func rewritten(p *ir.Program, pl plan.Plan) *ir.Program {
	p = orderSquares(p)
	if pl.FastMath {
		p = canonicalOrder(p)
		if pl.CentreFirst {
			p = centreFirst(p)
		}
		p = fastMath(p)
	}
	return p
}

// lowerAs is Lower; with sizeOnly, n5d's result holds its SharedBytes and launches' depths
// (launches holding their Steps alone) but no kernels.
func lowerAs(p *ir.Program, shape []int, layers []int, pl plan.Plan, sizeOnly bool) (*Lowered, error) {
	wide := Wide(shape, layers)
	pitch := 0
	if pl.Align {
		if pl.Strategy != plan.N5D && pl.Strategy != plan.ForwardPlane && pl.Strategy != plan.InPlane {
			panic(fmt.Sprintf("internal error: plan %s: align on a strategy whose kernels index dense arrays", pl))
		}
		pitch = plan.RowPitch(shape[len(shape)-1])
		wide = Wide(PaddedShape(shape, pitch), layers)
	}
	p = rewritten(p, pl)
	s, err := loweringOf(pl)
	if err != nil {
		return nil, err
	}
	low, err := s.lower(p, shape, pl, wide, sizeOnly)
	if err != nil {
		return nil, err
	}
	if err := low.finish(s, p, pl, shape, wide, sizeOnly); err != nil {
		return nil, err
	}
	low.Pitch = pitch
	return low, nil
}

// PaddedShape is shape with its last axis widened to the row pitch (plan.Align; pitch 0:
// shape itself): the extents of a padded device array.
func PaddedShape(shape []int, pitch int) []int {
	out := append([]int(nil), shape...)
	if pitch > 0 {
		out[len(out)-1] = pitch
	}
	return out
}
