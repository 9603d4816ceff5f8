package cloop

import (
	"fmt"
	"path/filepath"
	"strings"

	"tempest/internal/diag"
	"tempest/internal/frontend/cc"
	"tempest/internal/irprint"
	"tempest/internal/syntax"
)

// timeStructure decides which arrays are state grids and at which time level every read
// happens, and reports dependences within a step.
func (t *translator) timeStructure(nests []*nest) ([]*grid, bool) {
	type at struct {
		n *nest
		s *store
	}
	var stores []at
	for _, n := range nests {
		for _, s := range n.stores {
			stores = append(stores, at{n, s})
		}
	}
	timed := stores[0].s.arr.timed
	for _, x := range stores[1:] {
		if x.s.arr.timed != timed {
			t.errorf(x.s.pos, "write every array with a time index, or none", "this store's array has no time index but %s's has", stores[0].s.arr.name)
			return nil, false
		}
	}
	if timed {
		written := map[*array]*grid{}
		var grids []*grid
		for _, x := range stores {
			if written[x.s.arr] != nil {
				t.errorf(x.s.pos, "store each array once per time step", "%s is stored twice in one time step", x.s.arr.name)
				return nil, false
			}
			g := &grid{arr: x.s.arr, st: x.s, n: x.n, levels: 1}
			written[x.s.arr] = g
			grids = append(grids, g)
		}
		for _, n := range nests {
			for _, r := range n.reads {
				g := written[r.arr]
				if g == nil {
					if r.arr.timed {
						t.errorf(r.pos, "", "%s is read with a time index but never written", r.arr.name)
						return nil, false
					}
					continue
				}
				d := g.st.tk - r.tk
				m := r.arr.mod
				if m > 0 {
					d = (d%m + m) % m
				}
				switch {
				case d == 0:
					t.errorf(r.pos, fmt.Sprintf("read the previous step's buffer, %s[%s%%%d]", r.arr.name, t.timeVar, max(m, 2)),
						"%s reads the buffer this step writes: a dependence within a step", r.arr.name)
					return nil, false
				case d < 0:
					t.errorf(r.pos, "", "%s reads a step that is not computed yet", r.arr.name)
					return nil, false
				case d == 1:
				case d == 2 && m != 2:
					g.levels = 2
					r.ix.X = &syntax.Selector{Pos: r.pos, X: r.ix.X, Sel: syntax.Ident{Pos: r.pos, Name: "prev"}}
				default:
					t.errorf(r.pos, "", "%s reads %d steps back; Tempest keeps at most two time levels", r.arr.name, d)
					return nil, false
				}
			}
		}
		return grids, true
	}

	// Without time indices.
	switch {
	case len(stores) == 1:
		s := stores[0]
		for _, r := range s.n.reads {
			if r.arr == s.s.arr && !centre(r.off) {
				t.errorf(r.pos, "write A[(t+1)%2][i][j] from A[t%2][...], or compute into a second array and copy it back",
					"%s is read at a neighbour while this sweep overwrites it: a dependence within a step", r.arr.name)
				return nil, false
			}
		}
		return []*grid{{arr: s.s.arr, st: s.s, n: s.n, levels: 1}}, true
	case len(stores) == 2 && stores[0].n != stores[1].n:
		s1, s2 := stores[0], stores[1]
		a, tmp := s2.s.arr, s1.s.arr
		if a == tmp {
			t.errorf(s2.s.pos, "", "%s is stored twice in one time step", a.name)
			return nil, false
		}
		if !t.sameBounds(s1.n, s2.n) {
			return nil, false
		}
		for _, r := range s1.n.reads {
			if r.arr == tmp {
				t.errorf(r.pos, "read the other array", "%s reads %s, which it is computing: a dependence within a step", tmp.name, tmp.name)
				return nil, false
			}
		}
		v, ok := s2.n.b.Resolved(s2.s.value)
		if !ok {
			t.errorf(s2.s.pos, "", "the statement is too large")
			return nil, false
		}
		if ix, isIx := v.(*syntax.Index); isIx && len(ix.Indices) == 0 && isName(ix.X, tmp.grid) {
			// B = f(A); A = B: a copy back.
			return []*grid{{arr: a, st: s1.s, n: s1.n, levels: 1}}, true
		}
		// B = f(A); A = f(B): alternating arrays, two steps per time iteration.
		v1, ok := s1.n.b.Resolved(s1.s.value)
		if !ok {
			return nil, false
		}
		if dump(v1, map[string]string{a.grid: "@", tmp.grid: "#"}) != dump(v, map[string]string{tmp.grid: "@", a.grid: "#"}) {
			t.errorf(s2.s.pos, fmt.Sprintf("copy the result back (%s[i][j] = %s[i][j]) or compute the same stencil in both statements", a.name, tmp.name),
				"the second statement is neither a copy of %s nor the first statement with the arrays swapped", tmp.name)
			return nil, false
		}
		for _, r := range s2.n.reads {
			if r.arr == a {
				t.errorf(r.pos, "", "%s reads %s, which it is computing: a dependence within a step", a.name, a.name)
				return nil, false
			}
		}
		for _, n := range nests {
			for _, s := range n.body {
				if stmtMentions(s, t.timeVar) {
					t.errorf(s.Pos(), "", "the body uses %s, but with alternating arrays one time iteration computes two steps", t.timeVar)
					return nil, false
				}
			}
		}
		t.alt = true
		return []*grid{{arr: a, st: s1.s, n: s1.n, levels: 1}}, true
	case len(stores) == 2:
		for _, r := range stores[1].n.reads {
			if r.arr == stores[1].s.arr && !centre(r.off) {
				t.errorf(stores[1].s.pos, "copy back in a loop nest of its own, after the one that computes "+stores[0].s.arr.name,
					"%s is written in the loop nest that reads its neighbours, so later cells read new values: a dependence within a step", r.arr.name)
				return nil, false
			}
		}
		t.errorf(stores[1].s.pos, "update one array per loop nest, or use time indices: A[(t+1)%2][i][j]",
			"%s and %s are stored in the same loop nest without time indices", stores[0].s.arr.name, stores[1].s.arr.name)
		return nil, false
	}
	t.errorf(stores[2].s.pos, "use time indices, A[(t+1)%2][i][j] = f(A[t%2][...]), to update several arrays",
		"too many stores without time indices")
	return nil, false
}

