package gpurun

import (
	"testing"

	"tempest/internal/plan"
	"tempest/internal/testkit"
)

// TestN5DShortTwoRowBlocksOpenCL: the tuner's occupancy variants (tune.occupancyVariants) run
// two-row 3D tiles a quarter shorter, so blocks of a number of thread rows that is not a power
// of two, odd ones among them, over tiles that do not divide the grid; each must agree with the
// reference and bitwise with the taller block.
func TestN5DShortTwoRowBlocksOpenCL(t *testing.T) {
	testkit.LongTest(t)
	checkSwitch(t, "a quarter shorter", func(pl *plan.Plan) { pl.BY = pl.BY * 3 / 4 }, []switchCase{
		{"an5d/j3d27pt", "n5d:bx=4,by=8,rx=2,ry=2,bt=2,wave=true,pf=2,chunk=5", []int{30, 14, 22}}, // by=6
		{"an5d/j3d27pt", "n5d:bx=4,by=8,rx=2,ry=2,bt=2,wave=true,pf=2,chunk=5", []int{12, 30, 5}},
		{"an5d/box3d1r", "n5d:bx=8,by=4,rx=2,ry=2,bt=2,wave=true,chunk=4", []int{17, 23, 40}}, // by=3
		{"an5d/star3d1r", "n5d:bx=4,by=4,rx=2,ry=2,bt=1,wave=true,phased=true,chunk=6", []int{20, 9, 13}},
	})
}
