package ir

import "strconv"

// Expr is a typed expression node.
type Expr interface {
	Type() Type
}

type (
	// Const is a constant of its type.
	Const struct{ V Value }
	// Load reads grid G at level Level (0: current, 1: previous) at constant offsets, one per
	// axis. Layer selects the layer of a layered input grid (nil otherwise).
	Load struct {
		G     *Grid
		Level int
		Off   []int
		Layer Expr
	}
	// ParamRef reads a parameter.
	ParamRef struct{ P *Param }
	// LetRef reads a let binding.
	LetRef struct{ L *Let }
	// Coord is the cell's coordinate along an axis (i32).
	Coord struct{ Axis int }
	// Size is the grid's extent along an axis (i32).
	Size struct{ Axis int }
	// Step is the number of steps completed before the one being computed (i32).
	Step struct{}
	// EdgeValue is, inside an edge() boundary, the value of the nearest in-domain cell.
	EdgeValue struct{ T Type }
	// Rand is a uniform value in [0,1) from a hash of the seed, grid and cell (init only).
	Rand struct{ T Type }
	// Unary is -X or !X.
	Unary struct {
		Op string
		X  Expr
		T  Type
	}
	// Binary is X op Y; both operands already have the operation's type (comparisons: the
	// operands' common type, result bool).
	Binary struct {
		Op   string
		X, Y Expr
		T    Type
	}
	// Select is C ? A : B.
	Select struct {
		C, A, B Expr
		T       Type
	}
	// Call is a math function applied to arguments of its type.
	Call struct {
		Fn   string
		Args []Expr
		T    Type
	}
	// ObsRef is an observable's value (f64), in the until test only.
	ObsRef struct{ O *Observe }
	// Convert changes X to type To (floats to integers truncate toward zero and saturate; NaN
	// becomes 0).
	Convert struct {
		X  Expr
		To Type
	}
)

func (e *Const) Type() Type     { return e.V.T }
func (e *Load) Type() Type      { return e.G.Type }
func (e *ParamRef) Type() Type  { return e.P.Type }
func (e *LetRef) Type() Type    { return e.L.Value.Type() }
func (e *Coord) Type() Type     { return I32 }
func (e *Size) Type() Type      { return I32 }
func (e *Step) Type() Type      { return I32 }
func (e *EdgeValue) Type() Type { return e.T }
func (e *Rand) Type() Type      { return e.T }
func (e *Unary) Type() Type     { return e.T }
func (e *Binary) Type() Type    { return e.T }
func (e *Select) Type() Type    { return e.T }
func (e *Call) Type() Type      { return e.T }
func (e *Convert) Type() Type   { return e.To }
func (e *ObsRef) Type() Type    { return F64 }

// Children returns e's operands in evaluation order.
func Children(e Expr) []Expr {
	switch e := e.(type) {
	case *Load:
		if e.Layer != nil {
			return []Expr{e.Layer}
		}
	case *Unary:
		return []Expr{e.X}
	case *Binary:
		return []Expr{e.X, e.Y}
	case *Select:
		return []Expr{e.C, e.A, e.B}
	case *Call:
		return e.Args
	case *Convert:
		return []Expr{e.X}
	}
	return nil
}

// Walk calls f on e and its operands in pre-order. It does not enter let bindings: a LetRef is
// a leaf, so each let is visited once by whoever walks Program.Lets.
func Walk(e Expr, f func(Expr)) {
	f(e)
	for _, c := range Children(e) {
		Walk(c, f)
	}
}

// WalkDeep is Walk that also enters let bindings, each one once however often it is
// referenced (a chain of lets that each use the previous one twice stays linear).
func WalkDeep(e Expr, f func(Expr)) {
	seen := map[*Let]bool{}
	var walk func(Expr)
	walk = func(e Expr) {
		f(e)
		if l, ok := e.(*LetRef); ok {
			if !seen[l.L] {
				seen[l.L] = true
				walk(l.L.Value)
			}
			return
		}
		for _, c := range Children(e) {
			walk(c)
		}
	}
	walk(e)
}

// FunArity lists the math functions and their argument counts.
var FunArity = map[string]int{
	"sqrt": 1, "exp": 1, "log": 1, "sin": 1, "cos": 1, "tan": 1, "tanh": 1, "abs": 1,
	"floor": 1, "ceil": 1, "min": 2, "max": 2, "pow": 2, "fma": 3,
}

// FloatOnly names the functions whose arguments are converted to a float type.
var FloatOnly = map[string]bool{
	"sqrt": true, "exp": true, "log": true, "sin": true, "cos": true, "tan": true, "tanh": true,
	"floor": true, "ceil": true, "pow": true, "fma": true,
}

func strconvFormat(f float64, bits int) string {
	s := strconv.FormatFloat(f, 'g', -1, bits)
	for _, c := range s {
		if c == '.' || c == 'e' || c == 'n' || c == 'N' {
			return s
		}
	}
	return s + ".0"
}

// Reach is, per axis, the largest absolute offset of any grid read in e (lets included).
func Reach(e Expr, dims int) []int {
	r := make([]int, dims)
	WalkDeep(e, func(x Expr) {
		if l, ok := x.(*Load); ok {
			for a, o := range l.Off {
				if o < 0 {
					o = -o
				}
				r[a] = max(r[a], o)
			}
		}
	})
	return r
}

// Reach is, per axis, the largest offset any update of p reads at: the halo every engine and
// plan must provide.
func (p *Program) Reach() []int {
	r := make([]int, p.Dims())
	for _, u := range p.Updates {
		for a, v := range Reach(u.Value, p.Dims()) {
			r[a] = max(r[a], v)
		}
	}
	return r
}
