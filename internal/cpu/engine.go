// Package cpu is Tempest's fast CPU engine. It keeps every grid in a padded array whose halo
// holds the boundary values, compiles each update into closures that work on chunks of a row
// (so no per-cell interpretation remains), and spreads rows over all cores. Its results equal
// the reference interpreter's: bitwise for integers, and for floats too, since every
// operation rounds as the reference's does.
package cpu

import (
	"fmt"
	"runtime"
	"sync"

	"tempest/internal/gridio"
	"tempest/internal/ir"
	"tempest/internal/native"
	"tempest/internal/ref"
	"tempest/internal/state"
)

// chunk is the number of cells evaluated together: small enough that a node's buffer stays in
// L1, large enough to amortize the closure calls.
const chunk = 1024

// Engine runs a program on the CPU.
type Engine struct {
	s       *state.State
	halo    []int // per axis: ghost cells on each side
	pshape  []int
	pstride []int
	pcells  int
	bufs    [][2]any // per grid, per level: padded data
	next    []any    // per state grid: padded buffer the step writes
	workers []*worker
	updates []*ir.Update
	obs     []*worker // observation workers, compiled on first use
	obsFns  [][]fn    // per observation worker, per observable
	// readsHalo says, per grid, whether an update reads its ghost cells: not where every read
	// stays within the fixed rim of the grid updated (AN5D's stencils), whose halos then need
	// no refill between steps.
	readsHalo []bool
	// nat is the step compiled to C (nil: the Go closures run it); natErr says why not.
	nat    *nativeStep
	natErr error
	// pending, while the C code builds in the background, closes when pendNat and pendErr
	// hold the outcome; tookOver is the step at which it was adopted (-1: not yet, 0: from
	// the start).
	pending  chan struct{}
	pendNat  *nativeStep
	pendErr  error
	tookOver int
}

// Label is Code in a few characters, for tables: "c, bt 8", "c" or "go".
func (e *Engine) Label() string {
	switch {
	case e.nat == nil:
		return "go"
	case e.nat.bt > 1:
		return fmt.Sprintf("c, bt %d", e.nat.bt)
	}
	return "c"
}

// Code says what computes the steps, for reports: the C compiler that built them, or the Go
// code and why no C was built.
func (e *Engine) Code() string {
	if e.pending != nil {
		name := "the C compiler"
		if cc, err := native.Find(); err == nil {
			name = cc.Name()
		}
		return "Go while " + name + " builds its C, which takes over when ready"
	}
	if e.nat != nil && e.nat.bt > 1 {
		return fmt.Sprintf("%s, %d steps per sweep", e.nat.desc, e.nat.bt)
	}
	if e.nat != nil {
		return e.nat.desc
	}
	if e.natErr == nil {
		return "Go"
	}
	return "Go; " + e.natErr.Error()
}

// worker holds one goroutine's compiled updates and buffers.
type worker struct {
	e       *Engine
	fns     []fn
	lets    []val
	letDone []bool
	coord   []int // row coordinates; the last is unused
	base    int   // padded index of the row's cell x=0
	x0, n   int   // chunk start and length
	// dst, when not nil, is where the update being evaluated may write its chunk directly
	// (the root node only); wrote says that it did.
	dst   any
	wrote bool
}

