package tune

import (
	"strings"
	"testing"

	"tempest/internal/gpu"
	"tempest/internal/ir"
	"tempest/internal/load"
	"tempest/internal/probe"
)

// TestPickRules: the model's first plan for the 2D AN5D stencils in float and double on CUDA
// launches the edge tiles first (PickRules), and the 3D ones and an OpenCL device keep the
// plan the model ranked.
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
		{"j2d5pt", ir.F64, h100Props, true},
		{"box2d2r", ir.F64, h100Props, true},
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

// TestPyramidRXFirst: on 1D programs with a fixed rim the model ranks the pyramid's register
// tiles (rx cells a thread) first, at a height of at most 32, as they measured on the H200
// (bench/gpu/lists/pyramid-rx.txt: 3.0x-3.4x the one-cell pyramid the model picked before,
// height 64 slower than 32); a 1D program with a clamped boundary keeps one cell a thread.
func TestPyramidRXFirst(t *testing.T) {
	for _, c := range []struct {
		file string
		rx   bool
	}{
		{"peers/conv_1d1r", true},
		{"peers/conv_1d2r", true},
		{"peers/flash_1d7p", true},
		{"sl/pathfinder", false},
	} {
		p, err := load.File("../../examples/"+c.file+".stencil", load.Options{})
		if err != nil {
			t.Fatal(err)
		}
		cands, err := Rank(fakeDevice{props: h100Props}, shapeless(p, []int{10241142}), Options{Profile: probe.Estimate(h100Props)})
		if err != nil {
			t.Fatal(err)
		}
		first := cands[0].Plan
		if got := first.Strategy == "pyramid" && first.RX > 1 && first.PH <= 32; got != c.rx {
			t.Errorf("%s: the model's first plan is %s; want a register tile: %v", c.file, first, c.rx)
		}
	}
}
