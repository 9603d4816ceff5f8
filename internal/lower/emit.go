// Package lower turns a stencil program and a plan into kernels (kernel IR) and a launch
// schedule. Each strategy lives in its own file; this file holds what they share: kernel
// parameters, expression emission and boundary-aware global reads.
package lower

import (
	"fmt"
	"math"

	"tempest/internal/ir"
	"tempest/internal/kir"
)

// Role says which buffer of a grid an argument is.
type Role int

const (
	In0  Role = iota // current level, read
	In1              // previous level, read
	Out0             // next current level, written
	Out1             // next previous level, written (multi-step launches of two-level grids)
)

// ArgKind classifies a launch argument.
type ArgKind int

const (
	ArgBuffer ArgKind = iota // a grid buffer: Grid, Role
	ArgSize                  // the domain extent along Axis (i32)
	ArgStep                  // steps completed before this launch (i32)
	ArgParam                 // a program parameter: Param
	ArgLayers                // layer count of a layered grid: Grid (i32)
	ArgConst                 // a value fixed at lowering time: Value (i32)
	// The three arguments of a chained kernel (plan.Chain, kir.ChainWait): the runner's flag
	// buffer (u32, one per block position), the launch's epoch, which its blocks store as their
	// flag, and the epoch they wait for (the launch before's, or 0: none, the launch was not
	// chained).
	ArgChainFlags
	ArgChainEpoch
	ArgChainWait
	// ArgRowsLo and ArgRowsHi are the planes of the streamed axis an n5d launch writes, zlo
	// to zhi-1 (plan.Ranges): the whole axis unless the runner launches a range.
	ArgRowsLo
	ArgRowsHi
	// ArgScratch is the host's per-thread scratch of a state grid: Grid (HostKernel.Block's
	// rings of intermediate rows, HostRingCells elements).
	ArgScratch
	// ArgPitch is the elements from one row of the device arrays to the next (i32; Lowered.Pitch,
	// plan.Align).
	ArgPitch
)

// pitchName is the kernel parameter holding the row pitch (ArgPitch).
const pitchName = "pitch"

// pitchParam adds the row pitch to a kernel's parameters and launch arguments (plan.Align).
func pitchParam(ps []kir.Param, as []Arg) ([]kir.Param, []Arg) {
	return append(ps, kir.Param{Name: pitchName, Type: kir.I32}), append(as, Arg{Kind: ArgPitch})
}

// Arg is one kernel argument, bound by the runner at launch time.
type Arg struct {
	Kind  ArgKind
	Grid  int
	Role  Role
	Axis  int
	Param int
	Value int64
}

// Launch is one kernel launch of the schedule.
type Launch struct {
	Kernel string
	Grid   [3]int // blocks: the strategy's formula (GridDims) for the shape, filled in by Lower
	Block  [3]int // threads per block
	Shared int    // dynamic shared memory bytes
	Args   []Arg
	Steps  int // time steps the launch advances (its kernel's temporal depth)
	// Chain says a launch of this kernel that directly follows one of the same kernel may run
	// as a programmatic dependent launch of it (plan.Chain; the kernel takes the ArgChain
	// arguments).
	Chain bool
	// Rim are the planes near each end of the streamed axis that an n5d kernel's blocks of
	// their own take (plan.RimBlocks, N5DRimBlocks), zero without them: a launch over a range
	// of planes (plan.Ranges) counts its chunks by them (N5DRangeChunks).
	Rim [2]int
}

// Lowered is a program lowered for one plan and size: kernels and how to launch them.
type Lowered struct {
	Module *kir.Module
	// Launches maps a step count to the launch that advances that many steps; the runner
	// covers n steps with the deepest launches first, then shallower ones.
	Launches    []Launch
	SharedBytes int
	// Schedule is Launches deepest first (equal depths in Launches' order): the order in
	// which the host covers a step count (LaunchesFor, Cover).
	Schedule []Launch
	// Depth is the most steps one launch advances (Schedule[0].Steps; 1 at least). Runs that
	// stop every so often keep their stops at multiples of it, so that every launch but the
	// last of a run stays the deepest.
	Depth int
	// Wide says the kernels index elements with 64-bit integers (Wide's rule for the shape
	// lowered for).
	Wide bool
	// Pitch is the elements from one row of the device arrays to the next (plan.Align,
	// plan.RowPitch of the last axis), 0 where the arrays are dense.
	Pitch int
}

