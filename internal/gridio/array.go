// Package gridio moves Tempest grids in and out of the process: NumPy .npy
// files so that fields can be exchanged with Python tooling, text files
// (one value per line as Rodinia's benchmarks read and write them, or rows
// of blank- or comma-separated values) for programs and data sets that speak
// no NumPy, and PNG heat maps so that a person can look at a field without
// any Python at all.
//
// The central type is Array, a dense C-order (row-major) n-dimensional
// array of one of the four element types the project uses (see DType).
package gridio

import (
	"fmt"
	"math"
	"strings"
	"unsafe"
)

// DType names an element type as the project spells it. It is a string
// rather than an enum so that it can be written in configuration files and
// error messages unchanged.
type DType string

// The element types an Array can hold. They are the only ones Tempest
// kernels compute with, so every file format in this package converts to
// and from exactly these.
const (
	F32 DType = "f32" // float32
	F64 DType = "f64" // float64
	I32 DType = "i32" // int32
	I64 DType = "i64" // int64
)

// Size returns the number of bytes one element of dt occupies, or 0 when dt
// is not one of F32, F64, I32 and I64, so that callers can use it both as a
// size and as a validity check.
func (dt DType) Size() int {
	switch dt {
	case F32, I32:
		return 4
	case F64, I64:
		return 8
	}
	return 0
}

// Valid reports whether dt is one of the four supported element types.
func (dt DType) Valid() bool { return dt.Size() != 0 }

// IsFloat reports whether dt is a floating-point type; conversions and
// plots treat NaN and Inf only for these.
func (dt DType) IsFloat() bool { return dt == F32 || dt == F64 }

// validDTypes is used in error messages so that a user who mistyped a dtype
// sees the accepted spellings.
const validDTypes = "f32, f64, i32, i64"

// maxElems bounds the element count of an Array. It keeps the product of a
// shape from overflowing int and keeps byte counts (elements times 8) in
// range, so that a corrupt header cannot make the package panic in make.
const maxElems = math.MaxInt / 16

// Array is a dense n-dimensional array stored in C order: Shape lists the
// axes slowest first, and the last axis varies fastest in Data. It is the
// exchange type between solvers and the file formats of this package.
type Array struct {
	DType DType
	Shape []int // C order, slowest axis first; empty for a scalar (0-D)
	// Data holds the elements: []float32, []float64, []int32 or []int64
	// matching DType, with len(Data) == product(Shape).
	Data any
	// Widened names the dtype of the file the array was read from where reading widened it
	// (u1, bool, i2, u4, ...), so that messages name what the user's file holds.
	Widened string
}

// numElems returns the product of shape, or an error when a dimension is
// negative or the product is unreasonably large. It is the single place
// where shapes from untrusted input are checked.
func numElems(shape []int) (int, error) {
	n := 1
	for i, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("dimension %d of shape %s is negative", i, shapeString(shape))
		}
		if d != 0 && n > maxElems/d {
			return 0, fmt.Errorf("shape %s has too many elements", shapeString(shape))
		}
		n *= d
	}
	return n, nil
}

