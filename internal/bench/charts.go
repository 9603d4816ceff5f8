package bench

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html/template"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"tempest/internal/gridio"
)

// Chart is one rendered chart.
type Chart struct {
	Name  string // roofline, scaling, model, surface
	Title string
	PNG   []byte
	Note  string // what is missing, when the chart could not be drawn fully
}

const chartW, chartH = 9 * vg.Inch, 6 * vg.Inch

var seriesColors = []color.Color{
	color.RGBA{R: 31, G: 119, B: 180, A: 255}, color.RGBA{R: 214, G: 39, B: 40, A: 255}, color.RGBA{R: 44, G: 160, B: 44, A: 255},
	color.RGBA{R: 148, G: 103, B: 189, A: 255}, color.RGBA{R: 255, G: 127, B: 14, A: 255}, color.RGBA{R: 140, G: 86, B: 75, A: 255},
}

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(14)
	p.X.Label.Text, p.Y.Label.Text = x, y
	p.X.Label.TextStyle.Font.Size = vg.Points(12)
	p.Y.Label.TextStyle.Font.Size = vg.Points(12)
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.TextStyle.Font.Size = vg.Points(11)
	p.Legend.Padding = vg.Points(3)
	p.Add(plotter.NewGrid())
	return p
}

func render(p *plot.Plot) ([]byte, error) {
	wt, err := p.WriterTo(chartW, chartH, "png")
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if _, err := wt.WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// logAxes puts both axes on log scales with power-of-ten ticks.
func logAxes(p *plot.Plot) {
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
}

// decadeRange widens [lo, hi] to whole powers of ten.
func decadeRange(lo, hi float64) (float64, float64) {
	if lo <= 0 || hi <= 0 || math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		return 0.1, 10
	}
	return math.Pow(10, math.Floor(math.Log10(lo))), math.Pow(10, math.Ceil(math.Log10(hi)+1e-9))
}

func addLabels(p *plot.Plot, xys plotter.XYs, names []string) error {
	if len(xys) == 0 {
		return nil
	}
	l, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: names})
	if err != nil {
		return err
	}
	for i := range l.TextStyle {
		l.TextStyle[i].Font.Size = vg.Points(9)
		l.TextStyle[i].XAlign = draw.XLeft
		l.Offset = vg.Point{X: vg.Points(4), Y: vg.Points(2)}
	}
	p.Add(l)
	return nil
}

