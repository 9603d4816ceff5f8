package gridio

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Series is values observed over steps: Names[i] is column i of every row of Values, taken
// after Steps[row] steps.
type Series struct {
	Title  string
	Names  []string
	Steps  []int
	Values [][]float64
}

// CSV renders the series with a header line (step, then the names) and a row per
// observation; numbers are printed in the shortest form that reads back as the same float64.
func (s *Series) CSV() []byte {
	var b bytes.Buffer
	b.WriteString("step")
	for _, n := range s.Names {
		b.WriteString("," + n)
	}
	b.WriteString("\n")
	for r, step := range s.Steps {
		b.WriteString(strconv.Itoa(step))
		for _, v := range s.Values[r] {
			b.WriteString("," + strconv.FormatFloat(v, 'g', -1, 64))
		}
		b.WriteString("\n")
	}
	return b.Bytes()
}

// PNG draws each named value over the steps in a panel of its own (they have their own
// units), one above the other; a value that stays positive and spans more than three decades
// (a residual falling towards a tolerance) gets a logarithmic axis.
func (s *Series) PNG() ([]byte, error) {
	if len(s.Names) == 0 || len(s.Steps) == 0 {
		return nil, fmt.Errorf("no observations to plot")
	}
	const panelH = 2.6 * vg.Inch
	w, h := 9*vg.Inch, panelH*vg.Length(len(s.Names))+0.3*vg.Inch
	plots := make([][]*plot.Plot, len(s.Names))
	for i, name := range s.Names {
		p := plot.New()
		if i == 0 && s.Title != "" {
			p.Title.Text = s.Title
		}
		p.X.Label.Text, p.Y.Label.Text = "step", name
		p.Add(plotter.NewGrid())
		p.X.Tick.Marker = stepTicks{}
		xys := make(plotter.XYs, 0, len(s.Steps))
		lo, hi, neg := math.Inf(1), math.Inf(-1), false
		for r, step := range s.Steps {
			v := s.Values[r][i]
			if math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			xys = append(xys, plotter.XY{X: float64(step), Y: v})
			if v > 0 {
				lo, hi = min(lo, v), max(hi, v)
			}
			neg = neg || v < 0
		}
		if !neg && lo > 0 && hi/lo > 1e3 {
			// Zeros (a difference before the first step) have no place on a log axis.
			pos := xys[:0]
			for _, xy := range xys {
				if xy.Y > 0 {
					pos = append(pos, xy)
				}
			}
			xys = pos
			p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
		}
		if len(xys) > 0 {
			line, err := plotter.NewLine(xys)
			if err != nil {
				return nil, fmt.Errorf("plotting %s: %w", name, err)
			}
			line.Color = color.RGBA{R: 31, G: 119, B: 180, A: 255}
			line.Width = vg.Points(1.5)
			p.Add(line)
		}
		// Every panel spans all the steps, so that they line up.
		p.X.Min, p.X.Max = float64(s.Steps[0]), float64(s.Steps[len(s.Steps)-1])
		plots[i] = []*plot.Plot{p}
	}
	img := vgimg.New(w, h)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: len(s.Names), Cols: 1, PadTop: vg.Points(6), PadBottom: vg.Points(6), PadLeft: vg.Points(6), PadRight: vg.Points(12), PadY: vg.Points(10)}
	canvases := plot.Align(plots, tiles, dc)
	for i := range plots {
		plots[i][0].Draw(canvases[i][0])
	}
	var b bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// ParseSeriesCSV reads what CSV writes.
func ParseSeriesCSV(text string) (*Series, error) {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	head := strings.Split(lines[0], ",")
	if len(head) < 1 || head[0] != "step" {
		return nil, fmt.Errorf("observables CSV: the header must start with step, found %q", lines[0])
	}
	s := &Series{Names: head[1:]}
	for i, line := range lines[1:] {
		f := strings.Split(line, ",")
		if len(f) != len(head) {
			return nil, fmt.Errorf("observables CSV line %d: %d fields, the header has %d", i+2, len(f), len(head))
		}
		step, err := strconv.Atoi(f[0])
		if err != nil {
			return nil, fmt.Errorf("observables CSV line %d: step %q", i+2, f[0])
		}
		row := make([]float64, len(f)-1)
		for j, x := range f[1:] {
			if row[j], err = strconv.ParseFloat(x, 64); err != nil {
				return nil, fmt.Errorf("observables CSV line %d: %q is not a number", i+2, x)
			}
		}
		s.Steps = append(s.Steps, step)
		s.Values = append(s.Values, row)
	}
	return s, nil
}

// stepTicks are the default ticks labelled as whole steps.
type stepTicks struct{}

func (stepTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = strconv.FormatFloat(ts[i].Value, 'f', -1, 64)
		}
	}
	return ts
}
