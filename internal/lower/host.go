package lower

import (
	"fmt"
	"slices"

	"tempest/internal/ir"
	"tempest/internal/kir"
)

// HostKernel is a program's step lowered for the host processor (kir.PrintC): one kernel that
// advances every state grid one step over a range of rows. Grids live in padded arrays whose
// halo, Halo cells wide on each side of each axis, already holds the boundary values (the CPU
// engine fills it between steps), so the update reads at constant offsets with no boundary
// handling and its innermost loop runs over contiguous cells, which the C compiler vectorises.
// A row is a line of cells along the fastest axis; rows are numbered over the slower axes,
// slowest first, and the caller spreads [row_lo, row_hi) ranges over its threads.
type HostKernel struct {
	// Step advances one step; its last two parameters are the row range (i32).
	Step HostEntry
	// Block, when the program's steps can be blocked in time (HostBlockable), advances bt
	// steps; its last three parameters are bt and the range of slabs of the slowest axis.
	Block *HostEntry
}

// HostEntry is a module of one kernel and the arguments of all its parameters but the
// trailing ones that its caller sets per call. Each is a module of its own: a C compiler takes
// long over large updates (box3d4r's 729 terms: most of a minute), and the blocked kernel is
// only built where a run blocks.
type HostEntry struct {
	Module *kir.Module
	Name   string
	Args   []Arg
}

// HostStepName is the entry point of a HostKernel.
const HostStepName = "tempest_host_step"

// LowerHost lowers p's step for padded arrays with the given halo per axis (at least the
// program's reach). Nothing in the kernel depends on the grid's size, which it takes as
// arguments: one compilation serves every size.
func LowerHost(p *ir.Program, halo []int) *HostKernel {
	d := p.Dims()
	if len(halo) != d {
		panic(fmt.Sprintf("internal error: halo of %d axes for a %d-axis program", len(halo), d))
	}
	for a, r := range p.Reach() {
		if halo[a] < r {
			panic(fmt.Sprintf("internal error: halo %d along axis %d below the reach %d", halo[a], a, r))
		}
	}
	ps, args := params(p, readRoles)
	ps = append(ps, kir.Param{Name: "row_lo", Type: kir.I32}, kir.Param{Name: "row_hi", Type: kir.I32})
	k := &kir.Kernel{Name: HostStepName, Params: ps}
	var body []kir.Stmt
	// Padded strides, fastest axis 1; pcells is one layer's padded array.
	stride := func(a int) kir.Expr { return kir.Id(fmt.Sprintf("s%d", a)) }
	for a := d - 1; a >= 0; a-- {
		var init kir.Expr = &kir.Int{V: 1, T: kir.I64}
		if a < d-1 {
			init = kir.Mul(stride(a+1), padded(a+1, halo))
		}
		body = append(body, &kir.Decl{Name: fmt.Sprintf("s%d", a), Type: kir.I64, Init: init})
	}
	for _, g := range p.Grids {
		if g.Layers != nil {
			body = append(body, &kir.Decl{Name: "pcells", Type: kir.I64, Init: kir.Mul(stride(0), padded(0, halo))})
			break
		}
	}
	// The row's coordinates along the slower axes and the padded index of its cell x = 0.
	var row []kir.Stmt
	coords := make([]kir.Expr, d)
	rest := kir.Expr(kir.Id("row"))
	for a := d - 2; a >= 0; a-- {
		c := fmt.Sprintf("c%d", a)
		init := rest
		if a > 0 {
			init = kir.Bin("%", rest, kir.Id(fmt.Sprintf("n%d", a)))
			rest = kir.Bin("/", rest, kir.Id(fmt.Sprintf("n%d", a)))
		}
		row = append(row, &kir.Decl{Name: c, Type: kir.I32, Init: init})
	}
	base := kir.Expr(&kir.Int{V: int64(halo[d-1]), T: kir.I64})
	for a := 0; a < d-1; a++ {
		coords[a] = kir.Id(fmt.Sprintf("c%d", a))
		base = kir.Add(base, kir.Mul(&kir.Cast{T: kir.I64, From: kir.I32, X: kir.Add(coords[a], kir.I(halo[a]))}, stride(a)))
	}
	row = append(row, &kir.Decl{Name: "base", Type: kir.I64, Init: base})
	x := fmt.Sprintf("c%d", d-1)
	coords[d-1] = kir.Id(x)
	for _, group := range rimGroups(p) {
		row = append(row, hostUpdates(p, group, coords, stride)...)
	}
	body = append(body, &kir.For{Var: "row", From: kir.Id("row_lo"), To: kir.Id("row_hi"), Step: 1, Body: row})
	k.Body = body
	hk := &HostKernel{Step: HostEntry{Module: &kir.Module{Kernels: []*kir.Kernel{k}, Uses64: uses64(p), Exact: true}, Name: HostStepName, Args: args}}
	if HostBlockable(p) {
		bk, bargs := lowerHostBlock(p, halo)
		hk.Block = &HostEntry{Module: &kir.Module{Kernels: []*kir.Kernel{bk}, Uses64: uses64(p), Exact: true}, Name: HostBlockName, Args: bargs}
	}
	return hk
}

