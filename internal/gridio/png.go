package gridio

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"strings"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// PNGOptions controls how WritePNG draws an array.
type PNGOptions struct {
	// Title is drawn above the image, e.g. "grayscott u, step 5000". A second
	// line with dtype, shape, slice and data range is always added below it.
	Title string
	// Min and Max fix the colour scale (the y range of a 1-D plot); nil means
	// the minimum or maximum of the finite data. Values outside are clamped
	// to the ends of the scale. Fixing them keeps frames of an animation
	// comparable.
	Min, Max *float64
	// Colormap names the colour scale: "viridis" (default), "inferno",
	// "gray" or "coolwarm" (diverging; pass a Min and Max symmetric around
	// zero to centre it). 1-D line plots do not use it.
	Colormap string
}

// Layout of the rendered image, in pixels. The heat map's long side is kept
// between minLong and maxLong so that small grids are visible and huge ones
// produce files of reasonable size.
const (
	minLong       = 400
	maxLong       = 1600
	minShort      = 32 // very thin grids are stretched to at least this
	margin        = 12
	lineHeight    = 16
	glyphW        = 7  // basicfont.Face7x13 advance
	glyphAscent   = 11 // basicfont.Face7x13 ascent
	digitHalf     = 4  // half the height of a digit, to centre labels on ticks
	barGap        = 20
	barWidth      = 18
	minBarHeight  = 200
	tickLen       = 4
	maxTitleChars = 200
	linePlotW     = 800
	linePlotH     = 400
	lineInset     = 4
)

// Colours shared by the plots. Magenta marks non-finite values because none
// of the colour maps contains it.
var (
	colBackground = color.NRGBA{255, 255, 255, 255}
	colText       = color.NRGBA{0, 0, 0, 255}
	colFrame      = color.NRGBA{64, 64, 64, 255}
	colGrid       = color.NRGBA{225, 225, 225, 255}
	colLine       = color.NRGBA{31, 119, 180, 255}
	colNonFinite  = color.NRGBA{255, 0, 255, 255}
)

// WritePNG renders a as a PNG image at path (see Render for what is drawn).
// The bytes depend only on a and opt, so identical input gives identical
// files, which lets tests and caches compare images by hash. The file is
// written atomically (WriteAtomic).
func WritePNG(path string, a *Array, opt PNGOptions) error {
	img, err := Render(a, opt)
	if err != nil {
		return fmt.Errorf("gridio: write png %s: %w", path, err)
	}
	return WriteAtomic(path, func(w io.Writer) error {
		if err := png.Encode(w, img); err != nil {
			return fmt.Errorf("gridio: write png %s: %w", path, err)
		}
		return nil
	})
}

// EncodePNG renders a and writes it to w as PNG, as WritePNG does for a
// file; it suits HTTP handlers and in-memory use.
func EncodePNG(w io.Writer, a *Array, opt PNGOptions) error {
	img, err := Render(a, opt)
	if err != nil {
		return fmt.Errorf("gridio: encode png: %w", err)
	}
	if err := png.Encode(w, img); err != nil {
		return fmt.Errorf("gridio: encode png: %w", err)
	}
	return nil
}

