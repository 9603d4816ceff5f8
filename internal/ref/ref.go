// Package ref is the reference interpreter: a slow, direct reading of the IR that defines what
// every program means. Engines are correct when they agree with it.
package ref

import (
	"fmt"
	"math"
	"runtime"
	"sync"

	"tempest/internal/gridio"
	"tempest/internal/ir"
	"tempest/internal/state"
)

// evaluator evaluates expressions at one cell.
type evaluator struct {
	s        *state.State
	coord    []int
	lets     []ir.Value
	letDone  []bool
	edge     ir.Value // value of `value` inside an edge expression
	grid     int      // grid whose initial value is being computed (rand)
	linear   int      // linear index of the cell (rand)
	level    int      // level being initialised (rand)
	strides  []int
	rimCheck bool
	// interior says every read of the expression evaluated lies inside the domain (the cell
	// is at least the update's reach from every edge): reads are then plain offsets from
	// linear.
	interior bool
}

func newEvaluator(s *state.State) *evaluator {
	ev := &evaluator{s: s, coord: make([]int, len(s.Shape)), lets: make([]ir.Value, len(s.Prog.Lets)),
		letDone: make([]bool, len(s.Prog.Lets))}
	ev.strides = strides(s.Shape)
	return ev
}

func strides(shape []int) []int {
	st := make([]int, len(shape))
	n := 1
	for i := len(shape) - 1; i >= 0; i-- {
		st[i] = n
		n *= shape[i]
	}
	return st
}

func (ev *evaluator) at(coord []int) {
	copy(ev.coord, coord)
	for i := range ev.letDone {
		ev.letDone[i] = false
	}
}

func (ev *evaluator) eval(e ir.Expr) ir.Value {
	switch e := e.(type) {
	case *ir.Const:
		return e.V
	case *ir.ParamRef:
		return ev.s.Params[e.P.Index]
	case *ir.LetRef:
		i := e.L.Index
		if !ev.letDone[i] {
			ev.lets[i] = ev.eval(e.L.Value)
			ev.letDone[i] = true
		}
		return ev.lets[i]
	case *ir.Coord:
		return ir.Value{T: ir.I32, I: int64(ev.coord[e.Axis])}
	case *ir.Size:
		return ir.Value{T: ir.I32, I: int64(ev.s.Shape[e.Axis])}
	case *ir.Step:
		return ir.Value{T: ir.I32, I: int64(int32(ev.s.Steps))}
	case *ir.EdgeValue:
		return ev.edge
	case *ir.Rand:
		return ir.MakeFloat(e.T, Rand(ev.s.Seed, ev.grid, ev.level, ev.linear, e.T))
	case *ir.Load:
		return ev.load(e)
	case *ir.Unary:
		return ir.EvalUnary(e.Op, ev.eval(e.X))
	case *ir.Binary:
		x := ev.eval(e.X)
		// && and || do not evaluate their right side when the left decides.
		if e.Op == "&&" && !x.B {
			return x
		}
		if e.Op == "||" && x.B {
			return x
		}
		return ir.EvalBinary(e.Op, x, ev.eval(e.Y))
	case *ir.Select:
		if ev.eval(e.C).B {
			return ev.eval(e.A)
		}
		return ev.eval(e.B)
	case *ir.Call:
		var buf [3]ir.Value
		args := buf[:0]
		for _, a := range e.Args {
			args = append(args, ev.eval(a))
		}
		return ir.EvalCall(e.Fn, e.T, args)
	case *ir.Convert:
		return ir.ConvertValue(ev.eval(e.X), e.To)
	}
	panic(fmt.Sprintf("internal error: reference cannot evaluate %T", e))
}

