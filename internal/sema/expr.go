package sema

import (
	"fmt"
	"math"
	"strings"

	"tempest/internal/diag"
	"tempest/internal/ir"
	"tempest/internal/syntax"
)

// context says what an expression may refer to.
type context int

const (
	ctxConst   context = iota // literals and sum indices
	ctxParams                 // plus parameters (boundary constants)
	ctxLayers                 // same as ctxParams (layer counts)
	ctxInit                   // plus coordinates, sizes and rand()
	ctxEdge                   // plus coordinates, sizes, step and value
	ctxCell                   // everything: grids, lets, step
	ctxObserve                // as ctxCell, and .prev of one-level state grids
	ctxUntil                  // literals, parameters and observables
)

func (x context) what() string {
	return [...]string{"a constant", "a boundary constant", "a layer count", "an initial value", "an edge value", "an update",
		"an observable", "an until test"}[x]
}

// cell reports whether x is evaluated per cell with every grid and binding in reach.
func (x context) cell() bool { return x == ctxCell || x == ctxObserve }

type scope struct {
	ctx   context
	grid  *ir.Grid // the grid whose edge value is being defined
	vars  []sumVar // innermost last
	terms *int     // terms unrolled so far in the enclosing sums
}

type sumVar struct {
	name string
	val  int64
}

// untyped constants follow Go: they take the type their use demands.
const (
	typed = iota
	untypedInt
	untypedFloat
)

type operand struct {
	e       ir.Expr
	untyped int
}

func constOf(v ir.Value, u int) operand { return operand{e: &ir.Const{V: v}, untyped: u} }

// settle gives an untyped constant its default type: i32 for integers, the float type for floats.
func (c *checker) settle(x operand) ir.Expr {
	switch x.untyped {
	case untypedInt:
		return &ir.Const{V: ir.ConvertValue(x.e.(*ir.Const).V, ir.I32)}
	case untypedFloat:
		return &ir.Const{V: ir.ConvertValue(x.e.(*ir.Const).V, c.floatType())}
	}
	return x.e
}

// convert makes x a value of type t where that is implicit: integers and floats become floats,
// floats change precision, untyped integer constants become integers. A float cannot become an
// integer, nor a boolean a number, without saying so.
func (c *checker) convert(x operand, t ir.Type, pos diag.Pos, what string) operand {
	xt := x.e.Type()
	switch {
	case x.untyped == untypedFloat && t.IsInt():
		v := x.e.(*ir.Const).V.F
		if v != math.Trunc(v) {
			c.fail(pos, fmt.Sprintf("write %s(...) to truncate", t), "%s: constant %v is not an integer (%s)", what, v, t)
		}
		return operand{e: &ir.Const{V: ir.MakeInt(t, int64(v))}}
	case x.untyped == untypedInt && t.IsInt():
		v := x.e.(*ir.Const).V.I
		if t == ir.I32 && (v > math.MaxInt32 || v < math.MinInt32) {
			c.fail(pos, "write i64(...) or use an i64 grid or parameter", "%s: constant %d does not fit in i32", what, v)
		}
		return operand{e: &ir.Const{V: ir.MakeInt(t, v)}}
	case x.untyped != typed:
		return operand{e: &ir.Const{V: ir.ConvertValue(x.e.(*ir.Const).V, t)}}
	case xt == t:
		return x
	case xt == ir.Bool:
		c.fail(pos, "write select(cond, 1, 0) to turn a condition into a number", "%s: a condition (bool) cannot be used as %s", what, t)
	case t == ir.Bool:
		c.fail(pos, "compare it, e.g. x != 0", "%s: a %s value is not a condition", what, xt)
	case xt.IsFloat() && t.IsInt():
		c.fail(pos, fmt.Sprintf("write %s(...) to truncate toward zero", t), "%s: a %s value cannot become %s implicitly", what, xt, t)
	}
	return operand{e: fold(&ir.Convert{X: x.e, To: t})}
}

// fold evaluates e if all its operands are constants.
func fold(e ir.Expr) ir.Expr {
	var args []ir.Value
	for _, ch := range ir.Children(e) {
		k, ok := ch.(*ir.Const)
		if !ok {
			return e
		}
		args = append(args, k.V)
	}
	switch e := e.(type) {
	case *ir.Convert:
		return &ir.Const{V: ir.ConvertValue(args[0], e.To)}
	case *ir.Unary:
		return &ir.Const{V: ir.EvalUnary(e.Op, args[0])}
	case *ir.Binary:
		return &ir.Const{V: ir.EvalBinary(e.Op, args[0], args[1])}
	case *ir.Call:
		return &ir.Const{V: ir.EvalCall(e.Fn, e.T, args)}
	case *ir.Select:
		if args[0].B {
			return e.A
		}
		return e.B
	}
	return e
}

