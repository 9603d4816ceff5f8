// Package cloop is Tempest's frontend for stencils written as C loop nests in the style AN5D
// takes as input (the AN5D paper, CGO 2020, section 4.3 and Figure 4): a
// `#pragma scop` ... `#pragma endscop` region holding a time loop around spatial loops whose
// statement computes the next time step of an array from the current one. It recognises the
// loop nest, derives the dimensions, the stencil, the radius and the fixed boundary (the rim
// the loops never write), and hands the .stencil checker an equivalent program.
//
// Accepted forms, inside the scop region:
//
//	for (t = T0; t < T; t++)                      the time loop (any upper bound)
//	  for (i = R; i < N - R; i++)                 one loop per dimension, in any order,
//	    for (j = R; j < N - R; j++)               stepping by 1
//	      A[(t+1)%2][i][j] = f(A[t%2][i-1][j], ...);
//
// The time index may be (t+k)%m or, with a full time dimension, t+k; a read one step back is
// the current level, two steps back (modulus 3 or more) the previous one (u.prev). Several
// arrays may be updated this way in one time loop (each is a state grid). Without a time index,
// two arrays work too: B[i][j] = f(A) followed by a loop nest copying A[i][j] = B[i][j] over
// the same range, or alternating statements B = f(A); A = f(B) (one time iteration is then two
// steps). Arrays that are only read are input grids. The loop body may declare scalar locals,
// use if/else and loops with constant bounds (unrolled), as in SL code (package lower).
//
// Only the scop region defines the stencil. The rest of the file (AN5D's benchmark drivers hold
// the region in if (scop) { ... } and the same loop nest again under OpenMP in the else branch,
// around a whole program) is read only for #define constants and scalar typedefs (expanded in
// the region), the element type of each array (from its declaration: float, double, int, long;
// AN5D's SB_TYPE when not defined counts as float, and --type changes it), array extents and
// integer definitions such as int dimsize = compsize + 2*R (used to tell where the loops stop),
// and scalars with a constant initializer, float c0 = 0.5f, which become parameters. Only the
// declarations in scope at the region count, by C's block scoping (visibleAt), and the region's
// loop variables are never the constants of the same names outside it.
//
// The boundary: every state grid is fixed (Tempest's fixed boundary: the rim cells keep their
// initial values). The rim is what the loops skip: a loop from R to N-R over an axis of N cells
// leaves R cells at each end. When a bound does not say where the array ends (Figure 4's
// i <= I_S2 with no declaration), the loops are taken to skip as many cells at the end as at
// the start, AN5D's convention. The rim must be the same at both ends and at least the
// stencil's reach along that axis (else the C code reads outside the array); a rim wider than
// the reach is kept as it is (Grid.Rim), though the .stencil language cannot write it.
//
// Reported as unsupported, with the construct's position: pointer arithmetic and dereferences,
// linear addressing (A[i*N + j]), offsets that are not compile-time constants, dependences within
// a step (reading the buffer or array the step writes), while and do-while loops, calls to
// functions other than the math functions, and anything else outside the forms above.
//
// Deviations from C: as in SL code, a literal without f (0.25) does not promote float arithmetic
// to double, and float and double locals take the program's element type.
package cloop

import (
	"fmt"
	"strings"

	"tempest/internal/diag"
	"tempest/internal/frontend/cc"
	"tempest/internal/ir"
	"tempest/internal/irprint"
	"tempest/internal/sema"
	"tempest/internal/syntax"
)

// ElemMacro is the type name AN5D's benchmarks use for the element type.
const ElemMacro = "SB_TYPE"

// Load translates the loop nest in src and checks it into IR.
func Load(src *diag.Source, opt sema.Options) (*ir.Program, error) {
	var diags diag.List
	t := &translator{src: src, diags: &diags, names: irprint.NewNamer(), opt: opt}
	sf, rims := t.run()
	if err := diags.Err(); err != nil {
		return nil, err
	}
	if sf == nil {
		diags.Add(src, diag.Pos{Line: 1, Col: 1}, "", "no stencil found")
		return nil, diags.Err()
	}
	p, err := sema.Check(sf, opt)
	if err != nil {
		return nil, err
	}
	for _, g := range p.Grids {
		if r, ok := rims[g.Name]; ok && g.Update != nil {
			g.Rim = r
		}
	}
	return p, nil
}

