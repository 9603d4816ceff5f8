package cpu

import (
	"fmt"
	"math"

	"tempest/internal/ir"
)

// val is a chunk's worth of one expression: either a vector (data: []T of the chunk length)
// or a value uniform across the chunk.
type val struct {
	uni  bool
	u    ir.Value
	data any
}

// fn evaluates one compiled node for the worker's current chunk.
type fn func(w *worker) val

// compiler turns IR expressions into closures for one worker; every node owns its buffer.
type compiler struct {
	e    *Engine
	last int // the fastest axis
	// lets and uni cache per let binding, so chains of lets compile once each.
	lets map[*ir.Let]fn
	uni  map[*ir.Let]bool
}

func newBuf(t ir.Type, n int) any {
	switch t {
	case ir.F32:
		return make([]float32, n)
	case ir.F64:
		return make([]float64, n)
	case ir.I32:
		return make([]int32, n)
	case ir.I64:
		return make([]int64, n)
	case ir.Bool:
		return make([]bool, n)
	}
	panic("internal error: buffer type")
}

func slice(buf any, n int) any {
	switch b := buf.(type) {
	case []float32:
		return b[:n]
	case []float64:
		return b[:n]
	case []int32:
		return b[:n]
	case []int64:
		return b[:n]
	case []bool:
		return b[:n]
	}
	panic("internal error: slice type")
}

// uniform reports whether e has the same value for every cell of a row.
func (c *compiler) uniform(e ir.Expr) bool {
	switch e := e.(type) {
	case *ir.Load, *ir.Rand, *ir.EdgeValue:
		return false
	case *ir.Coord:
		return e.Axis != c.last
	case *ir.LetRef:
		if c.uni == nil {
			c.uni = map[*ir.Let]bool{}
		}
		v, ok := c.uni[e.L]
		if !ok {
			v = c.uniform(e.L.Value)
			c.uni[e.L] = v
		}
		return v
	}
	for _, ch := range ir.Children(e) {
		if !c.uniform(ch) {
			return false
		}
	}
	return true
}

// scalar evaluates a uniform expression for the worker's row.
func scalar(w *worker, e ir.Expr) ir.Value {
	switch e := e.(type) {
	case *ir.Const:
		return e.V
	case *ir.ParamRef:
		return w.e.s.Params[e.P.Index]
	case *ir.LetRef:
		return scalar(w, e.L.Value)
	case *ir.Coord:
		return ir.Value{T: ir.I32, I: int64(w.coord[e.Axis])}
	case *ir.Size:
		return ir.Value{T: ir.I32, I: int64(w.e.s.Shape[e.Axis])}
	case *ir.Step:
		return ir.Value{T: ir.I32, I: int64(int32(w.e.s.Steps))}
	case *ir.Unary:
		return ir.EvalUnary(e.Op, scalar(w, e.X))
	case *ir.Binary:
		x := scalar(w, e.X)
		if (e.Op == "&&" && !x.B) || (e.Op == "||" && x.B) {
			return x
		}
		return ir.EvalBinary(e.Op, x, scalar(w, e.Y))
	case *ir.Select:
		if scalar(w, e.C).B {
			return scalar(w, e.A)
		}
		return scalar(w, e.B)
	case *ir.Call:
		args := make([]ir.Value, len(e.Args))
		for i, a := range e.Args {
			args[i] = scalar(w, a)
		}
		return ir.EvalCall(e.Fn, e.T, args)
	case *ir.Convert:
		return ir.ConvertValue(scalar(w, e.X), e.To)
	}
	panic(fmt.Sprintf("internal error: scalar %T", e))
}

// vector returns v as a vector of the chunk length, broadcasting a uniform into buf.
func vector(v val, t ir.Type, buf any, n int) any {
	if !v.uni {
		return v.data
	}
	out := slice(buf, n)
	switch o := out.(type) {
	case []float32:
		fill(o, float32(v.u.F))
	case []float64:
		fill(o, v.u.F)
	case []int32:
		fill(o, int32(v.u.I))
	case []int64:
		fill(o, v.u.I)
	case []bool:
		fill(o, v.u.B)
	}
	return out
}

