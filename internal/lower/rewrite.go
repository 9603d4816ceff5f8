package lower

import (
	"math"
	"slices"

	"tempest/internal/ir"
)

// This file holds the rewrites Lower applies to a program's updates before any strategy lowers
// them: each keeps the results a plan promises (bitwise, or within fast math's bound) and
// shrinks the arithmetic per cell.

// foldScales is fast math's one algebraic rewrite: an update that scales a weighted sum by a
// constant, (c1*a + c2*b + ...) / k or k * (...), becomes the sum with the scale folded into
// its coefficients, (c1/k)*a + (c2/k)*b + ..., one multiplication less per cell and step
// (j2d5pt issues 5 floating-point instructions per cell and level instead of 6; the division by a
// constant is already a product in fast math). Each folded coefficient is rounded once from
// the exact quotient, so a term differs from the reference's by at most the coefficient's
// rounding, and the partial sums are the reference's scaled by k: the error stays within
// what errbound allows the scaled form (the products' and the scaling's roundings). Only sums
// whose every term carries a constant coefficient are folded, so the rewrite never adds an
// operation (a plan setting that kept the scale as written, keepscale, lost in all 43 pairs the
// H200's searches timed, by up to 3.2x, and is gone). The program is copied; p is unchanged.
func foldScales(p *ir.Program) *ir.Program { return mapUpdates(p, foldScale) }

// factorAffines applies factorAffine to every update (fast math).
func factorAffines(p *ir.Program) *ir.Program { return mapUpdates(p, factorAffine) }

// fastMath is what fast math rewrites in p's updates (p itself where nothing changes): the
// folded scale, then the factored box, whose fit sees the folded coefficients, then products
// of computed values fused into the sums they feed.
func fastMath(p *ir.Program) *ir.Program {
	return fuseProducts(factorAffines(reciprocalRoots(foldScales(p))))
}

// reciprocalRoots writes every float quotient of a constant other than 1 by a square root,
// c / sqrt(x), as c * (1 / sqrt(x)): fast math compiles 1 / sqrt(x) to one reciprocal square
// root, where c / sqrt(x) took a square root and a division (gradient2d with its coefficients
// scaled by 0.99 ran at 1,193 GCells/s on the H200 against 1,525 as written with 1.0;
// docs/performance.md, "Stencils written otherwise"). Fast math only: the product rounds once more than
// the reciprocal root, within what errbound allows the root and the division it replaces.
func reciprocalRoots(p *ir.Program) *ir.Program { return mapUpdates(p, reciprocalRoot) }

// reciprocalRoot is reciprocalRoots on e, innermost first.
func reciprocalRoot(e ir.Expr) (ir.Expr, bool) {
	kids := slices.Clone(ir.Children(e))
	changed := false
	for i, k := range kids {
		if x, ch := reciprocalRoot(k); ch {
			kids[i], changed = x, true
		}
	}
	if changed {
		e = withChildren(e, kids)
	}
	b, ok := e.(*ir.Binary)
	if !ok || b.Op != "/" || !b.T.IsFloat() {
		return e, changed
	}
	c := constOf(b.X)
	root, isCall := b.Y.(*ir.Call)
	if c == nil || !isCall || root.Fn != "sqrt" || c.V.F == 1 {
		return e, changed
	}
	one := &ir.Const{V: ir.MakeFloat(b.T, 1)}
	return &ir.Binary{Op: "*", X: b.X, Y: &ir.Binary{Op: "/", X: one, Y: root, T: b.T}, T: b.T}, true
}

// fuseProducts writes every sum or difference with a product of two computed values (neither a
// coefficient) as an explicit fma: s + x*y becomes fma(x, y, s), s - x*y fma(-x, y, s). Compilers
// contract such pairs by themselves, but only where the product has one use: they merge equal
// products first, and gradient2d's (u[y] - u[y+1])^2, which the cells at rows y and y+1 of an n5d
// register queue both add, became one FMUL and two FADDs instead of two FFMAs (in the SASS of the
// tuned kernel). Written as fmas they stay fused, and the equal differences beneath them are still
// computed once. Coefficient products (c*u[...]) are left to the compiler, which fuses them
// already. Fast math only: an fma rounds once where the written form rounds twice, a contraction
// errbound's fast-math accuracies allow. The program is copied; p is unchanged.
func fuseProducts(p *ir.Program) *ir.Program { return mapUpdates(p, fuseProductsIn) }

