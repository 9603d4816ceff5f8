package ir

import (
	"fmt"
	"math"
)

// Observe is an observable: one reduction over every cell of the domain of a per-cell
// expression, evaluated after a step. In its expression, grids read their values after the
// step and `.prev` the values one step earlier, for one-level grids too (see PrevObserved).
type Observe struct {
	Name  string
	Op    string // sum, max, min or mean
	Value Expr   // per cell; a number (float values are reduced in f64, integers in i64)
	Index int
}

// PrevObserved lists the one-level state grids whose previous values an observable reads:
// engines keep the level before the last step of such grids available at observation time.
func (p *Program) PrevObserved() []*Grid {
	var out []*Grid
	seen := map[*Grid]bool{}
	for _, o := range p.Observes {
		WalkDeep(o.Value, func(e Expr) {
			if l, ok := e.(*Load); ok && l.Level == 1 && l.G.Levels == 1 && !seen[l.G] {
				seen[l.G] = true
				out = append(out, l.G)
			}
		})
	}
	return out
}

// ObserveReach is, per axis, the largest offset any observable reads at (lets included).
func (p *Program) ObserveReach() []int {
	r := make([]int, p.Dims())
	for _, o := range p.Observes {
		for a, v := range Reach(o.Value, p.Dims()) {
			r[a] = max(r[a], v)
		}
	}
	return r
}

// The reduction's order is part of the language, so that every engine computes the same bits
// from the same state. The values of the cells, in row-major order (the last axis fastest),
// converted exactly to f64 (float expressions) or i64 (integer ones), are split into chunks
// of ReduceWidth; each chunk is reduced by a fixed pairwise tree (ReduceTree), missing
// values at the end of the last chunk taking the operation's identity; the chunks' results
// are then reduced the same way, again and again, until one value remains. A GPU block of
// ReduceWidth threads computes one chunk in shared memory with the same tree.

// ReduceWidth is the number of values one tree combines.
const ReduceWidth = 256

// IdentityF64 is the value that changes no result of op on floats: -0 for sum (x + -0 is x
// for every x, -0 included) and NaN for max and min, which ignore NaN.
func IdentityF64(op string) float64 {
	if op == "sum" || op == "mean" {
		return math.Copysign(0, -1)
	}
	return math.NaN()
}

// IdentityI64 is the value that changes no result of op on integers.
func IdentityI64(op string) int64 {
	switch op {
	case "max":
		return math.MinInt64
	case "min":
		return math.MaxInt64
	}
	return 0
}

// CombineF64 applies op to two floats. max and min ignore NaN (a NaN results only when both
// are NaN) and order -0 below +0, so that they are commutative and associative bit for bit.
func CombineF64(op string, a, b float64) float64 {
	switch op {
	case "sum", "mean":
		return a + b
	case "max", "min":
		if a != a {
			return b
		}
		if b != b {
			return a
		}
		if op == "max" {
			if a > b {
				return a
			}
			if b > a {
				return b
			}
			if a == 0 {
				return a + b // +0 unless both are -0
			}
			return a
		}
		if a < b {
			return a
		}
		if b < a {
			return b
		}
		if a == 0 {
			return -(-a + -b) // -0 unless both are +0
		}
		return a
	}
	panic("internal error: reduction " + op)
}

// CombineI64 applies op to two integers; sums wrap.
func CombineI64(op string, a, b int64) int64 {
	switch op {
	case "sum", "mean":
		return a + b
	case "max":
		return max(a, b)
	case "min":
		return min(a, b)
	}
	panic("internal error: reduction " + op)
}

