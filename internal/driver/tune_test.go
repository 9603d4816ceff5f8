package driver

import "testing"

// TestParsePlanFastMath: --fastmath compiles a plan with fast math unless its text says
// fastmath=... itself.
func TestParsePlanFastMath(t *testing.T) {
	p, err := loadProgram("../../examples/an5d/j2d5pt.stencil", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		text string
		fast bool
		want bool
	}{
		{"n5d:bt=4", true, true},
		{"n5d:bt=4", false, false},
		{"n5d:bt=4,fastmath=false", true, false},
		{"n5d:bt=4, fastmath=true", false, true},
		{"naive", true, true},
		{"tiled", false, false},
	} {
		pl, err := parsePlan(c.text, p, c.fast)
		if err != nil {
			t.Fatal(err)
		}
		if pl.FastMath != c.want {
			t.Errorf("parsePlan(%q, fast=%v): fast math %v, want %v", c.text, c.fast, pl.FastMath, c.want)
		}
	}
	if _, err := parsePlan("n5d:bt=x", p, true); err == nil {
		t.Error("a bad plan must fail")
	}
}