// hostOffset is idx moved by the constant offsets off of the axes from `from` on, in padded
// elements: the fastest axis's offset as it is, the others times their strides.
func hostOffset(idx kir.Expr, off []int, from int, stride func(int) kir.Expr) kir.Expr {
	d := len(off)
	var sum kir.Expr
	for a := from; a < d; a++ {
		if off[a] == 0 {
			continue
		}
		term := kir.Expr(&kir.Int{V: int64(off[a]), T: kir.I64})
		if a < d-1 {
			term = kir.Mul(term, stride(a))
		}
		if sum == nil {
			sum = term
		} else {
			sum = kir.Add(sum, term)
		}
	}
	if sum == nil {
		return idx
	}
	return kir.Add(idx, sum)
}

// padded is axis a's padded extent.
func padded(a int, halo []int) kir.Expr {
	return &kir.Cast{T: kir.I64, From: kir.I32, X: kir.Add(kir.Id(fmt.Sprintf("n%d", a)), kir.I(2*halo[a]))}
}

// rimGroups splits the updates into groups whose grids leave the same rim alone, in program
// order: a group shares one loop over the row, and its lets are computed once per cell.
func rimGroups(p *ir.Program) [][]*ir.Update {
	var groups [][]*ir.Update
	for _, u := range p.Updates {
		if n := len(groups); n > 0 && slices.Equal(groups[n-1][0].Grid.Rim, u.Grid.Rim) {
			groups[n-1] = append(groups[n-1], u)
			continue
		}
		groups = append(groups, []*ir.Update{u})
	}
	return groups
}

// hostUpdates is the loop over one row's cells that stores a group's updates, skipped where
// the row lies in the group's rim.
func hostUpdates(p *ir.Program, group []*ir.Update, coords []kir.Expr, stride func(int) kir.Expr) []kir.Stmt {
	d := len(coords)
	rim := group[0].Grid.Rim
	var inner []kir.Stmt
	em := &emitter{p: p, wide: true, coords: coords, step: kir.Id("step0"), lets: map[*ir.Let]string{}, plainDiv: true, out: &inner}
	em.read = func(em *emitter, l *ir.Load) kir.Expr {
		role := In0
		if l.Level == 1 {
			role = In1
		}
		idx := hostOffset(kir.Id("idx"), l.Off, 0, stride)
		if l.Layer != nil {
			hi := kir.Bin("-", kir.Id("layers_"+l.G.Name), kir.I(1))
			layer := &kir.Call{Fn: "min", T: kir.I32, Args: []kir.Expr{&kir.Call{Fn: "max", T: kir.I32, Args: []kir.Expr{em.expr(l.Layer), kir.I(0)}}, hi}}
			idx = kir.Add(kir.Mul(&kir.Cast{T: kir.I64, From: kir.I32, X: layer}, kir.Id("pcells")), idx)
		}
		return &kir.Index{Array: kir.Id(bufName(l.G, role)), Idx: idx}
	}
	inner = append(inner, &kir.Decl{Name: "idx", Type: kir.I64, Init: kir.Add(kir.Id("base"), &kir.Cast{T: kir.I64, From: kir.I32, X: coords[d-1]})})
	em.declareUpdateLets(group)
	for _, u := range group {
		inner = append(inner, kir.Set(&kir.Index{Array: kir.Id(bufName(u.Grid, Out0)), Idx: kir.Id("idx")}, em.expr(u.Value)))
	}
	n := func(a int) kir.Expr { return kir.Id(fmt.Sprintf("n%d", a)) }
	loop := &kir.For{Var: fmt.Sprintf("c%d", d-1), From: kir.I(rim[d-1]), To: kir.Bin("-", n(d-1), kir.I(rim[d-1])), Step: 1, Body: inner}
	var skip kir.Expr
	for a := 0; a < d-1; a++ {
		if rim[a] == 0 {
			continue
		}
		c := &kir.Binary{Op: "||", X: &kir.Binary{Op: "<", X: coords[a], Y: kir.I(rim[a])}, Y: &kir.Binary{Op: ">=", X: coords[a], Y: kir.Bin("-", n(a), kir.I(rim[a]))}}
		if skip == nil {
			skip = c
		} else {
			skip = &kir.Binary{Op: "||", X: skip, Y: c}
		}
	}
	if skip == nil {
		return []kir.Stmt{loop}
	}
	return []kir.Stmt{&kir.If{Cond: skip, Else: []kir.Stmt{loop}}}
}

