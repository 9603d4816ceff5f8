package gridio

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestTextRoundTrip writes every element type as one value per line and as CSV rows and reads
// the file back: the values must come back bit for bit (NaN, Inf, -0 and the integer limits
// included), which needs the shortest exact decimal of each value in its own type.
func TestTextRoundTrip(t *testing.T) {
	dir := t.TempDir()
	for _, dt := range []DType{F32, F64, I32, I64} {
		for _, shape := range [][]int{{7}, {3, 4}, {2, 3, 5}} {
			for _, ext := range []string{".txt", ".csv"} {
				name := string(dt) + shapeString(shape) + ext
				t.Run(name, func(t *testing.T) {
					a := sampleArray(t, dt, shape)
					path := filepath.Join(dir, name)
					write := WriteText
					if ext == ".csv" {
						write = WriteCSV
					}
					if err := write(path, a); err != nil {
						t.Fatal(err)
					}
					txt, err := ReadText(path, dt)
					if err != nil {
						t.Fatal(err)
					}
					if ext == ".txt" && !txt.Column {
						t.Fatalf("a .txt file should hold one value per line, read %d rows of %d", txt.Rows, txt.Cols)
					}
					if ext == ".csv" && txt.Cols != shape[len(shape)-1] {
						t.Fatalf("CSV rows of %d values, want %d", txt.Cols, shape[len(shape)-1])
					}
					b, err := txt.Fit(shape)
					if err != nil {
						t.Fatal(err)
					}
					if !sameArray(a, b) {
						t.Fatalf("round trip changed the values:\n%v\n%v", a.Data, b.Data)
					}
				})
			}
		}
	}
}

// TestTextExactValues reads decimal text straight into each element type: a float32 grid gets
// the correctly rounded float32 of the decimal, not the float32 of its float64 (the two differ
// for the first value, just above the midpoint of 1 and the next float32), and an integer
// grid gets whole numbers, also when written as 3.0 or 1e3.
func TestTextExactValues(t *testing.T) {
	cases := []struct {
		dt   DType
		text string
		want any
	}{
		{F32, "1.000000059604644830901776231257827021182\n0.1\n-2.5e-3\n", []float32{math.Nextafter32(1, 2), 0.1, -2.5e-3}},
		{F64, "0.1 1e308\n-0 NaN\n", []float64{0.1, 1e308, math.Copysign(0, -1), math.NaN()}},
		{I32, "3\n3.0\n-1e3\n2147483647\n", []int32{3, 3, -1000, math.MaxInt32}},
		{I64, "9223372036854775807\n-9223372036854775808\n", []int64{math.MaxInt64, math.MinInt64}},
		{F32, "# a comment\n\n1.5\r\n  2.5  \n", []float32{1.5, 2.5}},
	}
	for _, c := range cases {
		txt, err := DecodeText(strings.NewReader(c.text), "v.txt", false, c.dt)
		if err != nil {
			t.Fatalf("%q: %v", c.text, err)
		}
		got := txt.Values.Data
		if f, ok := got.([]float64); ok && len(f) == 4 && math.IsNaN(f[3]) {
			if !math.Signbit(f[2]) {
				t.Fatalf("-0 lost its sign")
			}
			f[3] = 0 // NaN != NaN: its place is checked by IsNaN, the rest by DeepEqual
			c.want = []float64{0.1, 1e308, 0, 0}
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Fatalf("%q as %s: got %v, want %v", c.text, c.dt, got, c.want)
		}
	}
}

