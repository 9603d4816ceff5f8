package gpurun

import (
	"testing"

	"tempest/internal/errbound"
	"tempest/internal/plan"
	"tempest/internal/testkit"
)

// TestN5DPairedSumsOpenCL: under fast math n5d factors the AN5D boxes and regroups their sums
// per cell of a thread's register tile (lower.pairSums), differently for each cell's place in
// the tile: three rows of two cells in 3D, two cells in 2D, over grids the tiles do not divide.
// Boxes whose per-plane parts share no term (box2d1r, j2d9pt-gol) have their parts chained onto
// the partial sums term by term instead (lower.sharedTerm). Every cell must stay within its
// fast-math error bound (errbound), as `tempest run --fastmath --verify` promises.
func TestN5DPairedSumsOpenCL(t *testing.T) {
	testkit.LongTest(t)
	dev := openDevice(t, "opencl")
	mods := NewModules(dev)
	defer mods.Close()
	const steps = 12
	arith := errbound.For("opencl", true)
	for _, c := range []struct {
		example, plan string
		shape         []int
	}{
		{"an5d/box3d1r", "n5d:bx=4,by=4,rx=2,ry=3,bt=1,wave=true,chunk=5,fastmath=true", []int{17, 23, 19}},
		{"an5d/box2d2r", "n5d:bx=8,rx=2,bt=3,wave=true,pf=5,chunk=8,fastmath=true", []int{70, 45}},
		{"an5d/box2d1r", "n5d:bx=8,rx=2,bt=3,wave=true,pf=3,chunk=8,fastmath=true", []int{70, 45}},
		{"an5d/j2d9pt-gol", "n5d:bx=8,rx=2,bt=4,wave=true,chunk=7,fastmath=true", []int{53, 61}},
	} {
		p, s := initialState(t, c.example, c.shape)
		want := s.Clone()
		b := errbound.Run(want, steps, arith)
		pl, err := plan.Parse(c.plan, p)
		if err != nil {
			t.Fatal(err)
		}
		got := s.Clone()
		r, err := PrepareWith(dev, got, pl, mods)
		if err != nil {
			t.Fatalf("%s %s: %v", c.example, pl, err)
		}
		err = r.Run(steps)
		if err == nil {
			err = r.Download()
		}
		r.Close()
		if err != nil {
			t.Fatalf("%s %s: %v", c.example, pl, err)
		}
		v := b.Check(want, got)
		if v.Outside > 0 {
			t.Errorf("%s %s size %v: %d of %d cells outside their bound; first %s%v: error %.3g > bound %.3g", c.example, pl, c.shape, v.Outside, v.Cells, v.Grid, v.Where, v.Diff, v.Bound)
		}
		t.Logf("%s %s: largest error/bound %.3g", c.example, pl, v.Ratio)
	}
}
