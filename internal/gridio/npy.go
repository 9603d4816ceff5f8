package gridio

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

// The .npy format (https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html)
// is implemented here directly rather than through github.com/sbinet/npyio:
// that library writes only 1-D slices and 2-D gonum matrices (no N-D
// shapes), slices its header at fixed offsets (a header without a newline
// makes it panic), and reads element by element while ignoring short
// reads, so a truncated file silently yields wrong values. The tests still
// use npyio as an independent implementation to check interoperability.

// npyMagic starts every .npy file.
const npyMagic = "\x93NUMPY"

// npyAlign is the alignment NumPy pads the header to, so that the data can
// be memory-mapped with any element type.
const npyAlign = 64

// npyGrowthDigits mirrors NumPy's GROWTH_AXIS_MAX_DIGITS: NumPy leaves room
// in the header for the first axis to grow to 21 digits. Padding the same
// way makes our files byte-identical to np.save's.
const npyGrowthDigits = 21

// maxNPYHeader bounds the header length we accept. NumPy itself refuses
// headers over 10000 bytes by default; a larger bound here only guards
// against allocating gigabytes for a corrupt length field.
const maxNPYHeader = 1 << 20

// readChunk is how many data bytes are decoded at a time; it keeps memory
// bounded by the output array rather than by a second full-size buffer.
const readChunk = 1 << 16

// npyDescr maps the on-disk little-endian descr of each project dtype.
var npyDescr = map[DType]string{F32: "<f4", F64: "<f8", I32: "<i4", I64: "<i8"}

// ReadNPY reads a NumPy .npy file into an Array.
//
// Files with dtype <f4, <f8, <i4 or <i8 load as F32, F64, I32 and I64. So
// that arrays saved without thought still load, narrower and unsigned
// integers and booleans are widened: i1, i2, u1, u2 and bool to I32, u4 and
// u8 to I64 (a u8 value above the int64 range is an error). Fortran-order
// arrays (unless their layout equals C order), big-endian data, and
// complex, float16, object, string or structured dtypes are rejected with
// an error naming the file and the dtype and suggesting the NumPy call that
// fixes the file. A file whose size disagrees with its header (truncated,
// or with trailing bytes) is an error too.
func ReadNPY(path string) (*Array, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("gridio: read npy: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("gridio: read npy %s: %w", path, err)
	}
	a, err := decodeNPY(bufio.NewReaderSize(f, readChunk), st.Size())
	if err != nil {
		return nil, fmt.Errorf("gridio: read npy %s: %w", path, err)
	}
	return a, nil
}

// DecodeNPY reads one .npy array from r, with the same conversions and
// checks as ReadNPY. It stops right after the array's data, so several
// arrays written back to back can be read in turn; for the same reason it
// cannot detect trailing garbage, which ReadNPY does.
func DecodeNPY(r io.Reader) (*Array, error) {
	a, err := decodeNPY(r, -1)
	if err != nil {
		return nil, fmt.Errorf("gridio: decode npy: %w", err)
	}
	return a, nil
}

// npyHeader is what decodeNPY learns from the header.
type npyHeader struct {
	descr   string
	fortran bool
	shape   []int
	dataOff int64 // offset of the first data byte
}

// srcType describes an on-disk element type we know how to load.
type srcType struct {
	kind byte // 'f', 'i', 'u' or 'b'
	size int
}