// Render draws a into an image without encoding it:
//   - a 2-D array as a heat map, row 0 at the top and axes [y][x], with a
//     colour bar labelled at five values on the right;
//   - a 3-D array as the heat map of its middle slice along the slowest
//     axis, a[len/2, :, :], which the second title line names;
//   - a 1-D array as a line plot of value against index.
//
// Heat maps are scaled so that their long side is 400 to 1600 pixels:
// small grids are enlarged by an integer factor (nearest neighbour), large
// ones reduced by averaging square blocks. NaN and ±Inf cells are drawn
// magenta and left out of the data range; a reduced block containing any is
// drawn magenta too, so that a blow-up stays visible. A constant field is
// drawn in the middle colour of the scale.
func Render(a *Array, opt PNGOptions) (*image.NRGBA, error) {
	if err := a.Validate(); err != nil {
		return nil, err
	}
	lut, err := lookupColormap(opt.Colormap)
	if err != nil {
		return nil, err
	}
	for _, p := range []struct {
		name string
		v    *float64
	}{{"Min", opt.Min}, {"Max", opt.Max}} {
		if p.v != nil && (math.IsNaN(*p.v) || math.IsInf(*p.v, 0)) {
			return nil, fmt.Errorf("PNGOptions.%s is %v; it must be finite", p.name, *p.v)
		}
	}
	if opt.Min != nil && opt.Max != nil && *opt.Min >= *opt.Max {
		return nil, fmt.Errorf("PNGOptions.Min (%g) must be less than Max (%g)", *opt.Min, *opt.Max)
	}
	if a.Len() == 0 {
		return nil, fmt.Errorf("cannot draw an empty array of shape %s", shapeString(a.Shape))
	}
	desc := fmt.Sprintf("%s %s", a.DType, shapeString(a.Shape))
	switch len(a.Shape) {
	case 1:
		vals := a.Float64s()
		sc, err := newScale(vals, opt)
		if err != nil {
			return nil, err
		}
		return renderLine(vals, sc, titleLines(opt.Title, desc, sc)), nil
	case 2:
		ny, nx := a.Shape[0], a.Shape[1]
		vals := a.Float64s()
		sc, err := newScale(vals, opt)
		if err != nil {
			return nil, err
		}
		return renderHeat(vals, ny, nx, sc, lut, titleLines(opt.Title, desc, sc)), nil
	case 3:
		nz, ny, nx := a.Shape[0], a.Shape[1], a.Shape[2]
		k := nz / 2
		vals := a.float64Range(k*ny*nx, (k+1)*ny*nx)
		sc, err := newScale(vals, opt)
		if err != nil {
			return nil, err
		}
		desc = fmt.Sprintf("middle slice [%d, :, :] of %s", k, desc)
		return renderHeat(vals, ny, nx, sc, lut, titleLines(opt.Title, desc, sc)), nil
	}
	return nil, fmt.Errorf("cannot draw a %d-D array of shape %s; only 1-D, 2-D and 3-D arrays are supported", len(a.Shape), shapeString(a.Shape))
}

// scale maps data values to [0, 1] for colours or plot positions.
type scale struct {
	lo, hi     float64 // ends of the scale, lo < hi unless degenerate
	dataMin    float64 // finite data extremes, for the title
	dataMax    float64
	nonFinite  int  // number of NaN/Inf values
	allBad     bool // no finite value at all
	constValue bool // all finite values equal
}

// newScale finds the finite data range and combines it with the options.
func newScale(vals []float64, opt PNGOptions) (scale, error) {
	sc := scale{dataMin: math.Inf(1), dataMax: math.Inf(-1)}
	for _, v := range vals {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			sc.nonFinite++
			continue
		}
		sc.dataMin = min(sc.dataMin, v)
		sc.dataMax = max(sc.dataMax, v)
	}
	sc.allBad = sc.nonFinite == len(vals)
	sc.lo, sc.hi = sc.dataMin, sc.dataMax
	sc.constValue = !sc.allBad && sc.dataMin == sc.dataMax
	if opt.Min != nil {
		sc.lo = *opt.Min
	}
	if opt.Max != nil {
		sc.hi = *opt.Max
	}
	if sc.allBad {
		// No data to take a range from: use the options, or [0, 1].
		switch {
		case opt.Min == nil && opt.Max == nil:
			sc.lo, sc.hi = 0, 1
		case opt.Max == nil:
			sc.hi = sc.lo + 1
		case opt.Min == nil:
			sc.lo = sc.hi - 1
		}
	}
	switch {
	case sc.lo < sc.hi:
	case opt.Min != nil && opt.Max == nil:
		return sc, fmt.Errorf("PNGOptions.Min (%g) is not below the data maximum (%g); set Max as well", sc.lo, sc.hi)
	case opt.Max != nil && opt.Min == nil:
		return sc, fmt.Errorf("PNGOptions.Max (%g) is not above the data minimum (%g); set Min as well", sc.hi, sc.lo)
	default:
		// A constant field: widen the scale symmetrically so that the field
		// sits in the middle colour and the colour bar has distinct labels.
		d := math.Abs(sc.lo) * 0.1
		if d == 0 || math.IsInf(sc.lo+d, 0) || math.IsInf(sc.lo-d, 0) {
			d = 1
		}
		if sc.lo-d < sc.lo && sc.lo+d > sc.lo {
			sc.lo, sc.hi = sc.lo-d, sc.lo+d
		}
	}
	return sc, nil
}

