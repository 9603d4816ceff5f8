// Package lower turns C statements into .stencil syntax by symbolic execution, so that the SL
// and C loop-nest frontends both hand the .stencil checker (package sema) an ordinary program:
// the IR then gets the same typing, folding and diagnostics as a hand-written .stencil file.
//
// Every local variable holds a symbolic value. An assignment makes a new value; if/else
// merges the two branches' values with a conditional (select), and returns under a condition
// are merged the same way; loops whose bounds are known at compile time are unrolled. At the
// end, a value used more than once, or assigned to a named variable outside any loop, becomes a
// let binding (so the FLOP count stays as written: a value is computed once however often it is
// read); a value used once is written in place.
package lower

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"tempest/internal/diag"
	"tempest/internal/frontend/cc"
	"tempest/internal/ir"
	"tempest/internal/irprint"
	"tempest/internal/syntax"
)

// MaxStatements bounds the statements one translation may execute, counting every unrolled
// iteration, so that a runaway loop gives a diagnostic instead of a hang.
const MaxStatements = 100000

// Hooks are what a frontend adds to plain C: its builtins and arrays. Each method translates a
// construct the builder does not know, or reports it through Builder.Fail.
type Hooks interface {
	// Name translates an identifier that is not a local variable.
	Name(b *Builder, n *cc.Name) syntax.Expr
	// Call translates a call of a function that is not a math function.
	Call(b *Builder, c *cc.Call, fn string) syntax.Expr
	// Index translates an array element read.
	Index(b *Builder, ix *cc.Index) syntax.Expr
	// Member translates s.f or s->f.
	Member(b *Builder, m *cc.Member) syntax.Expr
	// Store handles an assignment to something that is not a local variable; rhs is already
	// translated.
	Store(b *Builder, a *cc.Assign, rhs syntax.Expr)
}

// Builder translates statements for one program. Builders that share a Namer may be used for
// different parts of the same program (an update and an edge value).
type Builder struct {
	Src   *diag.Source
	Diags *diag.List
	Hooks Hooks
	Names *irprint.Namer
	// Elem is the program's element type after any --type override.
	Elem ir.Type
	// ElemAliases are type names that mean the element type (SL's DataType, AN5D's SB_TYPE).
	ElemAliases map[string]bool
	// Types gives the .stencil type of every name hooks produce (parameters, grids, axes).
	Types map[string]Typ
	// NoLets forces every value to be written in place (edge values cannot read bindings).
	NoLets bool
	// Reserved maps names a local variable may not take to the reason.
	Reserved map[string]string
	// AllowReturn permits return statements (SL code returns the new cell value).
	AllowReturn bool

	values []*value
	budget int
	sc     *scope
	st     *state
	loops  int // unrolled loops around the statement being executed
	conds  int // if statements with run-time conditions around it
	nvars  int // variables declared so far
	failed bool
	nodes  int // nodes written by Inline and Resolved, against blow-up
}

// value is one symbolic value: an expression over earlier values.
type value struct {
	e      syntax.Expr
	t      Typ
	hint   string
	named  bool
	pos    diag.Pos
	uses   int
	seen   bool
	let    string
	done   syntax.Expr
	poison bool   // its computation failed (already reported)
	unset  string // set only on some paths: why
	konst  *constResult
}

type constResult struct {
	v  ir.Value
	t  Typ
	ok bool
}

// ref is a read of a value inside an expression under construction; Finish replaces it.
type ref struct {
	v *value
	p diag.Pos
}

// ExprPos makes ref a syntax.Expr.
func (r *ref) ExprPos() diag.Pos { return r.p }

type variable struct {
	name string
	t    Typ
	pos  diag.Pos
	seq  int // declaration order, for deterministic output
}

type scope struct {
	names map[string]*variable
	up    *scope
}

func (s *scope) lookup(name string) *variable {
	for ; s != nil; s = s.up {
		if v := s.names[name]; v != nil {
			return v
		}
	}
	return nil
}

