package errbound

import (
	"fmt"
	"math"

	"tempest/internal/ir"
	"tempest/internal/ref"
	"tempest/internal/state"
)

// A cell's bound comes from two passes over its expression graph. The forward pass computes
// the reference's values and records at every operation its signed partial derivatives with
// respect to its operands and the rounding difference it adds. The backward pass then
// accumulates each operation's signed sensitivity of the result: the bound is the sum of
// |sensitivity| x rounding over the operations, plus |sensitivity| x the previous bound over
// the cells read. Summing signed sensitivities per cell read before taking magnitudes lets
// terms cancel as they do in the arithmetic (u + (u[x-1] - u)/4 depends on u with weight 3/4,
// not 5/4): a forward pass on magnitudes alone would make a bound grow geometrically even
// for well-conditioned updates.
//
// The forward pass also carries a cruder bound (magnitudes only, within one step) that decides
// whether a comparison can come out the other way in the engine.

// node is one compiled expression: f fills the evaluator's record id at the current cell.
// Children are compiled first, so ids are a topological order of the graph.
type node struct {
	id int32
	f  func(ev *evaluator)
}

// rec is what the forward pass records for one node at the current cell.
type rec struct {
	v    ir.Value
	e    float64 // the forward (magnitudes only) bound
	loc  float64 // the rounding difference the operation adds
	n    int8    // operands recorded
	kid  [3]int32
	part [3]float64 // signed partial derivatives with respect to the operands
	// Leaves: slot is the grid read's slot (-1 for none); a read through a value rule is a
	// leaf with its forward bound and amplification instead.
	slot        int32
	leafE, leaf float64
	stamp       uint32
}

// evaluator is one goroutine's cell context.
type evaluator struct {
	r       *Result
	s       *state.State
	coord   []int
	linear  int
	p, q    []int
	recs    []rec
	adj     []float64
	slotAdj []float64
	slotE   []float64
	slotG   []float64
	stamp   uint32
	letDone []bool
	edge    int32 // the record `value` reads inside a value rule
}

// compiled is a program compiled for bounded evaluation.
type compiled struct {
	updates, lets []node
	nodes         int32
	slots         int32
}

type compiler struct {
	r     *Result
	s     *state.State
	prog  *compiled
	slots map[string]int32
	// chain collects the terms' nodes of the float sum being compiled where the engine may
	// reorder sums (Arith.Reassoc); nil outside one, and for the operands of its terms.
	chain *[]int32
}

// compileProgram compiles the lets and updates once, before the workers start.
func (r *Result) compileProgram(s *state.State) {
	c := &compiler{r: r, s: s, prog: &compiled{}, slots: map[string]int32{}}
	for _, l := range s.Prog.Lets {
		c.prog.lets = append(c.prog.lets, c.compile(l.Value))
	}
	for _, u := range s.Prog.Updates {
		c.prog.updates = append(c.prog.updates, c.compile(u.Value))
	}
	r.prog = c.prog
}

func (r *Result) newEvaluator(s *state.State) *evaluator {
	d := len(s.Shape)
	pr := r.prog
	return &evaluator{r: r, s: s, coord: make([]int, d), p: make([]int, d), q: make([]int, d),
		recs: make([]rec, pr.nodes), adj: make([]float64, pr.nodes),
		slotAdj: make([]float64, pr.slots), slotE: make([]float64, pr.slots), slotG: make([]float64, pr.slots),
		letDone: make([]bool, len(s.Prog.Lets))}
}

// update evaluates update k at cell c (linear index i): the reference's value, the bound and
// the amplification.
func (ev *evaluator) update(k int, c []int, i int) (ir.Value, float64, float64) {
	copy(ev.coord, c)
	ev.linear = i
	clear(ev.letDone)
	ev.stamp++
	root := ev.r.prog.updates[k]
	root.f(ev)
	clear(ev.slotAdj)
	ev.adj[root.id] = 1
	var e, g float64
	for id := root.id; id >= 0; id-- {
		a := ev.adj[id]
		ev.adj[id] = 0
		rc := &ev.recs[id]
		if a == 0 || rc.stamp != ev.stamp {
			continue
		}
		if rc.loc != 0 {
			e += math.Abs(a) * rc.loc
		}
		switch {
		case rc.slot >= 0:
			ev.slotAdj[rc.slot] += a
		case rc.leafE != 0 || rc.leaf != 0:
			e += math.Abs(a) * rc.leafE
			g += math.Abs(a) * rc.leaf
		}
		for j := range rc.n {
			ev.adj[rc.kid[j]] += a * rc.part[j]
		}
	}
	for s, a := range ev.slotAdj {
		if a != 0 {
			e += math.Abs(a) * ev.slotE[s]
			g += math.Abs(a) * ev.slotG[s]
		}
	}
	if e != e { // NaN
		e = math.Inf(1)
	}
	return ev.recs[root.id].v, e, g
}