// load reads a grid at the current cell plus the load's offsets, applying boundary rules.
func (ev *evaluator) load(l *ir.Load) ir.Value {
	g := l.G
	var arr *gridio.Array
	if l.Level == 0 {
		arr = ev.s.Cur[g.Index]
	} else {
		arr = ev.s.Prev[g.Index]
	}
	base := 0
	if l.Layer != nil {
		layer := int(ev.eval(l.Layer).I)
		layer = min(max(layer, 0), ev.s.Layers[g.Index]-1)
		base = layer * ev.s.Cells()
	}
	// A read inside the domain is an index; the boundary rules decide the others.
	if ev.interior {
		i := ev.linear
		for a, o := range l.Off {
			i += o * ev.strides[a]
		}
		return state.Get(arr, g.Type, base+i)
	}
	i, inside := 0, true
	for a, c := range ev.coord {
		q := c + l.Off[a]
		inside = inside && q >= 0 && q < ev.s.Shape[a]
		i += q * ev.strides[a]
	}
	if inside {
		return state.Get(arr, g.Type, base+i)
	}
	p := make([]int, len(ev.coord))
	for a := range p {
		p[a] = ev.coord[a] + l.Off[a]
	}
	return Read(ev.s, g, arr, base, p, func(bc ir.BC, at []int, near ir.Value) ir.Value {
		sub := &evaluator{s: ev.s, coord: at, edge: near, strides: ev.strides}
		return sub.eval(bc.Value)
	})
}

// Read returns grid g's value at coordinates p (which may lie outside the domain), reading
// array arr from element offset base. Index rules remap coordinates first; if a coordinate is
// still outside, the first such axis's value rule decides, through valueRule.
func Read(s *state.State, g *ir.Grid, arr *gridio.Array, base int, p []int,
	valueRule func(bc ir.BC, at []int, nearest ir.Value) ir.Value) ir.Value {
	q := make([]int, len(p))
	i, valueAxis := Locate(s, g, p, q)
	v := state.Get(arr, g.Type, base+i)
	if valueAxis >= 0 {
		return valueRule(g.BC[valueAxis], q, v)
	}
	return v
}

// Locate applies grid g's index rules to coordinates p, leaving the mapped coordinates in q,
// and returns the element index of the cell read (the nearest in-domain cell where a value
// rule decides) and the first axis whose value rule decides (-1 when none does). Engines that
// carry more than a value per cell (the error bounds) read their own arrays through it.
func Locate(s *state.State, g *ir.Grid, p, q []int) (idx, valueAxis int) {
	valueAxis = -1
	copy(q, p)
	for a, n := range s.Shape {
		if q[a] >= 0 && q[a] < n {
			continue
		}
		if m, ok := ir.MapIndex(g.BC[a].Kind, q[a], n); ok {
			q[a] = m
		} else if valueAxis < 0 {
			valueAxis = a
		}
	}
	for a, n := range s.Shape {
		idx = idx*n + min(max(q[a], 0), n-1)
	}
	return idx, valueAxis
}

// Rand is the deterministic uniform [0,1) value for rand() at one cell: a SplitMix64 hash of
// the seed, grid, level and cell index, with as many bits as type t holds.
func Rand(seed uint64, grid, level, linear int, t ir.Type) float64 {
	z := seed*0x9E3779B97F4A7C15 ^ uint64(grid+1)*0xBF58476D1CE4E5B9 ^ uint64(level+1)*0x94D049BB133111EB ^ uint64(linear)
	z += 0x9E3779B97F4A7C15
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	z ^= z >> 31
	if t == ir.F32 {
		return float64(z>>40) / (1 << 24)
	}
	return float64(z>>11) / (1 << 53)
}

// forEachCell calls f with every coordinate of shape in C order and its linear index.
func forEachCell(shape []int, f func(c []int, i int)) {
	c := make([]int, len(shape))
	n := 1
	for _, d := range shape {
		n *= d
	}
	for i := 0; i < n; i++ {
		f(c, i)
		for a := len(shape) - 1; a >= 0; a-- {
			c[a]++
			if c[a] < shape[a] {
				break
			}
			c[a] = 0
		}
	}
}

// Init sets every grid's initial values from its init (and prev) expressions; grids without
// one are left as they are (zero when new), so callers can load data first. Rows are spread
// over all cores: initial values of a large grid would otherwise take longer than the run.
func Init(s *state.State) {
	for _, g := range s.Prog.Grids {
		set := func(arr *gridio.Array, e ir.Expr, level int) {
			ParallelCells(s.Shape, func(lo, hi int) {
				ev := newEvaluator(s)
				ev.grid, ev.level = g.Index, level
				c := make([]int, len(s.Shape))
				for i := lo; i < hi; i++ {
					rest := i
					for a := len(s.Shape) - 1; a >= 0; a-- {
						c[a] = rest % s.Shape[a]
						rest /= s.Shape[a]
					}
					ev.at(c)
					ev.linear = i
					v := ir.ConvertValue(ev.eval(e), g.Type)
					for l := 0; l < max(s.Layers[g.Index], 1); l++ {
						state.Set(arr, l*s.Cells()+i, v)
					}
				}
			})
		}
		if g.Init != nil {
			set(s.Cur[g.Index], g.Init, 0)
		}
		if g.Levels > 1 {
			if g.Prev != nil {
				set(s.Prev[g.Index], g.Prev, 1)
			} else {
				s.Prev[g.Index] = state.CopyArray(s.Cur[g.Index])
			}
		}
	}
}