// fuseProductsIn fuses e's products into their sums, innermost first, so that a chain
// s + x1*y1 + x2*y2 becomes fma(x2, y2, fma(x1, y1, s)).
func fuseProductsIn(e ir.Expr) (ir.Expr, bool) {
	kids := ir.Children(e)
	changed := false
	if len(kids) > 0 {
		nk := make([]ir.Expr, len(kids))
		for i, k := range kids {
			var ch bool
			nk[i], ch = fuseProductsIn(k)
			changed = changed || ch
		}
		if changed {
			e = withChildren(e, nk)
		}
	}
	b, ok := e.(*ir.Binary)
	if !ok || !b.T.IsFloat() || (b.Op != "+" && b.Op != "-") {
		return e, changed
	}
	fma := func(x, y, s ir.Expr) ir.Expr { return &ir.Call{Fn: "fma", Args: []ir.Expr{x, y, s}, T: b.T} }
	neg := func(x ir.Expr) ir.Expr { return &ir.Unary{Op: "-", X: x, T: b.T} }
	if x, y, ok := valueProduct(b.Y); ok {
		if b.Op == "-" {
			x = neg(x)
		}
		return fma(x, y, b.X), true
	}
	if x, y, ok := valueProduct(b.X); ok {
		s := b.Y
		if b.Op == "-" {
			s = neg(s)
		}
		return fma(x, y, s), true
	}
	return e, changed
}

// valueProduct splits e = x*y of two operands that each read something (not a coefficient).
func valueProduct(e ir.Expr) (x, y ir.Expr, ok bool) {
	b, isBin := e.(*ir.Binary)
	if !isBin || b.Op != "*" || !b.T.IsFloat() || readsNothing(b.X) || readsNothing(b.Y) {
		return nil, nil, false
	}
	return b.X, b.Y, true
}

// withChildren is e with its operands replaced by kids (in ir.Children's order).
func withChildren(e ir.Expr, kids []ir.Expr) ir.Expr {
	switch e := e.(type) {
	case *ir.Load:
		c := *e
		c.Layer = kids[0]
		return &c
	case *ir.Unary:
		return &ir.Unary{Op: e.Op, X: kids[0], T: e.T}
	case *ir.Binary:
		return &ir.Binary{Op: e.Op, X: kids[0], Y: kids[1], T: e.T}
	case *ir.Select:
		return &ir.Select{C: kids[0], A: kids[1], B: kids[2], T: e.T}
	case *ir.Call:
		return &ir.Call{Fn: e.Fn, Args: kids, T: e.T}
	case *ir.Convert:
		return &ir.Convert{X: kids[0], To: e.To}
	}
	panic("internal error: withChildren of an expression without operands")
}

// canonicalOrder applies canonicalTerms to every update (fast math): how a user orders a
// stencil's terms does not choose its kernel.
func canonicalOrder(p *ir.Program) *ir.Program { return mapUpdates(p, canonicalTerms) }

// canonicalTerms writes every float sum of weighted loads (c*u[...], u[...]*c or u[...], chained
// by +) in one order whatever order it was written in: by grid, time level and offset, the
// slowest axis first and negative offsets before positive ones (j2d5pt: y-1, x-1, the centre,
// x+1, y+1), each term with its coefficient first. The kernels evaluate a sum's terms in the
// written order, and the same stencil with its terms reversed ran up to 6% faster or slower on
// the H200 (docs/performance.md, "Stencils written otherwise"); in this order every spelling
// gets the kernel of the same plan. Sums with other terms are left in their order (their terms
// are rewritten). Fast math only, as orderTerms.
func canonicalTerms(e ir.Expr) (ir.Expr, bool) { return reorderSums(e, false, canonicalSum) }

// canonicalSum is a weighted sum's terms in the canonical order (canonicalTerms), nil where a
// term is no weighted load.
func canonicalSum(terms []ir.Expr) []ir.Expr {
	for _, x := range terms {
		if weightedLoad(x) == nil {
			return nil
		}
	}
	order := slices.Clone(terms)
	for i, x := range order {
		// u[...]*c as c*u[...]: the coefficient first, as most write it.
		if b, ok := x.(*ir.Binary); ok && b.Op == "*" && constOf(b.X) == nil {
			order[i] = &ir.Binary{Op: "*", X: b.Y, Y: b.X, T: b.T}
		}
	}
	slices.SortStableFunc(order, func(a, b ir.Expr) int {
		la, lb := weightedLoad(a), weightedLoad(b)
		if la.G.Index != lb.G.Index {
			return la.G.Index - lb.G.Index
		}
		if la.Level != lb.Level {
			return la.Level - lb.Level
		}
		return slices.Compare(la.Off, lb.Off)
	})
	return order
}

