// Package sema checks a parsed .stencil program and builds its IR: it resolves names, assigns
// types, unrolls sums, folds constants and turns neighbour reads into constant offsets.
package sema

import (
	"fmt"
	"sort"
	"strings"

	"tempest/internal/diag"
	"tempest/internal/ir"
	"tempest/internal/syntax"
)

// Options adjust checking.
type Options struct {
	// DefaultType, when set, replaces the program's `type` declaration, so one program runs in
	// float and double without edits.
	DefaultType *ir.Type
}

// MaxSumTerms bounds the terms one sum may unroll into.
const MaxSumTerms = 20000

// Check builds the IR of f or returns every diagnostic found.
func Check(f *syntax.File, opt Options) (*ir.Program, error) {
	c := &checker{src: f.Src, prog: &ir.Program{Source: f.Src.Name, DefaultType: ir.F64},
		params: map[string]*ir.Param{}, grids: map[string]*ir.Grid{}, lets: map[string]*ir.Let{},
		observes: map[string]*ir.Observe{}}
	c.run(f, opt)
	if err := c.diags.Err(); err != nil {
		return nil, err
	}
	if c.bailed {
		// A declaration was dropped without a word: the program would run without it.
		panic("internal error: sema abandoned an expression without a diagnostic")
	}
	return c.prog, nil
}

type checker struct {
	src    *diag.Source
	diags  diag.List
	prog   *ir.Program
	params map[string]*ir.Param
	grids  map[string]*ir.Grid
	lets   map[string]*ir.Let
	// observes holds the checked observables, for the until test.
	observes map[string]*ir.Observe
	decls    map[string]diag.Pos // every declared name, for duplicate checks
	// updated marks grids with an update, checked or not, so a failed update does not also
	// report a missing one.
	updated map[string]bool
	// failed marks parameters and bindings whose declaration had an error.
	failed map[string]bool
	// checking marks the parameter or binding whose value is being checked, which that
	// value cannot use.
	checking map[string]string // the keyword that declares it: param or let
	// bailed says some expression was abandoned after an error: then there must be one.
	bailed bool
	// laterLets and laterParams hold the bindings and parameters not yet checked, for a clear
	// message on forward references.
	laterLets, laterParams map[string]diag.Pos
	// consts and litType serve ConstValue: named constants, and the type number literals take
	// (nil: untyped, as in programs).
	consts  map[string]operand
	litType *ir.Type
	// observeNames holds every observable's name, for a clear message where one is misused.
	observeNames map[string]bool
}

func (c *checker) errorf(pos diag.Pos, hint, format string, args ...any) {
	c.diags.Add(c.src, pos, hint, format, args...)
}

// bail unwinds out of one expression after its first error.
type bail struct{}

func (c *checker) fail(pos diag.Pos, hint, format string, args ...any) {
	c.errorf(pos, hint, format, args...)
	panic(bail{})
}

// guard runs f, turning a bail into a recorded failure.
func (c *checker) guard(f func()) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			if _, is := r.(bail); !is {
				panic(r)
			}
			c.bailed = true
			ok = false
		}
	}()
	f()
	return true
}

var reserved = map[string]bool{"step": true, "true": true, "false": true, "size": true, "rand": true,
	"select": true, "f32": true, "f64": true, "i32": true, "i64": true}

func (c *checker) declare(id syntax.Ident, what string) bool {
	if reserved[id.Name] || ir.FunArity[id.Name] > 0 {
		c.errorf(id.Pos, "choose another name", "%s name %q is reserved", what, id.Name)
		return false
	}
	if prev, ok := c.decls[id.Name]; ok {
		c.errorf(id.Pos, fmt.Sprintf("%q was already declared at line %d", id.Name, prev.Line), "%s %q redeclared", what, id.Name)
		return false
	}
	c.decls[id.Name] = id.Pos
	return true
}

