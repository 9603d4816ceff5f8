package decomp

import (
	"fmt"
	"testing"

	"tempest/internal/gpu"
	"tempest/internal/gpurun"
	"tempest/internal/plan"
	"tempest/internal/state"
)

// TestAlignSplitOpenCL splits plans whose device rows are padded to whole lines (plan.Align)
// at row lengths no multiple of the line: sub-domains of one OpenCL device in one-dimensional
// layouts, overlapped bands, a 2x2 grid with column windows and three relayed ranks. Halo
// copies must address the padded rows (a dense slab lands in the pad and the next row), so
// every case is bitwise the same plan on the whole domain.
func TestAlignSplitOpenCL(t *testing.T) {
	dev := openOrSkip(t, "opencl")
	if testing.Short() {
		t.Skip("-short")
	}
	testAlignSplit(t, dev, []string{"-cl-opt-disable"})
}

// TestAlignSplitCUDA is TestAlignSplitOpenCL on a CUDA device (device-to-device and 2D copies).
func TestAlignSplitCUDA(t *testing.T) {
	testAlignSplit(t, openOrSkip(t, "cuda"), nil)
}

func testAlignSplit(t *testing.T, dev gpu.Device, extra []string) {
	cache := gpurun.NewModules(dev)
	cache.Extra = extra
	defer cache.Close()
	const steps = 11
	device := func(pl plan.Plan) func(int, *state.State) (Part, error) {
		return func(_ int, s *state.State) (Part, error) { return NewDevicePart(dev, s, pl, cache) }
	}
	for _, c := range []struct {
		prog, plan string
		shape      []int
		overlap    bool
	}{
		{"fixed_r2", "n5d:bt=4,align=true", []int{31, 17}, false},
		{"fixed3d", "n5d:bt=2,align=true", []int{13, 9, 11}, false},
		{"fixed3d", "inplane:align=true", []int{13, 9, 11}, false},
		{"fixed_r2", "n5d:bt=4,align=true", []int{97, 9}, true},
	} {
		p := progSource(t, c.prog)
		pl, err := plan.Parse(c.plan, p)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(fmt.Sprintf("%s/%s/%v", c.prog, c.plan, c.shape), func(t *testing.T) {
			want := initialAt(t, p, c.shape)
			oneDevice(t, dev, want, pl, cache, steps)
			depth, err := PlanDepth(want, pl)
			if err != nil {
				t.Fatal(err)
			}
			split := Split
			if c.overlap {
				split = SplitOverlapped
			}
			for _, parts := range []int{2, 3} {
				g := initialAt(t, p, c.shape)
				l, err := NewLayout(p, g.Shape, parts, depth)
				if err != nil {
					t.Fatal(err)
				}
				d, err := split(g, l, All, device(pl), Local{})
				if err != nil {
					t.Fatal(err)
				}
				if c.overlap && countBanded(d) == 0 {
					t.Fatalf("%d parts: no part has bands", parts)
				}
				if err := runGather(t, d, g, want, steps); err != nil {
					t.Errorf("%d sub-domains: %v", parts, err)
				}
			}
		})
	}
	t.Run("grid", func(t *testing.T) {
		testGridDevice(t, []gpu.Device{dev}, cache.Extra, []gridCase{{"box_fixed", "n5d:bt=2,align=true", 2, 2, 2}, {"fixed3d", "n5d:bt=2,align=true", 2, 2, 2}}, func(int) Transport { return Local{} })
	})
	t.Run("relay", func(t *testing.T) {
		pl, err := plan.Parse("n5d:bt=2,align=true", progSource(t, "fixed_r2"))
		if err != nil {
			t.Fatal(err)
		}
		testRelay(t, "fixed_r2", device(pl), &pl, Split)
		testRelay(t, "fixed_r2", device(pl), &pl, SplitOverlapped)
	})
}
