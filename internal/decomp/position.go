package decomp

import (
	"fmt"

	"tempest/internal/ir"
)

// OriginParam names the parameter through which a sub-domain learns the global coordinate of
// its first local row, in programs whose updates or boundaries read their position along the
// split axis; OriginParam1 names its first local column along Axis1 in two-dimensional
// layouts.
const (
	OriginParam  = "tempest_origin"
	OriginParam1 = "tempest_origin1"
)

// positionalAlong reports whether any update or boundary rule reads the coordinate or the
// size of axis a: such programs run on sub-domains split along a as localized copies.
func positionalAlong(p *ir.Program, a int) bool {
	found := false
	look := func(e ir.Expr) {
		if e == nil {
			return
		}
		ir.WalkDeep(e, func(x ir.Expr) {
			switch x := x.(type) {
			case *ir.Coord:
				found = found || x.Axis == a
			case *ir.Size:
				found = found || x.Axis == a
			}
		})
	}
	for _, u := range p.Updates {
		look(u.Value)
	}
	for _, g := range p.Grids {
		for _, bc := range g.BC {
			look(bc.Value)
		}
	}
	return found
}

// localAxis is a split axis whose positions a localized program reads: its global size n and
// whether it wraps.
type localAxis struct {
	axis, n  int
	periodic bool
}

// localize returns a copy of p whose updates and boundary rules read global positions along
// the split axes while computing on a sub-domain: each axis's coordinate becomes the local one
// plus an added i32 parameter (OriginParam, OriginParam1; wrapped into the domain on periodic
// axes, where halos come from the far end), and the axis size becomes the global size n.
// Initial values are computed on the global domain and keep their expressions. The copy's
// parameters are p's followed by the origins, in axes' order, whose indices it returns.
func localize(p *ir.Program, axes []localAxis) (*ir.Program, []int) {
	q := *p
	q.Params = append([]*ir.Param(nil), p.Params...)
	origins := map[int]*ir.Param{}
	extents := map[int]localAxis{}
	var index []int
	for _, la := range axes {
		name := OriginParam
		if la.axis != Axis {
			name = OriginParam1
		}
		o := &ir.Param{Name: name, Type: ir.I32, Default: ir.Value{T: ir.I32}, Index: len(q.Params)}
		q.Params = append(q.Params, o)
		origins[la.axis], extents[la.axis] = o, la
		index = append(index, o.Index)
	}
	grids := map[*ir.Grid]*ir.Grid{}
	lets := map[*ir.Let]*ir.Let{}
	i32 := func(v int) ir.Expr { return &ir.Const{V: ir.Value{T: ir.I32, I: int64(v)}} }
	bin := func(op string, x, y ir.Expr, t ir.Type) ir.Expr { return &ir.Binary{Op: op, X: x, Y: y, T: t} }
	var rw func(e ir.Expr) ir.Expr
	rw = func(e ir.Expr) ir.Expr {
		switch e := e.(type) {
		case nil:
			return nil
		case *ir.Coord:
			origin, ok := origins[e.Axis]
			if !ok {
				return e
			}
			n := extents[e.Axis].n
			g := bin("+", e, &ir.ParamRef{P: origin}, ir.I32)
			if !extents[e.Axis].periodic {
				return g
			}
			// Halo rows across the wrap: from -halo to n+halo-1 back into [0, n).
			return &ir.Select{C: bin("<", g, i32(0), ir.Bool), A: bin("+", g, i32(n), ir.I32),
				B: &ir.Select{C: bin(">=", g, i32(n), ir.Bool), A: bin("-", g, i32(n), ir.I32), B: g, T: ir.I32}, T: ir.I32}
		case *ir.Size:
			la, ok := extents[e.Axis]
			if !ok {
				return e
			}
			return i32(la.n)
		case *ir.Load:
			return &ir.Load{G: grids[e.G], Level: e.Level, Off: e.Off, Layer: rw(e.Layer)}
		case *ir.LetRef:
			return &ir.LetRef{L: lets[e.L]}
		case *ir.Unary:
			return &ir.Unary{Op: e.Op, X: rw(e.X), T: e.T}
		case *ir.Binary:
			return &ir.Binary{Op: e.Op, X: rw(e.X), Y: rw(e.Y), T: e.T}
		case *ir.Select:
			return &ir.Select{C: rw(e.C), A: rw(e.A), B: rw(e.B), T: e.T}
		case *ir.Call:
			args := make([]ir.Expr, len(e.Args))
			for i, a := range e.Args {
				args[i] = rw(a)
			}
			return &ir.Call{Fn: e.Fn, Args: args, T: e.T}
		case *ir.Convert:
			return &ir.Convert{X: rw(e.X), To: e.To}
		case *ir.Const, *ir.ParamRef, *ir.Step, *ir.EdgeValue, *ir.Rand:
			return e
		}
		panic(fmt.Sprintf("internal error: localizing %T", e))
	}
	q.Grids = make([]*ir.Grid, len(p.Grids))
	for i, g := range p.Grids {
		c := *g
		c.Rim = append([]int(nil), g.Rim...)
		c.Update = nil
		q.Grids[i] = &c
		grids[g] = &c
	}
	for _, g := range q.Grids {
		bcs := make([]ir.BC, len(g.BC))
		for a, bc := range g.BC {
			bcs[a] = ir.BC{Kind: bc.Kind, Value: rw(bc.Value)}
		}
		g.BC = bcs
	}
	q.Lets = make([]*ir.Let, len(p.Lets))
	for i, l := range p.Lets {
		c := &ir.Let{Name: l.Name, Index: l.Index}
		lets[l] = c
		c.Value = rw(l.Value) // lets refer only to earlier ones
		q.Lets[i] = c
	}
	q.Updates = make([]*ir.Update, len(p.Updates))
	for i, u := range p.Updates {
		c := &ir.Update{Grid: grids[u.Grid], Value: rw(u.Value)}
		c.Grid.Update = c
		q.Updates[i] = c
	}
	return &q, index
}
