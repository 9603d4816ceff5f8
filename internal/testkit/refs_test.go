package testkit

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoReferencesOutsideTheRepository: the project's files cite papers and peers by name and
// docs/ by path, never files a clone does not have (a design folder or paper copies beside
// the checkout).
func TestNoReferencesOutsideTheRepository(t *testing.T) {
	root := "../.."
	bad := []string{"shared/" + "papers", "shared/" + "design", "shared/" + "peers", "../" + "shared/"}
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == ".git" || n == ".gpu" || n == "testdata" && strings.Contains(path, "fuzz") {
				return filepath.SkipDir
			}
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil || len(b) > 4<<20 {
			return nil
		}
		for i, line := range strings.Split(string(b), "\n") {
			for _, s := range bad {
				if strings.Contains(line, s) {
					t.Errorf("%s:%d: refers to %q, outside the repository", path, i+1, s)
				}
			}
		}
		return nil
	})
}