// reorderSums rewrites every float sum in e (a chain of + of one type; chained: e is an inner
// addition of one) as the terms order gives for its terms, left to right, where order returns
// them otherwise than they are (nil: as they are), and the terms themselves in the same way.
func reorderSums(e ir.Expr, chained bool, order func(terms []ir.Expr) []ir.Expr) (ir.Expr, bool) {
	switch e := e.(type) {
	case *ir.Binary:
		sum := e.Op == "+" && e.T.IsFloat()
		if sum && !chained {
			var terms []ir.Expr
			sumTerms(e, e.T, &terms)
			if o := order(terms); o != nil {
				if slices.Equal(o, terms) {
					return e, false
				}
				s := o[0]
				for _, x := range o[1:] {
					s = &ir.Binary{Op: "+", X: s, Y: x, T: e.T}
				}
				return s, true
			}
		}
		in := func(x ir.Expr) bool {
			b, ok := x.(*ir.Binary)
			return sum && ok && b.Op == "+" && b.T == e.T
		}
		x, cx := reorderSums(e.X, in(e.X), order)
		y, cy := reorderSums(e.Y, in(e.Y), order)
		if !cx && !cy {
			return e, false
		}
		return &ir.Binary{Op: e.Op, X: x, Y: y, T: e.T}, true
	case *ir.Unary:
		if x, ch := reorderSums(e.X, false, order); ch {
			return &ir.Unary{Op: e.Op, X: x, T: e.T}, true
		}
	case *ir.Call:
		var args []ir.Expr
		changed := false
		for _, a := range e.Args {
			x, ch := reorderSums(a, false, order)
			changed = changed || ch
			args = append(args, x)
		}
		if changed {
			return &ir.Call{Fn: e.Fn, Args: args, T: e.T}, true
		}
	}
	return e, false
}

// centreFirst applies orderTerms to every update (plan.CentreFirst).
func centreFirst(p *ir.Program) *ir.Program { return mapUpdates(p, orderTerms) }

// OrdersTerms says plan.CentreFirst changes one of p's updates, so that the tuner measures it
// only where it makes other kernels.
func OrdersTerms(p *ir.Program) bool {
	c := canonicalOrder(p)
	return centreFirst(c) != c
}

// orderTerms writes the terms of every float sum of weighted loads (c*u[...], u[...]*c or u[...],
// chained by +) that read the centre column, no offset but along the streaming axis, before those
// that read in-plane neighbours, each group in its written order (plan.CentreFirst). The kernels
// evaluate a sum's terms in the written order, one FMA after the other, and in n5d the centre
// column comes from registers (the level's queue) while in-plane neighbours are shared-memory
// loads. The order paid on some stencils and lost on others, so it is the plan's
// (docs/performance.md, sixteenth session). Fast math only: another order rounds differently, and
// errbound's fast-math accuracies bound a sum's roundings for any order (Arith.Reassoc). The
// program is copied; p is unchanged.
func orderTerms(e ir.Expr) (ir.Expr, bool) { return reorderSums(e, false, centreSum) }

// centreSum is a weighted sum's terms with those of the centre column first (orderTerms), nil
// where a term is no weighted load or the sum has no terms of one group or the other.
func centreSum(terms []ir.Expr) []ir.Expr {
	var centre, rest []ir.Expr
	for _, x := range terms {
		l := weightedLoad(x)
		if l == nil {
			return nil
		}
		if !nonzero(l.Off[1:]) {
			centre = append(centre, x)
		} else {
			rest = append(rest, x)
		}
	}
	if len(centre) == 0 || len(rest) == 0 {
		return nil
	}
	return append(centre, rest...)
}

// sumTerms appends the terms of the chain of + of type t that e heads, left to right.
func sumTerms(e ir.Expr, t ir.Type, terms *[]ir.Expr) {
	if b, ok := e.(*ir.Binary); ok && b.Op == "+" && b.T == t {
		sumTerms(b.X, t, terms)
		sumTerms(b.Y, t, terms)
		return
	}
	*terms = append(*terms, e)
}

