package gen

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"tempest/internal/ir"
)

// cType is the C type of an IR type.
func cType(t ir.Type) string {
	switch t {
	case ir.Bool:
		return "int"
	case ir.I32:
		return "int32_t"
	case ir.I64:
		return "int64_t"
	case ir.F32:
		return "float"
	case ir.F64:
		return "double"
	}
	panic("internal error: C type of " + t.String())
}

// cLit prints a constant so that C reads back exactly the same value.
func cLit(v ir.Value) string {
	switch v.T {
	case ir.Bool:
		if v.B {
			return "1"
		}
		return "0"
	case ir.I32:
		if v.I == math.MinInt32 {
			return "(-2147483647 - 1)"
		}
		if v.I < 0 {
			return "(" + strconv.FormatInt(v.I, 10) + ")"
		}
		return strconv.FormatInt(v.I, 10)
	case ir.I64:
		if v.I == math.MinInt64 {
			return "(-9223372036854775807LL - 1)"
		}
		if v.I < 0 {
			return "(" + strconv.FormatInt(v.I, 10) + "LL)"
		}
		return strconv.FormatInt(v.I, 10) + "LL"
	case ir.F32, ir.F64:
		f := v.F
		suffix, cast := "", "(double)"
		bits := 64
		if v.T == ir.F32 {
			suffix, cast, bits = "f", "(float)", 32
		}
		switch {
		case math.IsInf(f, 1):
			return "(" + cast + "INFINITY)"
		case math.IsInf(f, -1):
			return "(-" + cast + "INFINITY)"
		case math.IsNaN(f):
			return "(" + cast + "NAN)"
		}
		s := strconv.FormatFloat(f, 'e', -1, bits) + suffix
		if f < 0 || f == 0 && math.Signbit(f) {
			return "(" + s + ")"
		}
		return s
	}
	panic("internal error: literal of " + v.T.String())
}

// cexpr turns IR expressions into C expressions with the IR's semantics: integer arithmetic
// wraps, x/0 and x%0 are 0, float to int conversions truncate and saturate (NaN gives 0), and
// f32 math functions are computed in double and rounded, as ir.EvalCall does. The callbacks
// say how the context reads grids, coordinates and the rest.
type cexpr struct {
	coord func(axis int) string
	size  func(axis int) string
	step  string
	param func(p *ir.Param) string
	edge  string
	load  func(l *ir.Load) string
	let   func(l *ir.Let) string
	rand  func(t ir.Type) string
	// wide computes f32 values in double: the harness's second CPU loop, which measures how far
	// float rounding drifts on the input (gen.widen).
	wide bool
}

// ty is the type a value of type t is computed in.
func (c *cexpr) ty(t ir.Type) ir.Type {
	if c.wide && t == ir.F32 {
		return ir.F64
	}
	return t
}

func bits(t ir.Type) string {
	if t == ir.I64 {
		return "64"
	}
	return "32"
}