// decodeNPY does the work of ReadNPY and DecodeNPY. fileSize is the total
// size when known (a file), or -1 for a stream.
func decodeNPY(r io.Reader, fileSize int64) (*Array, error) {
	h, err := readNPYHeader(r, fileSize)
	if err != nil {
		return nil, err
	}
	st, err := parseDescr(h.descr)
	if err != nil {
		return nil, err
	}
	if h.fortran && !cOrderEqualsFortran(h.shape) {
		return nil, fmt.Errorf("array of shape %s and dtype '%s' is stored in Fortran order, which is not supported; "+
			"save it with np.save(path, np.ascontiguousarray(a))", shapeString(h.shape), h.descr)
	}
	n, err := numElems(h.shape)
	if err != nil {
		return nil, err
	}
	nbytes := int64(n) * int64(st.size)
	if fileSize >= 0 {
		have := fileSize - h.dataOff
		switch {
		case have < nbytes:
			return nil, fmt.Errorf("truncated file: shape %s of '%s' needs %d data bytes but only %d follow the header",
				shapeString(h.shape), h.descr, nbytes, have)
		case have > nbytes:
			return nil, fmt.Errorf("file has %d unexpected bytes after the data of shape %s of '%s' (corrupt or not written by np.save?)",
				have-nbytes, shapeString(h.shape), h.descr)
		}
	}
	// With a known file size the header has been checked against it, so the
	// output can be allocated at once; for a stream it grows as data
	// arrives, so a lying header cannot force a huge allocation.
	prealloc := n
	if fileSize < 0 {
		prealloc = min(n, readChunk)
	}
	a := &Array{Shape: h.shape}
	le := binary.LittleEndian
	switch {
	case st.kind == 'f' && st.size == 4:
		a.DType = F32
		a.Data, err = readElems(r, n, 4, prealloc, func(b []byte) (float32, error) {
			return math.Float32frombits(le.Uint32(b)), nil
		})
	case st.kind == 'f' && st.size == 8:
		a.DType = F64
		a.Data, err = readElems(r, n, 8, prealloc, func(b []byte) (float64, error) {
			return math.Float64frombits(le.Uint64(b)), nil
		})
	case st.kind == 'i' && st.size == 4:
		a.DType = I32
		a.Data, err = readElems(r, n, 4, prealloc, func(b []byte) (int32, error) { return int32(le.Uint32(b)), nil })
	case st.kind == 'i' && st.size == 8:
		a.DType = I64
		a.Data, err = readElems(r, n, 8, prealloc, func(b []byte) (int64, error) { return int64(le.Uint64(b)), nil })
	case st.kind == 'i' && st.size == 2:
		a.DType = I32
		a.Data, err = readElems(r, n, 2, prealloc, func(b []byte) (int32, error) { return int32(int16(le.Uint16(b))), nil })
	case st.kind == 'i' && st.size == 1:
		a.DType = I32
		a.Data, err = readElems(r, n, 1, prealloc, func(b []byte) (int32, error) { return int32(int8(b[0])), nil })
	case st.kind == 'u' && st.size == 1:
		a.DType = I32
		a.Data, err = readElems(r, n, 1, prealloc, func(b []byte) (int32, error) { return int32(b[0]), nil })
	case st.kind == 'u' && st.size == 2:
		a.DType = I32
		a.Data, err = readElems(r, n, 2, prealloc, func(b []byte) (int32, error) { return int32(le.Uint16(b)), nil })
	case st.kind == 'u' && st.size == 4:
		a.DType = I64
		a.Data, err = readElems(r, n, 4, prealloc, func(b []byte) (int64, error) { return int64(le.Uint32(b)), nil })
	case st.kind == 'u' && st.size == 8:
		a.DType = I64
		a.Data, err = readElems(r, n, 8, prealloc, func(b []byte) (int64, error) {
			v := le.Uint64(b)
			if v > math.MaxInt64 {
				return 0, fmt.Errorf("uint64 value %d does not fit in i64; convert it in NumPy first, e.g. a.astype(np.float64)", v)
			}
			return int64(v), nil
		})
	case st.kind == 'b':
		a.DType = I32
		a.Data, err = readElems(r, n, 1, prealloc, func(b []byte) (int32, error) {
			if b[0] != 0 {
				return 1, nil
			}
			return 0, nil
		})
	default:
		// parseDescr only returns the combinations above.
		return nil, fmt.Errorf("dtype '%s' is not supported", h.descr)
	}
	if err != nil {
		return nil, fmt.Errorf("data of shape %s of '%s': %w", shapeString(h.shape), h.descr, err)
	}
	if !(st.kind == 'f' || st.kind == 'i' && st.size >= 4) {
		a.Widened = map[byte]string{'i': "i", 'u': "u", 'b': "bool"}[st.kind]
		if st.kind != 'b' {
			a.Widened += strconv.Itoa(st.size)
		}
	}
	return a, nil
}