func (c *compiler) compile(e ir.Expr) fn {
	if c.uniform(e) {
		return func(w *worker) val { return val{uni: true, u: scalar(w, e)} }
	}
	switch e := e.(type) {
	case *ir.LetRef:
		if c.lets == nil {
			c.lets = map[*ir.Let]fn{}
		}
		inner, ok := c.lets[e.L]
		if !ok {
			inner = c.compile(e.L.Value)
			c.lets[e.L] = inner
		}
		i := e.L.Index
		return func(w *worker) val {
			if !w.letDone[i] {
				w.lets[i] = inner(w)
				w.letDone[i] = true
			}
			return w.lets[i]
		}
	case *ir.Load:
		return c.load(e)
	case *ir.Coord: // the fastest axis
		buf := make([]int32, chunk)
		return func(w *worker) val {
			out := buf[:w.n]
			for i := range out {
				out[i] = int32(w.x0 + i)
			}
			return val{data: out}
		}
	case *ir.Unary:
		x := c.compile(e.X)
		buf := newBuf(e.T, chunk)
		return func(w *worker) val {
			out := slice(buf, w.n)
			switch o := out.(type) {
			case []bool:
				in := x(w).data.([]bool)
				for i := range o {
					o[i] = !in[i]
				}
			case []float32:
				neg(o, x(w).data.([]float32))
			case []float64:
				neg(o, x(w).data.([]float64))
			case []int32:
				neg(o, x(w).data.([]int32))
			case []int64:
				neg(o, x(w).data.([]int64))
			}
			return val{data: out}
		}
	case *ir.Binary:
		return c.binary(e)
	case *ir.Select:
		cf, af, bf := c.compile(e.C), c.compile(e.A), c.compile(e.B)
		buf, ab, bb, cb := newBuf(e.T, chunk), newBuf(e.T, chunk), newBuf(e.T, chunk), newBuf(ir.Bool, chunk)
		return func(w *worker) val {
			cond := vector(cf(w), ir.Bool, cb, w.n).([]bool)
			a := vector(af(w), e.T, ab, w.n)
			b := vector(bf(w), e.T, bb, w.n)
			out := slice(buf, w.n)
			switch o := out.(type) {
			case []float32:
				selectVec(o, cond, a.([]float32), b.([]float32))
			case []float64:
				selectVec(o, cond, a.([]float64), b.([]float64))
			case []int32:
				selectVec(o, cond, a.([]int32), b.([]int32))
			case []int64:
				selectVec(o, cond, a.([]int64), b.([]int64))
			case []bool:
				selectVec(o, cond, a.([]bool), b.([]bool))
			}
			return val{data: out}
		}
	case *ir.Call:
		return c.call(e)
	case *ir.Convert:
		x := c.compile(e.X)
		from := e.X.Type()
		buf, xb := newBuf(e.To, chunk), newBuf(from, chunk)
		return func(w *worker) val {
			out := slice(buf, w.n)
			convertVec(e.To, out, vector(x(w), from, xb, w.n))
			return val{data: out}
		}
	}
	panic(fmt.Sprintf("internal error: cpu cannot compile %T", e))
}

