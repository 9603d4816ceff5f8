package gridio

import (
	"bytes"
	"errors"
	"image/gif"
	"io"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// TestWriteAtomic: a failed write leaves the old file and no temporary file; a good one
// replaces it whole with ordinary permissions.
func TestWriteAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.bin")
	if err := WriteFileAtomic(path, []byte("old")); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := WriteAtomic(path, func(w io.Writer) error {
		w.Write(bytes.Repeat([]byte("x"), 1<<20))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Errorf("a failed write changed the file to %d bytes", len(b))
	}
	if err := WriteFileAtomic(path, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "new" {
		t.Errorf("file holds %q", b)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v", st.Mode())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("%d files in the directory, want 1", len(entries))
	}
	if err := WriteFileAtomic(filepath.Join(dir, "no", "such", "dir"), nil); err == nil {
		t.Error("writing into a missing directory must fail")
	}
}

// TestNPZRoundTrip: arrays and raw members come back as written, in order, and the same
// entries give the same bytes.
func TestNPZRoundTrip(t *testing.T) {
	dir := t.TempDir()
	a := NewArray(F32, []int{3, 4})
	for i := range a.Data.([]float32) {
		a.Data.([]float32)[i] = float32(i) / 3
	}
	b := NewArray(I64, []int{5})
	b.Data.([]int64)[4] = -7
	in := []NPZEntry{{Name: "meta.json", Data: []byte(`{"x":1}`)}, {Name: "u", Array: a}, {Name: "u.prev", Array: b}}
	p1, p2 := filepath.Join(dir, "a.npz"), filepath.Join(dir, "b.npz")
	for _, p := range []string{p1, p2} {
		if err := WriteNPZ(p, in); err != nil {
			t.Fatal(err)
		}
	}
	x, _ := os.ReadFile(p1)
	y, _ := os.ReadFile(p2)
	if !bytes.Equal(x, y) {
		t.Error("the same entries gave different archives")
	}
	out, err := ReadNPZ(p1)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 3 || out[0].Name != "meta.json" || string(out[0].Data) != `{"x":1}` || out[1].Name != "u" || out[2].Name != "u.prev" {
		t.Fatalf("read back %+v", out)
	}
	if out[1].Array.Data.([]float32)[11] != a.Data.([]float32)[11] || out[2].Array.Data.([]int64)[4] != -7 {
		t.Error("array data differ")
	}
	os.WriteFile(p2, x[:len(x)/2], 0o644)
	if _, err := ReadNPZ(p2); err == nil {
		t.Error("a truncated archive must fail")
	}
}

// TestGIFFixedScale: every frame uses the one colour scale of all frames (the same value has
// the same palette index in every frame), large grids are reduced, NaN is its own colour, and
// Close leaves no temporary file.
func TestGIFFixedScale(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.gif")
	g, err := NewGIF(path, GIFOptions{MaxSide: 100})
	if err != nil {
		t.Fatal(err)
	}
	for f := 0; f < 3; f++ {
		a := NewArray(F64, []int{2, 300, 200}) // 3-D: the middle slice is drawn
		d := a.Data.([]float64)
		for i := range d {
			d[i] = 5 // the first slice: never drawn
		}
		slice := d[300*200:]
		for i := range slice {
			slice[i] = float64(f) // frame f is uniformly f, so the range is 0..2
		}
		if f == 2 {
			slice[0] = math.NaN()
		}
		if err := g.Add(a); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if lo, hi := g.Range(); lo != 0 || hi != 2 {
		t.Errorf("range %g..%g, want 0..2", lo, hi)
	}
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	anim, err := gif.DecodeAll(fh)
	if err != nil {
		t.Fatal(err)
	}
	if len(anim.Image) != 3 {
		t.Fatalf("%d frames", len(anim.Image))
	}
	if anim.LoopCount != 0 || anim.Delay[0] != 8 || anim.Delay[2] != 8 {
		t.Errorf("loop count %d, delays %v: want a looping animation of 8/100 s frames", anim.LoopCount, anim.Delay)
	}
	b := anim.Image[0].Bounds()
	if max(b.Dx(), b.Dy()) > 300 || max(b.Dx(), b.Dy()) < 100 {
		t.Errorf("frame size %v", b)
	}
	want := []uint8{0, gifLevels / 2, gifLevels - 1}
	for f, img := range anim.Image {
		if got := img.Pix[len(img.Pix)-1]; got != want[f] {
			t.Errorf("frame %d: index %d, want %d", f, got, want[f])
		}
	}
	if got := anim.Image[2].Pix[0]; got != gifLevels {
		t.Errorf("NaN drawn as index %d", got)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("%d files left, want the GIF alone", len(entries))
	}
}
