package cloop

import (
	"fmt"
	"strings"

	"tempest/internal/diag"
	"tempest/internal/frontend/cc"
	"tempest/internal/frontend/lower"
	"tempest/internal/ir"
	"tempest/internal/syntax"
)

// loop is one spatial loop: for (v = lo; v < hi; v++).
type loop struct {
	v    string
	node *cc.For
	lo   cc.Expr
	hi   cc.Expr // exclusive when incl is false
	incl bool    // the condition is v <= hi
}

// nest is one spatial loop nest inside the time loop and what its body computes.
type nest struct {
	pos    diag.Pos
	loops  []*loop // by axis: loops[k] runs over axis k
	body   []cc.Stmt
	stores []*store
	reads  []*read
	b      *lower.Builder
}

// store is one assignment to an array element.
type store struct {
	arr   *array
	tk    int64 // time offset k of (t+k)
	pos   diag.Pos
	value syntax.Expr
}

// read is one array element read.
type read struct {
	arr *array
	tk  int64
	off []int
	pos diag.Pos
	ix  *syntax.Index // patched with the level once the time structure is known
}

// translate recognises the time loop and the spatial loop nests in the region's statements,
// translates their bodies and returns the .stencil program with each state grid's rim.
func (t *translator) translate(stmts []cc.Stmt) (*syntax.File, map[string][]int) {
	// The region holds one time loop.
	var top []cc.Stmt
	for _, s := range stmts {
		switch s.(type) {
		case *cc.Pragma, *cc.Empty:
			continue
		}
		top = append(top, s)
	}
	if len(top) == 0 {
		t.errorf(t.scopPos, "put the time loop between #pragma scop and #pragma endscop", "the scop region is empty")
		return nil, nil
	}
	for _, s := range top {
		if w, ok := s.(*cc.While); ok {
			t.unsupported(w, "")
			return nil, nil
		}
	}
	if len(top) > 1 {
		t.errorf(top[1].Pos(), "the region holds one time loop; move other code out of it", "unexpected statement after the time loop")
		return nil, nil
	}
	tl, ok := unblock(top[0]).(*cc.For)
	if !ok {
		t.unsupported(top[0], "the region must hold a time loop: for (t = 0; t < T; t++)")
		return nil, nil
	}
	tv, t0, ok := t.timeLoop(tl)
	if !ok {
		return nil, nil
	}
	t.timeVar, t.t0, t.t0ok = tv, t0, true
	if _, isConst := constInt(loopInit(tl), 0); !isConst {
		t.t0ok = false
	}

	// The time loop's body: spatial loop nests, in order.
	var nests []*nest
	for _, s := range flatten(tl.Body) {
		switch s := s.(type) {
		case *cc.Pragma, *cc.Empty:
			continue
		case *cc.For:
			n := t.spatialNest(s)
			if n == nil {
				return nil, nil
			}
			nests = append(nests, n)
		default:
			if es, ok := s.(*cc.ExprStmt); ok {
				if a, ok := es.X.(*cc.Assign); ok {
					if _, isName := a.L.(*cc.Name); isName {
						if _, isName := a.R.(*cc.Name); isName {
							t.errorf(s.Pos(), "write A[(t+1)%2][i][j] = f(A[t%2][...]), or copy B back into A with a loop nest",
								"swapping arrays through pointers is not supported")
							return nil, nil
						}
					}
				}
			}
			t.unsupported(s, "the time loop may hold only spatial loop nests")
			return nil, nil
		}
	}
	if len(nests) == 0 {
		t.errorf(tl.P, "put the spatial loops inside the time loop", "the time loop holds no loop nest")
		return nil, nil
	}
	t.axes = nil
	for _, l := range nests[0].loops {
		t.axes = append(t.axes, t.names.Fresh(l.v))
	}
	for _, n := range nests[1:] {
		if len(n.loops) != len(nests[0].loops) {
			t.errorf(n.pos, "every loop nest in the time loop must have the same dimensions", "this loop nest has %s, the first has %d",
				plural(len(n.loops), "spatial loop"), len(nests[0].loops))
			return nil, nil
		}
	}
	if len(t.axes) > 3 {
		t.errorf(nests[0].loops[3].node.P, "Tempest handles 1D, 2D and 3D grids", "too many spatial loops (%d)", len(t.axes))
		return nil, nil
	}
	t.arrays = map[string]*array{}
	t.params = map[string]*param{}

	// Translate each nest's body.
	types := map[string]lower.Typ{}
	for _, a := range t.axes {
		types[a] = lower.Typ{T: ir.I32}
	}
	t.elem, t.declElem = ir.F32, ir.F32
	if first := t.firstStore(nests[0]); first != "" {
		if d := t.decls[first]; d != nil {
			if ty, ok := elemOf(d.typ); ok {
				t.elem, t.declElem = ty, ty
			}
		}
	}
	if t.opt.DefaultType != nil {
		t.elem = *t.opt.DefaultType
	}
	for _, n := range nests {
		h := &hooks{t: t, n: n}
		n.b = &lower.Builder{Src: t.src, Diags: t.diags, Names: t.names, Elem: t.elem, Hooks: h, Types: types,
			ElemAliases: map[string]bool{ElemMacro: true}, Reserved: t.reservedFor(n)}
		n.b.Run(n.body)
		if n.b.Failed() {
			return nil, nil
		}
		if len(n.stores) == 0 {
			t.errorf(n.pos, "the loop nest must assign an array element, e.g. A[(t+1)%2][i][j] = ...", "the loop nest stores nothing")
			return nil, nil
		}
	}
	if t.diags.Err() != nil {
		return nil, nil
	}
	grids, ok := t.timeStructure(nests)
	if !ok {
		return nil, nil
	}
	rims, ok := t.boundary(grids)
	if !ok {
		return nil, nil
	}
	return t.assemble(nests, grids), rims
}