func (c *compiler) binary(e *ir.Binary) fn {
	t := e.X.Type()
	if t.IsFloat() && (e.Op == "+" || e.Op == "-") {
		if f := c.chain(e, nil, 0, false); f != nil {
			return f
		}
	}
	if f := c.scaledChain(e, false); f != nil {
		return f
	}
	x, y := c.compile(e.X), c.compile(e.Y)
	buf, xb, yb := newBuf(e.T, chunk), newBuf(t, chunk), newBuf(t, chunk)
	op := e.Op
	if t.IsFloat() && c.uniform(e.Y) && (op == "+" || op == "-" || op == "*" || op == "/") {
		// A vector and a coefficient: one pass, no broadcast.
		return func(w *worker) val {
			out := slice(buf, w.n)
			k := scalar(w, e.Y).F
			switch o := out.(type) {
			case []float32:
				scalarOp(op, o, x(w).data.([]float32), float32(k))
			case []float64:
				scalarOp(op, o, x(w).data.([]float64), k)
			}
			return val{data: out}
		}
	}
	return func(w *worker) val {
		out := slice(buf, w.n)
		xv := x(w)
		if op == "&&" || op == "||" {
			// Both sides are evaluated; they have no effects, so only the result matters.
			a := vector(xv, ir.Bool, xb, w.n).([]bool)
			b := vector(y(w), ir.Bool, yb, w.n).([]bool)
			o := out.([]bool)
			for i := range o {
				if op == "&&" {
					o[i] = a[i] && b[i]
				} else {
					o[i] = a[i] || b[i]
				}
			}
			return val{data: out}
		}
		a := vector(xv, t, xb, w.n)
		b := vector(y(w), t, yb, w.n)
		switch op {
		case "==", "!=", "<", "<=", ">", ">=":
			o := out.([]bool)
			switch a := a.(type) {
			case []float32:
				compare(op, o, a, b.([]float32))
			case []float64:
				compare(op, o, a, b.([]float64))
			case []int32:
				compare(op, o, a, b.([]int32))
			case []int64:
				compare(op, o, a, b.([]int64))
			case []bool:
				bb := b.([]bool)
				for i := range o {
					o[i] = (a[i] == bb[i]) == (op == "==")
				}
			}
			return val{data: out}
		}
		switch o := out.(type) {
		case []float32:
			floatOp(op, o, a.([]float32), b.([]float32))
		case []float64:
			floatOp(op, o, a.([]float64), b.([]float64))
		case []int32:
			intOp(op, o, a.([]int32), b.([]int32))
		case []int64:
			intOp(op, o, a.([]int64), b.([]int64))
		}
		return val{data: out}
	}
}

func floatOp[T float](op string, o, a, b []T) {
	switch op {
	case "/":
		divF(o, a, b)
	case "%":
		modF(o, a, b)
	default:
		arithVV(op, o, a, b)
	}
}

func intOp[T integer](op string, o, a, b []T) {
	switch op {
	case "/", "%":
		divI(o, a, b, op == "%")
	default:
		arithVV(op, o, a, b)
	}
}

// chainTerm is one addend found in a chain of + and -.
type chainTerm struct {
	neg  bool
	coef ir.Expr // uniform coefficient, or nil
	v    ir.Expr // the vector factor
}

func (c *compiler) addend(e ir.Expr, neg bool, out *[]chainTerm) bool {
	if c.uniform(e) {
		return false
	}
	if b, ok := e.(*ir.Binary); ok && b.Op == "*" {
		switch {
		case c.uniform(b.X) && !c.uniform(b.Y):
			*out = append(*out, chainTerm{neg: neg, coef: b.X, v: b.Y})
			return true
		case c.uniform(b.Y) && !c.uniform(b.X):
			// coef*v and v*coef round the same way: multiplication commutes exactly.
			*out = append(*out, chainTerm{neg: neg, coef: b.Y, v: b.X})
			return true
		}
	}
	*out = append(*out, chainTerm{neg: neg, v: e})
	return true
}

// scaledChain compiles (chain) / k and (chain) * k with k uniform, or returns nil.
func (c *compiler) scaledChain(e *ir.Binary, root bool) fn {
	x, ok := e.X.(*ir.Binary)
	if ok && e.T.IsFloat() && (e.Op == "/" || e.Op == "*") && c.uniform(e.Y) && !c.uniform(e.X) &&
		(x.Op == "+" || x.Op == "-") && x.T == e.T {
		return c.chain(x, e.Y, e.Op[0], root)
	}
	return nil
}

