package bench

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden report files under testdata/")

// goldenReport is a fixed report with every kind of peak and shared-memory figure: known on
// a CUDA device (an n5d plan near its limits, a naive plan without shared memory, a double
// program against the FP64 peak), an OpenCL device's (no registers, so no resident blocks),
// an integer program (no FP peak), the CPU engine (no plan) and a failure.
func goldenReport() *Report {
	h100 := func(bytes, blocks int) *SharedUse { return NewSharedUse("tempest_n5d", bytes, 232448, blocks, 233472) }
	anchor := AnchorFor("an5d", "j2d5pt")
	return &Report{Schema: SchemaVersion, Tempest: "0.1.0-test", CommandLine: []string{"tempest", "bench", "--golden"}, Suite: "an5d",
		Backend: "cuda", Device: "NVIDIA H100 80GB HBM3", Driver: "CUDA driver 13.0", Compiler: "NVRTC 13.0", Tune: "cached, else model",
		FastMath: true, Reps: 3, SizeScale: 1,
		Profile: &Profile{DRAMGBs: 2258.6, FMAF32GFLOPs: 55890.2, FMAF64GFLOPs: 31970.4, NominalF32GFLOPs: 66908.16, NominalF64GFLOPs: 33454.08},
		Results: []Result{
			{Suite: "an5d", Stencil: "j2d5pt", File: "examples/an5d/j2d5pt.stencil", Size: []int{16386, 16386}, Type: "f32", Steps: 1000,
				Plan: "n5d:bx=128,by=1,bt=12,rx=2,wave=true,fastmath=true", CellsPerStep: 268435456, FLOPsPerCell: 10, BytesPerCell: 8,
				Seconds: 0.12606, Samples: []float64{0.12606}, GCellsPerS: 2129.5, GFLOPPerS: 21295, GBPerS: 17036, Intensity: 1.25,
				BoundGCells: 282.3, RooflinePct: 754.3, NaivePlan: "naive:bx=32,by=8,fastmath=true", NaiveSeconds: 1.0627, SpeedupNaive: 8.43,
				Anchor: anchor, SpeedupAnchor: 1.409, Predicted: 0.1301, Bottleneck: "compute",
				PeakGFLOPs: 66908.16, PeakPct: 31.83, Shared: h100(34816, 4)},
			{Suite: "an5d", Stencil: "star2d1r", File: "examples/an5d/star2d1r.stencil", Size: []int{16386, 16386}, Type: "f32", Steps: 1000,
				Plan: "naive:bx=32,by=8", CellsPerStep: 268435456, FLOPsPerCell: 9, BytesPerCell: 8, Seconds: 1.04, GCellsPerS: 258.1,
				GFLOPPerS: 2323, GBPerS: 2065, Intensity: 1.125, PeakGFLOPs: 66908.16, PeakPct: 3.47,
				Shared: NewSharedUse("tempest_naive", 0, 232448, 8, 233472)},
			{Suite: "an5d", Stencil: "star3d1r", File: "examples/an5d/star3d1r.stencil", Size: []int{514, 514, 514}, Type: "f64", Steps: 1000,
				Plan: "n5d:bx=16,by=32,bt=4,rx=2,wave=true", CellsPerStep: 134217728, FLOPsPerCell: 13, BytesPerCell: 16, Seconds: 0.4636,
				GCellsPerS: 289.5, GFLOPPerS: 3763.5, GBPerS: 4632, Intensity: 0.8125, PeakGFLOPs: 33454.08, PeakPct: 11.25, Shared: h100(100352, 2)},
			{Suite: "sl", Stencil: "plate", File: "examples/sl/plate.stencil", Size: []int{8194, 8194}, Type: "f32", Steps: 1000,
				Plan: "tiled:bx=32,by=8", CellsPerStep: 67108864, FLOPsPerCell: 4, BytesPerCell: 8, Seconds: 2.5, GCellsPerS: 26.8,
				GFLOPPerS: 107.4, GBPerS: 214.7, Intensity: 0.5, Shared: NewSharedUse("tempest_tiled", 1360, 65536, 0, 65536)},
			{Suite: "sl", Stencil: "pathfinder", File: "examples/sl/pathfinder.stencil", Size: []int{1048578}, Type: "i32", Steps: 1000,
				Plan: "naive:bx=256", CellsPerStep: 1048576, FLOPsPerCell: 3, BytesPerCell: 12, Seconds: 0.05, GCellsPerS: 20.97,
				GFLOPPerS: 62.9, GBPerS: 251.7, Intensity: 0.25, Shared: NewSharedUse("tempest_naive", 0, 232448, 8, 233472)},
			{Suite: "sl", Stencil: "hotspot", File: "examples/sl/hotspot.stencil", Size: []int{8194, 8194}, Type: "f32", Steps: 1000,
				Plan: "cpu engine", CellsPerStep: 67108864, FLOPsPerCell: 15, BytesPerCell: 12, Seconds: 40, GCellsPerS: 1.68, GFLOPPerS: 25.2,
				GBPerS: 20.1, Intensity: 1.25},
			{Suite: "sl", Stencil: "cell", File: "examples/sl/cell.stencil", Size: []int{258, 258, 258}, Type: "i32", Steps: 1000,
				Error: "--plan: n5d: needs 300000 B of shared memory per block, the device allows 232448 B"},
		},
		Anchors: []Anchor{*anchor},
		Sizes:   []SizeRow{{Suite: "an5d", Sizes: "16384^2, 512^3 interior (plus fixed rims), 1000 steps, f32"}},
		Notes:   []string{"a note"},
	}
}

