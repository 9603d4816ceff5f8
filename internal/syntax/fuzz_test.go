package syntax_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tempest/internal/analysis"
	"tempest/internal/load"
)

// FuzzParse feeds arbitrary text through the parser, the checker and the analysis: every input
// must give a program or a diagnostic, never a panic. Seeds: every example program, plus the
// corpus under testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("../../examples/*/*.stencil")
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err == nil {
			f.Add(string(b))
		}
	}
	f.Fuzz(func(t *testing.T, text string) {
		p, err := load.Source("fuzz.stencil", text, load.Options{})
		if err != nil {
			msg := err.Error()
			if !strings.Contains(msg, "error:") {
				t.Fatalf("diagnostic without the error format: %q", msg)
			}
			return
		}
		analysis.Analyze(p)
	})
}
