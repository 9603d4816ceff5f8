package cpu

import (
	"math"

	"tempest/internal/ir"
)

// This file holds the element loops. Each works on a chunk of one row; the compiler in
// compile.go picks one loop per IR node so that no per-cell dispatch remains. Products are
// converted explicitly before they are added so Go never fuses them into an FMA: results stay
// identical to the reference's separately rounded operations.

type float interface{ ~float32 | ~float64 }
type integer interface{ ~int32 | ~int64 }
type number interface{ float | integer }

func arithVV[T number](op string, out, a, b []T) {
	a, b = a[:len(out)], b[:len(out)]
	switch op {
	case "+":
		for i := range out {
			out[i] = a[i] + b[i]
		}
	case "-":
		for i := range out {
			out[i] = a[i] - b[i]
		}
	case "*":
		for i := range out {
			out[i] = T(a[i] * b[i])
		}
	}
}

// scalarOp computes out = a op k for a coefficient k.
func scalarOp[T float](op string, out, a []T, k T) {
	a = a[:len(out)]
	switch op {
	case "+":
		for i := range out {
			out[i] = a[i] + k
		}
	case "-":
		for i := range out {
			out[i] = a[i] - k
		}
	case "*":
		for i := range out {
			out[i] = T(a[i] * k)
		}
	case "/":
		for i := range out {
			out[i] = a[i] / k
		}
	}
}

func divF[T float](out, a, b []T) {
	a, b = a[:len(out)], b[:len(out)]
	for i := range out {
		out[i] = a[i] / b[i]
	}
}

func modF[T float](out, a, b []T) {
	a, b = a[:len(out)], b[:len(out)]
	for i := range out {
		out[i] = T(math.Mod(float64(a[i]), float64(b[i])))
	}
}

func divI[T integer](out, a, b []T, mod bool) {
	a, b = a[:len(out)], b[:len(out)]
	for i := range out {
		switch {
		case b[i] == 0:
			out[i] = 0
		case mod:
			out[i] = a[i] % b[i]
		default:
			out[i] = a[i] / b[i]
		}
	}
}

// term is one addend of an accumulation chain: sign * coef * vec (coef 1 when absent).
type term[T float] struct {
	neg  bool
	coef T
	scal bool // coef applies
	v    []T
}

// post is an operation applied to a whole chain: the "/ 118" of AN5D's Jacobi stencils.
type post[T float] struct {
	op byte // 0 (none), '/' or '*'
	k  T
}

// accumulate computes out = (((t0 ± t1) ± t2) ...) p.op p.k in order, up to four terms per
// pass over the chunk, with every product and sum rounded to T as the reference does. With a
// post operation the last term gets a pass of its own that also applies it, so a five-point
// Jacobi stencil takes two passes.
func accumulate[T float](out []T, ts []term[T], p post[T]) {
	if onePass(out, ts, p) {
		return
	}
	n := len(out)
	last := len(ts)
	if p.op != 0 && len(ts) > 1 {
		last--
	}
	for k := 0; k < last; {
		m := min(4, last-k)
		g := ts[k : k+m]
		first := k == 0
		switch m {
		case 1:
			accum1(out, n, first, g[0])
		case 2:
			accum1(out, n, first, g[0])
			accum1(out, n, false, g[1])
		default:
			accum3or4(out, n, first, g)
		}
		k += m
	}
	if p.op == 0 {
		return
	}
	if last == len(ts) { // a single term
		accum1(out, n, true, ts[0])
		applyPost(out, p)
		return
	}
	t := ts[last]
	if !t.scal || t.neg {
		accum1(out, n, false, t)
		applyPost(out, p)
		return
	}
	out = out[:n]
	v := t.v[:len(out)]
	c, k := t.coef, p.k
	if p.op == '/' {
		for i := range out {
			out[i] = (out[i] + T(c*v[i])) / k
		}
		return
	}
	for i := range out {
		out[i] = T((out[i] + T(c*v[i])) * k)
	}
}

