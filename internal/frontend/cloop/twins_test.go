package cloop_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tempest/internal/frontend/twin"
	"tempest/internal/ir"
	"tempest/internal/load"
)

var smallShapes = map[int][]int{1: {37}, 2: {19, 23}, 3: {11, 10, 13}}

// TestAN5DTwins loads every C loop nest of examples/c and its native twin in examples/an5d,
// in float and double, and checks that they analyse the same (radius, shape, FLOPs) and give
// bitwise the same grid after a few steps on the CPU engine from the same data.
func TestAN5DTwins(t *testing.T) {
	files, _ := filepath.Glob("../../../examples/c/*.c")
	if len(files) < 21 {
		t.Fatalf("found %d C examples, want the 21 of the AN5D suite", len(files))
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".c")
		native := filepath.Join("../../../examples/an5d", name+".stencil")
		if _, err := os.Stat(native); err != nil {
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, typ := range []ir.Type{ir.F32, ir.F64} {
				opt := load.Options{DefaultType: &typ}
				c, err := load.File(f, opt)
				if err != nil {
					t.Fatal(err)
				}
				n, err := load.File(native, opt)
				if err != nil {
					t.Fatal(err)
				}
				if err := twin.SameAnalysis(c, n); err != nil {
					t.Fatalf("%s: analysis differs from the twin: %v", typ, err)
				}
				if got, want := fmt.Sprint(c.Grids[0].Rim), fmt.Sprint(n.Grids[0].Rim); got != want {
					t.Fatalf("rim %s, twin %s", got, want)
				}
				shape := smallShapes[c.Dims()]
				sc, err := twin.Run(c, shape, nil, 4, 7, false)
				if err != nil {
					t.Fatal(err)
				}
				sn, err := twin.Run(n, shape, nil, 4, 7, false)
				if err != nil {
					t.Fatal(err)
				}
				if err := twin.SameState(sc, sn); err != nil {
					t.Fatalf("%s: result differs from the twin: %v", typ, err)
				}
			}
		})
	}
}