func bufName(g *ir.Grid, r Role) string {
	return fmt.Sprintf("%s_%s", []string{"in0", "in1", "out0", "out1"}[r], g.Name)
}

// params builds the common parameter list and the matching launch arguments: grid buffers for
// the given roles, sizes, step, layer counts and program parameters.
func params(p *ir.Program, roles func(g *ir.Grid) []Role) ([]kir.Param, []Arg) {
	var ps []kir.Param
	var as []Arg
	for _, g := range p.Grids {
		for _, r := range roles(g) {
			ps = append(ps, kir.Param{Name: bufName(g, r), Type: kir.FromIR(g.Type), Pointer: true, Const: r == In0 || r == In1})
			as = append(as, Arg{Kind: ArgBuffer, Grid: g.Index, Role: r})
		}
	}
	for a := range p.Axes {
		ps = append(ps, kir.Param{Name: fmt.Sprintf("n%d", a), Type: kir.I32})
		as = append(as, Arg{Kind: ArgSize, Axis: a})
	}
	ps = append(ps, kir.Param{Name: "step0", Type: kir.I32})
	as = append(as, Arg{Kind: ArgStep})
	for _, g := range p.Grids {
		if g.Layers != nil {
			ps = append(ps, kir.Param{Name: "layers_" + g.Name, Type: kir.I32})
			as = append(as, Arg{Kind: ArgLayers, Grid: g.Index})
		}
	}
	for _, pr := range p.Params {
		ps = append(ps, kir.Param{Name: "p_" + pr.Name, Type: kir.FromIR(pr.Type)})
		as = append(as, Arg{Kind: ArgParam, Param: pr.Index})
	}
	return ps, as
}

// readRoles is what single-step kernels take: every level of every grid, and an output for
// each state grid.
func readRoles(g *ir.Grid) []Role {
	r := []Role{In0}
	if g.Levels > 1 {
		r = append(r, In1)
	}
	if g.Update != nil {
		r = append(r, Out0)
	}
	return r
}

// emitter turns IR expressions into kernel expressions for one cell.
type emitter struct {
	p      *ir.Program
	wide   bool       // 64-bit element indices
	coords []kir.Expr // the cell's coordinates, slowest axis first
	step   kir.Expr   // steps completed before the one being computed
	read   func(em *emitter, l *ir.Load) kir.Expr
	edge   kir.Expr // `value` inside an edge expression
	lets   map[*ir.Let]string
	out    *[]kir.Stmt // where let declarations go
	// interior says the cell lies at least the program's reach from every edge, so reads at
	// constant offsets need no boundary handling.
	interior bool
	// fast divides by constants with one multiplication by the rounded reciprocal, as fast-math
	// compilation does, instead of the correctly rounded three-operation form.
	fast bool
	// plainDiv keeps divisions by constants as divisions: on the host they are cheap, and
	// correctly rounded for subnormal quotients too.
	plainDiv bool
	tmp      int // temporaries declared so far
	// pitched says the arrays' rows are RowPitch elements apart (plan.Align): the last axis's
	// stride is the kernel's pitch argument instead of its extent.
	pitched bool
}

func (em *emitter) idxType() kir.Type {
	if em.wide {
		return kir.I64
	}
	return kir.I32
}

func lit(v ir.Value) kir.Expr {
	switch {
	case v.T.IsFloat():
		return &kir.Float{V: v.F, T: kir.FromIR(v.T)}
	case v.T == ir.Bool:
		return &kir.BoolLit{V: v.B}
	}
	return &kir.Int{V: v.I, T: kir.FromIR(v.T)}
}

// declareUpdateLets is declareLets for the values of updates us, which a kernel computes
// together.
func (em *emitter) declareUpdateLets(us []*ir.Update) {
	vals := make([]ir.Expr, 0, len(us))
	for _, u := range us {
		vals = append(vals, u.Value)
	}
	em.declareLets(vals...)
}