// translator holds what is known about a C file while its loop nest becomes a .stencil syntax
// tree: the declarations around the region, the arrays and parameters met in it, the axes.
type translator struct {
	src   *diag.Source
	diags *diag.List
	names *irprint.Namer
	opt   sema.Options

	macros  *cc.Macros
	outside []cc.Token // macro-expanded tokens outside the scop region
	visible []bool     // per outside token: in scope at the region (visibleAt)
	scopPos diag.Pos
	scopOff int
	bound   map[string]bool       // loop variables of the region, never outside constants
	hidden  map[string]diag.Pos   // names declared outside but out of scope at the region
	decls   map[string]*arrayDecl // arrays declared outside the region
	defs    map[string]cc.Expr    // name = expression, outside the region
	defType map[string]*cc.Type   // type of those definitions

	elem       ir.Type // the program's element type
	declElem   ir.Type // before --type
	timeVar    string
	t0         int64
	t0ok       bool
	axes       []string // .stencil axis names, slowest first
	arrays     map[string]*array
	order      []string // arrays in order of first use
	params     map[string]*param
	paramOrder []*param
	alt        bool // alternating two-array form: t counts two steps
}

type arrayDecl struct {
	typ   *cc.Type
	dims  []cc.Expr // extents as declared (for (*A)[n][m], the trailing ones)
	paren bool      // pointer-to-array form: one more leading dimension than dims
	pos   diag.Pos
}

type array struct {
	name  string // C name
	grid  string // .stencil grid name
	typ   ir.Type
	rank  int // number of indices
	timed bool
	mod   int64 // time modulus; 0 for a full time dimension
	pos   diag.Pos
}

type param struct {
	name string
	typ  ir.Type
	def  syntax.Expr
}

func (t *translator) errorf(pos diag.Pos, hint, format string, args ...any) {
	t.diags.Add(t.src, pos, hint, format, args...)
}

// run finds the scop region, reads the declarations around it and translates the loop nest.
func (t *translator) run() (*syntax.File, map[string][]int) {
	toks := cc.Lex(t.src, 0, len(t.src.Text), t.diags)
	if t.diags.Err() != nil {
		return nil, nil
	}
	t.macros = cc.NewMacros()
	var scop, outside []cc.Token
	state := 0 // 0 before the region, 1 inside, 2 after
	for _, tk := range toks {
		if tk.Kind == cc.EOF {
			break
		}
		if tk.Kind != cc.Directive {
			if state == 1 {
				scop = append(scop, tk)
			} else {
				outside = append(outside, tk)
			}
			continue
		}
		name, rest := cc.SplitDirective(tk)
		switch name {
		case "define":
			t.macros.Define(tk, t.diags, t.src)
		case "undef":
			t.macros.Undef(tk)
		case "pragma":
			switch strings.Fields(rest + " x")[0] {
			case "scop":
				switch state {
				case 1:
					t.errorf(tk.Pos, "close the region with #pragma endscop first", "nested #pragma scop")
				case 2:
					t.errorf(tk.Pos, "Tempest reads one stencil per file", "second #pragma scop region")
				}
				state = 1
				t.scopPos, t.scopOff = tk.Pos, tk.Off
			case "endscop":
				if state != 1 {
					t.errorf(tk.Pos, "open the region with #pragma scop", "#pragma endscop without #pragma scop")
				}
				state = 2
			}
		case "if", "ifdef", "ifndef", "elif", "else", "endif":
			if state == 1 {
				t.errorf(tk.Pos, "move the conditional out of the scop region", "conditional compilation inside the scop region is not supported")
			}
		}
	}
	switch state {
	case 0:
		t.errorf(diag.Pos{Line: 1, Col: 1}, "mark the time loop with #pragma scop before it and #pragma endscop after it",
			"the file has no #pragma scop region")
		return nil, nil
	case 1:
		t.errorf(t.scopPos, "add #pragma endscop after the time loop", "the #pragma scop region is not closed")
		return nil, nil
	}
	if t.diags.Err() != nil {
		return nil, nil
	}
	t.typedefs(outside)
	// Code outside the region only lends it declarations: macros it cannot expand there are
	// left as they are, not reported.
	var quiet diag.List
	t.outside, _ = t.macros.Expand(outside, &quiet, t.src)
	t.visible = visibleAt(t.outside, t.scopOff)
	expanded, ok := t.macros.Expand(scop, t.diags, t.src)
	if !ok {
		return nil, nil
	}
	t.bound = loopVars(expanded)
	expanded = append(expanded, cc.Token{Kind: cc.EOF, Pos: t.scopPos})
	t.scanOutside()
	p := cc.NewParser(t.src, expanded, t.diags)
	p.IsType = func(name string) bool { return name == ElemMacro }
	stmts, ok := p.ParseStmts()
	if !ok {
		return nil, nil
	}
	return t.translate(stmts)
}

