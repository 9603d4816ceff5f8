package lower

import (
	"fmt"
	"slices"
	"sort"

	"tempest/internal/ir"
	"tempest/internal/kir"
)

// bodyAt is copy r of the loop body: plane jr = j + r enters level 0. Plane (j + x) of
// any level lives in register x mod U of its queue or accumulators and shared slot
// x mod ring, all static because j advances by a multiple of 2U. phased copies run a
// level only where it is active (the head and tail phases).
func (b *n5dBuilder) bodyAt(r int, mode n5dMode, phased bool) []kir.Stmt {
	c := &n5dCopy{b: b, r: r, mode: mode, phased: phased,
		vec: mode != n5dChecked && b.lay.VW > 1,
		cur: map[*ir.Grid][]kir.Expr{},
	}
	var loop []kir.Stmt
	if !b.wave || b.ascend {
		loop = append(loop, c.level0()...)
		if b.windows && !b.wave {
			loop = append(loop, &kir.Barrier{})
		}
	}
	for _, t := range b.levelOrder() {
		loop = append(loop, c.level(t)...)
	}
	if b.wave {
		if !b.ascend {
			loop = append(loop, c.level0()...)
		}
		if b.windows {
			loop = append(loop, &kir.Barrier{})
		}
	}
	return loop
}

// levelOrder is the order levels 1 .. bt run in within a copy of the loop body.
func (b *n5dBuilder) levelOrder() []int {
	levels := make([]int, 0, b.bt)
	for t := 1; t <= b.bt; t++ {
		levels = append(levels, t)
	}
	if b.wave && !b.ascend {
		// Deepest level first: each reads what the level below published in the previous
		// copy, so one barrier per plane serves every level (the pipelined wavefront).
		slices.Reverse(levels)
	}
	return levels
}

// n5dCopy is one copy of the loop body under construction (bodyAt): its place r in the
// round, the loop it is built for (mode, phased), and what its levels hand on to each other.
type n5dCopy struct {
	b      *n5dBuilder
	r      int
	mode   n5dMode
	phased bool
	// vec: blocks of aligned rows without per-plane checks load and store vectors.
	vec bool
	// cur holds each grid's newest plane value per cell of the level below the one being
	// computed, for publishing and partial sums. In wave order the level below has not run
	// yet in this copy: its values from the previous copy wait in the d_ registers.
	cur map[*ir.Grid][]kir.Expr
}

// rimAt is n5dBuilder.rimAt for the copy's loop.
func (c *n5dCopy) rimAt(g *ir.Grid, m kir.Expr, i int) kir.Expr { return c.b.rimAt(c.mode, g, m, i) }

// keepD keeps level lv's new values vals of g in its d_ registers, where wave order with
// partial sums reads them in the next copy.
func (c *n5dCopy) keepD(g *ir.Grid, lv int, vals []kir.Expr) []kir.Stmt {
	if !(c.b.wave && c.b.assoc) || lv >= c.b.bt {
		return nil
	}
	var out []kir.Stmt
	for i := range vals {
		out = append(out, kir.Set(kir.Id(c.b.dName(g, lv, i)), vals[i]))
	}
	return out
}

// level0 is level 0 of the copy: plane jr enters from the prefetch registers (loading plane
// jr+PD into them) or from the asynchronous copies' ring (starting the copy of plane jr+D),
// into each grid's window of level 0.
func (c *n5dCopy) level0() []kir.Stmt {
	b := c.b
	var loop []kir.Stmt
	loads := &loop
	vals := map[*ir.Grid][]kir.Expr{}
	if b.D > 0 {
		// Plane jr's group has landed once at most D-1 newer ones are in flight.
		loop = append(loop, &kir.AsyncWait{Pending: b.D - 1})
	}
	if b.ringWin > 0 {
		// Level 0 is the copies: level 1 reads them after the plane's barrier.
		return append(loop, c.copyAhead()...)
	}
	for _, u := range b.p.Updates {
		g := u.Grid
		w := b.win[[2]int{g.Index, 0}]
		if b.D > 0 {
			vals[g] = c.fromRing(g, &loop)
		} else {
			vals[g] = c.fromPrefetch(g, &loop, loads)
		}
		for i := 0; i < b.NC; i++ {
			loop = append(loop, b.enter(w, c.r, i, vals[g][i])...)
		}
		loop = append(loop, c.keepD(g, 0, vals[g])...)
	}
	if b.D > 0 {
		loop = append(loop, c.copyAhead()...)
	}
	if !b.wave {
		for g, v := range vals {
			c.cur[g] = v
		}
	}
	return loop
}