func (c *checker) expr(e syntax.Expr, s *scope) operand {
	switch e := e.(type) {
	case *syntax.IntLit:
		if c.litType != nil {
			return operand{e: &ir.Const{V: ir.MakeFloat(*c.litType, float64(e.Val))}}
		}
		return constOf(ir.Value{T: ir.I64, I: e.Val}, untypedInt)
	case *syntax.FloatLit:
		if c.litType != nil {
			return operand{e: &ir.Const{V: ir.MakeFloat(*c.litType, e.Val)}}
		}
		return constOf(ir.Value{T: ir.F64, F: e.Val}, untypedFloat)
	case *syntax.Name:
		return c.name(e.Ident, s)
	case *syntax.Unary:
		return c.unary(e, s)
	case *syntax.Binary:
		return c.binary(e.Op, c.expr(e.X, s), c.expr(e.Y, s), e.Pos)
	case *syntax.Cond:
		return c.selectOp(e.Pos, c.expr(e.C, s), c.expr(e.A, s), c.expr(e.B, s), e.C.ExprPos())
	case *syntax.Call:
		return c.call(e, s)
	case *syntax.Index:
		return c.load(e, s)
	case *syntax.Selector:
		if e.Sel.Name != "prev" {
			c.fail(e.Sel.Pos, "the only selector is .prev, the previous time level", "unknown selector .%s", e.Sel.Name)
		}
		return c.load(e, s)
	case *syntax.Sum:
		return c.sum(e, s)
	}
	panic(fmt.Sprintf("internal error: unexpected syntax node %T", e))
}

func (c *checker) name(id syntax.Ident, s *scope) operand {
	for i := len(s.vars) - 1; i >= 0; i-- {
		if s.vars[i].name == id.Name {
			return constOf(ir.Value{T: ir.I64, I: s.vars[i].val}, untypedInt)
		}
	}
	switch id.Name {
	case "true", "false":
		return operand{e: &ir.Const{V: ir.Value{T: ir.Bool, B: id.Name == "true"}}}
	case "value":
		if s.ctx == ctxEdge {
			return operand{e: &ir.EdgeValue{T: s.grid.Type}}
		}
	case "step":
		if s.ctx.cell() || s.ctx == ctxEdge {
			return operand{e: &ir.Step{}}
		}
		c.fail(id.Pos, "", "step cannot be used in %s", s.ctx.what())
	}
	if kw := c.checking[id.Name]; kw != "" {
		c.fail(id.Pos, fmt.Sprintf("a %s's value cannot use the name it defines; give the new value a name of its own, e.g. %s %s2 = ...", map[string]string{"param": "parameter", "let": "binding"}[kw], kw, id.Name), "%s refers to itself", id.Name)
	}
	if k, ok := c.consts[id.Name]; ok {
		return k
	}
	if o := c.observes[id.Name]; o != nil || c.observeNames[id.Name] && s.ctx != ctxUntil {
		if s.ctx != ctxUntil {
			c.fail(id.Pos, "observables are values of the whole grid, read only in `until`", "observable %s cannot be used in %s", id.Name, s.ctx.what())
		}
		return operand{e: &ir.ObsRef{O: o}}
	}
	if s.ctx == ctxUntil && c.params[id.Name] == nil {
		if c.failed[id.Name] {
			panic(bail{})
		}
		hint := "declare an observable, e.g. observe maxdiff = max(abs(u - u.prev)), and test it"
		if c.grids[id.Name] == nil && c.lets[id.Name] == nil && c.axisIndex(id.Name) < 0 && id.Name != "step" {
			if h := c.suggest(id.Name); h != "" {
				hint = h
			}
		}
		c.fail(id.Pos, hint, "until reads observables and parameters; %s is not one", id.Name)
	}
	if a := c.axisIndex(id.Name); a >= 0 {
		if s.ctx < ctxInit {
			c.fail(id.Pos, "", "coordinate %s cannot be used in %s", id.Name, s.ctx.what())
		}
		return operand{e: &ir.Coord{Axis: a}}
	}
	if p := c.params[id.Name]; p != nil {
		if s.ctx == ctxConst {
			c.fail(id.Pos, "a parameter's default must be a literal constant", "parameter %s cannot be used in %s", id.Name, s.ctx.what())
		}
		return operand{e: &ir.ParamRef{P: p}}
	}
	if l := c.lets[id.Name]; l != nil {
		if !s.ctx.cell() {
			c.fail(id.Pos, "", "binding %s cannot be used in %s", id.Name, s.ctx.what())
		}
		return operand{e: &ir.LetRef{L: l}}
	}
	if g := c.grids[id.Name]; g != nil {
		return c.load(&syntax.Name{Ident: id}, s)
	}
	if _, declared := c.decls[id.Name]; declared {
		if c.failed[id.Name] {
			// Its declaration was already reported; say nothing more.
			panic(bail{})
		}
		c.fail(id.Pos, "a binding can use only bindings declared before it", "%s is not available here", id.Name)
	}
	if pos, later := c.laterParams[id.Name]; later {
		c.fail(id.Pos, "move the parameter above this use; a parameter's value can use only parameters declared before it", "parameter %s is declared later, at line %d", id.Name, pos.Line)
	}
	if pos, later := c.laterLets[id.Name]; later {
		c.fail(id.Pos, fmt.Sprintf("move the binding above this use; a binding can use only bindings declared before it"), "binding %s is declared later, at line %d", id.Name, pos.Line)
	}
	hint := c.suggest(id.Name)
	switch {
	case c.consts != nil:
		hint = strings.TrimSpace(hint + " a value may use numbers, pi, e, the math functions and the parameters' names")
	case hint != "":
	default:
		hint = "declare it with param, let, state or input"
	}
	c.fail(id.Pos, hint, "undefined name %q", id.Name)
	return operand{}
}

