package lower

import (
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
// operation; a plan's KeepScale turns it off where the compiler did worse with it. The
// program is copied; p is unchanged.
func foldScales(p *ir.Program) *ir.Program { return mapUpdates(p, foldScale) }

// FoldsScale says fast math folds a scale in one of p's updates, so that a plan's KeepScale
// changes its kernels.
func FoldsScale(p *ir.Program) bool { return foldScales(p) != p }

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
		v := c * k
		if div {
			v = c / k
		}
		if t == ir.F32 {
			v = float64(float32(v))
		}
		return &ir.Const{V: ir.Value{T: t, F: v}}
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
				if t == ir.F32 {
					v = float64(float32(v))
				}
				return &ir.Binary{Op: "*", X: e.X, Y: &ir.Const{V: ir.Value{T: t, F: v}}, T: t}, true
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
	switch e := e.(type) {
	case *ir.Binary:
		if e.Op == "*" && e.T.IsFloat() {
			if a, b, ok := loadDiff(e.X); ok {
				if a2, b2, ok := loadDiff(e.Y); ok && sameLoad(a, a2) && sameLoad(b, b2) {
					if offBefore(b.Off, a.Off) {
						d := &ir.Binary{Op: "-", X: b, Y: a, T: e.T}
						return &ir.Binary{Op: "*", X: d, Y: d, T: e.T}, true
					}
					return e, false
				}
			}
		}
		x, cx := orderSquaresIn(e.X)
		y, cy := orderSquaresIn(e.Y)
		if !cx && !cy {
			return e, false
		}
		return &ir.Binary{Op: e.Op, X: x, Y: y, T: e.T}, true
	case *ir.Unary:
		if x, ch := orderSquaresIn(e.X); ch {
			return &ir.Unary{Op: e.Op, X: x, T: e.T}, true
		}
	case *ir.Call:
		var args []ir.Expr
		changed := false
		for _, a := range e.Args {
			x, ch := orderSquaresIn(a)
			changed = changed || ch
			args = append(args, x)
		}
		if changed {
			return &ir.Call{Fn: e.Fn, Args: args, T: e.T}, true
		}
	case *ir.Select:
		c, cc := orderSquaresIn(e.C)
		a, ca := orderSquaresIn(e.A)
		b, cb := orderSquaresIn(e.B)
		if cc || ca || cb {
			return &ir.Select{C: c, A: a, B: b, T: e.T}, true
		}
	case *ir.Convert:
		if x, ch := orderSquaresIn(e.X); ch {
			return &ir.Convert{X: x, To: e.To}, true
		}
	}
	return e, false
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
