package gridio

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sbinet/npyio"
	"gonum.org/v1/gonum/mat"
)

// sampleArray fills an array with distinct values (including negative and,
// for floats, special ones) so that round trips catch misplaced elements.
func sampleArray(t *testing.T, dt DType, shape []int) *Array {
	t.Helper()
	a := NewArray(dt, shape)
	if err := a.Validate(); err != nil {
		t.Fatalf("NewArray(%s, %v): %v", dt, shape, err)
	}
	switch d := a.Data.(type) {
	case []float32:
		for i := range d {
			d[i] = float32(i)*1.25 - 3
		}
		if len(d) > 3 {
			d[0], d[1], d[2] = float32(math.Inf(-1)), float32(math.NaN()), math.MaxFloat32
		}
	case []float64:
		for i := range d {
			d[i] = float64(i)*0.1 - 2
		}
		if len(d) > 3 {
			d[0], d[1], d[2] = math.Inf(1), math.NaN(), math.Copysign(0, -1)
		}
	case []int32:
		for i := range d {
			d[i] = int32(i*7 - 20)
		}
		if len(d) > 1 {
			d[0], d[1] = math.MinInt32, math.MaxInt32
		}
	case []int64:
		for i := range d {
			d[i] = int64(i)*1e10 - 5
		}
		if len(d) > 1 {
			d[0], d[1] = math.MinInt64, math.MaxInt64
		}
	}
	return a
}

// sameArray compares arrays bit for bit, so NaN equals NaN and -0 differs
// from +0.
func sameArray(a, b *Array) bool {
	if a.DType != b.DType || !reflect.DeepEqual(a.Shape, b.Shape) || a.Len() != b.Len() {
		return false
	}
	var ba, bb bytes.Buffer
	if EncodeNPY(&ba, a) != nil || EncodeNPY(&bb, b) != nil {
		return false
	}
	return bytes.Equal(ba.Bytes(), bb.Bytes())
}

func TestNPYRoundTrip(t *testing.T) {
	dir := t.TempDir()
	shapes := [][]int{{7}, {3, 4}, {2, 3, 5}, {}, {0, 3}, {1, 1, 1, 2}}
	for _, dt := range []DType{F32, F64, I32, I64} {
		for _, shape := range shapes {
			name := string(dt) + shapeString(shape)
			t.Run(name, func(t *testing.T) {
				a := sampleArray(t, dt, shape)
				path := filepath.Join(dir, name+".npy")
				if err := WriteNPY(path, a); err != nil {
					t.Fatal(err)
				}
				got, err := ReadNPY(path)
				if err != nil {
					t.Fatal(err)
				}
				if !sameArray(a, got) {
					t.Fatalf("round trip changed the array:\n got %+v\nwant %+v", got, a)
				}
				raw, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				hlen := int(binary.LittleEndian.Uint16(raw[8:10]))
				if (10+hlen)%64 != 0 {
					t.Errorf("data starts at %d, not a multiple of 64", 10+hlen)
				}
				if want := 10 + hlen + a.Len()*dt.Size(); len(raw) != want {
					t.Errorf("file is %d bytes, want %d", len(raw), want)
				}
			})
		}
	}
}

