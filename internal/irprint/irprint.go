// Package irprint prints any IR program as .stencil source that the checker turns back into an
// equivalent program: same grids, parameters, bindings and updates, the same types and the
// same constants bit for bit. `tempest translate` uses it to show what an SL file or a C loop
// nest means in Tempest's own language, and the round trip (print, check, compare) tests both
// the printer and the checker.
//
// The .stencil language types literals by their use, so the printer writes a constant bare
// only where the checker converts it straight to the constant's type (an operand beside a
// typed operand, an update, an initial value); elsewhere it writes a conversion, f32(0.5),
// or, where even that would round through a narrower type, an expression the checker folds
// to the exact value.
package irprint

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"tempest/internal/ir"
)

// Stencil prints p as .stencil source.
func Stencil(p *ir.Program) string {
	pr := &printer{p: p, names: map[any]string{}}
	pr.assignNames()
	return pr.program()
}

// Inexpressible lists what of p the .stencil language cannot say, so a printed program would
// differ from it: a fixed boundary that keeps more cells than the update's reach, a rim on a
// grid that is not fixed. Empty means Stencil(p) is exact.
func Inexpressible(p *ir.Program) []string {
	var out []string
	for _, g := range p.Grids {
		if g.Update == nil {
			continue
		}
		reach := ir.Reach(g.Update.Value, p.Dims())
		for a := range g.BC {
			want := 0
			if g.BC[a].Kind == ir.Fixed {
				want = reach[a]
			}
			if a < len(g.Rim) && g.Rim[a] != want {
				out = append(out, fmt.Sprintf("grid %s keeps %d cells at each end of axis %s, but a .stencil fixed boundary keeps the update's reach (%d)",
					g.Name, g.Rim[a], p.Axes[a], want))
			}
		}
	}
	return out
}

type printer struct {
	p     *ir.Program
	names map[any]string // *ir.Param, *ir.Grid, *ir.Let, axis index (int) -> printed name
	b     strings.Builder
}

func (pr *printer) assignNames() {
	n := NewNamer()
	take := func(key any, name string) {
		if !n.Take(name) {
			name = n.Fresh(name)
		}
		pr.names[key] = name
	}
	for i, a := range pr.p.Axes {
		take(i, a)
	}
	for _, prm := range pr.p.Params {
		take(prm, prm.Name)
	}
	for _, g := range pr.p.Grids {
		take(g, g.Name)
	}
	for _, l := range pr.p.Lets {
		take(l, l.Name)
	}
	for _, o := range pr.p.Observes {
		take(o, o.Name)
	}
}

func (pr *printer) w(format string, args ...any) { fmt.Fprintf(&pr.b, format, args...) }

// floatType is the type untyped float literals settle to in the printed program.
func (pr *printer) floatType() ir.Type {
	if pr.p.DefaultType.IsFloat() {
		return pr.p.DefaultType
	}
	return ir.F64
}

func (pr *printer) program() string {
	p := pr.p
	if p.Source != "" {
		pr.w("// %s, as Tempest reads it (tempest translate)\n", p.Source)
	}
	for _, why := range Inexpressible(p) {
		pr.w("// NOTE: not expressible in .stencil: %s\n", why)
	}
	name := Sanitize(p.Name)
	pr.w("stencil %s\n", name)
	axes := make([]string, len(p.Axes))
	for i := range p.Axes {
		axes[i] = pr.names[i]
	}
	pr.w("axes %s\n", strings.Join(axes, ", "))
	pr.w("type %s\n", p.DefaultType)
	if len(p.Params) > 0 {
		pr.w("\n")
	}
	for _, prm := range p.Params {
		pr.param(prm)
	}
	for _, g := range p.Grids {
		pr.w("\n")
		pr.grid(g)
	}
	if len(p.Lets) > 0 {
		pr.w("\n")
	}
	for _, l := range p.Lets {
		pr.w("let %s = %s\n", pr.names[l], pr.expr(l.Value, false))
	}
	pr.w("\n")
	for _, u := range p.Updates {
		pr.w("update %s = %s\n", pr.names[u.Grid], pr.expr(u.Value, true))
	}
	if len(p.Observes) > 0 || p.Until != nil {
		pr.w("\n")
	}
	for _, o := range p.Observes {
		pr.w("observe %s = %s(%s)\n", pr.names[o], o.Op, pr.expr(o.Value, false))
	}
	if p.Until != nil {
		pr.w("until %s\n", pr.expr(p.Until, false))
	}
	return pr.b.String()
}

