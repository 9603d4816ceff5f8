package lower

import (
	"fmt"

	"tempest/internal/ir"
	"tempest/internal/plan"
)

// N5DLayout is the tile geometry of an n5d kernel of Steps fused steps, derived once from the
// program and the plan: the lowering builds its kernel on it, and the model and gen's host
// code size the launch grid from it instead of deriving it again.
type N5DLayout struct {
	Dims  int
	Reach []int // per axis
	Steps int   // the kernel's fused steps (bt, or fewer for a remainder kernel)
	// X is the fastest axis, Y the middle one (in 2D, Y = 0 is the streamed axis and no
	// in-plane axis: RY = 1).
	X, Y int
	// RX x RY cells per thread: cell c is column c mod RX along x and row c / RX along y.
	RX, RY int
	Block  [3]int // threads along x, y, z
	// BlockCells are one block's cells along each in-plane axis (axis 0: 1); Before and Out
	// split a block's tile into the halo cells before the outputs and the outputs.
	BlockCells, Before, Out []int
	// VW is the elements of one vector access along x (at most 16 bytes).
	VW int
}

// N5DLayoutOf is the layout of p's n5d kernel of bt steps under pl (validated by lowerN5D).
func N5DLayoutOf(p *ir.Program, pl plan.Plan, bt int) (N5DLayout, error) {
	d := p.Dims()
	l := N5DLayout{Dims: d, Reach: p.Reach(), Steps: bt, X: d - 1, Y: d - 2, RX: max(pl.RX, 1), RY: 1}
	if d == 3 {
		l.RY = max(pl.RY, 1)
	}
	l.Block = [3]int{pl.BX, 1, 1}
	if d == 3 {
		l.Block[1] = pl.BY
	}
	l.BlockCells, l.Before, l.Out = make([]int, d), make([]int, d), make([]int, d)
	l.BlockCells[0] = 1
	// Along x the outputs start at a multiple of rx (2 or 4, unless vec=1) and are a multiple
	// of it wide, so that where the row length is one too, a thread's rx cells are one aligned
	// vector in global memory (VW elements per access, at most 16 bytes).
	l.VW = pl.N5DAlign()
	for l.VW > 1 && l.VW*p.Updates[0].Grid.Type.Size() > 16 {
		l.VW /= 2
	}
	for a := 1; a < d; a++ {
		l.BlockCells[a] = l.Block[d-1-a]
		if a == l.X {
			l.BlockCells[a] *= l.RX
		}
		if a == l.Y {
			l.BlockCells[a] *= l.RY
		}
		l.Before[a], l.Out[a] = pl.N5DTile(l.BlockCells[a], l.Reach[a], bt, a == l.X)
		if l.Out[a] < 1 {
			return l, fmt.Errorf("plan %s: a tile of %d cells along %s leaves nothing after %d steps of reach %d", pl, l.BlockCells[a], p.Axes[a], bt, l.Reach[a])
		}
	}
	return l, nil
}

// Blocks is the number of blocks along in-plane axis a of a domain n cells long: a block's
// tile has Out outputs.
func (l N5DLayout) Blocks(a, n int) int {
	return ceilDiv(n, l.Out[a])
}
