package syntax

import (
	"tempest/internal/diag"
)

// maxDepth bounds expression nesting so that hostile input cannot exhaust the stack.
const maxDepth = 200

// Parse reads one .stencil program. It returns the tree it could build and, if anything was
// wrong, a diag.List with every syntax error found.
func Parse(src *diag.Source) (*File, error) {
	var diags diag.List
	p := &parser{src: src, lex: newLexer(src, &diags), diags: &diags}
	p.next()
	f := &File{Src: src}
	for p.tok.kind != tEOF {
		before := len(diags)
		d := p.decl()
		if d != nil {
			f.Decls = append(f.Decls, d)
		}
		if len(diags) > before {
			p.sync()
		}
		if len(diags) > 50 {
			break
		}
	}
	return f, diags.Err()
}

type parser struct {
	src   *diag.Source
	lex   *lexer
	diags *diag.List
	tok   token
	depth int
}

// bail is panicked to unwind out of a declaration after an error; decl recovers it.
type bail struct{}

func (p *parser) next() { p.tok = p.lex.next() }

func (p *parser) errorf(pos diag.Pos, hint, format string, args ...any) {
	p.diags.Add(p.src, pos, hint, format, args...)
	panic(bail{})
}

func (p *parser) is(op string) bool { return p.tok.kind == tOp && p.tok.text == op }

func (p *parser) isKw(kw string) bool { return p.tok.kind == tIdent && p.tok.text == kw }

func (p *parser) expect(op, hint string) diag.Pos {
	pos := p.tok.pos
	if !p.is(op) {
		p.errorf(pos, hint, "expected %q, found %s", op, p.tok)
	}
	p.next()
	return pos
}

func (p *parser) ident(what string) Ident {
	if p.tok.kind != tIdent {
		p.errorf(p.tok.pos, "", "expected %s, found %s", what, p.tok)
	}
	if keywords[p.tok.text] {
		p.errorf(p.tok.pos, "keywords cannot be used as names", "expected %s, found keyword %q", what, p.tok.text)
	}
	id := Ident{Pos: p.tok.pos, Name: p.tok.text}
	p.next()
	return id
}

// sync skips to the start of the next declaration after an error.
func (p *parser) sync() {
	for p.tok.kind != tEOF {
		if p.tok.kind == tIdent && declStart[p.tok.text] && p.tok.pos.Col == 1 {
			return
		}
		p.next()
	}
}

var declStart = map[string]bool{
	"stencil": true, "axes": true, "type": true, "param": true, "state": true, "input": true,
	"let": true, "update": true, "observe": true, "until": true,
}

func (p *parser) decl() (d Decl) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(bail); !ok {
				panic(r)
			}
			d = nil
		}
	}()
	pos := p.tok.pos
	if p.tok.kind != tIdent || !declStart[p.tok.text] {
		p.errorf(pos, "a program is a list of declarations: stencil, axes, type, param, state, input, let, update, observe, until",
			"expected a declaration, found %s", p.tok)
	}
	kw := p.tok.text
	p.next()
	switch kw {
	case "stencil":
		d = &StencilDecl{Pos: pos, Name: p.ident("the stencil's name")}
	case "axes":
		ad := &AxesDecl{Pos: pos}
		ad.Names = append(ad.Names, p.ident("an axis name"))
		for p.is(",") {
			p.next()
			ad.Names = append(ad.Names, p.ident("an axis name"))
		}
		d = ad
	case "type":
		d = &TypeDecl{Pos: pos, Type: p.ident("an element type (f32, f64, i32, i64)")}
	case "param":
		pd := &ParamDecl{Pos: pos, Name: p.ident("a parameter name")}
		pd.Type = p.optType()
		p.expect("=", "a parameter needs a default value: param alpha = 0.1")
		pd.Default = p.expr()
		d = pd
	case "state", "input":
		d = p.gridDecl(pos, kw == "input")
	case "let":
		ld := &LetDecl{Pos: pos, Name: p.ident("a binding name")}
		p.expect("=", "write let name = expression")
		ld.Value = p.expr()
		d = ld
	case "update":
		ud := &UpdateDecl{Pos: pos, Name: p.ident("the state grid to update")}
		p.expect("=", "write update grid = expression")
		ud.Value = p.expr()
		d = ud
	case "observe":
		d = p.observeDecl(pos)
	case "until":
		d = &UntilDecl{Pos: pos, Cond: p.expr()}
	}
	if p.is(";") {
		p.next()
	}
	return d
}

// reductions are the operations an observable applies over the cells.
var reductions = map[string]bool{"sum": true, "max": true, "min": true, "mean": true}

