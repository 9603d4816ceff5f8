package gridio

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// findNumPy returns a Python interpreter that can import numpy, or skips the
// test: NumPy is optional on developer and CI machines (on Debian it comes
// from the python3-numpy package).
func findNumPy(t *testing.T) string {
	t.Helper()
	candidates := []string{"python3", "/usr/bin/python3", "python"}
	for _, c := range candidates {
		path, err := exec.LookPath(c)
		if err != nil {
			continue
		}
		if exec.Command(path, "-c", "import numpy").Run() == nil {
			return path
		}
	}
	t.Skip("no python3 with numpy found; install python3-numpy to run the NumPy interoperability tests")
	return ""
}

func runPython(t *testing.T, py, script string, args ...string) string {
	t.Helper()
	cmd := exec.Command(py, append([]string{"-c", script}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python failed: %v\n%s", err, out)
	}
	return string(out)
}

// TestNumPyReadsOurFiles has NumPy load what WriteNPY wrote, check dtype
// and shape, and save it again: the re-saved file must be byte-identical,
// which proves both the header and the data match np.save exactly.
func TestNumPyReadsOurFiles(t *testing.T) {
	py := findNumPy(t)
	dir := t.TempDir()
	shapes := [][]int{{7}, {3, 4}, {2, 3, 5}, {}, {0, 5}, {1000000000000, 0}, {1, 2, 1, 2, 1, 2, 1, 2}}
	var names []string
	for _, dt := range []DType{F32, F64, I32, I64} {
		for i, shape := range shapes {
			name := fmt.Sprintf("%s_%d", dt, i)
			if err := WriteNPY(filepath.Join(dir, name+".npy"), sampleArray(t, dt, shape)); err != nil {
				t.Fatal(err)
			}
			names = append(names, name)
		}
	}
	script := `
import sys, numpy as np
d = sys.argv[1]
for name in sys.argv[2:]:
    a = np.load(f"{d}/{name}.npy")
    want = {"f32": "<f4", "f64": "<f8", "i32": "<i4", "i64": "<i8"}[name.split("_")[0]]
    assert a.dtype.str == want, (name, a.dtype.str)
    assert a.flags.c_contiguous
    np.save(f"{d}/{name}.resaved.npy", a)
    print(name, a.shape)
`
	out := runPython(t, py, script, append([]string{dir}, names...)...)
	for i, name := range names {
		orig, err := os.ReadFile(filepath.Join(dir, name+".npy"))
		if err != nil {
			t.Fatal(err)
		}
		resaved, err := os.ReadFile(filepath.Join(dir, name+".resaved.npy"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(orig, resaved) {
			t.Errorf("%s: np.save of the loaded array differs from our file\nours:  %q\nnumpy: %q", name, orig[:min(len(orig), 140)], resaved[:min(len(resaved), 140)])
		}
		if want := fmt.Sprintf("%s %s", name, shapeString(shapes[i%len(shapes)])); !strings.Contains(out, want) {
			t.Errorf("NumPy output lacks %q:\n%s", want, out)
		}
	}
}

// TestWeReadNumPyFiles loads files written by np.save in every dtype
// ReadNPY accepts, and checks the ones it must reject.
func TestWeReadNumPyFiles(t *testing.T) {
	py := findNumPy(t)
	dir := t.TempDir()
	script := `
import sys, numpy as np
d = sys.argv[1]
base = np.arange(24).reshape(2, 3, 4) - 5
for dt in ["<f4", "<f8", "<i4", "<i8", "<i2", "|i1", "|u1", "<u2", "<u4", "<u8"]:
    a = np.abs(base) if dt[1] == "u" else base
    np.save(f"{d}/{dt[1:]}.npy", a.astype(dt))
np.save(f"{d}/b1.npy", base % 3 == 0)
np.save(f"{d}/slice.npy", np.arange(20.0).reshape(4, 5)[:, 1:3])  # non-contiguous view
np.save(f"{d}/scalar.npy", np.float64(2.5))
np.save(f"{d}/fortran.npy", np.asfortranarray(base.astype(np.float32)))
np.save(f"{d}/bigendian.npy", base.astype(">f8"))
np.save(f"{d}/complex.npy", base.astype(np.complex64))
np.save(f"{d}/float16.npy", base.astype(np.float16))
np.save(f"{d}/object.npy", np.array([1, "a"], dtype=object), allow_pickle=True)
np.save(f"{d}/record.npy", np.zeros(3, dtype=[("x", "<f4"), ("y", "<i4")]))
`
	runPython(t, py, script, dir)

	base := make([]int64, 24)
	for i := range base {
		base[i] = int64(i) - 5
	}
	abs := func(v int64) int64 { return max(v, -v) }
	accept := []struct {
		file  string
		dtype DType
		shape []int
		f     func(i int) float64
	}{
		{"f4", F32, []int{2, 3, 4}, func(i int) float64 { return float64(base[i]) }},
		{"f8", F64, []int{2, 3, 4}, func(i int) float64 { return float64(base[i]) }},
		{"i4", I32, []int{2, 3, 4}, func(i int) float64 { return float64(base[i]) }},
		{"i8", I64, []int{2, 3, 4}, func(i int) float64 { return float64(base[i]) }},
		{"i2", I32, []int{2, 3, 4}, func(i int) float64 { return float64(base[i]) }},
		{"i1", I32, []int{2, 3, 4}, func(i int) float64 { return float64(base[i]) }},
		{"u1", I32, []int{2, 3, 4}, func(i int) float64 { return float64(abs(base[i])) }},
		{"u2", I32, []int{2, 3, 4}, func(i int) float64 { return float64(abs(base[i])) }},
		{"u4", I64, []int{2, 3, 4}, func(i int) float64 { return float64(abs(base[i])) }},
		{"u8", I64, []int{2, 3, 4}, func(i int) float64 { return float64(abs(base[i])) }},
		{"b1", I32, []int{2, 3, 4}, func(i int) float64 {
			if ((base[i]%3)+3)%3 == 0 {
				return 1
			}
			return 0
		}},
		{"slice", F64, []int{4, 2}, func(i int) float64 { return float64(i/2*5 + 1 + i%2) }},
		{"scalar", F64, []int{}, func(int) float64 { return 2.5 }},
	}
	for _, tc := range accept {
		t.Run(tc.file, func(t *testing.T) {
			a, err := ReadNPY(filepath.Join(dir, tc.file+".npy"))
			if err != nil {
				t.Fatal(err)
			}
			if a.DType != tc.dtype || !reflect.DeepEqual(a.Shape, tc.shape) {
				t.Fatalf("got %s %v, want %s %v", a.DType, a.Shape, tc.dtype, tc.shape)
			}
			for i, v := range a.Float64s() {
				if v != tc.f(i) {
					t.Fatalf("element %d = %v, want %v", i, v, tc.f(i))
				}
			}
		})
	}
	reject := map[string]string{
		"fortran":   "Fortran order",
		"bigendian": "big-endian",
		"complex":   "complex",
		"float16":   "float16",
		"object":    "objects",
		"record":    "structured dtype",
	}
	for file, want := range reject {
		t.Run(file, func(t *testing.T) {
			path := filepath.Join(dir, file+".npy")
			_, err := ReadNPY(path)
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "np.") {
				t.Fatalf("ReadNPY(%s) = %v, want an error naming the file, %q and a NumPy hint", file, err, want)
			}
		})
	}
}
