package examples_test

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tempest/internal/cpu"
	"tempest/internal/ir"
	"tempest/internal/load"
	"tempest/internal/ref"
	"tempest/internal/state"
)

// smallShapes are sizes that keep the reference fast while leaving interior cells for radius-4
// stencils, with odd extents so rows do not align with anything.
var smallShapes = map[int][]int{1: {37}, 2: {19, 23}, 3: {15, 14, 16}}

// TestExamplesRunOnCPU runs every example for a few steps on the CPU engine and on the
// reference interpreter, in its own element type and (for float programs) in the other float
// precision. The engine must agree bitwise: it rounds every operation exactly as the reference.
func TestExamplesRunOnCPU(t *testing.T) {
	var files []string
	filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(path, ".stencil") {
			files = append(files, path)
		}
		return nil
	})
	if len(files) == 0 {
		t.Fatal("no examples found")
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(f, ".stencil"), func(t *testing.T) {
			t.Parallel()
			p, err := load.File(f, load.Options{})
			if err != nil {
				t.Fatal(err)
			}
			types := []*ir.Type{nil}
			if p.DefaultType.IsFloat() {
				other := ir.F64
				if p.DefaultType == ir.F64 {
					other = ir.F32
				}
				types = append(types, &other)
			}
			for _, typ := range types {
				if typ != nil {
					if p, err = load.File(f, load.Options{DefaultType: typ}); err != nil {
						t.Fatal(err)
					}
				}
				compare(t, p, smallShapes[p.Dims()], 4)
			}
		})
	}
}

func compare(t *testing.T, p *ir.Program, shape []int, steps int) {
	t.Helper()
	s, err := state.New(p, shape, state.DefaultParams(p), 3)
	if err != nil {
		t.Fatal(err)
	}
	ref.Init(s)
	want := s.Clone()
	ref.Run(want, steps)
	got := s.Clone()
	e := cpu.New(got)
	e.Run(steps, nil)
	e.Sync()
	for _, u := range p.Updates {
		a, b := want.Cur[u.Grid.Index].Float64s(), got.Cur[u.Grid.Index].Float64s()
		for i := range a {
			same := math.Float64bits(a[i]) == math.Float64bits(b[i]) || (math.IsNaN(a[i]) && math.IsNaN(b[i]))
			if !same {
				t.Fatalf("%s (%s) grid %s cell %d: cpu %v, reference %v", p.Name, p.DefaultType, u.Grid.Name, i, b[i], a[i])
			}
		}
	}
}