// observeDecl parses `observe NAME = OP(EXPR)`: exactly one reduction, at the top, so that
// what an observable means never depends on how the cells are split among threads.
func (p *parser) observeDecl(pos diag.Pos) *ObserveDecl {
	const hint = "an observable is one reduction over the cells: observe NAME = sum|max|min|mean(EXPR)"
	od := &ObserveDecl{Pos: pos, Name: p.ident("the observable's name")}
	p.expect("=", "write observe NAME = sum(EXPR)")
	if p.tok.kind != tIdent || !reductions[p.tok.text] {
		p.errorf(p.tok.pos, hint, "expected a reduction (sum, max, min or mean), found %s", p.tok)
	}
	od.Op = Ident{Pos: p.tok.pos, Name: p.tok.text}
	p.next()
	p.expect("(", hint)
	od.Value = p.expr()
	p.expect(")", "the reduction's argument is one per-cell expression; unrolled sums go inside it: sum(sum(i in -1..1) u[x+i])")
	if p.tok.kind == tOp && p.tok.text != ";" {
		p.errorf(p.tok.pos, "combine observables in `until`, or declare another observable", "an observable is one reduction; nothing may follow it")
	}
	return od
}

func (p *parser) optType() *Ident {
	if !p.is(":") {
		return nil
	}
	p.next()
	t := p.ident("an element type (f32, f64, i32, i64)")
	return &t
}

func (p *parser) gridDecl(pos diag.Pos, input bool) *GridDecl {
	g := &GridDecl{Pos: pos, Input: input, Name: p.ident("a grid name")}
	g.Type = p.optType()
	for p.tok.kind == tIdent {
		kwPos := p.tok.pos
		switch p.tok.text {
		case "init":
			p.next()
			if g.Init != nil {
				p.errorf(kwPos, "give one init clause per grid", "grid %s has two init clauses", g.Name.Name)
			}
			g.Init = p.expr()
		case "prev":
			p.next()
			if g.Prev != nil {
				p.errorf(kwPos, "give one prev clause per grid", "grid %s has two prev clauses", g.Name.Name)
			}
			g.Prev = p.expr()
		case "levels":
			p.next()
			if g.Levels != nil {
				p.errorf(kwPos, "give one levels clause per grid", "grid %s has two levels clauses", g.Name.Name)
			}
			if p.tok.kind != tInt {
				p.errorf(p.tok.pos, "write levels 2 for a grid that keeps its previous step", "expected the number of time levels, found %s", p.tok)
			}
			v, _ := parseIntText(p.tok.text)
			g.Levels = &IntLit{Pos: p.tok.pos, Text: p.tok.text, Val: v}
			p.next()
		case "layers":
			p.next()
			if g.Layers != nil {
				p.errorf(kwPos, "give one layers clause per grid", "grid %s has two layers clauses", g.Name.Name)
			}
			g.Layers = p.expr()
		case "boundary":
			p.next()
			g.BPos = kwPos
			g.Boundary = append(g.Boundary, p.bcList()...)
		default:
			return g
		}
	}
	return g
}

// bcList parses `periodic`, `constant(0)` or `x: periodic, y: clamp`.
func (p *parser) bcList() []BCSpec {
	first := p.bcSpec()
	if first.Axis == nil {
		return []BCSpec{first}
	}
	list := []BCSpec{first}
	for p.is(",") {
		p.next()
		list = append(list, p.bcSpec())
	}
	return list
}

func (p *parser) bcSpec() BCSpec {
	pos := p.tok.pos
	name := p.ident("a boundary condition (constant(v), clamp, periodic, mirror, fixed, edge(expr))")
	var axis *Ident
	if p.is(":") {
		p.next()
		a := name
		axis = &a
		name = p.ident("a boundary condition (constant(v), clamp, periodic, mirror, fixed, edge(expr))")
	}
	bc := BCSpec{Pos: pos, Axis: axis, Kind: name}
	if p.is("(") {
		p.next()
		bc.Arg = p.expr()
		p.expect(")", "close the boundary condition's argument")
	}
	return bc
}

// Expressions, lowest precedence first.

func (p *parser) expr() Expr {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxDepth {
		p.errorf(p.tok.pos, "split the expression with let bindings", "expression nested too deeply")
	}
	c := p.binary(0)
	if p.is("?") {
		pos := p.tok.pos
		p.next()
		a := p.expr()
		p.expect(":", "a conditional is cond ? a : b")
		b := p.expr()
		return &Cond{Pos: pos, C: c, A: a, B: b}
	}
	return c
}

var precedence = map[string]int{
	"||": 1, "&&": 2,
	"==": 3, "!=": 3, "<": 3, "<=": 3, ">": 3, ">=": 3,
	"+": 4, "-": 4,
	"*": 5, "/": 5, "%": 5,
}