// weightedLoad is the load of a term c*u[...], u[...]*c or u[...] (c a constant), or nil.
func weightedLoad(e ir.Expr) *ir.Load {
	if b, ok := e.(*ir.Binary); ok && b.Op == "*" {
		switch {
		case constOf(b.X) != nil:
			e = b.Y
		case constOf(b.Y) != nil:
			e = b.X
		}
	}
	l, _ := e.(*ir.Load)
	return l
}

// foldScale rewrites e when it is a float sum scaled by a constant, reporting whether it did.
func foldScale(e ir.Expr) (ir.Expr, bool) {
	b, ok := e.(*ir.Binary)
	if !ok || !b.T.IsFloat() {
		return e, false
	}
	var sum ir.Expr
	var k *ir.Const
	div := false
	switch {
	case b.Op == "/":
		sum, k, div = b.X, constOf(b.Y), true
	case b.Op == "*" && constOf(b.Y) != nil:
		sum, k = b.X, constOf(b.Y)
	case b.Op == "*":
		sum, k = b.Y, constOf(b.X)
	}
	if k == nil || k.V.F == 0 || !isSum(sum) {
		return e, false
	}
	if f, ok := distribute(sum, k.V.F, div, b.T); ok {
		return f, true
	}
	return e, false
}

// mapUpdates applies a rewrite to every update of p: p itself where none changes, else a copy
// with new updates (p's grids and lets shared; their Update fields still name p's updates).
func mapUpdates(p *ir.Program, rewrite func(ir.Expr) (ir.Expr, bool)) *ir.Program {
	var ups []*ir.Update
	changed := false
	for _, u := range p.Updates {
		v, ch := rewrite(u.Value)
		changed = changed || ch
		ups = append(ups, &ir.Update{Grid: u.Grid, Value: v})
	}
	if !changed {
		return p
	}
	q := *p
	q.Updates = ups
	return &q
}

// constOf is e as a float constant, or nil.
func constOf(e ir.Expr) *ir.Const {
	if c, ok := e.(*ir.Const); ok && c.V.T.IsFloat() {
		return c
	}
	return nil
}

// isSum says e is an addition or subtraction: a lone product gains nothing from folding.
func isSum(e ir.Expr) bool {
	b, ok := e.(*ir.Binary)
	return ok && (b.Op == "+" || b.Op == "-")
}

// distribute scales every term of the sum e by k (divides by k when div), folding the scale
// into the terms' constant coefficients; it fails on a term without one.
func distribute(e ir.Expr, k float64, div bool, t ir.Type) (ir.Expr, bool) {
	scaled := func(c float64) *ir.Const {
		if div {
			return &ir.Const{V: ir.MakeFloat(t, c/k)}
		}
		return &ir.Const{V: ir.MakeFloat(t, c*k)}
	}
	switch e := e.(type) {
	case *ir.Binary:
		if e.T != t {
			return nil, false
		}
		switch e.Op {
		case "+", "-":
			x, ok := distribute(e.X, k, div, t)
			if !ok {
				return nil, false
			}
			y, ok := distribute(e.Y, k, div, t)
			if !ok {
				return nil, false
			}
			return &ir.Binary{Op: e.Op, X: x, Y: y, T: t}, true
		case "*":
			if c := constOf(e.X); c != nil {
				return &ir.Binary{Op: "*", X: scaled(c.V.F), Y: e.Y, T: t}, true
			}
			if c := constOf(e.Y); c != nil {
				return &ir.Binary{Op: "*", X: e.X, Y: scaled(c.V.F), T: t}, true
			}
		case "/":
			if c := constOf(e.Y); c != nil && c.V.F != 0 {
				// x / c scaled is x * (k/c) (or x * (1/(c*k)) when dividing).
				v := k / c.V.F
				if div {
					v = 1 / (c.V.F * k)
				}
				return &ir.Binary{Op: "*", X: e.X, Y: &ir.Const{V: ir.MakeFloat(t, v)}, T: t}, true
			}
		}
	case *ir.Unary:
		if e.Op == "-" {
			if x, ok := distribute(e.X, k, div, t); ok {
				return &ir.Unary{Op: "-", X: x, T: t}, true
			}
		}
	case *ir.Const:
		if e.V.T == t {
			return scaled(e.V.F), true
		}
	}
	return nil, false
}

