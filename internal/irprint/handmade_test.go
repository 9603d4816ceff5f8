package irprint_test

import (
	"math"
	"strings"
	"testing"

	"tempest/internal/ir"
	"tempest/internal/irprint"
	"tempest/internal/load"
)

func f32(v float64) *ir.Const { return &ir.Const{V: ir.MakeFloat(ir.F32, v)} }
func f64(v float64) *ir.Const { return &ir.Const{V: ir.MakeFloat(ir.F64, v)} }
func i32(v int64) *ir.Const   { return &ir.Const{V: ir.MakeInt(ir.I32, v)} }
func i64(v int64) *ir.Const   { return &ir.Const{V: ir.MakeInt(ir.I64, v)} }

// handmade builds, by hand, a program with what the .stencil language makes hard to say:
// reserved names, constants whose type the context would not give them (an f64 constant that
// f32 cannot hold in an f32 program, an i64 beyond i32, constants on both sides of a select),
// infinities, NaN and negative zero, per-axis boundaries, two time levels and layers.
func handmade() *ir.Program {
	p := &ir.Program{Name: "hand-made", Axes: []string{"sum", "in"}, DefaultType: ir.F32}
	par := func(name string, v ir.Value) *ir.Param {
		q := &ir.Param{Name: name, Type: v.T, Default: v, Index: len(p.Params)}
		p.Params = append(p.Params, q)
		return q
	}
	negZero := par("value", ir.MakeFloat(ir.F32, math.Copysign(0, -1)))
	par("tenth", ir.MakeFloat(ir.F64, 0.1))
	par("big", ir.MakeInt(ir.I64, 5000000000))
	par("neg", ir.MakeInt(ir.I32, -3))
	par("inf", ir.MakeFloat(ir.F32, math.Inf(1)))
	grid := func(name string, t ir.Type, input bool) *ir.Grid {
		g := &ir.Grid{Name: name, Type: t, Input: input, Levels: 1, Index: len(p.Grids), Rim: []int{0, 0},
			BC: []ir.BC{{Kind: ir.Clamp}, {Kind: ir.Clamp}}}
		p.Grids = append(p.Grids, g)
		return g
	}
	sel := grid("select", ir.I32, true)
	sel.Layers = i32(3)
	u := grid("u", ir.F32, false)
	u.Levels = 2
	u.Init = &ir.Select{C: &ir.Binary{Op: "<", X: &ir.Coord{Axis: 0}, Y: i32(3), T: ir.Bool}, A: f32(1.5), B: f32(math.Copysign(0, -1)), T: ir.F32}
	u.BC = []ir.BC{
		{Kind: ir.Edge, Value: &ir.Binary{Op: "+", X: &ir.EdgeValue{T: ir.F32}, Y: &ir.ParamRef{P: negZero}, T: ir.F32}},
		{Kind: ir.Constant, Value: f32(math.NaN())},
	}
	w := grid("w", ir.F64, false)
	w.Init = &ir.Convert{X: &ir.Rand{T: ir.F32}, To: ir.F64}
	w.BC = []ir.BC{{Kind: ir.Fixed}, {Kind: ir.Fixed}}
	w.Rim = []int{1, 0} // the update's reach: the read of select_ at sum_-1
	sel.Rim = nil       // input grids have none
	let := func(name string, e ir.Expr) *ir.Let {
		l := &ir.Let{Name: name, Value: e, Index: len(p.Lets)}
		p.Lets = append(p.Lets, l)
		return l
	}
	l1 := let("step", f64(0.1))
	l2 := let("x", i64(5000000000))
	l3 := let("l3", &ir.Binary{Op: "*", X: &ir.Load{G: u, Off: []int{0, 0}}, Y: f32(0.3), T: ir.F32})
	layer := &ir.Binary{Op: "+", X: &ir.Step{}, Y: i32(1), T: ir.I32}
	l5 := let("l5", &ir.Call{Fn: "max", T: ir.I64, Args: []ir.Expr{
		&ir.Convert{X: &ir.Load{G: sel, Off: []int{-1, 0}, Layer: layer}, To: ir.I64}, &ir.LetRef{L: l2}}})
	l6 := let("l6", &ir.Unary{Op: "-", X: &ir.LetRef{L: l3}, T: ir.F32})
	l7 := let("l7", &ir.Binary{Op: "-", X: f32(-2.5), Y: &ir.Unary{Op: "-", X: &ir.LetRef{L: l6}, T: ir.F32}, T: ir.F32})
	l8 := let("l8", &ir.Binary{Op: "-", X: &ir.LetRef{L: l7}, Y: &ir.Binary{Op: "-", X: &ir.LetRef{L: l6}, Y: f32(math.Inf(-1)), T: ir.F32}, T: ir.F32})
	upd := func(g *ir.Grid, e ir.Expr) {
		up := &ir.Update{Grid: g, Value: e}
		g.Update = up
		p.Updates = append(p.Updates, up)
	}
	upd(u, &ir.Binary{Op: "+", T: ir.F32,
		X: &ir.Binary{Op: "+", X: &ir.LetRef{L: l8}, Y: &ir.Convert{X: &ir.LetRef{L: l1}, To: ir.F32}, T: ir.F32},
		Y: &ir.Load{G: u, Level: 1, Off: []int{1, -2}}})
	upd(w, &ir.Binary{Op: "+", T: ir.F64, X: &ir.Load{G: w, Off: []int{0, 0}},
		Y: &ir.Binary{Op: "*", X: &ir.Convert{X: &ir.LetRef{L: l5}, To: ir.F64}, Y: &ir.LetRef{L: l1}, T: ir.F64}})
	return p
}

// TestHandmade prints the hand-made program, checks it again and requires the same IR back.
func TestHandmade(t *testing.T) {
	p := handmade()
	text := irprint.Stencil(p)
	q, err := load.Source("handmade.stencil", text, load.Options{})
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	if err := sameProgram(p, q); err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	if again := irprint.Stencil(q); stripHeader(again) != stripHeader(text) {
		t.Fatalf("printing is not stable:\n%s\n---\n%s", text, again)
	}
	for _, want := range []string{"(0.1 - f64(0))", "(5000000000 + i64(0))", "axes sum_, in_", "input select_: i32", "let step_ =", "param value_"} {
		if !strings.Contains(text, want) {
			t.Errorf("printed program lacks %q:\n%s", want, text)
		}
	}
}

// TestInexpressible: a rim wider than the reach is reported and noted in the output.
func TestInexpressible(t *testing.T) {
	p := handmade()
	p.Grids[2].Rim = []int{2, 2}
	why := irprint.Inexpressible(p)
	if len(why) != 2 || !strings.Contains(irprint.Stencil(p), "NOTE: not expressible") {
		t.Fatalf("got %q", why)
	}
}