// all lists the variables visible in s, in declaration order.
func (s *scope) all() []*variable {
	var out []*variable
	for ; s != nil; s = s.up {
		for _, v := range s.names {
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	return out
}

// state is what execution knows at a point: each variable's value and what has been returned.
type state struct {
	vals    map[*variable]*value
	ret     *value // the value returned so far (nil: none)
	retAll  bool   // every path has returned
	retCond *value // !retAll: the condition under which a path has returned
	brk     bool
	cont    bool
}

func (s *state) copy() *state {
	c := *s
	c.vals = make(map[*variable]*value, len(s.vals))
	for k, v := range s.vals {
		c.vals[k] = v
	}
	return &c
}

// bail unwinds out of a statement after its first error.
type bail struct{}

// Fail reports a diagnostic and abandons the statement being translated.
func (b *Builder) Fail(pos diag.Pos, hint, format string, args ...any) {
	b.Diags.Add(b.Src, pos, hint, format, args...)
	b.failed = true
	panic(bail{})
}

// Quiet abandons the statement without a new diagnostic (the cause was already reported).
func (b *Builder) Quiet() {
	b.failed = true
	panic(bail{})
}

// IsLocal reports whether name is a local variable where the builder is translating.
func (b *Builder) IsLocal(name string) bool { return b.sc != nil && b.sc.lookup(name) != nil }

// Loops is the number of unrolled loops around the statement being translated.
func (b *Builder) Loops() int { return b.loops }

// Conditional reports whether the statement being translated runs only under a run-time
// condition (inside an if whose condition is not known at compile time).
func (b *Builder) Conditional() bool { return b.conds > 0 }

// Failed reports whether any statement failed.
func (b *Builder) Failed() bool { return b.failed }

func (b *Builder) newValue(e syntax.Expr, hint string, named bool, pos diag.Pos) *value {
	v := &value{e: e, t: b.TypeOf(e), hint: hint, named: named, pos: pos}
	b.values = append(b.values, v)
	return v
}

// Run executes a function body: stmts run in a fresh scope. It returns the value the code
// returns (nil if it returns nothing or failed) and whether it returns on every path.
func (b *Builder) Run(stmts []cc.Stmt) (ret syntax.Expr, all bool) {
	if b.budget == 0 {
		b.budget = MaxStatements
	}
	b.sc = &scope{names: map[string]*variable{}}
	b.st = &state{vals: map[*variable]*value{}}
	for _, s := range stmts {
		b.stmt(s)
	}
	st := b.st
	if st.ret == nil || st.ret.poison {
		return nil, st.retAll
	}
	return &ref{v: st.ret, p: st.ret.pos}, st.retAll
}

func (b *Builder) stmt(s cc.Stmt) {
	st := b.st
	if st.retAll || st.brk || st.cont {
		return // unreachable
	}
	b.budget--
	if b.budget < 0 {
		if b.budget == -1 {
			b.Diags.Add(b.Src, s.Pos(), "loops unroll at compile time; make them shorter",
				"the code executes more than %d statements", MaxStatements)
			b.failed = true
		}
		return
	}
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(bail); !ok {
				panic(r)
			}
			// Whatever the statement would have assigned is now unknown; later reads of it
			// stay silent rather than repeat the error.
			for _, name := range assigned(s) {
				v := b.sc.lookup(name)
				if d, isDecl := s.(*cc.Decl); isDecl && b.sc.names[name] == nil {
					// The declaration itself failed: declare the name anyway so that its
					// uses are not reported as undefined.
					b.nvars++
					v = &variable{name: name, t: Typ{T: b.Elem}, pos: d.P, seq: b.nvars}
					b.sc.names[name] = v
				}
				if v != nil {
					b.st.vals[v] = &value{poison: true}
				}
			}
			if containsReturn(s) {
				b.st.ret, b.st.retAll = &value{poison: true}, true
			}
		}
	}()
	switch s := s.(type) {
	case *cc.Block:
		outer := b.sc
		b.sc = &scope{names: map[string]*variable{}, up: outer}
		defer func() { b.sc = outer }()
		for _, x := range s.List {
			b.stmt(x)
		}
	case *cc.Decl:
		b.decl(s)
	case *cc.ExprStmt:
		b.exprStmt(s.X)
	case *cc.If:
		b.ifStmt(s)
	case *cc.For:
		b.forStmt(s)
	case *cc.While:
		what := "while loops"
		if s.Do {
			what = "do-while loops"
		}
		b.Fail(s.P, "write a for loop with bounds known at compile time (it is unrolled)", "%s are not supported", what)
	case *cc.Return:
		b.returnStmt(s)
	case *cc.Jump:
		if s.Kind == "goto" {
			b.Fail(s.P, "", "goto is not supported")
		}
		if b.loops == 0 {
			b.Fail(s.P, "", "%s outside a loop", s.Kind)
		}
		if s.Kind == "break" {
			st.brk = true
		} else {
			st.cont = true
		}
	case *cc.Empty, *cc.Pragma:
	case *cc.Unsupported:
		b.Fail(s.P, "write it with if/else", "%s is not supported", s.What)
	default:
		b.Fail(s.Pos(), "", "unsupported statement")
	}
}

// assigned lists the local names a statement may assign, for poisoning after an error.
func assigned(s cc.Stmt) []string {
	var out []string
	var expr func(e cc.Expr)
	expr = func(e cc.Expr) {
		switch e := e.(type) {
		case *cc.Assign:
			if n, ok := e.L.(*cc.Name); ok {
				out = append(out, n.Name)
			}
		case *cc.Postfix:
			if n, ok := e.X.(*cc.Name); ok {
				out = append(out, n.Name)
			}
		case *cc.Unary:
			if n, ok := e.X.(*cc.Name); ok && (e.Op == "++" || e.Op == "--") {
				out = append(out, n.Name)
			}
		case *cc.Comma:
			expr(e.X)
			expr(e.Y)
		}
	}
	var walk func(s cc.Stmt, depth int)
	walk = func(s cc.Stmt, depth int) {
		if depth > 250 {
			return
		}
		switch s := s.(type) {
		case *cc.Block:
			for _, x := range s.List {
				walk(x, depth+1)
			}
		case *cc.Decl:
			for _, v := range s.Vars {
				out = append(out, v.Name.Name)
			}
		case *cc.ExprStmt:
			expr(s.X)
		case *cc.If:
			walk(s.Then, depth+1)
			if s.Else != nil {
				walk(s.Else, depth+1)
			}
		case *cc.For:
			if s.Init != nil {
				walk(s.Init, depth+1)
			}
			if s.Post != nil {
				expr(s.Post)
			}
			walk(s.Body, depth+1)
		case *cc.While:
			walk(s.Body, depth+1)
		}
	}
	walk(s, 0)
	return out
}

func containsReturn(s cc.Stmt) bool {
	found := false
	var walk func(s cc.Stmt, depth int)
	walk = func(s cc.Stmt, depth int) {
		if depth > 250 || found {
			return
		}
		switch s := s.(type) {
		case *cc.Return:
			found = true
		case *cc.Block:
			for _, x := range s.List {
				walk(x, depth+1)
			}
		case *cc.If:
			walk(s.Then, depth+1)
			if s.Else != nil {
				walk(s.Else, depth+1)
			}
		case *cc.For:
			walk(s.Body, depth+1)
		case *cc.While:
			walk(s.Body, depth+1)
		}
	}
	walk(s, 0)
	return found
}