// grid is a state grid of the program and the statement that updates it.
type grid struct {
	arr    *array
	st     *store
	n      *nest
	levels int
}

// unblock returns the single statement inside nested one-statement blocks.
func unblock(s cc.Stmt) cc.Stmt {
	for {
		b, ok := s.(*cc.Block)
		if !ok {
			return s
		}
		var inner []cc.Stmt
		for _, x := range b.List {
			switch x.(type) {
			case *cc.Pragma, *cc.Empty:
				continue
			}
			inner = append(inner, x)
		}
		if len(inner) != 1 {
			return s
		}
		s = inner[0]
	}
}

// flatten lists the statements of a block (or the statement itself).
func flatten(s cc.Stmt) []cc.Stmt {
	if b, ok := s.(*cc.Block); ok {
		return b.List
	}
	return []cc.Stmt{s}
}

// unsupported reports a statement the loop-nest structure does not allow, naming its kind.
func (t *translator) unsupported(s cc.Stmt, hint string) {
	what := "this statement"
	switch s := s.(type) {
	case *cc.While:
		if s.Do {
			t.errorf(s.P, "AN5D's loop nests are counted for loops", "do-while loops are not supported")
		} else {
			t.errorf(s.P, "AN5D's loop nests are counted for loops", "while loops are not supported")
		}
		return
	case *cc.If:
		what = "an if statement"
	case *cc.Decl:
		what = "a declaration"
	case *cc.ExprStmt:
		what = "an expression statement"
	case *cc.Return:
		what = "a return statement"
	case *cc.Jump:
		what = s.Kind
	case *cc.Unsupported:
		what = s.What
	}
	t.errorf(s.Pos(), hint, "%s is not supported here", what)
}

// loopVarOf reads the loop variable, its position and its start from a for header:
// `int v = e` or `v = e`.
func loopVarOf(f *cc.For) (string, diag.Pos, cc.Expr) {
	switch in := f.Init.(type) {
	case *cc.Decl:
		if len(in.Vars) == 1 && in.Vars[0].Init != nil {
			return in.Vars[0].Name.Name, in.Vars[0].Name.P, in.Vars[0].Init
		}
	case *cc.ExprStmt:
		if a, ok := in.X.(*cc.Assign); ok && a.Op == "=" {
			if n, ok := a.L.(*cc.Name); ok {
				return n.Name, n.P, a.R
			}
		}
	}
	return "", f.P, nil
}

