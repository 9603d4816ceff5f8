package cloop_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tempest/internal/load"
)

var update = flag.Bool("update", false, "rewrite the golden .err files")

// TestErrors checks one program per kind of mistake against its expected diagnostic (the .err
// file beside it): position, source line, caret and hint. Run go test -update to rewrite them.
func TestErrors(t *testing.T) {
	files, err := filepath.Glob("testdata/errors/*.c")
	if err != nil || len(files) == 0 {
		t.Fatal("no error cases found")
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".c")
		t.Run(name, func(t *testing.T) {
			text, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			_, err = load.Source("testdata/errors/"+filepath.Base(f), string(text), load.Options{})
			if err == nil {
				t.Fatalf("%s: accepted, want a diagnostic", f)
			}
			got := err.Error() + "\n"
			if !strings.Contains(got, "error:") || !strings.Contains(got, ".c:") {
				t.Errorf("diagnostic lacks a position:\n%s", got)
			}
			golden := strings.TrimSuffix(f, ".c") + ".err"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("diagnostic changed:\n--- got\n%s--- want\n%s", got, want)
			}
		})
	}
}
