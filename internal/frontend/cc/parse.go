package cc

import (
	"fmt"

	"tempest/internal/diag"
)

// maxDepth bounds nesting of expressions and statements so that hostile input cannot exhaust
// the stack.
const maxDepth = 200

// Parser reads statements from a token slice. Parse errors are recorded in Diags; a parse stops
// at its first error, since C's grammar gives little to resynchronise on.
type Parser struct {
	Src   *diag.Source
	Diags *diag.List
	// IsType reports whether an identifier names a type (besides C's own type words), e.g. a
	// macro such as SB_TYPE. Nil means none does.
	IsType func(name string) bool

	toks  []Token
	i     int
	depth int
}

// bail unwinds the parser after an error.
type bail struct{}

// NewParser returns a parser over toks, which must end with an EOF token.
func NewParser(src *diag.Source, toks []Token, diags *diag.List) *Parser {
	if len(toks) == 0 || toks[len(toks)-1].Kind != EOF {
		toks = append(toks, Token{Kind: EOF})
	}
	return &Parser{Src: src, Diags: diags, toks: toks}
}

// ParseStmts parses statements up to the end of the tokens. ok is false after a syntax error.
func (p *Parser) ParseStmts() (list []Stmt, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			if _, is := r.(bail); !is {
				panic(r)
			}
			ok = false
		}
	}()
	for p.tok().Kind != EOF {
		list = append(list, p.stmt())
	}
	return list, true
}

// ParseExpr parses one expression that must use all the tokens.
func (p *Parser) ParseExpr() (e Expr, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			if _, is := r.(bail); !is {
				panic(r)
			}
			ok = false
		}
	}()
	e = p.expr()
	if p.tok().Kind != EOF {
		p.errorf(p.tok().Pos, "", "unexpected %s after the expression", p.tok())
	}
	return e, true
}

func (p *Parser) tok() Token { return p.toks[p.i] }

func (p *Parser) peek(n int) Token {
	if p.i+n < len(p.toks) {
		return p.toks[p.i+n]
	}
	return p.toks[len(p.toks)-1]
}

func (p *Parser) next() Token {
	t := p.toks[p.i]
	if p.i < len(p.toks)-1 {
		p.i++
	}
	return t
}

func (p *Parser) errorf(pos diag.Pos, hint, format string, args ...any) {
	p.Diags.Add(p.Src, pos, hint, format, args...)
	panic(bail{})
}

func (p *Parser) is(s string) bool { return p.tok().Kind == Punct && p.tok().Text == s }

func (p *Parser) isWord(s string) bool { return p.tok().Kind == Ident && p.tok().Text == s }

func (p *Parser) expect(s, hint string) diag.Pos {
	t := p.tok()
	if !p.is(s) {
		if t.Kind == EOF {
			p.errorf(t.Pos, hint, "expected %q, found the end of the code", s)
		}
		p.errorf(t.Pos, hint, "expected %q, found %s", s, t)
	}
	p.next()
	return t.Pos
}

func (p *Parser) enter(pos diag.Pos) {
	p.depth++
	if p.depth > maxDepth {
		p.errorf(pos, "simplify the code", "code nested too deeply")
	}
}

func (p *Parser) leave() { p.depth-- }

// typeWords are C's own type specifiers and qualifiers.
var typeWords = map[string]bool{
	"void": true, "char": true, "short": true, "int": true, "long": true, "float": true, "double": true,
	"signed": true, "unsigned": true, "_Bool": true, "bool": true,
	"int8_t": true, "int16_t": true, "int32_t": true, "int64_t": true,
	"uint8_t": true, "uint16_t": true, "uint32_t": true, "uint64_t": true, "size_t": true,
}

var qualifiers = map[string]bool{"const": true, "volatile": true, "static": true, "register": true,
	"restrict": true, "__restrict__": true, "extern": true, "inline": true, "auto": true}

// startsType reports whether the current token begins a type name.
func (p *Parser) startsType(t Token) bool {
	if t.Kind != Ident {
		return false
	}
	return typeWords[t.Text] || qualifiers[t.Text] || p.IsType != nil && p.IsType(t.Text)
}