// CType maps a C type name to the type a local of that type has. C's float and double follow
// the program's element type when it is a float type (so --type f64 changes them too), and
// likewise int and long for integer programs.
func (b *Builder) CType(t *cc.Type) Typ {
	if t.Ptr > 0 {
		b.Fail(t.P, "Tempest's cell code works on values, not addresses", "pointers are not supported")
	}
	words := strings.Join(t.Words, " ")
	floatClass := func(x ir.Type) Typ {
		if b.Elem.IsFloat() {
			return Typ{T: b.Elem}
		}
		return Typ{T: x}
	}
	intClass := func(x ir.Type) Typ {
		if b.Elem.IsInt() {
			return Typ{T: b.Elem}
		}
		return Typ{T: x}
	}
	switch words {
	case "float":
		return floatClass(ir.F32)
	case "double", "long double":
		return floatClass(ir.F64)
	case "int", "signed", "signed int", "int32_t":
		return intClass(ir.I32)
	case "long", "long int", "long long", "long long int", "signed long", "int64_t", "int64":
		return intClass(ir.I64)
	}
	if len(t.Words) == 1 && b.ElemAliases[t.Words[0]] {
		return Typ{T: b.Elem}
	}
	for _, w := range t.Words {
		if w == "unsigned" || strings.HasPrefix(w, "uint") || w == "size_t" {
			b.Fail(t.P, "use int or long: Tempest's integers are signed", "unsigned types are not supported")
		}
	}
	b.Fail(t.P, "use int, long, float or double", "type %s is not supported", words)
	return Typ{}
}

func (b *Builder) decl(d *cc.Decl) {
	t := b.CType(d.Type)
	for _, dv := range d.Vars {
		if dv.Ptr > 0 || dv.Paren {
			b.Fail(dv.Name.P, "Tempest's cell code works on values, not addresses", "pointers are not supported")
		}
		if len(dv.Dims) > 0 {
			b.Fail(dv.Name.P, "use separate scalar variables", "local arrays are not supported")
		}
		name := dv.Name.Name
		if why, ok := b.Reserved[name]; ok {
			b.Fail(dv.Name.P, why, "%s cannot be declared here", name)
		}
		if prev := b.sc.names[name]; prev != nil {
			b.Fail(dv.Name.P, fmt.Sprintf("%s was declared at line %d", name, prev.pos.Line), "%s redeclared", name)
		}
		b.nvars++
		v := &variable{name: name, t: t, pos: dv.Name.P, seq: b.nvars}
		b.sc.names[name] = v
		if dv.Init != nil {
			if _, isList := dv.Init.(*cc.InitList); isList {
				b.Fail(dv.Init.Pos(), "", "initializer lists are not supported")
			}
			b.assign(v, b.Expr(dv.Init), dv.Name.P)
		}
	}
}

// assign gives variable v the value of e, converted as C converts on assignment.
func (b *Builder) assign(v *variable, e syntax.Expr, pos diag.Pos) {
	e = b.toLocal(e, v.t, pos)
	if r, ok := e.(*ref); ok {
		b.st.vals[v] = r.v // an alias: the variable now names the same value
		return
	}
	if k, t, ok := b.constEval(e); ok && t.U != Typed {
		e = literal(k, t, pos)
	}
	b.st.vals[v] = b.newValue(e, v.name, b.loops == 0, pos)
}

// literal writes an untyped constant as a syntax literal.
func literal(v ir.Value, t Typ, pos diag.Pos) syntax.Expr {
	if t.U == UntypedInt {
		return &syntax.IntLit{Pos: pos, Text: strconv.FormatInt(v.I, 10), Val: v.I}
	}
	return &syntax.FloatLit{Pos: pos, Text: strconv.FormatFloat(v.F, 'g', -1, 64), Val: v.F}
}

func conv(t ir.Type, e syntax.Expr, pos diag.Pos) syntax.Expr {
	return &syntax.Call{Pos: pos, Fun: &syntax.Name{Ident: syntax.Ident{Pos: pos, Name: t.String()}}, Args: []syntax.Expr{e}}
}

func (b *Builder) numify(e syntax.Expr, pos diag.Pos) syntax.Expr {
	if b.TypeOf(e).IsBool() {
		return &syntax.Call{Pos: pos, Fun: &syntax.Name{Ident: syntax.Ident{Pos: pos, Name: "select"}},
			Args: []syntax.Expr{e, &syntax.IntLit{Pos: pos, Text: "1", Val: 1}, &syntax.IntLit{Pos: pos, Text: "0", Val: 0}}}
	}
	return e
}

func (b *Builder) boolify(e syntax.Expr, pos diag.Pos) syntax.Expr {
	if b.TypeOf(e).IsBool() {
		return e
	}
	return &syntax.Binary{Pos: pos, Op: "!=", X: e, Y: &syntax.IntLit{Pos: pos, Text: "0", Val: 0}}
}

// toLocal converts e to a local of type t as C would: every change of type is explicit, so
// later arithmetic sees the variable's declared type.
func (b *Builder) toLocal(e syntax.Expr, t Typ, pos diag.Pos) syntax.Expr {
	e = b.numify(e, pos)
	et := b.TypeOf(e)
	switch {
	case et.U == UntypedInt && t.T.IsInt():
		if t.T == ir.I64 {
			return conv(t.T, e, pos)
		}
		return e // loop counters and integer constants stay compile-time values
	case et.U != Typed:
		return conv(t.T, e, pos)
	case et.T == t.T:
		return e
	}
	return conv(t.T, e, pos)
}

// ToElem converts e for storing into a grid of type t: only the conversions the checker does
// not make by itself (float to integer truncation, conditions to numbers) are written out.
func (b *Builder) ToElem(e syntax.Expr, t ir.Type, pos diag.Pos) syntax.Expr {
	e = b.numify(e, pos)
	et := b.TypeOf(e)
	if t.IsInt() && et.IsFloat() {
		return conv(t, e, pos)
	}
	return e
}