// ParallelCells splits the cells of shape into one contiguous range per core (a single range
// for small shapes) and calls f on each concurrently.
func ParallelCells(shape []int, f func(lo, hi int)) {
	n := 1
	for _, d := range shape {
		n *= d
	}
	workers := runtime.GOMAXPROCS(0)
	if n < 1<<14 {
		workers = 1
	}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		lo, hi := n*w/workers, n*(w+1)/workers
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(lo, hi)
		}()
	}
	wg.Wait()
}

// InRim reports whether c lies in the band a fixed boundary leaves alone.
func InRim(c, shape, rim []int) bool {
	for a, r := range rim {
		if r > 0 && (c[a] < r || c[a] >= shape[a]-r) {
			return true
		}
	}
	return false
}

// Step advances s by one step. Cells are independent within a step, so they are spread over
// all cores: --verify runs the reference for every step of a run.
func Step(s *state.State) {
	next := make([]*gridio.Array, len(s.Prog.Grids))
	for _, u := range s.Prog.Updates {
		g := u.Grid
		out := gridio.NewArray(state.DType(g.Type), s.Shape)
		old := s.Cur[g.Index]
		reach := ir.Reach(u.Value, len(s.Shape))
		ParallelCells(s.Shape, func(lo, hi int) {
			ev := newEvaluator(s)
			c := make([]int, len(s.Shape))
			rest := lo
			for a := len(s.Shape) - 1; a >= 0; a-- {
				c[a] = rest % s.Shape[a]
				rest /= s.Shape[a]
			}
			for i := lo; i < hi; i++ {
				if InRim(c, s.Shape, g.Rim) {
					state.Set(out, i, state.Get(old, g.Type, i))
				} else {
					ev.at(c)
					ev.linear, ev.interior = i, true
					for a, r := range reach {
						ev.interior = ev.interior && c[a] >= r && c[a] < s.Shape[a]-r
					}
					state.Set(out, i, ev.eval(u.Value))
				}
				for a := len(s.Shape) - 1; a >= 0; a-- {
					c[a]++
					if c[a] < s.Shape[a] {
						break
					}
					c[a] = 0
				}
			}
		})
		next[g.Index] = out
	}
	for _, u := range s.Prog.Updates {
		g := u.Grid
		if g.Levels > 1 {
			s.Prev[g.Index] = s.Cur[g.Index]
		}
		s.Cur[g.Index] = next[g.Index]
	}
	s.Steps++
}

// Run advances s by n steps.
func Run(s *state.State, n int) {
	for i := 0; i < n; i++ {
		Step(s)
	}
}

// Compare reports the largest absolute difference and the RMS difference between the
// current levels of two states' state grids; NaN where one is NaN and the other is not.
func Compare(a, b *state.State) (maxAbs, rms float64) {
	var sum float64
	var n int
	for _, u := range a.Prog.Updates {
		x := a.Cur[u.Grid.Index].Float64s()
		y := b.Cur[u.Grid.Index].Float64s()
		for i := range x {
			if math.IsNaN(x[i]) != math.IsNaN(y[i]) {
				return math.NaN(), math.NaN()
			}
			if math.IsNaN(x[i]) || x[i] == y[i] {
				n++
				continue
			}
			d := math.Abs(x[i] - y[i])
			maxAbs = max(maxAbs, d)
			sum += d * d
			n++
		}
	}
	if n > 0 {
		rms = math.Sqrt(sum / float64(n))
	}
	return maxAbs, rms
}

// EvalAt evaluates an expression that reads no grids (a boundary constant or edge value) at
// coordinates coord, with `value` bound to edge. Engines use it to fill halos exactly as the
// reference reads them.
func EvalAt(s *state.State, e ir.Expr, coord []int, edge ir.Value) ir.Value {
	ev := &evaluator{s: s, coord: coord, edge: edge}
	return ev.eval(e)
}