// HostBlockName is the entry point of the temporally blocked host kernel (HostBlockable).
const HostBlockName = "tempest_host_block"

// HostBlockable says whether p's steps can be blocked in time on the host: every state grid
// keeps one level, leaves the same fixed rim at least the program's reach wide (so no read
// ever consults a boundary rule) and no grid is read by layer. AN5D's stencils are such.
func HostBlockable(p *ir.Program) bool {
	d := p.Dims()
	if d < 2 || len(p.Updates) == 0 || len(rimGroups(p)) != 1 {
		return false
	}
	reach := p.Reach()
	for _, u := range p.Updates {
		if u.Grid.Levels != 1 {
			return false
		}
		for a, r := range u.Grid.Rim {
			if r < reach[a] {
				return false
			}
		}
	}
	ok := true
	for _, u := range p.Updates {
		ir.WalkDeep(u.Value, func(x ir.Expr) {
			if l, is := x.(*ir.Load); is && (l.Layer != nil || l.Level != 0) {
				ok = false
			}
		})
	}
	return ok
}

// HostRingCells is the scratch a thread of the blocked kernel needs per state grid, in
// elements, for bt steps per launch: bt-1 rings of 2r+1 padded slabs (r the reach along the
// slowest axis, a slab one index of it).
func HostRingCells(p *ir.Program, halo, shape []int, bt int) int {
	slab := 1
	for a := 1; a < len(shape); a++ {
		slab *= shape[a] + 2*halo[a]
	}
	return (bt - 1) * (2*p.Reach()[0] + 1) * slab
}