// orderSquares writes every square of a difference of two loads, (a - b) * (a - b), with the
// load of the smaller offset first (lexicographic, slowest axis first). The square is the same
// either way, bit for bit (b - a is exactly -(a - b), and a negation squares away), but the
// written form decides what neighbouring cells share: gradient2d's cell at row y computes
// (u - u[y+1])^2 and the cell at row y+1 computes (u - u[y-1])^2, one difference seen from
// both sides. Ordered, both read (u[y] - u[y+1]) and, where the two cells' values sit in the
// same registers (the planes of an n5d register queue, the cells of a thread's register
// tile), the compiler computes the difference once. The program is copied; p is unchanged.
func orderSquares(p *ir.Program) *ir.Program { return mapUpdates(p, orderSquaresIn) }

// orderSquaresIn rewrites e's squares of differences, reporting whether any changed.
func orderSquaresIn(e ir.Expr) (ir.Expr, bool) {
	if b, ok := e.(*ir.Binary); ok && b.Op == "*" && b.T.IsFloat() {
		if a, d, ok := loadDiff(b.X); ok {
			if a2, d2, ok := loadDiff(b.Y); ok && sameLoad(a, a2) && sameLoad(d, d2) {
				if offBefore(d.Off, a.Off) {
					diff := &ir.Binary{Op: "-", X: d, Y: a, T: b.T}
					return &ir.Binary{Op: "*", X: diff, Y: diff, T: b.T}, true
				}
				return e, false
			}
		}
	}
	kids := ir.Children(e)
	changed := false
	nk := make([]ir.Expr, len(kids))
	for i, k := range kids {
		var ch bool
		nk[i], ch = orderSquaresIn(k)
		changed = changed || ch
	}
	if !changed {
		return e, false
	}
	return withChildren(e, nk), true
}

// loadDiff splits e = a - b of two plain loads.
func loadDiff(e ir.Expr) (a, b *ir.Load, ok bool) {
	d, ok := e.(*ir.Binary)
	if !ok || d.Op != "-" {
		return nil, nil, false
	}
	a, okA := d.X.(*ir.Load)
	b, okB := d.Y.(*ir.Load)
	return a, b, okA && okB && a.Layer == nil && b.Layer == nil
}

// sameLoad says a and b read the same cell of the same grid and level.
func sameLoad(a, b *ir.Load) bool {
	return a.G == b.G && a.Level == b.Level && slices.Equal(a.Off, b.Off)
}

// offBefore orders offsets lexicographically.
func offBefore(a, b []int) bool { return slices.Compare(a, b) < 0 }

