package sl

import (
	"fmt"
	"sort"
	"strings"

	"tempest/internal/diag"
	"tempest/internal/frontend/cc"
	"tempest/internal/frontend/lower"
	"tempest/internal/syntax"
)

// hooks give the C code of an SL block its builtins: get, read, x/y/z, iteration, input_size
// and value.
type hooks struct {
	t    *translator
	edge bool // translating EdgeValue
}

func (h *hooks) Name(b *lower.Builder, n *cc.Name) syntax.Expr {
	t := h.t
	switch n.Name {
	case "x", "y", "z":
		for _, a := range t.axes {
			if a == n.Name {
				return lower.Name(n.P, a)
			}
		}
		b.Fail(n.P, fmt.Sprintf("a %dD stencil has the coordinates %s", t.dims, strings.Join(t.axes, ", ")), "%s is not a coordinate of a %dD stencil", n.Name, t.dims)
	case "iteration":
		// SL counts iterations from 1; Tempest's step counts the steps completed before.
		return &syntax.Binary{Pos: n.P, Op: "+", X: lower.Name(n.P, "step"), Y: lower.IntLit(n.P, 1)}
	case "value":
		if h.edge {
			return lower.Name(n.P, "value")
		}
		b.Fail(n.P, "in CellValue, the cell's own value is get(0, ...); declare a local to use the name", "value is available only in EdgeValue")
	case "input_size":
		b.Fail(n.P, "write input_size.x (or .y, .z)", "input_size is a structure; use one of its fields")
	case "get", "read":
		b.Fail(n.P, fmt.Sprintf("call it: %s(...)", n.Name), "%s is a function", n.Name)
	}
	if _, ok := t.scalars[n.Name]; ok {
		return lower.Name(n.P, n.Name)
	}
	b.Fail(n.P, h.suggest(n.Name), "undefined name %q", n.Name)
	return nil
}

func (h *hooks) suggest(name string) string {
	cands := []string{"iteration", "input_size", "get", "read"}
	cands = append(cands, h.t.axes...)
	if h.edge {
		cands = append(cands, "value")
	}
	for s := range h.t.scalars {
		cands = append(cands, s)
	}
	var best []string
	for _, c := range cands {
		if diag.EditDistance(c, name) <= 2 {
			best = append(best, c)
		}
	}
	sort.Strings(best)
	if len(best) > 0 {
		return "did you mean " + strings.Join(best, " or ") + "?"
	}
	return "declare local variables before using them; scalar parameters are listed in ScalarVariables"
}

func (h *hooks) Member(b *lower.Builder, m *cc.Member) syntax.Expr {
	base, ok := m.X.(*cc.Name)
	if !ok || base.Name != "input_size" || m.Arrow {
		b.Fail(m.P, "the only structure is input_size (input_size.x, .y, .z)", "field access is not supported here")
	}
	for _, a := range h.t.axes {
		if a == m.Name.Name {
			return &syntax.Call{Pos: base.P, Fun: lower.Name(base.P, "size"), Args: []syntax.Expr{lower.Name(m.Name.P, a)}}
		}
	}
	b.Fail(m.Name.P, "the fields are "+strings.Join(h.t.axes, ", "), "input_size has no field %s in a %dD stencil", m.Name.Name, h.t.dims)
	return nil
}

func (h *hooks) Index(b *lower.Builder, ix *cc.Index) syntax.Expr {
	b.Fail(ix.P, "read neighbours with get(dx, dy) and read-only data with read(i)", "arrays are not supported in SL code")
	return nil
}

func (h *hooks) Store(b *lower.Builder, a *cc.Assign, rhs syntax.Expr) {
	if n, ok := a.L.(*cc.Name); ok {
		switch n.Name {
		case "x", "y", "z", "iteration", "value":
			b.Fail(n.P, "copy it into a local variable first", "%s is read-only", n.Name)
		}
		if _, ok := h.t.scalars[n.Name]; ok {
			b.Fail(n.P, "scalar variables are read-only; copy it into a local variable", "%s is read-only", n.Name)
		}
		b.Fail(n.P, fmt.Sprintf("declare it first, e.g. %s %s;", h.t.dataType, n.Name), "%s is not declared", n.Name)
	}
	b.Fail(a.P, "the new cell value is returned: return expression;", "only local variables can be assigned")
}

func (h *hooks) Call(b *lower.Builder, c *cc.Call, fn string) syntax.Expr {
	switch fn {
	case "get":
		return h.get(b, c)
	case "read":
		return h.read(b, c)
	}
	b.Fail(c.P, "the functions are get(), read() and the math functions: "+lower.MathNames(), "unknown function %q", fn)
	return nil
}