func (c *checker) run(f *syntax.File, opt Options) {
	c.decls = map[string]diag.Pos{}
	c.updated = map[string]bool{}
	c.failed = map[string]bool{}
	c.checking = map[string]string{}
	var (
		axesDecl  *syntax.AxesDecl
		typeDecl  *syntax.TypeDecl
		gridDecls []*syntax.GridDecl
		params    []*syntax.ParamDecl
		lets      []*syntax.LetDecl
		updates   []*syntax.UpdateDecl
		observes  []*syntax.ObserveDecl
		untils    []*syntax.UntilDecl
		named     bool
	)
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *syntax.StencilDecl:
			if named {
				c.errorf(d.Pos, "a file holds one stencil", "second stencil declaration")
			}
			named = true
			c.prog.Name = d.Name.Name
		case *syntax.AxesDecl:
			if axesDecl != nil {
				c.errorf(d.Pos, "declare the axes once", "second axes declaration")
				continue
			}
			axesDecl = d
		case *syntax.TypeDecl:
			if typeDecl != nil {
				c.errorf(d.Pos, "declare the default type once", "second type declaration")
				continue
			}
			typeDecl = d
		case *syntax.ParamDecl:
			params = append(params, d)
		case *syntax.GridDecl:
			gridDecls = append(gridDecls, d)
		case *syntax.LetDecl:
			lets = append(lets, d)
		case *syntax.UpdateDecl:
			updates = append(updates, d)
		case *syntax.ObserveDecl:
			observes = append(observes, d)
		case *syntax.UntilDecl:
			untils = append(untils, d)
		}
	}
	if !named {
		c.prog.Name = strings.TrimSuffix(baseName(c.src.Name), ".stencil")
	}
	if axesDecl == nil {
		c.errorf(diag.Pos{Line: 1, Col: 1}, "declare the grid's axes, slowest first, e.g. `axes y, x`", "the program declares no axes")
		return
	}
	if len(axesDecl.Names) > 3 {
		c.errorf(axesDecl.Names[3].Pos, "Tempest handles 1D, 2D and 3D grids", "too many axes (%d)", len(axesDecl.Names))
		return
	}
	for _, a := range axesDecl.Names {
		if c.declare(a, "axis") {
			c.prog.Axes = append(c.prog.Axes, a.Name)
		}
	}
	if len(c.prog.Axes) != len(axesDecl.Names) {
		return
	}
	if typeDecl != nil {
		t, ok := ir.ParseType(typeDecl.Type.Name)
		if !ok {
			c.errorf(typeDecl.Type.Pos, "element types are f32, f64, i32 and i64", "unknown type %q", typeDecl.Type.Name)
		}
		c.prog.DefaultType = t
	}
	if opt.DefaultType != nil {
		c.prog.DefaultType = *opt.DefaultType
	}
	c.laterParams = map[string]diag.Pos{}
	for _, p := range params {
		if _, dup := c.laterParams[p.Name.Name]; !dup {
			c.laterParams[p.Name.Name] = p.Name.Pos
		}
	}
	for _, p := range params {
		delete(c.laterParams, p.Name.Name)
		c.param(p)
	}
	// Grids are declared before any expression is checked so that clauses and updates may name
	// grids in any order.
	for _, g := range gridDecls {
		c.gridHeader(g)
	}
	for _, g := range gridDecls {
		if c.grids[g.Name.Name] != nil && c.grids[g.Name.Name].Index < len(c.prog.Grids) {
			c.gridClauses(g, c.grids[g.Name.Name])
		}
	}
	c.observeNames = map[string]bool{}
	for _, o := range observes {
		c.observeNames[o.Name.Name] = true
	}
	c.laterLets = map[string]diag.Pos{}
	for _, l := range lets {
		if _, dup := c.laterLets[l.Name.Name]; !dup {
			c.laterLets[l.Name.Name] = l.Name.Pos
		}
	}
	for _, l := range lets {
		delete(c.laterLets, l.Name.Name)
		c.let(l)
	}
	for _, u := range updates {
		c.update(u)
	}
	for _, o := range observes {
		c.observe(o)
	}
	for i, u := range untils {
		if i > 0 {
			c.errorf(u.Pos, fmt.Sprintf("combine the tests with || (the first is at line %d)", untils[0].Pos.Line), "second until declaration")
			continue
		}
		c.until(u)
	}
	for _, g := range gridDecls {
		gr := c.grids[g.Name.Name]
		if gr != nil && !gr.Input && !c.updated[gr.Name] {
			c.errorf(g.Name.Pos, fmt.Sprintf("add `update %s = ...`, or declare it `input` if it never changes", gr.Name), "state grid %q has no update", gr.Name)
		}
	}
	if len(gridDecls) == 0 {
		c.errorf(axesDecl.Pos, "declare a grid: state u: f32 init 0", "the program declares no grids")
	} else if len(updates) == 0 && c.diags.Err() == nil {
		c.errorf(axesDecl.Pos, "add `update u = ...` for a state grid", "the program updates no grid")
	}
	for _, g := range c.prog.Grids {
		if g.Update != nil {
			g.Rim = rim(g)
		}
	}
}

