package lower

import (
	"os"
	"path/filepath"
	"testing"

	"tempest/internal/kir"
	"tempest/internal/load"
)

// TestGoldenHostKernels compares the C of the host kernels (lower.LowerHost, kir.PrintC) with
// testdata/<name>.host.c: every boundary rule and layers (goldenPrograms, the one-step kernel
// alone), and AN5D's j2d5pt and box3d1r, whose fixed rims let the steps be blocked in time.
func TestGoldenHostKernels(t *testing.T) {
	sources := map[string]string{}
	for name, src := range goldenPrograms {
		sources[name] = src
	}
	for _, name := range []string{"j2d5pt", "box3d1r"} {
		src, err := os.ReadFile("../../examples/an5d/" + name + ".stencil")
		if err != nil {
			t.Fatal(err)
		}
		sources[name] = string(src)
	}
	for name, src := range sources {
		p, err := load.Source(name+".stencil", src, load.Options{})
		if err != nil {
			t.Fatal(err)
		}
		h := LowerHost(p, p.Reach())
		if (h.Block != nil) != HostBlockable(p) {
			t.Errorf("%s: blocked kernel %v, HostBlockable %v", name, h.Block != nil, HostBlockable(p))
		}
		if name == "j2d5pt" && h.Block == nil {
			t.Errorf("j2d5pt: no blocked kernel")
		}
		got := kir.PrintC(h.Step.Module)
		if h.Block != nil {
			got += kir.PrintC(h.Block.Module)
		}
		if kir.PrintC(h.Step.Module) != kir.PrintC(h.Step.Module) {
			t.Fatalf("%s: printing is not deterministic", name)
		}
		path := filepath.Join("testdata", name+".host.c")
		if *update {
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test -update)", err)
		}
		if string(want) != got {
			t.Errorf("%s changed; run go test ./internal/lower -update and review the diff", path)
		}
	}
}
