package lower

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"tempest/internal/kir"
	"tempest/internal/load"
	"tempest/internal/plan"
)

// lowerInPlaneText lowers src under an inplane plan and prints its kernels for CUDA.
func lowerInPlaneText(t *testing.T, name, src, planText string) (*Lowered, string) {
	t.Helper()
	p, err := load.Source(name+".stencil", src, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pl, err := plan.Parse(planText, p)
	if err != nil {
		t.Fatalf("%s: %v", planText, err)
	}
	l, err := Lower(p, []int{64, 64, 64}, []int{0, 3}, pl)
	if err != nil {
		t.Fatalf("%s %s: %v", name, pl, err)
	}
	return l, kir.Print(l.Module, kir.CUDA)
}

// TestInPlaneDivPlanes checks the shared planes of div under every loading variant: uz, read
// only at in-plane offset (0, 0), gets none (its cells are read directly); ux, read along x
// only, gets a plane without halo rows and uy, read along y only, one without halo columns.
func TestInPlaneDivPlanes(t *testing.T) {
	src, err := os.ReadFile("../../examples/inplane/div.stencil")
	if err != nil {
		t.Fatal(err)
	}
	for _, pt := range []string{"inplane", "inplane:load=0", "inplane:load=1", "inplane:load=1,vec=4", "inplane:rx=2,ry=3,vec=2"} {
		l, text := lowerInPlaneText(t, "div", string(src), pt)
		if strings.Contains(text, "plane_uz") {
			t.Errorf("%s: uz has a shared plane", pt)
		}
		if !strings.Contains(text, "d_uz_0_0_0 = in0_uz[") {
			t.Errorf("%s: uz is not read directly", pt)
		}
		ty, tx, pad := 16, 32, 1 // by x ry, bx x rx, ux's x halo
		switch pt {
		case "inplane:rx=2,ry=3,vec=2":
			ty, tx, pad = 24, 64, 2
		case "inplane:load=1,vec=4":
			pad = 4
		}
		want := (ty*(tx+2*pad) + (ty+2)*tx) * 4
		if l.SharedBytes != want {
			t.Errorf("%s: %d bytes of shared planes, want %d (ux %dx%d, uy %dx%d)", pt, l.SharedBytes, want, ty, tx+2*pad, ty+2, tx)
		}
		// Vector plans pad ux's halo to whole vectors and store every loaded vector whole.
		if pad > 1 {
			for _, want := range []string{"__align__(" + fmt.Sprint(pad*4) + ") float plane_ux_0", "= v_plane_ux_0;", "= v_plane_uy_0;"} {
				if !strings.Contains(text, want) {
					t.Errorf("%s: the kernel lacks %q", pt, want)
				}
			}
			if strings.Contains(text, "v_plane_ux_0.x") {
				t.Errorf("%s: ux's vectors are stored lane by lane", pt)
			}
		}
		if strings.Count(text, "__syncthreads()") != 2 {
			t.Errorf("%s: want the two barriers of the shared planes", pt)
		}
	}
}

// TestLoadRegionsOneAxis checks that a plane with a halo along one axis only is loaded
// without rows or columns of the other axis: the regions cover the plane exactly once.
func TestLoadRegionsOneAxis(t *testing.T) {
	for _, c := range []struct{ h1, h2 int }{{0, 1}, {1, 0}, {0, 3}, {4, 0}} {
		for load := 0; load <= 2; load++ {
			ty, tx := 16, 32
			H, W := ty+2*c.h1, tx+2*c.h2
			seen := make([]int, H*W)
			for _, r := range loadRegions(load, ty, tx, c.h1, c.h2, false) {
				if r.rows <= 0 || r.cols <= 0 {
					t.Errorf("load=%d h=(%d,%d): empty region %+v", load, c.h1, c.h2, r)
				}
				for i := r.r0; i < r.r0+r.rows; i++ {
					for j := r.c0; j < r.c0+r.cols; j++ {
						if i < 0 || i >= H || j < 0 || j >= W {
							t.Fatalf("load=%d h=(%d,%d): region %+v leaves the %dx%d plane", load, c.h1, c.h2, r, H, W)
						}
						seen[i*W+j]++
					}
				}
			}
			for k, n := range seen {
				if n != 1 {
					t.Errorf("load=%d h=(%d,%d): plane cell (%d, %d) loaded %d times", load, c.h1, c.h2, k/W, k%W, n)
					break
				}
			}
		}
	}
}

// TestInPlaneNoSharedPlanes checks that a program whose grids are all read only at in-plane
// offset (0, 0) gets no shared memory, no barrier and no vector-path test.
func TestInPlaneNoSharedPlanes(t *testing.T) {
	src := `axes z, y, x
type f32
input w init sin(0.1 * x) + cos(0.2 * y)
state u init 0.01 * f32(x + y + z) prev 0 boundary z: periodic, y: constant(1), x: mirror
update u = 0.5 * (w[z+1] - w[z-1]) + 0.25 * u.prev[z-2] + 0.1 * u`
	for _, pt := range []string{"inplane", "inplane:vec=4,rx=2"} {
		l, text := lowerInPlaneText(t, "zonly", src, pt)
		if l.SharedBytes != 0 || strings.Contains(text, "__shared__") {
			t.Errorf("%s: shared memory declared", pt)
		}
		if strings.Contains(text, "__syncthreads") {
			t.Errorf("%s: barrier emitted", pt)
		}
		if strings.Contains(text, "vec_ok") {
			t.Errorf("%s: vector-path test emitted", pt)
		}
		for _, d := range []string{"d_w_0_0_0 = in0_w[", "d_u_1_0_0 = in1_u[", "d_u_0_1_0 = in0_u["} {
			if !strings.Contains(text, d) {
				t.Errorf("%s: no direct read %q", pt, d)
			}
		}
	}
}