// lowerHostBlock is the kernel that advances the slabs [row_lo, row_hi) of the slowest axis bt
// steps in one sweep (in 3D, the rows [tile_lo, tile_hi) of the second axis of them) (N.5D blocking on the host: AN5D's idea, with the processor's cache in
// the role of shared memory). Sweeping i upwards, it computes slab i of step 1, slab i-r of
// step 2, ..., slab i-(bt-1)r of step bt, so that step k reads the 2r+1 slabs of step k-1
// that it needs from a ring in cache; only step 0 comes from memory and only step bt goes
// back. Neighbouring threads' ranges overlap by (bt-1)r slabs that both compute.
func lowerHostBlock(p *ir.Program, halo []int) (*kir.Kernel, []Arg) {
	d := p.Dims()
	reach := p.Reach()
	r0 := reach[0]
	rim := p.Updates[0].Grid.Rim
	ps, args := params(p, readRoles)
	for _, u := range p.Updates {
		ps = append(ps, kir.Param{Name: "ring_" + u.Grid.Name, Type: kir.FromIR(u.Grid.Type), Pointer: true})
		args = append(args, Arg{Kind: ArgScratch, Grid: u.Grid.Index})
	}
	ps = append(ps, kir.Param{Name: "bt", Type: kir.I32}, kir.Param{Name: "tile_lo", Type: kir.I32}, kir.Param{Name: "tile_hi", Type: kir.I32},
		kir.Param{Name: "row_lo", Type: kir.I32}, kir.Param{Name: "row_hi", Type: kir.I32})
	k := &kir.Kernel{Name: HostBlockName, Params: ps}
	n := func(a int) kir.Expr { return kir.Id(fmt.Sprintf("n%d", a)) }
	stride := func(a int) kir.Expr { return kir.Id(fmt.Sprintf("s%d", a)) }
	i64 := func(x kir.Expr) kir.Expr { return &kir.Cast{T: kir.I64, From: kir.I32, X: x} }
	var body []kir.Stmt
	for a := d - 1; a >= 0; a-- {
		var init kir.Expr = &kir.Int{V: 1, T: kir.I64}
		if a < d-1 {
			init = kir.Mul(stride(a+1), padded(a+1, halo))
		}
		body = append(body, &kir.Decl{Name: fmt.Sprintf("s%d", a), Type: kir.I64, Init: init})
	}
	R := 2*r0 + 1
	// Step k (1..bt) computes slab c0 = i - (k-1)r of the range it needs: [lo - (bt-k)r,
	// hi + (bt-k)r) within the updated slabs [rim, n0-rim).
	var step []kir.Stmt
	step = append(step,
		&kir.Decl{Name: "c0", Type: kir.I32, Init: kir.Bin("-", kir.Id("i"), kir.Mul(kir.Bin("-", kir.Id("k"), kir.I(1)), kir.I(r0)))},
		&kir.Decl{Name: "need", Type: kir.I32, Init: kir.Mul(kir.Bin("-", kir.Id("bt"), kir.Id("k")), kir.I(r0))})
	var inside kir.Expr = &kir.Binary{Op: "&&",
		X: &kir.Binary{Op: "&&", X: &kir.Binary{Op: ">=", X: kir.Id("c0"), Y: kir.Bin("-", kir.Id("row_lo"), kir.Id("need"))}, Y: &kir.Binary{Op: "<", X: kir.Id("c0"), Y: kir.Add(kir.Id("row_hi"), kir.Id("need"))}},
		Y: &kir.Binary{Op: "&&", X: &kir.Binary{Op: ">=", X: kir.Id("c0"), Y: kir.I(rim[0])}, Y: &kir.Binary{Op: "<", X: kir.Id("c0"), Y: kir.Bin("-", n(0), kir.I(rim[0]))}}}
	var slab []kir.Stmt
	usesStep := false
	for _, u := range p.Updates {
		ir.WalkDeep(u.Value, func(x ir.Expr) {
			if _, ok := x.(*ir.Step); ok {
				usesStep = true
			}
		})
	}
	if usesStep {
		slab = append(slab, &kir.Decl{Name: "step1", Type: kir.I32, Init: kir.Add(kir.Id("step0"), kir.Bin("-", kir.Id("k"), kir.I(1)))})
	}
	// Sources: the slabs c0+o of step k-1 of every grid the updates read at offset o along the
	// slowest axis. Input grids and step 0 and rim slabs come from the arrays, the rest from
	// the rings.
	srcName := func(g *ir.Grid, o int) string {
		if o < 0 {
			return fmt.Sprintf("src_%s_m%d", g.Name, -o)
		}
		return fmt.Sprintf("src_%s_%d", g.Name, o)
	}
	used := map[*ir.Grid]map[int]bool{}
	for _, u := range p.Updates {
		ir.WalkDeep(u.Value, func(x ir.Expr) {
			if l, ok := x.(*ir.Load); ok {
				if used[l.G] == nil {
					used[l.G] = map[int]bool{}
				}
				used[l.G][l.Off[0]] = true
			}
		})
	}
	slabAt := func(buf string, row kir.Expr) kir.Expr {
		return kir.Add(kir.Id(buf), kir.Mul(i64(kir.Add(row, kir.I(halo[0]))), stride(0)))
	}
	ringAt := func(g *ir.Grid, level, row kir.Expr) kir.Expr {
		return kir.Add(kir.Id("ring_"+g.Name), kir.Mul(kir.Add(kir.Mul(i64(level), &kir.Int{V: int64(R), T: kir.I64}), i64(kir.Bin("%", row, kir.I(R)))), stride(0)))
	}
	for _, g := range p.Grids {
		for o := -r0; o <= r0; o++ {
			if !used[g][o] {
				continue
			}
			row := kir.Add(kir.Id("c0"), kir.I(o))
			src := slabAt(bufName(g, In0), row)
			if g.Update != nil {
				fromArray := &kir.Binary{Op: "||", X: &kir.Binary{Op: "==", X: kir.Id("k"), Y: kir.I(1)},
					Y: &kir.Binary{Op: "||", X: &kir.Binary{Op: "<", X: row, Y: kir.I(rim[0])}, Y: &kir.Binary{Op: ">=", X: row, Y: kir.Bin("-", n(0), kir.I(rim[0]))}}}
				src = &kir.Cond{C: fromArray, A: src, B: ringAt(g, kir.Bin("-", kir.Id("k"), kir.I(2)), row)}
			}
			slab = append(slab, &kir.Decl{Name: srcName(g, o), Type: kir.FromIR(g.Type), Pointer: true, Const: true, Init: src})
		}
	}
	for _, u := range p.Updates {
		g := u.Grid
		dst := &kir.Cond{C: &kir.Binary{Op: "==", X: kir.Id("k"), Y: kir.Id("bt")}, A: slabAt(bufName(g, Out0), kir.Id("c0")), B: ringAt(g, kir.Bin("-", kir.Id("k"), kir.I(1)), kir.Id("c0"))}
		slab = append(slab, &kir.Decl{Name: "dst_" + g.Name, Type: kir.FromIR(g.Type), Pointer: true, Init: dst})
	}
	// The cells of the slab: loops over the faster axes, the fastest innermost.
	coords := make([]kir.Expr, d)
	coords[0] = kir.Id("c0")
	for a := 1; a < d; a++ {
		coords[a] = kir.Id(fmt.Sprintf("c%d", a))
	}
	var inner []kir.Stmt
	em := &emitter{p: p, wide: true, coords: coords, step: kir.Id("step1"), lets: map[*ir.Let]string{}, plainDiv: true, out: &inner}
	em.read = func(em *emitter, l *ir.Load) kir.Expr {
		return &kir.Index{Array: kir.Id(srcName(l.G, l.Off[0])), Idx: hostOffset(kir.Id("idx"), l.Off, 1, stride)}
	}
	// Index within the slab of cell (c1, ..., c_{d-1}).
	var idx kir.Expr = &kir.Int{V: int64(halo[d-1]), T: kir.I64}
	for a := 1; a < d; a++ {
		t := i64(coords[a])
		if a < d-1 {
			t = kir.Mul(i64(kir.Add(coords[a], kir.I(halo[a]))), stride(a))
		}
		idx = kir.Add(idx, t)
	}
	inner = append(inner, &kir.Decl{Name: "idx", Type: kir.I64, Init: idx})
	em.declareUpdateLets(p.Updates)
	for _, u := range p.Updates {
		inner = append(inner, kir.Set(&kir.Index{Array: kir.Id("dst_" + u.Grid.Name), Idx: kir.Id("idx")}, em.expr(u.Value)))
	}
	// In 3D, the second axis is tiled too ([tile_lo, tile_hi) plus what later steps need of
	// it), so that a ring's slabs are rows of planes that stay in cache.
	lo := func(a int) kir.Expr { return kir.I(0) }
	hi := func(a int) kir.Expr { return n(a) }
	if d == 3 {
		need1 := kir.Mul(kir.Bin("-", kir.Id("bt"), kir.Id("k")), kir.I(reach[1]))
		slab = append(slab,
			&kir.Decl{Name: "y_lo", Type: kir.I32, Init: &kir.Call{Fn: "max", T: kir.I32, Args: []kir.Expr{kir.I(0), kir.Bin("-", kir.Id("tile_lo"), need1)}}},
			&kir.Decl{Name: "y_hi", Type: kir.I32, Init: &kir.Call{Fn: "min", T: kir.I32, Args: []kir.Expr{n(1), kir.Add(kir.Id("tile_hi"), need1)}}})
		lo = func(a int) kir.Expr {
			if a == 1 {
				return kir.Id("y_lo")
			}
			return kir.I(0)
		}
		hi = func(a int) kir.Expr {
			if a == 1 {
				return kir.Id("y_hi")
			}
			return n(a)
		}
	}
	loops := inner
	for a := d - 1; a >= 1; a-- {
		from, to := kir.Expr(kir.I(rim[a])), kir.Bin("-", n(a), kir.I(rim[a]))
		if d == 3 && a == 1 {
			from = &kir.Call{Fn: "max", T: kir.I32, Args: []kir.Expr{from, lo(a)}}
			to = &kir.Call{Fn: "min", T: kir.I32, Args: []kir.Expr{to, hi(a)}}
		}
		loops = []kir.Stmt{&kir.For{Var: fmt.Sprintf("c%d", a), From: from, To: to, Step: 1, Body: loops}}
	}
	slab = append(slab, loops...)
	// A ring slab also needs the fixed rim of the faster axes, which step k+1 reads: copied
	// from the array, where it never changes.
	var rimCopy []kir.Stmt
	for _, u := range p.Updates {
		g := u.Grid
		rimCopy = append(rimCopy, hostRimCopy(g, d, rim, halo, coords, stride, n, lo, hi)...)
	}
	if len(rimCopy) > 0 {
		slab = append(slab, &kir.If{Cond: &kir.Binary{Op: "<", X: kir.Id("k"), Y: kir.Id("bt")}, Then: append([]kir.Stmt{
			&kir.Decl{Name: "row", Type: kir.I64, Init: kir.Mul(i64(kir.Add(kir.Id("c0"), kir.I(halo[0]))), stride(0))}}, rimCopy...)})
	}
	step = append(step, &kir.If{Cond: inside, Then: slab})
	kloop := &kir.For{Var: "k", From: kir.I(1), To: kir.Add(kir.Id("bt"), kir.I(1)), Step: 1, Body: step}
	span := kir.Mul(kir.Bin("-", kir.Id("bt"), kir.I(1)), kir.I(r0))
	body = append(body, &kir.For{Var: "i", From: kir.Bin("-", kir.Id("row_lo"), span), To: kir.Add(kir.Id("row_hi"), span), Step: 1, Body: []kir.Stmt{kloop}})
	k.Body = body
	return k, args
}