func (pr *printer) param(prm *ir.Param) {
	// Without a type, an integer default gives i32 and a float default the float type.
	inferred := ir.I32
	if prm.Type.IsFloat() {
		inferred = pr.floatType()
	}
	typ := ""
	if prm.Type != inferred {
		typ = ": " + prm.Type.String()
	}
	pr.w("param %s%s = %s\n", pr.names[prm], typ, pr.literal(prm.Default, prm.Type))
}

func (pr *printer) grid(g *ir.Grid) {
	kind := "state"
	if g.Input {
		kind = "input"
	}
	pr.w("%s %s", kind, pr.names[g])
	if g.Type != pr.p.DefaultType {
		pr.w(": %s", g.Type)
	}
	pr.w("\n")
	if g.Levels > 1 && g.Prev == nil {
		pr.w("  levels %d\n", g.Levels)
	}
	if g.Layers != nil {
		pr.w("  layers %s\n", pr.expr(g.Layers, true))
	}
	if g.Init != nil {
		pr.w("  init %s\n", pr.expr(g.Init, true))
	}
	if g.Prev != nil {
		pr.w("  prev %s\n", pr.expr(g.Prev, true))
	}
	if len(g.BC) > 0 {
		specs := make([]string, len(g.BC))
		same := true
		for a, bc := range g.BC {
			specs[a] = pr.bc(bc)
			if specs[a] != specs[0] {
				same = false
			}
		}
		if same {
			if specs[0] != "clamp" || g.Update != nil {
				pr.w("  boundary %s\n", specs[0])
			}
		} else {
			parts := make([]string, len(specs))
			for a, s := range specs {
				parts[a] = pr.names[a] + ": " + s
			}
			pr.w("  boundary %s\n", strings.Join(parts, ", "))
		}
	}
}

func (pr *printer) bc(bc ir.BC) string {
	switch bc.Kind {
	case ir.Constant:
		return "constant(" + pr.expr(bc.Value, true) + ")"
	case ir.Edge:
		return "edge(" + pr.expr(bc.Value, true) + ")"
	}
	return bc.Kind.String()
}

// Precedences of the .stencil grammar; higher binds tighter.
var precedence = map[string]int{
	"||": 1, "&&": 2,
	"==": 3, "!=": 3, "<": 3, "<=": 3, ">": 3, ">=": 3,
	"+": 4, "-": 4,
	"*": 5, "/": 5, "%": 5,
}

const unaryPrec = 6

// expr prints e. direct says that the context converts a bare literal straight to e's type,
// so a constant may be written as a plain number.
func (pr *printer) expr(e ir.Expr, direct bool) string {
	var b strings.Builder
	pr.write(&b, e, direct, 0)
	return b.String()
}

// isConst reports whether e prints as a literal (an untyped constant to the checker).
func isConst(e ir.Expr) bool {
	k, ok := e.(*ir.Const)
	return ok && k.V.T != ir.Bool
}

// precOf is the precedence of e's top operator as printed (7 for atoms), so that parents
// decide on parentheses before writing.
func (pr *printer) precOf(e ir.Expr, direct bool) int {
	switch e := e.(type) {
	case *ir.Const:
		if direct && e.V.T != ir.Bool {
			s := pr.literal(e.V, e.V.T)
			if strings.HasPrefix(s, "-") && !strings.Contains(s, "/") {
				return unaryPrec
			}
		}
	case *ir.Unary:
		return unaryPrec
	case *ir.Binary:
		return precedence[e.Op]
	}
	return 7
}

