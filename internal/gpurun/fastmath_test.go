package gpurun

import (
	"strings"
	"testing"

	"tempest/internal/errbound"
	"tempest/internal/ir"
	"tempest/internal/load"
	"tempest/internal/lower"
	"tempest/internal/plan"
	"tempest/internal/ref"
	"tempest/internal/state"
	"tempest/internal/testkit"
)

// divides reports whether a program's updates divide floats or take square roots: the
// operations fast math approximates.
func divides(p *ir.Program) bool {
	found := false
	check := func(e ir.Expr) {
		ir.WalkDeep(e, func(x ir.Expr) {
			switch x := x.(type) {
			case *ir.Binary:
				found = found || (x.Op == "/" && x.T.IsFloat())
			case *ir.Call:
				found = found || x.Fn == "sqrt"
			}
		})
	}
	for _, u := range p.Updates {
		check(u.Value)
	}
	for _, l := range p.Lets {
		check(l.Value)
	}
	return found
}

// fastShapes are the sizes of the fast-math runs: big enough that n5d's interior blocks and
// vector paths run, small enough for 100 steps of the bounded reference.
var fastShapes = map[int][]int{1: {300}, 2: {67, 70}, 3: {12, 20, 20}}

// runFastMathBound runs every example that divides or takes square roots for 100 steps,
// compiled with fast math, and checks each cell against its error bound (errbound): the
// promise `tempest run --fastmath --verify` makes. strategies are the plans run, each also
// with its sums' centre terms first (plan.CentreFirst) where that reorders a sum.
func runFastMathBound(t *testing.T, backend string, strategies []string) {
	dev := openDevice(t, backend)
	mods := NewModules(dev) // optimised, as users' runs compile: contraction is part of the test
	defer mods.Close()
	const steps = 100
	arith := errbound.For(backend, true)
	runs := 0
	for _, f := range examples(t) {
		p, err := load.File(f, load.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !divides(p) {
			continue
		}
		name := strings.TrimSuffix(strings.TrimPrefix(f, "../../examples/"), ".stencil")
		s, err := state.New(p, fastShapes[p.Dims()], state.DefaultParams(p), 4)
		if err != nil {
			t.Fatal(err)
		}
		ref.Init(s)
		want := s.Clone()
		b := errbound.Run(want, steps, arith)
		var plans []plan.Plan
		for _, st := range strategies {
			pl, err := plan.Default(st, p)
			if err != nil {
				continue
			}
			pl.FastMath = true
			plans = append(plans, pl)
			if lower.OrdersTerms(p) {
				pl.CentreFirst = true
				plans = append(plans, pl)
			}
		}
		for _, pl := range plans {
			got := s.Clone()
			r, err := PrepareWith(dev, got, pl, mods)
			if err != nil {
				t.Errorf("%s %s: %v", name, pl, err)
				continue
			}
			err = r.Run(steps)
			if err == nil {
				err = r.Download()
			}
			r.Close()
			if err != nil {
				t.Errorf("%s %s: %v", name, pl, err)
				continue
			}
			v := b.Check(want, got)
			if v.Outside > 0 {
				t.Errorf("%s %s: %d of %d cells outside their bound; first %s%v: error %.3g > bound %.3g", name, pl, v.Outside, v.Cells, v.Grid, v.Where, v.Diff, v.Bound)
			}
			maxAbs, _ := ref.Compare(want, got)
			t.Logf("%s %s: max abs error %.3g, largest bound %.3g, largest error/bound %.3g, amplification %.3g", name, pl, maxAbs, v.MaxB, v.Ratio, b.Amplification)
			runs++
		}
	}
	if runs == 0 {
		t.Fatal("no program divides or takes square roots")
	}
}

// TestFastMathBoundOpenCL runs one plan per program on PoCL (CI time).
func TestFastMathBoundOpenCL(t *testing.T) {
	testkit.LongTest(t)
	runFastMathBound(t, "opencl", []string{"tiled"})
}

// TestFastMathBoundCUDA runs the one-step, shared-memory and temporal plans on a GPU.
func TestFastMathBoundCUDA(t *testing.T) {
	runFastMathBound(t, "cuda", []string{"naive", "tiled", "n5d", "stream25d"})
}
