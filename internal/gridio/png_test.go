package gridio

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// gaussian returns a ny×nx f64 bump, the shape of a typical stencil field.
func gaussian(ny, nx int) *Array {
	a := NewArray(F64, []int{ny, nx})
	d := a.Data.([]float64)
	for y := 0; y < ny; y++ {
		for x := 0; x < nx; x++ {
			dx := (float64(x) - 0.6*float64(nx)) / (0.15 * float64(nx))
			dy := (float64(y) - 0.4*float64(ny)) / (0.2 * float64(ny))
			d[y*nx+x] = math.Exp(-(dx*dx + dy*dy) / 2)
		}
	}
	return a
}

func f64p(v float64) *float64 { return &v }

func TestPNGSizes(t *testing.T) {
	ramp := func(dt DType, shape ...int) *Array {
		a := NewArray(dt, shape)
		switch d := a.Data.(type) {
		case []float32:
			for i := range d {
				d[i] = float32(math.Sin(float64(i) * 0.01))
			}
		case []int32:
			for i := range d {
				d[i] = int32(i % 97)
			}
		case []int64:
			for i := range d {
				d[i] = int64(i)
			}
		}
		return a
	}
	withNaN := gaussian(50, 60)
	withNaN.Data.([]float64)[25*60+30] = math.NaN()
	withNaN.Data.([]float64)[0] = math.Inf(-1)
	allNaN := NewArray(F32, []int{4, 4})
	for i := range allNaN.Data.([]float32) {
		allNaN.Data.([]float32)[i] = float32(math.NaN())
	}
	tests := []struct {
		name         string
		a            *Array
		opt          PNGOptions
		minW, maxW   int
		minH, maxH   int
		wantMagenta  bool
		titleContain string
	}{
		{"1D line", ramp(F32, 1000), PNGOptions{Title: "line"}, 800, 1000, 400, 600, false, ""},
		{"1D single point", ramp(I64, 1), PNGOptions{}, 800, 1000, 400, 600, false, ""},
		{"1D huge", ramp(I64, 2_000_000), PNGOptions{}, 800, 1000, 400, 600, false, ""},
		{"2D small upscaled", gaussian(5, 7), PNGOptions{Title: "tiny"}, 400, 700, 280, 600, false, ""},
		{"2D gaussian", gaussian(200, 300), PNGOptions{Title: "bump", Colormap: "inferno"}, 600, 800, 400, 500, false, ""},
		{"2D large downsampled", ramp(F32, 2000, 3300), PNGOptions{Colormap: "gray"}, 1100, 1300, 650, 800, false, ""},
		{"2D thin strip", ramp(I32, 1, 500), PNGOptions{Colormap: "coolwarm", Min: f64p(-100), Max: f64p(100)}, 500, 700, 200, 300, false, ""},
		{"2D NaN", withNaN, PNGOptions{}, 400, 700, 300, 500, true, ""},
		{"2D all NaN", allNaN, PNGOptions{}, 400, 700, 400, 600, true, ""},
		{"2D constant", NewArray(F64, []int{10, 10}), PNGOptions{}, 400, 700, 400, 600, false, ""},
		{"3D middle slice", ramp(F32, 9, 40, 50), PNGOptions{Title: "vol"}, 400, 700, 300, 500, false, ""},
	}
	dir := t.TempDir()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".png")
			if err := WritePNG(path, tc.a, tc.opt); err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			img, err := png.Decode(bytes.NewReader(raw))
			if err != nil {
				t.Fatalf("written PNG does not decode: %v", err)
			}
			b := img.Bounds()
			if b.Dx() < tc.minW || b.Dx() > tc.maxW || b.Dy() < tc.minH || b.Dy() > tc.maxH {
				t.Errorf("image is %dx%d, want width %d..%d and height %d..%d", b.Dx(), b.Dy(), tc.minW, tc.maxW, tc.minH, tc.maxH)
			}
			if got := hasColor(img, colNonFinite); got != tc.wantMagenta {
				t.Errorf("magenta present = %v, want %v", got, tc.wantMagenta)
			}
			// Deterministic: a second rendering gives the same bytes.
			var again bytes.Buffer
			if err := EncodePNG(&again, tc.a, tc.opt); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(raw, again.Bytes()) {
				t.Error("rendering the same input twice gave different bytes")
			}
		})
	}
}

