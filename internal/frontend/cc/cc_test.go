package cc_test

import (
	"testing"

	"tempest/internal/diag"
	"tempest/internal/frontend/cc"
)

func TestParseNumber(t *testing.T) {
	for _, c := range []struct {
		text    string
		isFloat bool
		want    cc.Number
		bad     bool
	}{
		{text: "42", want: cc.Number{Int: 42}},
		{text: "010", want: cc.Number{Int: 8}}, // C's octal
		{text: "0x1F", want: cc.Number{Int: 31}},
		{text: "7u", want: cc.Number{Int: 7, Unsigned: true}},
		{text: "7LL", want: cc.Number{Int: 7, Long: true}},
		{text: "5.1f", isFloat: true, want: cc.Number{IsFloat: true, Float: 5.1, Single: true}},
		{text: "1e-3", isFloat: true, want: cc.Number{IsFloat: true, Float: 1e-3}},
		{text: ".5", isFloat: true, want: cc.Number{IsFloat: true, Float: 0.5}},
		{text: "0x1p-2", isFloat: true, want: cc.Number{IsFloat: true, Float: 0.25}},
		{text: "12abc", bad: true},
		{text: "99999999999999999999", bad: true},
		{text: "1.5q", isFloat: true, bad: true},
	} {
		got, err := cc.ParseNumber(c.text, c.isFloat)
		if (err != nil) != c.bad || !c.bad && got != c.want {
			t.Errorf("%s: got %+v, %v; want %+v (bad %v)", c.text, got, err, c.want, c.bad)
		}
	}
}

func TestLexPositionsAndDirectives(t *testing.T) {
	src := diag.NewSource("x.c", "#define N \\\n  64\nint a; /* c\n */ b+=1;\n  #pragma scop\n")
	var diags diag.List
	toks := cc.Lex(src, 0, len(src.Text), &diags)
	if diags.Err() != nil {
		t.Fatal(diags.Err())
	}
	want := []struct {
		kind cc.Kind
		text string
		line int
		col  int
	}{
		{cc.Directive, "#define N    64", 1, 1},
		{cc.Ident, "int", 3, 1},
		{cc.Ident, "a", 3, 5},
		{cc.Punct, ";", 3, 6},
		{cc.Ident, "b", 4, 5},
		{cc.Punct, "+=", 4, 6},
		{cc.Int, "1", 4, 8},
		{cc.Punct, ";", 4, 9},
		{cc.Directive, "#pragma scop", 5, 3},
		{cc.EOF, "", 6, 1},
	}
	if len(toks) != len(want) {
		t.Fatalf("got %d tokens: %v", len(toks), toks)
	}
	for i, w := range want {
		tk := toks[i]
		if tk.Kind != w.kind || tk.Text != w.text || tk.Pos.Line != w.line || tk.Pos.Col != w.col {
			t.Errorf("token %d: got %v %q at %d:%d, want %q at %d:%d", i, tk.Kind, tk.Text, tk.Pos.Line, tk.Pos.Col, w.text, w.line, w.col)
		}
	}
	name, rest := cc.SplitDirective(toks[8])
	if name != "pragma" || rest != "scop" {
		t.Errorf("directive split: %q %q", name, rest)
	}
}

func TestMacros(t *testing.T) {
	src := diag.NewSource("m.c", "#define R 2\n#define N (R * 8)\n#define F(a) a\nx = N + R;\ny = F(1);\n")
	var diags diag.List
	toks := cc.Lex(src, 0, len(src.Text), &diags)
	m := cc.NewMacros()
	var code []cc.Token
	for _, tk := range toks {
		if tk.Kind == cc.Directive {
			m.Define(tk, &diags, src)
			continue
		}
		code = append(code, tk)
	}
	out, ok := m.Expand(code[:len(code)-1], &diags, src)
	if ok || len(diags) != 1 {
		t.Fatalf("want one diagnostic for F(1), got %v", diags)
	}
	var text string
	for _, tk := range out {
		text += tk.Text + " "
	}
	if want := "x = ( 2 * 8 ) + 2 ; y = F ( 1 ) ; "; text != want {
		t.Errorf("expanded %q, want %q", text, want)
	}
	if out[2].Pos.Line != 4 || out[2].Pos.Col != 5 {
		t.Errorf("expanded token should sit at the use, 4:5; got %d:%d", out[2].Pos.Line, out[2].Pos.Col)
	}
}

func TestParseAndFormat(t *testing.T) {
	src := diag.NewSource("p.c", `
float s = 0, *p;
for (int k = -1; k <= 1; k++) { s += (float)A[t%2][i+k] * -c; }
if (s > 1 && !(s < 2)) s = s > 3 ? 3 : s; else { s = a - (b - c); }
do { } while (0);
`)
	var diags diag.List
	toks := cc.Lex(src, 0, len(src.Text), &diags)
	p := cc.NewParser(src, toks, &diags)
	list, ok := p.ParseStmts()
	if !ok || len(list) != 4 {
		t.Fatalf("parsed %d statements, ok %v: %v", len(list), ok, diags)
	}
	if d := list[0].(*cc.Decl); len(d.Vars) != 2 || d.Vars[1].Ptr != 1 {
		t.Errorf("declaration: %+v", d)
	}
	f := list[1].(*cc.For)
	body := f.Body.(*cc.Block).List[0].(*cc.ExprStmt).X.(*cc.Assign)
	if got := cc.Format(body.R); got != "(float)A[t % 2][i + k] * -c" {
		t.Errorf("format: %q", got)
	}
	els := list[2].(*cc.If).Else.(*cc.Block).List[0].(*cc.ExprStmt).X.(*cc.Assign)
	if got := cc.Format(els.R); got != "a - (b - c)" {
		t.Errorf("format: %q", got)
	}
	if w, ok := list[3].(*cc.While); !ok || !w.Do {
		t.Errorf("do-while: %T", list[3])
	}
}

func TestParseErrorsStop(t *testing.T) {
	src := diag.NewSource("e.c", "a = (b + ;\nc = 1;\n")
	var diags diag.List
	p := cc.NewParser(src, cc.Lex(src, 0, len(src.Text), &diags), &diags)
	if _, ok := p.ParseStmts(); ok || len(diags) != 1 || diags[0].Pos.Line != 1 || diags[0].Pos.Col != 10 {
		t.Fatalf("want one error at 1:10, got %v", diags)
	}
}