func (c *cexpr) expr(e ir.Expr) string {
	switch e := e.(type) {
	case *ir.Const:
		v := e.V
		v.T = c.ty(v.T)
		return cLit(v)
	case *ir.ParamRef:
		return c.param(e.P)
	case *ir.LetRef:
		return c.let(e.L)
	case *ir.Coord:
		return c.coord(e.Axis)
	case *ir.Size:
		return c.size(e.Axis)
	case *ir.Step:
		return c.step
	case *ir.EdgeValue:
		if c.edge == "" {
			panic("internal error: edge value outside an edge rule")
		}
		return c.edge
	case *ir.Rand:
		if c.rand == nil {
			panic("internal error: rand() outside initial values")
		}
		return c.rand(e.T)
	case *ir.Load:
		if c.load == nil {
			panic("internal error: grid read where none is allowed")
		}
		return c.load(e)
	case *ir.Unary:
		x := c.expr(e.X)
		switch e.Op {
		case "+":
			return x
		case "!":
			return "(!" + x + ")"
		case "-":
			if e.T.IsInt() {
				return fmt.Sprintf("t_neg%s(%s)", bits(e.T), x)
			}
			return "(-" + x + ")"
		}
	case *ir.Binary:
		x, y := c.expr(e.X), c.expr(e.Y)
		switch e.Op {
		case "&&", "||", "==", "!=", "<", "<=", ">", ">=":
			return fmt.Sprintf("(%s %s %s)", x, e.Op, y)
		}
		if e.T.IsFloat() {
			if e.Op == "%" {
				if c.ty(e.T) == ir.F32 {
					return fmt.Sprintf("(float)fmod((double)%s, (double)%s)", x, y)
				}
				return fmt.Sprintf("fmod(%s, %s)", x, y)
			}
			return fmt.Sprintf("(%s %s %s)", x, e.Op, y)
		}
		name := map[string]string{"+": "add", "-": "sub", "*": "mul", "/": "div", "%": "rem"}[e.Op]
		if name == "" {
			break
		}
		return fmt.Sprintf("t_%s%s(%s, %s)", name, bits(e.T), x, y)
	case *ir.Select:
		return fmt.Sprintf("(%s ? %s : %s)", c.expr(e.C), c.expr(e.A), c.expr(e.B))
	case *ir.Call:
		args := make([]string, len(e.Args))
		for i, a := range e.Args {
			args[i] = c.expr(a)
		}
		if e.T.IsInt() {
			return fmt.Sprintf("t_%s%s(%s)", e.Fn, bits(e.T), strings.Join(args, ", "))
		}
		fn := map[string]string{"abs": "fabs", "min": "fmin", "max": "fmax"}[e.Fn]
		if fn == "" {
			fn = e.Fn
		}
		if c.ty(e.T) == ir.F32 {
			for i := range args {
				args[i] = "(double)" + args[i]
			}
			return fmt.Sprintf("(float)%s(%s)", fn, strings.Join(args, ", "))
		}
		return fmt.Sprintf("%s(%s)", fn, strings.Join(args, ", "))
	case *ir.Convert:
		return c.convert(c.expr(e.X), e.X.Type(), e.To)
	}
	panic(fmt.Sprintf("internal error: cannot write %T as C", e))
}

// convert writes ir.ConvertValue.
func (c *cexpr) convert(x string, from, to ir.Type) string {
	from, to = c.ty(from), c.ty(to)
	if from == to {
		return x
	}
	switch {
	case to == ir.Bool:
		return fmt.Sprintf("(%s != 0)", x)
	case to.IsFloat() && from == ir.Bool:
		return fmt.Sprintf("(%s ? (%s)1 : (%s)0)", x, cType(to), cType(to))
	case to == ir.F32 && from.IsInt():
		// Through double, as the IR does (float64 then rounded to float32).
		return fmt.Sprintf("(float)(double)%s", x)
	case to.IsFloat():
		return fmt.Sprintf("(%s)%s", cType(to), x)
	case to.IsInt() && from.IsFloat():
		return fmt.Sprintf("t_f2i%s((double)%s)", bits(to), x)
	case to.IsInt() && from == ir.Bool:
		return fmt.Sprintf("(%s)(%s ? 1 : 0)", cType(to), x)
	case to.IsInt():
		return fmt.Sprintf("(%s)%s", cType(to), x)
	}
	panic("internal error: conversion")
}

// cHelper is one integer or conversion helper the C code may call, with the helpers it calls.
type cHelper struct {
	name string
	deps []string
	code string
}