func hasColor(img image.Image, c color.NRGBA) bool {
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if color.NRGBAModel.Convert(img.At(x, y)) == c {
				return true
			}
		}
	}
	return false
}

// TestPNGOrientation checks that row 0 is drawn at the top and column 0 at
// the left, with the highest value in the top colour of the map.
func TestPNGOrientation(t *testing.T) {
	a := NewArray(F64, []int{4, 4})
	a.Data.([]float64)[0] = 1 // [y=0][x=0] is the maximum, all else 0
	img, err := Render(a, PNGOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lut, _ := lookupColormap("viridis")
	top := titleHeight(titleLines("", "", scale{}))
	if got := img.NRGBAAt(margin, top); got != lut[255] {
		t.Errorf("top-left pixel %v, want max colour %v", got, lut[255])
	}
	if got := img.NRGBAAt(margin+399, top+399); got != lut[0] {
		t.Errorf("bottom-right pixel %v, want min colour %v", got, lut[0])
	}
	if got := img.NRGBAAt(margin+399, top); got != lut[0] {
		t.Errorf("top-right pixel %v, want min colour %v", got, lut[0])
	}
}

func TestPNGErrors(t *testing.T) {
	ok := gaussian(4, 4)
	tests := []struct {
		name string
		a    *Array
		opt  PNGOptions
		want string
	}{
		{"4D", NewArray(F32, []int{2, 2, 2, 2}), PNGOptions{}, "4-D"},
		{"0D", NewArray(F32, nil), PNGOptions{}, "0-D"},
		{"empty", NewArray(F32, []int{0, 4}), PNGOptions{}, "empty"},
		{"invalid", &Array{DType: F32, Shape: []int{3}, Data: []float32{1}}, PNGOptions{}, "needs 3 elements"},
		{"colormap", ok, PNGOptions{Colormap: "jet"}, `unknown colormap "jet"`},
		{"min>=max", ok, PNGOptions{Min: f64p(2), Max: f64p(1)}, "must be less than Max"},
		{"nan min", ok, PNGOptions{Min: f64p(math.NaN())}, "must be finite"},
		{"min above data", ok, PNGOptions{Min: f64p(5)}, "set Max as well"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.png")
			err := WritePNG(path, tc.a, tc.opt)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("WritePNG = %v, want error with %q and the path", err, tc.want)
			}
			if _, serr := os.Stat(path); serr == nil {
				t.Error("a file was left behind after the error")
			}
		})
	}
}

func TestScaleLabels(t *testing.T) {
	tests := []struct {
		vals []float64
		opt  PNGOptions
		want []string
	}{
		{[]float64{0, 1}, PNGOptions{}, []string{"0", "0.25", "0.5", "0.75", "1"}},
		{[]float64{-0.3, 0.1}, PNGOptions{}, []string{"-0.3", "-0.2", "-0.1", "0", "0.1"}},
		{[]float64{5, 5}, PNGOptions{}, []string{"4.5", "4.75", "5", "5.25", "5.5"}},
		{[]float64{0, 0}, PNGOptions{}, []string{"-1", "-0.5", "0", "0.5", "1"}},
		{[]float64{-1, float64(float32(0.99999994))}, PNGOptions{}, []string{"-1", "-0.5", "0", "0.5", "1"}},
		{[]float64{math.NaN(), 3}, PNGOptions{Min: f64p(-1), Max: f64p(7)}, []string{"-1", "1", "3", "5", "7"}},
		{[]float64{-math.MaxFloat64, math.MaxFloat64}, PNGOptions{}, []string{"-1.798e+308", "-8.988e+307", "0", "8.988e+307", "1.798e+308"}},
	}
	for _, tc := range tests {
		sc, err := newScale(tc.vals, tc.opt)
		if err != nil {
			t.Fatal(err)
		}
		if got := sc.tickLabels(); strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("labels for %v = %v, want %v", tc.vals, got, tc.want)
		}
		if sc.lutIndex(sc.lo) != 0 || sc.lutIndex(sc.hi) != 255 {
			t.Errorf("scale %v does not span the colour table", sc)
		}
	}
}

