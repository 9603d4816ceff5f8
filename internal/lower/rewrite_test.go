package lower

import (
	"strings"
	"testing"

	"tempest/internal/ir"
	"tempest/internal/irprint"
	"tempest/internal/load"
)

// rewriteCase is an update before a rewrite of lowering's and as printed after it ("": the
// rewrite leaves the program as it is).
type rewriteCase struct{ name, update, want string }

// checkRewrite runs rewrite on one-update programs over axes y, x and checks what it prints,
// that it returns its argument where nothing changes, and that it never changes its argument.
func checkRewrite(t *testing.T, rewrite func(*ir.Program) *ir.Program, cases []rewriteCase) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := "stencil s\naxes y, x\ntype f32\nstate u\n  init rand()\n  boundary fixed\nupdate u = " + c.update + "\n"
			p, err := load.Source("s.stencil", src, load.Options{})
			if err != nil {
				t.Fatal(err)
			}
			before := irprint.Stencil(p)
			q := rewrite(p)
			if after := irprint.Stencil(p); after != before {
				t.Fatalf("the rewrite changed its argument:\n%s", after)
			}
			got := irprint.Stencil(q)
			if c.want == "" {
				if q != p {
					t.Errorf("rewritten, want unchanged:\n%s", got)
				}
				return
			}
			if !strings.Contains(got, "update u = "+c.want+"\n") {
				t.Errorf("got\n%s\nwant update u = %s", got, c.want)
			}
		})
	}
}

// TestFoldScales: fast math folds a constant scale into the coefficients of the sum it scales
// (each rounded once from the exact quotient), and leaves every other update as it is.
func TestFoldScales(t *testing.T) {
	checkRewrite(t, foldScales, []rewriteCase{
		{"quotient", "(5.1*u[x-1] + 15.0*u + 5.2*u[x+1]) / 118", "0.043220337 * u[x-1] + 0.12711865 * u + 0.044067796 * u[x+1]"},
		{"product-right", "(2.0*u[x-1] - u[x+1]*4.0) * 0.5", "1.0 * u[x-1] - u[x+1] * 2.0"},
		{"product-left", "0.25 * (u[x-1]/2 + -(3.0*u))", "u[x-1] * 0.125 + -(0.75 * u)"},
		{"constant-term", "(1.0 + 3.0*u) / 4", "0.25 + 0.75 * u"},
		{"bare-term", "(u[x-1] + 2.0*u) / 4", ""},
		{"lone-product", "(2.0*u) / 4", ""},
		{"not-a-constant", "(2.0*u[x-1] + 2.0*u) / u", ""},
		{"call", "sqrt(2.0*u[x-1] + 2.0*u) / 4", ""},
	})
}

// TestOrderSquares: squares of load differences are written with the smaller offset first, so
// that neighbouring cells write the same difference; everything else stays as written.
func TestOrderSquares(t *testing.T) {
	checkRewrite(t, orderSquares, []rewriteCase{
		{"above", "(u - u[y-1]) * (u - u[y-1])", "(u[y-1] - u) * (u[y-1] - u)"},
		{"below", "(u - u[y+1]) * (u - u[y+1])", ""},
		{"left-in-sum", "1.0 + (u - u[x-1]) * (u - u[x-1]) + (u - u[x+1]) * (u - u[x+1])", "1.0 + (u[x-1] - u) * (u[x-1] - u) + (u - u[x+1]) * (u - u[x+1])"},
		{"in-a-call", "u + 1.0 / sqrt(0.5 + (u - u[y-1, x+1]) * (u - u[y-1, x+1]))", "u + 1.0 / sqrt(0.5 + (u[y-1, x+1] - u) * (u[y-1, x+1] - u))"},
		{"not-a-square", "(u - u[y-1]) * (u - u[y+1])", ""},
		{"product-of-sums", "(u + u[y-1]) * (u + u[y-1])", ""},
	})
}