func (b *Builder) exprStmt(x cc.Expr) {
	switch x := x.(type) {
	case *cc.Assign:
		b.assignStmt(x)
	case *cc.Postfix:
		b.incr(x.X, x.Op, x.P)
	case *cc.Unary:
		if x.Op == "++" || x.Op == "--" {
			b.incr(x.X, x.Op, x.P)
			return
		}
		b.Expr(x)
	case *cc.Comma:
		b.exprStmt(x.X)
		b.exprStmt(x.Y)
	default:
		b.Expr(x)
	}
}

func (b *Builder) incr(x cc.Expr, op string, pos diag.Pos) {
	n, ok := x.(*cc.Name)
	if !ok {
		b.Fail(pos, "", "%s applies to a local variable here", op)
	}
	v := b.local(n)
	bop := "+"
	if op == "--" {
		bop = "-"
	}
	b.assign(v, &syntax.Binary{Pos: pos, Op: bop, X: b.read(v, n.P), Y: &syntax.IntLit{Pos: pos, Text: "1", Val: 1}}, pos)
}

func (b *Builder) local(n *cc.Name) *variable {
	v := b.sc.lookup(n.Name)
	if v == nil {
		b.Fail(n.P, "declare it first, e.g. float "+n.Name+";", "%s is not a local variable", n.Name)
	}
	return v
}

func (b *Builder) assignStmt(a *cc.Assign) {
	if n, ok := a.L.(*cc.Name); ok && b.sc.lookup(n.Name) != nil {
		v := b.sc.lookup(n.Name)
		rhs := b.Expr(a.R)
		if a.Op != "=" {
			op := strings.TrimSuffix(a.Op, "=")
			if !arith[op] {
				b.Fail(a.P, "", "operator %s is not supported", a.Op)
			}
			rhs = b.arith(op, b.read(v, n.P), rhs, a.P)
		}
		b.assign(v, rhs, a.P)
		return
	}
	if _, chained := a.R.(*cc.Assign); chained {
		b.Fail(a.R.Pos(), "write each assignment as its own statement", "chained assignment is not supported")
	}
	b.Hooks.Store(b, a, b.Expr(a.R))
}

var arith = map[string]bool{"+": true, "-": true, "*": true, "/": true, "%": true}

// read returns a reference to variable v's current value.
func (b *Builder) read(v *variable, pos diag.Pos) syntax.Expr {
	val := b.st.vals[v]
	switch {
	case val == nil:
		b.Fail(pos, fmt.Sprintf("assign %s before using it", v.name), "%s is used before it is assigned", v.name)
	case val.poison:
		b.Quiet()
	case val.unset != "":
		b.Fail(pos, val.unset, "%s may be used before it is assigned", v.name)
	}
	return &ref{v: val, p: pos}
}

func (b *Builder) ifStmt(s *cc.If) {
	c := b.boolify(b.Expr(s.Cond), s.Cond.Pos())
	if k, _, ok := b.constEval(c); ok && k.T == ir.Bool {
		if k.B {
			b.stmt(s.Then)
		} else if s.Else != nil {
			b.stmt(s.Else)
		}
		return
	}
	cv := b.newValue(c, "cond", false, s.Cond.Pos())
	outer := b.st
	run := func(body cc.Stmt) *state {
		b.st = outer.copy()
		if body != nil {
			b.stmt(body)
		}
		st := b.st
		b.st = outer
		return st
	}
	b.conds++
	s1 := run(s.Then)
	s2 := run(s.Else)
	b.conds--
	if s1.brk || s1.cont || s2.brk || s2.cont {
		b.Fail(s.P, "break and continue may depend only on conditions known at compile time", "break or continue under a run-time condition is not supported")
	}
	cref := func() syntax.Expr { return &ref{v: cv, p: cv.pos} }
	for _, v := range b.sc.all() {
		v1, v2 := s1.vals[v], s2.vals[v]
		if v1 == v2 {
			continue
		}
		switch {
		case v1 != nil && v1.poison || v2 != nil && v2.poison:
			outer.vals[v] = &value{poison: true}
		case v1 == nil || v2 == nil || v1.unset != "" || v2.unset != "":
			branch := "else"
			if v1 == nil || v1.unset != "" {
				branch = "if"
			}
			outer.vals[v] = &value{unset: fmt.Sprintf("the if at line %d does not assign %s in its %s branch", s.P.Line, v.name, branch)}
		default:
			m := &syntax.Cond{Pos: s.P, C: cref(), A: &ref{v: v1, p: s.P}, B: &ref{v: v2, p: s.P}}
			outer.vals[v] = b.newValue(m, v.name, false, s.P)
		}
	}
	b.mergeReturns(outer, s1, s2, cv, s.P)
}

// condOf is the condition under which a state has returned: nil means never.
func (b *Builder) condOf(s *state, pos diag.Pos) syntax.Expr {
	switch {
	case s.ret == nil:
		return nil
	case s.retAll:
		return &syntax.Name{Ident: syntax.Ident{Pos: pos, Name: "true"}}
	}
	return &ref{v: s.retCond, p: pos}
}