// hostRimCopy copies grid g's rim cells of the slab at padded offset row (the fixed cells of
// the faster axes) from its array into dst_g: for each faster axis, its rim with every cell of
// the axes after it, and its interior with their rims.
func hostRimCopy(g *ir.Grid, d int, rim, halo []int, coords []kir.Expr, stride func(int) kir.Expr, n, lo, hi func(int) kir.Expr) []kir.Stmt {
	var idx kir.Expr = &kir.Int{V: int64(halo[d-1]), T: kir.I64}
	for a := 1; a < d; a++ {
		t := kir.Expr(&kir.Cast{T: kir.I64, From: kir.I32, X: coords[a]})
		if a < d-1 {
			t = kir.Mul(&kir.Cast{T: kir.I64, From: kir.I32, X: kir.Add(coords[a], kir.I(halo[a]))}, stride(a))
		}
		idx = kir.Add(idx, t)
	}
	cp := kir.Set(&kir.Index{Array: kir.Id("dst_" + g.Name), Idx: idx}, &kir.Index{Array: kir.Id(bufName(g, In0)), Idx: kir.Add(kir.Id("row"), idx)})
	loop := func(a int, from, to kir.Expr, body []kir.Stmt) kir.Stmt {
		return &kir.For{Var: fmt.Sprintf("c%d", a), From: from, To: to, Step: 1, Body: body}
	}
	// Ranges within [lo(a), hi(a)), the part of axis a the sweep covers.
	clipped := func(a int, from, to kir.Expr) (kir.Expr, kir.Expr) {
		if l, ok := lo(a).(*kir.Int); ok && l.V == 0 {
			return from, to // the whole axis
		}
		return &kir.Call{Fn: "max", T: kir.I32, Args: []kir.Expr{from, lo(a)}}, &kir.Call{Fn: "min", T: kir.I32, Args: []kir.Expr{to, hi(a)}}
	}
	var full func(a int) []kir.Stmt
	full = func(a int) []kir.Stmt {
		if a == d {
			return []kir.Stmt{cp}
		}
		from, to := clipped(a, kir.I(0), n(a))
		return []kir.Stmt{loop(a, from, to, full(a+1))}
	}
	var rims func(a int) []kir.Stmt
	rims = func(a int) []kir.Stmt {
		if a == d {
			return nil
		}
		var out []kir.Stmt
		if rim[a] > 0 {
			f1, t1 := clipped(a, kir.I(0), kir.I(rim[a]))
			f2, t2 := clipped(a, kir.Bin("-", n(a), kir.I(rim[a])), n(a))
			out = append(out, loop(a, f1, t1, full(a+1)), loop(a, f2, t2, full(a+1)))
		}
		if inner := rims(a + 1); len(inner) > 0 {
			f, t := clipped(a, kir.I(rim[a]), kir.Bin("-", n(a), kir.I(rim[a])))
			out = append(out, loop(a, f, t, inner))
		}
		return out
	}
	return rims(1)
}
