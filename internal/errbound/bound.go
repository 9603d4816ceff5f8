package errbound

import (
	"math"
	"slices"
	"sync"

	"tempest/internal/gridio"
	"tempest/internal/ref"
	"tempest/internal/state"
)

// Result is the outcome of a bounded reference run.
type Result struct {
	Engine Arith
	Steps  int
	// Bound holds, by grid index, each state grid's per-cell bound on |engine - reference| for
	// the current level (nil for input grids).
	Bound [][]float64
	prev  [][]float64 // the previous level's bounds of two-level grids
	// Amplification is the largest one-step growth of a difference in the state seen in any
	// cell at any step (1 for a plain average; thousands for ill-conditioned updates).
	Amplification float64

	prog *compiled // the program compiled for bounded evaluation
}

// Run advances s by n steps exactly as the reference interpreter does (s's values end bitwise
// equal to ref.Run's) and returns the bounds an engine with accuracy eng stays within.
func Run(s *state.State, n int, eng Arith) *Result { return RunProgress(s, n, eng, nil) }

// RunProgress is Run, calling progress (when not nil) after each step with the steps done:
// the bounded reference of a large run takes minutes.
func RunProgress(s *state.State, n int, eng Arith, progress func(done int)) *Result {
	p := s.Prog
	r := &Result{Engine: eng, Bound: make([][]float64, len(p.Grids)), prev: make([][]float64, len(p.Grids))}
	for _, u := range p.Updates {
		g := u.Grid
		r.Bound[g.Index] = make([]float64, s.Cells())
		if g.Levels > 1 {
			r.prev[g.Index] = make([]float64, s.Cells())
		}
	}
	r.compileProgram(s)
	for i := 0; i < n; i++ {
		r.step(s)
		if progress != nil {
			progress(i + 1)
		}
	}
	r.Steps = n
	return r
}

// step advances s and the bounds by one step, spreading cells over all cores.
func (r *Result) step(s *state.State) {
	p := s.Prog
	cells := s.Cells()
	next := make([]*gridio.Array, len(p.Grids))
	nextB := make([][]float64, len(p.Grids))
	for _, u := range p.Updates {
		next[u.Grid.Index] = gridio.NewArray(state.DType(u.Grid.Type), s.Shape)
		nextB[u.Grid.Index] = make([]float64, cells)
	}
	var mu sync.Mutex
	ref.ParallelCells(s.Shape, func(lo, hi int) {
		ev := r.newEvaluator(s)
		c := make([]int, len(s.Shape))
		amp := 0.0
		for i := lo; i < hi; i++ {
			rest := i
			for a := len(s.Shape) - 1; a >= 0; a-- {
				c[a] = rest % s.Shape[a]
				rest /= s.Shape[a]
			}
			for k, u := range p.Updates {
				g := u.Grid
				if ref.InRim(c, s.Shape, g.Rim) {
					state.Set(next[g.Index], i, state.Get(s.Cur[g.Index], g.Type, i))
					nextB[g.Index][i] = r.Bound[g.Index][i]
					continue
				}
				v, e, a := ev.update(k, c, i)
				state.Set(next[g.Index], i, v)
				nextB[g.Index][i] = e
				amp = max(amp, a)
			}
		}
		mu.Lock()
		r.Amplification = max(r.Amplification, amp)
		mu.Unlock()
	})
	for _, u := range p.Updates {
		g := u.Grid
		if g.Levels > 1 {
			s.Prev[g.Index] = s.Cur[g.Index]
			r.prev[g.Index] = r.Bound[g.Index]
		}
		s.Cur[g.Index] = next[g.Index]
		r.Bound[g.Index] = nextB[g.Index]
	}
	s.Steps++
}

// Verdict is the comparison of an engine's state with the bounded reference run.
type Verdict struct {
	Cells   int     // cells compared
	Outside int     // cells whose difference exceeds their bound
	Where   []int   // the first such cell's coordinates (slowest axis first)
	Grid    string  // its grid
	Diff    float64 // its difference
	Bound   float64 // and its bound
	Ratio   float64 // the largest difference / bound over all cells with a difference
	MaxB    float64 // the largest bound
	Median  float64 // the median bound
	P99     float64 // the 99th percentile bound
}

// Check compares got's state grids with the reference state refS that Run left, cell by cell.
func (r *Result) Check(refS, got *state.State) Verdict {
	var v Verdict
	var all []float64
	for _, u := range refS.Prog.Updates {
		g := u.Grid
		want, have := refS.Cur[g.Index].Float64s(), got.Cur[g.Index].Float64s()
		b := r.Bound[g.Index]
		all = append(all, b...)
		for i := range want {
			v.Cells++
			d := math.Abs(want[i] - have[i])
			if want[i] == have[i] || (math.IsNaN(want[i]) && math.IsNaN(have[i])) {
				continue
			}
			// Allow the bound's own float64 rounding.
			if math.IsNaN(d) || d > b[i]*(1+1e-9) {
				if v.Outside == 0 {
					v.Where, v.Grid, v.Diff, v.Bound = coords(refS.Shape, i), g.Name, d, b[i]
				}
				v.Outside++
			}
			if b[i] > 0 {
				v.Ratio = max(v.Ratio, d/b[i])
			} else if d > 0 {
				v.Ratio = math.Inf(1)
			}
		}
	}
	if len(all) > 0 {
		slices.Sort(all)
		v.MaxB = all[len(all)-1]
		v.Median = all[len(all)/2]
		v.P99 = all[len(all)*99/100]
	}
	return v
}

func coords(shape []int, i int) []int {
	c := make([]int, len(shape))
	for a := len(shape) - 1; a >= 0; a-- {
		c[a] = i % shape[a]
		i /= shape[a]
	}
	return c
}
