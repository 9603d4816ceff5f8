package sl_test

import (
	"path/filepath"
	"strings"
	"testing"

	"tempest/internal/frontend/twin"
	"tempest/internal/ir"
	"tempest/internal/load"
)

var smallShapes = map[int][]int{1: {37}, 2: {19, 23}, 3: {11, 10, 13}}

// twinParams are parameters the SL files leave at SL's default (the caller passes them) but
// the native twins give defaults; the comparison sets them explicitly.
var twinParams = map[string]map[string]float64{
	"hotspot": {"Rx": 10, "Ry": 10, "Rz": 4},
}

// TestSLTwins loads every SL program of examples/sl and its native twin (the .stencil file of
// the same name) and checks that they analyse the same and give bitwise the same grid after a
// few steps on the CPU engine from the same data, in the program's type and, for float
// programs, in the other precision.
func TestSLTwins(t *testing.T) {
	files, _ := filepath.Glob("../../../examples/sl/*.sl")
	if len(files) < 6 {
		t.Fatalf("found %d SL examples, want the 6 of the SL suite", len(files))
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".sl")
		native := strings.TrimSuffix(f, ".sl") + ".stencil"
		t.Run(name, func(t *testing.T) {
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
				opt := load.Options{DefaultType: typ}
				s, err := load.File(f, opt)
				if err != nil {
					t.Fatal(err)
				}
				n, err := load.File(native, opt)
				if err != nil {
					t.Fatal(err)
				}
				if err := twin.SameAnalysis(s, n); err != nil {
					t.Fatalf("analysis differs from the twin: %v", err)
				}
				binary := name == "cell"
				shape := smallShapes[s.Dims()]
				ss, err := twin.Run(s, shape, twinParams[name], 5, 11, binary)
				if err != nil {
					t.Fatal(err)
				}
				sn, err := twin.Run(n, shape, twinParams[name], 5, 11, binary)
				if err != nil {
					t.Fatal(err)
				}
				if err := twin.SameState(ss, sn); err != nil {
					t.Fatalf("%s: result differs from the twin: %v", s.DefaultType, err)
				}
			}
		})
	}
}