func loopInit(f *cc.For) cc.Expr {
	_, _, e := loopVarOf(f)
	return e
}

// stepsByOne reports whether post is v++, ++v, v += 1 or v = v + 1.
func stepsByOne(post cc.Expr, v string) bool {
	isV := func(e cc.Expr) bool {
		n, ok := e.(*cc.Name)
		return ok && n.Name == v
	}
	switch p := post.(type) {
	case *cc.Postfix:
		return p.Op == "++" && isV(p.X)
	case *cc.Unary:
		return p.Op == "++" && isV(p.X)
	case *cc.Assign:
		one := func(e cc.Expr) bool { k, ok := constInt(e, 0); return ok && k == 1 }
		if p.Op == "+=" {
			return isV(p.L) && one(p.R)
		}
		if b, ok := p.R.(*cc.Binary); ok && p.Op == "=" && b.Op == "+" {
			return isV(p.L) && (isV(b.X) && one(b.Y) || isV(b.Y) && one(b.X))
		}
	}
	return false
}

// timeLoop checks the time loop's header and returns its variable and start.
func (t *translator) timeLoop(f *cc.For) (string, int64, bool) {
	v, _, init := loopVarOf(f)
	if v == "" {
		t.errorf(f.P, "write the time loop as for (t = 0; t < T; t++)", "cannot tell the time loop's variable")
		return "", 0, false
	}
	if f.Post == nil || !stepsByOne(f.Post, v) {
		p := f.P
		if f.Post != nil {
			p = f.Post.Pos()
		}
		t.errorf(p, fmt.Sprintf("step the time loop by one: %s++", v), "the time loop must advance one step at a time")
		return "", 0, false
	}
	if f.Cond == nil {
		t.errorf(f.P, fmt.Sprintf("write %s < T", v), "the time loop has no condition")
		return "", 0, false
	}
	t0, _ := constInt(init, 0)
	return v, t0, true
}

// spatialNest reads the chain of loops that run over the array's dimensions and the body
// inside them. The spatial loops are the outermost loops whose variables index the stored
// array; loops further in are part of the body (unrolled at compile time).
func (t *translator) spatialNest(f *cc.For) *nest {
	var chain []*cc.For
	var body []cc.Stmt
	s := cc.Stmt(f)
	for {
		fl, ok := unblock(s).(*cc.For)
		if !ok {
			body = flatten(s)
			break
		}
		chain = append(chain, fl)
		s = fl.Body
	}
	st := findStore(body)
	var loops []*loop
	for k, fl := range chain {
		v, vpos, init := loopVarOf(fl)
		if st == nil || v == "" || !mentions(st, v) {
			// This loop and those inside it belong to the body.
			body = []cc.Stmt{chain[k]}
			break
		}
		if fl.Post == nil || !stepsByOne(fl.Post, v) {
			p := fl.P
			if fl.Post != nil {
				p = fl.Post.Pos()
			}
			t.errorf(p, fmt.Sprintf("step the loop by one: %s++", v), "spatial loops must step by one")
			return nil
		}
		l := &loop{v: v, node: fl, lo: init}
		if !t.loopBound(l, fl, vpos) {
			return nil
		}
		loops = append(loops, l)
		if k == len(chain)-1 {
			break
		}
	}
	if st == nil {
		t.errorf(f.P, "the loop nest must assign an array element, e.g. A[(t+1)%2][i][j] = ...", "the loop nest stores nothing")
		return nil
	}
	if len(loops) == 0 {
		t.errorf(f.P, "the stored array's indices must be the loop variables", "no spatial loop")
		return nil
	}
	for _, l := range loops {
		if l.v == t.timeVar {
			t.errorf(l.node.P, "", "the spatial loop reuses the time loop's variable %s", l.v)
			return nil
		}
	}
	n := &nest{pos: f.P, body: body}
	// Order the loops by the array dimension their variable indexes.
	idx := indexChain(st.L)
	spatial := idx
	if len(idx) > 0 && mentionsExpr(idx[0], t.timeVar) {
		spatial = idx[1:]
	}
	if len(spatial) != len(loops) {
		for _, ix := range spatial {
			var vars []string
			for _, l := range loops {
				if mentionsExpr(ix, l.v) {
					vars = append(vars, l.v)
				}
			}
			if len(vars) > 1 {
				t.errorf(ix.Pos(), fmt.Sprintf("index the array once per spatial loop, e.g. %s", example(len(loops))),
					"linear addressing is not supported: index %s combines the loop variables %s", cc.Format(ix), strings.Join(vars, " and "))
				return nil
			}
		}
		t.errorf(st.P, fmt.Sprintf("index the array once per spatial loop, e.g. %s; linear addressing such as A[i*N + j] is not supported",
			example(len(loops))), "the stored array has %d spatial index(es) but the nest has %s",
			len(spatial), plural(len(loops), "spatial loop"))
		return nil
	}
	for k, ix := range spatial {
		nm, ok := ix.(*cc.Name)
		var found *loop
		if ok {
			for _, l := range loops {
				if l.v == nm.Name {
					found = l
				}
			}
		}
		if found == nil {
			t.errorf(ix.Pos(), "the statement writes the element at the loop variables themselves, e.g. A[(t+1)%2][i][j]",
				"index %d of the stored array is %s, not a loop variable", k+1, cc.Format(ix))
			return nil
		}
		for _, l := range n.loops {
			if l == found {
				t.errorf(ix.Pos(), "", "loop variable %s indexes two dimensions", found.v)
				return nil
			}
		}
		n.loops = append(n.loops, found)
	}
	return n
}