// put starts node id's record for this cell.
func (ev *evaluator) put(id int32, v ir.Value) *rec {
	rc := &ev.recs[id]
	rc.v, rc.e, rc.loc, rc.n, rc.slot, rc.leafE, rc.leaf, rc.stamp = v, 0, 0, 0, -1, 0, 0, ev.stamp
	return rc
}

// kid records operand x of rc with partial derivative d, adding x's forward bound scaled by
// |d| to rc's.
func (ev *evaluator) kid(rc *rec, x int32, d float64) {
	rc.kid[rc.n], rc.part[rc.n] = x, d
	rc.n++
	rc.e += math.Abs(d) * ev.recs[x].e
}

func (c *compiler) add(f func(id int32) func(ev *evaluator)) node {
	id := c.prog.nodes
	c.prog.nodes++
	return node{id: id, f: f(id)}
}

// local returns the difference one operation op of type t adds: both executions' rounding of
// the result v (half an ulp each for correctly rounded ones) plus whatever the engine and the
// reference lose beyond correct rounding; x is the operation's first argument.
func (c *compiler) local(op string, t ir.Type) func(v, x float64) float64 {
	eng, refAcc := c.r.Engine.lookup(op, t), Reference.lookup(op, t)
	ftz := 0.0
	if c.r.Engine.FTZ && t == ir.F32 {
		ftz = 0x1p-126
	}
	p, minExp := 24, -126
	if t == ir.F64 {
		p, minExp = 53, -1022
	}
	return func(v, x float64) float64 {
		var ue, ae, ur, ar float64
		if eng != nil {
			ue, ae = eng(x)
		}
		if refAcc != nil {
			ur, ar = refAcc(x)
		}
		return (ue+ur+1)*ulpOf(v, p, minExp) + ae + ar + ftz
	}
}

// constant is a node with a fixed value.
func (c *compiler) constant(v ir.Value) node {
	return c.add(func(id int32) func(*evaluator) {
		return func(ev *evaluator) { ev.put(id, v) }
	})
}