// factorAffine is fast math's rewrite of a box whose coefficients are affine in the offsets, sum
// over o of (alpha + beta . o) u[o] (AN5D's boxes and j3d27pt are built that way): per plane i of
// the streaming axis it becomes sum over in-plane axes a of beta_a D_a, plus (alpha + beta_0 i) P,
// where P is the plane's box sum and D_a its first moment along a, built from the sums of the
// plane's slices across a, which P shares with D_1 (they print alike, so the compiler computes
// them once). With partial sums (n5d) a plane's sums serve every output plane it feeds, so per
// cell and plane the w + 1 operations per output become the sums once and two per output (box2d2r:
// 30 -> 18 operations per cell and step). Only boxes where that count falls to 75% or less are
// factored: the compiler schedules the longer dependency chains worse, which a small saving does
// not make up for. Tiles of one block per SM expose the chains' latency, where tiles that share an
// SM hide it. Coefficients that are affine only to within rounding (the fit's largest residual
// at most 4 ulp of the largest coefficient) are refitted: each changes by a few ulp, a fast-math
// liberty like the folded scale. Boxes where it saves nothing (reach 1 in 2D) are left as written.
func factorAffine(e ir.Expr) (ir.Expr, bool) {
	t := e.Type()
	if t != ir.F32 && t != ir.F64 {
		return e, false
	}
	terms, ok := linearTerms(e, 1, nil)
	if !ok || len(terms) < 2 {
		return e, false
	}
	g, lvl := terms[0].l.G, terms[0].l.Level
	d := len(terms[0].l.Off)
	if d < 2 || d > 4 {
		return e, false
	}
	lo, hi := make([]int, d), make([]int, d)
	copy(lo, terms[0].l.Off)
	copy(hi, terms[0].l.Off)
	seen := map[[4]int]bool{}
	for _, tm := range terms {
		if tm.l.G != g || tm.l.Level != lvl || tm.l.Layer != nil || len(tm.l.Off) != d {
			return e, false
		}
		var k [4]int
		for a, o := range tm.l.Off {
			lo[a], hi[a], k[a] = min(lo[a], o), max(hi[a], o), o
		}
		if seen[k] {
			return e, false
		}
		seen[k] = true
	}
	n, w := 1, 1 // cells of the box, cells of a plane
	for a := range d {
		if lo[a] != -hi[a] {
			return e, false // centred boxes only: the moments' slices pair up
		}
		n *= hi[a] - lo[a] + 1
		if a > 0 {
			w *= hi[a] - lo[a] + 1
		}
	}
	if n != len(terms) {
		return e, false
	}
	// Least-squares fit of alpha + beta . o; on a centred box the offsets are orthogonal to
	// the constant and to each other, so each coefficient is a plain weighted mean.
	alpha := 0.0
	beta := make([]float64, d)
	big := 0.0
	for _, tm := range terms {
		alpha += tm.c
		big = max(big, math.Abs(tm.c))
	}
	alpha /= float64(n)
	for a := range d {
		num, den := 0.0, 0.0
		for _, tm := range terms {
			o := float64(tm.l.Off[a])
			num += o * tm.c
			den += o * o
		}
		beta[a] = num / den
	}
	ulp := math.Nextafter(big, math.Inf(1)) - big
	if t == ir.F32 {
		ulp = float64(math.Nextafter32(float32(big), float32(math.Inf(1))) - float32(big))
	}
	for _, tm := range terms {
		fit := alpha
		for a, o := range tm.l.Off {
			fit += beta[a] * float64(o)
		}
		if math.Abs(fit-tm.c) > 4*ulp {
			return e, false
		}
	}
	// Operations per cell and plane: as written, w + 1 for each of the P outputs the plane
	// feeds (a product, w - 1 multiply-adds, the accumulation); factored, the slice sums, the
	// moments' A products, and 2 per output.
	P := hi[0] - lo[0] + 1
	A := 0
	for a := 1; a < d; a++ {
		if beta[a] != 0 {
			A++
		}
	}
	sums := w - 1
	for a := 1; a < d; a++ {
		if beta[a] != 0 {
			r := hi[a]
			slice := w / (2*r + 1)
			if a == 1 {
				sums += 2*r - 1 // P shares axis 1's slice sums
			} else {
				sums += 2*r*(slice-1) + r + (r - 1)
			}
		}
	}
	if float64(sums+A+2*P) > 0.75*float64((w+1)*P) {
		return e, false
	}
	add := func(x, y ir.Expr) ir.Expr {
		if x == nil {
			return y
		}
		return &ir.Binary{Op: "+", X: x, Y: y, T: t}
	}
	mul := func(k float64, x ir.Expr) ir.Expr {
		return &ir.Binary{Op: "*", X: &ir.Const{V: ir.MakeFloat(t, k)}, Y: x, T: t}
	}
	// slice is the sum of plane i's loads with offset k along axis a (every other in-plane
	// offset in order), built afresh each time so that equal sums print alike.
	slice := func(i, a, k int) ir.Expr {
		var s ir.Expr
		for _, tm := range terms {
			if tm.l.Off[0] == i && tm.l.Off[a] == k {
				s = add(s, tm.l)
			}
		}
		return s
	}
	moment := func(i, a int) ir.Expr {
		var m ir.Expr
		for k := 1; k <= hi[a]; k++ {
			diff := &ir.Binary{Op: "-", X: slice(i, a, k), Y: slice(i, a, -k), T: t}
			if k == 1 {
				m = add(m, diff)
			} else {
				m = add(m, mul(float64(k), diff))
			}
		}
		return m
	}
	var out ir.Expr
	for i := lo[0]; i <= hi[0]; i++ {
		var box ir.Expr
		for k := lo[1]; k <= hi[1]; k++ {
			box = add(box, slice(i, 1, k))
		}
		// The moments first: their sum prints alike for every output plane and is computed
		// once; each output then pays one multiply-add for the box sum and its accumulation.
		var part ir.Expr
		for a := 1; a < d; a++ {
			if beta[a] != 0 {
				part = add(part, mul(beta[a], moment(i, a)))
			}
		}
		out = add(out, add(part, mul(alpha+beta[0]*float64(i), box)))
	}
	return out, true
}