// typedefs turns typedefs of scalar types outside the region (typedef double real;) into
// macros, so that real means double in declarations and casts, inside the region and out.
func (t *translator) typedefs(toks []cc.Token) {
	for i := 0; i < len(toks); i++ {
		if toks[i].Kind != cc.Ident || toks[i].Text != "typedef" {
			continue
		}
		k := i + 1
		for k < len(toks) && toks[k].Kind == cc.Ident {
			k++
		}
		if k-i < 3 || k >= len(toks) || toks[k].Text != ";" {
			continue // not a plain scalar typedef: structs, pointers and arrays are not used
		}
		name := toks[k-1]
		t.macros.DefineTokens(name.Text, name.Pos, append([]cc.Token(nil), toks[i+1:k-1]...))
		i = k
	}
}

// scanOutside reads what the region needs from the rest of the file: array declarations (the
// element types and extents), integer definitions (how extents relate to loop bounds) and
// scalars with constant initializers (parameters). It reads the declarations in scope at the
// region (visibleAt), tolerating the C it does not understand.
func (t *translator) scanOutside() {
	t.decls = map[string]*arrayDecl{}
	t.defs = map[string]cc.Expr{}
	t.defType = map[string]*cc.Type{}
	t.hidden = map[string]diag.Pos{}
	toks := t.outside
	isTypeWord := func(tk cc.Token) bool {
		switch tk.Text {
		case "float", "double", "int", "long", "short", "char", "signed", "unsigned", "const", "static",
			"register", "volatile", "int32_t", "int64_t", ElemMacro:
			return tk.Kind == cc.Ident
		}
		return false
	}
	for i := 0; i < len(toks); i++ {
		if !isTypeWord(toks[i]) || i > 0 && isTypeWord(toks[i-1]) {
			continue
		}
		// A declaration: type words, then declarators separated by commas, up to ; or ) or {.
		j := i
		var words []string
		for j < len(toks) && isTypeWord(toks[j]) {
			switch toks[j].Text {
			case "const", "static", "register", "volatile":
			default:
				words = append(words, toks[j].Text)
			}
			j++
		}
		ty := &cc.Type{P: toks[i].Pos, Words: words}
		for j < len(toks) {
			k := j
			ptr := 0
			for k < len(toks) && toks[k].Text == "*" {
				ptr++
				k++
			}
			paren := false
			if k+2 < len(toks) && toks[k].Text == "(" && toks[k+1].Text == "*" {
				paren = true
				k += 2
				for k < len(toks) && toks[k].Text == "*" {
					k++
				}
			}
			if k >= len(toks) || toks[k].Kind != cc.Ident {
				break
			}
			name := toks[k]
			inScope := t.visible[k]
			k++
			if paren {
				if k >= len(toks) || toks[k].Text != ")" {
					break
				}
				k++
			}
			var dims []cc.Expr
			for k < len(toks) && toks[k].Text == "[" {
				end := matching(toks, k, "[", "]")
				if end < 0 {
					break
				}
				dims = append(dims, t.parseExpr(toks[k+1:end]))
				k = end + 1
			}
			if inScope {
				// The latest declaration in scope is the innermost one: it shadows the others.
				delete(t.decls, name.Text)
				delete(t.defs, name.Text)
				delete(t.defType, name.Text)
			} else if _, seen := t.hidden[name.Text]; !seen {
				t.hidden[name.Text] = name.Pos
			}
			if (paren || len(dims) > 0 || ptr > 0) && inScope {
				t.decls[name.Text] = &arrayDecl{typ: ty, dims: dims, paren: paren, pos: name.Pos}
			}
			if k < len(toks) && toks[k].Text == "=" {
				end := k + 1
				depth := 0
				for end < len(toks) {
					s := toks[end].Text
					if depth == 0 && (s == ";" || s == ",") {
						break
					}
					switch s {
					case "(", "[", "{":
						depth++
					case ")", "]", "}":
						depth--
					}
					if depth < 0 {
						break
					}
					end++
				}
				if ptr == 0 && !paren && len(dims) == 0 && inScope {
					if e := t.parseExpr(toks[k+1 : min(end, len(toks))]); e != nil {
						t.defs[name.Text] = e
						t.defType[name.Text] = ty
					}
				}
				k = end
			}
			if k < len(toks) && toks[k].Text == "," {
				j = k + 1
				continue
			}
			break
		}
	}
}

// matching returns the index of the token closing the bracket opened at toks[i], or -1.
func matching(toks []cc.Token, i int, open, close string) int {
	depth := 0
	for k := i; k < len(toks); k++ {
		switch toks[k].Text {
		case open:
			depth++
		case close:
			depth--
			if depth == 0 {
				return k
			}
		}
	}
	return -1
}