func centre(off []int) bool {
	for _, o := range off {
		if o != 0 {
			return false
		}
	}
	return true
}

func isName(e syntax.Expr, name string) bool {
	n, ok := e.(*syntax.Name)
	return ok && n.Name == name
}

// dump prints an expression for comparison, renaming the names in ren.
func dump(e syntax.Expr, ren map[string]string) string {
	var b strings.Builder
	var walk func(e syntax.Expr, depth int)
	walk = func(e syntax.Expr, depth int) {
		if depth > 2000 || b.Len() > 1<<20 {
			return
		}
		d := depth + 1
		switch x := e.(type) {
		case *syntax.IntLit:
			fmt.Fprintf(&b, "%d", x.Val)
		case *syntax.FloatLit:
			fmt.Fprintf(&b, "%v", x.Val)
		case *syntax.Name:
			if r, ok := ren[x.Name]; ok {
				b.WriteString(r)
			} else {
				b.WriteString(x.Name)
			}
		case *syntax.Unary:
			b.WriteString("(" + x.Op)
			walk(x.X, d)
			b.WriteString(")")
		case *syntax.Binary:
			b.WriteString("(")
			walk(x.X, d)
			b.WriteString(x.Op)
			walk(x.Y, d)
			b.WriteString(")")
		case *syntax.Cond:
			b.WriteString("(")
			walk(x.C, d)
			b.WriteString("?")
			walk(x.A, d)
			b.WriteString(":")
			walk(x.B, d)
			b.WriteString(")")
		case *syntax.Call:
			walk(x.Fun, d)
			b.WriteString("(")
			for _, a := range x.Args {
				walk(a, d)
				b.WriteString(",")
			}
			b.WriteString(")")
		case *syntax.Index:
			walk(x.X, d)
			b.WriteString("[")
			for _, a := range x.Indices {
				walk(a, d)
				b.WriteString(",")
			}
			b.WriteString("]")
		case *syntax.Selector:
			walk(x.X, d)
			b.WriteString("." + x.Sel.Name)
		default:
			b.WriteString("?")
		}
	}
	walk(e, 0)
	return b.String()
}