// typeName reads type specifiers and qualifiers (not pointer stars).
func (p *Parser) typeName() *Type {
	t := &Type{P: p.tok().Pos}
	for p.startsType(p.tok()) {
		w := p.next().Text
		if !qualifiers[w] {
			t.Words = append(t.Words, w)
		}
	}
	if len(t.Words) == 0 {
		p.errorf(t.P, "", "expected a type, found %s", p.tok())
	}
	return t
}

func (p *Parser) stmt() Stmt {
	t := p.tok()
	p.enter(t.Pos)
	defer p.leave()
	switch t.Kind {
	case Directive:
		p.next()
		return &Pragma{P: t.Pos, Text: t.Text}
	case Punct:
		switch t.Text {
		case "{":
			return p.block()
		case ";":
			p.next()
			return &Empty{P: t.Pos}
		}
	case Ident:
		switch t.Text {
		case "if":
			p.next()
			p.expect("(", "write if (condition)")
			c := p.expr()
			p.expect(")", "close the condition")
			s := &If{P: t.Pos, Cond: c, Then: p.stmt()}
			if p.isWord("else") {
				p.next()
				s.Else = p.stmt()
			}
			return s
		case "for":
			return p.forStmt()
		case "while":
			p.next()
			p.expect("(", "write while (condition)")
			c := p.expr()
			p.expect(")", "close the condition")
			return &While{P: t.Pos, Cond: c, Body: p.stmt()}
		case "do":
			p.next()
			body := p.stmt()
			if !p.isWord("while") {
				p.errorf(p.tok().Pos, "write do { ... } while (condition);", "expected while, found %s", p.tok())
			}
			p.next()
			p.expect("(", "write while (condition)")
			c := p.expr()
			p.expect(")", "close the condition")
			p.expect(";", "end the statement with ;")
			return &While{P: t.Pos, Cond: c, Body: body, Do: true}
		case "return":
			p.next()
			s := &Return{P: t.Pos}
			if !p.is(";") {
				s.X = p.expr()
			}
			p.expect(";", "end the statement with ;")
			return s
		case "break", "continue":
			p.next()
			p.expect(";", "end the statement with ;")
			return &Jump{P: t.Pos, Kind: t.Text}
		case "goto":
			p.next()
			for !p.is(";") && p.tok().Kind != EOF {
				p.next()
			}
			p.expect(";", "end the statement with ;")
			return &Jump{P: t.Pos, Kind: "goto"}
		case "switch":
			p.next()
			p.expect("(", "write switch (value)")
			p.expr()
			p.expect(")", "close the value")
			p.stmt()
			return &Unsupported{P: t.Pos, What: "switch statement"}
		case "case", "default":
			for !p.is(":") && p.tok().Kind != EOF {
				p.next()
			}
			p.expect(":", "")
			return &Unsupported{P: t.Pos, What: "case label"}
		case "typedef", "struct", "union", "enum":
			p.errorf(t.Pos, "", "%s is not supported here", t.Text)
		}
		if p.startsType(t) || p.peek(1).Kind == Ident && !isKeyword(t.Text) && !isKeyword(p.peek(1).Text) {
			// `T x` with T an unknown name can only be a declaration.
			return p.decl()
		}
		if p.peek(1).Kind == Punct && p.peek(1).Text == ":" && !isKeyword(t.Text) {
			p.next()
			p.next()
			return &Unsupported{P: t.Pos, What: "label"}
		}
	}
	x := p.expr()
	p.expect(";", "end the statement with ;")
	return &ExprStmt{P: t.Pos, X: x}
}

func isKeyword(s string) bool {
	switch s {
	case "if", "else", "for", "while", "do", "return", "break", "continue", "goto", "switch", "case",
		"default", "sizeof", "typedef", "struct", "union", "enum":
		return true
	}
	return typeWords[s] || qualifiers[s]
}

func (p *Parser) block() *Block {
	b := &Block{P: p.expect("{", "")}
	for !p.is("}") {
		if p.tok().Kind == EOF {
			p.errorf(p.tok().Pos, fmt.Sprintf("close the block opened at line %d with }", b.P.Line), "unexpected end of the code in a block")
		}
		b.List = append(b.List, p.stmt())
	}
	b.End = p.tok().Pos
	p.next()
	return b
}