func (b *Builder) mergeReturns(out, s1, s2 *state, cv *value, pos diag.Pos) {
	if s1.ret == s2.ret && s1.retAll == s2.retAll && s1.retCond == s2.retCond {
		out.ret, out.retAll, out.retCond = s1.ret, s1.retAll, s1.retCond
		return
	}
	if s1.ret != nil && s1.ret.poison || s2.ret != nil && s2.ret.poison {
		out.ret, out.retAll = &value{poison: true}, true
		return
	}
	r1, r2 := s1.ret, s2.ret
	if r1 == nil {
		r1 = r2
	}
	if r2 == nil {
		r2 = r1
	}
	var rv *value
	if r1 == r2 {
		rv = r1
	} else {
		rv = b.newValue(&syntax.Cond{Pos: pos, C: &ref{v: cv, p: pos}, A: &ref{v: r1, p: pos}, B: &ref{v: r2, p: pos}}, "ret", false, pos)
	}
	out.ret = rv
	if s1.retAll && s2.retAll {
		out.retAll = true
		return
	}
	c := &ref{v: cv, p: pos}
	notC := &syntax.Unary{Pos: pos, Op: "!", X: &ref{v: cv, p: pos}}
	and := func(x syntax.Expr, y syntax.Expr) syntax.Expr {
		if y == nil {
			return nil
		}
		if n, ok := y.(*syntax.Name); ok && n.Name == "true" {
			return x
		}
		return &syntax.Binary{Pos: pos, Op: "&&", X: x, Y: y}
	}
	a1, a2 := and(c, b.condOf(s1, pos)), and(notC, b.condOf(s2, pos))
	var cond syntax.Expr
	switch {
	case a1 == nil:
		cond = a2
	case a2 == nil:
		cond = a1
	default:
		cond = &syntax.Binary{Pos: pos, Op: "||", X: a1, Y: a2}
	}
	out.retAll = false
	out.retCond = b.newValue(cond, "done", false, pos)
}

func (b *Builder) returnStmt(s *cc.Return) {
	if !b.AllowReturn {
		b.Fail(s.P, "", "return is not allowed here")
	}
	if s.X == nil {
		b.Fail(s.P, "return the new value: return expression;", "return without a value")
	}
	e := b.ToElem(b.Expr(s.X), b.Elem, s.X.Pos())
	st := b.st
	if st.ret != nil && !st.retAll {
		e = &syntax.Cond{Pos: s.P, C: &ref{v: st.retCond, p: s.P}, A: &ref{v: st.ret, p: s.P}, B: e}
	}
	if r, ok := e.(*ref); ok {
		st.ret = r.v
	} else {
		st.ret = b.newValue(e, "ret", false, s.P)
	}
	st.retAll = true
}

// maxIterations bounds one unrolled loop.
const maxIterations = 10000

func (b *Builder) forStmt(s *cc.For) {
	outer := b.sc
	b.sc = &scope{names: map[string]*variable{}, up: outer}
	defer func() { b.sc = outer }()
	if s.Init != nil {
		b.stmt(s.Init)
	}
	if s.Cond == nil {
		b.Fail(s.P, "give the loop a condition known at compile time", "a loop without a condition never ends")
	}
	for iter := 0; ; iter++ {
		if iter > maxIterations {
			b.Fail(s.P, "loops in cell code are unrolled at compile time", "the loop runs more than %d times", maxIterations)
		}
		c := b.boolify(b.Expr(s.Cond), s.Cond.Pos())
		k, _, ok := b.constEval(c)
		if !ok || k.T != ir.Bool {
			b.Fail(s.Cond.Pos(), "loops in cell code are unrolled, so their bounds must be constants", "the loop condition is not known at compile time")
		}
		if !k.B {
			break
		}
		before := len(*b.Diags)
		b.loops++
		func() {
			defer func() { b.loops-- }()
			b.stmt(s.Body)
		}()
		if b.budget < 0 {
			return
		}
		if len(*b.Diags) > before {
			b.Quiet() // reported once, not once per iteration
		}
		st := b.st
		st.cont = false
		if st.brk {
			st.brk = false
			break
		}
		if st.retAll {
			break
		}
		if s.Post != nil {
			b.exprStmt(s.Post)
		}
	}
}

// Expr translates a C expression in the current scope.
func (b *Builder) Expr(e cc.Expr) syntax.Expr {
	switch e := e.(type) {
	case *cc.Name:
		if v := b.sc.lookup(e.Name); v != nil {
			return b.read(v, e.P)
		}
		return b.Hooks.Name(b, e)
	case *cc.Lit:
		n := e.Val
		if n.Unsigned {
			b.Fail(e.P, "drop the u suffix: Tempest's integers are signed", "unsigned constants are not supported")
		}
		if n.IsFloat {
			return &syntax.FloatLit{Pos: e.P, Text: e.Text, Val: n.Float}
		}
		return &syntax.IntLit{Pos: e.P, Text: e.Text, Val: n.Int}
	case *cc.StringLit:
		b.Fail(e.P, "", "strings and characters are not supported")
	case *cc.Unary:
		switch e.Op {
		case "-", "+":
			x := b.numify(b.Expr(e.X), e.P)
			if e.Op == "+" {
				return x
			}
			return &syntax.Unary{Pos: e.P, Op: "-", X: x}
		case "!":
			return &syntax.Unary{Pos: e.P, Op: "!", X: b.boolify(b.Expr(e.X), e.X.Pos())}
		case "*":
			b.Fail(e.P, "index arrays with constant offsets, e.g. A[t%2][i-1][j]", "pointer dereference is not supported")
		case "&":
			b.Fail(e.P, "", "taking an address is not supported")
		case "~":
			b.Fail(e.P, "", "bitwise operator ~ is not supported")
		case "++", "--":
			b.Fail(e.P, "write the increment as its own statement", "%s inside an expression is not supported", e.Op)
		}
	case *cc.Postfix:
		b.Fail(e.P, "write the increment as its own statement", "%s inside an expression is not supported", e.Op)
	case *cc.Binary:
		return b.binary(e)
	case *cc.Assign:
		b.Fail(e.P, "write the assignment as its own statement", "assignment inside an expression is not supported")
	case *cc.Cond:
		c := b.boolify(b.Expr(e.C), e.C.Pos())
		if k, _, ok := b.constEval(c); ok && k.T == ir.Bool {
			if k.B {
				return b.Expr(e.A)
			}
			return b.Expr(e.B)
		}
		return &syntax.Cond{Pos: e.P, C: c, A: b.numify(b.Expr(e.A), e.A.Pos()), B: b.numify(b.Expr(e.B), e.B.Pos())}
	case *cc.Call:
		return b.call(e)
	case *cc.Index:
		return b.Hooks.Index(b, e)
	case *cc.Member:
		return b.Hooks.Member(b, e)
	case *cc.Cast:
		t := b.CType(e.T)
		x := b.numify(b.Expr(e.X), e.P)
		xt := b.TypeOf(x)
		if xt.U == Typed && xt.T == t.T {
			return x
		}
		return conv(t.T, x, e.P)
	case *cc.Comma:
		b.Fail(e.P, "", "the comma operator is not supported")
	case *cc.SizeOf:
		b.Fail(e.P, "", "sizeof is not supported")
	case *cc.InitList:
		b.Fail(e.P, "", "initializer lists are not supported here")
	}
	b.Fail(e.Pos(), "", "unsupported expression")
	return nil
}

