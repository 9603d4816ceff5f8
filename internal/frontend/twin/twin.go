// Package twin compares two IR programs that should compute the same thing, such as an SL file
// or a C loop nest and its hand-written .stencil twin: same analysis (dimensions, radius, shape,
// FLOPs) and bitwise the same grids after a few steps on the CPU engine, starting from the same
// data. The frontends' tests use it; it lives outside them so that both share one definition of
// "the same".
package twin

import (
	"fmt"
	"math"

	"tempest/internal/analysis"
	"tempest/internal/cpu"
	"tempest/internal/ir"
	"tempest/internal/ref"
	"tempest/internal/state"
)

// SameAnalysis reports the first difference between the analyses of a and b in what the
// frontends must preserve: dimensions, radius, shape, points and floating-point operation
// counts. Integer operations and comparisons are not FLOPs and may differ with how a program is
// written (counting 26 neighbours, or 27 cells minus the centre).
func SameAnalysis(a, b *ir.Program) error {
	x, y := analysis.Analyze(a), analysis.Analyze(b)
	switch {
	case x.Dims != y.Dims:
		return fmt.Errorf("dims %d vs %d", x.Dims, y.Dims)
	case fmt.Sprint(x.Radius) != fmt.Sprint(y.Radius):
		return fmt.Errorf("radius %v vs %v", x.Radius, y.Radius)
	case x.Shape != y.Shape || x.Points != y.Points:
		return fmt.Errorf("shape %s/%d vs %s/%d", x.Shape, x.Points, y.Shape, y.Points)
	case x.FLOPs != y.FLOPs || flops(x.Ops) != flops(y.Ops):
		return fmt.Errorf("ops %+v (%d FLOPs) vs %+v (%d FLOPs)", x.Ops, x.FLOPs, y.Ops, y.FLOPs)
	case x.Type != y.Type:
		return fmt.Errorf("type %s vs %s", x.Type, y.Type)
	}
	return nil
}

// flops keeps the floating-point operation counts.
func flops(o analysis.Ops) analysis.Ops {
	o.IntOps, o.Compare = 0, 0
	return o
}

// Fill gives every cell of every grid (all layers and levels) a deterministic value from a
// hash of the seed, the grid's position among the grids of its role (state or input) and the
// cell index, so two programs whose grids are declared in the same order per role get the same
// data whatever the grids are called. Integer grids get 0..9 (or 0/1 when binary is set).
func Fill(s *state.State, seed uint64, binary bool) {
	roles := map[bool]int{}
	for _, g := range s.Prog.Grids {
		k := roles[g.Input]
		roles[g.Input]++
		role := 0
		if g.Input {
			role = 1
		}
		fill := func(level int) {
			arr := s.Cur[g.Index]
			if level == 1 {
				arr = s.Prev[g.Index]
			}
			if arr == nil {
				return
			}
			for i := 0; i < arr.Len(); i++ {
				r := ref.Rand(seed, 16*role+k, level, i, ir.F64)
				var v ir.Value
				switch {
				case g.Type.IsFloat():
					v = ir.MakeFloat(g.Type, r)
				case binary:
					v = ir.MakeInt(g.Type, int64(r*2))
				default:
					v = ir.MakeInt(g.Type, int64(r*10))
				}
				state.Set(arr, i, v)
			}
		}
		fill(0)
		if g.Levels > 1 {
			fill(1)
		}
	}
}

// Run builds a state of the given shape with parameters params (by name; others keep their
// defaults), fills it with Fill and advances it steps steps on the CPU engine.
func Run(p *ir.Program, shape []int, params map[string]float64, steps int, seed uint64, binary bool) (*state.State, error) {
	vals := state.DefaultParams(p)
	for _, prm := range p.Params {
		if v, ok := params[prm.Name]; ok {
			if prm.Type.IsFloat() {
				vals[prm.Index] = ir.MakeFloat(prm.Type, v)
			} else {
				vals[prm.Index] = ir.MakeInt(prm.Type, int64(v))
			}
		}
	}
	s, err := state.New(p, shape, vals, 3)
	if err != nil {
		return nil, err
	}
	Fill(s, seed, binary)
	e := cpu.New(s)
	e.Run(steps, nil)
	e.Sync()
	return s, nil
}

// SameState reports the first cell where the state grids of a and b differ (bitwise), matching
// grids by their order among the updated grids.
func SameState(a, b *state.State) error {
	if len(a.Prog.Updates) != len(b.Prog.Updates) {
		return fmt.Errorf("%d vs %d updated grids", len(a.Prog.Updates), len(b.Prog.Updates))
	}
	for i, u := range a.Prog.Updates {
		v := b.Prog.Updates[i]
		x, y := a.Cur[u.Grid.Index].Float64s(), b.Cur[v.Grid.Index].Float64s()
		if len(x) != len(y) {
			return fmt.Errorf("grid %s: %d vs %d cells", u.Grid.Name, len(x), len(y))
		}
		for c := range x {
			same := math.Float64bits(x[c]) == math.Float64bits(y[c]) || math.IsNaN(x[c]) && math.IsNaN(y[c])
			if !same {
				return fmt.Errorf("grid %s cell %d: %v vs %v", u.Grid.Name, c, x[c], y[c])
			}
		}
	}
	return nil
}