// readNPYHeader reads and checks the magic, version and header dictionary.
func readNPYHeader(r io.Reader, fileSize int64) (*npyHeader, error) {
	var pre [8]byte
	if k, err := io.ReadFull(r, pre[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("not a .npy file: only %d bytes, too short for the .npy preamble", k)
		}
		return nil, err
	}
	if string(pre[:6]) != npyMagic {
		return nil, fmt.Errorf("not a .npy file: it does not start with the magic string \\x93NUMPY")
	}
	major, minor := pre[6], pre[7]
	var lenSize int
	switch major {
	case 1:
		lenSize = 2
	case 2, 3:
		lenSize = 4
	default:
		return nil, fmt.Errorf(".npy format version %d.%d is not supported (only 1.x, 2.x and 3.x)", major, minor)
	}
	var lb [4]byte
	if _, err := io.ReadFull(r, lb[:lenSize]); err != nil {
		return nil, fmt.Errorf("truncated .npy header: %w", err)
	}
	hlen := int(binary.LittleEndian.Uint32(lb[:]))
	if hlen > maxNPYHeader {
		return nil, fmt.Errorf(".npy header length %d is implausibly large (corrupt file?)", hlen)
	}
	dataOff := int64(8 + lenSize + hlen)
	if fileSize >= 0 && fileSize < dataOff {
		return nil, fmt.Errorf("truncated file: the header claims %d bytes but the file has only %d", dataOff, fileSize)
	}
	hb := make([]byte, hlen)
	if _, err := io.ReadFull(r, hb); err != nil {
		return nil, fmt.Errorf("truncated .npy header: %w", err)
	}
	v, err := parsePyLiteral(string(hb))
	if err != nil {
		return nil, err
	}
	d, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("header is not a dictionary: %q", strings.TrimSpace(string(hb)))
	}
	h := &npyHeader{dataOff: dataOff}
	switch descr := d["descr"].(type) {
	case string:
		h.descr = descr
	case pyList:
		field := "name"
		if len(descr) == 0 {
			return nil, fmt.Errorf("header has an empty 'descr' list")
		}
		if f, ok := descr[0].(pyTuple); ok && len(f) > 0 {
			if name, ok := f[0].(string); ok {
				field = name
			}
		}
		return nil, fmt.Errorf("structured dtype with %d fields is not supported; save one field at a time, e.g. np.save(path, np.ascontiguousarray(a['%s']))", len(descr), field)
	default:
		return nil, fmt.Errorf("header has no valid 'descr' entry")
	}
	if h.fortran, ok = d["fortran_order"].(bool); !ok {
		return nil, fmt.Errorf("header has no valid 'fortran_order' entry")
	}
	shape, ok := d["shape"].(pyTuple)
	if !ok {
		return nil, fmt.Errorf("header has no valid 'shape' entry")
	}
	h.shape = make([]int, len(shape))
	for i, s := range shape {
		dim, ok := s.(int64)
		if !ok || dim < 0 || dim > maxElems {
			return nil, fmt.Errorf("header shape entry %d (%v) is not a valid dimension", i, s)
		}
		h.shape[i] = int(dim)
	}
	for k := range d {
		if k != "descr" && k != "fortran_order" && k != "shape" {
			return nil, fmt.Errorf("header has unexpected key %q", k)
		}
	}
	return h, nil
}

