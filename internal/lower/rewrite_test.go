package lower

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"tempest/internal/ir"
	"tempest/internal/irprint"
	"tempest/internal/kir"
	"tempest/internal/load"
	"tempest/internal/testkit"
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

// TestReciprocalRoots: fast math writes a constant other than 1 over a square root as the
// constant times the reciprocal root, and leaves 1 / sqrt(x) and other quotients as they are.
func TestReciprocalRoots(t *testing.T) {
	checkRewrite(t, reciprocalRoots, []rewriteCase{
		{"gradient", "0.99 / sqrt(0.000099 + (u - u[x-1]) * (u - u[x-1]))", "0.99 * (1.0 / sqrt(9.9e-05 + (u - u[x-1]) * (u - u[x-1])))"},
		{"nested", "u + 2.0 / sqrt(u[x+1])", "u + 2.0 * (1.0 / sqrt(u[x+1]))"},
		{"one", "1.0 / sqrt(u[x+1])", ""},
		{"not-a-root", "2.0 / exp(u[x+1])", ""},
		{"not-a-constant", "u / sqrt(u[x+1])", ""},
	})
}

// TestCanonicalTerms: fast math writes a weighted sum's terms by offset, slowest axis first and
// each coefficient first, and leaves sums in that order or with other terms as they are.
func TestCanonicalTerms(t *testing.T) {
	checkRewrite(t, canonicalOrder, []rewriteCase{
		{"star2d1r", "0.2*u + 0.197*u[y-1] + 0.199*u[y+1] + 0.201*u[x-1] + 0.203*u[x+1]", "0.197 * u[y-1] + 0.201 * u[x-1] + 0.2 * u + 0.203 * u[x+1] + 0.199 * u[y+1]"},
		{"coefficient-right", "u[x+1]*0.5 + 0.25*u[x-1]", "0.25 * u[x-1] + 0.5 * u[x+1]"},
		{"in-a-quotient", "(u[y+1] + 2.0*u[y-1]) / 3", "(2.0 * u[y-1] + u[y+1]) / 3.0"},
		{"canonical", "5.1*u[y-1] + 12.1*u[x-1] + 15.0*u + 12.2*u[x+1] + 5.2*u[y+1]", ""},
		{"other-terms", "u[x+1] * u + u[x-1]", ""},
	})
}

// TestOrderTerms: fast math writes a weighted sum's centre-column terms (offsets along the
// streaming axis y only) first, each group in its written order, and leaves sums that are
// ordered already, have no centre term, or hold other terms as they are.
func TestOrderTerms(t *testing.T) {
	checkRewrite(t, func(p *ir.Program) *ir.Program { return mapUpdates(p, orderTerms) }, []rewriteCase{
		{"j2d5pt", "5.1*u[y-1] + 12.1*u[x-1] + 15.0*u + 12.2*u[x+1] + 5.2*u[y+1]", "5.1 * u[y-1] + 15.0 * u + 5.2 * u[y+1] + 12.1 * u[x-1] + 12.2 * u[x+1]"},
		{"bare-loads", "u[x-1] + u[y+1] + u*2.0", "u[y+1] + u * 2.0 + u[x-1]"},
		{"in-a-quotient", "(u[y-1, x+1] + 2.0*u[y-1]) / 3", "(2.0 * u[y-1] + u[y-1, x+1]) / 3.0"},
		{"ordered", "0.2*u + 0.1*u[y-1] + 0.1*u[x+1]", ""},
		{"no-centre", "u[x-1] + u[x+1]", ""},
		{"other-term", "u[x-1] + u + sqrt(u)", ""},
		{"inside-a-term", "u[x-1] + sqrt(u[x+1] + u)", "u[x-1] + sqrt(u + u[x+1])"},
		{"difference", "u[x-1] - u", ""},
	})
}