// compileRoot compiles an update's whole expression; a chain at the root may write its result
// straight into the grid's next buffer.
func (c *compiler) compileRoot(e ir.Expr) fn {
	if b, ok := e.(*ir.Binary); ok && b.T.IsFloat() && !c.uniform(e) {
		if b.Op == "+" || b.Op == "-" {
			if f := c.chain(b, nil, 0, true); f != nil {
				return f
			}
		}
		if f := c.scaledChain(b, true); f != nil {
			return f
		}
	}
	return c.compile(e)
}

// chain compiles a left-deep sum of (coefficient x vector) terms into grouped passes, then
// applies "op k" to the sum when op is not 0. The result goes straight into the worker's
// destination when it offers one.
func (c *compiler) chain(e *ir.Binary, k ir.Expr, op byte, root bool) fn {
	var ts []chainTerm
	// Flatten only the left spine: a + b + c parses as ((a + b) + c).
	var walk func(x ir.Expr) bool
	walk = func(x ir.Expr) bool {
		if b, ok := x.(*ir.Binary); ok && (b.Op == "+" || b.Op == "-") && b.T == e.T {
			if !walk(b.X) {
				return false
			}
			return c.addend(b.Y, b.Op == "-", &ts)
		}
		return c.addend(x, false, &ts)
	}
	if !walk(e) || len(ts) < 2 {
		return nil
	}
	type compiled struct {
		neg  bool
		coef ir.Expr
		v    fn
		// A plain grid read is sliced straight out of the padded array (no interface value,
		// so no allocation per chunk): grid, level and element offset.
		direct      bool
		grid, level int
		off         int
	}
	cs := make([]compiled, len(ts))
	for i, t := range ts {
		cs[i] = compiled{neg: t.neg, coef: t.coef}
		if l, ok := t.v.(*ir.Load); ok && l.Layer == nil {
			cs[i].direct, cs[i].grid, cs[i].level = true, l.G.Index, l.Level
			for a, o := range l.Off {
				cs[i].off += o * c.e.pstride[a]
			}
			continue
		}
		cs[i].v = c.compile(t.v)
	}
	eng := c.e
	buf := newBuf(e.T, chunk)
	bcast := make([]any, len(ts))
	for i := range bcast {
		bcast[i] = newBuf(e.T, chunk)
	}
	switch e.T {
	case ir.F32:
		terms := make([]term[float32], len(cs))
		return func(w *worker) val {
			for i, t := range cs {
				if t.direct {
					start := w.base + w.x0 + t.off
					terms[i] = term[float32]{neg: t.neg, scal: t.coef != nil, v: eng.levelBuf(t.grid, t.level).([]float32)[start : start+w.n]}
				} else {
					terms[i] = term[float32]{neg: t.neg, scal: t.coef != nil, v: vector(t.v(w), e.T, bcast[i], w.n).([]float32)}
				}
				if t.coef != nil {
					terms[i].coef = float32(scalar(w, t.coef).F)
				}
			}
			out := buf.([]float32)[:w.n]
			if d, ok := w.dst.([]float32); ok && root {
				out, w.wrote = d, true
			}
			p := post[float32]{op: op}
			if op != 0 {
				p.k = float32(scalar(w, k).F)
			}
			accumulate(out, terms, p)
			return val{data: out}
		}
	case ir.F64:
		terms := make([]term[float64], len(cs))
		return func(w *worker) val {
			for i, t := range cs {
				if t.direct {
					start := w.base + w.x0 + t.off
					terms[i] = term[float64]{neg: t.neg, scal: t.coef != nil, v: eng.levelBuf(t.grid, t.level).([]float64)[start : start+w.n]}
				} else {
					terms[i] = term[float64]{neg: t.neg, scal: t.coef != nil, v: vector(t.v(w), e.T, bcast[i], w.n).([]float64)}
				}
				if t.coef != nil {
					terms[i].coef = scalar(w, t.coef).F
				}
			}
			out := buf.([]float64)[:w.n]
			if d, ok := w.dst.([]float64); ok && root {
				out, w.wrote = d, true
			}
			p := post[float64]{op: op}
			if op != 0 {
				p.k = scalar(w, k).F
			}
			accumulate(out, terms, p)
			return val{data: out}
		}
	}
	return nil
}