// New builds an engine over s; s is not touched until Sync.
func New(s *state.State) *Engine {
	p := s.Prog
	e := &Engine{s: s, updates: p.Updates}
	d := p.Dims()
	// Observables may read further than the updates.
	e.halo = p.Reach()
	for a, r := range p.ObserveReach() {
		e.halo[a] = max(e.halo[a], r)
	}
	e.pshape = make([]int, d)
	e.pstride = make([]int, d)
	e.pcells = 1
	for a := d - 1; a >= 0; a-- {
		e.pshape[a] = s.Shape[a] + 2*e.halo[a]
		e.pstride[a] = e.pcells
		e.pcells *= e.pshape[a]
	}
	e.bufs = make([][2]any, len(p.Grids))
	e.next = make([]any, len(p.Grids))
	for _, g := range p.Grids {
		for l := 0; l < g.Levels; l++ {
			src := s.Cur[g.Index]
			if l == 1 {
				src = s.Prev[g.Index]
			}
			e.bufs[g.Index][l] = e.pad(g, src)
			e.fillHalo(g, l)
		}
		if g.Update != nil {
			e.next[g.Index] = e.pad(g, s.Cur[g.Index])
		}
	}
	n := runtime.GOMAXPROCS(0)
	for i := 0; i < n; i++ {
		w := &worker{e: e, lets: make([]val, len(p.Lets)), letDone: make([]bool, len(p.Lets)), coord: make([]int, d)}
		c := &compiler{e: e, last: d - 1}
		for _, u := range p.Updates {
			w.fns = append(w.fns, c.compileRoot(u.Value))
		}
		e.workers = append(e.workers, w)
	}
	e.readsHalo = make([]bool, len(p.Grids))
	for _, u := range p.Updates {
		ir.WalkDeep(u.Value, func(x ir.Expr) {
			if l, ok := x.(*ir.Load); ok {
				for a, o := range l.Off {
					if abs(o) > u.Grid.Rim[a] {
						e.readsHalo[l.G.Index] = true
					}
				}
			}
		})
	}
	if UseNative {
		e.startNative()
	}
	return e
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func (e *Engine) layers(g *ir.Grid) int { return max(e.s.Layers[g.Index], 1) }

// pad copies an unpadded array into a new padded one (halo left zero).
func (e *Engine) pad(g *ir.Grid, a *gridio.Array) any {
	layers := e.layers(g)
	out := newBuf(g.Type, layers*e.pcells)
	cells := e.s.Cells()
	for l := 0; l < layers; l++ {
		e.forRows(func(c []int, pbase, ubase int) {
			copyRange(out, l*e.pcells+pbase, a.Data, l*cells+ubase, e.s.Shape[len(e.s.Shape)-1])
		})
	}
	return out
}

// forRows calls f for every row of the domain with the row's coordinates, the padded index of
// its first cell and the unpadded index of its first cell.
func (e *Engine) forRows(f func(c []int, pbase, ubase int)) {
	d := len(e.s.Shape)
	c := make([]int, d)
	w := e.s.Shape[d-1]
	rows := e.s.Cells() / w
	for r := 0; r < rows; r++ {
		pbase := e.halo[d-1]
		for a := 0; a < d-1; a++ {
			pbase += (c[a] + e.halo[a]) * e.pstride[a]
		}
		f(c, pbase, r*w)
		for a := d - 2; a >= 0; a-- {
			c[a]++
			if c[a] < e.s.Shape[a] {
				break
			}
			c[a] = 0
		}
	}
}

func copyRange(dst any, di int, src any, si, n int) { gridio.CopyElems(dst, di, src, si, n) }

// Sync writes the engine's current values back into the state.
func (e *Engine) Sync() {
	for _, g := range e.s.Prog.Grids {
		if g.Update == nil {
			continue
		}
		for l := 0; l < g.Levels; l++ {
			dst := e.s.Cur[g.Index]
			if l == 1 {
				dst = e.s.Prev[g.Index]
			}
			buf := e.bufs[g.Index][l]
			e.forRows(func(c []int, pbase, ubase int) {
				copyRange(dst.Data, ubase, buf, pbase, e.s.Shape[len(e.s.Shape)-1])
			})
		}
	}
}

// Run advances the state by steps, calling progress (if not nil) after each step or block of
// steps with the number done.
func (e *Engine) Run(steps int, progress func(done int)) {
	for done := 0; done < steps; {
		e.poll()
		n := e.blockSteps(steps - done)
		e.advance(n)
		done += n
		if progress != nil {
			progress(done)
		}
	}
}

func hasEdge(g *ir.Grid) bool {
	for _, bc := range g.BC {
		if bc.Kind == ir.Edge {
			return true
		}
	}
	return false
}

func hasRim(g *ir.Grid) bool {
	for _, r := range g.Rim {
		if r > 0 {
			return true
		}
	}
	return false
}

func (e *Engine) step() { e.advance(1) }

// advance computes n steps at once: n > 1 only with the C code's temporal blocking.
func (e *Engine) advance(n int) {
	e.poll()
	p := e.s.Prog
	if e.s.Steps > 0 {
		for _, g := range p.Grids {
			if !e.readsHalo[g.Index] {
				continue // the updates never read its ghost cells (observables refill them)
			}
			// Current levels changed last step; edge values may depend on the step number.
			if g.Update != nil {
				e.fillHalo(g, 0)
			}
			if hasEdge(g) {
				for l := 0; l < g.Levels; l++ {
					if g.Update == nil || l > 0 {
						e.fillHalo(g, l)
					}
				}
			}
		}
	}
	for _, u := range e.updates {
		if u.Grid.Levels > 1 && hasRim(u.Grid) {
			// The buffer about to be written last held the previous level; give it the rim.
			copyRange(e.next[u.Grid.Index], 0, e.bufs[u.Grid.Index][0], 0, e.pcells)
		}
	}
	switch {
	case n > 1:
		e.nat.runBlock(e, n)
	case e.nat != nil:
		e.nat.run(e)
	default:
		e.runWorkers()
	}
	for _, u := range e.updates {
		gi := u.Grid.Index
		b := &e.bufs[gi]
		if u.Grid.Levels > 1 {
			b[1], b[0], e.next[gi] = b[0], e.next[gi], b[1]
		} else {
			b[0], e.next[gi] = e.next[gi], b[0]
		}
	}
	e.s.Steps += n
}

// runWorkers computes one step with the Go closures, rows in chunks spread over the workers.
func (e *Engine) runWorkers() {
	d := len(e.s.Shape)
	W := e.s.Shape[d-1]
	chunks := (W + chunk - 1) / chunk
	units := e.s.Cells() / W * chunks
	var wg sync.WaitGroup
	nw := len(e.workers)
	for k, w := range e.workers {
		lo, hi := units*k/nw, units*(k+1)/nw
		if lo == hi {
			continue
		}
		wg.Add(1)
		go func(w *worker) {
			defer wg.Done()
			w.run(lo, hi, chunks)
		}(w)
	}
	wg.Wait()
}

// run evaluates work units [lo, hi): unit = row*chunks + chunk index.
func (w *worker) run(lo, hi, chunks int) {
	e := w.e
	d := len(e.s.Shape)
	W := e.s.Shape[d-1]
	for unit := lo; unit < hi; unit++ {
		row, ch := unit/chunks, unit%chunks
		// Row coordinates, slowest first.
		r := row
		w.base = e.halo[d-1]
		for a := d - 2; a >= 0; a-- {
			w.coord[a] = r % e.s.Shape[a]
			r /= e.s.Shape[a]
		}
		for a := 0; a < d-1; a++ {
			w.base += (w.coord[a] + e.halo[a]) * e.pstride[a]
		}
		w.x0 = ch * chunk
		w.n = min(chunk, W-w.x0)
		for i := range w.letDone {
			w.letDone[i] = false
		}
		for k, u := range e.updates {
			g := u.Grid
			skip := false
			for a := 0; a < d-1; a++ {
				if rr := g.Rim[a]; rr > 0 && (w.coord[a] < rr || w.coord[a] >= e.s.Shape[a]-rr) {
					skip = true
				}
			}
			if skip {
				continue
			}
			xlo, xhi := 0, w.n
			if rr := g.Rim[d-1]; rr > 0 {
				xlo = max(0, rr-w.x0)
				xhi = min(w.n, W-rr-w.x0)
			}
			if xlo >= xhi {
				continue
			}
			out := e.next[g.Index]
			start := w.base + w.x0
			w.dst, w.wrote = nil, false
			if xlo == 0 && xhi == w.n {
				w.dst = view(out, start, w.n)
			}
			v := w.fns[k](w)
			w.dst = nil
			if w.wrote {
				continue
			}
			if v.uni {
				v = val{data: vector(v, g.Type, newBuf(g.Type, w.n), w.n)}
			}
			copyRange(out, start+xlo, v.data, xlo, xhi-xlo)
		}
	}
}

// fillHalo sets the ghost cells of grid g's level l from its boundary conditions.
func (e *Engine) fillHalo(g *ir.Grid, l int) { e.fillHaloBuf(g, e.bufs[g.Index][l]) }

// fillHaloBuf sets the ghost cells of buf, a padded buffer of grid g.
func (e *Engine) fillHaloBuf(g *ir.Grid, buf any) {
	for layer := 0; layer < e.layers(g); layer++ {
		base := layer * e.pcells
		if indexRulesOnly(g) {
			e.fillIndexed(g, buf, base)
		} else {
			e.fillGeneral(g, buf, base)
		}
	}
}

func indexRulesOnly(g *ir.Grid) bool {
	for _, bc := range g.BC {
		if bc.Kind == ir.Constant || bc.Kind == ir.Edge {
			return false
		}
	}
	return true
}

// fillIndexed fills halos for grids whose rules only remap coordinates. The maps are separable,
// so the fastest axis is filled along interior rows first, then each slower axis copies whole
// slabs that are already complete along the faster axes.
func (e *Engine) fillIndexed(g *ir.Grid, buf any, base int) {
	d := len(e.s.Shape)
	W, H := e.s.Shape[d-1], e.halo[d-1]
	if H > 0 {
		e.forRows(func(c []int, pbase, _ int) {
			for x := -H; x < 0; x++ {
				m, _ := ir.MapIndex(g.BC[d-1].Kind, x, W)
				copyRange(buf, base+pbase+x, buf, base+pbase+m, 1)
			}
			for x := W; x < W+H; x++ {
				m, _ := ir.MapIndex(g.BC[d-1].Kind, x, W)
				copyRange(buf, base+pbase+x, buf, base+pbase+m, 1)
			}
		})
	}
	for a := d - 2; a >= 0; a-- {
		n, h := e.s.Shape[a], e.halo[a]
		if h == 0 {
			continue
		}
		// Iterate over in-domain coordinates of the axes slower than a.
		outer := 1
		for b := 0; b < a; b++ {
			outer *= e.s.Shape[b]
		}
		c := make([]int, a)
		for o := 0; o < outer; o++ {
			off := base
			for b := 0; b < a; b++ {
				off += (c[b] + e.halo[b]) * e.pstride[b]
			}
			for x := -h; x < n+h; x++ {
				if x >= 0 && x < n {
					continue
				}
				m, _ := ir.MapIndex(g.BC[a].Kind, x, n)
				copyRange(buf, off+(x+h)*e.pstride[a], buf, off+(m+h)*e.pstride[a], e.pstride[a])
			}
			for b := a - 1; b >= 0; b-- {
				c[b]++
				if c[b] < e.s.Shape[b] {
					break
				}
				c[b] = 0
			}
		}
	}
}

// fillGeneral fills every ghost cell exactly as the reference reads out-of-domain cells; it is
// used for grids with constant or edge boundaries. It visits the ghost cells alone: whole rows
// outside the domain along a slower axis, and the ends of the rows inside it.
func (e *Engine) fillGeneral(g *ir.Grid, buf any, base int) {
	d := len(e.s.Shape)
	W, H := e.s.Shape[d-1], e.halo[d-1]
	p := make([]int, d)
	q := make([]int, d)
	rows := e.pcells / e.pshape[d-1]
	// A value rule that reads neither the cell's coordinates, its nearest value nor the step
	// has one value per fill: evaluated once, not per ghost cell.
	uniform := make([]*ir.Value, d)
	for a, bc := range g.BC {
		if bc.Kind != ir.Constant && bc.Kind != ir.Edge {
			continue
		}
		varies := false
		ir.WalkDeep(bc.Value, func(x ir.Expr) {
			switch x.(type) {
			case *ir.Coord, *ir.EdgeValue, *ir.Step, *ir.Load:
				varies = true
			}
		})
		if !varies {
			v := ref.EvalAt(e.s, bc.Value, make([]int, d), ir.Value{T: g.Type})
			uniform[a] = &v
		}
	}
	for r := 0; r < rows; r++ {
		// Padded row r's coordinates along the slower axes, and whether it lies inside.
		inside := true
		rest := r
		for a := d - 2; a >= 0; a-- {
			p[a] = rest%e.pshape[a] - e.halo[a]
			rest /= e.pshape[a]
			if p[a] < 0 || p[a] >= e.s.Shape[a] {
				inside = false
			}
		}
		cell := func(x int) {
			p[d-1] = x
			valueAxis := -1
			copy(q, p)
			for a, n := range e.s.Shape {
				if q[a] >= 0 && q[a] < n {
					continue
				}
				if m, ok := ir.MapIndex(g.BC[a].Kind, q[a], n); ok {
					q[a] = m
				} else if valueAxis < 0 {
					valueAxis = a
				}
			}
			src, dst := base, base
			for a := range q {
				src += (min(max(q[a], 0), e.s.Shape[a]-1) + e.halo[a]) * e.pstride[a]
				dst += (p[a] + e.halo[a]) * e.pstride[a]
			}
			switch {
			case valueAxis < 0:
				copyRange(buf, dst, buf, src, 1)
			case uniform[valueAxis] != nil:
				setAt(buf, dst, *uniform[valueAxis])
			default:
				near := getAt(buf, g.Type, src)
				v := ref.EvalAt(e.s, g.BC[valueAxis].Value, append([]int(nil), q...), near)
				setAt(buf, dst, v)
			}
		}
		if !inside {
			for x := -H; x < W+H; x++ {
				cell(x)
			}
			continue
		}
		for x := -H; x < 0; x++ {
			cell(x)
		}
		for x := W; x < W+H; x++ {
			cell(x)
		}
	}
}

func getAt(buf any, t ir.Type, i int) ir.Value {
	switch b := buf.(type) {
	case []float32:
		return ir.Value{T: t, F: float64(b[i])}
	case []float64:
		return ir.Value{T: t, F: b[i]}
	case []int32:
		return ir.Value{T: t, I: int64(b[i])}
	case []int64:
		return ir.Value{T: t, I: b[i]}
	}
	panic("internal error: buffer type")
}

func setAt(buf any, i int, v ir.Value) {
	switch b := buf.(type) {
	case []float32:
		b[i] = float32(v.F)
	case []float64:
		b[i] = v.F
	case []int32:
		b[i] = int32(v.I)
	case []int64:
		b[i] = v.I
	}
}