// TestFuseProducts: under fast math every sum or difference with a product of two computed
// values becomes an fma, innermost first; coefficient products, lone products and products
// outside sums stay as written.
func TestFuseProducts(t *testing.T) {
	checkRewrite(t, fuseProducts, []rewriteCase{
		{"gradient", "u + 1.0 / sqrt(0.0001 + (u[y-1] - u) * (u[y-1] - u) + (u - u[y+1]) * (u - u[y+1]))",
			"u + 1.0 / sqrt(fma(u - u[y+1], u - u[y+1], fma(u[y-1] - u, u[y-1] - u, 0.0001)))"},
		{"difference", "u - u[x-1] * u[x+1]", "fma(-u[x-1], u[x+1], u)"},
		{"product-first", "u[x-1] * u[x+1] - u", "fma(u[x-1], u[x+1], -u)"},
		{"two-products", "u * u[x-1] + u * u[x+1]", "fma(u, u[x+1], u * u[x-1])"},
		{"in-a-select", "select(u > 0.5, u + u[y-1] * u[y-1], u)", "select(u > 0.5, fma(u[y-1], u[y-1], u), u)"},
		{"coefficients", "0.2 * u + 0.3 * u[x-1] + u[x+1] * 0.5", ""},
		{"lone-product", "u * u[x-1]", ""},
		{"quotient", "u + u[x-1] / u[x+1]", ""},
	})
}