// Roofline draws every measured stencil at its arithmetic intensity with the DRAM and compute
// roofs of the profile (f32 and, when some result is f64, f64).
func (r *Report) Roofline() (*Chart, error) {
	c := &Chart{Name: "roofline", Title: "Roofline"}
	p := newPlot(fmt.Sprintf("Roofline: %s on %s", r.Suite, r.Device), "arithmetic intensity (FLOP/byte, compulsory DRAM traffic)", "performance (GFLOP/s)")
	logAxes(p)
	bySuite := map[string]plotter.XYs{}
	var suites []string
	var all plotter.XYs
	var names []string
	xlo, xhi, ylo, yhi := math.Inf(1), 0.0, math.Inf(1), 0.0
	f64 := false
	for _, x := range r.Results {
		if x.Error != "" || x.Intensity <= 0 || x.GFLOPPerS <= 0 {
			continue
		}
		if _, ok := bySuite[x.Suite]; !ok {
			suites = append(suites, x.Suite)
		}
		pt := plotter.XY{X: x.Intensity, Y: x.GFLOPPerS}
		bySuite[x.Suite] = append(bySuite[x.Suite], pt)
		all = append(all, pt)
		name := x.Stencil
		if x.Suite == "schafer-fey" {
			name += "@" + strconv.Itoa(x.Size[0])
		}
		names = append(names, name)
		xlo, xhi, ylo, yhi = math.Min(xlo, pt.X), math.Max(xhi, pt.X), math.Min(ylo, pt.Y), math.Max(yhi, pt.Y)
		f64 = f64 || x.Type == "f64"
	}
	if len(all) == 0 {
		c.Note = "no successful measurement to plot"
		xlo, xhi, ylo, yhi = 0.1, 10, 1, 100
	}
	if pr := r.Profile; pr != nil && pr.DRAMGBs > 0 && pr.FMAF32GFLOPs > 0 {
		// Show the ridge point, where the DRAM roof meets the compute roof.
		xhi = math.Max(xhi, 3*pr.FMAF32GFLOPs/pr.DRAMGBs)
	}
	xlo, xhi = decadeRange(xlo/2, xhi*2)
	if pr := r.Profile; pr != nil && pr.DRAMGBs > 0 {
		roofs := []struct {
			name string
			peak float64
		}{{"f32", pr.FMAF32GFLOPs}}
		if f64 {
			roofs = append(roofs, struct {
				name string
				peak float64
			}{"f64", pr.FMAF64GFLOPs})
		}
		for i, rf := range roofs {
			if rf.peak <= 0 {
				continue
			}
			var line plotter.XYs
			for k := 0; k <= 200; k++ {
				xx := xlo * math.Pow(xhi/xlo, float64(k)/200)
				line = append(line, plotter.XY{X: xx, Y: math.Min(pr.DRAMGBs*xx, rf.peak)})
			}
			l, err := plotter.NewLine(line)
			if err != nil {
				return nil, err
			}
			l.Color = color.Gray{Y: uint8(60 + 80*i)}
			l.Width = vg.Points(2)
			if i > 0 {
				l.Dashes = []vg.Length{vg.Points(6), vg.Points(4)}
			}
			p.Add(l)
			p.Legend.Add(fmt.Sprintf("roof %s: DRAM %.0f GB/s, FMA peak %.0f GFLOP/s", rf.name, pr.DRAMGBs, rf.peak), l)
			ylo, yhi = math.Min(ylo, pr.DRAMGBs*xlo), math.Max(yhi, rf.peak)
		}
		if pr.Estimated {
			c.Note = "roofs from estimated device rates (run `tempest probe` for measured ones)"
		}
	} else {
		c.Note = "no device profile for this backend: no roofs"
	}
	for i, s := range suites {
		sc, err := plotter.NewScatter(bySuite[s])
		if err != nil {
			return nil, err
		}
		sc.GlyphStyle.Color = seriesColors[i%len(seriesColors)]
		sc.GlyphStyle.Radius = vg.Points(4)
		sc.GlyphStyle.Shape = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.TriangleGlyph{}, draw.SquareGlyph{}, draw.PyramidGlyph{}, draw.RingGlyph{}}[i%5]
		p.Add(sc)
		p.Legend.Add("suite "+s, sc)
	}
	if err := addLabels(p, all, names); err != nil {
		return nil, err
	}
	p.X.Min, p.X.Max = xlo, xhi
	p.Y.Min, p.Y.Max = decadeRange(ylo/2, yhi*8) // headroom for the legend
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(60), vg.Points(-10)
	b, err := render(p)
	c.PNG = b
	return c, err
}

