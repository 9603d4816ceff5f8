package load

import (
	"strings"
	"testing"
)

// TestByteOrderMark: a program saved with a UTF-8 byte-order mark loads as without it, in
// each language, and its diagnostics keep their columns.
func TestByteOrderMark(t *testing.T) {
	cases := map[string]string{
		"p.stencil": "axes y, x\nstate u init 1 boundary clamp\nupdate u = 0.5 * (u[x-1] + u[x+1])\n",
		"p.c": "#pragma scop\nfor (int t = 0; t < T; t++)\n  for (int i = 1; i < N - 1; i++)\n" +
			"    for (int j = 1; j < N - 1; j++)\n      A[(t+1)%2][i][j] = 0.5f * (A[t%2][i][j-1] + A[t%2][i][j+1]);\n#pragma endscop\n",
	}
	for name, text := range cases {
		want, err := Source(name, text, Options{})
		if err != nil {
			t.Fatalf("%s without a mark: %v", name, err)
		}
		got, err := Source(name, "\uFEFF"+text, Options{})
		if err != nil {
			t.Fatalf("%s with a byte-order mark: %v", name, err)
		}
		if len(got.Updates) != len(want.Updates) || len(got.Grids) != len(want.Grids) {
			t.Errorf("%s: %d updates with the mark, %d without", name, len(got.Updates), len(want.Updates))
		}
	}
	_, err := Source("bad.stencil", "\uFEFFaxes y, x\nstate u init 1 boundary clamp\nupdate u = v\n", Options{})
	if err == nil || !strings.Contains(err.Error(), "bad.stencil:3:12:") {
		t.Errorf("diagnostic after a byte-order mark: %v", err)
	}
}
