package irprint_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tempest/internal/analysis"
	"tempest/internal/cpu"
	"tempest/internal/frontend/twin"
	"tempest/internal/ir"
	"tempest/internal/irprint"
	"tempest/internal/load"
	"tempest/internal/ref"
	"tempest/internal/state"
)

var smallShapes = map[int][]int{1: {37}, 2: {19, 23}, 3: {11, 10, 13}}

// examples lists every example program: .stencil files and the SL and C frontends' files.
func examples(t *testing.T) []string {
	var files []string
	filepath.WalkDir("../../examples", func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			switch filepath.Ext(path) {
			case ".stencil", ".sl", ".c":
				files = append(files, path)
			}
		}
		return nil
	})
	if len(files) == 0 {
		t.Fatal("no examples found")
	}
	return files
}

// TestRoundTrip prints every example as .stencil, checks the text again and compares: the
// printed program must analyse the same (FLOPs, radius, shape), print to the same text again,
// and give bitwise the same grids as the original after a few steps on the CPU engine, in the
// program's type and in the other float precision.
func TestRoundTrip(t *testing.T) {
	for _, f := range examples(t) {
		t.Run(strings.TrimPrefix(f, "../../examples/"), func(t *testing.T) {
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
				p, err := load.File(f, opt)
				if err != nil {
					t.Fatal(err)
				}
				text := irprint.Stencil(p)
				q, err := load.Source("printed.stencil", text, opt)
				if err != nil {
					t.Fatalf("printed program does not check: %v\n%s", err, text)
				}
				if again := irprint.Stencil(q); stripHeader(again) != stripHeader(text) {
					t.Fatalf("printing is not stable:\n--- first\n%s--- second\n%s", text, again)
				}
				if err := sameProgram(p, q); err != nil && len(irprint.Inexpressible(p)) == 0 {
					t.Fatalf("printed program differs: %v\n%s", err, text)
				}
				a, b := analysis.Analyze(p), analysis.Analyze(q)
				if a.FLOPs != b.FLOPs || a.Ops != b.Ops || a.Shape != b.Shape || a.Points != b.Points ||
					fmtInts(a.Radius) != fmtInts(b.Radius) || a.Type != b.Type {
					t.Fatalf("analysis changed: %+v vs %+v", a, b)
				}
				if len(irprint.Inexpressible(p)) == 0 {
					for i, g := range p.Grids {
						if fmtInts(g.Rim) != fmtInts(q.Grids[i].Rim) {
							t.Fatalf("grid %s: rim %v, printed %v", g.Name, g.Rim, q.Grids[i].Rim)
						}
					}
				}
				compareRuns(t, p, q)
			}
		})
	}
}

func stripHeader(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(l, "//") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func fmtInts(v []int) string { return fmt.Sprint(v) }

// compareRuns runs both programs on the CPU engine, first from their init expressions (which
// must have printed equivalently; same seed), then from the same explicit data.
func compareRuns(t *testing.T, p, q *ir.Program) {
	t.Helper()
	compareRunsFrom(t, p, q, false)
	compareRunsFrom(t, p, q, true)
}

func compareRunsFrom(t *testing.T, p, q *ir.Program, explicit bool) {
	t.Helper()
	shape := smallShapes[p.Dims()]
	run := func(p *ir.Program) *state.State {
		s, err := state.New(p, shape, state.DefaultParams(p), 3)
		if err != nil {
			t.Fatal(err)
		}
		ref.Init(s)
		if explicit {
			twin.Fill(s, 3, p.DefaultType.IsInt())
		}
		e := cpu.New(s)
		e.Run(4, nil)
		e.Sync()
		return s
	}
	a, b := run(p), run(q)
	for gi, g := range p.Grids {
		x, y := a.Cur[gi].Float64s(), b.Cur[gi].Float64s()
		for i := range x {
			if math.Float64bits(x[i]) != math.Float64bits(y[i]) && !(math.IsNaN(x[i]) && math.IsNaN(y[i])) {
				t.Fatalf("grid %s cell %d (explicit data %v): original %v, printed %v", g.Name, i, explicit, x[i], y[i])
			}
		}
	}
}
