package gridio

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Text is a grid read from a text file: Rodinia's data files (HotSpot's temp_512 and power_512
// hold one value per line, row after row) or rows of whitespace- or comma-separated values
// (NumPy's savetxt, spreadsheets). Text carries no shape of its own beyond its rows, so the
// values are kept flat with the layout they had, and Fit or Shape give them the grid's shape.
type Text struct {
	Path string
	// Values holds the numbers in file order, already in the grid's element type: decimal text
	// has no element type of its own, so each number is read straight into the one it is for
	// (a float32 grid gets each value correctly rounded once, not through float64).
	Values *Array
	Column bool // one value per line
	Rows   int  // lines holding values
	Cols   int  // values per line
}

// ErrNoShape is what Text.Shape's error wraps when the file alone does not tell the grid's
// shape (errors.Is).
var ErrNoShape = errors.New("the shape is not known")

// noShape says why a text file gives no shape.
type noShape struct{ msg string }

func (e *noShape) Error() string        { return e.msg }
func (e *noShape) Is(target error) bool { return target == ErrNoShape }

// IsTextPath reports whether a file name, by its extension, is not one of the binary formats
// (.npy, .png): text files are .txt, .csv, .dat or, as Rodinia names them, have no extension.
func IsTextPath(path string) bool {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".npy", ".png":
		return false
	}
	return true
}

// ReadText reads a text grid for an array of element type dt. Values are separated by commas
// in a .csv file and by blanks otherwise; blank lines and lines starting with # are skipped.
// Every line must hold as many values as the first. Mistakes are reported as path:line:col.
func ReadText(path string, dt DType) (*Text, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("gridio: read text: %w", err)
	}
	defer f.Close()
	return DecodeText(f, path, strings.EqualFold(filepath.Ext(path), ".csv"), dt)
}

// DecodeText reads a text grid from r as ReadText does; name is used in error messages.
func DecodeText(r io.Reader, name string, csv bool, dt DType) (*Text, error) {
	if !dt.Valid() {
		return nil, fmt.Errorf("gridio: read text %s: unknown dtype %q (want one of %s)", name, dt, validDTypes)
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<30)
	t := &Text{Path: name}
	var f32 []float32
	var f64 []float64
	var i32 []int32
	var i64 []int64
	line := 0
	firstLine := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		trimmed := strings.TrimSpace(text)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		fields, cols := splitFields(text, csv)
		if t.Rows == 0 {
			t.Cols, firstLine = len(fields), line
		} else if len(fields) != t.Cols {
			return nil, fmt.Errorf("%s:%d: this line holds %d values but line %d holds %d; every line must hold as many",
				name, line, len(fields), firstLine, t.Cols)
		}
		t.Rows++
		for k, s := range fields {
			pos := func() string { return fmt.Sprintf("%s:%d:%d", name, line, cols[k]+1) }
			if s == "" {
				return nil, fmt.Errorf("%s: empty value between commas", pos())
			}
			switch dt {
			case F32, F64:
				bits := 64
				if dt == F32 {
					bits = 32
				}
				v, err := strconv.ParseFloat(s, bits)
				if errors.Is(err, strconv.ErrRange) {
					return nil, fmt.Errorf("%s: %s is beyond the range of %s (the grid's type)", pos(), s, dt)
				}
				if err != nil {
					return nil, fmt.Errorf("%s: %q is not a number", pos(), s)
				}
				if dt == F32 {
					f32 = append(f32, float32(v))
				} else {
					f64 = append(f64, v)
				}
			case I32, I64:
				bits := 64
				if dt == I32 {
					bits = 32
				}
				v, err := parseWhole(s, bits)
				if err != nil {
					return nil, fmt.Errorf("%s: %v (the grid is %s)", pos(), err, dt)
				}
				if dt == I32 {
					i32 = append(i32, int32(v))
				} else {
					i64 = append(i64, v)
				}
			}
			if len(f32)+len(f64)+len(i32)+len(i64) > maxElems {
				return nil, fmt.Errorf("%s: too many values", pos())
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("gridio: read text %s: %w", name, err)
	}
	if t.Rows == 0 {
		return nil, fmt.Errorf("%s: the file holds no values", name)
	}
	t.Column = t.Cols == 1
	t.Values = &Array{DType: dt}
	switch dt {
	case F32:
		t.Values.Data = f32
	case F64:
		t.Values.Data = f64
	case I32:
		t.Values.Data = i32
	case I64:
		t.Values.Data = i64
	}
	t.Values.Shape = []int{t.Values.Len()}
	return t, nil
}

// splitFields splits one line into its values and the byte column where each starts.
func splitFields(line string, csv bool) ([]string, []int) {
	var fields []string
	var cols []int
	if csv {
		start := 0
		for {
			end := strings.IndexByte(line[start:], ',')
			field := line[start:]
			if end >= 0 {
				field = line[start : start+end]
			}
			lead := len(field) - len(strings.TrimLeft(field, " \t"))
			fields = append(fields, strings.TrimSpace(field))
			cols = append(cols, start+lead)
			if end < 0 {
				return fields, cols
			}
			start += end + 1
		}
	}
	i := 0
	for i < len(line) {
		for i < len(line) && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r') {
			i++
		}
		j := i
		for j < len(line) && line[j] != ' ' && line[j] != '\t' && line[j] != '\r' {
			j++
		}
		if j > i {
			fields = append(fields, line[i:j])
			cols = append(cols, i)
		}
		i = j
	}
	return fields, cols
}