var unaryMath = map[string]func(float64) float64{
	"sqrt": math.Sqrt, "exp": math.Exp, "log": math.Log, "sin": math.Sin, "cos": math.Cos,
	"tan": math.Tan, "tanh": math.Tanh, "abs": math.Abs, "floor": math.Floor, "ceil": math.Ceil,
}

var binaryMath = map[string]func(a, b float64) float64{"min": ir.FMin, "max": ir.FMax, "pow": math.Pow}

func (c *compiler) call(e *ir.Call) fn {
	args := make([]fn, len(e.Args))
	bufs := make([]any, len(e.Args))
	for i, a := range e.Args {
		args[i] = c.compile(a)
		bufs[i] = newBuf(e.T, chunk)
	}
	buf := newBuf(e.T, chunk)
	return func(w *worker) val {
		in := make([]any, len(args))
		for i, a := range args {
			in[i] = vector(a(w), e.T, bufs[i], w.n)
		}
		out := slice(buf, w.n)
		switch o := out.(type) {
		case []float32:
			floatCall(e.Fn, o, in)
		case []float64:
			floatCall(e.Fn, o, in)
		case []int32:
			intCall(e.Fn, o, in)
		case []int64:
			intCall(e.Fn, o, in)
		}
		return val{data: out}
	}
}

func floatCall[T float](name string, o []T, in []any) {
	a := in[0].([]T)
	if f := unaryMath[name]; f != nil {
		mathF(o, a, f)
		return
	}
	if f := binaryMath[name]; f != nil {
		math2F(o, a, in[1].([]T), f)
		return
	}
	fmaF(o, a, in[1].([]T), in[2].([]T))
}

func intCall[T integer](name string, o []T, in []any) {
	a := in[0].([]T)
	switch name {
	case "abs":
		absI(o, a)
	case "min", "max":
		minMaxI(o, a, in[1].([]T), name == "max")
	}
}

// load reads a grid at the load's offsets: a view of the padded array, or a gather when the
// layer varies along the row.
func (c *compiler) load(l *ir.Load) fn {
	e := c.e
	off := 0
	for a, o := range l.Off {
		off += o * e.pstride[a]
	}
	g := l.G.Index
	level := l.Level
	if l.Layer == nil || c.uniform(l.Layer) {
		return func(w *worker) val {
			start := w.base + w.x0 + off
			if l.Layer != nil {
				layer := int(scalar(w, l.Layer).I)
				layer = min(max(layer, 0), e.s.Layers[g]-1)
				start += layer * e.pcells
			}
			return val{data: view(e.levelBuf(g, level), start, w.n)}
		}
	}
	layerFn := c.compile(l.Layer)
	lb := newBuf(ir.I32, chunk)
	buf := newBuf(l.G.Type, chunk)
	return func(w *worker) val {
		layers := vector(layerFn(w), ir.I32, lb, w.n).([]int32)
		out := slice(buf, w.n)
		src := e.levelBuf(g, level)
		for i := range layers {
			layer := min(max(int(layers[i]), 0), e.s.Layers[g]-1)
			gatherOne(out, i, src, layer*e.pcells+w.base+w.x0+off+i)
		}
		return val{data: out}
	}
}

func view(buf any, start, n int) any {
	switch b := buf.(type) {
	case []float32:
		return b[start : start+n]
	case []float64:
		return b[start : start+n]
	case []int32:
		return b[start : start+n]
	case []int64:
		return b[start : start+n]
	}
	panic("internal error: view type")
}

func gatherOne(out any, i int, src any, j int) {
	switch o := out.(type) {
	case []float32:
		o[i] = src.([]float32)[j]
	case []float64:
		o[i] = src.([]float64)[j]
	case []int32:
		o[i] = src.([]int32)[j]
	case []int64:
		o[i] = src.([]int64)[j]
	}
}
