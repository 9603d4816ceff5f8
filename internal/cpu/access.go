package cpu

import (
	"fmt"

	"tempest/internal/gridio"
	"tempest/internal/ir"
	"tempest/internal/state"
)

// Programs that embed Tempest (package sim) read and write parts of the grids between steps,
// a source term added to a few cells, a probe read from one row, without syncing the whole
// state through the host arrays: Read and Write work on the engine's padded buffers directly.

// Read returns the box of grid g's level (0: current, 1: previous, for two-level grids)
// starting at lo with the given shape, both in the grid's array axes (a layered grid's layer
// axis first), from the engine's own buffers: the host state need not be synced first.
func (e *Engine) Read(g *ir.Grid, level int, lo, shape []int) *gridio.Array {
	out := gridio.NewArray(state.DType(g.Type), shape)
	buf := e.bufs[g.Index][e.checkBox(g, level, lo, shape)]
	e.forBoxRows(g, lo, shape, func(padded, flat, n int) {
		copyRange(out.Data, flat, buf, padded, n)
	})
	return out
}

// Write stores a (of grid g's element type) into the box of g's level starting at lo, in the
// engine's buffers, as if the engine had been built over a state holding those values (New):
// the ghost cells are filled again from the boundary conditions, and a state grid's current
// level goes into the buffer the next step writes too, which keeps fixed rims and, for a
// one-level grid, makes the values before the last step (an observable's .prev) the ones
// written. The host state is not touched.
func (e *Engine) Write(g *ir.Grid, level int, lo []int, a *gridio.Array) {
	if a.DType != state.DType(g.Type) {
		panic(fmt.Sprintf("internal error: writing %s into grid %s of %s", a.DType, g.Name, g.Type))
	}
	l := e.checkBox(g, level, lo, a.Shape)
	bufs := []any{e.bufs[g.Index][l]}
	if g.Update != nil && l == 0 {
		bufs = append(bufs, e.next[g.Index])
	}
	e.forBoxRows(g, lo, a.Shape, func(padded, flat, n int) {
		for _, b := range bufs {
			copyRange(b, padded, a.Data, flat, n)
		}
	})
	e.fillHalo(g, l)
}

// checkBox panics unless the box lies inside grid g's array and the level exists; it returns
// the level.
func (e *Engine) checkBox(g *ir.Grid, level int, lo, shape []int) int {
	full := e.s.GridShape(g)
	if level < 0 || level >= g.Levels || len(lo) != len(full) || len(shape) != len(full) {
		panic(fmt.Sprintf("internal error: box %v+%v level %d of grid %s %v", lo, shape, level, g.Name, full))
	}
	for a := range full {
		if lo[a] < 0 || shape[a] < 0 || lo[a]+shape[a] > full[a] {
			panic(fmt.Sprintf("internal error: box %v+%v outside grid %s %v", lo, shape, g.Name, full))
		}
	}
	return level
}

// forBoxRows calls f for every row (along the last axis) of the box lo+shape of grid g's
// array with the row's padded index, its index in the box's flat array and its length.
func (e *Engine) forBoxRows(g *ir.Grid, lo, shape []int, f func(padded, flat, n int)) {
	total := 1
	for _, n := range shape {
		total *= n
	}
	if total == 0 {
		return
	}
	layered := e.s.Layers[g.Index] > 0
	d := len(shape)
	w := shape[d-1]
	c := make([]int, d) // box coordinates of the row; the last stays 0
	for flat := 0; flat < total; flat += w {
		padded := 0
		axes := c
		origin := lo
		if layered {
			padded = (lo[0] + c[0]) * e.pcells
			axes, origin = c[1:], lo[1:]
		}
		for a := range axes {
			padded += (origin[a] + axes[a] + e.halo[a]) * e.pstride[a]
		}
		f(padded, flat, w)
		for a := d - 2; a >= 0; a-- {
			c[a]++
			if c[a] < shape[a] {
				break
			}
			c[a] = 0
		}
	}
}
