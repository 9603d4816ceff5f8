package lower

import (
	"testing"

	"tempest/internal/analysis"
	"tempest/internal/ir"
	"tempest/internal/load"
	"tempest/internal/plan"
)

// TestArithmetic: the work per cell the model takes from a plan's kernels. Exact math counts
// the formula's operations (each distinct term once); fast math's factored boxes cost a
// forward-plane kernel more than the formula but the in-plane method, which sums each plane's
// rows once for every output the plane feeds, a fraction of it; a star is no box and keeps
// its count.
func TestArithmetic(t *testing.T) {
	instr := func(o analysis.Ops) int { return o.Add + o.Mul + o.FMA + o.Div + o.Special + o.MinMax - o.FMAPairs }
	for _, c := range []struct {
		name                                     string
		exact, forwardFast, inplaneLo, inplaneHi int
	}{
		{"box3d4r", 729, 1457, 150, 200},
		{"box3d2r", 125, 249, 40, 70},
		{"star3d3r", 19, 19, 19, 25},
	} {
		p, err := load.File("../../examples/an5d/"+c.name+".stencil", load.Options{})
		if err != nil {
			t.Fatal(err)
		}
		exact, ok1 := Arithmetic(p, plan.Plan{Strategy: plan.ForwardPlane})
		fwd, ok2 := Arithmetic(p, plan.Plan{Strategy: plan.ForwardPlane, FastMath: true})
		in, ok3 := Arithmetic(p, plan.Plan{Strategy: plan.InPlane, FastMath: true})
		if !ok1 || !ok2 || !ok3 {
			t.Fatalf("%s: not counted", c.name)
		}
		if got := instr(exact); got != c.exact {
			t.Errorf("%s exact: %d instructions a cell, want %d", c.name, got, c.exact)
		}
		if got := instr(fwd); got != c.forwardFast {
			t.Errorf("%s forwardplane, fast math: %d instructions a cell, want %d", c.name, got, c.forwardFast)
		}
		if got := instr(in); got < c.inplaneLo || got > c.inplaneHi {
			t.Errorf("%s inplane, fast math: %d instructions a cell, want %d to %d", c.name, got, c.inplaneLo, c.inplaneHi)
		}
	}
}

// TestDistinctOps: a subexpression written twice is counted once, and with the planes taken
// as one, two terms that differ only in their plane are one.
func TestDistinctOps(t *testing.T) {
	g := &ir.Grid{Name: "u", Type: ir.F32}
	ld := func(z, x int) ir.Expr { return &ir.Load{G: g, Off: []int{z, 0, x}} }
	add := func(a, b ir.Expr) ir.Expr { return &ir.Binary{Op: "+", X: a, Y: b, T: ir.F32} }
	row := func(z int) ir.Expr { return add(ld(z, -1), ld(z, 1)) }
	e := add(row(0), row(0)) // (a+b) + (a+b): two adds after elimination
	if o := analysis.DistinctOps([]ir.Expr{e}, false); o.Add != 2 {
		t.Errorf("(a+b)+(a+b): %d adds, want 2", o.Add)
	}
	two := []ir.Expr{row(-1), row(1)}
	if o := analysis.DistinctOps(two, false); o.Add != 2 {
		t.Errorf("two planes' rows: %d adds, want 2", o.Add)
	}
	if o := analysis.DistinctOps(two, true); o.Add != 1 {
		t.Errorf("two planes' rows as one plane: %d adds, want 1", o.Add)
	}
}