// ScalingChart draws GCells/s against temporal depth.
func (r *Report) ScalingChart() (*Chart, error) {
	c := &Chart{Name: "scaling", Title: "Temporal blocking"}
	sc := r.Scaling
	if sc == nil {
		return nil, nil
	}
	p := newPlot(fmt.Sprintf("Temporal depth: %s, %s, %d steps", sc.Stencil, SizeText(sc.Size), sc.Steps),
		"time steps per launch (n5d bt, pyramid ph)", "throughput (GCells/s)")
	p.X.Min, p.Y.Min = 0, 0
	ticks := []plot.Tick{}
	maxv := 1
	n := 0
	ymax := 0.0
	for i, s := range sc.Series {
		var xys plotter.XYs
		for k, pt := range s.Points {
			if pt.GCellsPerS > 0 {
				xys = append(xys, plotter.XY{X: float64(s.Values[k]), Y: pt.GCellsPerS})
				ymax = math.Max(ymax, pt.GCellsPerS)
			}
			maxv = max(maxv, s.Values[k])
		}
		if len(xys) == 0 {
			continue
		}
		n++
		l, pts, err := plotter.NewLinePoints(xys)
		if err != nil {
			return nil, err
		}
		col := seriesColors[i%len(seriesColors)]
		l.Color, pts.Color = col, col
		l.Width = vg.Points(2)
		pts.Radius = vg.Points(4)
		p.Add(l, pts)
		p.Legend.Add(fmt.Sprintf("%s (%s)", s.Name, s.Param), l, pts)
	}
	for v := 1; v <= maxv; v++ {
		ticks = append(ticks, plot.Tick{Value: float64(v), Label: strconv.Itoa(v)})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.X.Max = float64(maxv) + 0.5
	p.X.Min = 0.5
	p.Y.Max = ymax * 1.25 // headroom for the legend
	p.Legend.Left = false
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(-10), vg.Points(-30)
	if n == 0 {
		c.Note = "no temporal plan could be measured"
	}
	b, err := render(p)
	c.PNG = b
	return c, err
}

// ModelChart draws predicted against measured time, log-log.
func (r *Report) ModelChart() (*Chart, error) {
	c := &Chart{Name: "model", Title: "Model against measurement"}
	var xys plotter.XYs
	var names []string
	lo, hi := math.Inf(1), 0.0
	for _, x := range r.Results {
		if x.Error != "" || x.Predicted <= 0 || x.Seconds <= 0 {
			continue
		}
		xys = append(xys, plotter.XY{X: x.Predicted * 1e3, Y: x.Seconds * 1e3})
		names = append(names, x.Stencil)
		lo, hi = math.Min(lo, math.Min(x.Predicted, x.Seconds)*1e3), math.Max(hi, math.Max(x.Predicted, x.Seconds)*1e3)
	}
	if len(xys) == 0 {
		return nil, nil
	}
	p := newPlot(fmt.Sprintf("Performance model: predicted vs measured time (%s on %s)", r.Suite, r.Device),
		"predicted time (ms, internal/model)", "measured time (ms, median)")
	logAxes(p)
	lo, hi = decadeRange(lo/1.5, hi*1.5)
	diag, err := plotter.NewLine(plotter.XYs{{X: lo, Y: lo}, {X: hi, Y: hi}})
	if err != nil {
		return nil, err
	}
	diag.Color = color.Gray{Y: 100}
	diag.Dashes = []vg.Length{vg.Points(6), vg.Points(4)}
	p.Add(diag)
	p.Legend.Add("measured = predicted", diag)
	sc, err := plotter.NewScatter(xys)
	if err != nil {
		return nil, err
	}
	sc.GlyphStyle.Color, sc.GlyphStyle.Radius = seriesColors[0], vg.Points(4)
	p.Add(sc)
	p.Legend.Add("stencil (chosen plan)", sc)
	if err := addLabels(p, xys, names); err != nil {
		return nil, err
	}
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = lo, hi, lo, hi
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(60), vg.Points(-10)
	b, err := render(p)
	c.PNG = b
	return c, err
}

type surfaceGrid struct{ s *Surface }

func (g surfaceGrid) Dims() (int, int) { return len(g.s.XValues), len(g.s.YValues) }
func (g surfaceGrid) Z(c, r int) float64 {
	if v := g.s.GCells[r][c]; v > 0 {
		return v
	}
	return math.NaN()
}
func (g surfaceGrid) X(c int) float64 { return float64(c) }
func (g surfaceGrid) Y(r int) float64 { return float64(r) }

// SurfaceChart draws the tuning surface as a heat map with the values written in the cells.
func (r *Report) SurfaceChart() (*Chart, error) {
	s := r.Surface
	if s == nil || len(s.XValues) == 0 || len(s.YValues) == 0 {
		return nil, nil
	}
	c := &Chart{Name: "surface", Title: "Tuning surface"}
	p := newPlot(fmt.Sprintf("Tuning surface: %s %s, %s, %d steps (GCells/s, red fastest; n/a: not applicable)", s.Stencil, s.Strategy, SizeText(s.Size), s.Steps),
		s.XParam+" (thread-block width along x)", s.YParam+" (time steps per launch)")
	lo, hi := math.Inf(1), 0.0
	var xys plotter.XYs
	var labels []string
	for y := range s.YValues {
		for x := range s.XValues {
			xys = append(xys, plotter.XY{X: float64(x), Y: float64(y)})
			if v := s.GCells[y][x]; v > 0 {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
				labels = append(labels, strconv.FormatFloat(v, 'g', 3, 64))
			} else {
				labels = append(labels, "n/a")
			}
		}
	}
	if hi == 0 {
		c.Note = "no plan of the surface could be measured"
		lo, hi = 0, 1
	}
	if hi <= lo {
		hi = lo + 1
	}
	cm := moreland.SmoothBlueRed()
	cm.SetMin(0)
	cm.SetMax(1)
	hm := plotter.NewHeatMap(surfaceGrid{s}, cm.Palette(64))
	hm.Min, hm.Max = lo, hi
	hm.NaN = color.White
	p.Add(hm)
	if len(xys) > 0 {
		l, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: labels})
		if err != nil {
			return nil, err
		}
		for i := range l.TextStyle {
			l.TextStyle[i].Font.Size = vg.Points(10)
			l.TextStyle[i].XAlign, l.TextStyle[i].YAlign = draw.XCenter, draw.YCenter
			l.TextStyle[i].Color = color.Black
		}
		p.Add(l)
	}
	var xt, yt []plot.Tick
	for i, v := range s.XValues {
		xt = append(xt, plot.Tick{Value: float64(i), Label: strconv.Itoa(v)})
	}
	for i, v := range s.YValues {
		yt = append(yt, plot.Tick{Value: float64(i), Label: strconv.Itoa(v)})
	}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.ConstantTicks(xt), plot.ConstantTicks(yt)
	p.X.Min, p.X.Max = -0.5, float64(len(s.XValues))-0.5
	p.Y.Min, p.Y.Max = -0.5, float64(len(s.YValues))-0.5
	b, err := render(p)
	c.PNG = b
	return c, err
}