// copyAhead starts the asynchronous copy of plane jr+D into its ring slot.
func (c *n5dCopy) copyAhead() []kir.Stmt {
	b := c.b
	return b.asyncPlane(kir.Add(kir.Id("jr"), kir.I(b.D)), mod(c.r+b.D, b.S), c.vec, c.mode == n5dEdge)
}

// fromRing declares (into loop) g's values of plane jr, read from the asynchronous copies'
// ring, and returns them.
func (c *n5dCopy) fromRing(g *ir.Grid, loop *[]kir.Stmt) []kir.Expr {
	b, VW := c.b, c.b.lay.VW
	var vals []kir.Expr
	for i := 0; i < b.NC; i++ {
		ty := kir.FromIR(g.Type)
		v := b.vName(g, 0, i)
		switch {
		case c.vec && i%VW == 0:
			vn := fmt.Sprintf("a_%s_%d", g.Name, i)
			*loop = append(*loop, &kir.VecLoad{Name: vn, T: ty, Width: VW, Array: kir.Id("smem"), Idx: b.ringAt(g, mod(c.r, b.S), i), Shared: true})
			fallthrough
		case c.vec:
			*loop = append(*loop, &kir.Decl{Name: v, Type: ty, Init: &kir.Lane{Vec: fmt.Sprintf("a_%s_%d", g.Name, i-i%VW), I: i % VW}})
		default:
			*loop = append(*loop, &kir.Decl{Name: v, Type: ty, Init: kir.At("smem", b.ringAt(g, mod(c.r, b.S), i))})
		}
		vals = append(vals, kir.Id(v))
	}
	return vals
}

// fromPrefetch declares (into loop) g's values of plane jr, taken from the prefetch
// registers, and returns them; the loads of plane jr+PD into those registers go to loads.
func (c *n5dCopy) fromPrefetch(g *ir.Grid, loop, loads *[]kir.Stmt) []kir.Expr {
	b, VW := c.b, c.b.lay.VW
	next := kir.Add(kir.Id("jr"), kir.I(b.PD))
	// Blocks whose planes are inside load inside the domain (n5dRimMargins).
	nextAt := clamp(next, kir.Id("n0"))
	if c.mode != n5dChecked && b.pl.Unclamped {
		nextAt = next
	}
	var vals []kir.Expr
	for i := 0; i < b.NC; i++ {
		v := b.vName(g, 0, i)
		*loop = append(*loop, &kir.Decl{Name: v, Type: kir.FromIR(g.Type), Init: kir.Id(b.pfName(g, mod(c.r, b.PD), i))})
		if !c.vec {
			*loads = append(*loads, kir.Set(kir.Id(b.pfName(g, mod(c.r, b.PD), i)), b.inputAt(g, nextAt, i)))
		}
		vals = append(vals, kir.Id(v))
	}
	if c.vec {
		// Each run of VW cells of a row with one aligned vector load.
		for i := 0; i < b.NC; i += VW {
			pos := b.runAt(i, c.mode == n5dEdge)
			pos[0] = nextAt
			vn := fmt.Sprintf("w_%s_%d", g.Name, i)
			*loads = append(*loads, &kir.VecLoad{Name: vn, T: kir.FromIR(g.Type), Width: VW, Array: kir.Id(bufName(g, In0)), Idx: b.em0.linear(pos, nil)})
			for k := 0; k < VW; k++ {
				*loads = append(*loads, kir.Set(kir.Id(b.pfName(g, mod(c.r, b.PD), i+k)), &kir.Lane{Vec: vn, I: k}))
			}
		}
	}
	return vals
}

// n5dLevel is level t of a copy under construction: it computes plane m_t = j + mrel (row)
// from level prev = t-1's planes, after step steps.
type n5dLevel struct {
	c             *n5dCopy
	b             *n5dBuilder
	t, mrel, prev int
	row           string
	step          kir.Expr
	// next holds the level's new value of each grid's cells.
	next map[*ir.Grid][]kir.Expr
}