// declareLets emits every let the expressions use, in dependency order.
func (em *emitter) declareLets(es ...ir.Expr) {
	used := map[*ir.Let]bool{}
	for _, e := range es {
		ir.WalkDeep(e, func(x ir.Expr) {
			if l, ok := x.(*ir.LetRef); ok {
				used[l.L] = true
			}
		})
	}
	for _, l := range em.p.Lets {
		if used[l] && em.lets[l] == "" {
			name := "let_" + l.Name
			init := em.expr(l.Value) // may declare temporaries first
			*em.out = append(*em.out, &kir.Decl{Name: name, Type: kir.FromIR(l.Value.Type()), Init: init})
			em.lets[l] = name
		}
	}
}

func (em *emitter) expr(e ir.Expr) kir.Expr {
	switch e := e.(type) {
	case *ir.Const:
		return lit(e.V)
	case *ir.ParamRef:
		return kir.Id("p_" + e.P.Name)
	case *ir.LetRef:
		name := em.lets[e.L]
		if name == "" {
			panic("internal error: let " + e.L.Name + " used before its declaration")
		}
		return kir.Id(name)
	case *ir.Coord:
		return em.coords[e.Axis]
	case *ir.Size:
		return kir.Id(fmt.Sprintf("n%d", e.Axis))
	case *ir.Step:
		return em.step
	case *ir.EdgeValue:
		return em.edge
	case *ir.Load:
		return em.read(em, e)
	case *ir.Unary:
		return &kir.Unary{Op: e.Op, X: em.expr(e.X)}
	case *ir.Binary:
		x, y := em.expr(e.X), em.expr(e.Y)
		if e.T.IsInt() && (e.Op == "/" || e.Op == "%") {
			// The IR defines x/0 and x%0 as 0.
			return &kir.Cond{C: &kir.Binary{Op: "==", X: y, Y: &kir.Int{V: 0, T: kir.FromIR(e.T)}},
				A: &kir.Int{V: 0, T: kir.FromIR(e.T)}, B: &kir.Binary{Op: e.Op, X: x, Y: y}}
		}
		if e.T.IsFloat() && e.Op == "%" {
			return &kir.Call{Fn: "fmod", T: kir.FromIR(e.T), Args: []kir.Expr{x, y}}
		}
		if k, ok := e.Y.(*ir.Const); ok && e.Op == "/" && e.T.IsFloat() && em.out != nil && !em.plainDiv {
			if q := em.divByConst(x, k.V); q != nil {
				return q
			}
		}
		return &kir.Binary{Op: e.Op, X: x, Y: y}
	case *ir.Select:
		return &kir.Cond{C: em.expr(e.C), A: em.expr(e.A), B: em.expr(e.B)}
	case *ir.Call:
		args := make([]kir.Expr, len(e.Args))
		for i, a := range e.Args {
			args[i] = em.expr(a)
		}
		return &kir.Call{Fn: e.Fn, T: kir.FromIR(e.T), Args: args}
	case *ir.Convert:
		return &kir.Cast{T: kir.FromIR(e.To), From: kir.FromIR(e.X.Type()), X: em.expr(e.X)}
	}
	panic(fmt.Sprintf("internal error: cannot lower %T", e))
}