func (c *compiler) compile(e ir.Expr) node {
	switch e := e.(type) {
	case *ir.Const:
		return c.constant(e.V)
	case *ir.ParamRef:
		return c.constant(c.s.Params[e.P.Index])
	case *ir.Size:
		return c.constant(ir.Value{T: ir.I32, I: int64(c.s.Shape[e.Axis])})
	case *ir.Coord:
		a := e.Axis
		return c.add(func(id int32) func(*evaluator) {
			return func(ev *evaluator) { ev.put(id, ir.Value{T: ir.I32, I: int64(ev.coord[a])}) }
		})
	case *ir.Step:
		return c.add(func(id int32) func(*evaluator) {
			return func(ev *evaluator) { ev.put(id, ir.Value{T: ir.I32, I: int64(int32(ev.s.Steps))}) }
		})
	case *ir.EdgeValue:
		return c.add(func(id int32) func(*evaluator) {
			return func(ev *evaluator) {
				near := ev.edge
				rc := ev.put(id, ev.recs[near].v)
				ev.kid(rc, near, 1)
			}
		})
	case *ir.LetRef:
		i := e.L.Index
		return c.add(func(id int32) func(*evaluator) {
			return func(ev *evaluator) {
				let := ev.r.prog.lets[i]
				if !ev.letDone[i] {
					let.f(ev)
					ev.letDone[i] = true
				}
				rc := ev.put(id, ev.recs[let.id].v)
				ev.kid(rc, let.id, 1)
			}
		})
	case *ir.Load:
		return c.load(e)
	case *ir.Unary:
		x, op := c.compile(e.X), e.Op
		return c.add(func(id int32) func(*evaluator) {
			return func(ev *evaluator) {
				x.f(ev)
				xr := ev.recs[x.id]
				rc := ev.put(id, ir.EvalUnary(op, xr.v))
				if op == "-" {
					ev.kid(rc, x.id, -1)
				} else {
					rc.e = xr.e // ! flips exactly when its operand does
				}
			}
		})
	case *ir.Binary:
		return c.binary(e)
	case *ir.Select:
		cn, an, bn := c.compile(e.C), c.compile(e.A), c.compile(e.B)
		return c.add(func(id int32) func(*evaluator) {
			return func(ev *evaluator) {
				cn.f(ev)
				cr := ev.recs[cn.id]
				taken, other := an, bn
				if !cr.v.B {
					taken, other = bn, an
				}
				taken.f(ev)
				if cr.e == 0 {
					rc := ev.put(id, ev.recs[taken.id].v)
					ev.kid(rc, taken.id, 1)
					return
				}
				// The condition may come out the other way in the engine: either branch may
				// be taken, and the result may jump by their difference.
				other.f(ev)
				t, o := ev.recs[taken.id], ev.recs[other.id]
				rc := ev.put(id, t.v)
				ev.kid(rc, taken.id, 1)
				rc.loc = math.Abs(t.v.Float()-o.v.Float()) + o.e
				rc.e += rc.loc
			}
		})
	case *ir.Call:
		return c.call(e)
	case *ir.Convert:
		x, to := c.compile(e.X), e.To
		from := e.X.Type()
		var round func(v, x float64) float64
		if to.IsFloat() && from != ir.F32 {
			round = c.local("cvt", to)
		}
		return c.add(func(id int32) func(*evaluator) {
			return func(ev *evaluator) {
				x.f(ev)
				xr := ev.recs[x.id]
				rc := ev.put(id, ir.ConvertValue(xr.v, to))
				switch {
				case to.IsFloat():
					ev.kid(rc, x.id, 1)
					if round != nil {
						rc.loc = round(rc.v.F, rc.v.F)
						rc.e += rc.loc
					}
				case xr.e == 0:
				case to.IsInt() && from.IsFloat():
					rc.loc = xr.e + 1 // truncation may land on another integer
					rc.e = rc.loc
				case to.IsInt():
					ev.kid(rc, x.id, 1)
				default: // to bool
					rc.e = 1
				}
			}
		})
	}
	panic(fmt.Sprintf("internal error: error bounds cannot evaluate %T", e))
}

// load reads a grid. A read of a state grid is a leaf whose slot (one per grid, level and
// offset) carries the previous bound of the cell read; input grids are exact. Reads that stay
// inside the domain index directly; others go through the boundary rules as the reference
// reads them, and a value rule's expression is evaluated at the mapped coordinates.
func (c *compiler) load(l *ir.Load) node {
	g, level, off := l.G, l.Level, l.Off
	shape := c.s.Shape
	delta := 0
	for a := range shape {
		delta = delta*shape[a] + off[a]
	}
	var layer *node
	if l.Layer != nil {
		n := c.compile(l.Layer)
		layer = &n
	}
	isState := g.Update != nil
	slot := int32(-1)
	if isState {
		key := fmt.Sprint(g.Index, level, off)
		s, ok := c.slots[key]
		if !ok {
			s = c.prog.slots
			c.slots[key] = s
			c.prog.slots++
		}
		slot = s
	}
	bcs := make([]*node, len(shape))
	for a, bc := range g.BC {
		if bc.Value != nil {
			n := c.compile(bc.Value)
			bcs[a] = &n
		}
	}
	return c.add(func(id int32) func(*evaluator) {
		return func(ev *evaluator) {
			arr, bnd := ev.s.Cur[g.Index], ev.r.Bound[g.Index]
			if level == 1 {
				arr, bnd = ev.s.Prev[g.Index], ev.r.prev[g.Index]
			}
			inside := true
			for a, o := range off {
				q := ev.coord[a] + o
				ev.p[a] = q
				if q < 0 || q >= shape[a] {
					inside = false
				}
			}
			base, layerErr := 0, 0.0
			if layer != nil {
				layer.f(ev)
				lr := ev.recs[layer.id]
				k := min(max(int(lr.v.I), 0), ev.s.Layers[g.Index]-1)
				base, layerErr = k*ev.s.Cells(), lr.e
			}
			i, valueAxis := ev.linear+delta, -1
			if !inside {
				i, valueAxis = ref.Locate(ev.s, g, ev.p, ev.q)
			}
			rc := ev.put(id, state.Get(arr, g.Type, base+i))
			if layerErr > 0 {
				rc.loc, rc.e = math.Inf(1), math.Inf(1) // another layer may be read
			}
			if isState {
				rc.slot = slot
				rc.e = bnd[i]
				ev.slotE[slot], ev.slotG[slot] = bnd[i], 1
			}
			if valueAxis < 0 {
				return
			}
			// A value rule: its expression of the nearest cell's value at the mapped
			// coordinates; a leaf with the rule's forward bound.
			bc := bcs[valueAxis]
			saved, savedEdge := append([]int(nil), ev.coord...), ev.edge
			copy(ev.coord, ev.q)
			ev.edge = id
			bc.f(ev)
			copy(ev.coord, saved)
			ev.edge = savedEdge
			out := ev.recs[bc.id]
			rc = ev.put(id, out.v)
			rc.leafE, rc.e = out.e, out.e
			if isState {
				rc.leaf = 1
			}
		}
	})
}

