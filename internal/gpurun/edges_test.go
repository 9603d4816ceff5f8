package gpurun

import (
	"math"
	"testing"

	"tempest/internal/load"
	"tempest/internal/lower"
	"tempest/internal/plan"
	"tempest/internal/ref"
	"tempest/internal/state"
)

// TestN5DEdgesOpenCL runs n5d plans with the edge loop (edges=true) at shapes where blocks on
// the in-plane edges have chunks inside the streaming axis's rim, so that they run it: stars
// (a select keeps the rim columns' register values), boxes through partial sums (the rim
// columns reload their value) in 3D and 2D, with vectors and with scalar accesses. Each must
// agree with the reference within the matrix's tolerances and be bitwise the plan without
// edges=true, whose blocks run the checked loop instead (the same arithmetic in the same order).
func TestN5DEdgesOpenCL(t *testing.T) {
	dev := openDevice(t, "opencl")
	mods := matrixModules(dev)
	defer mods.Close()
	for _, c := range []struct {
		example, plan string
		shape         []int
	}{
		{"an5d/star3d1r", "n5d:bx=4,by=8,rx=2,bt=2,wave=true,pf=3,chunk=5", []int{30, 14, 22}},
		{"an5d/star3d1r", "n5d:bx=8,by=8,rx=2,bt=3,wave=true,pf=3,phased=true,unroll=3,chunk=4", []int{34, 17, 36}},
		{"an5d/box3d1r", "n5d:bx=4,by=8,rx=2,bt=2,wave=true,vec=1,chunk=5", []int{30, 14, 22}},
		{"an5d/j2d9pt", "n5d:bx=8,rx=2,bt=2,wave=true,pf=5,chunk=4", []int{40, 70}},
		{"an5d/box2d1r", "n5d:bx=8,rx=2,bt=3,chunk=4", []int{40, 70}},
	} {
		p, err := load.File("../../examples/"+c.example+".stencil", load.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !lower.N5DEdges(p, plan.Plan{}) {
			t.Fatalf("%s: no edge loop", c.example)
		}
		s, err := state.New(p, c.shape, state.DefaultParams(p), 4)
		if err != nil {
			t.Fatal(err)
		}
		ref.Init(s)
		const steps = 7 // the main kernel and a shallower one
		want := s.Clone()
		ref.Run(want, steps)
		var got []*state.State
		for _, edges := range []bool{false, true} {
			pl, err := plan.Parse(c.plan, p)
			if err != nil {
				t.Fatal(err)
			}
			pl.Edges = edges
			gs := s.Clone()
			r, err := PrepareWith(dev, gs, pl, mods)
			if err != nil {
				t.Fatalf("%s %s: %v", c.example, pl, err)
			}
			if err := r.Run(steps); err != nil {
				t.Fatalf("%s %s: %v", c.example, pl, err)
			}
			if err := r.Download(); err != nil {
				t.Fatalf("%s %s: %v", c.example, pl, err)
			}
			r.Close()
			if msg := agree(want, gs); msg != "" {
				t.Errorf("%s %s size %v after %d steps: %s", c.example, pl, c.shape, steps, msg)
			}
			got = append(got, gs)
		}
		for _, u := range p.Updates {
			a, b := got[0].Cur[u.Grid.Index].Float64s(), got[1].Cur[u.Grid.Index].Float64s()
			for i := range a {
				if a[i] != b[i] && !(math.IsNaN(a[i]) && math.IsNaN(b[i])) {
					t.Errorf("%s %s size %v: grid %s cell %d is %v with edges=true, %v without", c.example, c.plan, c.shape, u.Grid.Name, i, b[i], a[i])
					break
				}
			}
		}
	}
}
