package gpurun

import (
	"math"
	"testing"

	"tempest/internal/plan"
	"tempest/internal/ref"
	"tempest/internal/state"
	"tempest/internal/testkit"
)

// TestN5DRangesOpenCL runs n5d plans whose kernels take the planes they write (ranges=true) on
// PoCL in three ways: Run over the whole axis, and every launch split into ranges of planes
// that tile the axis (LaunchRows, then Advance) in two orders, the middle range last and a
// range of one plane among them, cut off the chunks' grid; in the second order the ranges
// after the first launch after the step has advanced (LaunchRowsPast). Each must agree with the reference
// and bitwise with the plan without ranges: a ranged launch reads the planes beyond its range
// as a chunk's warm-up does and writes exactly its range.
func TestN5DRangesOpenCL(t *testing.T) {
	testkit.LongTest(t)
	dev := openDevice(t, "opencl")
	mods := matrixModules(dev)
	defer mods.Close()
	for _, c := range []struct {
		example, plan string
		shape         []int
	}{
		{"an5d/j2d5pt", "n5d:bx=8,rx=2,bt=3,wave=true,pf=3,chunk=5", []int{41, 30}},
		{"an5d/box2d2r", "n5d:bx=16,bt=2,wave=true,async=5,edgesfirst=true,chunk=6", []int{37, 40}},
		{"an5d/star3d1r", "n5d:bx=4,by=8,rx=2,bt=2,wave=true,pf=3,edges=true,chunk=5", []int{30, 14, 22}},
		{"an5d/box3d1r", "n5d:bx=4,by=4,rx=2,ry=2,bt=2,wave=true,phased=true,edgesfirst=true,chunk=4", []int{26, 14, 18}},
		{"an5d/star2d1r", "n5d:bx=8,rx=2,bt=3,wave=true,pf=3,unroll=6,unclamped=true,constsize=true,chunk=6", []int{43, 30}},
		{"an5d/star3d1r", "n5d:bx=8,by=8,bt=3,wave=true,ascend=true,shrink=true,chunk=5", []int{31, 14, 22}},
		// The rim's blocks of their own, cut to each range (some of them empty).
		{"an5d/j2d5pt", "n5d:bx=8,rx=2,bt=3,wave=true,pf=3,rimblocks=true,chunk=5", []int{47, 30}},
		{"an5d/star3d1r", "n5d:bx=4,by=8,rx=2,bt=2,wave=true,pf=3,rimblocks=true,unclamped=true,edges=true,chunk=4", []int{36, 14, 22}},
	} {
		p, s := initialState(t, c.example, c.shape)
		const steps = 7 // the main kernel and a shallower one
		want := s.Clone()
		ref.Run(want, steps)
		n0 := c.shape[0]
		cuts := [][][2]int{
			nil, // Run
			{{0, 9}, {9, 10}, {10, n0 - 6}, {n0 - 6, n0}},
			{{n0 - 6, n0}, {0, 9}, {9, 10}, {10, n0 - 6}},
		}
		var got []*state.State
		for i, ranges := range append([][][2]int{nil}, cuts...) {
			pl, err := plan.Parse(c.plan, p)
			if err != nil {
				t.Fatal(err)
			}
			pl.Ranges = i > 0
			gs := s.Clone()
			r, err := prepareSwitch(dev, gs, pl, mods)
			if err != nil {
				t.Fatalf("%s %s: %v", c.example, pl, err)
			}
			if pl.Ranges != r.Ranged() {
				t.Errorf("%s %s: Ranged says %v", c.example, pl, r.Ranged())
			}
			switch {
			case ranges == nil:
				err = r.Run(steps)
			case i == len(cuts):
				// The first range, then the step advanced past, then the others.
				for _, k := range r.Launches(steps) {
					err = r.LaunchRows(k, ranges[0][0], ranges[0][1])
					r.Advance(k)
					for _, rg := range ranges[1:] {
						if err == nil {
							err = r.LaunchRowsPast(k, rg[0], rg[1])
						}
					}
				}
			default:
				for _, k := range r.Launches(steps) {
					for _, rg := range ranges {
						if err == nil {
							err = r.LaunchRows(k, rg[0], rg[1])
						}
					}
					r.Advance(k)
				}
			}
			if err == nil {
				err = r.Download()
			}
			r.Close()
			if err != nil {
				t.Fatalf("%s %s ranges %v: %v", c.example, pl, ranges, err)
			}
			if msg := agree(want, gs); msg != "" {
				t.Errorf("%s %s ranges %v, size %v after %d steps: %s", c.example, pl, ranges, c.shape, steps, msg)
			}
			got = append(got, gs)
		}
		for i := 1; i < len(got); i++ {
			for _, u := range p.Updates {
				a, b := got[0].Cur[u.Grid.Index].Float64s(), got[i].Cur[u.Grid.Index].Float64s()
				for j := range a {
					if a[j] != b[j] && !(math.IsNaN(a[j]) && math.IsNaN(b[j])) {
						t.Errorf("%s %s way %d: grid %s cell %d is %v, %v without ranges", c.example, c.plan, i, u.Grid.Name, j, b[j], a[j])
						break
					}
				}
			}
		}
	}
}
