package lower

import (
	"fmt"

	"tempest/internal/ir"
	"tempest/internal/plan"
)

// Wide is lowering's rule for 64-bit element indices: a grid's elements (the cells times its
// layers) more than an int32 holds. Lower and LowerObserve index so, and gen's host code
// refuses sizes past it unless its kernels were generated wide.
func Wide(shape, layers []int) bool {
	cells := int64(1)
	for _, n := range shape {
		cells *= int64(n)
	}
	maxLayers := int64(1)
	for _, l := range layers {
		maxLayers = max(maxLayers, int64(l))
	}
	return cells*maxLayers > 1<<31-1
}

// Cover is how many launches of each depth cover n steps, depths deepest first and ending in 1:
// as many of the deepest as fit, then of the next for the remainder, and so on. It is the
// host's schedule, which gpurun runs, gen's host code writes out and the model predicts; a
// remainder takes a few shallow launches instead of one single-step launch per step.
func Cover(depths []int, n int) []int {
	counts := make([]int, len(depths))
	for i, d := range depths {
		if i > 0 && d >= depths[i-1] || d < 1 {
			panic(fmt.Sprintf("internal error: depths %v are not deepest first", depths))
		}
		counts[i] = n / d
		n -= counts[i] * d
	}
	if n != 0 {
		panic(fmt.Sprintf("internal error: depths %v cannot cover the remaining %d steps", depths, n))
	}
	return counts
}

// LaunchesFor is the launches that cover n steps, in the order the host runs them: the
// deepest first, as many as fit, then shallower ones for the remainder (Cover).
func (l *Lowered) LaunchesFor(n int) []Launch {
	depths := make([]int, len(l.Schedule))
	for i, s := range l.Schedule {
		depths[i] = s.Steps
	}
	var out []Launch
	for i, c := range Cover(depths, n) {
		for range c {
			out = append(out, l.Schedule[i])
		}
	}
	return out
}

// finish computes what every strategy's result holds beyond its kernels, once, here: each
// launch's grid from its strategy's formula (GridDims) for the shape, the launches deepest
// first, the depth, and the index width. sizeOnly results (launches holding their Steps
// alone) get the depth and the schedule.
func (l *Lowered) finish(s strategyLowering, p *ir.Program, pl plan.Plan, shape []int, wide, sizeOnly bool) error {
	if !sizeOnly {
		for i := range l.Launches {
			div, err := s.grid(p, pl, l.Launches[i])
			if err != nil {
				return err
			}
			l.Launches[i].Grid = GridOf(div, shape, pl)
		}
	}
	l.Wide = wide
	l.Schedule = append([]Launch(nil), l.Launches...)
	// Deepest first, equal depths in the strategy's order (a stable insertion sort: a few
	// launches).
	for i := 1; i < len(l.Schedule); i++ {
		for j := i; j > 0 && l.Schedule[j].Steps > l.Schedule[j-1].Steps; j-- {
			l.Schedule[j], l.Schedule[j-1] = l.Schedule[j-1], l.Schedule[j]
		}
	}
	l.Depth = 1
	if len(l.Schedule) > 0 {
		l.Depth = max(1, l.Schedule[0].Steps)
	}
	return nil
}

// Depth is the Depth of pl's lowering of p at shape, with the errors Lower would give,
// without building n5d's kernel bodies (as SharedBytes): runs split over several devices
// stop at multiples of it, and learning it should not cost a lowering.
func Depth(p *ir.Program, shape []int, layers []int, pl plan.Plan) (int, error) {
	low, err := lowerAs(p, shape, layers, pl, true)
	if err != nil {
		return 0, err
	}
	return low.Depth, nil
}
