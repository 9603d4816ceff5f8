package lower

import (
	"tempest/internal/ir"
	"tempest/internal/syntax"
)

// Untyped kinds follow the .stencil checker: a literal has no type until its use gives it one.
const (
	Typed = iota
	UntypedInt
	UntypedFloat
)

// Typ is the type the .stencil checker will give an expression: an element type, or an
// untyped constant kind.
type Typ struct {
	T ir.Type
	U int
}

// IsBool reports whether t is a condition.
func (t Typ) IsBool() bool { return t.U == Typed && t.T == ir.Bool }

// IsFloat reports whether t is a float type or an untyped float constant.
func (t Typ) IsFloat() bool { return t.U == UntypedFloat || t.U == Typed && t.T.IsFloat() }

// floatType is the type untyped float constants settle to (sema's rule).
func (b *Builder) floatType() ir.Type {
	if b.Elem.IsFloat() {
		return b.Elem
	}
	return ir.F64
}

// common mirrors sema: the type two typed operands meet at.
func common(a, c ir.Type) ir.Type {
	switch {
	case a == c:
		return a
	case a.IsInt() && c.IsInt():
		return ir.I64
	case a.IsFloat() && c.IsFloat():
		return ir.F64
	case a.IsFloat():
		return a
	}
	return c
}

// meet mirrors sema's meet: the type of an arithmetic operation on x and y.
func (b *Builder) meet(x, y Typ) Typ {
	switch {
	case x.U != Typed && y.U != Typed:
		if x.U == UntypedFloat || y.U == UntypedFloat {
			return Typ{T: ir.F64, U: UntypedFloat}
		}
		return Typ{T: ir.I64, U: UntypedInt}
	case x.U != Typed:
		if x.U == UntypedFloat && y.T.IsInt() {
			return Typ{T: b.floatType()}
		}
		return Typ{T: y.T}
	case y.U != Typed:
		if y.U == UntypedFloat && x.T.IsInt() {
			return Typ{T: b.floatType()}
		}
		return Typ{T: x.T}
	}
	if x.T == ir.Bool || y.T == ir.Bool {
		return Typ{T: ir.Bool}
	}
	return Typ{T: common(x.T, y.T)}
}

// settle mirrors sema: the default type of an untyped constant.
func (b *Builder) settle(t Typ) Typ {
	switch t.U {
	case UntypedInt:
		return Typ{T: ir.I32}
	case UntypedFloat:
		return Typ{T: b.floatType()}
	}
	return t
}

// TypeOf predicts the type the .stencil checker gives e. Names are looked up in b.Types;
// unknown names count as the element type (the checker reports them if they are wrong).
func (b *Builder) TypeOf(e syntax.Expr) Typ {
	switch e := e.(type) {
	case *ref:
		return e.v.t
	case *syntax.IntLit:
		return Typ{T: ir.I64, U: UntypedInt}
	case *syntax.FloatLit:
		return Typ{T: ir.F64, U: UntypedFloat}
	case *syntax.Name:
		switch e.Name {
		case "true", "false":
			return Typ{T: ir.Bool}
		case "step":
			return Typ{T: ir.I32}
		case "value":
			if b.NoLets {
				return Typ{T: b.Elem}
			}
		}
		if t, ok := b.Types[e.Name]; ok {
			return t
		}
		return Typ{T: b.Elem}
	case *syntax.Unary:
		if e.Op == "!" {
			return Typ{T: ir.Bool}
		}
		return b.TypeOf(e.X)
	case *syntax.Binary:
		switch e.Op {
		case "&&", "||", "==", "!=", "<", "<=", ">", ">=":
			return Typ{T: ir.Bool}
		}
		return b.meet(b.TypeOf(e.X), b.TypeOf(e.Y))
	case *syntax.Cond:
		return b.selectType(e.C, e.A, e.B)
	case *syntax.Call:
		fn, _ := e.Fun.(*syntax.Name)
		if fn == nil {
			return Typ{T: b.Elem}
		}
		switch fn.Name {
		case "f32", "f64", "i32", "i64":
			t, _ := ir.ParseType(fn.Name)
			return Typ{T: t}
		case "size":
			return Typ{T: ir.I32}
		case "rand":
			return Typ{T: b.floatType()}
		case "select":
			if len(e.Args) == 3 {
				return b.selectType(e.Args[0], e.Args[1], e.Args[2])
			}
		}
		if t, ok := b.Types[fn.Name]; ok {
			return t // a layered grid
		}
		if len(e.Args) == 0 {
			return Typ{T: b.Elem}
		}
		acc := b.TypeOf(e.Args[0])
		for _, a := range e.Args[1:] {
			acc = b.meet(acc, b.TypeOf(a))
		}
		if acc.U != Typed {
			if ir.FloatOnly[fn.Name] {
				return Typ{T: ir.F64, U: UntypedFloat}
			}
			return acc
		}
		if ir.FloatOnly[fn.Name] && acc.T.IsInt() {
			return Typ{T: b.floatType()}
		}
		return acc
	case *syntax.Index:
		return b.TypeOf(e.X)
	case *syntax.Selector:
		return b.TypeOf(e.X)
	}
	return Typ{T: b.Elem}
}

// selectType mirrors sema's selectOp.
func (b *Builder) selectType(c, x, y syntax.Expr) Typ {
	tx, ty := b.TypeOf(x), b.TypeOf(y)
	if v, _, ok := b.constEval(c); ok && v.T == ir.Bool {
		m := b.meet(tx, ty)
		if tx.U != Typed && ty.U != Typed {
			return m
		}
		return Typ{T: m.T}
	}
	if tx.U != Typed && ty.U != Typed {
		return b.settle(b.meet(tx, ty))
	}
	return b.meet(tx, ty)
}
