// Package errbound predicts how far an engine's floating-point results may lie from the
// reference interpreter's. It runs the reference's own arithmetic (so its values are the
// reference's, bit for bit) and carries beside every value a bound on the difference an
// engine's result may have: each operation adds the rounding error both executions may make
// (from the engine's documented per-operation accuracy, fast math included) and passes on its
// inputs' bounds scaled by its partial derivatives. The analysis is first order (linearised):
// exact while the differences stay small beside the values they perturb, which is what a
// verification run needs to tell a rounding difference from a wrong kernel.
//
// Besides the bound, it tracks each cell's amplification: how much a unit difference in the
// previous step's state grows in one step (the sum over the cell's inputs of the partial
// derivatives' magnitudes). A program whose amplification stays far above 1 is ill-conditioned:
// no two engines that round differently agree to more than a few digits after some steps, and
// its bound grows accordingly.
package errbound

import (
	"math"

	"tempest/internal/ir"
)

// Arith is an execution's accuracy per operation: the largest error, in units in the last
// place of the result, beyond the correctly rounded result of the operation on its actual
// inputs. Operations are "+", "-", "*" (with contraction into FMAs, which removes a rounding
// and so stays within the same allowance), "/", "/c" (division by a constant, which lowering
// turns into multiplications), "cvt" (conversions) and the language's math functions.
type Arith struct {
	Name string
	// F32 and F64 give each operation's error for the type; a missing operation is
	// correctly rounded.
	F32, F64 map[string]Acc
	// FTZ says results below the smallest normal float may be flushed to zero (fast math).
	FTZ bool
	// Reassoc says the engine may add a float sum's terms in another order than the written
	// one (fast-math plans order them, lower.orderTerms): each of the n-1 additions of an
	// n-term sum is then allowed the rounding of the sum of the terms' magnitudes, which
	// bounds every order's partial sums, instead of the rounding of its own partial sum.
	Reassoc bool
}

// Acc is one operation's accuracy, possibly depending on its first argument x (the fast
// exponential's error grows with |x|, the fast sine's holds on [-pi, pi]).
type Acc func(x float64) (ulps, abs float64)

// ulps is an accuracy independent of the argument.
func ulps(n float64) Acc { return func(float64) (float64, float64) { return n, 0 } }

// Reference is the reference interpreter: IEEE arithmetic rounded to the type after every
// operation; float32 functions are computed in float64 and rounded (correctly rounded but for
// double rounding), float64 functions are Go's math package (within an ulp).
var Reference = Arith{
	Name: "reference",
	F64:  map[string]Acc{"exp": ulps(1), "log": ulps(1), "sin": ulps(1), "cos": ulps(1), "tan": ulps(1), "tanh": ulps(1), "pow": ulps(1)},
}

// CUDA is NVRTC's default compilation: IEEE division and square root, FMA contraction, and the
// maximum errors of the CUDA math library (CUDA C++ Programming Guide, "Mathematical
// Functions", standard functions, compute capability 5.2 and later).
var CUDA = Arith{
	Name: "cuda",
	F32:  map[string]Acc{"exp": ulps(2), "log": ulps(1), "sin": ulps(2), "cos": ulps(2), "tan": ulps(4), "tanh": ulps(2), "pow": ulps(4)},
	F64:  map[string]Acc{"exp": ulps(1), "log": ulps(1), "sin": ulps(2), "cos": ulps(2), "tan": ulps(2), "tanh": ulps(1), "pow": ulps(2)},
}

// CUDAFast is -use_fast_math: float division by __fdividef (2 ulp), approximate square root
// (1 ulp; 1/sqrt may become rsqrtf, 2 ulp, which the two operations' allowances cover), the
// intrinsic functions (__expf: 2 + floor(|1.173 x|) ulp; __logf and __sinf/__cosf: absolute
// error 2^-21.41 on [0.5, 2] and [-pi, pi], elsewhere 3 ulp and an absolute error growing
// with the argument's multiple of pi; __powf through exp2(y log2 x): 8192 ulp, a relative
// error of 2^-10 that holds for exponents below 4096 in magnitude), a conservative
// 2^-10.9 relative error for tanh (the approximate instruction), and flushed subnormals.
// Lowering's division by a constant becomes a multiplication by the rounded reciprocal (1 ulp).
// Double precision is unaffected.
var CUDAFast = Arith{
	Name: "cuda fast math",
	F32: map[string]Acc{
		"/": ulps(2), "/c": ulps(1), "sqrt": ulps(1),
		"exp": func(x float64) (float64, float64) { return 2 + math.Floor(math.Abs(1.173*x)), 0 },
		"log": fastLog(math.Exp2(-21.41), 3),
		"sin": fastTrig(math.Exp2(-21.41)), "cos": fastTrig(math.Exp2(-21.41)),
		"tan": func(x float64) (float64, float64) {
			c := math.Cos(x)
			return 4, 2 * math.Exp2(-21.41) / math.Max(c*c, 1e-30)
		},
		"tanh": ulps(math.Exp2(23 - 10.9)),
		"pow":  ulps(8192),
	},
	F64:     CUDA.F64,
	FTZ:     true,
	Reassoc: true,
}