func example(dims int) string {
	return "A[(t+1)%2]" + []string{"[i]", "[i][j]", "[i][j][k]"}[min(max(dims, 1), 3)-1]
}

// loopBound reads the loop's condition: v < hi, v <= hi, hi > v or hi >= v.
func (t *translator) loopBound(l *loop, fl *cc.For, vpos diag.Pos) bool {
	if l.lo == nil {
		t.errorf(fl.P, fmt.Sprintf("write for (%s = R; %s < N - R; %s++)", l.v, l.v, l.v), "cannot read the loop's start")
		return false
	}
	c, ok := fl.Cond.(*cc.Binary)
	if ok {
		isV := func(e cc.Expr) bool { n, ok := e.(*cc.Name); return ok && n.Name == l.v }
		switch {
		case isV(c.X) && (c.Op == "<" || c.Op == "<="):
			l.hi, l.incl = c.Y, c.Op == "<="
			return true
		case isV(c.Y) && (c.Op == ">" || c.Op == ">="):
			l.hi, l.incl = c.X, c.Op == ">="
			return true
		}
	}
	p := fl.P
	if fl.Cond != nil {
		p = fl.Cond.Pos()
	}
	t.errorf(p, fmt.Sprintf("write the condition as %s < N - R or %s <= N", l.v, l.v), "cannot read the loop's end")
	return false
}

// findStore returns the first assignment to an array element in the statements.
func findStore(list []cc.Stmt) *cc.Assign {
	var found *cc.Assign
	var walk func(s cc.Stmt, depth int)
	walk = func(s cc.Stmt, depth int) {
		if found != nil || depth > 200 {
			return
		}
		switch s := s.(type) {
		case *cc.Block:
			for _, x := range s.List {
				walk(x, depth+1)
			}
		case *cc.ExprStmt:
			if a, ok := s.X.(*cc.Assign); ok {
				if _, isIndex := a.L.(*cc.Index); isIndex {
					found = a
				}
			}
		case *cc.If:
			walk(s.Then, depth+1)
			if s.Else != nil {
				walk(s.Else, depth+1)
			}
		case *cc.For:
			walk(s.Body, depth+1)
		}
	}
	for _, s := range list {
		walk(s, 0)
	}
	return found
}

// indexChain returns the index expressions of a[i][j][k], outermost first.
func indexChain(e cc.Expr) []cc.Expr {
	var out []cc.Expr
	for {
		ix, ok := e.(*cc.Index)
		if !ok {
			break
		}
		out = append([]cc.Expr{ix.I}, out...)
		e = ix.X
	}
	return out
}