// level is level t of the copy: the declarations of its new values, then its block (plane
// m_t computed cell by cell, then entered into the level's window or, at level bt, stored),
// under the condition of the phases and of live warps, and the barrier after it where the
// levels do not run in wave order.
func (c *n5dCopy) level(t int) []kir.Stmt {
	b := c.b
	if b.wave && b.assoc {
		for _, u := range b.p.Updates {
			c.cur[u.Grid] = nil
			for i := 0; i < b.NC; i++ {
				c.cur[u.Grid] = append(c.cur[u.Grid], kir.Id(b.dName(u.Grid, t-1, i)))
			}
		}
	}
	lv := &n5dLevel{c: c, b: b, t: t, row: fmt.Sprintf("m%d", t),
		mrel: c.r - b.L*t, // plane m_t = j + mrel
		prev: t - 1, step: kir.Add(kir.Id("step0"), kir.I(t-1)),
		next: map[*ir.Grid][]kir.Expr{},
	}
	var out []kir.Stmt
	for _, u := range b.p.Updates {
		for i := 0; i < b.NC; i++ {
			nv := b.vName(u.Grid, t, i)
			out = append(out, &kir.Decl{Name: nv, Type: kir.FromIR(u.Grid.Type), Init: zeroOf(kir.FromIR(u.Grid.Type))})
			lv.next[u.Grid] = append(lv.next[u.Grid], kir.Id(nv))
		}
	}
	lvl := []kir.Stmt{&kir.Decl{Name: lv.row, Type: kir.I32, Init: kir.Bin("-", kir.Id("jr"), kir.I(b.L*t))}}
	lvl = append(lvl, lv.cells()...)
	lvl = lv.results(lvl)
	for _, u := range b.p.Updates {
		lvl = append(lvl, c.keepD(u.Grid, t, lv.next[u.Grid])...)
	}
	if !b.wave {
		for g, v := range lv.next {
			c.cur[g] = v
		}
	}
	var cond kir.Expr = &kir.BoolLit{V: true}
	if c.phased {
		cond = b.active(t, kir.Id(lv.row))
	}
	if live := b.liveAt[t]; live != nil {
		// Idle warps skip the level: what they would compute feeds no output, and
		// the cells that do read only what live warps publish (plan.Shrink).
		cond = and(live, cond)
	}
	if c.phased || b.liveAt[t] != nil {
		lvl = []kir.Stmt{lvl[0], &kir.If{Cond: cond, Then: lvl[1:]}}
	}
	out = append(out, &kir.Block{Body: lvl})
	if t < b.bt && b.windows && !b.wave {
		out = append(out, &kir.Barrier{})
	}
	return out
}

// cells computes the level's value of each of the thread's cells, one block of statements a
// cell: by partial sums, or from the level below's register queues and shared planes.
func (lv *n5dLevel) cells() []kir.Stmt {
	var cells []kir.Stmt
	for i := 0; i < lv.b.NC; i++ {
		var cs []kir.Stmt // cell i's statements
		coords := lv.b.cellOf(lv.b.col, i)
		coords[0] = kir.Id(lv.row)
		if lv.b.assoc {
			for ui := range lv.b.p.Updates {
				lv.sumCell(ui, i, coords, &cs)
			}
		} else {
			lv.cell(i, coords, &cs)
		}
		cells = append(cells, &kir.Block{Body: cs})
	}
	return cells
}

// partsOf are the parts of sum s for cell i by plane offset, the offsets from R down (keys),
// and each part's terms: with fast math over several cells, a part's loads are paired
// across the thread's cells (pairSums).
func (b *n5dBuilder) partsOf(s n5dSum, i int) (keys []int, parts map[int]ir.Expr, terms map[int][]ir.Expr) {
	d, X, Y := b.lay.Dims, b.lay.X, b.lay.Y
	keys = make([]int, 0, len(s.parts))
	for o := range s.parts {
		keys = append(keys, o)
	}
	sort.Sort(sort.Reverse(sort.IntSlice(keys)))
	parts = map[int]ir.Expr{}
	terms = map[int][]ir.Expr{}
	for _, o := range keys {
		parts[o] = s.parts[o]
		if b.pl.FastMath && b.NC > 1 {
			pos := make([]int, d)
			pos[X] = b.cx(i)
			if d == 3 {
				pos[Y] = b.cy(i)
			}
			parts[o] = pairSums(parts[o], pos)
		}
		terms[o] = partTerms(parts[o])
	}
	return keys, parts, terms
}

