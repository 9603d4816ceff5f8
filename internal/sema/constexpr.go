package sema

import (
	"fmt"
	"math"

	"tempest/internal/diag"
	"tempest/internal/ir"
	"tempest/internal/syntax"
)

// ConstValue checks a constant expression written outside a program, the value of
// --param alpha=1/10, and returns it as a value of type t, with the language's own rules
// and arithmetic (the checker's folding, ir's evaluation): the math functions and type
// conversions of the language, pi and e, and the names in consts (the values of parameters
// already set, typed as those parameters are; they hide pi and e). For a float t, number
// literals and pi and e are constants of type t, so the expression is computed in the
// parameter's own type: 1/10 is one tenth, not integer division. For an integer t, literals
// follow the language's untyped constants (7/2 is 3) and the result must fit in t.
// Mistakes are diagnostics with a caret in src.
func ConstValue(src *diag.Source, e syntax.Expr, t ir.Type, consts map[string]ir.Value) (ir.Value, error) {
	c := &checker{src: src, prog: &ir.Program{Source: src.Name, DefaultType: t},
		params: map[string]*ir.Param{}, grids: map[string]*ir.Grid{}, lets: map[string]*ir.Let{},
		decls: map[string]diag.Pos{}, failed: map[string]bool{}, laterLets: map[string]diag.Pos{}}
	c.consts = map[string]operand{}
	named := func(name string, v float64) {
		if t.IsFloat() {
			c.consts[name] = operand{e: &ir.Const{V: ir.MakeFloat(t, v)}}
		} else {
			c.consts[name] = constOf(ir.Value{T: ir.F64, F: v}, untypedFloat)
		}
	}
	named("pi", math.Pi)
	named("e", math.E)
	for name, v := range consts {
		c.consts[name] = operand{e: &ir.Const{V: v}}
	}
	for name := range c.consts {
		c.decls[name] = diag.Pos{} // for "did you mean" suggestions only
	}
	if t.IsFloat() {
		c.litType = &t
	}
	var val ir.Value
	c.guard(func() {
		v := c.expr(e, &scope{ctx: ctxConst})
		k, ok := c.convert(v, t, e.ExprPos(), "the value").e.(*ir.Const)
		if !ok {
			c.fail(e.ExprPos(), "write a constant such as 0.25, 1/10 or 2*pi", "the value is not a constant")
		}
		if t.IsFloat() && (math.IsInf(k.V.F, 0) || math.IsNaN(k.V.F)) {
			c.fail(e.ExprPos(), fmt.Sprintf("%s parameters hold finite numbers, up to %s", t, ir.FormatFloat(maxFloat(t), t)), "the value is %s in %s", ir.FormatFloat(k.V.F, t), t)
		}
		val = k.V
	})
	if err := c.diags.Err(); err != nil {
		return ir.Value{}, err
	}
	return val, nil
}

func maxFloat(t ir.Type) float64 {
	if t == ir.F32 {
		return math.MaxFloat32
	}
	return math.MaxFloat64
}
