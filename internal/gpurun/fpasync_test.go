package gpurun

import (
	"fmt"
	"testing"

	"tempest/internal/plan"
	"tempest/internal/testkit"
)

// TestForwardPlaneAsyncOpenCL runs forward-plane plans whose planes are copied whole into
// rings of shared planes A steps ahead (plan.Async; OpenCL prints the copies synchronously, so
// the rings' slots, the heads read from them and the fills through the boundary rules at the
// domain's edges run on PoCL): each must agree with the reference and bitwise with the plan
// that loads its halos a plane ahead instead (pf=1), for one to three planes a step, one and
// two steps ahead, dense rows (copies of one element) and padded ones (four), at sizes no
// block divides.
func TestForwardPlaneAsyncOpenCL(t *testing.T) {
	testkit.LongTest(t)
	forwardPlaneAsync(t, "opencl")
}

// TestForwardPlaneAsyncCUDA is TestForwardPlaneAsyncOpenCL with the copies asynchronous, on a
// CUDA device (skipped where there is none).
func TestForwardPlaneAsyncCUDA(t *testing.T) { forwardPlaneAsync(t, "cuda") }

func forwardPlaneAsync(t *testing.T, backend string) {
	for _, c := range []struct {
		async int
		align bool
		cases []switchCase
	}{
		{1, false, []switchCase{
			{"an5d/star3d1r", "forwardplane:bx=8,by=4,pf=1,chunk=7", []int{20, 17, 29}},
			{"an5d/star3d3r", "forwardplane:bx=8,by=4,rz=2,pf=1,chunk=7", []int{20, 17, 29}},
		}},
		{2, false, []switchCase{
			{"an5d/star3d2r", "forwardplane:bx=8,by=8,rz=3,pf=1,chunk=10", []int{22, 19, 37}},
		}},
		{1, true, []switchCase{
			{"an5d/star3d3r", "forwardplane:bx=8,by=4,rz=3,pf=1,chunk=9,align=true", []int{20, 17, 29}},
			{"an5d/star3d1r", "forwardplane:bx=16,by=2,rz=2,pf=1,chunk=5,align=true,constsize=true", []int{18, 13, 45}},
		}},
		{2, true, []switchCase{
			{"an5d/star3d4r", "forwardplane:bx=8,by=8,rz=2,pf=1,chunk=8,align=true", []int{24, 21, 41}},
		}},
	} {
		checkSwitchOn(t, backend, fmt.Sprintf("async=%d", c.async), func(pl *plan.Plan) { pl.Async, pl.Prefetch = c.async, 0 }, c.cases)
	}
}