func TestNPYHeaderMatchesNumPy(t *testing.T) {
	tests := []struct {
		dt    DType
		shape []int
		dict  string
	}{
		{F32, []int{3, 4}, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }"},
		{F64, []int{5}, "{'descr': '<f8', 'fortran_order': False, 'shape': (5,), }"},
		{I32, []int{2, 3, 4}, "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3, 4), }"},
		{I64, []int{}, "{'descr': '<i8', 'fortran_order': False, 'shape': (), }"},
	}
	for _, tc := range tests {
		t.Run(tc.dict, func(t *testing.T) {
			var buf bytes.Buffer
			if err := EncodeNPY(&buf, NewArray(tc.dt, tc.shape)); err != nil {
				t.Fatal(err)
			}
			raw := buf.Bytes()
			if !bytes.HasPrefix(raw, []byte("\x93NUMPY\x01\x00")) {
				t.Fatalf("bad preamble %q", raw[:8])
			}
			hlen := int(binary.LittleEndian.Uint16(raw[8:10]))
			hdr := string(raw[10 : 10+hlen])
			if !strings.HasPrefix(hdr, tc.dict) {
				t.Errorf("header %q does not start with %q", hdr, tc.dict)
			}
			if strings.TrimLeft(hdr[len(tc.dict):], " ") != "\n" {
				t.Errorf("header padding %q is not spaces and a newline", hdr[len(tc.dict):])
			}
			if (10+hlen)%64 != 0 {
				t.Errorf("data offset %d not 64-aligned", 10+hlen)
			}
		})
	}
	// Exact bytes np.save (NumPy 1.24) writes for np.zeros((3, 4), np.float32).
	want := "\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }" +
		strings.Repeat(" ", 58) + "\n" + strings.Repeat("\x00", 48)
	var buf bytes.Buffer
	if err := EncodeNPY(&buf, NewArray(F32, []int{3, 4})); err != nil {
		t.Fatal(err)
	}
	if buf.String() != want {
		t.Errorf("EncodeNPY bytes differ from np.save:\n got %q\nwant %q", buf.String(), want)
	}
}

// npyFile builds a .npy file with an arbitrary header dictionary (padded
// like NumPy's) followed by data.
func npyFile(dict string, data []byte) []byte {
	hlen := len(dict) + 1
	pad := 64 - (10+hlen)%64
	var b bytes.Buffer
	b.WriteString("\x93NUMPY\x01\x00")
	b.Write(binary.LittleEndian.AppendUint16(nil, uint16(hlen+pad)))
	b.WriteString(dict + strings.Repeat(" ", pad) + "\n")
	b.Write(data)
	return b.Bytes()
}

func TestReadNPYRejects(t *testing.T) {
	good := npyFile("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", make([]byte, 48))
	tests := []struct {
		name string
		file []byte
		want []string // substrings the error must contain
	}{
		{"fortran", npyFile("{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }", make([]byte, 48)),
			[]string{"Fortran order", "'<f8'", "(2, 3)", "np.ascontiguousarray(a)"}},
		{"truncated data", good[:len(good)-5], []string{"truncated", "48 data bytes", "only 43"}},
		{"truncated header", good[:40], []string{"truncated"}},
		{"truncated preamble", good[:5], []string{"not a .npy file", "only 5 bytes"}},
		{"trailing bytes", append(append([]byte{}, good...), 1, 2, 3), []string{"3 unexpected bytes"}},
		{"bad magic", append([]byte("PK\x03\x04"), good[4:]...), []string{"not a .npy file", "magic"}},
		{"version", append(append([]byte{}, good[:6]...), append([]byte{9, 0}, good[8:]...)...), []string{"version 9.0"}},
		{"big endian", npyFile("{'descr': '>f4', 'fortran_order': False, 'shape': (3,), }", make([]byte, 12)),
			[]string{"'>f4'", "big-endian", "astype('<f4')"}},
		{"complex", npyFile("{'descr': '<c16', 'fortran_order': False, 'shape': (3,), }", make([]byte, 48)),
			[]string{"'<c16'", "complex", "np.ascontiguousarray(a.real).astype(np.float64)"}},
		{"object", npyFile("{'descr': '|O', 'fortran_order': False, 'shape': (3,), }", make([]byte, 24)),
			[]string{"'|O'", "objects"}},
		{"float16", npyFile("{'descr': '<f2', 'fortran_order': False, 'shape': (3,), }", make([]byte, 6)),
			[]string{"'<f2'", "float16", "astype(np.float32)"}},
		{"structured", npyFile("{'descr': [('x', '<f4'), ('y', '<f4')], 'fortran_order': False, 'shape': (3,), }", make([]byte, 24)),
			[]string{"structured dtype"}},
		{"no newline", []byte("\x93NUMPY\x01\x00\x05\x00{'de'"), []string{"header dictionary"}},
		{"garbage dict", npyFile("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (3,), }", make([]byte, 12)),
			[]string{"header dictionary", "Maybe"}},
		{"missing shape", npyFile("{'descr': '<f4', 'fortran_order': False, }", nil), []string{"'shape'"}},
		{"negative dim", npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (-3,), }", nil), []string{"not a valid dimension"}},
		{"huge shape", npyFile("{'descr': '<f8', 'fortran_order': False, 'shape': (100000000000, 100000000000), }", nil),
			[]string{"too many elements"}},
		{"lying shape", npyFile("{'descr': '<f8', 'fortran_order': False, 'shape': (100000000000,), }", make([]byte, 8)),
			[]string{"truncated"}},
		{"u8 overflow", npyFile("{'descr': '<u8', 'fortran_order': False, 'shape': (1,), }", bytes.Repeat([]byte{0xff}, 8)),
			[]string{"does not fit in i64"}},
	}
	dir := t.TempDir()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".npy")
			if err := os.WriteFile(path, tc.file, 0o644); err != nil {
				t.Fatal(err)
			}
			a, err := ReadNPY(path)
			if err == nil {
				t.Fatalf("ReadNPY accepted the file: %+v", a)
			}
			msg := err.Error()
			for _, w := range append(tc.want, path) {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not mention %q", msg, w)
				}
			}
			// The stream decoder must reject it too (except trailing bytes,
			// which a stream cannot see), and never panic.
			if _, err := DecodeNPY(bytes.NewReader(tc.file)); err == nil && tc.name != "trailing bytes" {
				t.Errorf("DecodeNPY accepted the file")
			}
		})
	}
}