// frac returns where v lies on the scale, clamped to [0, 1]; the halving
// keeps hi-lo from overflowing for scales spanning most of float64.
func (sc scale) frac(v float64) float64 {
	den := sc.hi/2 - sc.lo/2
	if !(den > 0) {
		return 0.5
	}
	t := (v/2 - sc.lo/2) / den
	if math.IsNaN(t) {
		// Only reachable for a block mean that overflowed to NaN; keep
		// the later float-to-int conversion well defined.
		return 0.5
	}
	return min(max(t, 0), 1)
}

// at returns the value at fraction f of the scale (f in [0, 1]). Explicit
// float64 conversions forbid fused multiply-add, so results, and hence
// labels and pixels, are the same on every architecture.
func (sc scale) at(f float64) float64 {
	v := float64(sc.lo*(1-f)) + float64(sc.hi*f)
	if math.Abs(v) < float64(1e-6*math.Abs(sc.lo))+float64(1e-6*math.Abs(sc.hi)) {
		// Far below the 4 significant digits shown: avoid labels like
		// 5.96e-08 where a float32 scale crosses zero.
		v = 0
	}
	return v
}

// lutIndex maps v to an index into a 256-entry colour table.
func (sc scale) lutIndex(v float64) uint8 {
	return uint8(float64(sc.frac(v)*255) + 0.5)
}

// tickLabels returns the five colour bar or axis labels, lowest first.
func (sc scale) tickLabels() []string {
	labels := make([]string, 5)
	for i := range labels {
		labels[i] = fmt.Sprintf("%.4g", sc.at(float64(i)/4))
	}
	return labels
}

// titleLines returns the user's title (if any) and an information line
// describing the data, both made safe for the ASCII-only bitmap font.
func titleLines(title, desc string, sc scale) []string {
	info := desc
	switch {
	case sc.allBad:
		info += ", no finite values"
	case sc.constValue:
		info += fmt.Sprintf(", constant %.4g", sc.dataMin)
	default:
		info += fmt.Sprintf(", data range [%.4g, %.4g]", sc.dataMin, sc.dataMax)
	}
	if sc.nonFinite > 0 && !sc.allBad {
		info += fmt.Sprintf(", %d NaN/Inf", sc.nonFinite)
	}
	var lines []string
	for _, l := range strings.Split(title, "\n") {
		if l = sanitizeText(l); l != "" {
			lines = append(lines, l)
		}
	}
	return append(lines, sanitizeText(info))
}

// sanitizeText replaces characters the bitmap font cannot draw with '?' and
// shortens over-long text, so that titles never silently lose characters or
// widen the image without bound.
func sanitizeText(s string) string {
	var b strings.Builder
	n := 0
	for _, r := range s {
		if n == maxTitleChars {
			return strings.TrimRight(b.String()[:b.Len()-3], " ") + "..."
		}
		if r == '\t' {
			r = ' '
		}
		if r < 0x20 || r > 0x7e {
			r = '?'
		}
		b.WriteRune(r)
		n++
	}
	return strings.TrimSpace(b.String())
}

// canvas wraps the output image with the few drawing primitives we need.
type canvas struct{ img *image.NRGBA }

// newCanvas returns a w×h canvas filled with the background colour.
func newCanvas(w, h int) canvas {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := 0; i < len(img.Pix); i += 4 {
		img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = colBackground.R, colBackground.G, colBackground.B, colBackground.A
	}
	return canvas{img}
}

// set colours one pixel, ignoring points outside the image so that callers
// need not clip.
func (c canvas) set(x, y int, col color.NRGBA) {
	if image.Pt(x, y).In(c.img.Rect) {
		c.img.SetNRGBA(x, y, col)
	}
}

// fill paints the part of r that lies inside the image.
func (c canvas) fill(r image.Rectangle, col color.NRGBA) {
	r = r.Intersect(c.img.Rect)
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			c.img.SetNRGBA(x, y, col)
		}
	}
}

// frame draws a one-pixel outline just outside r.
func (c canvas) frame(r image.Rectangle, col color.NRGBA) {
	r = r.Inset(-1)
	c.fill(image.Rect(r.Min.X, r.Min.Y, r.Max.X, r.Min.Y+1), col)
	c.fill(image.Rect(r.Min.X, r.Max.Y-1, r.Max.X, r.Max.Y), col)
	c.fill(image.Rect(r.Min.X, r.Min.Y, r.Min.X+1, r.Max.Y), col)
	c.fill(image.Rect(r.Max.X-1, r.Min.Y, r.Max.X, r.Max.Y), col)
}

