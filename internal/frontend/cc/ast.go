package cc

import (
	"strings"

	"tempest/internal/diag"
)

// Node is any syntax tree node; Pos is where it starts (for operators: the operator).
type Node interface{ Pos() diag.Pos }

// Expr is an expression node.
type Expr interface {
	Node
	exprNode()
}

// Stmt is a statement node.
type Stmt interface {
	Node
	stmtNode()
}

type (
	// Name is an identifier.
	Name struct {
		P    diag.Pos
		Name string
	}
	// Lit is a numeric constant.
	Lit struct {
		P    diag.Pos
		Text string
		Val  Number
	}
	// StringLit is a string or character constant (never supported, kept to report it).
	StringLit struct {
		P    diag.Pos
		Text string
	}
	// Unary is a prefix operator: - + ! ~ * & ++ --.
	Unary struct {
		P  diag.Pos
		Op string
		X  Expr
	}
	// Postfix is x++ or x--.
	Postfix struct {
		P  diag.Pos // the operator
		Op string
		X  Expr
	}
	// Binary is x op y.
	Binary struct {
		P    diag.Pos // the operator
		Op   string
		X, Y Expr
	}
	// Assign is l = r or a compound assignment such as l += r.
	Assign struct {
		P    diag.Pos // the operator
		Op   string
		L, R Expr
	}
	// Cond is c ? a : b.
	Cond struct {
		P       diag.Pos // the ?
		C, A, B Expr
	}
	// Call is f(args).
	Call struct {
		P    diag.Pos // the function's position
		Fun  Expr
		Args []Expr
	}
	// Index is x[i].
	Index struct {
		P diag.Pos // the [
		X Expr
		I Expr
	}
	// Member is x.name or x->name.
	Member struct {
		P     diag.Pos // the . or ->
		X     Expr
		Name  Name
		Arrow bool
	}
	// Cast is (type) x.
	Cast struct {
		P diag.Pos
		T *Type
		X Expr
	}
	// Comma is x, y.
	Comma struct {
		P    diag.Pos
		X, Y Expr
	}
	// SizeOf is sizeof(...) (never supported, kept to report it).
	SizeOf struct{ P diag.Pos }
	// InitList is { a, b, c } in a declaration.
	InitList struct {
		P     diag.Pos
		Elems []Expr
	}
)

func (e *Name) Pos() diag.Pos      { return e.P }
func (e *Lit) Pos() diag.Pos       { return e.P }
func (e *StringLit) Pos() diag.Pos { return e.P }
func (e *Unary) Pos() diag.Pos     { return e.P }
func (e *Postfix) Pos() diag.Pos   { return e.P }
func (e *Binary) Pos() diag.Pos    { return e.P }
func (e *Assign) Pos() diag.Pos    { return e.P }
func (e *Cond) Pos() diag.Pos      { return e.P }
func (e *Call) Pos() diag.Pos      { return e.P }
func (e *Index) Pos() diag.Pos     { return e.P }
func (e *Member) Pos() diag.Pos    { return e.P }
func (e *Cast) Pos() diag.Pos      { return e.P }
func (e *Comma) Pos() diag.Pos     { return e.P }
func (e *SizeOf) Pos() diag.Pos    { return e.P }
func (e *InitList) Pos() diag.Pos  { return e.P }

func (*Name) exprNode()      {}
func (*Lit) exprNode()       {}
func (*StringLit) exprNode() {}
func (*Unary) exprNode()     {}
func (*Postfix) exprNode()   {}
func (*Binary) exprNode()    {}
func (*Assign) exprNode()    {}
func (*Cond) exprNode()      {}
func (*Call) exprNode()      {}
func (*Index) exprNode()     {}
func (*Member) exprNode()    {}
func (*Cast) exprNode()      {}
func (*Comma) exprNode()     {}
func (*SizeOf) exprNode()    {}
func (*InitList) exprNode()  {}

// Type is a type name as written: its words (unsigned long int, float, SB_TYPE), qualifiers
// dropped, and the number of pointer stars.
type Type struct {
	P     diag.Pos
	Words []string
	Ptr   int
}

func (t *Type) String() string {
	return strings.Join(t.Words, " ") + strings.Repeat("*", t.Ptr)
}

