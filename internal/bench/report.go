package bench

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"tempest/internal/gridio"
)

// SchemaVersion is the version of the JSON report's layout.
const SchemaVersion = 1

// Report is everything `tempest bench` measured, in a deterministic order.
type Report struct {
	Schema      int       `json:"schemaVersion"`
	Tempest     string    `json:"tempestVersion"`
	CommandLine []string  `json:"commandLine"`
	Suite       string    `json:"suite"`
	Backend     string    `json:"backend"`
	Device      string    `json:"device"`
	Driver      string    `json:"driver"`
	Compiler    string    `json:"compiler"`
	Tune        string    `json:"tune"`
	FastMath    bool      `json:"fastMath"` // plans compiled with fast math (tempest bench --fastmath)
	Reps        int       `json:"reps"`
	SizeScale   float64   `json:"sizeScale"`
	Profile     *Profile  `json:"profile,omitempty"`
	Results     []Result  `json:"results"`
	Scaling     *Scaling  `json:"scaling,omitempty"`
	Surface     *Surface  `json:"surface,omitempty"`
	Anchors     []Anchor  `json:"anchors"`
	Sizes       []SizeRow `json:"sizes"`
	Notes       []string  `json:"notes,omitempty"`
}

// SizeRow documents the sizes of one suite.
type SizeRow struct {
	Suite string `json:"suite"`
	Sizes string `json:"sizes"`
}

// Profile is the part of the device profile the roofline uses.
type Profile struct {
	DRAMGBs      float64 `json:"dramCopyGBs"`
	FMAF32GFLOPs float64 `json:"fmaF32GFLOPs"`
	FMAF64GFLOPs float64 `json:"fmaF64GFLOPs"`
	Estimated    bool    `json:"estimated"`
}

// Peak is the FMA peak for an element type.
func (p *Profile) Peak(typ string) float64 {
	if typ == "f64" || typ == "i64" {
		return p.FMAF64GFLOPs
	}
	return p.FMAF32GFLOPs
}

// Result is one stencil at one size.
type Result struct {
	Suite        string    `json:"suite"`
	Stencil      string    `json:"stencil"`
	File         string    `json:"file"`
	Size         []int     `json:"size"` // with the rim, slowest axis first
	Type         string    `json:"type"`
	Steps        int       `json:"steps"`
	Plan         string    `json:"plan"`
	CellsPerStep float64   `json:"cellsPerStep"` // updated cells (rims excluded)
	FLOPsPerCell int       `json:"flopsPerCell"`
	BytesPerCell int       `json:"bytesPerCell"` // compulsory bytes read + written per cell and step
	Seconds      float64   `json:"seconds"`      // median of the timed runs
	Samples      []float64 `json:"samplesSeconds"`
	GCellsPerS   float64   `json:"gcellsPerSecond"`
	GFLOPPerS    float64   `json:"gflopPerSecond"`
	GBPerS       float64   `json:"effectiveGBPerSecond"` // bytes per cell x cells / time
	Intensity    float64   `json:"flopPerByte"`
	// BoundGCells is the single-step roofline: min(DRAM bw / bytes per cell, peak / FLOPs).
	// Temporal blocking can exceed it; RooflinePct is reported as is.
	BoundGCells   float64 `json:"rooflineGCellsPerSecond,omitempty"`
	RooflinePct   float64 `json:"rooflinePercent,omitempty"`
	NaivePlan     string  `json:"naivePlan,omitempty"`
	NaiveSeconds  float64 `json:"naiveSeconds,omitempty"`
	SpeedupNaive  float64 `json:"speedupOverNaive,omitempty"`
	Anchor        *Anchor `json:"anchor,omitempty"`
	SpeedupAnchor float64 `json:"speedupOverAnchor,omitempty"`
	Predicted     float64 `json:"predictedSeconds,omitempty"`
	Bottleneck    string  `json:"predictedBottleneck,omitempty"`
	Error         string  `json:"error,omitempty"`
}

// Point is one measured plan of a scaling series or tuning surface.
type Point struct {
	Plan       string  `json:"plan"`
	X, Y       int     `json:"-"`
	Seconds    float64 `json:"seconds"`
	GCellsPerS float64 `json:"gcellsPerSecond"`
	Error      string  `json:"error,omitempty"`
}

// Series is a named list of points over one parameter.
type Series struct {
	Name   string  `json:"name"`
	Param  string  `json:"param"`
	Values []int   `json:"values"`
	Points []Point `json:"points"`
}

