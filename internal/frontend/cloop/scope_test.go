package cloop

import (
	"sort"
	"strings"
	"testing"

	"tempest/internal/diag"
	"tempest/internal/frontend/cc"
)

// TestVisibleAt checks which declarations outside the region are in scope where it begins,
// by C's block scoping: the names a snippet declares (after a type word) that are visible.
func TestVisibleAt(t *testing.T) {
	cases := []struct{ name, text, want string }{
		{"file_and_params", "int N = 4;\nvoid f(float *A, int n) {\n  int m = 2;\n#pragma scop\n#pragma endscop\n}\nint after = 1;\n", "A N m n"},
		{"closed_blocks", "void g(int q) { int gone = 1; }\nvoid f() {\n  { int inner = 1; }\n  for (int i = 0; i < 3; i++) x();\n  int kept = 2;\n#pragma scop\n#pragma endscop\n}\n", "kept"},
		{"prototype", "void p(int proto);\nvoid f() {\n#pragma scop\n#pragma endscop\n}\n", ""},
		{"if_and_for_bodies", "void f(int s) {\n  for (int r = 0; r < 2; r++) {\n    if (s) {\n      int c = 1;\n#pragma scop\n#pragma endscop\n    } else { int d = 2; }\n  }\n}\n", "c r s"},
		{"braceless_for", "void f() {\n  for (int r = 0; r < 2; r++)\n#pragma scop\n#pragma endscop\n}\n", "r"},
		{"declarator_parens", "void f(int n) {\n  float (*A)[n] = (float (*)[n])0;\n#pragma scop\n#pragma endscop\n}\n", "A n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := diag.NewSource("s.c", c.text)
			var diags diag.List
			var toks []cc.Token
			at := -1
			for _, tk := range cc.Lex(src, 0, len(c.text), &diags) {
				switch {
				case tk.Kind == cc.Directive && strings.Contains(tk.Text, "endscop"):
				case tk.Kind == cc.Directive:
					at = tk.Off
				case tk.Kind != cc.EOF:
					toks = append(toks, tk)
				}
			}
			vis := visibleAt(toks, at)
			var got []string
			for i, tk := range toks {
				if tk.Kind != cc.Ident || i < 1 || !vis[i] {
					continue
				}
				// A declared name follows a type word (int n), or a * after one or after ( (float *A, (*A)).
				prev, prev2 := toks[i-1].Text, ""
				if i > 1 {
					prev2 = toks[i-2].Text
				}
				if isTypeName(prev) && prev != "void" || prev == "*" && (isTypeName(prev2) || prev2 == "(") {
					got = append(got, tk.Text)
				}
			}
			sort.Strings(got)
			if g := strings.Join(got, " "); g != c.want {
				t.Fatalf("visible %q, want %q", g, c.want)
			}
		})
	}
}