// maxDepth bounds the printer's recursion; IR deeper than this is printed as a comment (the
// checker builds no such IR: the parser limits nesting far below it).
const maxDepth = 100000

// write prints e into b, streaming, so long chains of operations print in linear time.
func (pr *printer) write(b *strings.Builder, e ir.Expr, direct bool, depth int) {
	if depth > maxDepth {
		b.WriteString("/* too deep */")
		return
	}
	d := depth + 1
	paren := func(x ir.Expr, direct bool, need bool) {
		if need {
			b.WriteString("(")
		}
		pr.write(b, x, direct, d)
		if need {
			b.WriteString(")")
		}
	}
	switch e := e.(type) {
	case *ir.Const:
		switch {
		case e.V.T == ir.Bool:
			fmt.Fprint(b, e.V.B)
		case direct:
			s := pr.literal(e.V, e.V.T)
			if strings.Contains(s, "/") {
				s = "(" + s + ")"
			}
			b.WriteString(s)
		default:
			b.WriteString(pr.typedConst(e.V))
		}
	case *ir.Load:
		pr.writeLoad(b, e, d)
	case *ir.ParamRef:
		b.WriteString(pr.names[e.P])
	case *ir.LetRef:
		b.WriteString(pr.names[e.L])
	case *ir.Coord:
		b.WriteString(pr.names[e.Axis])
	case *ir.Size:
		b.WriteString("size(" + pr.names[e.Axis] + ")")
	case *ir.Step:
		b.WriteString("step")
	case *ir.EdgeValue:
		b.WriteString("value")
	case *ir.Rand:
		b.WriteString("rand()")
	case *ir.ObsRef:
		b.WriteString(pr.names[e.O])
	case *ir.Unary:
		b.WriteString(e.Op)
		px := pr.precOf(e.X, false)
		// --x would not lex as two minus signs in every language; keep them apart.
		negLit := false
		if k, ok := e.X.(*ir.Const); ok && e.Op == "-" && k.V.T != ir.Bool {
			negLit = strings.HasPrefix(pr.typedConst(k.V), "-") || strings.HasPrefix(pr.typedConst(k.V), "(-")
		}
		if u, ok := e.X.(*ir.Unary); ok && u.Op == "-" && e.Op == "-" {
			negLit = true
		}
		paren(e.X, false, px < unaryPrec || negLit)
	case *ir.Binary:
		p := precedence[e.Op]
		// A literal beside a typed operand takes its type; two literals need types of their own.
		dx, dy := !isConst(e.Y), !isConst(e.X)
		px, py := pr.precOf(e.X, dx), pr.precOf(e.Y, dy)
		paren(e.X, dx, px < p || p == 3 && px == 3)
		b.WriteString(" " + e.Op + " ")
		paren(e.Y, dy, py <= p)
	case *ir.Select:
		da, db := !isConst(e.B), !isConst(e.A)
		b.WriteString("select(")
		pr.write(b, e.C, false, d)
		b.WriteString(", ")
		pr.write(b, e.A, da, d)
		b.WriteString(", ")
		pr.write(b, e.B, db, d)
		b.WriteString(")")
	case *ir.Call:
		anyTyped := false
		for _, a := range e.Args {
			if !isConst(a) {
				anyTyped = true
			}
		}
		b.WriteString(e.Fn + "(")
		for i, a := range e.Args {
			if i > 0 {
				b.WriteString(", ")
			}
			pr.write(b, a, anyTyped, d)
		}
		b.WriteString(")")
	case *ir.Convert:
		if e.X.Type() == ir.Bool {
			one, zero := ir.ConvertValue(ir.Value{T: ir.I64, I: 1}, e.To), ir.ConvertValue(ir.Value{T: ir.I64}, e.To)
			b.WriteString("select(")
			pr.write(b, e.X, false, d)
			b.WriteString(", " + pr.typedConst(one) + ", " + pr.typedConst(zero) + ")")
			return
		}
		b.WriteString(e.To.String() + "(")
		pr.write(b, e.X, false, d)
		b.WriteString(")")
	default:
		fmt.Fprintf(b, "/* unknown %T */", e)
	}
}