// sumCell is cell i's partial sums of update ui (assoc): plane p = m_t + R of level t-1 is
// published, so its terms are added to the outputs m_t .. m_t+2R it feeds; output m_t is then
// complete, and with its outer coefficient applied it is the cell's new value.
func (lv *n5dLevel) sumCell(ui, i int, coords []kir.Expr, cs *[]kir.Stmt) {
	b, R, U, t := lv.b, lv.b.R, lv.b.U, lv.t
	prel := lv.mrel + R
	g := b.p.Updates[ui].Grid
	ty := kir.FromIR(b.p.Updates[ui].Value.Type())
	s := b.sums[ui]
	keys, parts, terms := b.partsOf(s, i)
	final := fmt.Sprintf("s_%s", g.Name)
	done := false
	// Fast math chains a part's terms onto the accumulator where no term is
	// shared by every part (sharedTerm).
	chain := b.pl.FastMath && len(keys) > 1 && !sharedTerm(keys, terms)
	for _, o := range keys {
		acc := kir.Id(b.accName(g, t, mod(prel-o, U), i))
		pcoords := append([]kir.Expr{kir.Bin("-", kir.Id(lv.row), kir.I(R-o))}, coords[1:]...)
		em := b.newEm(pcoords, lv.step, cs)
		em.read = func(em *emitter, l *ir.Load) kir.Expr {
			if l.Off[0] != o {
				panic("internal error: n5d partial sum reads another plane")
			}
			if j, ok := b.inThread(l, i); ok {
				return lv.c.cur[l.G][j]
			}
			return b.smemAt(b.win[[2]int{l.G.Index, lv.prev}], mod(prel, b.win[[2]int{l.G.Index, lv.prev}].ring), i, l.Off)
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
			*cs = append(*cs, &kir.Decl{Name: final, Type: ty, Init: sum})
			done = true
		default:
			*cs = append(*cs, kir.Set(acc, sum))
		}
	}
	if !done {
		*cs = append(*cs, &kir.Decl{Name: final, Type: ty, Init: kir.Id(b.accName(g, t, mod(lv.mrel, U), i))})
	}
	if _, ok := s.parts[-R]; !ok {
		*cs = append(*cs, kir.Set(kir.Id(b.accName(g, t, mod(prel+R, U), i)), zeroOf(ty)))
	}
	em := b.newEm(coords, lv.step, cs)
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
	*cs = append(*cs, kir.Set(lv.next[g][i], val))
	if rim := lv.c.rimAt(g, kir.Id(lv.row), i); rim != nil {
		*cs = append(*cs, &kir.If{Cond: rim, Then: []kir.Stmt{kir.Set(lv.next[g][i], b.loadAt(g, kir.Id(lv.row), i))}})
	}
}

// read is how cell i at coords reads the level below (no partial sums): other grids from
// global memory, its own cells from the register queue, others' from the shared window.
func (lv *n5dLevel) read(i int, coords []kir.Expr) func(em *emitter, l *ir.Load) kir.Expr {
	b := lv.b
	return func(em *emitter, l *ir.Load) kir.Expr {
		if l.G.Update == nil || l.Layer != nil {
			return em.globalRead(l.G, l.Level, l.Layer, coords, l.Off)
		}
		w := b.win[[2]int{l.G.Index, lv.prev}]
		if j, ok := b.inThread(l, i); ok && w.queue != nil {
			return kir.Id(w.queue[mod(lv.mrel+l.Off[0], b.U)][j])
		}
		if !w.every {
			return b.smemAt(w, mod(lv.mrel, w.ring), i, l.Off)
		}
		return b.smemAt(w, mod(lv.mrel+l.Off[0], w.ring), i, l.Off)
	}
}

