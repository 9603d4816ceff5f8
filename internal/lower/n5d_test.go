package lower

import (
	"os"
	"strings"
	"testing"

	"tempest/internal/kir"
	"tempest/internal/load"
	"tempest/internal/plan"
)

// TestN5DLaunchBoundsAndPrefetch: the shallower remainder kernels carry launch bounds of the
// block (their registers may exceed the main kernel's), the main kernel none (they would
// override the plan's register cap); pf loads that many planes ahead in static registers, and
// a pf that does not divide the unrolled round is refused with a hint.
func TestN5DLaunchBoundsAndPrefetch(t *testing.T) {
	src, err := os.ReadFile("../../examples/an5d/star2d1r.stencil")
	if err != nil {
		t.Fatal(err)
	}
	p, err := load.Source("star2d1r.stencil", string(src), load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	lowerText := func(text string) (*Lowered, string, error) {
		pl, err := plan.Parse(text, p)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		l, err := Lower(p, []int{130, 130}, nil, pl)
		if err != nil {
			return nil, "", err
		}
		return l, kir.Print(l.Module, kir.CUDA), nil
	}
	l, cu, err := lowerText("n5d:bx=64,rx=2,bt=4,wave=true,pf=3")
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Module.Kernels) != 3 {
		t.Fatalf("%d kernels, want bt 4, 2 and 1", len(l.Module.Kernels))
	}
	for _, k := range l.Module.Kernels {
		want := 64
		if k.Name == "tempest_n5d" {
			want = 0
		}
		if k.MaxThreads != want {
			t.Errorf("%s: launch bounds %d, want %d", k.Name, k.MaxThreads, want)
		}
	}
	if !strings.Contains(cu, "__launch_bounds__(64) tempest_n5d_2(") || strings.Contains(cu, "__launch_bounds__(64) tempest_n5d(") {
		t.Errorf("launch bounds printed wrong:\n%s", cu[:min(len(cu), 600)])
	}
	for _, want := range []string{"pf_u_2_1 = ", "pf_u_0_0 = in0_u[min(max(jr + 3, 0), n0 - 1)"} {
		if !strings.Contains(cu, want) {
			t.Errorf("pf=3 lacks %q", want)
		}
	}
	if _, _, err := lowerText("n5d:bx=64,rx=2,bt=4,pf=4"); err == nil || !strings.Contains(err.Error(), "pf=1 or pf=2") {
		t.Errorf("pf=4 on a round of 6 planes: %v", err)
	}
	if ocl := kir.Print(l.Module, kir.OpenCL); strings.Contains(ocl, "launch_bounds") {
		t.Error("OpenCL has no launch bounds")
	}
}
