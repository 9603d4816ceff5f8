package sl_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tempest/internal/analysis"
	"tempest/internal/irprint"
	"tempest/internal/load"
)

// FuzzSL feeds arbitrary text through the SL frontend, the checker, the analysis and the
// printer: every input must give a program or a diagnostic, never a panic or a hang. Seeds:
// the SL examples, the error cases and the feature tests.
func FuzzSL(f *testing.F) {
	var seeds []string
	for _, pattern := range []string{"../../../examples/sl/*.sl", "testdata/errors/*.sl"} {
		files, _ := filepath.Glob(pattern)
		for _, name := range files {
			if b, err := os.ReadFile(name); err == nil {
				seeds = append(seeds, string(b))
			}
		}
	}
	for _, ft := range features {
		seeds = append(seeds, ft.sl)
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		p, err := load.Source("fuzz.sl", text, load.Options{})
		if err != nil {
			if msg := err.Error(); !strings.Contains(msg, "error:") {
				t.Fatalf("diagnostic without the error format: %q", msg)
			}
			return
		}
		analysis.Analyze(p)
		irprint.Stencil(p)
	})
}