// Charts renders every chart the report has data for, in a fixed order.
func (r *Report) Charts() ([]*Chart, error) {
	var out []*Chart
	for _, fn := range []func() (*Chart, error){r.Roofline, r.ScalingChart, r.ModelChart, r.SurfaceChart} {
		c, err := fn()
		if err != nil {
			return nil, err
		}
		if c != nil {
			out = append(out, c)
		}
	}
	return out, nil
}

// WriteHTML writes the self-contained HTML report to path and every chart as a PNG beside it
// (out.html: out_roofline.png, out_scaling.png, ...). It returns the files written.
func (r *Report) WriteHTML(path string) ([]string, error) {
	charts, err := r.Charts()
	if err != nil {
		return nil, err
	}
	base := strings.TrimSuffix(path, filepath.Ext(path))
	var files []string
	type img struct {
		Title, Note, File string
		URI               template.URL
	}
	var imgs []img
	for _, c := range charts {
		file := base + "_" + c.Name + ".png"
		if err := gridio.WriteFileAtomic(file, c.PNG); err != nil {
			return files, err
		}
		files = append(files, file)
		imgs = append(imgs, img{Title: c.Title, Note: c.Note, File: filepath.Base(file),
			URI: template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(c.PNG))})
	}
	var tbl bytes.Buffer
	r.WriteTable(&tbl)
	err = WriteFile(path, func(w io.Writer) error {
		return htmlPage.Execute(w, map[string]any{"R": r, "Charts": imgs, "Table": tbl.String()})
	})
	if err != nil {
		return files, err
	}
	return append([]string{path}, files...), nil
}

