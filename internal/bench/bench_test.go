package bench_test

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"tempest/internal/bench"
	"tempest/internal/driver"
	"tempest/internal/gpu"
)

// run benches a small subset at tiny sizes and checks every output.
func run(t *testing.T, backend string, stencils []string, fast bool) *bench.Report {
	t.Helper()
	dir := t.TempDir()
	o := driver.BenchOptions{Suite: "an5d", Backend: backend, SizeScale: 0.004, Steps: 4, Reps: 1, Stencils: stencils,
		Scaling: "none", Root: "../..", Command: []string{"tempest", "bench", "--test"}, FastMath: fast,
		JSON: filepath.Join(dir, "out.json"), CSV: filepath.Join(dir, "out.csv"), Report: filepath.Join(dir, "out.html")}
	var stdout bytes.Buffer
	rep, err := driver.Bench(o, &stdout, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != len(stencils) {
		t.Fatalf("%d results, want %d:\n%s", len(rep.Results), len(stencils), stdout.String())
	}
	for _, r := range rep.Results {
		if r.Error != "" {
			t.Errorf("%s: %s", r.Stencil, r.Error)
		}
		if !(r.Seconds > 0 && r.GCellsPerS > 0 && r.GFLOPPerS > 0 && r.GBPerS > 0) || r.Plan == "" {
			t.Errorf("%s: missing numbers: %+v", r.Stencil, r)
		}
		if r.Anchor == nil || r.SpeedupAnchor <= 0 {
			t.Errorf("%s: no anchor comparison", r.Stencil)
		}
	}
	if !strings.Contains(stdout.String(), "GCells/s") {
		t.Errorf("no table on stdout:\n%s", stdout.String())
	}
	// The header and the JSON state the math mode (fast only where plans are compiled).
	wantFast := fast && backend != "cpu"
	if head, _, _ := strings.Cut(stdout.String(), "\n"); strings.Contains(head, "fast math") != wantFast || rep.FastMath != wantFast {
		t.Errorf("fast math %v, report %v, header %q", wantFast, rep.FastMath, head)
	}

	// JSON: the schema's fields are there.
	b, err := os.ReadFile(o.JSON)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"schemaVersion", "tempestVersion", "commandLine", "device", "driver", "backend", "results", "anchors", "sizes"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	if v, ok := doc["fastMath"].(bool); !ok || v != rep.FastMath {
		t.Errorf("JSON fastMath %v", doc["fastMath"])
	}
	if v, _ := doc["schemaVersion"].(float64); int(v) != bench.SchemaVersion {
		t.Errorf("schemaVersion %v", doc["schemaVersion"])
	}
	res := doc["results"].([]any)[0].(map[string]any)
	for _, k := range []string{"stencil", "plan", "size", "seconds", "samplesSeconds", "gcellsPerSecond", "gflopPerSecond",
		"effectiveGBPerSecond", "flopsPerCell", "bytesPerCell", "flopPerByte", "anchor", "speedupOverAnchor"} {
		if _, ok := res[k]; !ok {
			t.Errorf("JSON result lacks %q", k)
		}
	}

	// CSV: the header and one row per result.
	fh, err := os.Open(o.CSV)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	rows, err := csv.NewReader(fh).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(rows[0], ",") != strings.Join(bench.CSVHeader, ",") || len(rows) != 1+len(stencils) {
		t.Errorf("CSV: header %v, %d rows", rows[0], len(rows))
	}

	// HTML: self-contained, with the roofline chart embedded and written beside it.
	page, err := os.ReadFile(o.Report)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), `src="data:image/png;base64,`) {
		t.Error("the HTML report embeds no chart")
	}
	if _, err := os.Stat(filepath.Join(dir, "out_roofline.png")); err != nil {
		t.Error(err)
	}
	return rep
}

func TestBenchCPU(t *testing.T) {
	rep := run(t, "cpu", []string{"j2d5pt", "star3d1r"}, true)
	if rep.Backend != "cpu" {
		t.Errorf("backend %q", rep.Backend)
	}
	// No plan, no device: no peak and no shared memory (printed as "-").
	for _, r := range rep.Results {
		if r.PeakGFLOPs != 0 || r.PeakPct != 0 || r.Shared != nil {
			t.Errorf("%s: CPU engine with peak %v (%v%%), shared %+v", r.Stencil, r.PeakGFLOPs, r.PeakPct, r.Shared)
		}
	}
}