// OpenCL is the OpenCL C specification's minimum accuracy of the full profile (single
// precision division 2.5 ulp and square root 3 ulp unless correctly rounded ones are asked
// for; double division and square root correctly rounded).
var OpenCL = Arith{
	Name: "opencl",
	F32:  map[string]Acc{"/": ulps(2.5), "sqrt": ulps(3), "exp": ulps(3), "log": ulps(3), "sin": ulps(4), "cos": ulps(4), "tan": ulps(5), "tanh": ulps(5), "pow": ulps(16)},
	F64:  map[string]Acc{"exp": ulps(3), "log": ulps(3), "sin": ulps(4), "cos": ulps(4), "tan": ulps(5), "tanh": ulps(5), "pow": ulps(16)},
}

// OpenCLFast is -cl-fast-relaxed-math: the specification's relaxed accuracy for single
// precision (exp 3 + floor(|2x|) ulp, log and sin/cos absolute errors 2^-21 and 2^-11 on
// their primary ranges, pow and tanh derived from exp2/log2: 8192 ulp), subnormals flushed.
var OpenCLFast = Arith{
	Name: "opencl fast relaxed math",
	F32: map[string]Acc{
		"/": ulps(2.5), "/c": ulps(1), "sqrt": ulps(3),
		"exp": func(x float64) (float64, float64) { return 3 + math.Floor(math.Abs(2*x)), 0 },
		"log": fastLog(0x1p-21, 3),
		"sin": fastTrig(0x1p-11), "cos": fastTrig(0x1p-11),
		"tan":  func(x float64) (float64, float64) { c := math.Cos(x); return 5, 2 * 0x1p-11 / math.Max(c*c, 1e-30) },
		"tanh": ulps(8192), "pow": ulps(8192),
	},
	F64:     OpenCL.F64,
	FTZ:     true,
	Reassoc: true,
}

// For picks the accuracy of a backend's compilation ("cuda" or "opencl").
func For(backend string, fast bool) Arith {
	switch {
	case backend == "cuda" && fast:
		return CUDAFast
	case backend == "cuda":
		return CUDA
	case fast:
		return OpenCLFast
	}
	return OpenCL
}

func fastLog(abs, farUlps float64) Acc {
	return func(x float64) (float64, float64) {
		if x >= 0.5 && x <= 2 {
			return 0, abs
		}
		return farUlps, 0
	}
}

// fastTrig is an approximate sine or cosine: an absolute error on [-pi, pi] that argument
// reduction multiplies by the number of periods beyond it.
func fastTrig(abs float64) Acc {
	return func(x float64) (float64, float64) {
		return 0, abs * math.Max(1, math.Ceil(math.Abs(x)/math.Pi))
	}
}

// lookup is operation op's accuracy for type t; nil where the operation is correctly rounded.
func (a Arith) lookup(op string, t ir.Type) Acc {
	m := a.F32
	if t == ir.F64 {
		m = a.F64
	}
	if f, ok := m[op]; ok {
		return f
	}
	if op == "/c" { // a division by a constant is a division unless said otherwise
		return m["/"]
	}
	return nil
}

// ulpOf is the unit in the last place of v in a binary format of p bits of precision and
// smallest normal exponent minExp.
func ulpOf(v float64, p, minExp int) float64 {
	bits := math.Float64bits(v)
	e := int(bits>>52&0x7ff) - 1023   // v = 1.f 2^e for normal float64 values
	e = max(minExp, min(e, 1-minExp)) // subnormals take the smallest exponent, Inf and NaN the largest
	if e-p+1 < -1022 {
		return math.Ldexp(1, e-p+1) // a subnormal float64
	}
	return math.Float64frombits(uint64(e-p+1+1023) << 52)
}
