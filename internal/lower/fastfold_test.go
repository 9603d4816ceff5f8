package lower

import (
	"strings"
	"testing"

	"tempest/internal/irprint"
	"tempest/internal/load"
)

// TestFoldScales: fast math folds a constant scale into the coefficients of the sum it scales
// (each rounded once from the exact quotient), and leaves every other update as it is.
func TestFoldScales(t *testing.T) {
	cases := []struct {
		name, update string
		want         string // the folded update as printed; "" for unchanged
	}{
		{"quotient", "(5.1*u[x-1] + 15.0*u + 5.2*u[x+1]) / 118", "0.043220337 * u[x-1] + 0.12711865 * u + 0.044067796 * u[x+1]"},
		{"product-right", "(2.0*u[x-1] - u[x+1]*4.0) * 0.5", "1.0 * u[x-1] - u[x+1] * 2.0"},
		{"product-left", "0.25 * (u[x-1]/2 + -(3.0*u))", "u[x-1] * 0.125 + -(0.75 * u)"},
		{"constant-term", "(1.0 + 3.0*u) / 4", "0.25 + 0.75 * u"},
		{"bare-term", "(u[x-1] + 2.0*u) / 4", ""},
		{"lone-product", "(2.0*u) / 4", ""},
		{"not-a-constant", "(2.0*u[x-1] + 2.0*u) / u", ""},
		{"call", "sqrt(2.0*u[x-1] + 2.0*u) / 4", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := "stencil s\naxes x\ntype f32\nstate u\n  init rand()\n  boundary fixed\nupdate u = " + c.update + "\n"
			p, err := load.Source("s.stencil", src, load.Options{})
			if err != nil {
				t.Fatal(err)
			}
			before := irprint.Stencil(p)
			q := foldScales(p)
			if after := irprint.Stencil(p); after != before {
				t.Fatalf("foldScales changed its argument:\n%s", after)
			}
			got := irprint.Stencil(q)
			if c.want == "" {
				if q != p {
					t.Errorf("folded, want unchanged:\n%s", got)
				}
				return
			}
			if !strings.Contains(got, "update u = "+c.want+"\n") {
				t.Errorf("got\n%s\nwant update u = %s", got, c.want)
			}
		})
	}
}