// divByConst divides by a constant with a multiplication and two FMAs instead of a division
// (a dozen instructions in IEEE mode). With r the correctly rounded 1/c, q = x*r is within an
// ulp of x/c, the residual x - q*c is exact in an FMA, and q + residual*r rounds to the
// correctly rounded quotient (Markstein's theorem) for results in the normal range. The
// numerator is computed once into a temporary. Divisors that are not normal numbers keep the
// division. Fast math drops the correction and keeps the product x*r: within an ulp of x/c,
// but erring in the same direction (r's own rounding) for every cell and step, a drift of up
// to an ulp per step where the update keeps magnitudes. The correction costs the dividing
// stencils much (docs/performance.md); errbound's fast-math accuracy counts the ulp.
func (em *emitter) divByConst(x kir.Expr, c ir.Value) kir.Expr {
	f := c.F
	if f == 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return nil
	}
	t := kir.FromIR(c.T)
	r := 1 / f
	if c.T == ir.F32 {
		if math.Abs(f) < 0x1p-126 || math.Abs(f) > 0x1p126 {
			return nil
		}
		r = float64(float32(1 / float32(f)))
	} else if math.Abs(f) < 0x1p-1022 || math.Abs(f) > 0x1p1022 {
		return nil
	}
	if frac, _ := math.Frexp(f); frac == 0.5 || frac == -0.5 {
		// A power of two: the reciprocal is exact and so is the product.
		return &kir.Binary{Op: "*", X: x, Y: &kir.Float{V: r, T: t}}
	}
	if em.fast {
		return &kir.Binary{Op: "*", X: x, Y: &kir.Float{V: r, T: t}}
	}
	em.tmp++
	nx := fmt.Sprintf("num%d", em.tmp)
	nq := fmt.Sprintf("quo%d", em.tmp)
	*em.out = append(*em.out,
		&kir.Decl{Name: nx, Type: t, Init: x},
		&kir.Decl{Name: nq, Type: t, Init: &kir.Binary{Op: "*", X: kir.Id(nx), Y: &kir.Float{V: r, T: t}}})
	resid := &kir.Call{Fn: "fma", T: t, Args: []kir.Expr{&kir.Unary{Op: "-", X: kir.Id(nq)}, &kir.Float{V: f, T: t}, kir.Id(nx)}}
	return &kir.Call{Fn: "fma", T: t, Args: []kir.Expr{resid, &kir.Float{V: r, T: t}, kir.Id(nq)}}
}

// mapIndex maps coordinate c (which may lie outside 0..n-1) by an index rule; off is the
// constant offset that produced it, so a rule can skip the side that cannot be crossed.
func mapIndex(k ir.BCKind, c, n kir.Expr, off int) kir.Expr {
	if off == 0 {
		return c
	}
	switch k {
	case ir.Clamp, ir.Fixed:
		if off == anyOffset {
			return &kir.Call{Fn: "min", T: kir.I32, Args: []kir.Expr{&kir.Call{Fn: "max", T: kir.I32, Args: []kir.Expr{c, kir.I(0)}}, kir.Bin("-", n, kir.I(1))}}
		}
		if off < 0 {
			return &kir.Call{Fn: "max", T: kir.I32, Args: []kir.Expr{c, kir.I(0)}}
		}
		return &kir.Call{Fn: "min", T: kir.I32, Args: []kir.Expr{c, kir.Bin("-", n, kir.I(1))}}
	case ir.Periodic:
		return kir.Bin("%", kir.Add(kir.Bin("%", c, n), n), n)
	case ir.Mirror:
		// Reflect without repeating the edge: period 2n-2; a one-cell axis maps to 0.
		period := kir.Bin("-", kir.Mul(kir.I(2), n), kir.I(2))
		m := kir.Bin("%", kir.Add(kir.Bin("%", c, period), period), period)
		reflected := &kir.Cond{C: &kir.Binary{Op: ">=", X: m, Y: n}, A: kir.Bin("-", period, m), B: m}
		return &kir.Cond{C: &kir.Binary{Op: "==", X: n, Y: kir.I(1)}, A: kir.I(0), B: reflected}
	}
	panic("internal error: mapIndex of a value rule")
}

// linear is the element index of coordinates q in grid g's array (layer first).
func (em *emitter) linear(q []kir.Expr, layer kir.Expr) kir.Expr {
	it := em.idxType()
	cast := func(x kir.Expr) kir.Expr {
		if it == kir.I64 {
			return &kir.Cast{T: kir.I64, From: kir.I32, X: x}
		}
		return x
	}
	var idx kir.Expr
	if layer != nil {
		idx = cast(layer)
	}
	for a, c := range q {
		n := kir.Id(fmt.Sprintf("n%d", a))
		if em.pitched && a == len(q)-1 {
			n = kir.Id(pitchName)
		}
		if idx == nil {
			idx = cast(c)
			continue
		}
		idx = kir.Add(kir.Mul(idx, n), cast(c))
	}
	return idx
}