func baseName(s string) string {
	if i := strings.LastIndexAny(s, "/\\"); i >= 0 {
		return s[i+1:]
	}
	return s
}

func (c *checker) typeName(id *syntax.Ident) (ir.Type, bool) {
	if id == nil {
		return c.prog.DefaultType, true
	}
	t, ok := ir.ParseType(id.Name)
	if !ok {
		c.errorf(id.Pos, "element types are f32, f64, i32 and i64", "unknown type %q", id.Name)
	}
	return t, ok
}

func (c *checker) param(d *syntax.ParamDecl) {
	if !c.declare(d.Name, "parameter") {
		return
	}
	c.failed[d.Name.Name] = true
	c.checking[d.Name.Name] = "param"
	defer delete(c.checking, d.Name.Name)
	c.guard(func() {
		v := c.expr(d.Default, &scope{ctx: ctxConst})
		k, ok := v.e.(*ir.Const)
		if !ok {
			c.fail(d.Default.ExprPos(), "a default is a constant such as 0.25 or 2*3.0", "parameter default is not a constant")
		}
		var t ir.Type
		switch {
		case d.Type != nil:
			var ok bool
			if t, ok = c.typeName(d.Type); !ok {
				return
			}
		case v.untyped == untypedInt:
			t = ir.I32
		case v.untyped == untypedFloat:
			t = c.floatType()
		default:
			t = k.V.T
		}
		if t == ir.Bool || k.V.T == ir.Bool {
			c.fail(d.Default.ExprPos(), "parameters are numbers", "boolean parameter")
		}
		val := c.convert(v, t, d.Default.ExprPos(), "parameter default").e.(*ir.Const).V
		p := &ir.Param{Name: d.Name.Name, Type: t, Default: val, Index: len(c.prog.Params)}
		c.params[p.Name] = p
		c.prog.Params = append(c.prog.Params, p)
		delete(c.failed, p.Name)
	})
}

// floatType is the type untyped float constants and int-to-float promotions take.
func (c *checker) floatType() ir.Type {
	if c.prog.DefaultType.IsFloat() {
		return c.prog.DefaultType
	}
	return ir.F64
}

func (c *checker) gridHeader(d *syntax.GridDecl) {
	if !c.declare(d.Name, "grid") {
		return
	}
	t, ok := c.typeName(d.Type)
	if !ok {
		return
	}
	g := &ir.Grid{Name: d.Name.Name, Type: t, Input: d.Input, Levels: 1, Index: len(c.prog.Grids)}
	if d.Levels != nil {
		if d.Levels.Val != 1 && d.Levels.Val != 2 {
			c.errorf(d.Levels.Pos, "a grid keeps 1 or 2 time levels", "levels %d not supported", d.Levels.Val)
		} else {
			g.Levels = int(d.Levels.Val)
		}
	}
	if d.Prev != nil {
		if d.Levels != nil && d.Levels.Val == 1 {
			c.errorf(d.Levels.Pos, "drop `levels 1`: a prev clause keeps two levels", "grid %s says levels 1 but gives a previous level", g.Name)
		}
		g.Levels = 2
	}
	if g.Input && g.Levels > 1 {
		c.errorf(d.Pos, "only state grids have a previous level", "input grid %q cannot keep two time levels", g.Name)
	}
	if !g.Input && d.Layers != nil {
		c.errorf(d.Layers.ExprPos(), "declare layered data as `input`", "state grid %q cannot have layers", g.Name)
	}
	c.grids[g.Name] = g
	c.prog.Grids = append(c.prog.Grids, g)
}