// baseOf returns the array name under an index chain, or nil.
func baseOf(e cc.Expr) *cc.Name {
	for {
		switch x := e.(type) {
		case *cc.Index:
			e = x.X
		case *cc.Name:
			return x
		default:
			return nil
		}
	}
}

func mentions(a *cc.Assign, v string) bool {
	for _, ix := range indexChain(a.L) {
		if mentionsExpr(ix, v) {
			return true
		}
	}
	return false
}

func mentionsExpr(e cc.Expr, v string) bool {
	found := false
	var walk func(e cc.Expr, depth int)
	walk = func(e cc.Expr, depth int) {
		if found || depth > 200 || e == nil {
			return
		}
		d := depth + 1
		switch x := e.(type) {
		case *cc.Name:
			found = x.Name == v
		case *cc.Unary:
			walk(x.X, d)
		case *cc.Binary:
			walk(x.X, d)
			walk(x.Y, d)
		case *cc.Cast:
			walk(x.X, d)
		case *cc.Index:
			walk(x.X, d)
			walk(x.I, d)
		case *cc.Call:
			for _, a := range x.Args {
				walk(a, d)
			}
		case *cc.Cond:
			walk(x.C, d)
			walk(x.A, d)
			walk(x.B, d)
		case *cc.Postfix:
			walk(x.X, d)
		}
	}
	walk(e, 0)
	return found
}

// firstStore names the array the first nest stores into.
func (t *translator) firstStore(n *nest) string {
	if a := findStore(n.body); a != nil {
		if b := baseOf(a.L); b != nil {
			return b.Name
		}
	}
	return ""
}

func (t *translator) reservedFor(n *nest) map[string]string {
	r := map[string]string{}
	for _, l := range n.loops {
		r[l.v] = l.v + " is a loop variable"
	}
	if t.timeVar != "" {
		r[t.timeVar] = t.timeVar + " is the time loop's variable"
	}
	return r
}

// timeForm reads a time index: (t+k)%m, t%m, t+k or t. m is 0 without a modulus.
func (t *translator) timeForm(e cc.Expr) (k, m int64, ok bool) {
	if b, isBin := e.(*cc.Binary); isBin && b.Op == "%" {
		mod, isConst := constInt(b.Y, 0)
		if !isConst || mod < 1 {
			return 0, 0, false
		}
		k, _, ok := t.timeForm(b.X)
		if !ok {
			return 0, 0, false
		}
		return k, mod, true
	}
	l, isLin := t.linearOf(e, 0)
	if !isLin || len(l.terms) != 1 || l.terms[t.timeVar] != 1 {
		return 0, 0, false
	}
	return l.c, 0, true
}

// arrayOf registers (or finds) an array and checks that it is used with one rank and one time
// form throughout.
func (t *translator) arrayOf(b *lower.Builder, name *cc.Name, idx []cc.Expr, pos diag.Pos, dims int) (*array, int64) {
	timed := len(idx) > 0 && mentionsExpr(idx[0], t.timeVar)
	var tk, mod int64
	if timed {
		var ok bool
		tk, mod, ok = t.timeForm(idx[0])
		if !ok {
			b.Fail(idx[0].Pos(), fmt.Sprintf("write the time index as (%s+1)%%2 or %s%%2", t.timeVar, t.timeVar),
				"time index %s is not %s plus a constant, modulo a constant", cc.Format(idx[0]), t.timeVar)
		}
		if t.alt {
			b.Fail(idx[0].Pos(), "", "a time index cannot be mixed with arrays written without one")
		}
	}
	a := t.arrays[name.Name]
	if a == nil {
		a = &array{name: name.Name, rank: len(idx), timed: timed, mod: mod, pos: name.P}
		a.typ = t.elem
		if d := t.decls[name.Name]; d != nil {
			if ty, ok := elemOf(d.typ); ok && ty != t.declElem {
				a.typ = ty
			}
		}
		a.grid = t.names.Fresh(name.Name)
		b.Types[a.grid] = lower.Typ{T: a.typ}
		t.arrays[name.Name] = a
		t.order = append(t.order, name.Name)
	}
	spatial := len(idx)
	if timed {
		spatial--
	}
	switch {
	case len(idx) != a.rank || timed != a.timed:
		b.Fail(pos, "", "%s is indexed with %d indices here but %d at line %d", name.Name, len(idx), a.rank, a.pos.Line)
	case timed && mod != a.mod:
		b.Fail(idx[0].Pos(), "", "%s's time index uses modulus %d here but %d elsewhere", name.Name, mod, a.mod)
	case spatial != dims:
		b.Fail(pos, fmt.Sprintf("index the array once per spatial loop, e.g. %s; linear addressing such as A[i*N + j] is not supported", example(dims)),
			"%s has %d spatial index(es) but the loop nest has %s", name.Name, spatial, plural(dims, "spatial loop"))
	}
	return a, tk
}