func (b *Builder) binary(e *cc.Binary) syntax.Expr {
	switch e.Op {
	case "&", "|", "^", "<<", ">>":
		b.Fail(e.P, "Tempest's IR has no bit operations", "bitwise operator %s is not supported", e.Op)
	case "&&", "||":
		x := b.boolify(b.Expr(e.X), e.X.Pos())
		// C does not evaluate the right side when the left decides; at compile time that
		// matters for conditions over loop counters.
		if k, _, ok := b.constEval(x); ok && k.T == ir.Bool {
			if e.Op == "&&" && !k.B || e.Op == "||" && k.B {
				return x
			}
			return b.boolify(b.Expr(e.Y), e.Y.Pos())
		}
		return &syntax.Binary{Pos: e.P, Op: e.Op, X: x, Y: b.boolify(b.Expr(e.Y), e.Y.Pos())}
	case "==", "!=", "<", "<=", ">", ">=":
		x, y := b.numify(b.Expr(e.X), e.X.Pos()), b.numify(b.Expr(e.Y), e.Y.Pos())
		return &syntax.Binary{Pos: e.P, Op: e.Op, X: x, Y: y}
	}
	return b.arith(e.Op, b.Expr(e.X), b.Expr(e.Y), e.P)
}

func (b *Builder) arith(op string, x, y syntax.Expr, pos diag.Pos) syntax.Expr {
	x, y = b.numify(x, pos), b.numify(y, pos)
	if op == "%" && (b.TypeOf(x).IsFloat() || b.TypeOf(y).IsFloat()) {
		b.Fail(pos, "% takes integers in C", "operator %% on floating-point values")
	}
	return &syntax.Binary{Pos: pos, Op: op, X: x, Y: y}
}

// mathFuncs maps C's math functions (and CUDA's min and max) to the IR's.
var mathFuncs = map[string]string{
	"sqrt": "sqrt", "sqrtf": "sqrt", "exp": "exp", "expf": "exp", "log": "log", "logf": "log",
	"sin": "sin", "sinf": "sin", "cos": "cos", "cosf": "cos", "tan": "tan", "tanf": "tan",
	"tanh": "tanh", "tanhf": "tanh", "fabs": "abs", "fabsf": "abs", "abs": "abs", "labs": "abs",
	"floor": "floor", "floorf": "floor", "ceil": "ceil", "ceilf": "ceil", "pow": "pow", "powf": "pow",
	"fmin": "min", "fminf": "min", "fmax": "max", "fmaxf": "max", "min": "min", "max": "max",
	"fma": "fma", "fmaf": "fma",
}

// MathNames lists the C math functions Tempest translates, for hints.
func MathNames() string {
	return "sqrt, exp, log, sin, cos, tan, tanh, fabs, floor, ceil, pow, fmin, fmax, fma (and their float forms, sqrtf etc.), abs, min and max"
}

func (b *Builder) call(c *cc.Call) syntax.Expr {
	fn, ok := c.Fun.(*cc.Name)
	if !ok {
		b.Fail(c.P, "", "only named functions can be called")
	}
	if b.sc.lookup(fn.Name) != nil {
		b.Fail(c.P, "", "%s is a variable, not a function", fn.Name)
	}
	irName, isMath := mathFuncs[fn.Name]
	if !isMath {
		return b.Hooks.Call(b, c, fn.Name)
	}
	if n := ir.FunArity[irName]; len(c.Args) != n {
		b.Fail(c.P, "", "%s takes %d argument(s), got %d", fn.Name, n, len(c.Args))
	}
	out := &syntax.Call{Pos: c.P, Fun: &syntax.Name{Ident: syntax.Ident{Pos: fn.P, Name: irName}}}
	for _, a := range c.Args {
		out.Args = append(out.Args, b.numify(b.Expr(a), a.Pos()))
	}
	return out
}

// ConstInt evaluates e at compile time as an integer, if it is one.
func (b *Builder) ConstInt(e syntax.Expr) (int64, bool) {
	k, t, ok := b.constEval(e)
	if !ok || t.U != UntypedInt && !(t.U == Typed && t.T.IsInt()) {
		return 0, false
	}
	return k.I, true
}

// constEval evaluates untyped constant expressions exactly as the checker folds them;
// anything else is not constant.
func (b *Builder) constEval(e syntax.Expr) (ir.Value, Typ, bool) {
	return b.constDepth(e, 0)
}