func (c *checker) unary(e *syntax.Unary, s *scope) operand {
	x := c.expr(e.X, s)
	t := x.e.Type()
	switch e.Op {
	case "!":
		if t != ir.Bool || x.untyped != typed {
			c.fail(e.Pos, "! applies to conditions", "! of a %s value", t)
		}
	default:
		if t == ir.Bool {
			c.fail(e.Pos, "", "%s of a condition", e.Op)
		}
	}
	if k, ok := x.e.(*ir.Const); ok {
		return operand{e: &ir.Const{V: ir.EvalUnary(e.Op, k.V)}, untyped: x.untyped}
	}
	if e.Op == "+" {
		return x
	}
	return operand{e: &ir.Unary{Op: e.Op, X: x.e, T: t}}
}

// common is the type two typed numeric operands meet at.
func (c *checker) common(a, b ir.Type) ir.Type {
	switch {
	case a == b:
		return a
	case a.IsInt() && b.IsInt():
		return ir.I64
	case a.IsFloat() && b.IsFloat():
		return ir.F64
	case a.IsFloat():
		return a
	}
	return b
}

// meet converts x and y to the type an operation on both takes.
func (c *checker) meet(x, y operand, pos diag.Pos, what string) (operand, operand, ir.Type) {
	tx, ty := x.e.Type(), y.e.Type()
	var t ir.Type
	switch {
	case x.untyped != typed && y.untyped != typed:
		if x.untyped == untypedFloat || y.untyped == untypedFloat {
			return c.convert(x, ir.F64, pos, what), c.convert(y, ir.F64, pos, what), ir.F64
		}
		return x, y, ir.I64
	case x.untyped != typed:
		t = ty
		if x.untyped == untypedFloat && ty.IsInt() {
			t = c.floatType()
		}
	case y.untyped != typed:
		t = tx
		if y.untyped == untypedFloat && tx.IsInt() {
			t = c.floatType()
		}
	default:
		if tx == ir.Bool || ty == ir.Bool {
			if tx != ty {
				c.fail(pos, "write select(cond, 1, 0) to turn a condition into a number", "%s mixes a condition and a number", what)
			}
			return x, y, ir.Bool
		}
		t = c.common(tx, ty)
	}
	return c.convert(x, t, pos, what), c.convert(y, t, pos, what), t
}

func bothUntyped(x, y operand) int {
	if x.untyped == typed || y.untyped == typed {
		return typed
	}
	if x.untyped == untypedFloat || y.untyped == untypedFloat {
		return untypedFloat
	}
	return untypedInt
}