func stmtMentions(s cc.Stmt, v string) bool {
	found := false
	var walk func(s cc.Stmt, depth int)
	walk = func(s cc.Stmt, depth int) {
		if found || depth > 200 {
			return
		}
		switch s := s.(type) {
		case *cc.Block:
			for _, x := range s.List {
				walk(x, depth+1)
			}
		case *cc.Decl:
			for _, dv := range s.Vars {
				if dv.Init != nil && mentionsExpr(dv.Init, v) {
					found = true
				}
			}
		case *cc.ExprStmt:
			if a, ok := s.X.(*cc.Assign); ok {
				found = mentionsExpr(a.R, v) || mentionsExpr(a.L, v)
			} else {
				found = mentionsExpr(s.X, v)
			}
		case *cc.If:
			found = mentionsExpr(s.Cond, v)
			walk(s.Then, depth+1)
			if s.Else != nil {
				walk(s.Else, depth+1)
			}
		case *cc.For:
			walk(s.Body, depth+1)
		}
	}
	walk(s, 0)
	return found
}

// sameBounds checks that two loop nests run over the same ranges.
func (t *translator) sameBounds(a, b *nest) bool {
	for k := range a.loops {
		la, lb := a.loops[k], b.loops[k]
		lo1, ok1 := t.linearOf(la.lo, 0)
		lo2, ok2 := t.linearOf(lb.lo, 0)
		hi1, ok3 := t.linearOf(la.hi, 0)
		hi2, ok4 := t.linearOf(lb.hi, 0)
		if la.incl {
			hi1.c++
		}
		if lb.incl {
			hi2.c++
		}
		if !ok1 || !ok2 || !ok3 || !ok4 || !equalLinear(lo1, lo2) || !equalLinear(hi1, hi2) {
			t.errorf(lb.node.P, fmt.Sprintf("loop over the same range as the loop at line %d", la.node.P.Line),
				"the loop over %s covers a different range than the first loop nest's", lb.v)
			return false
		}
	}
	return true
}

func equalLinear(a, b linear) bool {
	d := a.add(b, -1)
	return d.c == 0 && len(d.terms) == 0
}

// boundary derives each state grid's rim from the loops that update it.
func (t *translator) boundary(grids []*grid) (map[string][]int, bool) {
	rims := map[string][]int{}
	for _, g := range grids {
		n := g.n
		dims := len(n.loops)
		reach := make([]int, dims)
		where := make([]*read, dims)
		for _, r := range n.reads {
			for k, o := range r.off {
				if o < 0 {
					o = -o
				}
				if o > reach[k] {
					reach[k], where[k] = o, r
				}
			}
		}
		var ext []cc.Expr
		if d := t.decls[g.arr.name]; d != nil && len(d.dims) >= dims {
			ext = d.dims[len(d.dims)-dims:]
		}
		rim := make([]int, dims)
		for k, l := range n.loops {
			lo, ok := constInt(l.lo, 0)
			if !ok {
				t.errorf(l.lo.Pos(), fmt.Sprintf("start the loop at a constant (a #define counts), e.g. %s = 1", l.v),
					"the loop over %s does not start at a constant", l.v)
				return nil, false
			}
			hiSkip, known := lo, false
			if ext != nil && ext[k] != nil {
				e, ok1 := t.linearOf(ext[k], 0)
				u, ok2 := t.linearOf(l.hi, 0)
				if ok1 && ok2 {
					if l.incl {
						u.c++
					}
					if d := e.add(u, -1); len(d.terms) == 0 {
						hiSkip, known = d.c, true
					}
				}
			}
			switch {
			case lo < 0 || hiSkip < 0:
				t.errorf(l.node.P, "", "the loop over %s runs outside the array", l.v)
				return nil, false
			case hiSkip != lo:
				t.errorf(l.node.P, fmt.Sprintf("skip the same number of cells at both ends: %s = %d; %s < N - %d", l.v, lo, l.v, lo),
					"the loop over %s skips %s at the start but %s at the end; Tempest's fixed boundary is the same at both ends",
					l.v, plural(int(lo), "cell"), plural(int(hiSkip), "cell"))
				return nil, false
			case int(lo) < reach[k]:
				end := "ends"
				if !known {
					end = "ends (assuming it stops as far from the end as it starts)"
				}
				t.errorf(where[k].pos, fmt.Sprintf("start the loop at %d and stop %d before the end of the array", reach[k], reach[k]),
					"the statement reads %d cell(s) away along %s, but the loop over %s leaves only %s at the %s: the read falls outside the array",
					reach[k], l.v, l.v, plural(int(lo), "cell"), end)
				return nil, false
			}
			rim[k] = int(lo)
		}
		rims[g.arr.grid] = rim
	}
	return rims, true
}