func (pr *printer) writeLoad(b *strings.Builder, l *ir.Load, depth int) {
	b.WriteString(pr.names[l.G])
	if l.Layer != nil {
		b.WriteString("(")
		pr.write(b, l.Layer, true, depth)
		b.WriteString(")")
	}
	if l.Level == 1 {
		b.WriteString(".prev")
	}
	first := true
	for a, o := range l.Off {
		if o == 0 {
			continue
		}
		if first {
			b.WriteString("[")
		} else {
			b.WriteString(", ")
		}
		first = false
		if o > 0 {
			fmt.Fprintf(b, "%s+%d", pr.names[a], o)
		} else {
			fmt.Fprintf(b, "%s-%d", pr.names[a], -o)
		}
	}
	if !first {
		b.WriteString("]")
	}
}

// literal writes v as a number that, converted straight to type t by the checker (parsed as
// float64, then converted), gives v exactly.
func (pr *printer) literal(v ir.Value, t ir.Type) string {
	switch {
	case t.IsInt():
		return strconv.FormatInt(v.I, 10)
	case t == ir.Bool:
		return fmt.Sprint(v.B)
	}
	return floatLiteral(v.F, t)
}

// floatLiteral prints f (a value of type t) so that float64 parsing followed by conversion to t
// gives f back; infinities and NaN are written as divisions the checker folds.
func floatLiteral(f float64, t ir.Type) string {
	switch {
	case math.IsInf(f, 1):
		return "1.0/0.0"
	case math.IsInf(f, -1):
		return "-1.0/0.0"
	case math.IsNaN(f):
		return "0.0/0.0"
	}
	s := ""
	if t == ir.F32 {
		// The shortest float32 spelling reads best; keep it if the float64 route agrees.
		s = strconv.FormatFloat(f, 'g', -1, 32)
		if p, err := strconv.ParseFloat(s, 64); err != nil || float32(p) != float32(f) {
			s = ""
		}
	}
	if s == "" {
		s = strconv.FormatFloat(f, 'g', -1, 64)
	}
	if !strings.ContainsAny(s, ".eEn") {
		s += ".0"
	}
	return s
}

// typedConst writes a constant that keeps its own type wherever it appears.
func (pr *printer) typedConst(v ir.Value) string {
	switch v.T {
	case ir.Bool:
		return fmt.Sprint(v.B)
	case ir.I32:
		return "i32(" + strconv.FormatInt(v.I, 10) + ")"
	case ir.I64:
		if v.I >= math.MinInt32 && v.I <= math.MaxInt32 {
			return "i64(" + strconv.FormatInt(v.I, 10) + ")"
		}
		// i64(...) would first take the literal as i32; adding a typed zero keeps all 64 bits.
		return "(" + strconv.FormatInt(v.I, 10) + " + i64(0))"
	case ir.F32:
		return "f32(" + floatLiteral(v.F, ir.F32) + ")"
	case ir.F64:
		lit := floatLiteral(v.F, ir.F64)
		if pr.floatType() == ir.F64 || float64(float32(v.F)) == v.F || math.IsNaN(v.F) {
			return "f64(" + lit + ")"
		}
		// f64(...) would first round the literal to the program's f32; subtracting a typed
		// zero converts it straight to f64 (x - 0 is x for every x, -0 included).
		return "(" + lit + " - f64(0))"
	}
	return fmt.Sprint(v)
}
