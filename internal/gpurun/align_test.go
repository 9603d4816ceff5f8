package gpurun

import (
	"testing"

	"tempest/internal/plan"
	"tempest/internal/testkit"
)

// TestAlignOpenCL runs n5d and forward-plane plans over device arrays whose rows are padded to
// 128-byte lines (plan.Align) on PoCL, at sizes whose rows are no multiple of 32 cells: each
// must agree with the reference and bitwise with the same plan over dense arrays. It covers
// n5d's vector accesses (rows of an even length) and asynchronous copies, the kernels compiled for their size (the
// pitch a constant too), the forward plane's register queues and its ring of shared planes
// (diagonal reads).
func TestAlignOpenCL(t *testing.T) {
	testkit.LongTest(t)
	checkSwitchOn(t, "opencl", "align=true", func(pl *plan.Plan) { pl.Align = true }, alignCases)
}

// TestAlignCUDA is TestAlignOpenCL on a CUDA device (skipped where there is none).
func TestAlignCUDA(t *testing.T) {
	checkSwitchOn(t, "cuda", "align=true", func(pl *plan.Plan) { pl.Align = true }, alignCases)
}

// alignCases are TestAlignOpenCL's plans and sizes.
var alignCases = []switchCase{
	{"an5d/j2d5pt", "n5d:bx=16,rx=2,bt=3,wave=true,pf=2,rimblocks=true,edges=true,chunk=8", []int{45, 70}},
	{"an5d/box2d1r", "n5d:bx=8,rx=2,bt=2,wave=true,pf=2,edges=true,chunk=6,constsize=true,fastmath=true", []int{41, 38}},
	{"an5d/star2d1r", "n5d:bx=8,rx=4,bt=3,wave=true,chunk=7", []int{33, 75}},
	{"an5d/box2d2r", "n5d:bx=8,rx=2,bt=2,wave=true,async=3,chunk=6", []int{37, 42}},
	{"an5d/star3d1r", "n5d:bx=4,by=8,rx=2,bt=2,wave=true,pf=3,chunk=5", []int{30, 14, 22}},
	{"an5d/box3d1r", "n5d:bx=4,by=8,rx=2,bt=2,wave=true,chunk=5", []int{30, 14, 22}},
	{"an5d/star3d3r", "forwardplane:bx=8,by=4,rz=3,pf=1,chunk=7", []int{20, 17, 29}},
	{"an5d/star3d2r", "forwardplane:bx=8,by=8,rz=2,pf=1,chunk=9,constsize=true", []int{22, 19, 37}},
	{"an5d/j3d27pt", "forwardplane:bx=16,by=2,chunk=5", []int{18, 13, 21}},
	// Rows of a length no multiple of the vector: padded, the blocks inside and the edge
	// loop take their vectors (the runs past the row's end in the padding); dense, every
	// block the checked scalar loop.
	{"an5d/j2d5pt", "n5d:bx=16,rx=2,bt=3,wave=true,pf=2,rimblocks=true,edges=true,chunk=8", []int{45, 71}},
	{"an5d/star2d1r", "n5d:bx=8,rx=4,bt=3,wave=true,edges=true,edgesfirst=true,chunk=7", []int{33, 74}},
	{"an5d/box2d2r", "n5d:bx=8,rx=2,bt=2,wave=true,async=3,edges=true,chunk=6", []int{37, 43}},
	{"an5d/star3d1r", "n5d:bx=4,by=8,rx=2,bt=2,wave=true,pf=3,edges=true,shrink=true,chunk=5", []int{30, 14, 23}},
	{"an5d/box3d1r", "n5d:bx=4,by=8,rx=2,ry=2,bt=2,wave=true,edges=true,constsize=true,chunk=5", []int{30, 14, 25}},
	// The in-plane method's vector fills: at a row length of a multiple of vec and not.
	{"an5d/box3d2r", "inplane:bx=8,by=4,load=2,rx=2,ry=2,vec=4,chunk=6", []int{17, 21, 32}},
	{"an5d/box3d2r", "inplane:bx=8,by=4,load=2,rx=2,ry=2,vec=4,chunk=6", []int{17, 21, 35}},
	{"an5d/box3d1r", "inplane:bx=8,by=4,load=1,vec=2,chunk=5", []int{13, 18, 27}},
	{"an5d/star3d2r", "inplane:bx=16,by=4,load=0,rx=1,ry=2,vec=4,chunk=7", []int{15, 19, 37}},
}