// cell computes cell i's new values at coords from the level below (no partial sums): each
// grid's cell keeps its value in the rim, and with guards only cells inside the domain and
// within the level's reach of the tile's edges compute.
func (lv *n5dLevel) cell(i int, coords []kir.Expr, cs *[]kir.Stmt) {
	b := lv.b
	em := b.newEm(coords, lv.step, nil)
	em.read = lv.read(i, coords)
	var compute []kir.Stmt
	em.out = &compute
	em.declareUpdateLets(b.p.Updates)
	var sets []kir.Stmt
	for _, u := range b.p.Updates {
		g := u.Grid
		w := b.win[[2]int{g.Index, lv.prev}]
		var keep kir.Expr
		if w.queue != nil {
			keep = kir.Id(w.queue[mod(lv.mrel, b.U)][i])
		} else {
			keep = b.smemAt(w, mod(lv.mrel, w.ring), i, nil) // level 0's copies
		}
		*cs = append(*cs, kir.Set(lv.next[g][i], keep))
		set := kir.Set(lv.next[g][i], em.expr(u.Value))
		if rim := lv.c.rimAt(g, kir.Id(lv.row), i); rim != nil {
			if lv.c.mode == n5dEdge {
				// A select: the same instructions in every thread, no branch.
				set = kir.Set(lv.next[g][i], &kir.Cond{C: rim, A: keep, B: em.expr(u.Value)})
			} else {
				set = &kir.If{Cond: &kir.Unary{Op: "!", X: rim}, Then: []kir.Stmt{set}}
			}
		}
		sets = append(sets, set)
	}
	compute = append(compute, sets...)
	if b.guard {
		*cs = append(*cs, &kir.If{Cond: lv.valid(i, coords), Then: compute})
	} else {
		*cs = append(*cs, compute...)
	}
}

// valid says cell i at coords lies inside the domain and within the level's reach of the
// tile's edges, where a guarded level computes it.
func (lv *n5dLevel) valid(i int, coords []kir.Expr) kir.Expr {
	lay := lv.b.lay
	valid := and(ge(kir.Id(lv.row), kir.I(0)), lt(kir.Id(lv.row), kir.Id("n0")))
	for a := 1; a < lay.Dims; a++ {
		n := kir.Id(fmt.Sprintf("n%d", a))
		li := lv.b.cellLocal(a, i)
		valid = and(valid, and(ge(coords[a], kir.I(0)), lt(coords[a], n)))
		if h := lay.Reach[a]; h > 0 {
			valid = and(valid, and(ge(li, kir.I(h*lv.t)), lt(li, kir.I(lay.BlockCells[a]-h*lv.t))))
		}
	}
	return valid
}

// results appends to lvl what becomes of the level's new values: level bt's are stored into
// the output where this block owns them, the others' entered into the level's window.
func (lv *n5dLevel) results(lvl []kir.Stmt) []kir.Stmt {
	b, c, VW := lv.b, lv.c, lv.b.lay.VW
	for _, u := range b.p.Updates {
		g := u.Grid
		for i := 0; i < b.NC; i++ {
			v := lv.next[g][i]
			if lv.t == b.bt {
				// Store plane m of the output if this block owns it; with vectors, each
				// aligned run of VW cells (owned together) with the run's first cell.
				if c.vec && i%VW != 0 {
					continue
				}
				coords := b.cellOf(b.col, i)
				coords[0] = kir.Id(lv.row)
				idx := b.em0.linear(coords, nil)
				var st kir.Stmt = kir.Set(kir.At(bufName(g, Out0), idx), v)
				if c.vec {
					st = &kir.VecStore{Vals: lv.next[g][i : i+VW], T: kir.FromIR(g.Type), Width: VW, Array: bufName(g, Out0), Idx: idx, Global: true}
				}
				cond := and(kir.Id(fmt.Sprintf("own_%d", i)), and(ge(kir.Id(lv.row), kir.Id("zb")), lt(kir.Id(lv.row), kir.Id("ze"))))
				lvl = append(lvl, &kir.If{Cond: cond, Then: []kir.Stmt{st}})
				continue
			}
			w := b.win[[2]int{g.Index, lv.t}]
			lvl = append(lvl, b.enter(w, lv.mrel, i, v)...)
		}
	}
	return lvl
}
