// Package analysis derives the facts about a stencil program that planners, models and people
// need: footprint, radius, shape, operation counts and memory traffic per cell.
package analysis

import (
	"fmt"
	"sort"
	"strings"

	"tempest/internal/ir"
)

// Shape classifies a stencil's footprint.
type Shape string

const (
	Star    Shape = "star"    // offsets along one axis at a time
	Box     Shape = "box"     // every offset of the (2r+1)^d box
	General Shape = "general" // anything else
)

// Ops counts operations per cell, as the papers count them: one per add, subtract, multiply,
// divide and special function; a fused multiply-add written as fma() counts two.
type Ops struct {
	Add      int `json:"add"`      // additions and subtractions
	Mul      int `json:"mul"`      // multiplications
	FMA      int `json:"fma"`      // explicit fma() calls (2 FLOPs each)
	FMAPairs int `json:"fmaPairs"` // add/sub nodes fed by a multiply: each can become one FMA
	Div      int `json:"div"`      // divisions and remainders
	Special  int `json:"special"`  // sqrt, exp, log, sin, cos, tan, tanh, pow
	MinMax   int `json:"minmax"`   // min, max, abs, floor, ceil (counted as one FLOP each)
	Compare  int `json:"compare"`  // comparisons and selects (not FLOPs)
	IntOps   int `json:"intOps"`   // integer arithmetic (not FLOPs)
}

// FLOPs is the floating-point operation count per cell.
func (o Ops) FLOPs() int { return o.Add + o.Mul + 2*o.FMA + o.Div + o.Special + o.MinMax }

// GridUse describes one grid.
type GridUse struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Role     string `json:"role"` // state or input
	Levels   int    `json:"levels"`
	Boundary string `json:"boundary"`
	Radius   []int  `json:"radius,omitempty"` // reach of its own update, per axis (state grids)
}

// Summary is the analysis of one program.
type Summary struct {
	Name         string    `json:"name"`
	Dims         int       `json:"dims"`
	Axes         []string  `json:"axes"`
	Type         string    `json:"type"`
	Radius       []int     `json:"radius"` // per axis, over every read of every update
	Shape        Shape     `json:"shape"`
	Points       int       `json:"points"` // distinct offsets read
	Ops          Ops       `json:"ops"`
	FLOPs        int       `json:"flops"`
	BytesRead    int       `json:"bytesRead"`    // compulsory bytes read per cell (each grid level once)
	BytesWritten int       `json:"bytesWritten"` // bytes written per cell
	Associative  bool      `json:"associative"`  // every update is a sum of coefficient x neighbour terms
	DiagonalFree bool      `json:"diagonalFree"` // no read has offsets on two axes at once
	Grids        []GridUse `json:"grids"`
	Params       []string  `json:"params"`
	// Observables are "name (op)" in declaration order; Until says whether the program has a
	// convergence test. Neither counts in the figures above.
	Observables []string `json:"observables,omitempty"`
	Until       bool     `json:"until,omitempty"`
}

// Analyze computes the Summary of p.
func Analyze(p *ir.Program) *Summary {
	s := &Summary{Name: p.Name, Dims: p.Dims(), Axes: p.Axes, Type: p.DefaultType.String(),
		Radius: make([]int, p.Dims()), DiagonalFree: true, Associative: len(p.Updates) > 0, Until: p.Until != nil}
	for _, o := range p.Observes {
		s.Observables = append(s.Observables, fmt.Sprintf("%s (%s)", o.Name, o.Op))
	}
	offsets := map[string]bool{}
	readLevels := map[string]int{}
	usedLets := map[*ir.Let]bool{}
	for _, u := range p.Updates {
		ir.WalkDeep(u.Value, func(e ir.Expr) {
			switch e := e.(type) {
			case *ir.Load:
				nz := 0
				for a, o := range e.Off {
					s.Radius[a] = max(s.Radius[a], abs(o))
					if o != 0 {
						nz++
					}
				}
				if nz > 1 {
					s.DiagonalFree = false
				}
				offsets[fmt.Sprint(e.Off)] = true
				readLevels[fmt.Sprintf("%s.%d", e.G.Name, e.Level)] = e.G.Type.Size()
			case *ir.LetRef:
				usedLets[e.L] = true
			}
		})
		if !linear(u.Value, map[*ir.Let]bool{}) {
			s.Associative = false
		}
	}
	// Operation counts: each update once and each let once, however often it is referenced.
	for _, u := range p.Updates {
		count(u.Value, &s.Ops)
	}
	for _, l := range p.Lets {
		if usedLets[l] {
			count(l.Value, &s.Ops)
		}
	}
	s.FLOPs = s.Ops.FLOPs()
	s.Points = len(offsets)
	s.Shape = shape(offsets, s.Radius)
	for _, b := range readLevels {
		s.BytesRead += b
	}
	for _, u := range p.Updates {
		s.BytesWritten += u.Grid.Type.Size()
	}
	for _, g := range p.Grids {
		gu := GridUse{Name: g.Name, Type: g.Type.String(), Role: "state", Levels: g.Levels, Boundary: BoundaryString(p, g)}
		if g.Input {
			gu.Role = "input"
		}
		if g.Update != nil {
			gu.Radius = ir.Reach(g.Update.Value, p.Dims())
		}
		s.Grids = append(s.Grids, gu)
	}
	for _, pr := range p.Params {
		s.Params = append(s.Params, fmt.Sprintf("%s: %s = %s", pr.Name, pr.Type, pr.Default))
	}
	return s
}

