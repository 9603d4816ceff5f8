package syntax

import (
	"strings"
	"testing"

	"tempest/internal/diag"
)

func TestParseDeclarations(t *testing.T) {
	src := `stencil demo
axes y, x
type f32
param a: f64 = 0.5
state u: f32 init 1.5 prev 0 boundary x: periodic, y: constant(2)
input w layers 4 boundary edge(value * 2)
let l = sum(i in -1..1) u[x+i]
update u = a > 0 ? l / 3 : -u.prev[y-1]`
	f, err := Parse(diag.NewSource("demo.stencil", src))
	if err != nil {
		t.Fatal(err)
	}
	kinds := []string{}
	for _, d := range f.Decls {
		switch d.(type) {
		case *StencilDecl:
			kinds = append(kinds, "stencil")
		case *AxesDecl:
			kinds = append(kinds, "axes")
		case *TypeDecl:
			kinds = append(kinds, "type")
		case *ParamDecl:
			kinds = append(kinds, "param")
		case *GridDecl:
			kinds = append(kinds, "grid")
		case *LetDecl:
			kinds = append(kinds, "let")
		case *UpdateDecl:
			kinds = append(kinds, "update")
		}
	}
	if got := strings.Join(kinds, " "); got != "stencil axes type param grid grid let update" {
		t.Fatalf("declarations: %s", got)
	}
	g := f.Decls[4].(*GridDecl)
	if len(g.Boundary) != 2 || g.Boundary[0].Axis.Name != "x" || g.Prev == nil || g.Init == nil {
		t.Fatalf("grid clauses not parsed: %+v", g)
	}
}

func TestNumbers(t *testing.T) {
	for _, tc := range []struct {
		in   string
		kind tokKind
		text string
	}{{"12", tInt, "12"}, {"1.5", tFloat, "1.5"}, {"1e-3", tFloat, "1e-3"}, {"2.5f", tFloat, "2.5"}, {"3f", tFloat, "3"}} {
		var d diag.List
		l := newLexer(diag.NewSource("t", tc.in), &d)
		tok := l.next()
		if tok.kind != tc.kind || tok.text != tc.text || len(d) > 0 {
			t.Errorf("%q lexed as %v %q (%v)", tc.in, tok.kind, tok.text, d)
		}
	}
	var d diag.List
	l := newLexer(diag.NewSource("t", "-1..1"), &d)
	var got []string
	for tok := l.next(); tok.kind != tEOF; tok = l.next() {
		got = append(got, tok.text)
	}
	if strings.Join(got, " ") != "- 1 .. 1" {
		t.Errorf("range lexed as %v", got)
	}
}

func TestDeepNestingIsAnError(t *testing.T) {
	src := "axes x\nstate u\nupdate u = " + strings.Repeat("(", 5000) + "u" + strings.Repeat(")", 5000)
	if _, err := Parse(diag.NewSource("deep.stencil", src)); err == nil || !strings.Contains(err.Error(), "nested too deeply") {
		t.Fatalf("want a nesting diagnostic, got %v", err)
	}
}