// ReduceTree reduces at most ReduceWidth values: padded with id to ReduceWidth, then at
// stride s = ReduceWidth/2, /4, ..., 1, value i (i < s) becomes combine(value i, value i+s).
func ReduceTree[T any](vals []T, id T, combine func(a, b T) T) T {
	if len(vals) > ReduceWidth {
		panic(fmt.Sprintf("internal error: a reduction tree of %d values", len(vals)))
	}
	var a [ReduceWidth]T
	n := copy(a[:], vals)
	for i := n; i < ReduceWidth; i++ {
		a[i] = id
	}
	for s := ReduceWidth / 2; s > 0; s /= 2 {
		for i := 0; i < s; i++ {
			a[i] = combine(a[i], a[i+s])
		}
	}
	return a[0]
}

// ReduceLevels reduces chunk results (the trees of the cells' chunks) to one value: trees of
// trees until one value remains.
func ReduceLevels[T any](partials []T, id T, combine func(a, b T) T) T {
	if len(partials) == 0 {
		panic("internal error: reduction of no values")
	}
	for len(partials) > 1 {
		next := make([]T, (len(partials)+ReduceWidth-1)/ReduceWidth)
		for i := range next {
			next[i] = ReduceTree(partials[i*ReduceWidth:min(len(partials), (i+1)*ReduceWidth)], id, combine)
		}
		partials = next
	}
	return partials[0]
}

// ReduceF64 is the reduction of the cells' values in f64 (before Finish).
func ReduceF64(op string, vals []float64) float64 {
	c := func(a, b float64) float64 { return CombineF64(op, a, b) }
	id := IdentityF64(op)
	parts := make([]float64, (len(vals)+ReduceWidth-1)/ReduceWidth)
	for i := range parts {
		parts[i] = ReduceTree(vals[i*ReduceWidth:min(len(vals), (i+1)*ReduceWidth)], id, c)
	}
	return ReduceLevels(parts, id, c)
}

// ReduceI64 is the reduction of the cells' values in i64 (before Finish).
func ReduceI64(op string, vals []int64) int64 {
	c := func(a, b int64) int64 { return CombineI64(op, a, b) }
	id := IdentityI64(op)
	parts := make([]int64, (len(vals)+ReduceWidth-1)/ReduceWidth)
	for i := range parts {
		parts[i] = ReduceTree(vals[i*ReduceWidth:min(len(vals), (i+1)*ReduceWidth)], id, c)
	}
	return ReduceLevels(parts, id, c)
}

// Finish turns a reduction's result into the observable's value: mean divides the sum by
// the number of cells (in f64; an integer sum is converted first).
func (o *Observe) Finish(v float64, cells int) float64 {
	if o.Op == "mean" {
		return v / float64(cells)
	}
	return v
}

// Accum is the type an observable's cell values are reduced in: F64 or I64.
func (o *Observe) Accum() Type {
	if o.Value.Type().IsInt() {
		return I64
	}
	return F64
}

// EvalUntil evaluates the until test (or any expression of constants, parameters and
// observables) with the observables' values obs (by Observe.Index).
func EvalUntil(e Expr, params []Value, obs []float64) Value {
	switch e := e.(type) {
	case *Const:
		return e.V
	case *ParamRef:
		return params[e.P.Index]
	case *ObsRef:
		return Value{T: F64, F: obs[e.O.Index]}
	case *Unary:
		return EvalUnary(e.Op, EvalUntil(e.X, params, obs))
	case *Binary:
		x := EvalUntil(e.X, params, obs)
		if e.Op == "&&" && !x.B || e.Op == "||" && x.B {
			return x
		}
		return EvalBinary(e.Op, x, EvalUntil(e.Y, params, obs))
	case *Select:
		if EvalUntil(e.C, params, obs).B {
			return EvalUntil(e.A, params, obs)
		}
		return EvalUntil(e.B, params, obs)
	case *Call:
		args := make([]Value, len(e.Args))
		for i, a := range e.Args {
			args[i] = EvalUntil(a, params, obs)
		}
		return EvalCall(e.Fn, e.T, args)
	case *Convert:
		return ConvertValue(EvalUntil(e.X, params, obs), e.To)
	}
	panic(fmt.Sprintf("internal error: until cannot evaluate %T", e))
}