// BoundaryString describes a grid's boundary conditions, one per axis unless all agree.
func BoundaryString(p *ir.Program, g *ir.Grid) string {
	names := make([]string, len(g.BC))
	same := true
	for i, bc := range g.BC {
		names[i] = bc.Kind.String()
		if bc.Kind == ir.Constant {
			if k, ok := bc.Value.(*ir.Const); ok {
				names[i] = fmt.Sprintf("constant(%s)", k.V)
			}
		}
		if names[i] != names[0] {
			same = false
		}
	}
	if same && len(names) > 0 {
		return names[0]
	}
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = p.Axes[i] + ": " + n
	}
	return strings.Join(parts, ", ")
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func shape(offsets map[string]bool, radius []int) Shape {
	box := 1
	star := true
	for _, r := range radius {
		box *= 2*r + 1
	}
	for k := range offsets {
		var nz int
		for _, f := range strings.Fields(strings.Trim(k, "[]")) {
			if f != "0" {
				nz++
			}
		}
		if nz > 1 {
			star = false
		}
	}
	switch {
	case star:
		return Star
	case len(offsets) == box:
		return Box
	}
	return General
}

// count adds e's operations to o without entering lets.
func count(e ir.Expr, o *Ops) {
	ir.Walk(e, func(x ir.Expr) { countNode(x, o) })
}

// countNode adds x's own operation (not its operands') to o.
func countNode(x ir.Expr, o *Ops) {
	switch x := x.(type) {
	case *ir.Binary:
		if !x.T.IsFloat() {
			if x.T.IsInt() {
				o.IntOps++
			} else {
				o.Compare++
			}
			return
		}
		switch x.Op {
		case "+", "-":
			o.Add++
			if isMul(x.X) || isMul(x.Y) {
				o.FMAPairs++
			}
		case "*":
			o.Mul++
		case "/", "%":
			o.Div++
		}
	case *ir.Select:
		o.Compare++
	case *ir.Call:
		if !x.T.IsFloat() {
			o.IntOps++
			return
		}
		switch x.Fn {
		case "fma":
			o.FMA++
		case "min", "max", "abs", "floor", "ceil":
			o.MinMax++
		default:
			o.Special++
		}
	}
}

func isMul(e ir.Expr) bool {
	b, ok := e.(*ir.Binary)
	return ok && b.Op == "*" && b.T.IsFloat()
}

// linear reports whether e is a sum of constant-or-parameter coefficients times grid reads,
// possibly scaled or divided by a coefficient: the form AN5D's associative optimization needs.
func linear(e ir.Expr, memo map[*ir.Let]bool) bool {
	switch e := e.(type) {
	case *ir.Load:
		return e.Layer == nil
	case *ir.Const, *ir.ParamRef:
		return true
	case *ir.LetRef:
		v, ok := memo[e.L]
		if !ok {
			v = linear(e.L.Value, memo)
			memo[e.L] = v
		}
		return v
	case *ir.Unary:
		return e.Op == "-" && linear(e.X, memo)
	case *ir.Convert:
		return e.To.IsFloat() && linear(e.X, memo)
	case *ir.Binary:
		switch e.Op {
		case "+", "-":
			return linear(e.X, memo) && linear(e.Y, memo)
		case "*":
			return (coef(e.X) && linear(e.Y, memo)) || (coef(e.Y) && linear(e.X, memo))
		case "/":
			return coef(e.Y) && linear(e.X, memo)
		}
	}
	return false
}

func coef(e ir.Expr) bool {
	switch e := e.(type) {
	case *ir.Const, *ir.ParamRef:
		return true
	case *ir.Unary:
		return coef(e.X)
	case *ir.Binary:
		return e.Op != "%" && coef(e.X) && coef(e.Y)
	}
	return false
}

// Text renders the summary for people.
func (s *Summary) Text() string {
	var b strings.Builder
	w := func(k, f string, args ...any) { fmt.Fprintf(&b, "%-15s "+f+"\n", append([]any{k + ":"}, args...)...) }
	w("stencil", "%s", s.Name)
	w("dimensions", "%dD (axes %s, slowest first)", s.Dims, strings.Join(s.Axes, ", "))
	w("element type", "%s", s.Type)
	rs := make([]string, len(s.Radius))
	for i, r := range s.Radius {
		rs[i] = fmt.Sprintf("%s=%d", s.Axes[i], r)
	}
	w("radius", "%s", strings.Join(rs, " "))
	w("shape", "%s, %d points", s.Shape, s.Points)
	w("FLOPs/cell", "%d (add %d, mul %d, fma %d, div %d, special %d, min/max %d)", s.FLOPs, s.Ops.Add, s.Ops.Mul, s.Ops.FMA, s.Ops.Div, s.Ops.Special, s.Ops.MinMax)
	w("FMA-able pairs", "%d", s.Ops.FMAPairs)
	if s.Ops.IntOps+s.Ops.Compare > 0 {
		w("other ops/cell", "%d integer, %d compare/select", s.Ops.IntOps, s.Ops.Compare)
	}
	w("bytes/cell", "%d read, %d written", s.BytesRead, s.BytesWritten)
	w("associative", "%v", s.Associative)
	w("diagonal-free", "%v", s.DiagonalFree)
	for _, g := range s.Grids {
		extra := ""
		if g.Levels > 1 {
			extra = ", 2 time levels"
		}
		w("grid "+g.Name, "%s %s, boundary %s%s", g.Role, g.Type, g.Boundary, extra)
	}
	ps := append([]string(nil), s.Params...)
	sort.Strings(ps)
	for _, p := range ps {
		w("param", "%s", p)
	}
	if len(s.Observables) > 0 {
		w("observables", "%s", strings.Join(s.Observables, ", "))
	}
	if s.Until {
		w("until", "a convergence test (tempest run stops where it holds)")
	}
	return b.String()
}
