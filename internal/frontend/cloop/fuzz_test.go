package cloop_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tempest/internal/analysis"
	"tempest/internal/irprint"
	"tempest/internal/load"
)

// FuzzCLoop feeds arbitrary text through the C loop-nest frontend, the checker, the analysis
// and the printer: every input must give a program or a diagnostic, never a panic or a hang.
// Seeds: the C examples, the error cases, the benchmark-driver shapes and the accepted forms.
func FuzzCLoop(f *testing.F) {
	var seeds []string
	for _, pattern := range []string{"../../../examples/c/*.c", "testdata/errors/*.c", "testdata/drivers/*.c"} {
		files, _ := filepath.Glob(pattern)
		for _, name := range files {
			if b, err := os.ReadFile(name); err == nil {
				seeds = append(seeds, string(b))
			}
		}
	}
	for _, fm := range forms {
		seeds = append(seeds, fm.c)
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		p, err := load.Source("fuzz.c", text, load.Options{})
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