// text draws s with its baseline at y, starting at x.
func (c canvas) text(x, y int, s string, col color.NRGBA) {
	d := font.Drawer{Dst: c.img, Src: image.NewUniform(col), Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(s)
}

// line draws a straight segment with Bresenham's algorithm.
func (c canvas) line(x0, y0, x1, y1 int, col color.NRGBA) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := sign(x1-x0), sign(y1-y0)
	e := dx + dy
	for {
		c.set(x0, y0, col)
		if x0 == x1 && y0 == y1 {
			return
		}
		e2 := 2 * e
		if e2 >= dy {
			e += dy
			x0 += sx
		}
		if e2 <= dx {
			e += dx
			y0 += sy
		}
	}
}

// abs returns |v|; it and sign serve the integer line drawing.
func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// sign returns -1, 0 or 1 according to the sign of v.
func sign(v int) int {
	switch {
	case v < 0:
		return -1
	case v > 0:
		return 1
	}
	return 0
}

// textWidth is the pixel width of s in the fixed-width font.
func textWidth(s string) int { return len(s) * glyphW }

// maxTextWidth is the width of the widest of ss.
func maxTextWidth(ss []string) int {
	w := 0
	for _, s := range ss {
		w = max(w, textWidth(s))
	}
	return w
}

// drawTitle draws the title lines at the top-left; titleHeight tells how
// much room they take.
func drawTitle(c canvas, lines []string) {
	for i, l := range lines {
		c.text(margin, margin+glyphAscent+i*lineHeight, l, colText)
	}
}

// titleHeight is the vertical space the title lines take, gap included.
func titleHeight(lines []string) int { return margin + len(lines)*lineHeight + 8 }

// nonFiniteCell marks display cells that contain NaN or Inf.
const nonFiniteCell = -1

// renderHeat draws a ny×nx field (row-major vals) as a heat map with a
// colour bar.
func renderHeat(vals []float64, ny, nx int, sc scale, lut *[256]color.NRGBA, title []string) *image.NRGBA {
	// Reduce large grids by averaging b×b blocks, then enlarge small ones.
	long := max(nx, ny)
	b := 1
	if long > maxLong {
		b = (long + maxLong - 1) / maxLong
	}
	dw, dh := (nx+b-1)/b, (ny+b-1)/b
	cells := make([]int16, dw*dh)
	for cy := 0; cy < dh; cy++ {
		for cx := 0; cx < dw; cx++ {
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
			if bad {
				cells[cy*dw+cx] = nonFiniteCell
			} else {
				cells[cy*dw+cx] = int16(sc.lutIndex(sum / float64(cnt)))
			}
		}
	}
	s := 1
	if long < minLong {
		s = (minLong + long - 1) / long
	}
	mapW, mapH := max(dw*s, minShort), max(dh*s, minShort)

	labels := sc.tickLabels()
	labelW := maxTextWidth(labels)
	barH := max(mapH, minBarHeight)
	nanKey := sc.nonFinite > 0
	keyH := 0
	if nanKey {
		keyH = 10 + lineHeight
		labelW = max(labelW, textWidth("NaN/Inf")+16)
	}
	top := titleHeight(title)
	mapRect := image.Rect(margin, top, margin+mapW, top+mapH)
	barX := mapRect.Max.X + barGap
	barRect := image.Rect(barX, top, barX+barWidth, top+barH)
	width := max(barRect.Max.X+tickLen+4+labelW+margin, 2*margin+maxTextWidth(title))
	height := top + max(mapH, barH+keyH) + margin + digitHalf

	c := newCanvas(width, height)
	drawTitle(c, title)
	for py := 0; py < mapH; py++ {
		cy := py * dh / mapH
		row := cells[cy*dw : (cy+1)*dw]
		for px := 0; px < mapW; px++ {
			col := colNonFinite
			if k := row[px*dw/mapW]; k != nonFiniteCell {
				col = lut[k]
			}
			c.img.SetNRGBA(mapRect.Min.X+px, mapRect.Min.Y+py, col)
		}
	}
	c.frame(mapRect, colFrame)

	// Colour bar: top row is the highest value.
	for py := 0; py < barH; py++ {
		k := 255 - (py*255+(barH-1)/2)/max(barH-1, 1)
		c.fill(image.Rect(barRect.Min.X, barRect.Min.Y+py, barRect.Max.X, barRect.Min.Y+py+1), lut[k])
	}
	c.frame(barRect, colFrame)
	for i, l := range labels {
		y := barRect.Max.Y - 1 - i*(barH-1)/4
		c.fill(image.Rect(barRect.Max.X, y, barRect.Max.X+tickLen, y+1), colFrame)
		c.text(barRect.Max.X+tickLen+4, y+digitHalf, l, colText)
	}
	if nanKey {
		y := barRect.Max.Y + 10
		c.fill(image.Rect(barRect.Min.X, y, barRect.Max.X, y+12), colNonFinite)
		c.text(barRect.Max.X+tickLen+4, y+10, "NaN/Inf", colText)
	}
	return c.img
}

