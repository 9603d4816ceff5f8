package gridio

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"io"
	"math"
	"os"
	"path/filepath"
)

// GIFOptions controls an animation written by GIFWriter.
type GIFOptions struct {
	Colormap string // as PNGOptions.Colormap; "" is viridis
	MaxSide  int    // longest side of a frame in pixels (default 512); larger grids are averaged down
	Delay    int    // hundredths of a second per frame (default 8)
}

// Frame sizes: small grids are enlarged by a whole factor to at least minGIFSide.
const (
	defaultGIFSide = 512
	minGIFSide     = 256
	gifLevels      = 255 // palette entries of the colour map; entry 255 marks NaN/Inf
)

// GIFWriter builds an animated GIF of a field's evolution with one fixed colour scale over
// all frames. Frames are reduced to at most MaxSide pixels and spooled to a temporary file as
// they come, with the running minimum and maximum of their finite values; Close then reads
// them back and maps every frame with that one range (two passes over the kept frames), so
// that colours mean the same value in every frame and memory holds one frame while running.
type GIFWriter struct {
	path   string
	opt    GIFOptions
	spool  *os.File
	w, h   int // reduced frame size
	frames int
	lo, hi float64
}

// NewGIF starts an animation that Close writes to path.
func NewGIF(path string, opt GIFOptions) (*GIFWriter, error) {
	if _, err := lookupColormap(opt.Colormap); err != nil {
		return nil, fmt.Errorf("gridio: gif %s: %w", path, err)
	}
	if opt.MaxSide <= 0 {
		opt.MaxSide = defaultGIFSide
	}
	if opt.Delay <= 0 {
		opt.Delay = 8
	}
	f, err := os.CreateTemp(filepath.Dir(path), TempPrefix+filepath.Base(path)+"-frames-*")
	if err != nil {
		return nil, fmt.Errorf("gridio: gif %s: %w", path, err)
	}
	return &GIFWriter{path: path, opt: opt, spool: f, lo: math.Inf(1), hi: math.Inf(-1)}, nil
}

// Frames is the number of frames added so far.
func (g *GIFWriter) Frames() int { return g.frames }

// Add appends a frame: a 2-D array, the middle slice along the slowest axis of a 3-D one, or a
// 1-D one drawn as a strip. Every frame must have the same shape.
func (g *GIFWriter) Add(a *Array) error {
	if err := a.Validate(); err != nil {
		return fmt.Errorf("gridio: gif %s: %w", g.path, err)
	}
	var vals []float64
	var ny, nx int
	switch len(a.Shape) {
	case 1:
		ny, nx = 1, a.Shape[0]
		vals = a.Float64s()
	case 2:
		ny, nx = a.Shape[0], a.Shape[1]
		vals = a.Float64s()
	case 3:
		k := a.Shape[0] / 2
		ny, nx = a.Shape[1], a.Shape[2]
		vals = a.float64Range(k*ny*nx, (k+1)*ny*nx)
	default:
		return fmt.Errorf("gridio: gif %s: cannot draw a %d-D array", g.path, len(a.Shape))
	}
	if nx == 0 || ny == 0 {
		return fmt.Errorf("gridio: gif %s: cannot draw an empty array of shape %s", g.path, shapeString(a.Shape))
	}
	b := max(1, (max(nx, ny)+g.opt.MaxSide-1)/g.opt.MaxSide)
	w, h := (nx+b-1)/b, (ny+b-1)/b
	if g.frames == 0 {
		g.w, g.h = w, h
	} else if w != g.w || h != g.h {
		return fmt.Errorf("internal error: gif frame of %dx%d after frames of %dx%d", w, h, g.w, g.h)
	}
	buf := make([]byte, 4*w*h)
	for cy := 0; cy < h; cy++ {
		for cx := 0; cx < w; cx++ {
			sum, cnt, bad := 0.0, 0, false
			for y := cy * b; y < min((cy+1)*b, ny); y++ {
				for x := cx * b; x < min((cx+1)*b, nx); x++ {
					v := vals[y*nx+x]
					if math.IsNaN(v) || math.IsInf(v, 0) {
						bad = true
						continue
					}
					sum += v
					cnt++
				}
			}
			v := float32(math.NaN())
			if !bad {
				v = float32(sum / float64(cnt))
				g.lo, g.hi = min(g.lo, float64(v)), max(g.hi, float64(v))
			}
			binary.LittleEndian.PutUint32(buf[4*(cy*w+cx):], math.Float32bits(v))
		}
	}
	if _, err := g.spool.Write(buf); err != nil {
		return fmt.Errorf("gridio: gif %s: spooling a frame: %w", g.path, err)
	}
	g.frames++
	return nil
}

// Abort drops the animation and its temporary file.
func (g *GIFWriter) Abort() {
	if g.spool != nil {
		g.spool.Close()
		os.Remove(g.spool.Name())
		g.spool = nil
	}
}

