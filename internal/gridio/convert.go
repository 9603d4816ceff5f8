package gridio

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ConvertChecked converts like Convert but refuses a conversion that would change a value
// beyond rounding: into an integer type, a value out of its range, with a fraction, or NaN or
// Inf (Convert would saturate or truncate it); into f32, a finite f64 beyond f32's range (it
// would become Inf). Rounding (f64 to f32, large integers to floats) is allowed. The error
// names the first such element by its index along each axis and its value.
func (a *Array) ConvertChecked(dt DType) (*Array, error) {
	if err := a.Validate(); err != nil {
		return nil, fmt.Errorf("convert: %w", err)
	}
	if a.DType != dt {
		if i, v, ok := firstMisfit(a, dt); ok {
			return nil, fmt.Errorf("the %s value %s at %s does not fit in %s; converting it would change it (write the file as %s, or choose a wider --type)",
				a.DType, v, a.Coords(i), dt, dt)
		}
	}
	return a.Convert(dt)
}

// firstMisfit returns the index and text of the first element that dt cannot hold.
func firstMisfit(a *Array, dt DType) (int, string, bool) {
	var lo, hi float64 // integer range, as float64 bounds: lo <= v < hi
	switch dt {
	case I32:
		lo, hi = math.MinInt32, math.MaxInt32+1
	case I64:
		lo, hi = math.MinInt64, math.Ldexp(1, 63)
	}
	switch d := a.Data.(type) {
	case []float32:
		for i, v := range d {
			if dt.IsFloat() {
				continue // f32 widens to f64 exactly
			}
			f := float64(v)
			if f != math.Trunc(f) || f < lo || f >= hi || math.IsNaN(f) {
				return i, strconv.FormatFloat(f, 'g', -1, 32), true
			}
		}
	case []float64:
		for i, f := range d {
			switch {
			case dt == F32:
				if !math.IsInf(f, 0) && math.IsInf(float64(float32(f)), 0) {
					return i, strconv.FormatFloat(f, 'g', -1, 64), true
				}
			case dt == F64:
			case f != math.Trunc(f) || f < lo || f >= hi || math.IsNaN(f):
				return i, strconv.FormatFloat(f, 'g', -1, 64), true
			}
		}
	case []int32:
		if dt == F32 {
			for i, v := range d {
				if float64(float32(v)) != float64(v) {
					return i, strconv.FormatInt(int64(v), 10), true
				}
			}
		}
	case []int64:
		for i, v := range d {
			if !int64Fits(v, dt) {
				return i, strconv.FormatInt(v, 10), true
			}
		}
	}
	return 0, "", false
}

// int64Fits says whether dt holds v exactly: floats hold integers only up to their mantissa
// (2^24 in f32, 2^53 in f64) and their multiples of powers of two beyond it.
func int64Fits(v int64, dt DType) bool {
	var f float64
	switch dt {
	case I32:
		return v >= math.MinInt32 && v <= math.MaxInt32
	case F32:
		f = float64(float32(v))
	case F64:
		f = float64(v)
	default:
		return true
	}
	// f is a whole number; it equals v if it lies in int64's range and converts back to v.
	return f >= math.MinInt64 && f < math.Ldexp(1, 63) && int64(f) == v
}

// Coords writes the position of element i in C order, e.g. (3, 17), as messages name cells.
func (a *Array) Coords(i int) string {
	idx := make([]string, len(a.Shape))
	for k := len(a.Shape) - 1; k >= 0; k-- {
		if a.Shape[k] > 0 {
			idx[k] = strconv.Itoa(i % a.Shape[k])
			i /= a.Shape[k]
		}
	}
	return "(" + strings.Join(idx, ", ") + ")"
}

// NonFinite counts the NaN and Inf elements of a floating-point array and returns the index
// of the first (-1 when there is none); integer arrays have none.
func (a *Array) NonFinite() (count, first int) {
	first = -1
	note := func(i int) {
		if count == 0 {
			first = i
		}
		count++
	}
	switch d := a.Data.(type) {
	case []float32:
		for i, v := range d {
			if f := float64(v); math.IsNaN(f) || math.IsInf(f, 0) {
				note(i)
			}
		}
	case []float64:
		for i, f := range d {
			if math.IsNaN(f) || math.IsInf(f, 0) {
				note(i)
			}
		}
	}
	return count, first
}
