package irprint_test

import (
	"fmt"
	"math"

	"tempest/internal/ir"
)

// sameProgram compares two programs structurally, ignoring names (parameters, grids and
// bindings are matched by position) and the file they came from: the printer must give back
// the very same IR.
func sameProgram(a, b *ir.Program) error {
	switch {
	case len(a.Axes) != len(b.Axes):
		return fmt.Errorf("axes %v vs %v", a.Axes, b.Axes)
	case a.DefaultType != b.DefaultType:
		return fmt.Errorf("default type %s vs %s", a.DefaultType, b.DefaultType)
	case len(a.Params) != len(b.Params) || len(a.Grids) != len(b.Grids) || len(a.Lets) != len(b.Lets) || len(a.Updates) != len(b.Updates):
		return fmt.Errorf("declaration counts differ")
	}
	for i, p := range a.Params {
		q := b.Params[i]
		if p.Type != q.Type || !sameValue(p.Default, q.Default) {
			return fmt.Errorf("param %s: %s = %v vs %s = %v", p.Name, p.Type, p.Default, q.Type, q.Default)
		}
	}
	for i, g := range a.Grids {
		h := b.Grids[i]
		if g.Type != h.Type || g.Input != h.Input || g.Levels != h.Levels || rimString(g.Rim) != rimString(h.Rim) {
			return fmt.Errorf("grid %s: %s input=%v levels=%d rim=%v vs %s input=%v levels=%d rim=%v",
				g.Name, g.Type, g.Input, g.Levels, g.Rim, h.Type, h.Input, h.Levels, h.Rim)
		}
		for _, pair := range [][2]ir.Expr{{g.Layers, h.Layers}, {g.Init, h.Init}, {g.Prev, h.Prev}} {
			if err := sameExpr(pair[0], pair[1]); err != nil {
				return fmt.Errorf("grid %s: %v", g.Name, err)
			}
		}
		if len(g.BC) != len(h.BC) {
			return fmt.Errorf("grid %s: boundary axes", g.Name)
		}
		for k := range g.BC {
			if g.BC[k].Kind != h.BC[k].Kind {
				return fmt.Errorf("grid %s axis %d: boundary %s vs %s", g.Name, k, g.BC[k].Kind, h.BC[k].Kind)
			}
			if err := sameExpr(g.BC[k].Value, h.BC[k].Value); err != nil {
				return fmt.Errorf("grid %s axis %d boundary: %v", g.Name, k, err)
			}
		}
	}
	for i, l := range a.Lets {
		if err := sameExpr(l.Value, b.Lets[i].Value); err != nil {
			return fmt.Errorf("let %s: %v", l.Name, err)
		}
	}
	for i, u := range a.Updates {
		v := b.Updates[i]
		if u.Grid.Index != v.Grid.Index {
			return fmt.Errorf("update %d: grid %s vs %s", i, u.Grid.Name, v.Grid.Name)
		}
		if err := sameExpr(u.Value, v.Value); err != nil {
			return fmt.Errorf("update %s: %v", u.Grid.Name, err)
		}
	}
	if len(a.Observes) != len(b.Observes) {
		return fmt.Errorf("%d observables vs %d", len(a.Observes), len(b.Observes))
	}
	for i, o := range a.Observes {
		if o.Op != b.Observes[i].Op {
			return fmt.Errorf("observable %s: %s vs %s", o.Name, o.Op, b.Observes[i].Op)
		}
		if err := sameExpr(o.Value, b.Observes[i].Value); err != nil {
			return fmt.Errorf("observable %s: %v", o.Name, err)
		}
	}
	if err := sameExpr(a.Until, b.Until); err != nil {
		return fmt.Errorf("until: %v", err)
	}
	return nil
}

func sameValue(a, b ir.Value) bool {
	if a.T != b.T {
		return false
	}
	switch {
	case a.T.IsFloat():
		return math.Float64bits(a.F) == math.Float64bits(b.F) || math.IsNaN(a.F) && math.IsNaN(b.F)
	case a.T.IsInt():
		return a.I == b.I
	}
	return a.B == b.B
}

func sameExpr(a, b ir.Expr) error {
	if a == nil || b == nil {
		if (a == nil) != (b == nil) {
			return fmt.Errorf("one side missing: %T vs %T", a, b)
		}
		return nil
	}
	if fmt.Sprintf("%T", a) != fmt.Sprintf("%T", b) || a.Type() != b.Type() {
		return fmt.Errorf("%T %s vs %T %s", a, a.Type(), b, b.Type())
	}
	switch x := a.(type) {
	case *ir.Const:
		if !sameValue(x.V, b.(*ir.Const).V) {
			return fmt.Errorf("constant %v vs %v", x.V, b.(*ir.Const).V)
		}
	case *ir.Load:
		y := b.(*ir.Load)
		if x.G.Index != y.G.Index || x.Level != y.Level || fmt.Sprint(x.Off) != fmt.Sprint(y.Off) {
			return fmt.Errorf("load %s%v level %d vs %s%v level %d", x.G.Name, x.Off, x.Level, y.G.Name, y.Off, y.Level)
		}
		return sameExpr(x.Layer, y.Layer)
	case *ir.ParamRef:
		if x.P.Index != b.(*ir.ParamRef).P.Index {
			return fmt.Errorf("param %s vs %s", x.P.Name, b.(*ir.ParamRef).P.Name)
		}
	case *ir.LetRef:
		if x.L.Index != b.(*ir.LetRef).L.Index {
			return fmt.Errorf("let %s vs %s", x.L.Name, b.(*ir.LetRef).L.Name)
		}
	case *ir.ObsRef:
		if x.O.Index != b.(*ir.ObsRef).O.Index {
			return fmt.Errorf("observable %s vs %s", x.O.Name, b.(*ir.ObsRef).O.Name)
		}
	case *ir.Coord:
		if x.Axis != b.(*ir.Coord).Axis {
			return fmt.Errorf("coordinate %d vs %d", x.Axis, b.(*ir.Coord).Axis)
		}
	case *ir.Size:
		if x.Axis != b.(*ir.Size).Axis {
			return fmt.Errorf("size %d vs %d", x.Axis, b.(*ir.Size).Axis)
		}
	case *ir.Unary:
		if x.Op != b.(*ir.Unary).Op {
			return fmt.Errorf("unary %s vs %s", x.Op, b.(*ir.Unary).Op)
		}
	case *ir.Binary:
		if x.Op != b.(*ir.Binary).Op {
			return fmt.Errorf("binary %s vs %s", x.Op, b.(*ir.Binary).Op)
		}
	case *ir.Call:
		if x.Fn != b.(*ir.Call).Fn {
			return fmt.Errorf("call %s vs %s", x.Fn, b.(*ir.Call).Fn)
		}
	}
	ca, cb := ir.Children(a), ir.Children(b)
	if len(ca) != len(cb) {
		return fmt.Errorf("%T: %d vs %d operands", a, len(ca), len(cb))
	}
	for i := range ca {
		if err := sameExpr(ca[i], cb[i]); err != nil {
			return err
		}
	}
	return nil
}

// rimString treats a missing rim as no rim.
func rimString(r []int) string {
	for _, x := range r {
		if x != 0 {
			return fmt.Sprint(r)
		}
	}
	return "none"
}