func (p *parser) binary(minPrec int) Expr {
	x := p.unary()
	for {
		if p.tok.kind != tOp {
			return x
		}
		prec, ok := precedence[p.tok.text]
		if !ok {
			if p.is("^") {
				p.errorf(p.tok.pos, "use pow(a, b) or multiply: a*a", "there is no ^ operator")
			}
			if p.is("&") || p.is("|") {
				p.errorf(p.tok.pos, "logical operators are && and ||", "there is no %s operator", p.tok.text)
			}
			if p.is("=") {
				p.errorf(p.tok.pos, "comparison is ==", "unexpected = in an expression")
			}
			return x
		}
		if prec <= minPrec {
			return x
		}
		op, pos := p.tok.text, p.tok.pos
		p.next()
		y := p.binary(prec)
		x = &Binary{Pos: pos, Op: op, X: x, Y: y}
	}
}

func (p *parser) unary() Expr {
	if p.is("-") || p.is("+") || p.is("!") {
		op, pos := p.tok.text, p.tok.pos
		p.next()
		p.depth++
		defer func() { p.depth-- }()
		if p.depth > maxDepth {
			p.errorf(pos, "simplify the expression", "expression nested too deeply")
		}
		return &Unary{Pos: pos, Op: op, X: p.unary()}
	}
	return p.postfix(p.primary())
}

func (p *parser) postfix(x Expr) Expr {
	for {
		switch {
		case p.is("("):
			pos := p.tok.pos
			p.next()
			x = &Call{Pos: pos, Fun: x, Args: p.args(")")}
		case p.is("["):
			pos := p.tok.pos
			p.next()
			x = &Index{Pos: pos, X: x, Indices: p.args("]")}
		case p.is("."):
			pos := p.tok.pos
			p.next()
			if p.tok.kind != tIdent {
				p.errorf(p.tok.pos, "the only selector is .prev, the previous time level", "expected a name after '.', found %s", p.tok)
			}
			x = &Selector{Pos: pos, X: x, Sel: Ident{Pos: p.tok.pos, Name: p.tok.text}}
			p.next()
		default:
			return x
		}
	}
}

func (p *parser) args(closer string) []Expr {
	var list []Expr
	if p.is(closer) {
		p.next()
		return list
	}
	for {
		list = append(list, p.expr())
		if p.is(",") {
			p.next()
			continue
		}
		p.expect(closer, "separate arguments with commas")
		return list
	}
}

func (p *parser) primary() Expr {
	t := p.tok
	switch t.kind {
	case tInt:
		p.next()
		v, err := parseIntText(t.text)
		if err != nil {
			p.errorf(t.pos, "integers are 64-bit", "integer literal %s out of range", t.text)
		}
		return &IntLit{Pos: t.pos, Text: t.text, Val: v}
	case tFloat:
		p.next()
		v, err := parseFloatText(t.text)
		if err != nil {
			p.errorf(t.pos, "", "float literal %s out of range", t.text)
		}
		return &FloatLit{Pos: t.pos, Text: t.text, Val: v}
	case tIdent:
		if t.text == "sum" {
			return p.sum()
		}
		if t.text == "prev" {
			// `prev` is a clause keyword but also reads well as a selector; as a primary it is an error.
			p.errorf(t.pos, "the previous level of grid u is u.prev", "unexpected keyword prev")
		}
		if keywords[t.text] {
			p.errorf(t.pos, "a declaration starts at the beginning of a line; is something missing before it?", "unexpected keyword %q in an expression", t.text)
		}
		p.next()
		return &Name{Ident{Pos: t.pos, Name: t.text}}
	case tOp:
		if t.text == "(" {
			p.next()
			x := p.expr()
			p.expect(")", "parentheses must balance")
			return x
		}
	}
	if t.kind == tEOF {
		p.errorf(t.pos, "the expression is incomplete", "unexpected end of file")
	}
	p.errorf(t.pos, "", "expected an expression, found %s", t)
	return nil
}

// sum parses sum(i in lo..hi, j in lo..hi) body.
func (p *parser) sum() Expr {
	pos := p.tok.pos
	p.next()
	p.expect("(", "write sum(i in -1..1) expression")
	s := &Sum{Pos: pos}
	for {
		v := SumVar{Name: p.ident("an index name")}
		if !p.isKw("in") {
			p.errorf(p.tok.pos, "write sum(i in -1..1) expression", "expected 'in', found %s", p.tok)
		}
		p.next()
		v.Lo = p.binary(0)
		p.expect("..", "a range is lo..hi, both ends included")
		v.Hi = p.binary(0)
		s.Vars = append(s.Vars, v)
		if p.is(",") {
			p.next()
			continue
		}
		p.expect(")", "close the list of indices")
		break
	}
	s.Body = p.unaryOrParen()
	return s
}

// unaryOrParen parses the body of a sum: everything up to the precedence of + so that
// `sum(i in -1..1) c*u[x+i] + 1` sums only the product.
func (p *parser) unaryOrParen() Expr { return p.binary(precedence["+"]) }