// renderLine draws a 1-D array as a line plot of value against index, with
// a framed plot area, value ticks on the left and index ticks below.
// Non-finite values break the line and are marked by magenta ticks along
// the bottom edge.
func renderLine(vals []float64, sc scale, title []string) *image.NRGBA {
	n := len(vals)
	labels := sc.tickLabels()
	labelW := maxTextWidth(labels)
	top := titleHeight(title)
	left := margin + labelW + tickLen + 4
	plot := image.Rect(left, top, left+linePlotW, top+linePlotH)
	width := max(plot.Max.X+margin+textWidth(fmt.Sprint(n-1))/2, 2*margin+maxTextWidth(title))
	height := plot.Max.Y + 6 + lineHeight*2 + margin

	c := newCanvas(width, height)
	drawTitle(c, title)

	innerW, innerH := linePlotW-2*lineInset-1, linePlotH-2*lineInset-1
	yOf := func(i int) int { return plot.Max.Y - 1 - lineInset - i*innerH/4 }
	for i, l := range labels {
		y := yOf(i)
		c.fill(image.Rect(plot.Min.X, y, plot.Max.X, y+1), colGrid)
		c.fill(image.Rect(plot.Min.X-tickLen, y, plot.Min.X, y+1), colFrame)
		c.text(plot.Min.X-tickLen-4-textWidth(l), y+digitHalf, l, colText)
	}
	xOf := func(i int) int {
		if n == 1 {
			return plot.Min.X + lineInset + innerW/2
		}
		return plot.Min.X + lineInset + int(int64(i)*int64(innerW)/int64(n-1))
	}
	prevIdx := -1
	for k := 0; k <= 4; k++ {
		i := int(int64(k) * int64(n-1) / 4)
		if i == prevIdx {
			continue
		}
		prevIdx = i
		x := xOf(i)
		c.fill(image.Rect(x, plot.Max.Y, x+1, plot.Max.Y+tickLen), colFrame)
		l := fmt.Sprint(i)
		c.text(x-textWidth(l)/2, plot.Max.Y+tickLen+2+glyphAscent, l, colText)
	}
	axis := "index"
	c.text(plot.Min.X+(linePlotW-textWidth(axis))/2, plot.Max.Y+tickLen+2+glyphAscent+lineHeight, axis, colText)

	// Consecutive points in one pixel column only widen that column's
	// vertical span, drawn at the end; segments are drawn only between
	// columns. This keeps the cost near n + width*height for any n.
	type span struct{ lo, hi int }
	spans := make([]span, linePlotW)
	for i := range spans {
		spans[i] = span{math.MaxInt, math.MinInt}
	}
	widen := func(x, y int) {
		s := &spans[x-plot.Min.X]
		s.lo, s.hi = min(s.lo, y), max(s.hi, y)
	}
	havePrev, px, py := false, 0, 0
	for i, v := range vals {
		x := xOf(i)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			c.fill(image.Rect(x, plot.Max.Y-6, x+1, plot.Max.Y), colNonFinite)
			havePrev = false
			continue
		}
		y := plot.Max.Y - 1 - lineInset - int(float64(sc.frac(v)*float64(innerH))+0.5)
		widen(x, y)
		if havePrev {
			if x == px {
				widen(x, py)
			} else {
				c.line(px, py, x, y, colLine)
			}
		}
		havePrev, px, py = true, x, y
	}
	for i, s := range spans {
		for y := s.lo; y <= s.hi; y++ {
			c.set(plot.Min.X+i, y, colLine)
		}
	}
	c.frame(plot, colFrame)
	return c.img
}