// TestFusedProductsSplitByPlane: a fused product still splits into per-plane parts (n5d's
// partial sums, in-plane's), as the sum it fuses did.
func TestFusedProductsSplitByPlane(t *testing.T) {
	src := "stencil s\naxes y, x\ntype f32\nstate u\n  init rand()\n  boundary fixed\nupdate u = u[y-1] * u[y-1, x+1] + u[y+1] * u[y+1, x-1] + u\n"
	p, err := load.Source("s.stencil", src, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	q := fuseProducts(p)
	if q == p {
		t.Fatal("nothing fused")
	}
	sums, ok := n5dAssociative(q)
	if !ok {
		t.Fatalf("the fused update does not split by plane: %s", irprint.Stencil(q))
	}
	var keys []int
	for o := range sums[0].parts {
		keys = append(keys, o)
	}
	slices.Sort(keys)
	if !slices.Equal(keys, []int{-1, 0, 1}) {
		t.Errorf("parts on planes %v, want [-1 0 1]", keys)
	}
}

// TestSharedTerm: the factored boxes' per-plane parts share their moments, so n5d keeps each
// part whole; the boxes fast math leaves as written share nothing, and their parts are chained
// onto the partial sums term by term.
func TestSharedTerm(t *testing.T) {
	for _, c := range []struct {
		file   string
		shared bool
	}{
		{"box3d1r", true}, {"j3d27pt", true}, {"box2d2r", true},
		{"box2d1r", false}, {"j2d9pt-gol", false},
	} {
		p, err := load.File("../../examples/an5d/"+c.file+".stencil", load.Options{})
		if err != nil {
			t.Fatal(err)
		}
		sums, ok := n5dAssociative(fastMath(p))
		if !ok {
			t.Fatalf("%s: no partial sums", c.file)
		}
		var keys []int
		terms := map[int][]ir.Expr{}
		for o, part := range sums[0].parts {
			keys = append(keys, o)
			terms[o] = partTerms(part)
		}
		slices.Sort(keys)
		if got := sharedTerm(keys, terms); got != c.shared {
			t.Errorf("%s: shared term %v, want %v", c.file, got, c.shared)
		}
	}
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

// TestFactorAffine: fast math factors the AN5D boxes (affine coefficients, after the folded
// scale) of reach 2 and more, and the 27-point ones, into plane sums and moments that compute
// the same sum to within rounding, and leaves stars, boxes with other coefficients and the
// first-order 2D box (too little to gain) as written.
func TestFactorAffine(t *testing.T) {
	for _, c := range []struct {
		file   string
		factor bool
	}{
		{"box2d2r", true}, {"box2d3r", true}, {"box2d4r", true}, {"box3d2r", true}, {"box3d3r", true},
		{"box3d1r", true}, {"j3d27pt", true},
		{"box2d1r", false}, // too little to gain
		{"star2d1r", false}, {"star3d1r", false}, {"j2d9pt-gol", false}, {"j2d5pt", false},
	} {
		p, err := load.File("../../examples/an5d/"+c.file+".stencil", load.Options{})
		if err != nil {
			t.Fatal(err)
		}
		f := foldScales(p)
		q := factorAffines(f)
		if got := q != f; got != c.factor {
			t.Errorf("%s: factored %v, want %v", c.file, got, c.factor)
		}
		// The factored sum against the written one on random values.
		vals := map[string]float64{}
		rnd := uint64(7)
		value := func(l *ir.Load) float64 {
			k := fmt.Sprint(l.Off)
			if v, ok := vals[k]; ok {
				return v
			}
			rnd = rnd*6364136223846793005 + 1442695040888963407
			vals[k] = float64(rnd>>11) / (1 << 53)
			return vals[k]
		}
		want, got := evalLinear(p.Updates[0].Value, value), evalLinear(q.Updates[0].Value, value)
		if math.Abs(got-want) > 1e-5*math.Abs(want) {
			t.Errorf("%s: factored sum %g, written %g", c.file, got, want)
		}
	}
	// Coefficients that are not affine stay as written.
	src := "axes y, x\nstate u boundary fixed\nupdate u = 0.1*u[y-1,x-1] + 0.1*u[y-1] + 0.1*u[y-1,x+1] + 0.1*u[x-1] + 0.5*u + 0.1*u[x+1] + 0.1*u[y+1,x-1] + 0.1*u[y+1] + 0.1*u[y+1,x+1]\n"
	p, err := load.Source("s.stencil", src, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if q := factorAffines(p); q != p {
		t.Errorf("a box with a heavier centre was factored")
	}
}

// evalLinear evaluates sums, products and quotients of constants and loads in float64.
func evalLinear(e ir.Expr, load func(*ir.Load) float64) float64 {
	switch e := e.(type) {
	case *ir.Const:
		return e.V.F
	case *ir.Load:
		return load(e)
	case *ir.LetRef:
		return evalLinear(e.L.Value, load)
	case *ir.Unary:
		return -evalLinear(e.X, load)
	case *ir.Binary:
		x, y := evalLinear(e.X, load), evalLinear(e.Y, load)
		switch e.Op {
		case "+":
			return x + y
		case "-":
			return x - y
		case "*":
			return x * y
		case "/":
			return x / y
		}
	}
	panic(fmt.Sprintf("evalLinear: %T", e))
}

// TestPairSums: the sums of a factored 27-point box, paired for each cell of a 2 x 2 register
// tile, compute the same value, and the four cells together need fewer distinct additions
// (the compiler computes a sum that two cells write alike once) than written.
func TestPairSums(t *testing.T) {
	p, err := load.File("../../examples/an5d/box3d1r.stencil", load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := factorAffines(foldScales(p)).Updates[0].Value
	// absolute prints x with each load placed at pos + offset, so that equal sums of two
	// cells print alike.
	var absolute func(x ir.Expr, pos []int) string
	absolute = func(x ir.Expr, pos []int) string {
		switch x := x.(type) {
		case *ir.Load:
			at := make([]int, len(x.Off))
			for a := range at {
				at[a] = x.Off[a] + pos[a]
			}
			return fmt.Sprint(at)
		case *ir.Binary:
			return "(" + absolute(x.X, pos) + x.Op + absolute(x.Y, pos) + ")"
		case *ir.Const:
			return fmt.Sprint(x.V.F)
		}
		t.Fatalf("unexpected %T", x)
		return ""
	}
	additions := func(pair bool) int {
		seen := map[string]bool{}
		for _, pos := range [][]int{{0, 0, 0}, {0, 0, 1}, {0, 1, 0}, {0, 1, 1}} {
			x := e
			if pair {
				x = pairSums(e, pos)
				vals := map[string]float64{}
				value := func(l *ir.Load) float64 {
					k := fmt.Sprint(l.Off)
					if _, ok := vals[k]; !ok {
						vals[k] = float64(len(vals)%7) + 0.25*float64(len(vals))
					}
					return vals[k]
				}
				if w, g := evalLinear(e, value), evalLinear(x, value); math.Abs(g-w) > 1e-12*math.Abs(w) {
					t.Errorf("cell %v: paired %g, written %g", pos, g, w)
				}
			}
			ir.Walk(x, func(y ir.Expr) {
				if b, ok := y.(*ir.Binary); ok && b.Op != "*" {
					seen[absolute(b, pos)] = true
				}
			})
		}
		return len(seen)
	}
	written, paired := additions(false), additions(true)
	t.Logf("distinct additions of 4 cells: %d written, %d paired", written, paired)
	if paired >= written {
		t.Errorf("paired sums take %d distinct additions, written %d", paired, written)
	}
	// Nothing to pair in a star.
	s, err := load.File("../../examples/an5d/star3d1r.stencil", load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if u := s.Updates[0].Value; pairSums(u, []int{0, 1, 1}) != u {
		t.Errorf("star3d1r's update was regrouped")
	}
}

// TestCanonicalOrder: under fast math a stencil whose terms are written in another order lowers
// to the same kernels, for every strategy's plan below; in exact mode the written order stays
// (it decides the rounding the reference computes).
func TestCanonicalOrder(t *testing.T) {
	const head = "stencil s\naxes %s\ntype f32\nstate u\n  init rand()\n  boundary fixed\n"
	for _, c := range []struct {
		axes, a, b string
		plans      []string
	}{
		{"y, x", "update u = 0.2*u + 0.197*u[y-1] + 0.199*u[y+1] + 0.201*u[x-1] + 0.203*u[x+1]\n",
			"update u = u[x+1]*0.203 + 0.201*u[x-1] + 0.199*u[y+1] + 0.197*u[y-1] + 0.2*u\n",
			[]string{"n5d:bx=32,bt=2,rx=2,wave=true", "naive", "pyramid:bx=32,by=8,ph=2", "n5d:bx=32,bt=2,wave=true,centrefirst=true"}},
		{"z, y, x", "update u = (5.1*u[z-1] + u[y-1] + 2*u + 1.5*u[y+1] + u[x+1] + 0.5*u[x-1] + 3*u[z+1]) / 14.1\n",
			"update u = (3*u[z+1] + u[x+1] + 0.5*u[x-1] + 1.5*u[y+1] + u[y-1] + 2*u + 5.1*u[z-1]) / 14.1\n",
			[]string{"n5d:bx=8,by=8,bt=2,wave=true", "forwardplane:bx=8,by=4,pf=1", "inplane:bx=8,by=4", "stream25d:bx=8,by=4"}},
	} {
		for _, text := range c.plans {
			for _, fast := range []bool{true, false} {
				if !fast && strings.Contains(text, "centrefirst") {
					continue
				}
				var kernels [2]string
				for i, upd := range []string{c.a, c.b} {
					pt := text
					if fast {
						pt += ",fastmath=true"
					}
					if !strings.Contains(pt, ":") {
						pt = strings.Replace(pt, ",", ":", 1)
					}
					p, pl := testkit.Parsed(t, fmt.Sprintf(head, c.axes)+upd, pt)
					shape := []int{40, 30}
					if p.Dims() == 3 {
						shape = []int{20, 18, 16}
					}
					low, err := Lower(p, shape, nil, pl)
					if err != nil {
						t.Fatalf("%s: %v", pt, err)
					}
					kernels[i] = kir.Print(low.Module, kir.CUDA)
				}
				if same := kernels[0] == kernels[1]; same != fast {
					t.Errorf("%s, fast math %v: the two orders lower to the same kernels: %v", text, fast, same)
				}
			}
		}
	}
}
