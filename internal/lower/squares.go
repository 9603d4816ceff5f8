package lower

import (
	"slices"

	"tempest/internal/ir"
)

// orderSquares writes every square of a difference of two loads, (a - b) * (a - b), with the
// load of the smaller offset first (lexicographic, slowest axis first). The square is the same
// either way, bit for bit (b - a is exactly -(a - b), and a negation squares away), but the
// written form decides what neighbouring cells share: gradient2d's cell at row y computes
// (u - u[y+1])^2 and the cell at row y+1 computes (u - u[y-1])^2, one difference seen from
// both sides. Ordered, both read (u[y] - u[y+1]) and, where the two cells' values sit in the
// same registers (the planes of an n5d register queue, the cells of a thread's register
// tile), the compiler computes the difference once. The program is copied; p is unchanged.
func orderSquares(p *ir.Program) *ir.Program {
	var ups []*ir.Update
	changed := false
	for _, u := range p.Updates {
		v, ch := orderSquaresIn(u.Value)
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
