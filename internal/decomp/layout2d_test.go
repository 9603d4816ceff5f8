package decomp

import (
	"fmt"
	"strings"
	"testing"

	"tempest/internal/cpu"
	"tempest/internal/ir"
	"tempest/internal/ref"
	"tempest/internal/state"
)

// boxProgs are box stencils (diagonal reads, which need the halo corners) for the
// two-dimensional layouts, beside progs: fixed and periodic edges, radius 2, positions along
// both split axes, 3D.
var boxProgs = []struct{ name, src string }{
	{"box_fixed", `stencil boxf
axes y, x
type f32
state u init sin(0.3 * f32(x) + 0.7 * f32(y)) boundary fixed
update u = 0.1 * (2 * u + u[y-1,x-1] + u[y-1] + u[y-1,x+1] + u[x-1] + u[x+1] + u[y+1,x-1] + u[y+1] + u[y+1,x+1])`},
	{"box_periodic_r2_coords", `stencil boxp
axes y, x
type f64
state u init cos(0.2 * f64(x * y) + 0.5 * f64(y)) boundary periodic
update u = 0.1 * (u[y-2,x-2] + u[y-2,x+2] + u[y+2,x-2] + 1.5 * u[y+2,x+1] + u[y-1,x+1] + u[y+1,x-1] + u) + 0.01 * f64((x * 3 + y) % 5 - size(x) / 4)`},
	{"box3d_clamp", `stencil box3d
axes z, y, x
type f32
state u init sin(0.3 * f32(x) + 0.7 * f32(y) - 0.45 * f32(z)) boundary clamp
update u = 0.1 * (u + u[z-1,y-1,x-1] + u[z+1,y+1,x+1] + u[z-1,y+1] + u[z+1,y-1] + u[y-1,x+1] + u[y+1,x-1] + u[z+1] + u[x-1])`},
}

// gridShape is the domain of the two-dimensional tests: large enough along both split axes
// for three parts with halos of 6.
func gridShape(p *ir.Program) []int {
	return map[int][]int{2: {26, 23}, 3: {14, 13, 5}}[p.Dims()]
}

func initialShape(t *testing.T, p *ir.Program, shape []int) *state.State {
	t.Helper()
	s, err := state.New(p, shape, state.DefaultParams(p), 2)
	if err != nil {
		t.Fatal(err)
	}
	ref.Init(s)
	return s
}

// gridProgs are the programs of the two-dimensional tests: every 2D and 3D one of progs and
// the box stencils.
func gridProgs() []struct{ name, src string } {
	var out []struct{ name, src string }
	for _, pr := range append(append(out, progs...), boxProgs...) {
		if !strings.Contains(pr.src, "axes x\n") {
			out = append(out, pr)
		}
	}
	return out
}

var grids = [][2]int{{2, 2}, {3, 2}, {1, 3}, {2, 1}}

// TestGridCPUBitwise runs every 2D and 3D program split over 2x2, 3x2, 1x3 and 2x1 grids of
// CPU engine parts with the local transport (row-segment copies for the columns), periods 1
// and 3, and holds them bitwise equal to the CPU engine on the whole domain: tolerance zero.
func TestGridCPUBitwise(t *testing.T) {
	const steps = 7
	for _, pr := range gridProgs() {
		p := mustProgram(t, pr.name, pr.src)
		want := initialShape(t, p, gridShape(p))
		e := cpu.New(want)
		e.Run(steps, nil)
		e.Sync()
		for _, gr := range grids {
			for _, period := range []int{1, 3} {
				t.Run(fmt.Sprintf("%s/%dx%d_e%d", pr.name, gr[0], gr[1], period), func(t *testing.T) {
					g := initialShape(t, p, gridShape(p))
					l, err := NewGrid(p, g.Shape, gr[0], gr[1], period)
					if err != nil {
						t.Fatal(err)
					}
					d, err := Split(g, l, All, func(i int, s *state.State) (Part, error) { return NewHostPart(s), nil }, Local{})
					if err != nil {
						t.Fatal(err)
					}
					defer d.Close()
					if err := d.Run(steps); err != nil {
						t.Fatal(err)
					}
					if err := d.Gather(g); err != nil {
						t.Fatal(err)
					}
					if err := sameBits(want, g); err != nil {
						t.Error(err)
					}
				})
			}
		}
	}
}
