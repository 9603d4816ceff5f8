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
	FastMath    bool      `json:"fastMath"`       // plans compiled with fast math (tempest bench --fastmath)
	Type        string    `json:"type,omitempty"` // --type: the element type of every program ("": each suite's)
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
	// NominalF32GFLOPs and NominalF64GFLOPs are the data-sheet peaks (probe.NominalPeakGFLOPs)
	// that "% peak" is taken of, above the measured FMA rates; 0 where unknown.
	NominalF32GFLOPs float64 `json:"nominalF32GFLOPs,omitempty"`
	NominalF64GFLOPs float64 `json:"nominalF64GFLOPs,omitempty"`
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
	// PeakGFLOPs is the device's nominal FP32 or FP64 peak, by the program's type (0: unknown,
	// as for OpenCL devices, the CPU engine and integer programs), and PeakPct the share of
	// it that GFLOPPerS reaches.
	PeakGFLOPs float64 `json:"peakGflopPerSecond,omitempty"`
	PeakPct    float64 `json:"peakPercent,omitempty"`
	// Shared is how close the plan comes to the shared-memory limits (nil: no plan, the CPU
	// engine).
	Shared *SharedUse `json:"sharedMemory,omitempty"`
	Error  string     `json:"error,omitempty"`
}

// SharedUse is the shared memory of the plan's kernel that takes the most per block, against
// the device's per-block limit (the opt-in maximum where there is one) and, with the blocks
// of it that reside on one multiprocessor, against the multiprocessor's shared memory (the
// bytes the kernel asks for, without the 1 KiB per block CUDA reserves besides). A percentage
// is nil where its limit or the resident blocks are unknown (OpenCL reports no registers).
type SharedUse struct {
	Kernel        string   `json:"kernel"`
	BytesPerBlock int      `json:"bytesPerBlock"`
	BlockLimit    int      `json:"blockLimitBytes,omitempty"`
	BlockPercent  *float64 `json:"blockPercent,omitempty"`
	BlocksPerSM   int      `json:"blocksPerSM,omitempty"`
	SMLimit       int      `json:"smLimitBytes,omitempty"`
	SMPercent     *float64 `json:"smPercent,omitempty"`
}

// NewSharedUse fills in the percentages from a kernel's bytes per block, the per-block
// limit, the resident blocks and the multiprocessor's shared memory (0: unknown).
func NewSharedUse(kernel string, bytes, blockLimit, blocks, smLimit int) *SharedUse {
	u := &SharedUse{Kernel: kernel, BytesPerBlock: bytes, BlockLimit: max(blockLimit, 0), BlocksPerSM: max(blocks, 0), SMLimit: max(smLimit, 0)}
	if u.BlockLimit > 0 {
		p := 100 * float64(bytes) / float64(u.BlockLimit)
		u.BlockPercent = &p
	}
	if u.BlocksPerSM > 0 && u.SMLimit > 0 {
		p := 100 * float64(bytes*u.BlocksPerSM) / float64(u.SMLimit)
		u.SMPercent = &p
	}
	return u
}

// cells are the table's shared-memory cells: bytes per block, % of the block limit,
// resident blocks per multiprocessor, % of the multiprocessor's ("-" where unknown).
func (u *SharedUse) cells() [4]string {
	if u == nil {
		return [4]string{"-", "-", "-", "-"}
	}
	c := [4]string{strconv.Itoa(u.BytesPerBlock), pct(u.BlockPercent), "-", pct(u.SMPercent)}
	if u.BlocksPerSM > 0 {
		c[2] = strconv.Itoa(u.BlocksPerSM)
	}
	return c
}

// pct writes a known percentage with one decimal (a real 0 as "0.0"), "-" for unknown.
func pct(p *float64) string {
	if p == nil {
		return "-"
	}
	return strconv.FormatFloat(*p, 'f', 1, 64)
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
	typ := ""
	if r.Type != "" {
		typ = ", type " + r.Type
	}
	fmt.Fprintf(w, "tempest %s bench --suite %s on %s (%s), %s%s, reps %d\n", r.Tempest, r.Suite, r.Device, r.Backend, mathMode, typ, r.Reps)
	if p := r.Profile; p != nil && (p.NominalF32GFLOPs > 0 || p.NominalF64GFLOPs > 0) {
		fmt.Fprintf(w, "nominal peak (%% peak): f32 %s GFLOP/s, f64 %s GFLOP/s\n", f(p.NominalF32GFLOPs, 0), f(p.NominalF64GFLOPs, 0))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "suite\tstencil\tsize\ttype\tsteps\tplan\tms\tGCells/s\tGFLOP/s\tGB/s\t% roof\t% peak\tsmem B\t% blk\tblk/SM\t% SM\tx naive\tx anchor\tpred ms\t")
	for _, x := range r.Results {
		if x.Error != "" {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\tfailed: %s\t\t\t\t\t\t\t\t\t\t\t\t\t\t\n", x.Suite, x.Stencil, SizeText(x.Size), x.Type, x.Steps, firstLine(x.Error))
			continue
		}
		sh := x.Shared.cells()
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", x.Suite, x.Stencil, SizeText(x.Size), x.Type, x.Steps, x.Plan,
			f(x.Seconds*1e3, 2), f(x.GCellsPerS, 2), f(x.GFLOPPerS, 1), f(x.GBPerS, 1), f(x.RooflinePct, 0), f(x.PeakPct, 1),
			sh[0], sh[1], sh[2], sh[3], g3(x.SpeedupNaive), g3(x.SpeedupAnchor), f(x.Predicted*1e3, 2))
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
	"predicted_bottleneck", "peak_gflop_per_s", "peak_percent", "shared_kernel", "shared_bytes_per_block", "shared_block_limit",
	"shared_block_percent", "blocks_per_sm", "shared_sm_limit", "shared_sm_percent", "error"}

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
		// Figures added with the peak and shared-memory columns are empty where unknown.
		known := func(x float64) string {
			if x == 0 {
				return ""
			}
			return g(x)
		}
		var sh [7]string
		if u := x.Shared; u != nil {
			sh = [7]string{u.Kernel, strconv.Itoa(u.BytesPerBlock), "", "", "", "", ""}
			if u.BlockLimit > 0 {
				sh[2] = strconv.Itoa(u.BlockLimit)
			}
			if u.BlockPercent != nil {
				sh[3] = g(*u.BlockPercent)
			}
			if u.BlocksPerSM > 0 {
				sh[4] = strconv.Itoa(u.BlocksPerSM)
			}
			if u.SMLimit > 0 {
				sh[5] = strconv.Itoa(u.SMLimit)
			}
			if u.SMPercent != nil {
				sh[6] = g(*u.SMPercent)
			}
		}
		row := []string{x.Suite, x.Stencil, x.File, SizeText(x.Size), x.Type, strconv.Itoa(x.Steps), x.Plan, g(x.Seconds), g(x.GCellsPerS),
			g(x.GFLOPPerS), g(x.GBPerS), strconv.Itoa(x.FLOPsPerCell), strconv.Itoa(x.BytesPerCell), g(x.Intensity), g(x.BoundGCells),
			g(x.RooflinePct), x.NaivePlan, g(x.NaiveSeconds), g(x.SpeedupNaive), anchor, g(x.SpeedupAnchor), g(x.Predicted), x.Bottleneck,
			known(x.PeakGFLOPs), known(x.PeakPct), sh[0], sh[1], sh[2], sh[3], sh[4], sh[5], sh[6], x.Error}
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