func (c *checker) binary(op string, x, y operand, pos diag.Pos) operand {
	u := bothUntyped(x, y)
	what := fmt.Sprintf("operator %s", op)
	switch op {
	case "&&", "||":
		if x.e.Type() != ir.Bool || y.e.Type() != ir.Bool {
			c.fail(pos, "&& and || combine conditions such as a < b", "%s needs conditions on both sides", op)
		}
		return operand{e: fold(&ir.Binary{Op: op, X: x.e, Y: y.e, T: ir.Bool})}
	}
	x, y, t := c.meet(x, y, pos, what)
	switch op {
	case "==", "!=", "<", "<=", ">", ">=":
		if t == ir.Bool && op != "==" && op != "!=" {
			c.fail(pos, "", "conditions cannot be ordered with %s", op)
		}
		return operand{e: fold(&ir.Binary{Op: op, X: x.e, Y: y.e, T: ir.Bool})}
	}
	if t == ir.Bool {
		c.fail(pos, "write select(cond, 1, 0) to turn a condition into a number", "arithmetic on conditions")
	}
	if u == untypedInt && (op == "/" || op == "%") && y.e.(*ir.Const).V.I == 0 {
		c.fail(pos, "", "integer division by zero")
	}
	return operand{e: fold(&ir.Binary{Op: op, X: x.e, Y: y.e, T: t}), untyped: u}
}

func (c *checker) selectOp(pos diag.Pos, cond, a, b operand, cpos diag.Pos) operand {
	if cond.e.Type() != ir.Bool {
		c.fail(cpos, "the first operand of a conditional is a comparison such as a < b", "condition is %s, not bool", cond.e.Type())
	}
	u := bothUntyped(a, b)
	if k, ok := cond.e.(*ir.Const); ok {
		// A constant condition picks its branch and keeps it untyped.
		a, b, _ = c.meet(a, b, pos, "conditional")
		if k.V.B {
			return operand{e: a.e, untyped: u}
		}
		return operand{e: b.e, untyped: u}
	}
	if u != typed {
		// Two untyped branches under a varying condition take their default types.
		t := ir.I32
		if u == untypedFloat {
			t = c.floatType()
		}
		a, b = c.convert(a, t, pos, "conditional"), c.convert(b, t, pos, "conditional")
	}
	a, b, t := c.meet(a, b, pos, "conditional")
	return operand{e: fold(&ir.Select{C: cond.e, A: a.e, B: b.e, T: t})}
}

func (c *checker) call(e *syntax.Call, s *scope) operand {
	fn, ok := e.Fun.(*syntax.Name)
	if !ok {
		c.fail(e.Pos, "", "only functions and layered grids can be called")
	}
	name := fn.Name
	if g := c.grids[name]; g != nil {
		return c.load(e, s)
	}
	nargs := func(n int) {
		if len(e.Args) != n {
			c.fail(e.Pos, "", "%s takes %d argument(s), got %d", name, n, len(e.Args))
		}
	}
	switch name {
	case "select":
		nargs(3)
		return c.selectOp(e.Pos, c.expr(e.Args[0], s), c.expr(e.Args[1], s), c.expr(e.Args[2], s), e.Args[0].ExprPos())
	case "f32", "f64", "i32", "i64":
		nargs(1)
		t, _ := ir.ParseType(name)
		x := c.expr(e.Args[0], s)
		if x.e.Type() == ir.Bool {
			c.fail(e.Args[0].ExprPos(), "write select(cond, 1, 0)", "cannot convert a condition to %s", t)
		}
		if x.untyped != typed {
			// An untyped constant converts straight to the target type (i64(3000000000)).
			if x.untyped == untypedInt && t.IsInt() {
				return c.convert(x, t, e.Args[0].ExprPos(), name)
			}
			return operand{e: &ir.Const{V: ir.ConvertValue(x.e.(*ir.Const).V, t)}}
		}
		return operand{e: fold(&ir.Convert{X: x.e, To: t})}
	case "size":
		nargs(1)
		an, ok := e.Args[0].(*syntax.Name)
		if !ok || c.axisIndex(an.Name) < 0 {
			c.fail(e.Args[0].ExprPos(), "write size(x) with an axis name: "+strings.Join(c.prog.Axes, ", "), "size needs an axis name")
		}
		if s.ctx < ctxInit || s.ctx == ctxUntil {
			c.fail(e.Pos, "", "size cannot be used in %s", s.ctx.what())
		}
		return operand{e: &ir.Size{Axis: c.axisIndex(an.Name)}}
	case "rand":
		nargs(0)
		if s.ctx != ctxInit {
			c.fail(e.Pos, "rand() gives random initial values; updates are deterministic", "rand() is allowed only in init and prev")
		}
		return operand{e: &ir.Rand{T: c.floatType()}}
	}
	n, ok := ir.FunArity[name]
	if !ok {
		hint := "math functions: sqrt exp log sin cos tan tanh abs min max floor ceil pow fma; also select, size, rand and conversions f32 f64 i32 i64"
		c.fail(fn.Ident.Pos, hint, "unknown function %q", name)
	}
	nargs(n)
	args := make([]operand, n)
	for i, a := range e.Args {
		args[i] = c.expr(a, s)
		if args[i].e.Type() == ir.Bool {
			c.fail(a.ExprPos(), "", "%s of a condition", name)
		}
	}
	// The call's type: the meet of the arguments, then a float type for float-only functions.
	acc := args[0]
	for _, a := range args[1:] {
		acc, _, _ = c.meet(acc, a, e.Pos, name)
	}
	u := typed
	if acc.untyped != typed {
		u = untypedFloat
		if !ir.FloatOnly[name] {
			u = acc.untyped
		}
	}
	var t ir.Type
	switch {
	case acc.untyped == untypedInt && !ir.FloatOnly[name]:
		t = ir.I64
	case acc.untyped != typed:
		t = ir.F64
	default:
		t = acc.e.Type()
		if ir.FloatOnly[name] && t.IsInt() {
			t = c.floatType()
		}
	}
	out := &ir.Call{Fn: name, T: t}
	for _, a := range args {
		out.Args = append(out.Args, c.convert(a, t, e.Pos, name).e)
	}
	return operand{e: fold(out), untyped: u}
}

