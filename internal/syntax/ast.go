// Package syntax reads .stencil programs into an abstract syntax tree. It checks only the
// grammar; meaning (names, types, offsets) is checked by package sema.
package syntax

import "tempest/internal/diag"

// File is one parsed .stencil program.
type File struct {
	Src   *diag.Source
	Decls []Decl
}

// Decl is a top-level declaration.
type Decl interface{ declPos() diag.Pos }

// Ident is a name with its position.
type Ident struct {
	Pos  diag.Pos
	Name string
}

// StencilDecl names the program: `stencil heat`.
type StencilDecl struct {
	Pos  diag.Pos
	Name Ident
}

// AxesDecl lists the axes, slowest first: `axes z, y, x`.
type AxesDecl struct {
	Pos   diag.Pos
	Names []Ident
}

// TypeDecl sets the default element type: `type f32`.
type TypeDecl struct {
	Pos  diag.Pos
	Type Ident
}

// ParamDecl declares a scalar parameter with a default: `param alpha: f32 = 0.1`.
type ParamDecl struct {
	Pos     diag.Pos
	Name    Ident
	Type    *Ident
	Default Expr
}

// GridDecl declares a state grid (updated every step) or an input grid (read-only).
type GridDecl struct {
	Pos      diag.Pos
	Input    bool
	Name     Ident
	Type     *Ident
	Init     Expr     // initial value; nil means zero (or the command line)
	Prev     Expr     // initial value of the previous time level; implies two levels
	Levels   *IntLit  // `levels 2`
	Layers   Expr     // `layers n`: an input grid with a leading layer axis
	Boundary []BCSpec // per axis or for all axes
	BPos     diag.Pos // position of the `boundary` keyword
}

// BCSpec is one boundary rule; Axis is nil when it applies to every axis.
type BCSpec struct {
	Pos  diag.Pos
	Axis *Ident
	Kind Ident
	Arg  Expr // constant(v) and edge(e)
}

// LetDecl binds a per-cell value: `let lap = u[x-1] + u[x+1] - 2*u`.
type LetDecl struct {
	Pos   diag.Pos
	Name  Ident
	Value Expr
}

// UpdateDecl gives a state grid's value at the next step: `update u = ...`.
type UpdateDecl struct {
	Pos   diag.Pos
	Name  Ident
	Value Expr
}

// ObserveDecl declares an observable: one reduction over the grid's cells of a per-cell
// expression, `observe energy = sum(u*u)`. Op is sum, max, min or mean.
type ObserveDecl struct {
	Pos   diag.Pos
	Name  Ident
	Op    Ident
	Value Expr
}

// UntilDecl is the convergence test over observables and parameters: `until maxdiff < 1e-6`.
type UntilDecl struct {
	Pos  diag.Pos
	Cond Expr
}

func (d *StencilDecl) declPos() diag.Pos { return d.Pos }
func (d *AxesDecl) declPos() diag.Pos    { return d.Pos }
func (d *TypeDecl) declPos() diag.Pos    { return d.Pos }
func (d *ParamDecl) declPos() diag.Pos   { return d.Pos }
func (d *GridDecl) declPos() diag.Pos    { return d.Pos }
func (d *LetDecl) declPos() diag.Pos     { return d.Pos }
func (d *UpdateDecl) declPos() diag.Pos  { return d.Pos }
func (d *ObserveDecl) declPos() diag.Pos { return d.Pos }
func (d *UntilDecl) declPos() diag.Pos   { return d.Pos }

// Expr is an expression node.
type Expr interface{ ExprPos() diag.Pos }

type (
	// IntLit is an integer literal.
	IntLit struct {
		Pos  diag.Pos
		Text string
		Val  int64
	}
	// FloatLit is a floating-point literal.
	FloatLit struct {
		Pos  diag.Pos
		Text string
		Val  float64
	}
	// Name is a reference to a parameter, binding, grid, axis coordinate or builtin.
	Name struct{ Ident }
	// Unary is -x, +x or !x.
	Unary struct {
		Pos diag.Pos
		Op  string
		X   Expr
	}
	// Binary is x op y.
	Binary struct {
		Pos  diag.Pos // the operator's position
		Op   string
		X, Y Expr
	}
	// Cond is c ? a : b.
	Cond struct {
		Pos     diag.Pos
		C, A, B Expr
	}
	// Call is f(args): a math function, a conversion, or a layer of an input grid.
	Call struct {
		Pos  diag.Pos
		Fun  Expr
		Args []Expr
	}
	// Index is g[...]: a neighbour read at constant offsets along named axes.
	Index struct {
		Pos     diag.Pos
		X       Expr
		Indices []Expr
	}
	// Selector is g.prev: the previous time level of a grid.
	Selector struct {
		Pos diag.Pos
		X   Expr
		Sel Ident
	}
	// Sum is a reduction unrolled at compile time: sum(i in -1..1, j in -1..1) expr.
	Sum struct {
		Pos  diag.Pos
		Vars []SumVar
		Body Expr
	}
)

// SumVar is one index of a Sum with inclusive bounds.
type SumVar struct {
	Name   Ident
	Lo, Hi Expr
}

func (e *IntLit) ExprPos() diag.Pos   { return e.Pos }
func (e *FloatLit) ExprPos() diag.Pos { return e.Pos }
func (e *Name) ExprPos() diag.Pos     { return e.Ident.Pos }
func (e *Unary) ExprPos() diag.Pos    { return e.Pos }
func (e *Binary) ExprPos() diag.Pos   { return e.Pos }
func (e *Cond) ExprPos() diag.Pos     { return e.Pos }
func (e *Call) ExprPos() diag.Pos     { return e.Pos }
func (e *Index) ExprPos() diag.Pos    { return e.Pos }
func (e *Selector) ExprPos() diag.Pos { return e.Pos }
func (e *Sum) ExprPos() diag.Pos      { return e.Pos }