var cHelpers = []cHelper{
	{"t_add32", nil, "static inline int32_t t_add32(int32_t a, int32_t b) { return (int32_t)((uint32_t)a + (uint32_t)b); }"},
	{"t_sub32", nil, "static inline int32_t t_sub32(int32_t a, int32_t b) { return (int32_t)((uint32_t)a - (uint32_t)b); }"},
	{"t_mul32", nil, "static inline int32_t t_mul32(int32_t a, int32_t b) { return (int32_t)((uint32_t)a * (uint32_t)b); }"},
	{"t_neg32", nil, "static inline int32_t t_neg32(int32_t a) { return (int32_t)(0u - (uint32_t)a); }"},
	{"t_div32", []string{"t_neg32"}, "static inline int32_t t_div32(int32_t a, int32_t b) { return b == 0 ? 0 : b == -1 ? t_neg32(a) : a / b; }"},
	{"t_rem32", nil, "static inline int32_t t_rem32(int32_t a, int32_t b) { return b == 0 || b == -1 ? 0 : a % b; }"},
	{"t_abs32", []string{"t_neg32"}, "static inline int32_t t_abs32(int32_t a) { return a < 0 ? t_neg32(a) : a; }"},
	{"t_min32", nil, "static inline int32_t t_min32(int32_t a, int32_t b) { return a < b ? a : b; }"},
	{"t_max32", nil, "static inline int32_t t_max32(int32_t a, int32_t b) { return a > b ? a : b; }"},
	{"t_add64", nil, "static inline int64_t t_add64(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }"},
	{"t_sub64", nil, "static inline int64_t t_sub64(int64_t a, int64_t b) { return (int64_t)((uint64_t)a - (uint64_t)b); }"},
	{"t_mul64", nil, "static inline int64_t t_mul64(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }"},
	{"t_neg64", nil, "static inline int64_t t_neg64(int64_t a) { return (int64_t)(0u - (uint64_t)a); }"},
	{"t_div64", []string{"t_neg64"}, "static inline int64_t t_div64(int64_t a, int64_t b) { return b == 0 ? 0 : b == -1 ? t_neg64(a) : a / b; }"},
	{"t_rem64", nil, "static inline int64_t t_rem64(int64_t a, int64_t b) { return b == 0 || b == -1 ? 0 : a % b; }"},
	{"t_abs64", []string{"t_neg64"}, "static inline int64_t t_abs64(int64_t a) { return a < 0 ? t_neg64(a) : a; }"},
	{"t_min64", nil, "static inline int64_t t_min64(int64_t a, int64_t b) { return a < b ? a : b; }"},
	{"t_max64", nil, "static inline int64_t t_max64(int64_t a, int64_t b) { return a > b ? a : b; }"},
	{"t_f2i32", nil, `static inline int32_t t_f2i32(double f) {
  if (f != f) return 0;
  if (f <= -2147483648.0) return INT32_MIN;
  if (f >= 2147483647.0) return INT32_MAX;
  return (int32_t)f;
}`},
	{"t_f2i64", nil, `static inline int64_t t_f2i64(double f) {
  if (f != f) return 0;
  if (f <= -9223372036854775808.0) return INT64_MIN;
  if (f >= 9223372036854775807.0) return INT64_MAX;
  return (int64_t)f;
}`},
}

// helpersFor returns the helpers that code calls (and those they call), in a fixed order;
// emitting only those keeps compilers that warn about unused static functions (nvcc) quiet.
func helpersFor(code string) string {
	need := map[string]bool{}
	byName := map[string]cHelper{}
	for _, h := range cHelpers {
		byName[h.name] = h
	}
	var mark func(string)
	mark = func(n string) {
		if need[n] {
			return
		}
		need[n] = true
		for _, d := range byName[n].deps {
			mark(d)
		}
	}
	for _, h := range cHelpers {
		if strings.Contains(code, h.name+"(") {
			mark(h.name)
		}
	}
	if len(need) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("/* Integer arithmetic as Tempest defines it: two's complement wrap-around, x/0 == x%0 == 0;\n")
	b.WriteString(" * float to integer truncates toward zero and saturates, NaN gives 0. */\n")
	for _, h := range cHelpers {
		if need[h.name] {
			b.WriteString(h.code)
			b.WriteString("\n")
		}
	}
	b.WriteString("\n")
	return b.String()
}