func (c *compiler) binary(e *ir.Binary) node {
	op, t := e.Op, e.T
	// A float sum the engine may reorder (Arith.Reassoc): the root addition of the chain
	// collects the nodes of its terms and allows every addition the rounding of the sum of
	// their magnitudes; its inner additions (entered with c.chain set) add none of their own.
	reassoc := c.r.Engine.Reassoc && op == "+" && t.IsFloat()
	inner := c.chain != nil
	terms := c.chain
	if reassoc && !inner {
		terms = new([]int32)
	}
	operand := func(x ir.Expr) node {
		saved := c.chain
		b, ok := x.(*ir.Binary)
		sum := reassoc && ok && b.Op == "+" && b.T == t
		c.chain = nil
		if sum {
			c.chain = terms
		}
		n := c.compile(x)
		c.chain = saved
		if reassoc && !sum {
			*terms = append(*terms, n.id)
		}
		return n
	}
	xn, yn := operand(e.X), operand(e.Y)
	switch op {
	case "&&", "||":
		return c.add(func(id int32) func(*evaluator) {
			return func(ev *evaluator) {
				xn.f(ev)
				x := ev.recs[xn.id]
				if x.e == 0 && x.v.B == (op == "||") {
					ev.put(id, x.v) // decided by the left side, which cannot come out otherwise
					return
				}
				yn.f(ev)
				y := ev.recs[yn.id]
				rc := ev.put(id, ir.EvalBinary(op, x.v, y.v))
				rc.e = max(x.e, y.e)
			}
		})
	case "==", "!=", "<", "<=", ">", ">=":
		return c.add(func(id int32) func(*evaluator) {
			return func(ev *evaluator) {
				xn.f(ev)
				yn.f(ev)
				x, y := ev.recs[xn.id], ev.recs[yn.id]
				rc := ev.put(id, ir.EvalBinary(op, x.v, y.v))
				// The comparison may come out the other way when the operands' difference
				// lies within their bounds.
				if s := x.e + y.e; s > 0 && math.Abs(x.v.Float()-y.v.Float()) <= s {
					rc.e = 1
				}
			}
		})
	}
	const (
		add = iota
		sub
		mul
		div
		rem
	)
	kind := map[string]int{"+": add, "-": sub, "*": mul, "/": div, "%": rem}[op]
	name := op
	if _, ok := e.Y.(*ir.Const); ok && op == "/" {
		name = "/c"
	}
	var local func(v, x float64) float64
	if t.IsFloat() {
		local = c.local(name, t)
	}
	f32 := t == ir.F32
	return c.add(func(id int32) func(*evaluator) {
		return func(ev *evaluator) {
			xn.f(ev)
			yn.f(ev)
			x, y := ev.recs[xn.id], ev.recs[yn.id]
			a, b := x.v.Float(), y.v.Float()
			var v ir.Value
			switch {
			case !t.IsFloat():
				v = ir.EvalBinary(op, x.v, y.v)
			case kind == add && f32:
				v = ir.Value{T: t, F: float64(float32(a) + float32(b))}
			case kind == add:
				v = ir.Value{T: t, F: a + b}
			case kind == sub && f32:
				v = ir.Value{T: t, F: float64(float32(a) - float32(b))}
			case kind == sub:
				v = ir.Value{T: t, F: a - b}
			case kind == mul && f32:
				v = ir.Value{T: t, F: float64(float32(float32(a) * float32(b)))}
			case kind == mul:
				v = ir.Value{T: t, F: float64(a * b)}
			case kind == div && f32:
				v = ir.Value{T: t, F: float64(float32(a) / float32(b))}
			case kind == div:
				v = ir.Value{T: t, F: a / b}
			default:
				v = ir.EvalBinary(op, x.v, y.v)
			}
			rc := ev.put(id, v)
			r := v.Float()
			switch kind {
			case add:
				ev.kid(rc, xn.id, 1)
				ev.kid(rc, yn.id, 1)
			case sub:
				ev.kid(rc, xn.id, 1)
				ev.kid(rc, yn.id, -1)
			case mul:
				ev.kid(rc, xn.id, b)
				ev.kid(rc, yn.id, a)
				if !t.IsFloat() {
					rc.loc = x.e * y.e
				}
			case div, rem:
				if !t.IsFloat() { // exact on exact operands, anything otherwise
					if x.e+y.e > 0 {
						rc.loc, rc.e = math.Inf(1), math.Inf(1)
					}
					return
				}
				if kind == div {
					ev.kid(rc, xn.id, 1/b)
					ev.kid(rc, yn.id, -r/b)
				} else {
					ev.kid(rc, xn.id, 1)
					ev.kid(rc, yn.id, -math.Trunc(a/b))
					rc.loc = y.e // the quotient's truncation may step by one
				}
			}
			switch {
			case local == nil || inner:
			case reassoc:
				mag := 0.0
				for _, k := range *terms {
					mag += math.Abs(ev.recs[k].v.Float())
				}
				rc.loc += float64(len(*terms)-1) * local(mag, a)
			default:
				rc.loc += local(r, a)
			}
			if rc.loc != rc.loc {
				rc.loc = math.Inf(1)
			}
			rc.e += rc.loc
		}
	})
}

