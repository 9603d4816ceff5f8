package ir

import (
	"fmt"
	"math"
)

// This file is the single definition of scalar arithmetic: constant folding, the reference
// interpreter and the CPU engine's tests all agree with it. f32 values are kept in float64
// fields but rounded to float32 after every operation, as a GPU computing in float would.

// MakeFloat returns a float Value of type t, rounding to float32 where t is F32.
func MakeFloat(t Type, f float64) Value {
	if t == F32 {
		f = float64(float32(f))
	}
	return Value{T: t, F: f}
}

// MakeInt returns an integer Value of type t, wrapping to 32 bits where t is I32.
func MakeInt(t Type, i int64) Value {
	if t == I32 {
		i = int64(int32(i))
	}
	return Value{T: t, I: i}
}

// ConvertValue converts v to type t. Floats become integers by truncation toward zero,
// saturating at the type's limits, with NaN giving 0 (what CUDA's cvt.rzi does).
func ConvertValue(v Value, t Type) Value {
	if v.T == t {
		return v
	}
	switch {
	case t.IsFloat():
		return MakeFloat(t, v.Float())
	case t.IsInt():
		switch {
		case v.T.IsFloat():
			return MakeInt(t, FloatToInt(v.F, t))
		case v.T == Bool:
			if v.B {
				return MakeInt(t, 1)
			}
			return MakeInt(t, 0)
		default:
			return MakeInt(t, v.I)
		}
	case t == Bool:
		return Value{T: Bool, B: v.Float() != 0}
	}
	panic(fmt.Sprintf("internal error: convert %v to %v", v.T, t))
}

// FloatToInt truncates f toward zero and saturates to the range of t; NaN gives 0.
func FloatToInt(f float64, t Type) int64 {
	lo, hi := float64(math.MinInt32), float64(math.MaxInt32)
	if t == I64 {
		lo, hi = math.MinInt64, math.MaxInt64
	}
	switch {
	case math.IsNaN(f):
		return 0
	case f <= lo:
		if t == I64 {
			return math.MinInt64
		}
		return math.MinInt32
	case f >= hi:
		if t == I64 {
			return math.MaxInt64
		}
		return math.MaxInt32
	}
	return int64(f)
}

// EvalUnary applies a unary operator to a value of the operation's type.
func EvalUnary(op string, x Value) Value {
	switch op {
	case "-":
		if x.T.IsFloat() {
			return MakeFloat(x.T, -x.F)
		}
		return MakeInt(x.T, -x.I)
	case "!":
		return Value{T: Bool, B: !x.B}
	case "+":
		return x
	}
	panic("internal error: unary " + op)
}

// EvalBinary applies op to operands that both have type t (the operation's type; for
// comparisons the result is bool).
func EvalBinary(op string, x, y Value) Value {
	t := x.T
	switch op {
	case "&&":
		return Value{T: Bool, B: x.B && y.B}
	case "||":
		return Value{T: Bool, B: x.B || y.B}
	case "==", "!=", "<", "<=", ">", ">=":
		return Value{T: Bool, B: compare(op, x, y)}
	}
	if t.IsFloat() {
		a, b := x.F, y.F
		if t == F32 {
			fa, fb := float32(a), float32(b)
			switch op {
			case "+":
				return Value{T: t, F: float64(fa + fb)}
			case "-":
				return Value{T: t, F: float64(fa - fb)}
			case "*":
				return Value{T: t, F: float64(float32(fa * fb))}
			case "/":
				return Value{T: t, F: float64(fa / fb)}
			case "%":
				return MakeFloat(t, math.Mod(a, b))
			}
		}
		switch op {
		case "+":
			return Value{T: t, F: a + b}
		case "-":
			return Value{T: t, F: a - b}
		case "*":
			return Value{T: t, F: float64(a * b)}
		case "/":
			return Value{T: t, F: a / b}
		case "%":
			return Value{T: t, F: math.Mod(a, b)}
		}
	}
	if t == I32 {
		a, b := int32(x.I), int32(y.I)
		return Value{T: t, I: int64(intOp32(op, a, b))}
	}
	return Value{T: t, I: intOp64(op, x.I, y.I)}
}

func intOp32(op string, a, b int32) int32 {
	switch op {
	case "+":
		return a + b
	case "-":
		return a - b
	case "*":
		return a * b
	case "/":
		if b == 0 {
			return 0
		}
		return a / b
	case "%":
		if b == 0 {
			return 0
		}
		return a % b
	}
	panic("internal error: integer op " + op)
}

func intOp64(op string, a, b int64) int64 {
	switch op {
	case "+":
		return a + b
	case "-":
		return a - b
	case "*":
		return a * b
	case "/":
		if b == 0 {
			return 0
		}
		return a / b
	case "%":
		if b == 0 {
			return 0
		}
		return a % b
	}
	panic("internal error: integer op " + op)
}

func compare(op string, x, y Value) bool {
	if x.T == Bool {
		switch op {
		case "==":
			return x.B == y.B
		case "!=":
			return x.B != y.B
		}
		panic("internal error: ordered comparison of bools")
	}
	if x.T.IsFloat() {
		a, b := x.F, y.F
		switch op {
		case "==":
			return a == b
		case "!=":
			return a != b
		case "<":
			return a < b
		case "<=":
			return a <= b
		case ">":
			return a > b
		case ">=":
			return a >= b
		}
	}
	a, b := x.I, y.I
	switch op {
	case "==":
		return a == b
	case "!=":
		return a != b
	case "<":
		return a < b
	case "<=":
		return a <= b
	case ">":
		return a > b
	case ">=":
		return a >= b
	}
	panic("internal error: comparison " + op)
}

// EvalCall applies a math function to arguments of type t (the call's type).
func EvalCall(fn string, t Type, args []Value) Value {
	if t.IsInt() {
		a := args[0].I
		switch fn {
		case "abs":
			if a < 0 {
				a = -a
			}
			return MakeInt(t, a)
		case "min":
			return MakeInt(t, min(a, args[1].I))
		case "max":
			return MakeInt(t, max(a, args[1].I))
		}
		panic("internal error: integer call " + fn)
	}
	a := args[0].F
	var r float64
	switch fn {
	case "sqrt":
		r = math.Sqrt(a)
	case "exp":
		r = math.Exp(a)
	case "log":
		r = math.Log(a)
	case "sin":
		r = math.Sin(a)
	case "cos":
		r = math.Cos(a)
	case "tan":
		r = math.Tan(a)
	case "tanh":
		r = math.Tanh(a)
	case "abs":
		r = math.Abs(a)
	case "floor":
		r = math.Floor(a)
	case "ceil":
		r = math.Ceil(a)
	case "min":
		r = FMin(a, args[1].F)
	case "max":
		r = FMax(a, args[1].F)
	case "pow":
		r = math.Pow(a, args[1].F)
	case "fma":
		r = math.FMA(a, args[1].F, args[2].F)
	default:
		panic("internal error: call " + fn)
	}
	return MakeFloat(t, r)
}

// FMin is C's fmin: a NaN operand is ignored.
func FMin(a, b float64) float64 {
	switch {
	case math.IsNaN(a):
		return b
	case math.IsNaN(b):
		return a
	case a < b:
		return a
	}
	return b
}

// FMax is C's fmax: a NaN operand is ignored.
func FMax(a, b float64) float64 {
	switch {
	case math.IsNaN(a):
		return b
	case math.IsNaN(b):
		return a
	case a > b:
		return a
	}
	return b
}