func (b *Builder) constDepth(e syntax.Expr, depth int) (ir.Value, Typ, bool) {
	if depth > 500 {
		return ir.Value{}, Typ{}, false
	}
	d := depth + 1
	switch e := e.(type) {
	case *ref:
		v := e.v
		if v.poison || v.unset != "" {
			return ir.Value{}, Typ{}, false
		}
		if v.konst == nil {
			k, t, ok := b.constDepth(v.e, d)
			v.konst = &constResult{v: k, t: t, ok: ok}
		}
		return v.konst.v, v.konst.t, v.konst.ok
	case *syntax.IntLit:
		return ir.Value{T: ir.I64, I: e.Val}, Typ{T: ir.I64, U: UntypedInt}, true
	case *syntax.FloatLit:
		return ir.Value{T: ir.F64, F: e.Val}, Typ{T: ir.F64, U: UntypedFloat}, true
	case *syntax.Name:
		if e.Name == "true" || e.Name == "false" {
			return ir.Value{T: ir.Bool, B: e.Name == "true"}, Typ{T: ir.Bool}, true
		}
	case *syntax.Unary:
		x, t, ok := b.constDepth(e.X, d)
		if !ok {
			break
		}
		if e.Op == "!" {
			if x.T != ir.Bool {
				break
			}
			return ir.Value{T: ir.Bool, B: !x.B}, Typ{T: ir.Bool}, true
		}
		if x.T == ir.Bool || t.U == Typed {
			break
		}
		return ir.EvalUnary(e.Op, x), t, true
	case *syntax.Binary:
		x, tx, ok1 := b.constDepth(e.X, d)
		if !ok1 {
			break
		}
		if e.Op == "&&" || e.Op == "||" {
			if x.T != ir.Bool {
				break
			}
			if e.Op == "&&" && !x.B || e.Op == "||" && x.B {
				return x, tx, true
			}
			y, ty, ok := b.constDepth(e.Y, d)
			if !ok || y.T != ir.Bool {
				break
			}
			return y, ty, true
		}
		y, ty, ok2 := b.constDepth(e.Y, d)
		if !ok2 || tx.U == Typed || ty.U == Typed {
			break
		}
		if tx.U == UntypedFloat || ty.U == UntypedFloat {
			x, y = ir.ConvertValue(x, ir.F64), ir.ConvertValue(y, ir.F64)
		}
		switch e.Op {
		case "==", "!=", "<", "<=", ">", ">=":
			return ir.EvalBinary(e.Op, x, y), Typ{T: ir.Bool}, true
		case "/", "%":
			if x.T.IsInt() && y.I == 0 {
				return ir.Value{}, Typ{}, false // the checker reports it
			}
		}
		m := b.meet(tx, ty)
		return ir.EvalBinary(e.Op, x, y), m, true
	case *syntax.Cond:
		c, _, ok := b.constDepth(e.C, d)
		if !ok || c.T != ir.Bool {
			break
		}
		if c.B {
			return b.constDepth(e.A, d)
		}
		return b.constDepth(e.B, d)
	}
	return ir.Value{}, Typ{}, false
}

// Finish resolves the values behind roots into .stencil expressions and returns the let
// bindings they need, in dependency order, followed by the resolved roots.
func (b *Builder) Finish(roots ...syntax.Expr) ([]*syntax.LetDecl, []syntax.Expr) {
	for _, r := range roots {
		b.count(r, 0)
	}
	for _, v := range b.values {
		if v.seen && v.uses > 0 && !b.NoLets && !trivial(v.e, 0) && (v.uses >= 2 || v.named) {
			v.let = b.Names.Fresh(v.hint)
		}
	}
	out := make([]syntax.Expr, len(roots))
	for i, r := range roots {
		out[i] = b.resolve(r, 0)
	}
	var lets []*syntax.LetDecl
	for _, v := range b.values {
		if v.let != "" {
			lets = append(lets, &syntax.LetDecl{Pos: v.pos, Name: syntax.Ident{Pos: v.pos, Name: v.let}, Value: b.resolveValue(v)})
		}
	}
	// Types of the new bindings, for callers that keep translating.
	for _, v := range b.values {
		if v.let != "" {
			b.Types[v.let] = b.settle(v.t)
		}
	}
	return lets, out
}

// maxInline bounds the nodes Inline and Resolved may write: a chain of variables that each use
// the previous one twice doubles at every step when written in place.
const maxInline = 200000

// Inline resolves e writing every value in place (for expressions that cannot read bindings).
// ok is false if the expression grows too large written out that way.
func (b *Builder) Inline(e syntax.Expr) (syntax.Expr, bool) {
	saved := b.NoLets
	b.NoLets = true
	defer func() { b.NoLets = saved }()
	b.nodes = 0
	out := b.resolve(e, 0)
	return out, b.nodes <= maxInline
}

// Resolved returns e with references to values followed, without deciding bindings: for a
// frontend that wants to inspect the structure of an expression (e.g. an index formula).
// ok is false if it grows too large.
func (b *Builder) Resolved(e syntax.Expr) (syntax.Expr, bool) {
	b.nodes = 0
	out := b.peel(e, 0)
	return out, b.nodes <= maxInline
}

func (b *Builder) peel(e syntax.Expr, depth int) syntax.Expr {
	b.nodes++
	if depth > 2000 || b.nodes > maxInline {
		return e
	}
	d := depth + 1
	switch x := e.(type) {
	case *ref:
		return b.peel(x.v.e, d)
	case *syntax.Unary:
		return &syntax.Unary{Pos: x.Pos, Op: x.Op, X: b.peel(x.X, d)}
	case *syntax.Binary:
		return &syntax.Binary{Pos: x.Pos, Op: x.Op, X: b.peel(x.X, d), Y: b.peel(x.Y, d)}
	case *syntax.Cond:
		return &syntax.Cond{Pos: x.Pos, C: b.peel(x.C, d), A: b.peel(x.A, d), B: b.peel(x.B, d)}
	case *syntax.Call:
		c := &syntax.Call{Pos: x.Pos, Fun: x.Fun}
		for _, a := range x.Args {
			c.Args = append(c.Args, b.peel(a, d))
		}
		return c
	}
	return e
}