// shapeString formats a shape the way NumPy prints it, e.g. "(3, 4)",
// "(3,)" or "()", because users compare it with what Python shows them.
func shapeString(shape []int) string {
	switch len(shape) {
	case 0:
		return "()"
	case 1:
		return fmt.Sprintf("(%d,)", shape[0])
	}
	parts := make([]string, len(shape))
	for i, d := range shape {
		parts[i] = fmt.Sprint(d)
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// NewArray allocates a zero-filled array of the given element type and
// shape. The shape is copied so that later changes by the caller do not
// alter the array. NewArray does not panic on bad arguments: for an unknown
// dtype, a negative dimension or an absurdly large shape it returns an
// Array whose Data is nil, which Validate reports as an error.
func NewArray(dt DType, shape []int) *Array {
	a := &Array{DType: dt, Shape: append([]int{}, shape...)}
	n, err := numElems(shape)
	if err != nil {
		return a
	}
	a.Data = makeData(dt, n)
	return a
}

// makeData allocates a zeroed slice of n elements of dt, or returns nil for
// an unknown dtype.
func makeData(dt DType, n int) any {
	switch dt {
	case F32:
		return make([]float32, n)
	case F64:
		return make([]float64, n)
	case I32:
		return make([]int32, n)
	case I64:
		return make([]int64, n)
	}
	return nil
}

// dataLen returns the length of the slice in Data and whether Data has the
// Go type that DType promises.
func (a *Array) dataLen() (int, bool) {
	switch d := a.Data.(type) {
	case []float32:
		return len(d), a.DType == F32
	case []float64:
		return len(d), a.DType == F64
	case []int32:
		return len(d), a.DType == I32
	case []int64:
		return len(d), a.DType == I64
	}
	return 0, false
}

// Validate checks the invariants every function of this package relies on:
// a known DType, a Data slice of the matching Go type, non-negative
// dimensions and len(Data) == product(Shape). Arrays built by hand (rather
// than with NewArray) should be validated before use; the writers in this
// package do so themselves.
func (a *Array) Validate() error {
	if a == nil {
		return fmt.Errorf("gridio: nil array")
	}
	if !a.DType.Valid() {
		return fmt.Errorf("gridio: unknown dtype %q (want one of %s)", a.DType, validDTypes)
	}
	n, err := numElems(a.Shape)
	if err != nil {
		return fmt.Errorf("gridio: %w", err)
	}
	l, ok := a.dataLen()
	if !ok {
		return fmt.Errorf("gridio: dtype %s but Data is %T", a.DType, a.Data)
	}
	if l != n {
		return fmt.Errorf("gridio: shape %s needs %d elements but Data has %d", shapeString(a.Shape), n, l)
	}
	return nil
}

// Len returns the number of elements in Data (0 when Data is not one of the
// supported slice types). For a valid array it equals the product of Shape.
// Bytes views the array's elements as bytes in memory order (no copy): what device buffers,
// halo messages and checkpoints move.
func (a *Array) Bytes() []byte {
	switch d := a.Data.(type) {
	case []float32:
		return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(d))), len(d)*4)
	case []float64:
		return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(d))), len(d)*8)
	case []int32:
		return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(d))), len(d)*4)
	case []int64:
		return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(d))), len(d)*8)
	}
	panic(fmt.Sprintf("internal error: array data %T", a.Data))
}

func (a *Array) Len() int {
	if a == nil {
		return 0
	}
	switch d := a.Data.(type) {
	case []float32:
		return len(d)
	case []float64:
		return len(d)
	case []int32:
		return len(d)
	case []int64:
		return len(d)
	}
	return 0
}

// Float64s returns a newly allocated copy of the elements converted to
// float64, the common currency for plotting and statistics. Integers beyond
// 2^53 lose precision. Unsupported Data yields nil.
func (a *Array) Float64s() []float64 {
	return a.float64Range(0, a.Len())
}

// float64Range converts elements [lo, hi) to float64, so that a slice of a
// large 3-D array can be plotted without converting all of it. The caller
// guarantees 0 <= lo <= hi <= a.Len().
func (a *Array) float64Range(lo, hi int) []float64 {
	if a == nil {
		return nil
	}
	switch d := a.Data.(type) {
	case []float32:
		return convertSlice(d[lo:hi])
	case []float64:
		return append([]float64(nil), d[lo:hi]...)
	case []int32:
		return convertSlice(d[lo:hi])
	case []int64:
		return convertSlice(d[lo:hi])
	}
	return nil
}

// convertSlice converts any real number slice to a new []float64.
func convertSlice[T float32 | int32 | int64](s []T) []float64 {
	out := make([]float64, len(s))
	for i, v := range s {
		out[i] = float64(v)
	}
	return out
}