// linearTerm is one term of a weighted sum of loads.
type linearTerm struct {
	c float64
	l *ir.Load
}

// linearTerms flattens e, scaled by s, into constant x load terms appended to out; it fails
// on anything else.
func linearTerms(e ir.Expr, s float64, out []linearTerm) ([]linearTerm, bool) {
	switch e := e.(type) {
	case *ir.Binary:
		switch e.Op {
		case "+", "-":
			out, ok := linearTerms(e.X, s, out)
			if !ok {
				return nil, false
			}
			if e.Op == "-" {
				return linearTerms(e.Y, -s, out)
			}
			return linearTerms(e.Y, s, out)
		case "*":
			if k := constOf(e.X); k != nil {
				return linearTerms(e.Y, s*k.V.F, out)
			}
			if k := constOf(e.Y); k != nil {
				return linearTerms(e.X, s*k.V.F, out)
			}
		}
	case *ir.Unary:
		if e.Op == "-" {
			return linearTerms(e.X, -s, out)
		}
	case *ir.Load:
		return append(out, linearTerm{c: s, l: e}), true
	}
	return nil, false
}

// pairSums regroups, for one cell of a thread's register tile, every sum of three or more loads
// in e (a factored box's row, column and plane sums), so that the thread's cells share their
// common pairs: pos[a] is the cell's place along axis a among the thread's cells (0 along the
// streaming axis and along untiled axes). The loads are grouped by their place in the thread's
// frame (pos + offset) along the slowest in-plane axis first, each group summed the same way
// along the next axis, and neighbouring groups at places 2m and 2m+1 added first. Two cells
// of a thread two wide then write the sum over x of places 0 and 1 identically (cell 0 sums -1
// with the pair, cell 1 the pair with 2), and the compiler computes it once: the factored
// 27-point box of a 2 x 2 tile of cells takes 146 distinct additions and subtractions instead of
// 176 (TestPairSums). Only fast
// math reassociates; e is unchanged where it holds no such sum.
func pairSums(e ir.Expr, pos []int) ir.Expr {
	switch x := e.(type) {
	case *ir.Binary:
		if x.Op == "+" && x.T.IsFloat() {
			var leaves []ir.Expr
			flattenSum(x, &leaves)
			if loads := plainLoads(leaves); len(loads) > 2 {
				return pairLoads(loads, pos, 1, x.T)
			}
		}
		nx, ny := pairSums(x.X, pos), pairSums(x.Y, pos)
		if nx == x.X && ny == x.Y {
			return e
		}
		return &ir.Binary{Op: x.Op, X: nx, Y: ny, T: x.T}
	case *ir.Unary:
		if nx := pairSums(x.X, pos); nx != x.X {
			return &ir.Unary{Op: x.Op, X: nx, T: x.T}
		}
	case *ir.Convert:
		if nx := pairSums(x.X, pos); nx != x.X {
			return &ir.Convert{X: nx, To: x.To}
		}
	case *ir.Select:
		c, a, b := pairSums(x.C, pos), pairSums(x.A, pos), pairSums(x.B, pos)
		if c != x.C || a != x.A || b != x.B {
			return &ir.Select{C: c, A: a, B: b, T: x.T}
		}
	case *ir.Call:
		args := make([]ir.Expr, len(x.Args))
		changed := false
		for i, a := range x.Args {
			args[i] = pairSums(a, pos)
			changed = changed || args[i] != a
		}
		if changed {
			return &ir.Call{Fn: x.Fn, Args: args, T: x.T}
		}
	}
	return e
}

// flattenSum appends the operands of e's chain of additions to leaves, in order.
func flattenSum(e ir.Expr, leaves *[]ir.Expr) {
	if b, ok := e.(*ir.Binary); ok && b.Op == "+" {
		flattenSum(b.X, leaves)
		flattenSum(b.Y, leaves)
		return
	}
	*leaves = append(*leaves, e)
}

// plainLoads is leaves as loads of one grid, level and plane (offset 0 along the streaming
// axis the same for all) with no layer, or nil.
func plainLoads(leaves []ir.Expr) []*ir.Load {
	var out []*ir.Load
	for _, e := range leaves {
		l, ok := e.(*ir.Load)
		if !ok || l.Layer != nil || len(out) > 0 && (l.G != out[0].G || l.Level != out[0].Level || l.Off[0] != out[0].Off[0]) {
			return nil
		}
		out = append(out, l)
	}
	return out
}