func (c *compiler) call(e *ir.Call) node {
	args := make([]node, len(e.Args))
	for i, a := range e.Args {
		args[i] = c.compile(a)
	}
	fn, t := e.Fn, e.T
	var local func(v, x float64) float64
	if t.IsFloat() {
		local = c.local(fn, t)
	}
	return c.add(func(id int32) func(*evaluator) {
		return func(ev *evaluator) {
			var vals [3]ir.Value
			for i, a := range args {
				a.f(ev)
				vals[i] = ev.recs[a.id].v
			}
			v := ir.EvalCall(fn, t, vals[:len(args)])
			rc := ev.put(id, v)
			a := ev.recs[args[0].id]
			x, r := a.v.Float(), v.Float()
			one := func(d float64) { ev.kid(rc, args[0].id, d) }
			switch fn {
			case "sqrt":
				if x > 0 {
					one(1 / (2 * math.Sqrt(x)))
				} else {
					rc.loc = math.Sqrt(a.e) // not differentiable at 0: the root of the bound
				}
			case "exp":
				one(r)
			case "log":
				one(1 / x)
			case "sin":
				one(math.Cos(x))
				rc.loc = a.e * a.e / 2
			case "cos":
				one(-math.Sin(x))
				rc.loc = a.e * a.e / 2
			case "tan":
				cs := math.Cos(x)
				one(1 / (cs * cs))
			case "tanh":
				one(1 - r*r)
			case "abs":
				if x < 0 {
					one(-1)
				} else {
					one(1)
				}
			case "floor", "ceil":
				f := math.Floor
				if fn == "ceil" {
					f = math.Ceil
				}
				rc.loc = f(x+a.e) - f(x-a.e) // the jumps the argument's range crosses
			case "min", "max":
				// The operand taken, and a jump to the other where their ranges overlap.
				b := ev.recs[args[1].id]
				k, o := args[0].id, b
				if r != x || math.IsNaN(x) {
					k, o = args[1].id, a
				}
				ev.kid(rc, k, 1)
				if math.Abs(a.v.Float()-b.v.Float()) <= a.e+b.e {
					rc.loc = o.e + math.Abs(a.v.Float()-b.v.Float())
				}
			case "pow":
				b := ev.recs[args[1].id]
				y := b.v.Float()
				one(y * math.Pow(x, y-1))
				if db := r * math.Log(math.Abs(x)); !math.IsNaN(db) && !math.IsInf(db, 0) {
					ev.kid(rc, args[1].id, db)
				} else if b.e > 0 {
					rc.loc = math.Inf(1) // the exponent's error cannot be bounded here
				}
			case "fma":
				ev.kid(rc, args[0].id, ev.recs[args[1].id].v.Float())
				ev.kid(rc, args[1].id, x)
				ev.kid(rc, args[2].id, 1)
			}
			if local != nil {
				rc.loc += local(r, x)
			}
			if rc.loc != rc.loc {
				rc.loc = math.Inf(1)
			}
			rc.e += rc.loc
		}
	})
}