func (p *Parser) forStmt() *For {
	s := &For{P: p.next().Pos}
	p.expect("(", "write for (init; condition; step)")
	switch {
	case p.is(";"):
		p.next()
	case p.startsType(p.tok()) || p.tok().Kind == Ident && p.peek(1).Kind == Ident && !isKeyword(p.tok().Text):
		s.Init = p.decl()
	default:
		t := p.tok()
		x := p.expr()
		p.expect(";", "separate the parts of the for header with ;")
		s.Init = &ExprStmt{P: t.Pos, X: x}
	}
	if !p.is(";") {
		s.Cond = p.expr()
	}
	p.expect(";", "separate the parts of the for header with ;")
	if !p.is(")") {
		s.Post = p.expr()
	}
	p.expect(")", "close the for header")
	s.Body = p.stmt()
	return s
}

// decl parses a declaration statement, including its semicolon.
func (p *Parser) decl() *Decl {
	d := &Decl{P: p.tok().Pos}
	if p.startsType(p.tok()) {
		d.Type = p.typeName()
	} else {
		// An unknown name used as a type (e.g. SB_TYPE when its definition is elsewhere).
		t := p.next()
		d.Type = &Type{P: t.Pos, Words: []string{t.Text}}
		for p.startsType(p.tok()) && qualifiers[p.tok().Text] {
			p.next()
		}
	}
	for {
		v := &Declarator{}
		for p.is("*") {
			p.next()
			v.Ptr++
			for p.tok().Kind == Ident && qualifiers[p.tok().Text] {
				p.next()
			}
		}
		if p.is("(") {
			p.next()
			v.Paren = true
			for p.is("*") {
				p.next()
				v.Ptr++
			}
			v.Name = p.name("a variable name")
			p.expect(")", "")
		} else {
			v.Name = p.name("a variable name")
		}
		for p.is("[") {
			p.next()
			if p.is("]") {
				v.Dims = append(v.Dims, nil)
			} else {
				v.Dims = append(v.Dims, p.expr())
			}
			p.expect("]", "close the array extent")
		}
		if p.is("(") {
			p.errorf(p.tok().Pos, "", "function declarations are not supported here")
		}
		if p.is("=") {
			p.next()
			if p.is("{") {
				v.Init = p.initList()
			} else {
				v.Init = p.assign()
			}
		}
		d.Vars = append(d.Vars, v)
		if !p.is(",") {
			break
		}
		p.next()
	}
	p.expect(";", "end the declaration with ;")
	return d
}

func (p *Parser) initList() *InitList {
	l := &InitList{P: p.expect("{", "")}
	p.enter(l.P)
	defer p.leave()
	for !p.is("}") {
		if p.is("{") {
			l.Elems = append(l.Elems, p.initList())
		} else {
			l.Elems = append(l.Elems, p.assign())
		}
		if !p.is(",") {
			break
		}
		p.next()
	}
	p.expect("}", "close the initializer list")
	return l
}

func (p *Parser) name(what string) Name {
	t := p.tok()
	if t.Kind != Ident || isKeyword(t.Text) {
		p.errorf(t.Pos, "", "expected %s, found %s", what, t)
	}
	p.next()
	return Name{P: t.Pos, Name: t.Text}
}

// Expressions, lowest precedence first.

func (p *Parser) expr() Expr {
	x := p.assign()
	for p.is(",") {
		pos := p.next().Pos
		x = &Comma{P: pos, X: x, Y: p.assign()}
	}
	return x
}

var assignOps = map[string]bool{"=": true, "+=": true, "-=": true, "*=": true, "/=": true, "%=": true,
	"&=": true, "|=": true, "^=": true, "<<=": true, ">>=": true}

func (p *Parser) assign() Expr {
	p.enter(p.tok().Pos)
	defer p.leave()
	x := p.cond()
	if p.tok().Kind == Punct && assignOps[p.tok().Text] {
		t := p.next()
		return &Assign{P: t.Pos, Op: t.Text, L: x, R: p.assign()}
	}
	return x
}

