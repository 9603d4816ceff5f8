package bench

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRenderSample renders every chart of a recorded report (PoCL, tiny sizes) and checks the
// HTML page embeds them. Set TEMPEST_BENCH_CHARTS=DIR to keep the files for a look.
func TestRenderSample(t *testing.T) {
	b, err := os.ReadFile("testdata/pocl_report.json")
	if err != nil {
		t.Fatal(err)
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	dir := os.Getenv("TEMPEST_BENCH_CHARTS")
	if dir == "" {
		dir = t.TempDir()
	}
	files, err := r.WriteHTML(filepath.Join(dir, "sample.html"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 5 {
		t.Fatalf("wrote %v, want the page and 4 charts", files)
	}
	for _, name := range []string{"roofline", "scaling", "model", "surface"} {
		png, err := os.ReadFile(filepath.Join(dir, "sample_"+name+".png"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(png, []byte("\x89PNG")) {
			t.Errorf("%s: not a PNG", name)
		}
	}
	page, err := os.ReadFile(filepath.Join(dir, "sample.html"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(page), `src="data:image/png;base64,`); n != 4 {
		t.Errorf("the page embeds %d images, want 4", n)
	}
	// Deterministic apart from measured numbers: the same report renders the same bytes.
	var again bytes.Buffer
	if err := r.WriteCSV(&again); err != nil {
		t.Fatal(err)
	}
	var twice bytes.Buffer
	if err := r.WriteCSV(&twice); err != nil {
		t.Fatal(err)
	}
	if again.String() != twice.String() {
		t.Error("CSV output is not deterministic")
	}
}