var htmlPage = template.Must(template.New("report").Funcs(template.FuncMap{
	"size": SizeText,
	"f":    func(x float64, prec int) string { return f(x, prec) },
	"g3":   g3,
	"sh":   func(u *SharedUse) [4]string { return u.cells() },
	"ms":   func(x float64) string { return f(x*1e3, 2) },
	"join": func(s []string) string { return strings.Join(s, " ") },
	"sorted": func(xs []Result) []Result {
		out := append([]Result(nil), xs...)
		sort.SliceStable(out, func(i, j int) bool { return out[i].Suite < out[j].Suite })
		return out
	},
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Tempest bench: {{.R.Suite}} on {{.R.Device}}</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em;max-width:75em}
table{border-collapse:collapse;font-size:0.85em}td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}
th{background:#eee}td.l,th.l{text-align:left}img{max-width:100%;border:1px solid #ddd}
.note{color:#a40}
</style></head><body>
<h1>Tempest bench: suite {{.R.Suite}}</h1>
<p>Tempest {{.R.Tempest}}; device {{.R.Device}} ({{.R.Backend}}; driver {{.R.Driver}}; compiler {{.R.Compiler}});
command <code>{{join .R.CommandLine}}</code>; tune {{.R.Tune}}; {{if .R.FastMath}}fast math{{else}}exact math{{end}}; median of {{.R.Reps}} timed runs after a warm-up; size scale {{.R.SizeScale}}.</p>
{{with .R.Profile}}<p>Device profile: DRAM copy {{f .DRAMGBs 0}} GB/s, FMA peak f32 {{f .FMAF32GFLOPs 0}} GFLOP/s, f64 {{f .FMAF64GFLOPs 0}} GFLOP/s{{if .Estimated}} (estimated){{end}}; nominal peak f32 {{f .NominalF32GFLOPs 0}} GFLOP/s, f64 {{f .NominalF64GFLOPs 0}} GFLOP/s.</p>{{end}}
<h2>Results</h2>
<table><tr><th class="l">suite</th><th class="l">stencil</th><th>size</th><th>type</th><th>steps</th><th class="l">plan</th><th>ms</th><th>GCells/s</th><th>GFLOP/s</th><th>GB/s</th><th>FLOP/B</th><th>% roofline</th><th>% peak</th><th>smem B/block</th><th>% block limit</th><th>blocks/SM</th><th>% SM smem</th><th>x naive</th><th>anchor GCells/s</th><th>x anchor</th><th>predicted ms</th></tr>
{{range .R.Results}}<tr><td class="l">{{.Suite}}</td><td class="l">{{.Stencil}}</td><td>{{size .Size}}</td><td>{{.Type}}</td><td>{{.Steps}}</td>{{if .Error}}<td class="l note" colspan="16">failed: {{.Error}}</td>{{else}}<td class="l">{{.Plan}}</td><td>{{ms .Seconds}}</td><td>{{f .GCellsPerS 2}}</td><td>{{f .GFLOPPerS 1}}</td><td>{{f .GBPerS 1}}</td><td>{{f .Intensity 2}}</td><td>{{f .RooflinePct 0}}</td><td>{{f .PeakPct 1}}</td>{{range sh .Shared}}<td>{{.}}</td>{{end}}<td>{{g3 .SpeedupNaive}}</td><td>{{if .Anchor}}{{f .Anchor.GCellsPerS 0}}{{else}}-{{end}}</td><td>{{g3 .SpeedupAnchor}}</td><td>{{ms .Predicted}}</td>{{end}}</tr>
{{end}}</table>
<p>GCells/s: updated cells (fixed rims excluded) x steps / time. GB/s: compulsory bytes per cell x cells / time. % roofline: of min(DRAM bandwidth / bytes per cell, FMA peak / FLOPs per cell), the single-step bound, which temporal blocking can exceed.
% peak: GFLOP/s of the device's nominal FP32 or FP64 peak (by the program's type: multiprocessors x FMA lanes x 2 x clock; "-" where unknown: OpenCL, the CPU engine, integer programs).
Shared memory: the plan's kernel that takes the most per block, against the per-block limit (opt-in maximum) and, times its resident blocks, against a multiprocessor's ("-" where unknown).
Anchors: {{range .R.Anchors}}{{end}}AN5D's generated code on an H100 (docs/benchmarks.md).</p>
<h2>Charts</h2>
{{range .Charts}}<h3>{{.Title}}</h3>{{if .Note}}<p class="note">{{.Note}}</p>{{end}}<p><img alt="{{.Title}}" src="{{.URI}}"><br><small>{{.File}}</small></p>
{{end}}
<h2>Sizes</h2><table><tr><th class="l">suite</th><th class="l">sizes</th></tr>{{range .R.Sizes}}<tr><td class="l">{{.Suite}}</td><td class="l">{{.Sizes}}</td></tr>{{end}}</table>
{{range .R.Notes}}<p class="note">{{.}}</p>{{end}}
</body></html>
`))