// get(dx, dy, dz) reads the state grid at constant offsets, x first.
func (h *hooks) get(b *lower.Builder, c *cc.Call) syntax.Expr {
	t := h.t
	if h.edge {
		b.Fail(c.P, "EdgeValue reads the nearest cell as `value`", "EdgeValue may not use get()")
	}
	if len(c.Args) != t.dims {
		b.Fail(c.P, fmt.Sprintf("a %dD stencil's get takes %d offsets, x first", t.dims, t.dims), "get takes %d argument(s), got %d", t.dims, len(c.Args))
	}
	var idx []syntax.Expr
	for k, a := range c.Args {
		off, ok := b.ConstInt(b.Expr(a))
		if !ok {
			b.Fail(a.Pos(), "offsets are integer constants, or counters of loops with constant bounds", "get() offset is not a constant")
		}
		if off > 1<<20 || off < -(1<<20) {
			b.Fail(a.Pos(), "", "offset %d is too large", off)
		}
		mag := int(max(off, -off))
		if t.sizes != nil && mag > t.sizes[k] {
			b.Fail(a.Pos(), fmt.Sprintf("raise StencilSize along %s to %d", axisNames[k], mag),
				"get() reaches %d cells along %s, beyond StencilSize %d", mag, axisNames[k], t.sizes[k])
		}
		t.reach = max(t.reach, mag)
		if off == 0 {
			continue
		}
		op, v := "+", off
		if off < 0 {
			op, v = "-", -off
		}
		ax := axisNames[k]
		idx = append(idx, &syntax.Binary{Pos: a.Pos(), Op: op, X: lower.Name(a.Pos(), ax), Y: lower.IntLit(a.Pos(), v)})
	}
	g := lower.Name(c.P, t.cell)
	if len(idx) == 0 {
		return g
	}
	// Slowest axis first, as .stencil indices read best; the order does not matter to the checker.
	for i, j := 0, len(idx)-1; i < j; i, j = i+1, j-1 {
		idx[i], idx[j] = idx[j], idx[i]
	}
	return &syntax.Index{Pos: c.P, X: g, Indices: idx}
}

// read(i) reads SL's read-only data. See the package comment for the forms understood.
func (h *hooks) read(b *lower.Builder, c *cc.Call) syntax.Expr {
	t := h.t
	if h.edge {
		b.Fail(c.P, "an edge value may use value, the coordinates, iteration and the scalars", "EdgeValue may not use read()")
	}
	if len(c.Args) != 1 {
		b.Fail(c.P, "", "read takes 1 argument, got %d", len(c.Args))
	}
	arg := c.Args[0]
	e, ok := b.Resolved(b.Expr(arg))
	if !ok {
		b.Fail(arg.Pos(), "", "the index is too large to analyse")
	}
	hint := fmt.Sprintf("write the cell's own index, %s, optionally plus k * %s for row k of stacked data", h.ownIndex(), h.cells())
	p, ok := polyOf(e, t, 0)
	if !ok {
		b.Fail(arg.Pos(), hint, "read() index is not an integer formula of the coordinates, input_size, iteration and integer scalars")
	}
	layer, ok := h.layerOf(p, arg.Pos())
	if !ok {
		b.Fail(arg.Pos(), hint, "read() index %s is not the cell's own element: Tempest maps read(i) to the data grid at the cell itself", cc.Format(arg))
	}
	ix := &syntax.Index{Pos: c.P, X: lower.Name(c.P, DataGrid)}
	if layer != nil {
		t.layered = true
		ix.X = &syntax.Call{Pos: c.P, Fun: lower.Name(c.P, DataGrid), Args: []syntax.Expr{layer}}
	}
	t.dataReads = append(t.dataReads, ix)
	return ix
}

func (h *hooks) ownIndex() string {
	switch h.t.dims {
	case 1:
		return "x"
	case 2:
		return "y * input_size.x + x"
	}
	return "(z * input_size.y + y) * input_size.x + x"
}

func (h *hooks) cells() string {
	return strings.Join([]string{"input_size.x", "input_size.y", "input_size.z"}[:h.t.dims], " * ")
}

// poly is a polynomial with integer coefficients over the atoms of an index formula:
// coordinates (c:x), extents (s:x), the step and integer parameters. Keys are monomials,
// their atoms sorted and joined by *; "" is the constant term.
type poly map[string]int64

const maxTerms = 256

func atomsOf(m string) []string {
	if m == "" {
		return nil
	}
	return strings.Split(m, "*")
}

func monomial(atoms []string) string {
	sort.Strings(atoms)
	return strings.Join(atoms, "*")
}

func (p poly) add(q poly, sign int64) poly {
	out := poly{}
	for k, v := range p {
		out[k] += v
	}
	for k, v := range q {
		out[k] += sign * v
	}
	for k, v := range out {
		if v == 0 {
			delete(out, k)
		}
	}
	return out
}

