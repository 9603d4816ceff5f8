package tune

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"tempest/internal/ir"
	"tempest/internal/load"
	"tempest/internal/probe"
)

// TestSpellingKeepsThePick: a stencil written differently but with the same shape (the C loop
// nest instead of the .stencil, other coefficients, terms in another order) gets the same
// plan from the model and the same prediction on every AN5D stencil at its benchmark size:
// how a user writes a stencil does not choose its plan.
func TestSpellingKeepsThePick(t *testing.T) {
	files, _ := filepath.Glob("../../examples/an5d/*.stencil")
	if len(files) == 0 {
		t.Fatal("no AN5D examples")
	}
	dev := fakeDevice{props: h100Props}
	prof := probe.Estimate(h100Props)
	number := regexp.MustCompile(`\b\d+\.\d+\b`)
	for n, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".stencil")
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		// Other coefficients: every decimal constant times 1.25.
		scaled := number.ReplaceAllStringFunc(string(text), func(s string) string {
			v, _ := strconv.ParseFloat(s, 64)
			return strconv.FormatFloat(v*1.25, 'f', -1, 64)
		})
		spellings := map[string]func() (string, string){
			"stencil": func() (string, string) { return f, string(text) },
			"c": func() (string, string) {
				c, err := os.ReadFile("../../examples/c/" + name + ".c")
				if err != nil {
					t.Fatal(err)
				}
				return name + ".c", string(c)
			},
			"coefficients": func() (string, string) { return name + ".stencil", scaled },
			"reversed":     func() (string, string) { return name + ".stencil", reverseTerms(t, string(text)) },
		}
		// Float with fast math on every stencil, double exact on every fourth (a quarter of
		// the test's time on all combinations).
		combos := []struct {
			typ  ir.Type
			fast bool
		}{{ir.F32, true}}
		if n%4 == 0 {
			combos = append(combos, struct {
				typ  ir.Type
				fast bool
			}{ir.F64, false})
		}
		for _, cb := range combos {
			typ, fast := cb.typ, cb.fast
			{
				var want string
				for _, sp := range []string{"stencil", "c", "coefficients", "reversed"} {
					path, src := spellings[sp]()
					p, err := load.Source(path, src, load.Options{DefaultType: &typ})
					if err != nil {
						t.Fatalf("%s (%s): %v", name, sp, err)
					}
					cands, err := Rank(dev, shapeless(p, benchShape(p)), Options{Profile: prof, FastMath: fast})
					if err != nil {
						t.Fatal(err)
					}
					got := fmt.Sprintf("%s %.6g", cands[0].Plan, cands[0].Predicted)
					if sp == "stencil" {
						want = got
					} else if got != want {
						t.Errorf("%s, %s, fast %v: written as %s the model picks %s, as .stencil %s", name, typ, fast, sp, got, want)
					}
				}
			}
		}
	}
}

// reverseTerms writes the update's top-level sum with its terms in the opposite order.
func reverseTerms(t *testing.T, src string) string {
	i := strings.Index(src, "update ")
	if i < 0 {
		t.Fatalf("no update in:\n%s", src)
	}
	head, body := src[:i], src[i:]
	eq := strings.Index(body, "=")
	lhs, rhs := body[:eq+1], strings.Join(strings.Fields(body[eq+1:]), " ")
	// Split at depth-0 '+' signs; an update that is a sum divided by a constant keeps the
	// division outside: (a + b + c) / k becomes (c + b + a) / k.
	div := ""
	if strings.HasPrefix(rhs, "(") {
		if j := matching(rhs); j > 0 && j < len(rhs)-1 {
			div, rhs = rhs[j+1:], rhs[1:j]
		}
	}
	var terms []string
	depth, start := 0, 0
	for k, r := range rhs {
		switch r {
		case '(', '[':
			depth++
		case ')', ']':
			depth--
		case '+':
			if depth == 0 {
				terms = append(terms, strings.TrimSpace(rhs[start:k]))
				start = k + 1
			}
		}
	}
	terms = append(terms, strings.TrimSpace(rhs[start:]))
	for a, b := 0, len(terms)-1; a < b; a, b = a+1, b-1 {
		terms[a], terms[b] = terms[b], terms[a]
	}
	out := strings.Join(terms, " + ")
	if div != "" {
		out = "(" + out + ")" + div
	}
	return head + lhs + " " + out + "\n"
}

// matching is the index of the parenthesis closing s's first character.
func matching(s string) int {
	depth := 0
	for k, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return k
			}
		}
	}
	return -1
}