// hooks give a loop body its arrays, loop variables and outside scalars.
type hooks struct {
	t *translator
	n *nest
}

func (h *hooks) Name(b *lower.Builder, n *cc.Name) syntax.Expr {
	t := h.t
	for k, l := range h.n.loops {
		if l.v == n.Name {
			return lower.Name(n.P, t.axes[k])
		}
	}
	if n.Name == t.timeVar {
		if t.alt {
			b.Fail(n.P, "", "%s cannot be used in the body when one time iteration computes two steps", n.Name)
		}
		if !t.t0ok {
			b.Fail(n.P, "start the time loop at a constant", "%s's start is not known", n.Name)
		}
		step := lower.Name(n.P, "step")
		if t.t0 == 0 {
			return step
		}
		return &syntax.Binary{Pos: n.P, Op: "+", X: step, Y: lower.IntLit(n.P, t.t0)}
	}
	if _, isArray := t.decls[n.Name]; isArray || t.arrays[n.Name] != nil {
		b.Fail(n.P, "index the array, e.g. A[t%2][i][j]; computing addresses is pointer arithmetic", "%s used as a pointer (pointer arithmetic) is not supported", n.Name)
	}
	if p := t.param(b, n); p != nil {
		return lower.Name(n.P, p.name)
	}
	if m := t.macros.Lookup(n.Name); m != nil && m.Func {
		b.Fail(n.P, "", "function-like macro %s is not supported", n.Name)
	}
	if at, ok := t.hidden[n.Name]; ok {
		b.Fail(n.P, fmt.Sprintf("the declaration at line %d is not in scope here (it is after the region or in a block closed before it); declare it before the region, in a block around it", at.Line),
			"undefined name %q", n.Name)
	}
	b.Fail(n.P, "declare it with a constant value outside the scop region (float c = 0.5f;) or #define it", "undefined name %q", n.Name)
	return nil
}

// param turns a scalar defined outside the region with a constant value into a parameter.
func (t *translator) param(b *lower.Builder, n *cc.Name) *param {
	if p := t.params[n.Name]; p != nil {
		return p
	}
	def, ok := t.defs[n.Name]
	if !ok {
		return nil
	}
	ty, ok := elemOf(t.defType[n.Name])
	if !ok {
		b.Fail(n.P, "declare it as int, long, float or double", "%s has type %s", n.Name, t.defType[n.Name])
	}
	if ty.IsFloat() && t.elem.IsFloat() {
		ty = t.elem
	}
	if ty.IsInt() && t.elem.IsInt() {
		ty = t.elem
	}
	v, ok := constValue(def, 0)
	if !ok {
		b.Fail(n.P, "only scalars with a constant initializer become parameters", "%s's value (%s) is not a constant", n.Name, cc.Format(def))
	}
	p := &param{name: t.names.Fresh(n.Name), typ: ty}
	t.paramOrder = append(t.paramOrder, p)
	if ty.IsFloat() {
		p.def = lower.FloatLit(n.P, v.Float())
	} else {
		if v.T.IsFloat() {
			v = ir.ConvertValue(v, ty)
		}
		p.def = lower.IntLit(n.P, v.I)
	}
	t.params[n.Name] = p
	b.Types[p.name] = lower.Typ{T: ty}
	return p
}