// parseDescr interprets a NumPy dtype string such as '<f4' and rejects the
// ones we cannot load, with a hint on how to re-save the data.
func parseDescr(descr string) (srcType, error) {
	fix := func(what, np string) error {
		return fmt.Errorf("dtype '%s' (%s) is not supported; save with np.save(path, %s)", descr, what, np)
	}
	astype := func(t string) string { return "np.ascontiguousarray(a).astype(" + t + ")" }
	if descr == "" {
		return srcType{}, fmt.Errorf("empty dtype descr")
	}
	order, rest := byte('='), descr
	if strings.IndexByte("<>|=", descr[0]) >= 0 {
		order, rest = descr[0], descr[1:]
	}
	if rest == "" {
		return srcType{}, fmt.Errorf("dtype '%s' is malformed", descr)
	}
	kind, sizeText := rest[0], rest[1:]
	size := 0
	for _, c := range sizeText {
		if c < '0' || c > '9' || size > 1000 {
			size = -1
			break
		}
		size = size*10 + int(c-'0')
	}
	switch kind {
	case 'c':
		return srcType{}, fix("complex", "np.ascontiguousarray(a.real).astype(np.float64)")
	case 'O':
		return srcType{}, fix("Python objects", astype("np.float64"))
	case 'U', 'S', 'a':
		return srcType{}, fix("strings", astype("np.float64"))
	case 'M', 'm':
		return srcType{}, fix("datetime", astype("np.int64"))
	case 'V':
		return srcType{}, fix("raw bytes", astype("np.float64"))
	}
	st := srcType{kind: kind, size: size}
	switch {
	case kind == 'f' && (size == 4 || size == 8):
	case (kind == 'i' || kind == 'u') && (size == 1 || size == 2 || size == 4 || size == 8):
	case kind == 'b' && size == 1:
	case kind == 'f' && size == 2:
		return srcType{}, fix("float16", astype("np.float32"))
	case kind == 'f':
		return srcType{}, fix("extended precision", astype("np.float64"))
	default:
		return srcType{}, fmt.Errorf("dtype '%s' is not a NumPy dtype this package knows; save with np.save(path, np.ascontiguousarray(a).astype(np.float64))", descr)
	}
	if size > 1 {
		switch order {
		case '>':
			return srcType{}, fmt.Errorf("dtype '%s' is big-endian, which is not supported; save with np.save(path, np.ascontiguousarray(a).astype('<%c%d'))", descr, kind, size)
		case '<':
		default:
			return srcType{}, fmt.Errorf("dtype '%s' does not state its byte order; save with np.save(path, np.ascontiguousarray(a).astype('<%c%d'))", descr, kind, size)
		}
	}
	return st, nil
}

// cOrderEqualsFortran reports whether an array of this shape has the same
// memory layout in Fortran and C order, which holds when at most one axis
// is longer than 1 (or the array is empty). Such files are accepted even
// when flagged fortran_order, since their data needs no reordering.
func cOrderEqualsFortran(shape []int) bool {
	long := 0
	for _, d := range shape {
		if d == 0 {
			return true
		}
		if d > 1 {
			long++
		}
	}
	return long <= 1
}

// readElems reads n elements of size bytes each from r and converts them
// with conv, in chunks so that memory use stays bounded by the output.
func readElems[T any](r io.Reader, n, size, prealloc int, conv func([]byte) (T, error)) ([]T, error) {
	out := make([]T, 0, prealloc)
	buf := make([]byte, (readChunk/size)*size)
	for len(out) < n {
		want := min((n-len(out))*size, len(buf))
		k, err := io.ReadFull(r, buf[:want])
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, fmt.Errorf("truncated: expected %d data bytes, got %d", n*size, len(out)*size+k)
			}
			return nil, err
		}
		for off := 0; off < want; off += size {
			v, err := conv(buf[off : off+size])
			if err != nil {
				return nil, fmt.Errorf("element %d: %w", len(out), err)
			}
			out = append(out, v)
		}
	}
	return out, nil
}