// globalRead reads grid g (level, optional layer) at the cell's coordinates plus off, applying
// the grid's boundary rules exactly as the reference does: index rules remap coordinates, then
// if a coordinate is still outside, the first such axis's value rule gives the value.
func (em *emitter) globalRead(g *ir.Grid, level int, layer ir.Expr, base []kir.Expr, off []int) kir.Expr {
	return em.globalReadAt(g, level, layer, base, off, false)
}

// anyOffset stands for an offset of unknown sign: rules then guard both ends.
const anyOffset = 1 << 30

// globalReadAt is globalRead where, with general set, base itself may lie anywhere (a tile
// position rather than a cell plus a constant offset).
func (em *emitter) globalReadAt(g *ir.Grid, level int, layer ir.Expr, base []kir.Expr, off []int, general bool) kir.Expr {
	d := len(base)
	if em.interior && !general {
		// The cell is far enough from every edge that no read leaves the domain.
		q := make([]kir.Expr, d)
		for a := range q {
			q[a] = kir.Add(base[a], kir.I(off[a]))
		}
		var layerE kir.Expr
		if layer != nil {
			hi := kir.Bin("-", kir.Id("layers_"+g.Name), kir.I(1))
			layerE = &kir.Call{Fn: "min", T: kir.I32, Args: []kir.Expr{&kir.Call{Fn: "max", T: kir.I32, Args: []kir.Expr{em.expr(layer), kir.I(0)}}, hi}}
		}
		role := In0
		if level == 1 {
			role = In1
		}
		return &kir.Index{Array: kir.Id(bufName(g, role)), Idx: em.linear(q, layerE)}
	}
	if general {
		o := make([]int, d)
		for a := range o {
			o[a] = anyOffset
		}
		off = o
		base = append([]kir.Expr(nil), base...)
	}
	q := make([]kir.Expr, d)
	raw := make([]kir.Expr, d)
	var valueAxes []int
	for a := 0; a < d; a++ {
		n := kir.Id(fmt.Sprintf("n%d", a))
		raw[a] = base[a]
		if off[a] != anyOffset {
			raw[a] = kir.Add(base[a], kir.I(off[a]))
		}
		k := g.BC[a].Kind
		if k == ir.Constant || k == ir.Edge {
			if off[a] != 0 {
				valueAxes = append(valueAxes, a)
				q[a] = mapIndex(ir.Clamp, raw[a], n, off[a])
			} else {
				q[a] = raw[a]
			}
			continue
		}
		q[a] = mapIndex(k, raw[a], n, off[a])
	}
	var layerE kir.Expr
	if layer != nil {
		l := em.expr(layer)
		hi := kir.Bin("-", kir.Id("layers_"+g.Name), kir.I(1))
		layerE = &kir.Call{Fn: "min", T: kir.I32, Args: []kir.Expr{&kir.Call{Fn: "max", T: kir.I32, Args: []kir.Expr{l, kir.I(0)}}, hi}}
	}
	role := In0
	if level == 1 {
		role = In1
	}
	v := kir.Expr(&kir.Index{Array: kir.Id(bufName(g, role)), Idx: em.linear(q, layerE)})
	// Value rules, the last axis innermost so that the first outside axis decides.
	for i := len(valueAxes) - 1; i >= 0; i-- {
		a := valueAxes[i]
		n := kir.Id(fmt.Sprintf("n%d", a))
		outside := &kir.Binary{Op: "||", X: &kir.Binary{Op: "<", X: raw[a], Y: kir.I(0)}, Y: &kir.Binary{Op: ">=", X: raw[a], Y: n}}
		var rule kir.Expr
		bc := g.BC[a]
		if bc.Kind == ir.Constant {
			rule = em.expr(bc.Value)
		} else {
			// The edge expression sees the remapped coordinates (raw on value axes) and the
			// nearest in-domain value.
			sub := *em
			sub.coords = make([]kir.Expr, d)
			for b := range q {
				sub.coords[b] = q[b]
				if g.BC[b].Kind == ir.Constant || g.BC[b].Kind == ir.Edge {
					sub.coords[b] = raw[b]
				}
			}
			sub.edge = &kir.Index{Array: kir.Id(bufName(g, role)), Idx: em.linear(q, layerE)}
			rule = sub.expr(bc.Value)
		}
		v = &kir.Cond{C: outside, A: rule, B: v}
	}
	return v
}
