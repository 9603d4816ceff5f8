package model

import (
	"testing"

	"tempest/internal/kir"
	"tempest/internal/load"
	"tempest/internal/lower"
)

// TestFPVectorReadsMatchLowering checks the model's count of a forward-plane thread's vector
// loads (rx=2) against the kernel the lowering writes: per plane, fpVectorReads of them,
// declared once in the step's loop without the rim's checks and once in the checked one.
func TestFPVectorReadsMatchLowering(t *testing.T) {
	for _, c := range []struct {
		file   string
		hy, hx int
		star   bool
	}{
		{"an5d/star3d1r", 1, 1, true}, {"an5d/star3d2r", 2, 2, true},
		{"an5d/star3d3r", 3, 3, true}, {"an5d/star3d4r", 4, 4, true},
	} {
		p, err := load.File("../../examples/"+c.file+".stencil", load.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, rz := range []int{1, 3} {
			pl := mustParse(t, "forwardplane:bx=16,by=8,rx=2,pf=1,rz=3", p)
			pl.RZ = rz
			low, err := lower.Lower(p, []int{64, 64, 64}, nil, pl)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			var walk func([]kir.Stmt)
			walk = func(ss []kir.Stmt) {
				for _, s := range ss {
					switch s := s.(type) {
					case *kir.VecLoad:
						if s.Shared {
							n++
						}
					case *kir.If:
						walk(s.Then)
						walk(s.Else)
					case *kir.For:
						walk(s.Body)
					case *kir.Block:
						walk(s.Body)
					}
				}
			}
			walk(low.Module.Kernels[0].Body)
			want := 2 * rz * int(fpVectorReads(c.hy, c.hx, 2, c.star))
			if n != want {
				t.Errorf("%s rz=%d: the kernel declares %d shared vector loads, the model counts %d (two loops of rz planes)", c.file, rz, n, want)
			}
		}
	}
}