// constValue evaluates a scalar initializer: numbers, signs and arithmetic.
func constValue(e cc.Expr, depth int) (ir.Value, bool) {
	if depth > 100 {
		return ir.Value{}, false
	}
	d := depth + 1
	switch e := e.(type) {
	case *cc.Lit:
		if e.Val.IsFloat {
			return ir.Value{T: ir.F64, F: e.Val.Float}, true
		}
		return ir.Value{T: ir.I64, I: e.Val.Int}, true
	case *cc.Unary:
		x, ok := constValue(e.X, d)
		if !ok || e.Op != "-" && e.Op != "+" {
			return x, false
		}
		if e.Op == "-" {
			return ir.EvalUnary("-", x), true
		}
		return x, true
	case *cc.Cast:
		return constValue(e.X, d)
	case *cc.Binary:
		x, ok1 := constValue(e.X, d)
		y, ok2 := constValue(e.Y, d)
		if !ok1 || !ok2 || !strings.Contains("+-*/", e.Op) || len(e.Op) != 1 {
			return x, false
		}
		if x.T != y.T {
			x, y = ir.ConvertValue(x, ir.F64), ir.ConvertValue(y, ir.F64)
		}
		if x.T.IsInt() && e.Op == "/" && y.I == 0 {
			return x, false
		}
		return ir.EvalBinary(e.Op, x, y), true
	}
	return ir.Value{}, false
}

func (h *hooks) Member(b *lower.Builder, m *cc.Member) syntax.Expr {
	b.Fail(m.P, "", "structure fields are not supported")
	return nil
}

func (h *hooks) Call(b *lower.Builder, c *cc.Call, fn string) syntax.Expr {
	if m := h.t.macros.Lookup(fn); m != nil && m.Func {
		b.Fail(c.P, "write the expression out", "function-like macro %s is not supported", fn)
	}
	b.Fail(c.P, "the loop body may call the math functions: "+lower.MathNames(), "call to %s is not supported: only math functions may be called", fn)
	return nil
}

// Index translates an array read: A[t%2][i-1][j] is u[i-1, j] at the level its time index
// gives (decided once all statements are known).
func (h *hooks) Index(b *lower.Builder, ix *cc.Index) syntax.Expr {
	t := h.t
	base := baseOf(ix)
	if base == nil {
		b.Fail(ix.P, "index arrays by name, e.g. A[t%2][i][j]", "only named arrays can be indexed")
	}
	if b.IsLocal(base.Name) {
		b.Fail(base.P, "use separate scalar variables", "local arrays are not supported")
	}
	idx := indexChain(ix)
	a, tk := t.arrayOf(b, base, idx, ix.P, len(h.n.loops))
	spatial := idx
	if a.timed {
		spatial = idx[1:]
	}
	r := &read{arr: a, tk: tk, pos: ix.P, off: make([]int, len(spatial))}
	for k, e := range spatial {
		r.off[k] = h.offset(b, e, k)
	}
	var indices []syntax.Expr
	for k, o := range r.off {
		if o == 0 {
			continue
		}
		op, v := "+", o
		if o < 0 {
			op, v = "-", -o
		}
		p := spatial[k].Pos()
		indices = append(indices, &syntax.Binary{Pos: p, Op: op, X: lower.Name(p, t.axes[k]), Y: lower.IntLit(p, int64(v))})
	}
	r.ix = &syntax.Index{Pos: ix.P, X: lower.Name(base.P, a.grid), Indices: indices}
	h.n.reads = append(h.n.reads, r)
	return r.ix
}