type (
	// Block is { statements }.
	Block struct {
		P, End diag.Pos
		List   []Stmt
	}
	// Decl declares variables of one type: float a, b = 1;
	Decl struct {
		P    diag.Pos
		Type *Type
		Vars []*Declarator
	}
	// ExprStmt is an expression followed by a semicolon.
	ExprStmt struct {
		P diag.Pos
		X Expr
	}
	// If is if (c) then [else els].
	If struct {
		P    diag.Pos
		Cond Expr
		Then Stmt
		Else Stmt // nil without else
	}
	// For is for (init; cond; post) body; any part may be nil.
	For struct {
		P    diag.Pos
		Init Stmt // *Decl or *ExprStmt
		Cond Expr
		Post Expr
		Body Stmt
	}
	// While is while (c) body, or do body while (c) when Do is set.
	While struct {
		P    diag.Pos
		Cond Expr
		Body Stmt
		Do   bool
	}
	// Return is return [x].
	Return struct {
		P diag.Pos
		X Expr
	}
	// Jump is break, continue or goto.
	Jump struct {
		P    diag.Pos
		Kind string
	}
	// Empty is a lone semicolon.
	Empty struct{ P diag.Pos }
	// Pragma is a preprocessor line met among statements.
	Pragma struct {
		P    diag.Pos
		Text string
	}
	// Unsupported is a statement form the parser recognises only to report it (switch, labels).
	Unsupported struct {
		P    diag.Pos
		What string
	}
)

// Declarator is one variable of a declaration: name, pointer stars, array extents and
// initializer. Paren marks the (*A)[n] form of a pointer to an array.
type Declarator struct {
	Name  Name
	Ptr   int
	Paren bool
	Dims  []Expr
	Init  Expr
}

func (s *Block) Pos() diag.Pos       { return s.P }
func (s *Decl) Pos() diag.Pos        { return s.P }
func (s *ExprStmt) Pos() diag.Pos    { return s.P }
func (s *If) Pos() diag.Pos          { return s.P }
func (s *For) Pos() diag.Pos         { return s.P }
func (s *While) Pos() diag.Pos       { return s.P }
func (s *Return) Pos() diag.Pos      { return s.P }
func (s *Jump) Pos() diag.Pos        { return s.P }
func (s *Empty) Pos() diag.Pos       { return s.P }
func (s *Pragma) Pos() diag.Pos      { return s.P }
func (s *Unsupported) Pos() diag.Pos { return s.P }

func (*Block) stmtNode()       {}
func (*Decl) stmtNode()        {}
func (*ExprStmt) stmtNode()    {}
func (*If) stmtNode()          {}
func (*For) stmtNode()         {}
func (*While) stmtNode()       {}
func (*Return) stmtNode()      {}
func (*Jump) stmtNode()        {}
func (*Empty) stmtNode()       {}
func (*Pragma) stmtNode()      {}
func (*Unsupported) stmtNode() {}

// Format prints an expression back as C, for messages, with the parentheses precedence needs.
func Format(e Expr) string {
	var b strings.Builder
	format(&b, e, 0)
	return b.String()
}

// formatOperand prints an operand of a binary operator with precedence prec, in parentheses
// when it binds more loosely (or equally, on the right).
func formatOperand(b *strings.Builder, e Expr, prec int, right bool, depth int) {
	paren := false
	switch x := e.(type) {
	case *Binary:
		p := precedence[x.Op]
		paren = p < prec || right && p == prec
	case *Assign, *Cond, *Comma:
		paren = true
	}
	if paren {
		b.WriteString("(")
	}
	format(b, e, depth)
	if paren {
		b.WriteString(")")
	}
}

func format(b *strings.Builder, e Expr, depth int) {
	if depth > 50 {
		b.WriteString("...")
		return
	}
	d := depth + 1
	switch e := e.(type) {
	case *Name:
		b.WriteString(e.Name)
	case *Lit:
		b.WriteString(e.Text)
	case *StringLit:
		b.WriteString(e.Text)
	case *Unary:
		b.WriteString(e.Op)
		formatOperand(b, e.X, 11, false, d)
	case *Postfix:
		format(b, e.X, d)
		b.WriteString(e.Op)
	case *Binary:
		p := precedence[e.Op]
		formatOperand(b, e.X, p, false, d)
		b.WriteString(" " + e.Op + " ")
		formatOperand(b, e.Y, p, true, d)
	case *Assign:
		format(b, e.L, d)
		b.WriteString(" " + e.Op + " ")
		format(b, e.R, d)
	case *Cond:
		format(b, e.C, d)
		b.WriteString(" ? ")
		format(b, e.A, d)
		b.WriteString(" : ")
		format(b, e.B, d)
	case *Call:
		format(b, e.Fun, d)
		b.WriteString("(")
		for i, a := range e.Args {
			if i > 0 {
				b.WriteString(", ")
			}
			format(b, a, d)
		}
		b.WriteString(")")
	case *Index:
		format(b, e.X, d)
		b.WriteString("[")
		format(b, e.I, d)
		b.WriteString("]")
	case *Member:
		format(b, e.X, d)
		if e.Arrow {
			b.WriteString("->")
		} else {
			b.WriteString(".")
		}
		b.WriteString(e.Name.Name)
	case *Cast:
		b.WriteString("(" + e.T.String() + ")")
		format(b, e.X, d)
	case *Comma:
		format(b, e.X, d)
		b.WriteString(", ")
		format(b, e.Y, d)
	case *SizeOf:
		b.WriteString("sizeof(...)")
	case *InitList:
		b.WriteString("{...}")
	}
}
