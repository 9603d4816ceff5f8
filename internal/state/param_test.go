package state_test

import (
	"math"
	"strings"
	"testing"

	"tempest/internal/ir"
	"tempest/internal/load"
	"tempest/internal/state"
)

const paramProgram = `stencil p
axes x
type f32
param alpha = 0.2
param n = 3
param big: f64 = 1.5
state u
update u = alpha * u + f32(n) + f32(big)
`

// TestSetParam checks --param values written as constant expressions: evaluated in the
// parameter's type with the language's arithmetic, with pi, e, the math functions and the
// values parameters hold so far.
func TestSetParam(t *testing.T) {
	p, err := load.Source("p.stencil", paramProgram, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f32 := func(v float32) ir.Value { return ir.MakeFloat(ir.F32, float64(v)) }
	cases := []struct {
		flags []string
		name  string
		want  ir.Value
	}{
		{[]string{"alpha=0.25"}, "alpha", f32(0.25)},
		{[]string{"alpha=1/10"}, "alpha", f32(float32(1) / float32(10))},
		{[]string{"alpha=2*pi"}, "alpha", f32(2 * float32(math.Pi))},
		{[]string{"alpha=sqrt(2)/2"}, "alpha", f32(float32(math.Sqrt(2)) / 2)},
		{[]string{"alpha=exp(1) - e"}, "alpha", f32(float32(math.Exp(1)) - float32(math.E))},
		{[]string{"alpha=0.5f"}, "alpha", f32(0.5)},
		{[]string{"alpha=-1e-3"}, "alpha", f32(-1e-3)},
		{[]string{"n=3+4*2"}, "n", ir.MakeInt(ir.I32, 11)},
		{[]string{"n=7/2"}, "n", ir.MakeInt(ir.I32, 3)},
		{[]string{"n=1e6"}, "n", ir.MakeInt(ir.I32, 1000000)},
		{[]string{"n=i32(2.9)"}, "n", ir.MakeInt(ir.I32, 2)},
		{[]string{"n=5", "alpha=n/4"}, "alpha", f32(1.25)},          // an earlier --param's value
		{[]string{"alpha=n/4"}, "alpha", f32(0.75)},                 // a default
		{[]string{"alpha=alpha/2"}, "alpha", f32(float32(0.2) / 2)}, // its own value so far
		{[]string{"big=1/3"}, "big", ir.MakeFloat(ir.F64, 1.0/3)},
		{[]string{"big=alpha"}, "big", ir.MakeFloat(ir.F64, float64(float32(0.2)))},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.flags, " "), func(t *testing.T) {
			params := state.DefaultParams(p)
			for _, f := range c.flags {
				if err := state.SetParam(p, params, f); err != nil {
					t.Fatal(err)
				}
			}
			for _, pr := range p.Params {
				if pr.Name == c.name && params[pr.Index] != c.want {
					t.Fatalf("%s = %v, want %v", c.name, params[pr.Index], c.want)
				}
			}
		})
	}
}

// TestSetParamErrors checks that a bad value is a diagnostic with a caret under the flag's
// text and a hint.
func TestSetParamErrors(t *testing.T) {
	p, err := load.Source("p.stencil", paramProgram, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ flag, want string }{
		{"alpha=alph*2", "--param:1:7: error: undefined name \"alph\"\n 1 | alpha=alph*2\n   |       ^\nhint: did you mean alpha?"},
		{"alpha=1/", "--param:1:9: error:"},
		{"alpha=", "--param:1:7: error: missing value"},
		{"alpha=1 2", "--param:1:9: error: unexpected number 2 after the value"},
		{"alpha=x", "--param:1:7: error: undefined name \"x\""},
		{"alpha=rand()", "--param:1:"},
		{"alpha=1e39", "--param:1:7: error: the value is inf in f32"},
		{"n=2.5", "--param:1:3: error: the value: constant 2.5 is not an integer (i32)"},
		{"n=alpha", "--param:1:3: error: the value: a f32 value cannot become i32 implicitly"},
		{"n=3000000000", "does not fit in i32"},
		{"n=1/0", "integer division by zero"},
		{"gamma=1", "--param gamma: unknown parameter; p has alpha, n, big"},
		{"alpha", `--param "alpha": write name=value`},
	}
	for _, c := range cases {
		t.Run(c.flag, func(t *testing.T) {
			err := state.SetParam(p, state.DefaultParams(p), c.flag)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v\nwant an error containing %q", err, c.want)
			}
			if strings.Contains(c.want, "--param:1:") && !strings.Contains(err.Error(), "hint: ") {
				t.Fatalf("no hint:\n%v", err)
			}
		})
	}
}
