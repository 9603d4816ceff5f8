package lower

import (
	"strings"
	"testing"

	"tempest/internal/irprint"
	"tempest/internal/load"
)

// TestOrderSquares: squares of load differences are written with the smaller offset first, so
// that neighbouring cells write the same difference; everything else stays as written.
func TestOrderSquares(t *testing.T) {
	cases := []struct {
		name, update string
		want         string // the ordered update as printed; "" for unchanged
	}{
		{"above", "(u - u[y-1]) * (u - u[y-1])", "(u[y-1] - u) * (u[y-1] - u)"},
		{"below", "(u - u[y+1]) * (u - u[y+1])", ""},
		{"left-in-sum", "1.0 + (u - u[x-1]) * (u - u[x-1]) + (u - u[x+1]) * (u - u[x+1])", "1.0 + (u[x-1] - u) * (u[x-1] - u) + (u - u[x+1]) * (u - u[x+1])"},
		{"in-a-call", "u + 1.0 / sqrt(0.5 + (u - u[y-1, x+1]) * (u - u[y-1, x+1]))", "u + 1.0 / sqrt(0.5 + (u[y-1, x+1] - u) * (u[y-1, x+1] - u))"},
		{"not-a-square", "(u - u[y-1]) * (u - u[y+1])", ""},
		{"product-of-sums", "(u + u[y-1]) * (u + u[y-1])", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := "stencil s\naxes y, x\ntype f32\nstate u\n  init rand()\n  boundary fixed\nupdate u = " + c.update + "\n"
			p, err := load.Source("s.stencil", src, load.Options{})
			if err != nil {
				t.Fatal(err)
			}
			before := irprint.Stencil(p)
			q := orderSquares(p)
			if after := irprint.Stencil(p); after != before {
				t.Fatalf("orderSquares changed its argument:\n%s", after)
			}
			got := irprint.Stencil(q)
			if c.want == "" {
				if q != p {
					t.Errorf("reordered, want unchanged:\n%s", got)
				}
				return
			}
			if !strings.Contains(got, "update u = "+c.want+"\n") {
				t.Errorf("got\n%s\nwant update u = %s", got, c.want)
			}
		})
	}
}