// pairLoads sums loads grouped by place along axis a and the axes after it (pairSums).
func pairLoads(loads []*ir.Load, pos []int, a int, t ir.Type) ir.Expr {
	if a >= len(pos) {
		var s ir.Expr
		for _, l := range loads {
			s = addExpr(s, l, t)
		}
		return s
	}
	groups := map[int][]*ir.Load{}
	var places []int
	for _, l := range loads {
		c := pos[a] + l.Off[a]
		if _, ok := groups[c]; !ok {
			places = append(places, c)
		}
		groups[c] = append(groups[c], l)
	}
	slices.Sort(places)
	var s ir.Expr
	for i := 0; i < len(places); i++ {
		g := pairLoads(groups[places[i]], pos, a+1, t)
		if c := places[i]; mod(c, 2) == 0 && i+1 < len(places) && places[i+1] == c+1 {
			g = addExpr(g, pairLoads(groups[c+1], pos, a+1, t), t)
			i++
		}
		s = addExpr(s, g, t)
	}
	return s
}

// addExpr is x + y, or y where x is nil.
func addExpr(x, y ir.Expr, t ir.Type) ir.Expr {
	if x == nil {
		return y
	}
	return &ir.Binary{Op: "+", X: x, Y: y, T: t}
}

// sharedTerm says some term of the parts of an update summed by plane (n5d's partial sums:
// when a plane of the level below is published, part o adds its terms, terms[o], to the output
// o planes from it) appears in every part alike but for the plane it reads: a factored box's
// moments, whose sum prints alike in every part and is computed once per plane. A part's terms
// are the operands of its chain of additions (partTerms). Fast math accumulates parts without
// such a term as acc + term + term ..., so that each term's product fuses into the
// accumulation (box2d1r's and j2d9pt-gol's three-term parts cost three FFMAs instead of an
// FMUL, two FFMAs and an FADD); parts with one keep acc + (part), which costs no more and
// leaves the shared sum shared.
func sharedTerm(keys []int, terms map[int][]ir.Expr) bool {
	for _, x := range terms[keys[0]] {
		all := true
		for _, o := range keys[1:] {
			if !slices.ContainsFunc(terms[o], func(y ir.Expr) bool { return samePlaneTerm(x, y) }) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// partTerms is the operands of e's chain of additions, in order (flattenSum).
func partTerms(e ir.Expr) []ir.Expr {
	var ts []ir.Expr
	flattenSum(e, &ts)
	return ts
}

// samePlaneTerm says a and b are the same expression but for the plane their loads read
// (offsets along the streaming axis), each reading one plane.
func samePlaneTerm(a, b ir.Expr) bool {
	switch x := a.(type) {
	case *ir.Const:
		y, ok := b.(*ir.Const)
		return ok && x.V == y.V
	case *ir.ParamRef:
		y, ok := b.(*ir.ParamRef)
		return ok && x.P == y.P
	case *ir.LetRef:
		y, ok := b.(*ir.LetRef)
		return ok && x.L == y.L
	case *ir.Load:
		y, ok := b.(*ir.Load)
		return ok && x.G == y.G && x.Level == y.Level && x.Layer == nil && y.Layer == nil && slices.Equal(x.Off[1:], y.Off[1:])
	case *ir.Unary:
		y, ok := b.(*ir.Unary)
		return ok && x.Op == y.Op && x.T == y.T && samePlaneTerm(x.X, y.X)
	case *ir.Binary:
		y, ok := b.(*ir.Binary)
		return ok && x.Op == y.Op && x.T == y.T && samePlaneTerm(x.X, y.X) && samePlaneTerm(x.Y, y.Y)
	case *ir.Call:
		y, ok := b.(*ir.Call)
		if !ok || x.Fn != y.Fn || x.T != y.T || len(x.Args) != len(y.Args) {
			return false
		}
		for i := range x.Args {
			if !samePlaneTerm(x.Args[i], y.Args[i]) {
				return false
			}
		}
		return true
	case *ir.Convert:
		y, ok := b.(*ir.Convert)
		return ok && x.To == y.To && samePlaneTerm(x.X, y.X)
	}
	return false
}
