package gridio

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestNewArray(t *testing.T) {
	tests := []struct {
		dt      DType
		shape   []int
		wantLen int
		wantErr string // substring of Validate's error; "" for valid
	}{
		{F32, []int{3, 4}, 12, ""},
		{F64, []int{2, 3, 4}, 24, ""},
		{I32, []int{5}, 5, ""},
		{I64, []int{}, 1, ""},
		{F32, []int{0, 7}, 0, ""},
		{"f16", []int{3}, 0, "unknown dtype"},
		{F64, []int{3, -1}, 0, "negative"},
		{F64, []int{math.MaxInt / 2, 4}, 0, "too many elements"},
	}
	for _, tc := range tests {
		a := NewArray(tc.dt, tc.shape)
		if a.Len() != tc.wantLen {
			t.Errorf("NewArray(%q, %v).Len() = %d, want %d", tc.dt, tc.shape, a.Len(), tc.wantLen)
		}
		err := a.Validate()
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("NewArray(%q, %v): %v", tc.dt, tc.shape, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("NewArray(%q, %v).Validate() = %v, want error containing %q", tc.dt, tc.shape, err, tc.wantErr)
		}
	}
	// The shape must be copied.
	shape := []int{2, 2}
	a := NewArray(F32, shape)
	shape[0] = 9
	if a.Shape[0] != 2 {
		t.Error("NewArray aliases the caller's shape")
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		a    *Array
		want string
	}{
		{"nil", nil, "nil array"},
		{"type mismatch", &Array{DType: F32, Shape: []int{2}, Data: []float64{1, 2}}, "Data is []float64"},
		{"length mismatch", &Array{DType: I32, Shape: []int{3}, Data: []int32{1, 2}}, "needs 3 elements but Data has 2"},
		{"nil data", &Array{DType: I64, Shape: []int{1}, Data: nil}, "Data is <nil>"},
	}
	for _, tc := range tests {
		err := tc.a.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate() = %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestFloat64s(t *testing.T) {
	tests := []*Array{
		{DType: F32, Shape: []int{3}, Data: []float32{1.5, -2, 3}},
		{DType: F64, Shape: []int{3}, Data: []float64{1.5, -2, 3}},
		{DType: I32, Shape: []int{3}, Data: []int32{1, -2, 3}},
		{DType: I64, Shape: []int{3}, Data: []int64{1, -2, 3}},
	}
	want := map[DType][]float64{F32: {1.5, -2, 3}, F64: {1.5, -2, 3}, I32: {1, -2, 3}, I64: {1, -2, 3}}
	for _, a := range tests {
		got := a.Float64s()
		if !reflect.DeepEqual(got, want[a.DType]) {
			t.Errorf("%s: Float64s() = %v, want %v", a.DType, got, want[a.DType])
		}
		got[0] = 99
		if a.Float64s()[0] == 99 {
			t.Errorf("%s: Float64s aliases Data", a.DType)
		}
	}
	if (*Array)(nil).Float64s() != nil {
		t.Error("nil array gave non-nil Float64s")
	}
}

func TestConvert(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	tests := []struct {
		name string
		in   *Array
		to   DType
		want any
	}{
		{"f64 to i32 truncates and saturates", &Array{DType: F64, Shape: []int{7}, Data: []float64{1.9, -1.9, nan, inf, -inf, 3e9, -3e9}}, I32,
			[]int32{1, -1, 0, math.MaxInt32, math.MinInt32, math.MaxInt32, math.MinInt32}},
		{"f32 to i64", &Array{DType: F32, Shape: []int{3}, Data: []float32{2.5, float32(math.Inf(-1)), 1e30}}, I64,
			[]int64{2, math.MinInt64, math.MaxInt64}},
		{"i64 to i32 saturates", &Array{DType: I64, Shape: []int{3}, Data: []int64{5, 1 << 40, -1 << 40}}, I32, []int32{5, math.MaxInt32, math.MinInt32}},
		{"i32 to f32", &Array{DType: I32, Shape: []int{2}, Data: []int32{16777217, -3}}, F32, []float32{16777216, -3}},
		{"f64 to f32 overflows to inf", &Array{DType: F64, Shape: []int{2}, Data: []float64{1e300, 0.5}}, F32, []float32{float32(math.Inf(1)), 0.5}},
		{"i32 to i64", &Array{DType: I32, Shape: []int{2}, Data: []int32{math.MinInt32, 4}}, I64, []int64{math.MinInt32, 4}},
		{"same type copies", &Array{DType: F64, Shape: []int{2}, Data: []float64{1, 2}}, F64, []float64{1, 2}},
	}
	for _, tc := range tests {
		got, err := tc.in.Convert(tc.to)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got.DType != tc.to || !reflect.DeepEqual(got.Shape, tc.in.Shape) || !reflect.DeepEqual(got.Data, tc.want) {
			t.Errorf("%s: got %+v, want data %v", tc.name, got, tc.want)
		}
		if err := got.Validate(); err != nil {
			t.Errorf("%s: result invalid: %v", tc.name, err)
		}
	}
	a := &Array{DType: F64, Shape: []int{1}, Data: []float64{1}}
	b, _ := a.Convert(F64)
	b.Data.([]float64)[0] = 7
	b.Shape[0] = 9
	if a.Data.([]float64)[0] != 1 || a.Shape[0] != 1 {
		t.Error("Convert to the same dtype aliases the input")
	}
	if _, err := a.Convert("u8"); err == nil || !strings.Contains(err.Error(), "unknown target dtype") {
		t.Errorf("Convert(u8) = %v", err)
	}
	if _, err := (&Array{DType: F64, Shape: []int{2}, Data: []float64{1}}).Convert(F32); err == nil {
		t.Error("Convert accepted an invalid array")
	}
}

// TestConvertCheckedRefusesInexactIntegers: integers a float type cannot hold exactly are
// refused, the nearest ones it can hold pass.
func TestConvertCheckedRefusesInexactIntegers(t *testing.T) {
	tests := []struct {
		a   *Array
		to  DType
		bad bool
	}{
		{&Array{DType: I32, Shape: []int{2}, Data: []int32{16777216, -16777216}}, F32, false},
		{&Array{DType: I32, Shape: []int{1}, Data: []int32{16777217}}, F32, true},
		{&Array{DType: I64, Shape: []int{2}, Data: []int64{1 << 40, -(1 << 40)}}, F32, false},
		{&Array{DType: I64, Shape: []int{1}, Data: []int64{1<<40 + 1}}, F32, true},
		{&Array{DType: I64, Shape: []int{1}, Data: []int64{1<<53 + 1}}, F64, true},
		{&Array{DType: I64, Shape: []int{2}, Data: []int64{1 << 53, math.MinInt64}}, F64, false},
		{&Array{DType: I64, Shape: []int{1}, Data: []int64{math.MaxInt64}}, F64, true},
	}
	for _, tc := range tests {
		_, err := tc.a.ConvertChecked(tc.to)
		if (err != nil) != tc.bad {
			t.Errorf("%v to %s: error %v, want refused %v", tc.a.Data, tc.to, err, tc.bad)
		}
	}
}