// onePass evaluates a whole chain of five to eight positive, scaled terms (the weighted sums of
// Jacobi stencils) and its post operation in a single pass over the chunk, in the reference's
// order of operations.
func onePass[T float](out []T, ts []term[T], p post[T]) bool {
	if len(ts) < 5 || len(ts) > 8 {
		return false
	}
	for _, t := range ts {
		if t.neg || !t.scal {
			return false
		}
	}
	switch len(ts) {
	case 5:
		v0, v1, v2, v3, v4 := ts[0].v[:len(out)], ts[1].v[:len(out)], ts[2].v[:len(out)], ts[3].v[:len(out)], ts[4].v[:len(out)]
		c0, c1, c2, c3, c4 := ts[0].coef, ts[1].coef, ts[2].coef, ts[3].coef, ts[4].coef
		for i := range out {
			s := T(c0*v0[i]) + T(c1*v1[i])
			s = s + T(c2*v2[i])
			s = s + T(c3*v3[i])
			s = s + T(c4*v4[i])
			out[i] = finish(s, p)
		}
	case 6:
		v0, v1, v2, v3, v4, v5 := ts[0].v[:len(out)], ts[1].v[:len(out)], ts[2].v[:len(out)], ts[3].v[:len(out)], ts[4].v[:len(out)], ts[5].v[:len(out)]
		c0, c1, c2, c3, c4, c5 := ts[0].coef, ts[1].coef, ts[2].coef, ts[3].coef, ts[4].coef, ts[5].coef
		for i := range out {
			s := T(c0*v0[i]) + T(c1*v1[i])
			s = s + T(c2*v2[i])
			s = s + T(c3*v3[i])
			s = s + T(c4*v4[i])
			s = s + T(c5*v5[i])
			out[i] = finish(s, p)
		}
	case 7:
		v0, v1, v2, v3, v4, v5, v6 := ts[0].v[:len(out)], ts[1].v[:len(out)], ts[2].v[:len(out)], ts[3].v[:len(out)], ts[4].v[:len(out)], ts[5].v[:len(out)], ts[6].v[:len(out)]
		c0, c1, c2, c3, c4, c5, c6 := ts[0].coef, ts[1].coef, ts[2].coef, ts[3].coef, ts[4].coef, ts[5].coef, ts[6].coef
		for i := range out {
			s := T(c0*v0[i]) + T(c1*v1[i])
			s = s + T(c2*v2[i])
			s = s + T(c3*v3[i])
			s = s + T(c4*v4[i])
			s = s + T(c5*v5[i])
			s = s + T(c6*v6[i])
			out[i] = finish(s, p)
		}
	case 8:
		v0, v1, v2, v3, v4, v5, v6, v7 := ts[0].v[:len(out)], ts[1].v[:len(out)], ts[2].v[:len(out)], ts[3].v[:len(out)], ts[4].v[:len(out)], ts[5].v[:len(out)], ts[6].v[:len(out)], ts[7].v[:len(out)]
		c0, c1, c2, c3, c4, c5, c6, c7 := ts[0].coef, ts[1].coef, ts[2].coef, ts[3].coef, ts[4].coef, ts[5].coef, ts[6].coef, ts[7].coef
		for i := range out {
			s := T(c0*v0[i]) + T(c1*v1[i])
			s = s + T(c2*v2[i])
			s = s + T(c3*v3[i])
			s = s + T(c4*v4[i])
			s = s + T(c5*v5[i])
			s = s + T(c6*v6[i])
			s = s + T(c7*v7[i])
			out[i] = finish(s, p)
		}
	}
	return true
}

// finish applies a chain's post operation to its sum.
func finish[T float](s T, p post[T]) T {
	switch p.op {
	case '/':
		return s / p.k
	case '*':
		return T(s * p.k)
	}
	return s
}

func applyPost[T float](out []T, p post[T]) {
	for i := range out {
		if p.op == '/' {
			out[i] = out[i] / p.k
		} else {
			out[i] = T(out[i] * p.k)
		}
	}
}

func accum1[T float](out []T, n int, first bool, t term[T]) {
	out = out[:n]
	v := t.v[:len(out)]
	c := t.coef
	switch {
	case first && t.scal:
		for i := range out {
			out[i] = T(c * v[i])
		}
		if t.neg {
			for i := range out {
				out[i] = -out[i]
			}
		}
	case first:
		copy(out, v)
		if t.neg {
			for i := range out {
				out[i] = -out[i]
			}
		}
	case t.scal && !t.neg:
		for i := range out {
			out[i] = out[i] + T(c*v[i])
		}
	case t.scal:
		for i := range out {
			out[i] = out[i] - T(c*v[i])
		}
	case !t.neg:
		for i := range out {
			out[i] = out[i] + v[i]
		}
	default:
		for i := range out {
			out[i] = out[i] - v[i]
		}
	}
}