// parseExpr parses a token slice as an expression, quietly: declarations outside the region
// that are not understood are simply not used.
func (t *translator) parseExpr(toks []cc.Token) cc.Expr {
	if len(toks) == 0 {
		return nil
	}
	var ignore diag.List
	ts := append(append([]cc.Token(nil), toks...), cc.Token{Kind: cc.EOF, Pos: toks[len(toks)-1].Pos})
	p := cc.NewParser(t.src, ts, &ignore)
	p.IsType = func(name string) bool { return name == ElemMacro }
	e, ok := p.ParseExpr()
	if !ok {
		return nil
	}
	return e
}

// elemOf maps a declared C type to an element type.
func elemOf(ty *cc.Type) (ir.Type, bool) {
	switch strings.Join(ty.Words, " ") {
	case "float":
		return ir.F32, true
	case "double", "long double":
		return ir.F64, true
	case "int", "signed", "signed int", "int32_t":
		return ir.I32, true
	case "long", "long int", "long long", "long long int", "int64_t":
		return ir.I64, true
	case ElemMacro:
		return ir.F32, true // AN5D's default build
	}
	return 0, false
}

// constInt evaluates an integer expression of literals (macros are already expanded).
func constInt(e cc.Expr, depth int) (int64, bool) {
	if depth > 100 || e == nil {
		return 0, false
	}
	d := depth + 1
	switch e := e.(type) {
	case *cc.Lit:
		if e.Val.IsFloat {
			return 0, false
		}
		return e.Val.Int, true
	case *cc.Unary:
		x, ok := constInt(e.X, d)
		switch {
		case !ok:
		case e.Op == "-":
			return -x, true
		case e.Op == "+":
			return x, true
		}
	case *cc.Cast:
		return constInt(e.X, d)
	case *cc.Binary:
		x, ok1 := constInt(e.X, d)
		y, ok2 := constInt(e.Y, d)
		if !ok1 || !ok2 {
			return 0, false
		}
		switch e.Op {
		case "+":
			return x + y, true
		case "-":
			return x - y, true
		case "*":
			return x * y, true
		case "/":
			if y != 0 {
				return x / y, true
			}
		case "%":
			if y != 0 {
				return x % y, true
			}
		}
	}
	return 0, false
}

// linear is an integer expression Σ coef·name + c, for comparing loop bounds with extents.
type linear struct {
	terms map[string]int64
	c     int64
}

// linearOf reads e as a linear form, substituting integer definitions made outside the region
// (int dimsize = compsize + 2) so that bounds and extents meet on the same names.
func (t *translator) linearOf(e cc.Expr, depth int) (linear, bool) {
	l := linear{terms: map[string]int64{}}
	if depth > 50 || e == nil {
		return l, false
	}
	d := depth + 1
	switch e := e.(type) {
	case *cc.Lit:
		if e.Val.IsFloat {
			return l, false
		}
		l.c = e.Val.Int
		return l, true
	case *cc.Name:
		if def, ok := t.defs[e.Name]; ok && !t.bound[e.Name] {
			if ty, ok := elemOf(t.defType[e.Name]); ok && ty.IsInt() {
				if sub, ok := t.linearOf(def, d); ok {
					return sub, true
				}
			}
		}
		l.terms[e.Name] = 1
		return l, true
	case *cc.Unary:
		x, ok := t.linearOf(e.X, d)
		if !ok || e.Op != "-" && e.Op != "+" {
			return l, false
		}
		if e.Op == "-" {
			return x.scale(-1), true
		}
		return x, true
	case *cc.Cast:
		return t.linearOf(e.X, d)
	case *cc.Binary:
		x, ok1 := t.linearOf(e.X, d)
		y, ok2 := t.linearOf(e.Y, d)
		if !ok1 || !ok2 {
			return l, false
		}
		switch e.Op {
		case "+":
			return x.add(y, 1), true
		case "-":
			return x.add(y, -1), true
		case "*":
			if len(x.terms) == 0 {
				return y.scale(x.c), true
			}
			if len(y.terms) == 0 {
				return x.scale(y.c), true
			}
		}
	}
	return l, false
}

func (l linear) scale(k int64) linear {
	out := linear{terms: map[string]int64{}, c: l.c * k}
	for n, v := range l.terms {
		if v*k != 0 {
			out.terms[n] = v * k
		}
	}
	return out
}

func (l linear) add(m linear, sign int64) linear {
	out := linear{terms: map[string]int64{}, c: l.c + sign*m.c}
	for n, v := range l.terms {
		out.terms[n] += v
	}
	for n, v := range m.terms {
		out.terms[n] += sign * v
	}
	for n, v := range out.terms {
		if v == 0 {
			delete(out.terms, n)
		}
	}
	return out
}

// floatType is the type untyped float defaults settle to (the checker's rule).
func (t *translator) floatType() ir.Type {
	if t.elem.IsFloat() {
		return t.elem
	}
	return ir.F64
}

func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}