func TestReadNPYWidens(t *testing.T) {
	le := binary.LittleEndian
	tests := []struct {
		descr string
		data  []byte
		want  *Array
	}{
		{"|i1", []byte{0x80, 0x7f, 0xff}, &Array{DType: I32, Shape: []int{3}, Data: []int32{-128, 127, -1}, Widened: "i1"}},
		{"|u1", []byte{0, 200, 255}, &Array{DType: I32, Shape: []int{3}, Data: []int32{0, 200, 255}, Widened: "u1"}},
		{"<i2", le.AppendUint16(le.AppendUint16(le.AppendUint16(nil, 0x8000), 7), 0xffff), &Array{DType: I32, Shape: []int{3}, Data: []int32{-32768, 7, -1}, Widened: "i2"}},
		{"<u2", le.AppendUint16(le.AppendUint16(le.AppendUint16(nil, 0xffff), 7), 0), &Array{DType: I32, Shape: []int{3}, Data: []int32{65535, 7, 0}, Widened: "u2"}},
		{"<u4", le.AppendUint32(le.AppendUint32(le.AppendUint32(nil, 0xffffffff), 7), 0), &Array{DType: I64, Shape: []int{3}, Data: []int64{4294967295, 7, 0}, Widened: "u4"}},
		{"<u8", le.AppendUint64(le.AppendUint64(le.AppendUint64(nil, math.MaxInt64), 7), 0), &Array{DType: I64, Shape: []int{3}, Data: []int64{math.MaxInt64, 7, 0}, Widened: "u8"}},
		{"|b1", []byte{1, 0, 1}, &Array{DType: I32, Shape: []int{3}, Data: []int32{1, 0, 1}, Widened: "bool"}},
	}
	for _, tc := range tests {
		t.Run(tc.descr, func(t *testing.T) {
			file := npyFile("{'descr': '"+tc.descr+"', 'fortran_order': False, 'shape': (3,), }", tc.data)
			got, err := DecodeNPY(bytes.NewReader(file))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestReadNPYFortranVector checks that a Fortran-flagged array whose layout
// equals C order (one long axis) is accepted rather than rejected.
func TestReadNPYFortranVector(t *testing.T) {
	data := binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, 1), 2)
	file := npyFile("{'descr': '<i4', 'fortran_order': True, 'shape': (1, 2), }", data)
	got, err := DecodeNPY(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	if want := (&Array{DType: I32, Shape: []int{1, 2}, Data: []int32{1, 2}}); !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

// TestDecodeNPYConcatenated checks that DecodeNPY stops after one array.
func TestDecodeNPYConcatenated(t *testing.T) {
	a, b := sampleArray(t, F32, []int{2, 2}), sampleArray(t, I64, []int{3})
	var buf bytes.Buffer
	if err := EncodeNPY(&buf, a); err != nil {
		t.Fatal(err)
	}
	if err := EncodeNPY(&buf, b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []*Array{a, b} {
		got, err := DecodeNPY(&buf)
		if err != nil {
			t.Fatal(err)
		}
		if !sameArray(got, want) {
			t.Errorf("got %+v, want %+v", got, want)
		}
	}
}

// TestNpyioInterop cross-checks the format against the independent
// implementation in github.com/sbinet/npyio.
func TestNpyioInterop(t *testing.T) {
	t.Run("npyio writes", func(t *testing.T) {
		for _, tc := range []struct {
			val  any
			want *Array
		}{
			{[]float32{1, -2, 3.5}, &Array{DType: F32, Shape: []int{3}, Data: []float32{1, -2, 3.5}}},
			{[]float64{1, -2, 3.5}, &Array{DType: F64, Shape: []int{3}, Data: []float64{1, -2, 3.5}}},
			{[]int32{1, -2, 3}, &Array{DType: I32, Shape: []int{3}, Data: []int32{1, -2, 3}}},
			{[]int64{1, -2, 3}, &Array{DType: I64, Shape: []int{3}, Data: []int64{1, -2, 3}}},
			{[]uint16{1, 2, 65535}, &Array{DType: I32, Shape: []int{3}, Data: []int32{1, 2, 65535}, Widened: "u2"}},
			{[]bool{true, false}, &Array{DType: I32, Shape: []int{2}, Data: []int32{1, 0}, Widened: "bool"}},
			{*mat.NewDense(2, 3, []float64{1, 2, 3, 4, 5, 6}), &Array{DType: F64, Shape: []int{2, 3}, Data: []float64{1, 2, 3, 4, 5, 6}}},
		} {
			var buf bytes.Buffer
			if err := npyio.Write(&buf, tc.val); err != nil {
				t.Fatal(err)
			}
			got, err := DecodeNPY(&buf)
			if err != nil {
				t.Fatalf("%T: %v", tc.val, err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("%T: got %+v, want %+v", tc.val, got, tc.want)
			}
		}
	})
	t.Run("npyio reads", func(t *testing.T) {
		a := &Array{DType: F64, Shape: []int{2, 3}, Data: []float64{1, 2, 3, 4, 5, 6}}
		var buf bytes.Buffer
		if err := EncodeNPY(&buf, a); err != nil {
			t.Fatal(err)
		}
		r, err := npyio.NewReader(&buf)
		if err != nil {
			t.Fatal(err)
		}
		if h := r.Header.Descr; h.Type != "<f8" || h.Fortran || !reflect.DeepEqual(h.Shape, []int{2, 3}) {
			t.Fatalf("npyio sees header %+v", h)
		}
		var m mat.Dense
		if err := r.Read(&m); err != nil {
			t.Fatal(err)
		}
		if m.At(1, 0) != 4 || m.At(0, 2) != 3 {
			t.Errorf("npyio read %v", mat.Formatted(&m))
		}
		b := &Array{DType: I32, Shape: []int{4}, Data: []int32{-1, 0, 1, math.MaxInt32}}
		buf.Reset()
		if err := EncodeNPY(&buf, b); err != nil {
			t.Fatal(err)
		}
		var got []int32
		if err := npyio.Read(&buf, &got); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, b.Data) {
			t.Errorf("npyio read %v, want %v", got, b.Data)
		}
	})
}

// FuzzDecodeNPY checks that no input makes the decoder panic; `go test`
// runs the seeds, `go test -fuzz FuzzDecodeNPY` explores further.
func FuzzDecodeNPY(f *testing.F) {
	var buf bytes.Buffer
	if err := EncodeNPY(&buf, &Array{DType: F32, Shape: []int{2, 2}, Data: []float32{1, 2, 3, 4}}); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add(npyFile("{'descr': [('x', '<f4')], 'fortran_order': False, 'shape': ((((),),),), }", nil))
	f.Add([]byte("\x93NUMPY\x01\x00\x05\x00{'de'"))
	f.Add([]byte("\x93NUMPY\x03\x00\xff\xff\xff\xff"))
	f.Add(npyFile("{'descr': [], 'fortran_order': False, 'shape': (), }", nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := DecodeNPY(bytes.NewReader(data))
		if err == nil {
			if verr := a.Validate(); verr != nil {
				t.Fatalf("decoded an invalid array: %v", verr)
			}
		}
	})
}
