package lower

import (
	"fmt"

	"tempest/internal/ir"
	"tempest/internal/plan"
)

// strategyLowering is what lower does for one strategy: its kernels, how its launch grids
// follow from the domain's size (GridDims), and the order its kernels evaluate an update in
// (EvaluationOrder).
type strategyLowering struct {
	// lower builds the kernels; sizeOnly may skip the bodies (lowerAs).
	lower func(p *ir.Program, shape []int, pl plan.Plan, wide, sizeOnly bool) (*Lowered, error)
	// grid is GridDims for launch l.
	grid func(p *ir.Program, pl plan.Plan, l Launch) ([3]GridDim, error)
	// order is EvaluationOrder (nil: the program as written).
	order func(p *ir.Program, pl plan.Plan) *ir.Program
}

// lowerings is lower's one table of strategies (plan.Registry names them all): a strategy
// is lowered by adding its entry here.
var lowerings = map[string]strategyLowering{
	plan.Naive:        {lower: whole(lowerNaive), grid: cellGrid},
	plan.Tiled:        {lower: whole(lowerTiled), grid: cellGrid},
	plan.Stream25D:    {lower: whole(lowerStream25D), grid: streamGrid},
	plan.Pyramid:      {lower: whole(lowerPyramid), grid: pyramidGrid},
	plan.N5D:          {lower: lowerN5D, grid: n5dGrid, order: n5dEvaluationOrder},
	plan.ForwardPlane: {lower: whole(lowerForwardPlane), grid: streamGrid},
	plan.InPlane:      {lower: whole(lowerInPlane), grid: inplaneGrid},
}

// whole is a lowering that has no cheaper way to learn its size than building its kernels.
func whole(f func(p *ir.Program, shape []int, pl plan.Plan, wide bool) (*Lowered, error)) func(*ir.Program, []int, plan.Plan, bool, bool) (*Lowered, error) {
	return func(p *ir.Program, shape []int, pl plan.Plan, wide, _ bool) (*Lowered, error) {
		return f(p, shape, pl, wide)
	}
}

// loweringOf is pl's entry of lowerings.
func loweringOf(pl plan.Plan) (strategyLowering, error) {
	s, ok := lowerings[pl.Strategy]
	if !ok {
		return s, fmt.Errorf("plan %s is not implemented yet", pl.Strategy)
	}
	return s, nil
}
