package plan_test

import (
	"strings"
	"testing"

	"tempest/internal/load"
	"tempest/internal/plan"
)

// TestInplaneVec4Needs4ByteElements checks that vec=4 is refused, with the way out, for a
// stencil reading 8-byte elements (a 32-byte vector) and accepted for 4-byte ones.
func TestInplaneVec4Needs4ByteElements(t *testing.T) {
	src := func(ty string) string {
		return "axes z, y, x\ntype " + ty + "\nstate u boundary fixed\nupdate u = 2*u + u[x-1] + u[x+1] + u[y-1] + u[y+1] + u[z-1] + u[z+1]\n"
	}
	for _, c := range []struct {
		ty, plan, err string
	}{
		{"f32", "inplane:vec=4", ""},
		{"f64", "inplane:vec=2", ""},
		{"f64", "inplane:vec=4", "use vec=2"},
		{"i64", "inplane:vec=4", "grid u (i64)"},
	} {
		p, err := load.Source("t.stencil", src(c.ty), load.Options{})
		if err != nil {
			t.Fatal(err)
		}
		pl, err := plan.Parse(c.plan, p)
		if err != nil {
			t.Fatal(err)
		}
		err = pl.Validate(p, plan.Limits{}, 0)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s %s: %v", c.ty, c.plan, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s %s: got %v, want an error mentioning %q", c.ty, c.plan, err, c.err)
		}
	}
}