// accum3or4 handles the common all-positive, all-scaled groups in one pass; other groups fall
// back to term-by-term passes.
func accum3or4[T float](out []T, n int, first bool, g []term[T]) {
	for _, t := range g {
		if t.neg || !t.scal {
			for j, t := range g {
				accum1(out, n, first && j == 0, t)
			}
			return
		}
	}
	if len(g) == 3 {
		out = out[:n]
		a, b, c := g[0].v[:len(out)], g[1].v[:len(out)], g[2].v[:len(out)]
		ca, cb, cc := g[0].coef, g[1].coef, g[2].coef
		if first {
			for i := range out {
				s := T(ca*a[i]) + T(cb*b[i])
				out[i] = s + T(cc*c[i])
			}
			return
		}
		for i := range out {
			s := out[i] + T(ca*a[i])
			s = s + T(cb*b[i])
			out[i] = s + T(cc*c[i])
		}
		return
	}
	out = out[:n]
	a, b, c, d := g[0].v[:len(out)], g[1].v[:len(out)], g[2].v[:len(out)], g[3].v[:len(out)]
	ca, cb, cc, cd := g[0].coef, g[1].coef, g[2].coef, g[3].coef
	if first {
		for i := range out {
			s := T(ca*a[i]) + T(cb*b[i])
			s = s + T(cc*c[i])
			out[i] = s + T(cd*d[i])
		}
		return
	}
	for i := range out {
		s := out[i] + T(ca*a[i])
		s = s + T(cb*b[i])
		s = s + T(cc*c[i])
		out[i] = s + T(cd*d[i])
	}
}

func compare[T number](op string, out []bool, a, b []T) {
	a, b = a[:len(out)], b[:len(out)]
	switch op {
	case "==":
		for i := range out {
			out[i] = a[i] == b[i]
		}
	case "!=":
		for i := range out {
			out[i] = a[i] != b[i]
		}
	case "<":
		for i := range out {
			out[i] = a[i] < b[i]
		}
	case "<=":
		for i := range out {
			out[i] = a[i] <= b[i]
		}
	case ">":
		for i := range out {
			out[i] = a[i] > b[i]
		}
	case ">=":
		for i := range out {
			out[i] = a[i] >= b[i]
		}
	}
}

func selectVec[T any](out []T, c []bool, a, b []T) {
	for i := range out {
		if c[i] {
			out[i] = a[i]
		} else {
			out[i] = b[i]
		}
	}
}

func fill[T any](out []T, v T) {
	for i := range out {
		out[i] = v
	}
}

// mathF applies a one-argument float function computed in float64, as the reference does.
func mathF[T float](out, a []T, f func(float64) float64) {
	a = a[:len(out)]
	for i := range out {
		out[i] = T(f(float64(a[i])))
	}
}

func math2F[T float](out, a, b []T, f func(a, b float64) float64) {
	a, b = a[:len(out)], b[:len(out)]
	for i := range out {
		out[i] = T(f(float64(a[i]), float64(b[i])))
	}
}

func fmaF[T float](out, a, b, c []T) {
	for i := range out {
		out[i] = T(math.FMA(float64(a[i]), float64(b[i]), float64(c[i])))
	}
}

func absI[T integer](out, a []T) {
	for i := range out {
		if a[i] < 0 {
			out[i] = -a[i]
		} else {
			out[i] = a[i]
		}
	}
}

func minMaxI[T integer](out, a, b []T, isMax bool) {
	for i := range out {
		if (a[i] > b[i]) == isMax {
			out[i] = a[i]
		} else {
			out[i] = b[i]
		}
	}
}

func neg[T number](out, a []T) {
	for i := range out {
		out[i] = -a[i]
	}
}

// convertVec converts between element types with the IR's rules (ir.ConvertValue).
func convertVec(to ir.Type, out any, in any) {
	switch o := out.(type) {
	case []float32:
		switch x := in.(type) {
		case []float64:
			for i := range o {
				o[i] = float32(x[i])
			}
		case []int32:
			for i := range o {
				o[i] = float32(x[i])
			}
		case []int64:
			for i := range o {
				o[i] = float32(x[i])
			}
		}
	case []float64:
		switch x := in.(type) {
		case []float32:
			for i := range o {
				o[i] = float64(x[i])
			}
		case []int32:
			for i := range o {
				o[i] = float64(x[i])
			}
		case []int64:
			for i := range o {
				o[i] = float64(x[i])
			}
		}
	case []int32:
		switch x := in.(type) {
		case []float32:
			for i := range o {
				o[i] = int32(ir.FloatToInt(float64(x[i]), ir.I32))
			}
		case []float64:
			for i := range o {
				o[i] = int32(ir.FloatToInt(x[i], ir.I32))
			}
		case []int64:
			for i := range o {
				o[i] = int32(x[i])
			}
		case []bool:
			for i := range o {
				o[i] = b2i[int32](x[i])
			}
		}
	case []int64:
		switch x := in.(type) {
		case []float32:
			for i := range o {
				o[i] = ir.FloatToInt(float64(x[i]), ir.I64)
			}
		case []float64:
			for i := range o {
				o[i] = ir.FloatToInt(x[i], ir.I64)
			}
		case []int32:
			for i := range o {
				o[i] = int64(x[i])
			}
		case []bool:
			for i := range o {
				o[i] = b2i[int64](x[i])
			}
		}
	}
}

func b2i[T integer](b bool) T {
	if b {
		return 1
	}
	return 0
}