func (c *checker) gridClauses(d *syntax.GridDecl, g *ir.Grid) {
	if d.Layers != nil {
		c.guard(func() {
			v := c.expr(d.Layers, &scope{ctx: ctxLayers})
			g.Layers = c.convert(v, ir.I32, d.Layers.ExprPos(), "layer count").e
		})
	}
	if d.Init != nil {
		c.guard(func() {
			v := c.expr(d.Init, &scope{ctx: ctxInit})
			g.Init = c.convert(v, g.Type, d.Init.ExprPos(), "initial value").e
		})
	}
	if d.Prev != nil {
		c.guard(func() {
			v := c.expr(d.Prev, &scope{ctx: ctxInit})
			g.Prev = c.convert(v, g.Type, d.Prev.ExprPos(), "initial previous value").e
		})
	}
	g.BC = make([]ir.BC, len(c.prog.Axes))
	seen := map[int]bool{}
	for _, b := range d.Boundary {
		bc, ok := c.bc(b, g)
		if !ok {
			continue
		}
		if b.Axis == nil {
			for i := range g.BC {
				g.BC[i] = bc
			}
			continue
		}
		ax := c.axisIndex(b.Axis.Name)
		if ax < 0 {
			c.errorf(b.Axis.Pos, "axes are "+strings.Join(c.prog.Axes, ", "), "unknown axis %q", b.Axis.Name)
			continue
		}
		if seen[ax] {
			c.errorf(b.Axis.Pos, "give one condition per axis", "axis %s has two boundary conditions", b.Axis.Name)
		}
		seen[ax] = true
		g.BC[ax] = bc
	}
}

func (c *checker) axisIndex(name string) int {
	for i, a := range c.prog.Axes {
		if a == name {
			return i
		}
	}
	return -1
}

func (c *checker) bc(b syntax.BCSpec, g *ir.Grid) (ir.BC, bool) {
	kinds := map[string]ir.BCKind{"clamp": ir.Clamp, "constant": ir.Constant, "periodic": ir.Periodic,
		"mirror": ir.Mirror, "fixed": ir.Fixed, "edge": ir.Edge}
	k, ok := kinds[b.Kind.Name]
	if !ok {
		c.errorf(b.Kind.Pos, "boundary conditions are constant(v), clamp, periodic, mirror, fixed and edge(expr)", "unknown boundary condition %q", b.Kind.Name)
		return ir.BC{}, false
	}
	bc := ir.BC{Kind: k}
	needsArg := k == ir.Constant || k == ir.Edge
	if needsArg != (b.Arg != nil) {
		if needsArg {
			c.errorf(b.Kind.Pos, fmt.Sprintf("write %s(...)", b.Kind.Name), "%s needs an argument", b.Kind.Name)
		} else {
			c.errorf(b.Arg.ExprPos(), fmt.Sprintf("write %s without an argument", b.Kind.Name), "%s takes no argument", b.Kind.Name)
		}
		return bc, false
	}
	ok = c.guard(func() {
		switch k {
		case ir.Constant:
			v := c.expr(b.Arg, &scope{ctx: ctxParams})
			bc.Value = c.convert(v, g.Type, b.Arg.ExprPos(), "boundary constant").e
		case ir.Edge:
			v := c.expr(b.Arg, &scope{ctx: ctxEdge, grid: g})
			bc.Value = c.convert(v, g.Type, b.Arg.ExprPos(), "edge value").e
		}
	})
	return bc, ok
}