// assemble writes the .stencil program.
func (t *translator) assemble(nests []*nest, grids []*grid) *syntax.File {
	first := diag.Pos{Line: 1, Col: 1}
	sf := &syntax.File{Src: t.src}
	name := strings.TrimSuffix(filepath.Base(t.src.Name), filepath.Ext(t.src.Name))
	sf.Decls = append(sf.Decls, &syntax.StencilDecl{Pos: first, Name: syntax.Ident{Pos: first, Name: irprint.Sanitize(name)}})
	ax := &syntax.AxesDecl{Pos: t.scopPos}
	for _, a := range t.axes {
		ax.Names = append(ax.Names, syntax.Ident{Pos: t.scopPos, Name: a})
	}
	sf.Decls = append(sf.Decls, ax)
	sf.Decls = append(sf.Decls, &syntax.TypeDecl{Pos: t.scopPos, Type: syntax.Ident{Pos: t.scopPos, Name: t.declElem.String()}})
	for _, p := range t.paramOrder {
		pd := &syntax.ParamDecl{Pos: t.scopPos, Name: syntax.Ident{Pos: t.scopPos, Name: p.name}, Default: p.def}
		if p.typ.IsInt() || p.typ != t.floatType() {
			pd.Type = &syntax.Ident{Pos: t.scopPos, Name: p.typ.String()}
		}
		sf.Decls = append(sf.Decls, pd)
	}
	state := map[*array]*grid{}
	for _, g := range grids {
		state[g.arr] = g
	}
	var skip *array
	if len(grids) == 1 && !grids[0].arr.timed && len(nests) == 2 {
		skip = nests[0].stores[0].arr // the temporary array of a copy back or alternation
	}
	for _, name := range t.order {
		a := t.arrays[name]
		if a == skip {
			continue
		}
		gd := &syntax.GridDecl{Pos: a.pos, Input: state[a] == nil, Name: syntax.Ident{Pos: a.pos, Name: a.grid}}
		if a.typ != t.elem {
			gd.Type = &syntax.Ident{Pos: a.pos, Name: a.typ.String()}
		}
		if g := state[a]; g != nil {
			if g.levels > 1 {
				gd.Levels = &syntax.IntLit{Pos: a.pos, Text: "2", Val: 2}
			}
			gd.BPos = a.pos
			gd.Boundary = []syntax.BCSpec{{Pos: a.pos, Kind: syntax.Ident{Pos: a.pos, Name: "fixed"}}}
		}
		sf.Decls = append(sf.Decls, gd)
	}
	var updates []*syntax.UpdateDecl
	for _, n := range nests {
		var roots []syntax.Expr
		var gs []*grid
		for _, g := range grids {
			if g.n == n {
				roots = append(roots, g.st.value)
				gs = append(gs, g)
			}
		}
		if len(roots) == 0 {
			continue
		}
		lets, vals := n.b.Finish(roots...)
		for _, l := range lets {
			sf.Decls = append(sf.Decls, l)
		}
		for i, g := range gs {
			updates = append(updates, &syntax.UpdateDecl{Pos: g.st.pos, Name: syntax.Ident{Pos: g.st.pos, Name: g.arr.grid}, Value: vals[i]})
		}
	}
	for _, u := range updates {
		sf.Decls = append(sf.Decls, u)
	}
	return sf
}
