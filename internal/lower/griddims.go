package lower

import (
	"fmt"

	"tempest/internal/ir"
	"tempest/internal/plan"
)

// GridDim is how a launch's blocks along one grid dimension follow from the domain's size.
type GridDim struct {
	Axis  int // the domain axis whose extent it divides; -1: the dimension is 1
	By    int // cells per block along Axis (0 with Chunk)
	Chunk bool
	// Rim: the chunks give the planes near the axis's ends blocks of their own, RimLo and
	// RimHi planes (plan.RimBlocks, N5DRimBlocks).
	Rim          bool
	RimLo, RimHi int
}

// Blocks is the launch's blocks along the dimension for tiles ceil(n/By).
func (g GridDim) Blocks(tiles int) int { return tiles }

// GridDims says, per grid dimension (x, y, z), how launch l's block count follows from the
// domain's size under plan pl: host code written for every size (gen) computes the grid the
// lowering computed for one.
func GridDims(p *ir.Program, pl plan.Plan, l Launch) ([3]GridDim, error) {
	s, err := loweringOf(pl)
	if err != nil {
		return [3]GridDim{}, fmt.Errorf("lower: plan %s: no launch-grid formula for strategy %s", pl, pl.Strategy)
	}
	return s.grid(p, pl, l)
}

// noGrid is a launch grid of dimension 1 everywhere, which the strategies' grids fill in.
func noGrid() [3]GridDim {
	var div [3]GridDim
	for i := range div {
		div[i].Axis = -1
	}
	return div
}

// cellGrid is the grid of blocks of one thread a cell (naive, tiled): every axis divided by
// the block.
func cellGrid(p *ir.Program, pl plan.Plan, l Launch) ([3]GridDim, error) {
	d, div := p.Dims(), noGrid()
	for dim := 0; dim < 3; dim++ {
		if a := d - 1 - dim; a >= 0 {
			div[dim] = GridDim{Axis: a, By: l.Block[dim]}
		}
	}
	return div, nil
}

// inplaneGrid is the in-plane method's grid: each thread computes an rx x ry tile of outputs,
// and z is streamed in chunks.
func inplaneGrid(p *ir.Program, pl plan.Plan, l Launch) ([3]GridDim, error) {
	div := noGrid()
	div[0] = GridDim{Axis: 2, By: pl.BX * pl.RX}
	div[1] = GridDim{Axis: 1, By: pl.BY * pl.RY}
	div[2] = GridDim{Axis: 0, Chunk: true}
	return div, nil
}

// streamGrid is the grid of blocks one plane thick (stream25d, forwardplane): the in-plane
// axes divided by the block, the slowest axis streamed in chunks.
func streamGrid(p *ir.Program, pl plan.Plan, l Launch) ([3]GridDim, error) {
	d, div := p.Dims(), noGrid()
	div[0] = GridDim{Axis: d - 1, By: l.Block[0]}
	if d == 3 {
		div[1] = GridDim{Axis: 1, By: l.Block[1]}
	}
	div[d-1] = GridDim{Axis: 0, Chunk: true}
	return div, nil
}

// pyramidGrid is the pyramid's grid: each axis divided by the cells a block keeps after the
// launch's steps.
func pyramidGrid(p *ir.Program, pl plan.Plan, l Launch) ([3]GridDim, error) {
	d, div := p.Dims(), noGrid()
	r := p.Reach()
	for dim := 0; dim < 3; dim++ {
		if a := d - 1 - dim; a >= 0 {
			out := l.Block[dim] - 2*r[a]*l.Steps
			if dim == 0 {
				out = pl.PyramidCells()[0] - 2*r[a]*l.Steps // with a register tile (pyramidRX)
			}
			if out < 1 {
				return div, fmt.Errorf("internal error: pyramid block leaves no output")
			}
			div[dim] = GridDim{Axis: a, By: out}
		}
	}
	return div, nil
}

// n5dGrid is n5d's grid: in-plane axes overlap by the reach per step like a pyramid (the
// lowering's layout says by how much); the slowest axis is streamed in chunks.
func n5dGrid(p *ir.Program, pl plan.Plan, l Launch) ([3]GridDim, error) {
	d, div := p.Dims(), noGrid()
	lay, err := N5DLayoutOf(p, pl, l.Steps)
	if err != nil {
		return div, fmt.Errorf("internal error: %v", err)
	}
	for a := 1; a < d; a++ {
		div[d-1-a] = GridDim{Axis: a, By: lay.Out[a]}
	}
	lo, hi, rim := N5DRimBlocks(p, pl, l.Steps)
	div[d-1] = GridDim{Axis: 0, Chunk: true, Rim: rim, RimLo: lo, RimHi: hi}
	return div, nil
}

// GridOf evaluates a launch's grid formula (GridDims) for a shape under pl: the blocks per
// grid dimension. Lower fills every launch's Grid with it, and gen's host code computes the
// same at run time in C.
func GridOf(div [3]GridDim, shape []int, pl plan.Plan) [3]int {
	var grid [3]int
	for dim, dv := range div {
		switch {
		case dv.Axis < 0:
			grid[dim] = 1
		case dv.Chunk:
			grid[dim] = N5DChunks(shape[dv.Axis], pl.ChunkOf(shape[0]), dv.RimLo, dv.RimHi, dv.Rim)
		default:
			grid[dim] = dv.Blocks(ceilDiv(shape[dv.Axis], dv.By))
		}
	}
	return grid
}

// LaunchGrid is the grid of a launch of l's block and depth at shape under pl (GridDims,
// GridOf): what Lower would give it, for the model, which predicts launches it does not lower.
func LaunchGrid(p *ir.Program, pl plan.Plan, l Launch, shape []int) ([3]int, error) {
	div, err := GridDims(p, pl, l)
	if err != nil {
		return [3]int{}, err
	}
	return GridOf(div, shape, pl), nil
}