// load checks a grid read: u, u[x+1], u.prev[y-1], wall(step)[x].
func (c *checker) load(e syntax.Expr, s *scope) operand {
	var indices []syntax.Expr
	pos := e.ExprPos()
	if ix, ok := e.(*syntax.Index); ok {
		indices = ix.Indices
		e = ix.X
	}
	level := 0
	if sel, ok := e.(*syntax.Selector); ok {
		level = 1
		e = sel.X
	}
	var layer syntax.Expr
	if call, ok := e.(*syntax.Call); ok {
		if len(call.Args) != 1 {
			c.fail(call.Pos, "write grid(layer)[offsets]", "a layered grid takes one layer index")
		}
		layer = call.Args[0]
		e = call.Fun
	}
	nm, ok := e.(*syntax.Name)
	if !ok {
		c.fail(pos, "index a grid by name: u[x+1]", "only grids can be indexed")
	}
	g := c.grids[nm.Name]
	if g == nil {
		if c.axisIndex(nm.Name) >= 0 || c.params[nm.Name] != nil || c.lets[nm.Name] != nil {
			c.fail(pos, "only grids have neighbours", "%s is not a grid", nm.Name)
		}
		c.fail(nm.Ident.Pos, c.suggest(nm.Name), "undefined grid %q", nm.Name)
	}
	switch s.ctx {
	case ctxCell, ctxObserve:
	case ctxEdge:
		c.fail(nm.Ident.Pos, "an edge value may use `value` (the nearest cell), coordinates, parameters and step", "grids cannot be read in an edge value")
	default:
		c.fail(nm.Ident.Pos, "", "grid %s cannot be read in %s", g.Name, s.ctx.what())
	}
	if level == 1 && g.Input && s.ctx == ctxObserve {
		c.fail(pos, "input grids never change: read "+g.Name+" itself", "input grid %s has no previous level", g.Name)
	}
	if level == 1 && g.Levels < 2 && s.ctx != ctxObserve {
		c.fail(pos, fmt.Sprintf("declare `state %s levels 2` to keep the previous step", g.Name), "grid %s keeps no previous level", g.Name)
	}
	ld := &ir.Load{G: g, Level: level, Off: make([]int, len(c.prog.Axes))}
	if (layer != nil) != (g.Layers != nil) {
		if layer == nil {
			c.fail(pos, fmt.Sprintf("write %s(layer)[...], e.g. %s(step)", g.Name, g.Name), "grid %s has layers: say which", g.Name)
		}
		c.fail(pos, "", "grid %s has no layers", g.Name)
	}
	if layer != nil {
		ld.Layer = c.convert(c.expr(layer, s), ir.I32, layer.ExprPos(), "layer index").e
	}
	seen := make([]bool, len(c.prog.Axes))
	for _, ix := range indices {
		a, off := c.offset(ix, s)
		if seen[a] {
			c.fail(ix.ExprPos(), "give each axis once", "axis %s indexed twice", c.prog.Axes[a])
		}
		seen[a] = true
		ld.Off[a] = off
	}
	return operand{e: ld}
}