// Close writes the animation (atomically, WriteAtomic) and removes the temporary file. The
// colour scale runs from the smallest to the largest finite value of all frames as reduced;
// NaN and Inf are magenta. Frames are drawn and encoded one at a time.
func (g *GIFWriter) Close() error {
	defer g.Abort()
	if g.frames == 0 {
		return fmt.Errorf("gridio: gif %s: no frames", g.path)
	}
	lut, _ := lookupColormap(g.opt.Colormap)
	pal := make(color.Palette, 0, gifLevels+1)
	for i := 0; i < gifLevels; i++ {
		pal = append(pal, lut[i*255/(gifLevels-1)])
	}
	pal = append(pal, colNonFinite)
	s := 1
	if long := max(g.w, g.h); long < minGIFSide {
		s = (minGIFSide + long - 1) / long
	}
	rows := 1 // a 1-D field is drawn as a strip
	if g.h == 1 {
		rows = max(1, minGIFSide/8/s)
	}
	W, H := g.w*s, g.h*s*rows
	if _, err := g.spool.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("gridio: gif %s: %w", g.path, err)
	}
	buf := make([]byte, 4*g.w*g.h)
	span := g.hi - g.lo
	img := image.NewPaletted(image.Rect(0, 0, W, H), pal)
	var enc bytes.Buffer
	return WriteAtomic(g.path, func(w io.Writer) error {
		for f := 0; f < g.frames; f++ {
			if _, err := io.ReadFull(g.spool, buf); err != nil {
				return fmt.Errorf("gridio: gif %s: reading frame %d back: %w", g.path, f, err)
			}
			for py := 0; py < H; py++ {
				cy := py / (s * rows)
				for px := 0; px < W; px++ {
					v := float64(math.Float32frombits(binary.LittleEndian.Uint32(buf[4*(cy*g.w+px/s):])))
					idx := uint8(gifLevels)
					switch {
					case math.IsNaN(v):
					case !(span > 0):
						idx = gifLevels / 2
					default:
						idx = uint8(min(gifLevels-1, max(0, int(math.Round((v-g.lo)/span*(gifLevels-1))))))
					}
					img.Pix[py*img.Stride+px] = idx
				}
			}
			// Each frame is encoded as a GIF of its own and spliced into the animation, so that
			// memory holds one frame however many there are: the first frame's header and
			// colour table start the file, then a looping extension; every frame gives its
			// delay extension and image block.
			enc.Reset()
			if err := gif.EncodeAll(&enc, &gif.GIF{Image: []*image.Paletted{img}, Delay: []int{g.opt.Delay}}); err != nil {
				return fmt.Errorf("gridio: gif %s: %w", g.path, err)
			}
			b := enc.Bytes()
			head := 13
			if b[10]&0x80 != 0 {
				head += 3 << (1 + b[10]&7)
			}
			if f == 0 {
				if _, err := w.Write(b[:head]); err != nil {
					return err
				}
				loop := []byte{0x21, 0xff, 0x0b, 'N', 'E', 'T', 'S', 'C', 'A', 'P', 'E', '2', '.', '0', 0x03, 0x01, 0, 0, 0}
				if _, err := w.Write(loop); err != nil {
					return err
				}
			}
			if _, err := w.Write(b[head : len(b)-1]); err != nil { // without the trailer
				return err
			}
		}
		_, err := w.Write([]byte{0x3b})
		return err
	})
}

// Kept is the frames added so far as they are kept (reduced, float32), an array of shape
// [frames, height, width], or nil before the first: a checkpoint stores them so that a
// resumed run continues the animation (Resume).
func (g *GIFWriter) Kept() (*Array, error) {
	if g.frames == 0 {
		return nil, nil
	}
	n := g.frames * g.w * g.h
	data := make([]float32, n)
	buf := make([]byte, 4*n)
	if _, err := g.spool.ReadAt(buf, 0); err != nil {
		return nil, fmt.Errorf("gridio: gif %s: reading the frames back: %w", g.path, err)
	}
	for i := range data {
		data[i] = math.Float32frombits(binary.LittleEndian.Uint32(buf[4*i:]))
	}
	return &Array{DType: F32, Shape: []int{g.frames, g.h, g.w}, Data: data}, nil
}

// Resume adds the frames Kept returned (of an animation of the same field), before any other:
// the animation then goes on as if its frames had been added here.
func (g *GIFWriter) Resume(kept *Array) error {
	if kept == nil {
		return nil
	}
	if g.frames != 0 || kept.DType != F32 || len(kept.Shape) != 3 || kept.Validate() != nil {
		return fmt.Errorf("gridio: gif %s: cannot resume from frames of %s %v", g.path, kept.DType, kept.Shape)
	}
	g.w, g.h = kept.Shape[2], kept.Shape[1]
	vals := kept.Data.([]float32)
	buf := make([]byte, 4*len(vals))
	for i, v := range vals {
		if x := float64(v); !math.IsNaN(x) {
			g.lo, g.hi = min(g.lo, x), max(g.hi, x)
		}
		binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(v))
	}
	if _, err := g.spool.Write(buf); err != nil {
		return fmt.Errorf("gridio: gif %s: spooling frames: %w", g.path, err)
	}
	g.frames = kept.Shape[0]
	return nil
}

// Range is the colour scale's ends: the extremes of the finite values of the frames so far.
func (g *GIFWriter) Range() (lo, hi float64) { return g.lo, g.hi }