// imageData is the embedded charts' PNG data, which the golden HTML leaves out (the charts
// have tests of their own, TestRenderSample).
var imageData = regexp.MustCompile(`data:image/png;base64,[A-Za-z0-9+/=]+`)

// TestReportGolden holds the table, CSV, JSON and HTML of a fixed report to the files under
// testdata/ (go test ./internal/bench -run TestReportGolden -update rewrites them): "-" where a
// peak or shared-memory figure is unknown, a real 0 as 0.0, nothing made up.
func TestReportGolden(t *testing.T) {
	r := goldenReport()
	dir := t.TempDir()
	var table, csv, js bytes.Buffer
	r.WriteTable(&table)
	if err := r.WriteCSV(&csv); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if _, err := r.WriteHTML(filepath.Join(dir, "golden.html")); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, "golden.html"))
	if err != nil {
		t.Fatal(err)
	}
	page = imageData.ReplaceAll(page, []byte("data:image/png;base64,..."))
	for _, g := range []struct {
		file string
		got  []byte
	}{{"report_table.golden", table.Bytes()}, {"report_csv.golden", csv.Bytes()}, {"report_json.golden", js.Bytes()}, {"report_html.golden", page}} {
		path := filepath.Join("testdata", g.file)
		if *update {
			if err := os.WriteFile(path, g.got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update to create it)", err)
		}
		if !bytes.Equal(g.got, want) {
			t.Errorf("%s differs from the output (-update rewrites it):\n%s", path, g.got)
		}
	}
}

// TestSharedUse checks the percentages against hand-computed ones and that unknown limits
// and residency stay unknown.
func TestSharedUse(t *testing.T) {
	for _, c := range []struct {
		name                       string
		bytes, limit, blocks, smem int
		wantBlock, wantSM          string // as the table prints them
		wantCells                  [4]string
	}{
		{"H100 n5d", 34816, 232448, 4, 233472, "15.0", "59.6", [4]string{"34816", "15.0", "4", "59.6"}},
		{"no shared memory", 0, 232448, 8, 233472, "0.0", "0.0", [4]string{"0", "0.0", "8", "0.0"}},
		{"at the limit", 232448, 232448, 1, 233472, "100.0", "99.6", [4]string{"232448", "100.0", "1", "99.6"}},
		{"OpenCL: no residency", 8192, 524288, 0, 524288, "1.6", "-", [4]string{"8192", "1.6", "-", "-"}},
		{"no limits", 4096, 0, 3, 0, "-", "-", [4]string{"4096", "-", "3", "-"}},
	} {
		u := NewSharedUse("k", c.bytes, c.limit, c.blocks, c.smem)
		if got := pct(u.BlockPercent); got != c.wantBlock {
			t.Errorf("%s: block %s, want %s", c.name, got, c.wantBlock)
		}
		if got := pct(u.SMPercent); got != c.wantSM {
			t.Errorf("%s: SM %s, want %s", c.name, got, c.wantSM)
		}
		if got := u.cells(); got != c.wantCells {
			t.Errorf("%s: cells %v, want %v", c.name, got, c.wantCells)
		}
	}
	var none *SharedUse
	if got := none.cells(); got != [4]string{"-", "-", "-", "-"} {
		t.Errorf("no plan: %v", got)
	}
}