// TestBenchType runs the AN5D suite in double with --type: every program in f64, no float
// anchor to compare with, and a clear error for an unknown type.
func TestBenchType(t *testing.T) {
	o := driver.BenchOptions{Suite: "an5d", Backend: "cpu", Type: "f64", SizeScale: 0.004, Steps: 2, Reps: 1, Stencils: []string{"j2d5pt"},
		Scaling: "none", Root: "../.."}
	var stdout bytes.Buffer
	rep, err := driver.Bench(o, &stdout, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 1 || rep.Results[0].Type != "f64" || rep.Results[0].Anchor != nil || rep.Results[0].Error != "" {
		t.Fatalf("results %+v", rep.Results)
	}
	if head, _, _ := strings.Cut(stdout.String(), "\n"); !strings.Contains(head, "type f64") || rep.Type != "f64" {
		t.Errorf("the header does not state the type: %q", head)
	}
	o.Type = "f16"
	if _, err := driver.Bench(o, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), `--type "f16"`) {
		t.Errorf("--type f16: %v", err)
	}
}

func TestBenchOpenCL(t *testing.T) {
	d, err := gpu.Open("opencl")
	if err != nil {
		if os.Getenv("TEMPEST_REQUIRE_OPENCL") == "1" {
			t.Fatal(err)
		}
		t.Skipf("no OpenCL: %v", err)
	}
	d.Close()
	rep := run(t, "opencl", []string{"j2d5pt", "box2d1r"}, true)
	for _, r := range rep.Results {
		if !strings.Contains(r.Plan, "fastmath=true") || !strings.Contains(r.NaivePlan, "fastmath=true") {
			t.Errorf("%s: --fastmath plans %s and %s", r.Stencil, r.Plan, r.NaivePlan)
		}
		if r.NaiveSeconds <= 0 || r.SpeedupNaive <= 0 {
			t.Errorf("%s: no naive comparison", r.Stencil)
		}
		if r.BoundGCells <= 0 || r.RooflinePct <= 0 {
			t.Errorf("%s: no roofline share", r.Stencil)
		}
		// OpenCL: no FP lanes known, no registers (so no resident blocks), but the plan's
		// shared memory against the per-block limit.
		if r.PeakGFLOPs != 0 || r.PeakPct != 0 {
			t.Errorf("%s: OpenCL peak %v", r.Stencil, r.PeakGFLOPs)
		}
		if u := r.Shared; u == nil || u.Kernel == "" || u.BlockLimit <= 0 || u.BlockPercent == nil || u.SMPercent != nil ||
			*u.BlockPercent != 100*float64(u.BytesPerBlock)/float64(u.BlockLimit) {
			t.Errorf("%s: shared memory %+v", r.Stencil, u)
		}
	}
}

// TestAnchorsMatchDesign holds the anchor table equal to docs/benchmarks.md.
func TestAnchorsMatchDesign(t *testing.T) {
	doc, err := os.Open("../../docs/benchmarks.md")
	if err != nil {
		t.Fatal(err)
	}
	defer doc.Close()
	got := map[string][2]float64{}
	in := false
	sc := bufio.NewScanner(doc)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.Contains(line, "numbers to beat:") {
			in = true
			continue
		}
		if !in {
			continue
		}
		if strings.HasPrefix(line, "## ") {
			break
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 3 {
			continue
		}
		name := strings.TrimSpace(cells[0])
		gf, err1 := strconv.ParseFloat(strings.ReplaceAll(strings.TrimSpace(cells[1]), ",", ""), 64)
		gc, err2 := strconv.ParseFloat(strings.ReplaceAll(strings.TrimSpace(cells[2]), ",", ""), 64)
		if err1 != nil || err2 != nil {
			continue // the header and its rule
		}
		got[name] = [2]float64{gf, gc}
	}
	if len(got) == 0 {
		t.Fatal("found no anchor table in benchmarks.md")
	}
	if len(got) != len(bench.AN5DAnchors) {
		t.Errorf("benchmarks.md has %d anchors, the table %d", len(got), len(bench.AN5DAnchors))
	}
	for _, a := range bench.AN5DAnchors {
		want, ok := got[a.Stencil]
		if !ok {
			t.Errorf("%s: not in benchmarks.md", a.Stencil)
			continue
		}
		if a.GFLOPPerS != want[0] || a.GCellsPerS != want[1] {
			t.Errorf("%s: table %v GFLOP/s %v GCells/s, benchmarks.md %v", a.Stencil, a.GFLOPPerS, a.GCellsPerS, want)
		}
		if _, err := os.Stat(filepath.Join("../../examples/an5d", a.Stencil+".stencil")); err != nil {
			t.Errorf("anchor %s has no example: %v", a.Stencil, err)
		}
	}
}