// TestTextErrors checks that malformed files are refused with the file, line and column.
func TestTextErrors(t *testing.T) {
	cases := []struct {
		name, text string
		csv        bool
		dt         DType
		want       string
	}{
		{"malformed", "1.0\n2.0\n3.O\n", false, F32, `g.txt:3:1: "3.O" is not a number`},
		{"malformed_row", "1 2 3\n4 x 6\n", false, F64, `g.txt:2:3: "x" is not a number`},
		{"ragged", "1 2 3\n4 5\n", false, F64, "g.txt:2: this line holds 2 values but line 1 holds 3"},
		{"empty", "# nothing\n\n", false, F64, "g.txt: the file holds no values"},
		{"csv_hole", "1,2,3\n4,,6\n", true, F64, "g.txt:2:3: empty value between commas"},
		{"fraction_into_int", "1\n2.5\n", false, I32, "g.txt:2:1: 2.5 is not a whole number (the grid is i32)"},
		{"int_overflow", "1\n4294967296\n", false, I32, "g.txt:2:1: 4294967296 does not fit in 32 bits (the grid is i32)"},
		{"float_overflow", "1\n1e39\n", false, F32, "g.txt:2:1: 1e39 is beyond the range of f32"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeText(strings.NewReader(c.text), "g.txt", c.csv, c.dt)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}

// TestTextShape checks the shape a text file gives a grid without --size, and that a size
// that does not match is refused with the file, the count and the expected count.
func TestTextShape(t *testing.T) {
	column := func(n int) string { return strings.Repeat("1\n", n) }
	cases := []struct {
		name, text string
		dims       int
		want       []int // nil: ErrNoShape
	}{
		{"square", column(4096), 2, []int{64, 64}},
		{"not_square", column(4095), 2, nil},
		{"cube", column(27), 3, []int{3, 3, 3}},
		{"line", column(10), 1, []int{10}},
		{"rows", "1 2 3\n4 5 6\n", 2, []int{2, 3}},
		{"one_row", "1 2 3 4\n", 1, []int{4}},
		{"rows_3d", "1 2\n3 4\n", 3, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			txt, err := DecodeText(strings.NewReader(c.text), "s.txt", false, F32)
			if err != nil {
				t.Fatal(err)
			}
			got, err := txt.Shape(c.dims)
			if c.want == nil {
				if !errors.Is(err, ErrNoShape) {
					t.Fatalf("got %v, %v; want ErrNoShape", got, err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %v, %v; want %v", got, err, c.want)
			}
		})
	}
	txt, _ := DecodeText(strings.NewReader(column(4096)), "temp_64", false, F32)
	if _, err := txt.Fit([]int{64, 32}); err == nil || err.Error() != "temp_64 holds 4096 values but a grid of 64x32 needs 2048" {
		t.Fatalf("count mismatch: %v", err)
	}
	rows, _ := DecodeText(strings.NewReader("1 2 3\n4 5 6\n"), "r.txt", false, F32)
	if _, err := rows.Fit([]int{3, 2}); err == nil || !strings.Contains(err.Error(), "rows of 3 values but a grid of 3x2 has rows of 2") {
		t.Fatalf("row mismatch: %v", err)
	}
}

// TestRodiniaFiles reads the HotSpot data files of examples/sl/data, written in Rodinia's
// layout (one value per line, no extension), as 64x64 grids.
func TestRodiniaFiles(t *testing.T) {
	for _, name := range []string{"temp_64", "power_64"} {
		path := filepath.Join("../../examples/sl/data", name)
		txt, err := ReadText(path, F32)
		if err != nil {
			t.Fatal(err)
		}
		shape, err := txt.Shape(2)
		if err != nil || !reflect.DeepEqual(shape, []int{64, 64}) {
			t.Fatalf("%s: shape %v, %v; want 64x64", name, shape, err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(b), "\n"); n != 4096 {
			t.Fatalf("%s has %d lines, want 4096", name, n)
		}
	}
}

// TestConvertChecked: conversions that would change a value beyond rounding are refused, with
// the cell and the value; rounding ones pass.
func TestConvertChecked(t *testing.T) {
	mk := func(dt DType, shape []int, data any) *Array { return &Array{DType: dt, Shape: shape, Data: data} }
	cases := []struct {
		name string
		a    *Array
		to   DType
		want string // "" for success
	}{
		{"f64_to_f32_rounds", mk(F64, []int{2}, []float64{0.1, 1e-50}), F32, ""},
		{"f64_to_f32_overflow", mk(F64, []int{2, 2}, []float64{1, 2, 3, 1e39}), F32, "the f64 value 1e+39 at (1, 1) does not fit in f32"},
		{"i64_to_i32_overflow", mk(I64, []int{3}, []int64{1, 1 << 40, 2}), I32, "the i64 value 1099511627776 at (1) does not fit in i32"},
		{"i64_to_i32_fits", mk(I64, []int{2}, []int64{-5, math.MaxInt32}), I32, ""},
		{"f64_fraction_to_i32", mk(F64, []int{1, 2}, []float64{2, 2.5}), I32, "the f64 value 2.5 at (0, 1) does not fit in i32"},
		{"f32_nan_to_i64", mk(F32, []int{1}, []float32{float32(math.NaN())}), I64, "the f32 value NaN at (0) does not fit in i64"},
		{"f64_whole_to_i64", mk(F64, []int{2}, []float64{-3, 1e15}), I64, ""},
		{"f64_2p63_to_i64", mk(F64, []int{1}, []float64{math.Ldexp(1, 63)}), I64, "does not fit in i64"},
		{"i32_to_f64", mk(I32, []int{1}, []int32{7}), F64, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := c.a.ConvertChecked(c.to)
			if c.want == "" {
				if err != nil || b.DType != c.to {
					t.Fatalf("got %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}

// TestNonFinite counts NaN and Inf and finds the first.
func TestNonFinite(t *testing.T) {
	a := &Array{DType: F32, Shape: []int{2, 3}, Data: []float32{1, 2, 3, float32(math.Inf(1)), 5, float32(math.NaN())}}
	if n, first := a.NonFinite(); n != 2 || a.Coords(first) != "(1, 0)" {
		t.Fatalf("got %d, first %s", n, a.Coords(first))
	}
	if n, first := NewArray(I32, []int{4}).NonFinite(); n != 0 || first != -1 {
		t.Fatalf("integers: got %d, %d", n, first)
	}
}