func (c *checker) let(d *syntax.LetDecl) {
	if !c.declare(d.Name, "binding") {
		return
	}
	c.failed[d.Name.Name] = true
	c.checking[d.Name.Name] = "let"
	defer delete(c.checking, d.Name.Name)
	c.guard(func() {
		v := c.expr(d.Value, &scope{ctx: ctxCell})
		// Booleans are allowed: they feed select and logic.
		l := &ir.Let{Name: d.Name.Name, Value: c.settle(v), Index: len(c.prog.Lets)}
		c.lets[l.Name] = l
		c.prog.Lets = append(c.prog.Lets, l)
		delete(c.failed, l.Name)
	})
}

func (c *checker) update(d *syntax.UpdateDecl) {
	g := c.grids[d.Name.Name]
	if g == nil {
		hint := ""
		if _, isLet := c.lets[d.Name.Name]; isLet {
			hint = "only state grids are updated"
		} else {
			hint = c.suggest(d.Name.Name)
		}
		c.errorf(d.Name.Pos, hint, "update of unknown grid %q", d.Name.Name)
		return
	}
	if g.Input {
		c.errorf(d.Name.Pos, "declare it `state` to update it every step", "input grid %q is read-only", g.Name)
		return
	}
	if c.updated[g.Name] {
		c.errorf(d.Name.Pos, "combine the two expressions into one update", "grid %q is updated twice", g.Name)
		return
	}
	c.updated[g.Name] = true
	c.guard(func() {
		v := c.expr(d.Value, &scope{ctx: ctxCell})
		u := &ir.Update{Grid: g, Value: c.convert(v, g.Type, d.Value.ExprPos(), "update").e}
		g.Update = u
		c.prog.Updates = append(c.prog.Updates, u)
	})
}

// observe checks `observe NAME = OP(EXPR)`: EXPR is a per-cell number that may also read the
// previous level of one-level state grids (the values before the last step).
func (c *checker) observe(d *syntax.ObserveDecl) {
	if !c.declare(d.Name, "observable") {
		return
	}
	c.failed[d.Name.Name] = true
	c.guard(func() {
		v := c.expr(d.Value, &scope{ctx: ctxObserve})
		e := c.settle(v)
		if e.Type() == ir.Bool {
			c.fail(d.Value.ExprPos(), fmt.Sprintf("write %s(select(cond, 1, 0)) to count the cells where it holds", d.Op.Name), "an observable reduces numbers, not conditions")
		}
		o := &ir.Observe{Name: d.Name.Name, Op: d.Op.Name, Value: e, Index: len(c.prog.Observes)}
		c.observes[o.Name] = o
		c.prog.Observes = append(c.prog.Observes, o)
		delete(c.failed, o.Name)
	})
}

// until checks the convergence test: a condition of observables, parameters and literals.
func (c *checker) until(d *syntax.UntilDecl) {
	c.guard(func() {
		v := c.expr(d.Cond, &scope{ctx: ctxUntil})
		if v.e.Type() != ir.Bool {
			c.fail(d.Cond.ExprPos(), "compare an observable, e.g. until maxdiff < 1e-6", "until needs a condition, not a %s value", v.e.Type())
		}
		if _, ok := v.e.(*ir.Const); ok {
			c.fail(d.Cond.ExprPos(), "test an observable, e.g. until maxdiff < 1e-6", "until's condition is a constant")
		}
		c.prog.Until = v.e
	})
}

// rim is, per axis, how many cells a fixed boundary keeps: the update's reach along that axis.
func rim(g *ir.Grid) []int {
	r := make([]int, len(g.BC))
	reach := ir.Reach(g.Update.Value, len(g.BC))
	for a, bc := range g.BC {
		if bc.Kind == ir.Fixed {
			r[a] = reach[a]
		}
	}
	return r
}

// suggest names declared things close to name, for "undefined" hints.
func (c *checker) suggest(name string) string {
	var best []string
	for n := range c.decls {
		if diag.EditDistance(n, name) <= 2 {
			best = append(best, n)
		}
	}
	sort.Strings(best)
	if len(best) > 0 {
		return fmt.Sprintf("did you mean %s?", strings.Join(best, " or "))
	}
	return ""
}
