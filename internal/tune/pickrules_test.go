package tune

import (
	"strings"
	"testing"

	"tempest/internal/gpu"
	"tempest/internal/ir"
	"tempest/internal/load"
	"tempest/internal/probe"
)

// TestPickRules: the model's first plan for the 2D AN5D stencils in float on CUDA launches
// the edge tiles first (PickRules), and the same stencils in double, the 3D ones and an
// OpenCL device keep the plan the model ranked.
func TestPickRules(t *testing.T) {
	opencl := h100Props
	opencl.Backend = "opencl"
	for _, c := range []struct {
		name  string
		typ   ir.Type
		props gpu.Props
		want  bool
	}{
		{"j2d5pt", ir.F32, h100Props, true},
		{"box2d2r", ir.F32, h100Props, true},
		{"gradient2d", ir.F32, h100Props, true},
		{"j2d5pt", ir.F64, h100Props, false},
		{"star3d1r", ir.F32, h100Props, false},
		{"j2d5pt", ir.F32, opencl, false},
	} {
		typ := c.typ
		p, err := load.File("../../examples/an5d/"+c.name+".stencil", load.Options{DefaultType: &typ})
		if err != nil {
			t.Fatal(err)
		}
		cands, err := Rank(fakeDevice{props: c.props}, shapeless(p, benchShape(p)), Options{Profile: probe.Estimate(c.props), FastMath: true})
		if err != nil {
			t.Fatal(err)
		}
		first := cands[0].Plan
		got := PickRules(p, c.props, first)
		if first.Strategy != "n5d" {
			t.Fatalf("%s %s: the model's first plan is %s, not n5d", c.name, c.typ, first)
		}
		if has := strings.Contains(got.String(), "edgesfirst=true"); has != c.want {
			t.Errorf("%s %s on %s: %s (from %s), want edgesfirst %v", c.name, c.typ, c.props.Backend, got, first, c.want)
		}
		if strings.Replace(got.String(), ",edgesfirst=true", "", 1) != first.String() {
			t.Errorf("%s %s: %s changes more than edgesfirst of %s", c.name, c.typ, got, first)
		}
	}
}