// offset reads `x`, `x+k`, `x-k` or `k+x` with k a constant integer expression.
func (c *checker) offset(e syntax.Expr, s *scope) (axis, off int) {
	hint := "an index is an axis plus a constant offset, e.g. u[x-1, y+2]"
	if nm, ok := e.(*syntax.Name); ok {
		if a := c.axisIndex(nm.Name); a >= 0 {
			return a, 0
		}
		c.fail(e.ExprPos(), hint, "%s is not an axis", nm.Name)
	}
	b, ok := e.(*syntax.Binary)
	if !ok || (b.Op != "+" && b.Op != "-") {
		c.fail(e.ExprPos(), hint, "index is not of the form axis ± constant")
	}
	axisSide, kSide, sign := b.X, b.Y, 1
	if b.Op == "-" {
		sign = -1
	}
	if nm, ok := axisSide.(*syntax.Name); !ok || c.axisIndex(nm.Name) < 0 {
		if b.Op == "+" {
			axisSide, kSide = b.Y, b.X
		}
	}
	nm, ok := axisSide.(*syntax.Name)
	if !ok || c.axisIndex(nm.Name) < 0 {
		c.fail(e.ExprPos(), hint, "index is not of the form axis ± constant")
	}
	k := c.expr(kSide, &scope{ctx: ctxConst, vars: s.vars})
	kc, ok := k.e.(*ir.Const)
	if !ok || !kc.V.T.IsInt() {
		c.fail(kSide.ExprPos(), "offsets are constant integers (sum indices count as constants)", "offset is not a constant integer")
	}
	if kc.V.I > 1<<20 || kc.V.I < -(1<<20) {
		c.fail(kSide.ExprPos(), "", "offset %d is too large", kc.V.I)
	}
	return c.axisIndex(nm.Name), sign * int(kc.V.I)
}

func (c *checker) sum(e *syntax.Sum, s *scope) operand {
	type rng struct {
		name   string
		lo, hi int64
	}
	var ranges []rng
	total := int64(1)
	for _, v := range e.Vars {
		bound := func(x syntax.Expr) int64 {
			k := c.expr(x, &scope{ctx: ctxConst, vars: s.vars})
			kc, ok := k.e.(*ir.Const)
			if !ok || !kc.V.T.IsInt() {
				c.fail(x.ExprPos(), "sum bounds are constant integers", "sum bound is not a constant integer")
			}
			return kc.V.I
		}
		if _, taken := c.decls[v.Name.Name]; taken || reserved[v.Name.Name] {
			c.fail(v.Name.Pos, "choose an index name that is not an axis, grid, parameter, binding or builtin", "sum index %q hides another name", v.Name.Name)
		}
		r := rng{name: v.Name.Name, lo: bound(v.Lo), hi: bound(v.Hi)}
		if r.hi < r.lo {
			c.fail(v.Lo.ExprPos(), "both ends are included: -1..1 has three values", "empty range %d..%d", r.lo, r.hi)
		}
		total *= r.hi - r.lo + 1
		if total > MaxSumTerms {
			c.fail(e.Pos, "", "sum unrolls into more than %d terms", MaxSumTerms)
		}
		ranges = append(ranges, r)
	}
	if s.terms == nil {
		n := 0
		s.terms = &n
	}
	var acc *operand
	idx := make([]int64, len(ranges))
	for i, r := range ranges {
		idx[i] = r.lo
	}
	for {
		inner := *s
		inner.vars = append(append([]sumVar(nil), s.vars...), make([]sumVar, len(ranges))...)
		for i, r := range ranges {
			inner.vars[len(s.vars)+i] = sumVar{name: r.name, val: idx[i]}
		}
		*s.terms++
		if *s.terms > MaxSumTerms {
			c.fail(e.Pos, "", "sums unroll into more than %d terms", MaxSumTerms)
		}
		term := c.expr(e.Body, &inner)
		if acc == nil {
			acc = &term
		} else {
			next := c.binary("+", *acc, term, e.Pos)
			acc = &next
		}
		// next index, last varying fastest
		i := len(ranges) - 1
		for ; i >= 0; i-- {
			idx[i]++
			if idx[i] <= ranges[i].hi {
				break
			}
			idx[i] = ranges[i].lo
		}
		if i < 0 {
			break
		}
	}
	return *acc
}