// WriteNPY writes a as a NumPy .npy file (format 1.0, C order,
// little-endian <f4, <f8, <i4 or <i8) that np.load reads unchanged. The
// header is padded exactly as np.save pads it, so the bytes equal those of
// np.save for the same array. The file is written atomically (WriteAtomic).
func WriteNPY(path string, a *Array) error {
	if err := a.Validate(); err != nil {
		return fmt.Errorf("gridio: write npy %s: %w", path, err)
	}
	return WriteAtomic(path, func(w io.Writer) error {
		if err := EncodeNPY(w, a); err != nil {
			return fmt.Errorf("gridio: write npy %s: %w", path, err)
		}
		return nil
	})
}

// EncodeNPY writes a to w in .npy format, as WriteNPY does for a file.
func EncodeNPY(w io.Writer, a *Array) error {
	if err := a.Validate(); err != nil {
		return fmt.Errorf("encode npy: %w", err)
	}
	if _, err := w.Write(npyHeaderBytes(npyDescr[a.DType], a.Shape)); err != nil {
		return fmt.Errorf("encode npy: header: %w", err)
	}
	var err error
	le := binary.LittleEndian
	switch d := a.Data.(type) {
	case []float32:
		err = writeElems(w, d, 4, func(b []byte, v float32) []byte { return le.AppendUint32(b, math.Float32bits(v)) })
	case []float64:
		err = writeElems(w, d, 8, func(b []byte, v float64) []byte { return le.AppendUint64(b, math.Float64bits(v)) })
	case []int32:
		err = writeElems(w, d, 4, func(b []byte, v int32) []byte { return le.AppendUint32(b, uint32(v)) })
	case []int64:
		err = writeElems(w, d, 8, func(b []byte, v int64) []byte { return le.AppendUint64(b, uint64(v)) })
	}
	if err != nil {
		return fmt.Errorf("encode npy: data: %w", err)
	}
	return nil
}

// npyHeaderBytes builds the magic, version, length and dictionary exactly
// as NumPy's np.save does (format 1.0, or 2.0 if the dictionary would not
// fit a 16-bit length), padded with spaces and a newline so that the data
// starts at a multiple of 64 bytes.
func npyHeaderBytes(descr string, shape []int) []byte {
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shapeString(shape))
	if len(shape) > 0 {
		dict += strings.Repeat(" ", max(0, npyGrowthDigits-len(fmt.Sprint(shape[0]))))
	}
	hlen := len(dict) + 1 // + '\n'
	padFor := func(lenSize int) int {
		// Like NumPy, pad a full 64 bytes when already aligned.
		return npyAlign - (6+2+lenSize+hlen)%npyAlign
	}
	build := func(major byte, lenSize int) []byte {
		pad := padFor(lenSize)
		var b bytes.Buffer
		b.WriteString(npyMagic)
		b.WriteByte(major)
		b.WriteByte(0)
		if lenSize == 2 {
			b.Write(binary.LittleEndian.AppendUint16(nil, uint16(hlen+pad)))
		} else {
			b.Write(binary.LittleEndian.AppendUint32(nil, uint32(hlen+pad)))
		}
		b.WriteString(dict)
		b.WriteString(strings.Repeat(" ", pad))
		b.WriteByte('\n')
		return b.Bytes()
	}
	if hlen+padFor(2) <= math.MaxUint16 {
		return build(1, 2)
	}
	return build(2, 4)
}

// writeElems encodes s in chunks through a reusable buffer, avoiding a
// second full-size copy of large arrays.
func writeElems[T any](w io.Writer, s []T, size int, put func([]byte, T) []byte) error {
	buf := make([]byte, 0, readChunk)
	for len(s) > 0 {
		k := min(len(s), readChunk/size)
		buf = buf[:0]
		for _, v := range s[:k] {
			buf = put(buf, v)
		}
		if _, err := w.Write(buf); err != nil {
			return err
		}
		s = s[k:]
	}
	return nil
}