func (p poly) mul(q poly) poly {
	out := poly{}
	for k1, v1 := range p {
		for k2, v2 := range q {
			k := monomial(append(atomsOf(k1), atomsOf(k2)...))
			out[k] += v1 * v2
		}
	}
	for k, v := range out {
		if v == 0 {
			delete(out, k)
		}
	}
	return out
}

// polyOf reads an index formula as a polynomial; ok is false for anything else.
func polyOf(e syntax.Expr, t *translator, depth int) (poly, bool) {
	if depth > 200 {
		return nil, false
	}
	d := depth + 1
	switch e := e.(type) {
	case *syntax.IntLit:
		return poly{"": e.Val}, true
	case *syntax.Name:
		for _, a := range t.axes {
			if a == e.Name {
				return poly{"c:" + a: 1}, true
			}
		}
		if e.Name == "step" {
			return poly{"step": 1}, true
		}
		if ty, ok := t.scalars[e.Name]; ok && ty.IsInt() {
			return poly{"p:" + e.Name: 1}, true
		}
	case *syntax.Call:
		if fn, ok := e.Fun.(*syntax.Name); ok && fn.Name == "size" && len(e.Args) == 1 {
			if a, ok := e.Args[0].(*syntax.Name); ok {
				return poly{"s:" + a.Name: 1}, true
			}
		}
	case *syntax.Unary:
		if e.Op == "-" || e.Op == "+" {
			x, ok := polyOf(e.X, t, d)
			if !ok {
				return nil, false
			}
			if e.Op == "+" {
				return x, true
			}
			return poly{}.add(x, -1), true
		}
	case *syntax.Binary:
		x, ok1 := polyOf(e.X, t, d)
		y, ok2 := polyOf(e.Y, t, d)
		if !ok1 || !ok2 {
			return nil, false
		}
		var out poly
		switch e.Op {
		case "+":
			out = x.add(y, 1)
		case "-":
			out = x.add(y, -1)
		case "*":
			if len(x)*len(y) > maxTerms {
				return nil, false
			}
			out = x.mul(y)
		default:
			return nil, false
		}
		return out, len(out) <= maxTerms
	}
	return nil, false
}

// layerOf splits an index polynomial into the cell's own row-major index plus layer times the
// domain's cell count. It returns the layer expression (nil for layer 0) or false if the index
// has another form.
func (h *hooks) layerOf(p poly, pos diag.Pos) (syntax.Expr, bool) {
	t := h.t
	// own index, x fastest: x + y*sx + z*sx*sy
	own := poly{"c:x": 1}
	cells := []string{"s:x"}
	if t.dims >= 2 {
		own[monomial([]string{"c:y", "s:x"})] = 1
		cells = append(cells, "s:y")
	}
	if t.dims == 3 {
		own[monomial([]string{"c:z", "s:x", "s:y"})] = 1
		cells = append(cells, "s:z")
	}
	rest := p.add(own, -1)
	if len(rest) == 0 {
		return nil, true
	}
	layer := poly{}
	for m, v := range rest {
		atoms := atomsOf(m)
		var left []string
		need := map[string]int{}
		for _, c := range cells {
			need[c]++
		}
		for _, a := range atoms {
			if need[a] > 0 {
				need[a]--
				continue
			}
			left = append(left, a)
		}
		for _, n := range need {
			if n > 0 {
				return nil, false
			}
		}
		for _, a := range left {
			if strings.HasPrefix(a, "c:") || strings.HasPrefix(a, "s:") {
				return nil, false
			}
		}
		layer[monomial(left)] += v
	}
	return layerExpr(layer, pos), true
}

// layerExpr writes a polynomial over step and integer parameters as an expression, constant
// term last: step + 1.
func layerExpr(p poly, pos diag.Pos) syntax.Expr {
	var keys []string
	for k := range p {
		if k != "" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	if _, ok := p[""]; ok {
		keys = append(keys, "")
	}
	var out syntax.Expr
	for _, k := range keys {
		v := p[k]
		neg := v < 0 && out != nil
		if neg {
			v = -v
		}
		var term syntax.Expr
		for _, a := range atomsOf(k) {
			var x syntax.Expr
			if a == "step" {
				x = lower.Name(pos, "step")
			} else {
				x = lower.Name(pos, strings.TrimPrefix(a, "p:"))
			}
			if term == nil {
				term = x
			} else {
				term = &syntax.Binary{Pos: pos, Op: "*", X: term, Y: x}
			}
		}
		switch {
		case term == nil:
			term = lower.IntLit(pos, v)
		case v != 1:
			term = &syntax.Binary{Pos: pos, Op: "*", X: lower.IntLit(pos, v), Y: term}
		}
		switch {
		case out == nil:
			out = term
		case neg:
			out = &syntax.Binary{Pos: pos, Op: "-", X: out, Y: term}
		default:
			out = &syntax.Binary{Pos: pos, Op: "+", X: out, Y: term}
		}
	}
	return out
}