func (p *Parser) cond() Expr {
	c := p.binary(0)
	if p.is("?") {
		pos := p.next().Pos
		a := p.expr()
		p.expect(":", "a conditional is c ? a : b")
		b := p.cond()
		return &Cond{P: pos, C: c, A: a, B: b}
	}
	return c
}

var precedence = map[string]int{
	"||": 1, "&&": 2, "|": 3, "^": 4, "&": 5,
	"==": 6, "!=": 6, "<": 7, ">": 7, "<=": 7, ">=": 7,
	"<<": 8, ">>": 8, "+": 9, "-": 9, "*": 10, "/": 10, "%": 10,
}

func (p *Parser) binary(minPrec int) Expr {
	x := p.unary()
	for {
		t := p.tok()
		prec, ok := precedence[t.Text]
		if t.Kind != Punct || !ok || prec <= minPrec {
			return x
		}
		p.next()
		y := p.binary(prec)
		x = &Binary{P: t.Pos, Op: t.Text, X: x, Y: y}
	}
}

func (p *Parser) unary() Expr {
	t := p.tok()
	p.enter(t.Pos)
	defer p.leave()
	if t.Kind == Punct {
		switch t.Text {
		case "-", "+", "!", "~", "*", "&", "++", "--":
			p.next()
			return &Unary{P: t.Pos, Op: t.Text, X: p.unary()}
		case "(":
			if p.startsType(p.peek(1)) {
				p.next()
				ty := p.typeName()
				for p.is("*") {
					p.next()
					ty.Ptr++
				}
				p.expect(")", "close the cast")
				return &Cast{P: t.Pos, T: ty, X: p.unary()}
			}
		}
	}
	if t.Kind == Ident && t.Text == "sizeof" {
		p.next()
		if p.is("(") {
			depth := 0
			for p.tok().Kind != EOF {
				if p.is("(") {
					depth++
				} else if p.is(")") {
					depth--
					if depth == 0 {
						p.next()
						break
					}
				}
				p.next()
			}
		} else {
			p.unary()
		}
		return &SizeOf{P: t.Pos}
	}
	return p.postfix(p.primary())
}

func (p *Parser) postfix(x Expr) Expr {
	for {
		t := p.tok()
		if t.Kind != Punct {
			return x
		}
		switch t.Text {
		case "[":
			p.next()
			i := p.expr()
			p.expect("]", "close the index")
			x = &Index{P: t.Pos, X: x, I: i}
		case "(":
			p.next()
			c := &Call{P: x.Pos(), Fun: x}
			if !p.is(")") {
				for {
					c.Args = append(c.Args, p.assign())
					if !p.is(",") {
						break
					}
					p.next()
				}
			}
			p.expect(")", "close the argument list")
			x = c
		case ".", "->":
			p.next()
			x = &Member{P: t.Pos, X: x, Name: p.name("a field name"), Arrow: t.Text == "->"}
		case "++", "--":
			p.next()
			x = &Postfix{P: t.Pos, Op: t.Text, X: x}
		default:
			return x
		}
	}
}

func (p *Parser) primary() Expr {
	t := p.tok()
	switch t.Kind {
	case Ident:
		if isKeyword(t.Text) {
			p.errorf(t.Pos, "", "unexpected %q in an expression", t.Text)
		}
		p.next()
		return &Name{P: t.Pos, Name: t.Text}
	case Int, Float:
		p.next()
		n, err := ParseNumber(t.Text, t.Kind == Float)
		if err != nil {
			p.errorf(t.Pos, "", "%v", err)
		}
		return &Lit{P: t.Pos, Text: t.Text, Val: n}
	case String:
		p.next()
		return &StringLit{P: t.Pos, Text: t.Text}
	case Punct:
		if t.Text == "(" {
			p.next()
			x := p.expr()
			p.expect(")", "parentheses must balance")
			return x
		}
	case EOF:
		p.errorf(t.Pos, "the code is incomplete", "unexpected end of the code")
	case Directive:
		p.errorf(t.Pos, "", "unexpected preprocessor line in an expression")
	}
	p.errorf(t.Pos, "", "expected an expression, found %s", t)
	return nil
}
