package lower

import (
	"tempest/internal/ir"
)

// foldScales is fast math's one algebraic rewrite: an update that scales a weighted sum by a
// constant, (c1*a + c2*b + ...) / k or k * (...), becomes the sum with the scale folded into
// its coefficients, (c1/k)*a + (c2/k)*b + ..., one multiplication less per cell and step
// (j2d5pt issues 6 floating-point instructions per cell instead of 5; the division by a
// constant is already a product in fast math). Each folded coefficient is rounded once from
// the exact quotient, so a term differs from the reference's by at most the coefficient's
// rounding, and the partial sums are the reference's scaled by k: the error stays within
// what errbound allows the scaled form (the products' and the scaling's roundings). Only sums
// whose every term carries a constant coefficient are folded, so the rewrite never adds an
// operation; a plan's KeepScale turns it off where the compiler did worse with it. The
// program is copied; p is unchanged.
func foldScales(p *ir.Program) *ir.Program {
	var ups []*ir.Update
	changed := false
	for _, u := range p.Updates {
		v := u.Value
		if f, ok := foldScale(v); ok {
			v, changed = f, true
		}
		ups = append(ups, &ir.Update{Grid: u.Grid, Value: v})
	}
	if !changed {
		return p
	}
	q := *p
	q.Updates = ups
	return &q
}

// FoldsScale says fast math folds a scale in one of p's updates, so that a plan's KeepScale
// changes its kernels.
func FoldsScale(p *ir.Program) bool { return foldScales(p) != p }

// foldScale rewrites e when it is a float sum scaled by a constant.
func foldScale(e ir.Expr) (ir.Expr, bool) {
	b, ok := e.(*ir.Binary)
	if !ok || !b.T.IsFloat() {
		return nil, false
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
		return nil, false
	}
	return distribute(sum, k.V.F, div, b.T)
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
