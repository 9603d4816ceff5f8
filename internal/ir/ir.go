// Package ir is Tempest's stencil intermediate representation: a checked, typed program that
// every later stage (analysis, reference, CPU engine, GPU lowering) reads and none rewrites.
package ir

import (
	"fmt"
	"math"
)

// Type is an element or expression type.
type Type int

const (
	Bool Type = iota
	I32
	I64
	F32
	F64
)

func (t Type) String() string {
	switch t {
	case Bool:
		return "bool"
	case I32:
		return "i32"
	case I64:
		return "i64"
	case F32:
		return "f32"
	case F64:
		return "f64"
	}
	return fmt.Sprintf("Type(%d)", int(t))
}

// IsFloat reports whether t is f32 or f64.
func (t Type) IsFloat() bool { return t == F32 || t == F64 }

// IsInt reports whether t is i32 or i64.
func (t Type) IsInt() bool { return t == I32 || t == I64 }

// Size is the element size in bytes.
func (t Type) Size() int {
	switch t {
	case I32, F32:
		return 4
	case I64, F64:
		return 8
	}
	return 1
}

// ParseType maps a type name to a Type; ok is false for anything that is not an element type.
func ParseType(s string) (Type, bool) {
	switch s {
	case "f32":
		return F32, true
	case "f64":
		return F64, true
	case "i32":
		return I32, true
	case "i64":
		return I64, true
	}
	return 0, false
}

// Program is a checked stencil program.
type Program struct {
	Name        string
	Source      string // file name it came from
	Axes        []string
	DefaultType Type
	Params      []*Param
	Grids       []*Grid    // declaration order
	Lets        []*Let     // dependency order: a let refers only to earlier ones
	Updates     []*Update  // one per state grid, declaration order
	Observes    []*Observe // declaration order
	// Until is the convergence test (bool) over observables and parameters; nil: none.
	Until Expr
}

// Dims is the number of spatial axes.
func (p *Program) Dims() int { return len(p.Axes) }

// Param is a scalar set at run time, with a default.
type Param struct {
	Name    string
	Type    Type
	Default Value
	Index   int
}

// Value is a scalar of any Type; the field that matches the type holds it.
type Value struct {
	T Type
	F float64 // F32 values are stored rounded to float32
	I int64
	B bool
}

// Float returns v as a float64 whatever its type.
func (v Value) Float() float64 {
	switch {
	case v.T.IsFloat():
		return v.F
	case v.T.IsInt():
		return float64(v.I)
	case v.B:
		return 1
	}
	return 0
}

func (v Value) String() string {
	switch {
	case v.T.IsFloat():
		return FormatFloat(v.F, v.T)
	case v.T.IsInt():
		return fmt.Sprint(v.I)
	}
	return fmt.Sprint(v.B)
}

// FormatFloat prints f so that it parses back to the same value of type t.
func FormatFloat(f float64, t Type) string {
	bits := 64
	if t == F32 {
		bits = 32
	}
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	s := fmt.Sprint(strconvFormat(f, bits))
	return s
}

// Grid is one named array over the program's axes.
type Grid struct {
	Name   string
	Type   Type
	Input  bool // read-only
	Levels int  // 1, or 2 when the previous step is kept (u.prev)
	Layers Expr // input grids only: an integer expression of parameters giving a leading layer axis; nil if none
	BC     []BC // one per axis
	Init   Expr // nil: zero, unless the command line gives one
	Prev   Expr // initial value of the previous level; nil: same as Init
	Update *Update
	Index  int
	// Rim is, per axis, how many cells at each end the update leaves alone (the fixed boundary);
	// zero where the axis is not fixed.
	Rim []int
}

// BCKind is a boundary condition.
type BCKind int

const (
	Clamp BCKind = iota
	Constant
	Periodic
	Mirror
	Fixed
	Edge
)

func (k BCKind) String() string {
	return [...]string{"clamp", "constant", "periodic", "mirror", "fixed", "edge"}[k]
}

// BC is the rule for reads outside the domain along one axis.
type BC struct {
	Kind  BCKind
	Value Expr // Constant: the constant; Edge: the expression (may read EdgeValue and coordinates)
}

// Let is a named per-cell value, computed once per cell and shared by its uses.
type Let struct {
	Name  string
	Value Expr
	Index int
}

// Update gives the next value of a state grid.
type Update struct {
	Grid  *Grid
	Value Expr
}
