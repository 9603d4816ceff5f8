package cpu

import (
	"runtime"
	"sync"

	"tempest/internal/gridio"
	"tempest/internal/ir"
	"tempest/internal/state"
)

// levelBuf is grid g's padded buffer at level: a one-level grid's level 1 is the buffer the
// last step read, which holds the values before that step (what an observable's .prev reads;
// before the first step it holds the initial values).
func (e *Engine) levelBuf(g, level int) any {
	if level == 1 && e.s.Prog.Grids[g].Levels == 1 {
		return e.next[g]
	}
	return e.bufs[g][level]
}

// Observe evaluates every observable on the engine's current values, bit for bit what
// ref.Observe gives: the cells' values are computed by compiled closures row segment by row
// segment, each chunk of ir.ReduceWidth cells reduced by the language's tree in parallel,
// the chunks' results then by ir.ReduceLevels.
func (e *Engine) Observe() []float64 {
	p := e.s.Prog
	out := make([]float64, len(p.Observes))
	if len(p.Observes) == 0 {
		return out
	}
	e.prepareObserve()
	n := e.s.Cells()
	chunks := (n + ir.ReduceWidth - 1) / ir.ReduceWidth
	for _, o := range p.Observes {
		fparts := make([]float64, chunks)
		iparts := make([]int64, chunks)
		var wg sync.WaitGroup
		nw := len(e.obs)
		for k, w := range e.obs {
			lo, hi := chunks*k/nw, chunks*(k+1)/nw
			if lo == hi {
				continue
			}
			wg.Add(1)
			go func(w *worker, f fn) {
				defer wg.Done()
				w.observe(o, f, lo, hi, fparts, iparts)
			}(w, e.obsFns[k][o.Index])
		}
		wg.Wait()
		if o.Accum() == ir.I64 {
			c := func(a, b int64) int64 { return ir.CombineI64(o.Op, a, b) }
			out[o.Index] = o.Finish(float64(ir.ReduceLevels(iparts, ir.IdentityI64(o.Op), c)), n)
		} else {
			c := func(a, b float64) float64 { return ir.CombineF64(o.Op, a, b) }
			out[o.Index] = o.Finish(ir.ReduceLevels(fparts, ir.IdentityF64(o.Op), c), n)
		}
	}
	return out
}

// prepareObserve compiles the observables once and brings the halos of every level they may
// read up to date (a step refills them only at its start).
func (e *Engine) prepareObserve() {
	p := e.s.Prog
	d := p.Dims()
	if e.obs == nil {
		for i := 0; i < runtime.GOMAXPROCS(0); i++ {
			w := &worker{e: e, lets: make([]val, len(p.Lets)), letDone: make([]bool, len(p.Lets)), coord: make([]int, d)}
			c := &compiler{e: e, last: d - 1}
			var fns []fn
			for _, o := range p.Observes {
				fns = append(fns, c.compile(o.Value))
			}
			e.obs = append(e.obs, w)
			e.obsFns = append(e.obsFns, fns)
		}
	}
	for _, g := range p.Grids {
		if g.Update == nil && !hasEdge(g) {
			continue
		}
		for l := 0; l < g.Levels; l++ {
			e.fillHalo(g, l)
		}
	}
	for _, g := range p.PrevObserved() {
		e.fillHaloBuf(g, e.next[g.Index])
	}
}

// observe reduces chunks [lo, hi) of ir.ReduceWidth cells of observable o into fparts or
// iparts (by o.Accum).
func (w *worker) observe(o *ir.Observe, f fn, lo, hi int, fparts []float64, iparts []int64) {
	e := w.e
	d := len(e.s.Shape)
	W := e.s.Shape[d-1]
	n := e.s.Cells()
	var fv [ir.ReduceWidth]float64
	var iv [ir.ReduceWidth]int64
	t := o.Value.Type()
	for ch := lo; ch < hi; ch++ {
		first, last := ch*ir.ReduceWidth, min(n, (ch+1)*ir.ReduceWidth)
		for i := first; i < last; {
			row, x0 := i/W, i%W
			r := row
			w.base = e.halo[d-1]
			for a := d - 2; a >= 0; a-- {
				w.coord[a] = r % e.s.Shape[a]
				r /= e.s.Shape[a]
			}
			for a := 0; a < d-1; a++ {
				w.base += (w.coord[a] + e.halo[a]) * e.pstride[a]
			}
			w.x0, w.n = x0, min(last-i, W-x0)
			for k := range w.letDone {
				w.letDone[k] = false
			}
			v := f(w)
			at := i - first
			if v.uni {
				for k := 0; k < w.n; k++ {
					if t.IsInt() {
						iv[at+k] = v.u.I
					} else {
						fv[at+k] = v.u.F
					}
				}
			} else {
				switch x := v.data.(type) {
				case []float32:
					for k, y := range x[:w.n] {
						fv[at+k] = float64(y)
					}
				case []float64:
					copy(fv[at:], x[:w.n])
				case []int32:
					for k, y := range x[:w.n] {
						iv[at+k] = int64(y)
					}
				case []int64:
					copy(iv[at:], x[:w.n])
				default:
					panic("internal error: observable of a non-numeric type")
				}
			}
			i += w.n
		}
		if t.IsInt() {
			iparts[ch] = ir.ReduceTree(iv[:last-first], ir.IdentityI64(o.Op), func(a, b int64) int64 { return ir.CombineI64(o.Op, a, b) })
		} else {
			fparts[ch] = ir.ReduceTree(fv[:last-first], ir.IdentityF64(o.Op), func(a, b float64) float64 { return ir.CombineF64(o.Op, a, b) })
		}
	}
}

// ObserveState evaluates every observable on the values of s as they are, bit for bit what
// ref.Observe(s, before) gives but compiled and spread over the cores (the interpreter takes
// minutes on a large grid): what observes a state gathered from the sub-domains of a split run.
// before holds, by grid index, the values before the last step of the one-level grids whose
// .prev an observable reads (ir.Program.PrevObserved); where it holds none, .prev reads the
// current values, as before a run's first step. It pads a copy of every grid.
func ObserveState(s *state.State, before []*gridio.Array) []float64 {
	if len(s.Prog.Observes) == 0 {
		return make([]float64, 0)
	}
	e := New(s)
	for _, g := range s.Prog.PrevObserved() {
		if before != nil && before[g.Index] != nil {
			e.next[g.Index] = e.pad(g, before[g.Index])
		}
	}
	return e.Observe()
}