func TestColormaps(t *testing.T) {
	for _, name := range append(colormapNames(), "", "Viridis") {
		lut, err := lookupColormap(name)
		if err != nil {
			t.Fatal(err)
		}
		key := strings.ToLower(name)
		if key == "" {
			key = defaultColormap
		}
		cm := colormaps[key]
		if lut[0] != cm[0] || lut[255] != cm[len(cm)-1] {
			t.Errorf("%q: table ends %v %v, want %v %v", name, lut[0], lut[255], cm[0], cm[len(cm)-1])
		}
	}
}

func TestSanitizeText(t *testing.T) {
	if got := sanitizeText("u\tτ step 5"); got != "u ? step 5" {
		t.Errorf("got %q", got)
	}
	if got := sanitizeText(strings.Repeat("x", 500)); len(got) != maxTitleChars || !strings.HasSuffix(got, "...") {
		t.Errorf("long title not shortened: %d chars", len(got))
	}
}

// TestWriteDemoPNG writes a demo image for a person to look at when
// GRIDIO_DEMO_PNG names a path, e.g.
// GRIDIO_DEMO_PNG=/tmp/gridio_demo.png go test -run Demo ./internal/gridio/
func TestWriteDemoPNG(t *testing.T) {
	path := os.Getenv("GRIDIO_DEMO_PNG")
	if path == "" {
		t.Skip("GRIDIO_DEMO_PNG not set")
	}
	a := gaussian(200, 300)
	if err := WritePNG(path, a, PNGOptions{Title: "gaussian bump 300x200, step 0"}); err != nil {
		t.Fatal(err)
	}
	d := a.Data.([]float64)
	d[10*300+20], d[150*300+250] = math.NaN(), math.Inf(1)
	base := strings.TrimSuffix(path, ".png")
	if err := WritePNG(base+"_nan_coolwarm.png", a, PNGOptions{Title: "with NaN/Inf", Colormap: "coolwarm", Min: f64p(-1), Max: f64p(1)}); err != nil {
		t.Fatal(err)
	}
	line := NewArray(F32, []int{500})
	for i, l := 0, line.Data.([]float32); i < len(l); i++ {
		l[i] = float32(math.Sin(float64(i)/30) * math.Exp(-float64(i)/300))
	}
	line.Data.([]float32)[250] = float32(math.NaN())
	if err := WritePNG(base+"_line.png", line, PNGOptions{Title: "damped sine"}); err != nil {
		t.Fatal(err)
	}
}

// TestCanvasLine checks that every segment, in every direction and slope,
// terminates and covers both end points (an earlier version could overshoot
// its end point and loop forever).
func TestCanvasLine(t *testing.T) {
	c := newCanvas(64, 64)
	red := color.NRGBA{255, 0, 0, 255}
	pts := []int{0, 1, 2, 5, 17, 31, 40, 63}
	for _, x0 := range pts {
		for _, y0 := range pts {
			for _, x1 := range pts {
				for _, y1 := range pts {
					c.line(x0, y0, x1, y1, red)
					if c.img.NRGBAAt(x0, y0) != red || c.img.NRGBAAt(x1, y1) != red {
						t.Fatalf("line (%d,%d)-(%d,%d) misses an end point", x0, y0, x1, y1)
					}
				}
			}
		}
	}
}

// FuzzRender checks that no array content or small shape makes Render
// panic; the bytes become float64 values via their bit patterns, so NaN,
// Inf and extreme magnitudes all occur.
func FuzzRender(f *testing.F) {
	f.Add(uint8(2), uint8(3), uint8(4), []byte("\x00\x00\x00\x00\x00\x00\xf0\x7f"))
	f.Add(uint8(1), uint8(9), uint8(0), []byte("\xff\xff\xff\xff\xff\xff\xef\x7f\xff\xff\xff\xff\xff\xff\xef\xff"))
	f.Fuzz(func(t *testing.T, ndim, d0, d1 uint8, data []byte) {
		shape := []int{int(d0%40) + 1, int(d1%40) + 1, 3}[:ndim%4]
		a := NewArray(F64, shape)
		vals := a.Data.([]float64)
		for i := range vals {
			var bits uint64
			for k := 0; k < 8; k++ {
				if j := (i*8 + k) % max(len(data), 1); j < len(data) {
					bits |= uint64(data[j]) << (8 * k)
				}
			}
			vals[i] = math.Float64frombits(bits)
		}
		if img, err := Render(a, PNGOptions{}); err == nil && img.Bounds().Empty() {
			t.Fatal("empty image without error")
		}
	})
}