// Scaling is GCells/s against temporal depth for one stencil.
type Scaling struct {
	Stencil string   `json:"stencil"`
	Size    []int    `json:"size"`
	Steps   int      `json:"steps"`
	Series  []Series `json:"series"`
}

// Surface is GCells/s over two plan parameters of one strategy for one stencil.
type Surface struct {
	Stencil  string      `json:"stencil"`
	Strategy string      `json:"strategy"`
	Size     []int       `json:"size"`
	Steps    int         `json:"steps"`
	XParam   string      `json:"xParam"`
	YParam   string      `json:"yParam"`
	XValues  []int       `json:"xValues"`
	YValues  []int       `json:"yValues"`
	GCells   [][]float64 `json:"gcellsPerSecond"` // [y][x]; 0: failed or not applicable
	Plans    [][]string  `json:"plans"`
}

// SizeText writes a size as 16386x16386.
func SizeText(shape []int) string {
	parts := make([]string, len(shape))
	for i, n := range shape {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, "x")
}

// g3 writes a ratio with three significant digits ("-" for none).
func g3(x float64) string {
	if x == 0 {
		return "-"
	}
	return strconv.FormatFloat(x, 'g', 3, 64)
}

func f(x float64, prec int) string {
	if x == 0 {
		return "-"
	}
	return strconv.FormatFloat(x, 'f', prec, 64)
}

// WriteTable writes the terminal table.
func (r *Report) WriteTable(w io.Writer) {
	mathMode := "exact math"
	if r.FastMath {
		mathMode = "fast math"
	}
	fmt.Fprintf(w, "tempest %s bench --suite %s on %s (%s), %s, reps %d\n", r.Tempest, r.Suite, r.Device, r.Backend, mathMode, r.Reps)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "suite\tstencil\tsize\ttype\tsteps\tplan\tms\tGCells/s\tGFLOP/s\tGB/s\t% roof\tx naive\tx anchor\tpred ms\t")
	for _, x := range r.Results {
		if x.Error != "" {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\tfailed: %s\t\t\t\t\t\t\t\t\t\n", x.Suite, x.Stencil, SizeText(x.Size), x.Type, x.Steps, firstLine(x.Error))
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", x.Suite, x.Stencil, SizeText(x.Size), x.Type, x.Steps, x.Plan,
			f(x.Seconds*1e3, 2), f(x.GCellsPerS, 2), f(x.GFLOPPerS, 1), f(x.GBPerS, 1), f(x.RooflinePct, 0), g3(x.SpeedupNaive),
			g3(x.SpeedupAnchor), f(x.Predicted*1e3, 2))
	}
	tw.Flush()
	for _, n := range r.Notes {
		fmt.Fprintln(w, "note:", n)
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// CSVHeader is the first row of the CSV report.
var CSVHeader = []string{"suite", "stencil", "file", "size", "type", "steps", "plan", "seconds", "gcells_per_s", "gflop_per_s",
	"effective_gb_per_s", "flops_per_cell", "bytes_per_cell", "flop_per_byte", "roofline_gcells_per_s", "roofline_percent",
	"naive_plan", "naive_seconds", "speedup_over_naive", "anchor_gcells_per_s", "speedup_over_anchor", "predicted_seconds",
	"predicted_bottleneck", "error"}

// WriteCSV writes one row per result.
func (r *Report) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVHeader); err != nil {
		return err
	}
	g := func(x float64) string { return strconv.FormatFloat(x, 'g', 6, 64) }
	for _, x := range r.Results {
		anchor := ""
		if x.Anchor != nil {
			anchor = g(x.Anchor.GCellsPerS)
		}
		row := []string{x.Suite, x.Stencil, x.File, SizeText(x.Size), x.Type, strconv.Itoa(x.Steps), x.Plan, g(x.Seconds), g(x.GCellsPerS),
			g(x.GFLOPPerS), g(x.GBPerS), strconv.Itoa(x.FLOPsPerCell), strconv.Itoa(x.BytesPerCell), g(x.Intensity), g(x.BoundGCells),
			g(x.RooflinePct), x.NaivePlan, g(x.NaiveSeconds), g(x.SpeedupNaive), anchor, g(x.SpeedupAnchor), g(x.Predicted), x.Bottleneck, x.Error}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteFile writes path through fn atomically (gridio.WriteAtomic), so that an interrupted
// report never leaves half a file.
func WriteFile(path string, fn func(io.Writer) error) error {
	return gridio.WriteAtomic(path, fn)
}