// Convert returns a new array with the same shape and every element
// converted to dt; the receiver is never modified, and converting to the
// same dtype yields an independent copy.
//
// Conversions follow Go's rules where those are defined and saturate where
// they are not, so that the result never depends on the CPU:
//   - float to int truncates toward zero; NaN becomes 0, and values beyond
//     the integer range (including ±Inf) become its minimum or maximum;
//   - i64 to i32 saturates at the int32 limits;
//   - f64 to f32 rounds to nearest and overflows to ±Inf;
//   - int to float rounds to nearest (i64 beyond 2^53 loses precision).
func (a *Array) Convert(dt DType) (*Array, error) {
	if err := a.Validate(); err != nil {
		return nil, fmt.Errorf("convert: %w", err)
	}
	if !dt.Valid() {
		return nil, fmt.Errorf("gridio: convert: unknown target dtype %q (want one of %s)", dt, validDTypes)
	}
	out := &Array{DType: dt, Shape: append([]int{}, a.Shape...)}
	n := a.Len()
	switch dt {
	case F32:
		dst := make([]float32, n)
		switch src := a.Data.(type) {
		case []float32:
			copy(dst, src)
		case []float64:
			for i, v := range src {
				dst[i] = float32(v)
			}
		case []int32:
			for i, v := range src {
				dst[i] = float32(v)
			}
		case []int64:
			for i, v := range src {
				dst[i] = float32(v)
			}
		}
		out.Data = dst
	case F64:
		out.Data = a.Float64s()
	case I32:
		dst := make([]int32, n)
		switch src := a.Data.(type) {
		case []float32:
			for i, v := range src {
				dst[i] = int32(floatToInt(float64(v), math.MinInt32, math.MaxInt32))
			}
		case []float64:
			for i, v := range src {
				dst[i] = int32(floatToInt(v, math.MinInt32, math.MaxInt32))
			}
		case []int32:
			copy(dst, src)
		case []int64:
			for i, v := range src {
				dst[i] = int32(min(max(v, math.MinInt32), math.MaxInt32))
			}
		}
		out.Data = dst
	case I64:
		dst := make([]int64, n)
		switch src := a.Data.(type) {
		case []float32:
			for i, v := range src {
				dst[i] = floatToInt(float64(v), math.MinInt64, math.MaxInt64)
			}
		case []float64:
			for i, v := range src {
				dst[i] = floatToInt(v, math.MinInt64, math.MaxInt64)
			}
		case []int32:
			for i, v := range src {
				dst[i] = int64(v)
			}
		case []int64:
			copy(dst, src)
		}
		out.Data = dst
	}
	return out, nil
}

// floatToInt truncates v toward zero and saturates it to [lo, hi], mapping
// NaN to 0. Go leaves out-of-range float-to-int conversions
// implementation-defined, so the range is checked before converting.
func floatToInt(v float64, lo, hi int64) int64 {
	switch {
	case math.IsNaN(v):
		return 0
	case v <= float64(lo):
		return lo
	case v >= float64(hi):
		// float64(MaxInt64) rounds up to 2^63, so >= catches every value
		// that would not fit.
		return hi
	}
	return int64(v)
}

// CopyElems copies n elements of array data (a []float32, []float64, []int32 or []int64)
// from src[si:] to dst[di:], both of the same element type: the one type switch the engines'
// padded buffers, boxes and sub-domain rows share.
func CopyElems(dst any, di int, src any, si, n int) {
	switch d := dst.(type) {
	case []float32:
		copy(d[di:di+n], src.([]float32)[si:si+n])
	case []float64:
		copy(d[di:di+n], src.([]float64)[si:si+n])
	case []int32:
		copy(d[di:di+n], src.([]int32)[si:si+n])
	case []int64:
		copy(d[di:di+n], src.([]int64)[si:si+n])
	default:
		panic(fmt.Sprintf("internal error: array data %T", dst))
	}
}