func (b *Builder) count(e syntax.Expr, depth int) {
	if depth > 100000 {
		return
	}
	d := depth + 1
	switch x := e.(type) {
	case *ref:
		x.v.uses++
		if !x.v.seen {
			x.v.seen = true
			b.count(x.v.e, d)
		}
	case *syntax.Unary:
		b.count(x.X, d)
	case *syntax.Binary:
		b.count(x.X, d)
		b.count(x.Y, d)
	case *syntax.Cond:
		b.count(x.C, d)
		b.count(x.A, d)
		b.count(x.B, d)
	case *syntax.Call:
		b.count(x.Fun, d)
		for _, a := range x.Args {
			b.count(a, d)
		}
	case *syntax.Index:
		b.count(x.X, d)
		for _, a := range x.Indices {
			b.count(a, d)
		}
	case *syntax.Selector:
		b.count(x.X, d)
	}
}

func (b *Builder) resolveValue(v *value) syntax.Expr {
	if v.done == nil {
		v.done = b.resolve(v.e, 0)
	}
	return v.done
}

func (b *Builder) resolve(e syntax.Expr, depth int) syntax.Expr {
	d := depth + 1
	if b.NoLets {
		b.nodes++
		if b.nodes > maxInline {
			return e
		}
	}
	switch x := e.(type) {
	case *ref:
		if x.v.let != "" && !b.NoLets {
			return &syntax.Name{Ident: syntax.Ident{Pos: x.p, Name: x.v.let}}
		}
		if b.NoLets {
			return b.resolve(x.v.e, d)
		}
		return b.resolveValue(x.v)
	case *syntax.Unary:
		return &syntax.Unary{Pos: x.Pos, Op: x.Op, X: b.resolve(x.X, d)}
	case *syntax.Binary:
		return &syntax.Binary{Pos: x.Pos, Op: x.Op, X: b.resolve(x.X, d), Y: b.resolve(x.Y, d)}
	case *syntax.Cond:
		return &syntax.Cond{Pos: x.Pos, C: b.resolve(x.C, d), A: b.resolve(x.A, d), B: b.resolve(x.B, d)}
	case *syntax.Call:
		c := &syntax.Call{Pos: x.Pos, Fun: b.resolve(x.Fun, d)}
		for _, a := range x.Args {
			c.Args = append(c.Args, b.resolve(a, d))
		}
		return c
	case *syntax.Index:
		ix := &syntax.Index{Pos: x.Pos, X: b.resolve(x.X, d)}
		for _, a := range x.Indices {
			ix.Indices = append(ix.Indices, b.resolve(a, d))
		}
		return ix
	case *syntax.Selector:
		return &syntax.Selector{Pos: x.Pos, X: b.resolve(x.X, d), Sel: x.Sel}
	}
	return e
}

// trivial reports whether e costs nothing to repeat: a literal, a name, a grid read at fixed
// offsets, a size, or a conversion of a literal.
func trivial(e syntax.Expr, depth int) bool {
	if depth > 20 {
		return false
	}
	d := depth + 1
	switch x := e.(type) {
	case *syntax.IntLit, *syntax.FloatLit, *syntax.Name:
		return true
	case *ref:
		return trivial(x.v.e, d)
	case *syntax.Unary:
		return x.Op != "!" && isLiteral(x.X)
	case *syntax.Index:
		return trivial(x.X, d) // indices are axis ± constant
	case *syntax.Selector:
		return trivial(x.X, d)
	case *syntax.Call:
		fn, _ := x.Fun.(*syntax.Name)
		if fn == nil {
			return false
		}
		switch fn.Name {
		case "size":
			return true
		case "f32", "f64", "i32", "i64":
			return len(x.Args) == 1 && isLiteral(x.Args[0])
		}
		// A layered grid read: trivial when its layer is.
		if ir.FunArity[fn.Name] == 0 && fn.Name != "select" && len(x.Args) == 1 {
			return isLiteral(x.Args[0]) || isName(x.Args[0])
		}
	}
	return false
}

func isLiteral(e syntax.Expr) bool {
	switch x := e.(type) {
	case *syntax.IntLit, *syntax.FloatLit:
		return true
	case *syntax.Unary:
		return x.Op == "-" && isLiteral(x.X)
	}
	return false
}

func isName(e syntax.Expr) bool {
	_, ok := e.(*syntax.Name)
	return ok
}

// FloatLit makes a float literal node (for frontends building constants).
func FloatLit(pos diag.Pos, f float64) syntax.Expr {
	if f < 0 || f == 0 && math.Signbit(f) {
		return &syntax.Unary{Pos: pos, Op: "-", X: FloatLit(pos, -f)}
	}
	return &syntax.FloatLit{Pos: pos, Text: strconv.FormatFloat(f, 'g', -1, 64), Val: f}
}

// IntLit makes an integer literal node.
func IntLit(pos diag.Pos, i int64) syntax.Expr {
	if i < 0 {
		return &syntax.Unary{Pos: pos, Op: "-", X: &syntax.IntLit{Pos: pos, Text: strconv.FormatInt(-i, 10), Val: -i}}
	}
	return &syntax.IntLit{Pos: pos, Text: strconv.FormatInt(i, 10), Val: i}
}

// Name makes a name node.
func Name(pos diag.Pos, name string) *syntax.Name {
	return &syntax.Name{Ident: syntax.Ident{Pos: pos, Name: name}}
}
