package model

import (
	"testing"
)

// TestN5DClusterModel: plans in thread-block clusters share one tile per cluster (fewer
// blocks for the same outputs), push cells to the neighbours that read them (sides for
// stars, corners too for boxes; along x only in 2D) and pay a cluster barrier per plane.
// A star's two cells per thread push to three neighbours each (its side along x, both along
// y), a box's to five (corners too). The log lists the predictions for the tuned 3D plans with and without clusters.
func TestN5DClusterModel(t *testing.T) {
	dev := h100Probed()
	cases := []struct {
		stencil     string
		shape       []int
		base        string
		dirs, slots int // of the 2 x 2 (2D: 2 x 1) cluster variant
	}{
		{"star3d1r", []int{514, 514, 514}, "n5d:bx=16,by=32,bt=4,rx=2,wave=true,pf=3,chunk=80,fastmath=true", 4, 6},
		{"box3d1r", []int{514, 514, 514}, "n5d:bx=16,by=32,bt=2,rx=2,wave=true,pf=3,vec=1,chunk=64,fastmath=true", 8, 10},
		{"j3d27pt", []int{514, 514, 514}, "n5d:bx=16,by=32,bt=2,rx=2,wave=true,pf=2,chunk=80,fastmath=true", 8, 10},
		{"j2d5pt", []int{16386, 16386}, "n5d:bx=128,by=1,bt=12,rx=2,wave=true,pf=3,chunk=320,maxregs=96,fastmath=true", 2, 2},
	}
	for _, c := range cases {
		p, sum := prog(t, c.stencil)
		f := n5dFactsOf(p, sum)
		variants := []string{"", ",cx=2", ",cy=2", ",cx=2,cy=2", ",cx=2,cy=2,bt=6", ",cx=2,cy=2,bt=3"}
		if p.Dims() == 2 {
			variants = []string{"", ",cx=2", ",cx=4", ",cx=2,bt=16"}
		}
		var blocks0 int
		for i, v := range variants {
			pl := mustParse(t, c.base+v, p)
			in := Input{Prog: p, Sum: sum, Plan: pl, Shape: c.shape, Steps: 1000, Dev: dev}
			pr, err := n5dModel{}.Predict(in)
			if err != nil {
				t.Fatalf("%s %s: %v", c.stencil, pl, err)
			}
			g, err := n5dGeometryOf(p, f, pl, c.shape, pl.BT)
			if err != nil {
				t.Fatal(err)
			}
			dirs, slots := n5dPushes(f, pl)
			t.Logf("%-9s %-85s %7.1f GCells/s  %6d blocks  %d neighbours, %d push slots", c.stencil, pl, interiorCells(p, c.shape)*1000/pr.Seconds/1e9, g.blocks, dirs, slots)
			switch {
			case i == 0:
				blocks0 = g.blocks
				if dirs != 0 || slots != 0 {
					t.Errorf("%s %s: pushes without clusters", c.stencil, pl)
				}
			case v == ",cx=2,cy=2" || (p.Dims() == 2 && v == ",cx=2"):
				if dirs != c.dirs || slots != c.slots {
					t.Errorf("%s %s: %d neighbours and %d push slots, want %d and %d", c.stencil, pl, dirs, slots, c.dirs, c.slots)
				}
				if g.blocks >= blocks0 {
					t.Errorf("%s %s: %d blocks, not fewer than the %d without clusters", c.stencil, pl, g.blocks, blocks0)
				}
			}
		}
	}
}