// offset reads index k of an access: the loop variable of axis k plus a constant.
func (h *hooks) offset(b *lower.Builder, e cc.Expr, k int) int {
	v := h.n.loops[k].v
	hint := fmt.Sprintf("index dimension %d with %s plus or minus a constant, e.g. %s-1", k+1, v, v)
	var rest cc.Expr
	sign := int64(1)
	switch x := e.(type) {
	case *cc.Name:
		if x.Name == v {
			return 0
		}
	case *cc.Binary:
		isV := func(e cc.Expr) bool { n, ok := e.(*cc.Name); return ok && n.Name == v }
		switch {
		case x.Op == "+" && isV(x.X):
			rest = x.Y
		case x.Op == "+" && isV(x.Y):
			rest = x.X
		case x.Op == "-" && isV(x.X):
			rest, sign = x.Y, -1
		}
	}
	if rest == nil {
		for j, l := range h.n.loops {
			if j != k && mentionsExpr(e, l.v) {
				b.Fail(e.Pos(), hint, "dimension %d is indexed with %s, the loop variable of dimension %d", k+1, cc.Format(e), j+1)
			}
		}
		if !mentionsExpr(e, v) {
			b.Fail(e.Pos(), hint, "index %s does not follow the loop variable %s", cc.Format(e), v)
		}
		b.Fail(e.Pos(), hint+"; linear addressing and computed indices are not supported", "index %s is not %s plus a constant", cc.Format(e), v)
	}
	for _, l := range h.n.loops {
		if mentionsExpr(rest, l.v) {
			b.Fail(rest.Pos(), hint, "non-constant offset %s: it depends on the loop variable %s", cc.Format(rest), l.v)
		}
	}
	off, ok := b.ConstInt(b.Expr(rest))
	if !ok {
		b.Fail(rest.Pos(), "offsets must be known at compile time (constants, #defines, counters of unrolled loops)", "non-constant offset %s", cc.Format(rest))
	}
	off *= sign
	if off > 1<<20 || off < -(1<<20) {
		b.Fail(rest.Pos(), "", "offset %d is too large", off)
	}
	return int(off)
}

// Store records an assignment to an array element: the statement that updates a grid.
func (h *hooks) Store(b *lower.Builder, a *cc.Assign, rhs syntax.Expr) {
	t := h.t
	ix, ok := a.L.(*cc.Index)
	if !ok {
		if n, isName := a.L.(*cc.Name); isName {
			if _, isArray := t.decls[n.Name]; isArray {
				b.Fail(a.P, "write A[(t+1)%2][i][j] = f(A[t%2][...]), or copy B back into A with a loop nest",
					"assigning an array is pointer manipulation, which is not supported")
			}
			b.Fail(n.P, fmt.Sprintf("declare it in the loop body (float %s = ...;)", n.Name), "%s is not a local variable", n.Name)
		}
		if u, isDeref := a.L.(*cc.Unary); isDeref && u.Op == "*" {
			b.Fail(u.P, "index arrays with constant offsets, e.g. A[(t+1)%2][i][j]", "pointer dereference is not supported")
		}
		b.Fail(a.P, "", "only array elements and local variables can be assigned")
	}
	if a.Op != "=" {
		b.Fail(a.P, "write A[(t+1)%2][i][j] = ... from A[t%2]", "%s reads the element it writes: a dependence within a step", a.Op)
	}
	base := baseOf(ix)
	if base == nil {
		b.Fail(ix.P, "", "only named arrays can be assigned")
	}
	idx := indexChain(ix)
	arr, tk := t.arrayOf(b, base, idx, ix.P, len(h.n.loops))
	spatial := idx
	if arr.timed {
		spatial = idx[1:]
	}
	for k, e := range spatial {
		if nm, ok := e.(*cc.Name); !ok || nm.Name != h.n.loops[k].v {
			b.Fail(e.Pos(), "write the element at the loop variables themselves, e.g. A[(t+1)%2][i][j]",
				"the stored element's index %d must be %s", k+1, h.n.loops[k].v)
		}
	}
	for _, s := range h.n.stores {
		if s.arr == arr {
			b.Fail(a.P, "compute the value in a local variable and store it once", "%s is stored twice in one loop nest", base.Name)
		}
	}
	if b.Loops() > 0 {
		b.Fail(a.P, "store the element once, outside inner loops", "store inside an unrolled loop")
	}
	if b.Conditional() {
		b.Fail(a.P, "compute the value with if/else into a local variable and store it once, unconditionally",
			"the element is stored under a run-time condition")
	}
	s := &store{arr: arr, tk: tk, pos: a.P, value: b.ToElem(rhs, arr.typ, a.P)}
	h.n.stores = append(h.n.stores, s)
}