// parseWhole reads an integer for an integer grid: a whole number, or a number written with a
// fraction or exponent whose value is whole (3.0, 1e3). Fractions and values out of range are
// refused rather than truncated or saturated.
func parseWhole(s string, bits int) (int64, error) {
	v, err := strconv.ParseInt(s, 10, bits)
	if err == nil {
		return v, nil
	}
	if errors.Is(err, strconv.ErrRange) {
		return 0, fmt.Errorf("%s does not fit in %d bits", s, bits)
	}
	f, ferr := strconv.ParseFloat(s, 64)
	if ferr != nil {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if f != math.Trunc(f) || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, fmt.Errorf("%s is not a whole number", s)
	}
	lim := math.Ldexp(1, bits-1)
	if f < -lim || f >= lim {
		return 0, fmt.Errorf("%s does not fit in %d bits", s, bits)
	}
	return int64(f), nil
}

// Count is the number of values the file holds.
func (t *Text) Count() int { return t.Values.Len() }

// Shape infers a grid shape of dims axes from the file alone: its rows and columns for a 2D
// grid written as rows, the count for 1D, and for values one per line (Rodinia's layout) the
// square or cube of that count. Otherwise its error is ErrNoShape (errors.Is).
func (t *Text) Shape(dims int) ([]int, error) {
	n := t.Count()
	if !t.Column {
		switch {
		case dims == 2:
			return []int{t.Rows, t.Cols}, nil
		case dims == 1 && t.Rows == 1:
			return []int{t.Cols}, nil
		}
		return nil, &noShape{fmt.Sprintf("%s holds %d rows of %d values, which do not give a %dD shape", t.Path, t.Rows, t.Cols, dims)}
	}
	if dims == 1 {
		return []int{n}, nil
	}
	side := int(math.Round(math.Pow(float64(n), 1/float64(dims))))
	for _, s := range []int{side - 1, side, side + 1} {
		p := 1
		for range dims {
			p *= s
		}
		if s > 0 && p == n {
			shape := make([]int, dims)
			for i := range shape {
				shape[i] = s
			}
			return shape, nil
		}
	}
	what := map[int]string{2: "square", 3: "cube"}[dims]
	return nil, &noShape{fmt.Sprintf("%s holds %d values, one per line, and %d is not a %s", t.Path, n, n, what)}
}

// Fit returns the values as an array of the given shape. The count must equal the shape's
// cells, and a file written as rows must have rows as long as the shape's last axis (a 3D grid
// is rows of x, slice after slice).
func (t *Text) Fit(shape []int) (*Array, error) {
	want, err := numElems(shape)
	if err != nil {
		return nil, fmt.Errorf("gridio: %w", err)
	}
	if t.Count() != want {
		return nil, fmt.Errorf("%s holds %d values but a grid of %s needs %d", t.Path, t.Count(), shapeText(shape), want)
	}
	if !t.Column && len(shape) > 0 && t.Rows > 1 && t.Cols != shape[len(shape)-1] {
		return nil, fmt.Errorf("%s holds rows of %d values but a grid of %s has rows of %d", t.Path, t.Cols, shapeText(shape), shape[len(shape)-1])
	}
	return &Array{DType: t.Values.DType, Shape: append([]int{}, shape...), Data: t.Values.Data}, nil
}

// shapeText writes a shape as the command line does: 64x64.
func shapeText(shape []int) string {
	parts := make([]string, len(shape))
	for i, d := range shape {
		parts[i] = strconv.Itoa(d)
	}
	return strings.Join(parts, "x")
}

// formatValue writes element i of a in the shortest decimal that reads back to the same value
// in its own type (strconv's 'g' with precision -1), so that text round-trips exactly.
func formatValue(buf []byte, a *Array, i int) []byte {
	switch d := a.Data.(type) {
	case []float32:
		return strconv.AppendFloat(buf, float64(d[i]), 'g', -1, 32)
	case []float64:
		return strconv.AppendFloat(buf, d[i], 'g', -1, 64)
	case []int32:
		return strconv.AppendInt(buf, int64(d[i]), 10)
	case []int64:
		return strconv.AppendInt(buf, d[i], 10)
	}
	panic("internal error: formatValue of an invalid array")
}

// WriteText writes a with one value per line in C order, the layout Rodinia's programs read
// (HotSpot's temp and power files), with every value written exactly (see formatValue).
func WriteText(path string, a *Array) error {
	return writeTextFile(path, a, func(w io.Writer) error {
		var buf []byte
		for i := 0; i < a.Len(); i++ {
			buf = append(formatValue(buf[:0], a, i), '\n')
			if _, err := w.Write(buf); err != nil {
				return err
			}
		}
		return nil
	})
}

// WriteCSV writes a as comma-separated rows along its last axis: a 2D grid row by row, a 3D
// grid slice after slice (z*y rows of x values), a 1D grid as one row. ReadText reads it back.
func WriteCSV(path string, a *Array) error {
	return writeTextFile(path, a, func(w io.Writer) error {
		row := 1
		if len(a.Shape) > 0 {
			row = a.Shape[len(a.Shape)-1]
		}
		var buf []byte
		for i := 0; i < a.Len(); i++ {
			buf = formatValue(buf[:0], a, i)
			if (i+1)%row == 0 {
				buf = append(buf, '\n')
			} else {
				buf = append(buf, ',')
			}
			if _, err := w.Write(buf); err != nil {
				return err
			}
		}
		return nil
	})
}

// writeTextFile writes a text grid atomically (WriteAtomic), as every output of Tempest.
func writeTextFile(path string, a *Array, body func(io.Writer) error) error {
	if err := a.Validate(); err != nil {
		return fmt.Errorf("gridio: write %s: %w", path, err)
	}
	return WriteAtomic(path, func(w io.Writer) error {
		if err := body(w); err != nil {
			return fmt.Errorf("gridio: write %s: %w", path, err)
		}
		return nil
	})
}
