package lower

import (
	"os"
	"path/filepath"
	"testing"

	"tempest/internal/kir"
	"tempest/internal/load"
)

// TestGoldenObserve compares the observable kernels with testdata/observe.<case>.{cu,cl}: one
// reduction of each kind, f32 values reduced in f64, an integer sum, .prev of a one-level
// grid (an extra input buffer), a let, boundary rules at offsets, and 64-bit indices.
func TestGoldenObserve(t *testing.T) {
	src := `axes y, x
type f32
input f: i32 init x % 3
state u init rand() boundary y: constant(0.5), x: periodic
update u = 0.25 * (u[x-1] + u[x+1] + u[y-1] + u[y+1]) + f32(f)
let d = u - u[x+1]
observe maxdiff = max(abs(u - u.prev))
observe low = min(d)
observe total = sum(u[y-2] / 3.0)
observe count = sum(select(u > 0.5, f, 0))
observe avg = mean(d * d)`
	p, err := load.Source("obs.stencil", src, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		shape []int
	}{{"narrow", []int{64, 64}}, {"wide", []int{65536, 65536}}} {
		obs := LowerObserve(p, c.shape, []int{0, 0})
		if len(obs.Cells) != len(p.Observes) || len(obs.Reduce) != len(p.Observes) {
			t.Fatalf("%d cell launches and %d reducers for %d observables", len(obs.Cells), len(obs.Reduce), len(p.Observes))
		}
		if want := (c.shape[0]*c.shape[1] + 255) / 256; obs.Cells[0].Grid[0] != want {
			t.Errorf("%s: %d blocks, want %d", c.name, obs.Cells[0].Grid[0], want)
		}
		for _, d := range []kir.Dialect{kir.CUDA, kir.OpenCL} {
			got := kir.Print(obs.Module, d)
			if kir.Print(LowerObserve(p, c.shape, []int{0, 0}).Module, d) != got {
				t.Fatalf("%s: printing is not deterministic", c.name)
			}
			ext := map[kir.Dialect]string{kir.CUDA: ".cu", kir.OpenCL: ".cl"}[d]
			path := filepath.Join("testdata", "observe."+c.name+ext)
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
				t.Errorf("%s changed; run go test ./internal/lower -run TestGoldenObserve -update and review the diff", path)
			}
		}
	}
}
