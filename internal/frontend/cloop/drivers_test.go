package cloop_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"tempest/internal/frontend/twin"
	"tempest/internal/ir"
	"tempest/internal/irprint"
	"tempest/internal/load"
)

// TestDrivers reads C files shaped like AN5D's benchmark drivers (testdata/drivers: the scop
// region inside if (scop), an else branch with the same loop nest under OpenMP, whole programs
// around it, comments and nested blocks, code before and after it) and checks that each gives
// exactly the program of its examples/c twin: the same printed IR and rim, the same analysis,
// and bitwise the same grid after a few steps on the CPU engine.
func TestDrivers(t *testing.T) {
	cases := []struct {
		file, twin string
		typ        ir.Type
	}{
		{"else_omp.c", "j2d5pt.c", ir.F32},
		{"whole_program.c", "star3d1r.c", ir.F32},
		{"comments_braces.c", "box2d1r.c", ir.F32},
		{"before_after.c", "j2d9pt.c", ir.F64},
	}
	body := func(p *ir.Program) string {
		lines := strings.Split(irprint.Stencil(p), "\n")
		var keep []string
		for _, l := range lines {
			if strings.HasPrefix(l, "//") || strings.HasPrefix(l, "stencil ") {
				continue
			}
			keep = append(keep, l)
		}
		return strings.Join(keep, "\n")
	}
	for _, c := range cases {
		t.Run(strings.TrimSuffix(c.file, ".c"), func(t *testing.T) {
			typ := c.typ
			got, err := load.File(filepath.Join("testdata/drivers", c.file), load.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got.DefaultType != typ {
				t.Fatalf("element type %s, want %s (from the file's declarations)", got.DefaultType, typ)
			}
			want, err := load.File(filepath.Join("../../../examples/c", c.twin), load.Options{DefaultType: &typ})
			if err != nil {
				t.Fatal(err)
			}
			if g, w := body(got), body(want); g != w {
				t.Fatalf("program differs from %s:\n--- got\n%s\n--- want\n%s", c.twin, g, w)
			}
			if g, w := fmt.Sprint(got.Grids[0].Rim), fmt.Sprint(want.Grids[0].Rim); g != w {
				t.Fatalf("rim %s, want %s", g, w)
			}
			if err := twin.SameAnalysis(got, want); err != nil {
				t.Fatal(err)
			}
			shape := smallShapes[got.Dims()]
			a, err := twin.Run(got, shape, nil, 3, 11, false)
			if err != nil {
				t.Fatal(err)
			}
			b, err := twin.Run(want, shape, nil, 3, 11, false)
			if err != nil {
				t.Fatal(err)
			}
			if err := twin.SameState(a, b); err != nil {
				t.Fatal(err)
			}
		})
	}
}
