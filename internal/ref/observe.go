package ref

import (
	"fmt"

	"tempest/internal/gridio"
	"tempest/internal/ir"
	"tempest/internal/state"
)

// Observe evaluates every observable of s's program on its current state, in the order the
// language defines (ir.ReduceF64, ir.ReduceI64). before holds, by grid index, the values one
// step earlier of the one-level grids in ir.Program.PrevObserved (nil: the current values, as
// before the first step); two-level grids read their own previous level.
func Observe(s *state.State, before []*gridio.Array) []float64 {
	p := s.Prog
	out := make([]float64, len(p.Observes))
	if len(p.Observes) == 0 {
		return out
	}
	view := *s
	view.Prev = append([]*gridio.Array(nil), s.Prev...)
	for _, g := range p.PrevObserved() {
		view.Prev[g.Index] = s.Cur[g.Index]
		if before != nil && before[g.Index] != nil {
			view.Prev[g.Index] = before[g.Index]
		}
	}
	n := s.Cells()
	for _, o := range p.Observes {
		ev := newEvaluator(&view)
		var fs []float64
		var is []int64
		if o.Accum() == ir.I64 {
			is = make([]int64, n)
		} else {
			fs = make([]float64, n)
		}
		forEachCell(s.Shape, func(c []int, i int) {
			ev.at(c)
			v := ev.eval(o.Value)
			switch {
			case v.T.IsFloat():
				fs[i] = v.F
			case v.T.IsInt():
				is[i] = v.I
			default:
				panic(fmt.Sprintf("internal error: observable %s of type %s", o.Name, v.T))
			}
		})
		if is != nil {
			out[o.Index] = o.Finish(float64(ir.ReduceI64(o.Op, is)), n)
		} else {
			out[o.Index] = o.Finish(ir.ReduceF64(o.Op, fs), n)
		}
	}
	return out
}
