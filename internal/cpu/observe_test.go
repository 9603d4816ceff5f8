package cpu

import (
	"math"
	"testing"

	"tempest/internal/gridio"
	"tempest/internal/load"
	"tempest/internal/ref"
	"tempest/internal/state"
)

// observePrograms exercise observables: every reduction, f32 values summed in f64, integer
// sums, .prev of one- and two-level grids, lets, offsets past the update's reach, boundary
// values, coordinates, parameters and step.
var observePrograms = []struct {
	name, src string
	shapes    [][]int
}{
	{"jacobi", `axes y, x
type f32
input f init select(abs(x - size(x)/2) < 2 && abs(y - size(y)/2) < 2, 1.0, 0.0)
state u init rand() boundary y: constant(0.5), x: edge(value*0.5 + f32(step))
update u = 0.25 * (u[x-1] + u[x+1] + u[y-1] + u[y+1] + f)
let d = u - u[x+1]
observe maxdiff = max(abs(u - u.prev))
observe mindiff = min(u - u.prev)
observe total = sum(u)
observe avg = mean(u[x+3] * d)
observe far = sum(u.prev[y-2, x+2] + f32(x) * 0.001 + f32(step))`,
		[][]int{{19, 23}, {1, 1}, {3, 300}, {40, 40}}},
	{"wave", `axes y, x
type f64
param c = 0.2
state u init exp(-0.05*((x-10)*(x-10) + (y-8)*(y-8))) prev 0 boundary periodic
update u = 2*u - u.prev + c*(u[x-1] + u[x+1] + u[y-1] + u[y+1] - 4*u)
observe energy = sum(0.5*(u - u.prev)*(u - u.prev) + 0.5*c*((u[x+1] - u)*(u[x+1] - u) + (u[y+1] - u)*(u[y+1] - u)))
observe peak = max(u)
observe low = min(u.prev)`,
		[][]int{{16, 21}, {2, 700}}},
	{"life", `axes y, x
type i32
state c init select(rand() < 0.35, 1, 0) boundary periodic
let n = sum(i in -1..1, j in -1..1) c[y+i, x+j]
update c = select(n - c == 3 || (c == 1 && n - c == 2), 1, 0)
observe alive = sum(c)
observe changed = sum(abs(c - c.prev))
observe density = mean(c)
observe most = max(n * (x + 1))`,
		[][]int{{20, 30}, {1, 7}}},
	{"heat3d", `axes z, y, x
type f64
state u init rand() boundary fixed
update u = (u[x-1] + u[x+1] + u[y-1] + u[y+1] + u[z-1] + u[z+1]) / 6
observe diff = max(abs(u - u.prev))
observe rms = mean((u - u.prev) * (u - u.prev))`,
		[][]int{{5, 6, 7}, {9, 8, 70}}},
}

// observeRef runs the reference for steps steps and observes, keeping the values before the
// last step of the grids whose .prev the observables read on one level.
func observeRef(s *state.State, steps int) []float64 {
	if steps > 0 {
		ref.Run(s, steps-1)
	}
	var before []*gridio.Array
	if steps > 0 {
		before = make([]*gridio.Array, len(s.Prog.Grids))
		for _, g := range s.Prog.PrevObserved() {
			before[g.Index] = state.CopyArray(s.Cur[g.Index])
		}
		ref.Step(s)
	}
	return ref.Observe(s, before)
}

// TestObserveMatchesReference: the engine's observables equal the reference's bit for bit,
// before the first step and after a few.
func TestObserveMatchesReference(t *testing.T) {
	for _, pr := range observePrograms {
		p, err := load.Source(pr.name+".stencil", pr.src, load.Options{})
		if err != nil {
			t.Fatalf("%s: %v", pr.name, err)
		}
		for _, shape := range pr.shapes {
			s, err := state.New(p, shape, state.DefaultParams(p), 0)
			if err != nil {
				t.Fatal(err)
			}
			ref.Init(s)
			want := s.Clone()
			eng := New(s)
			done := 0
			for _, at := range []int{0, 1, 4} {
				eng.Run(at-done, nil)
				got := eng.Observe()
				exp := observeRef(want, at-done)
				done = at
				if testing.Verbose() {
					t.Logf("%s %v step %d: %v", pr.name, shape, at, got)
				}
				for i, o := range p.Observes {
					if math.Float64bits(got[i]) != math.Float64bits(exp[i]) {
						t.Errorf("%s %v step %d: %s = %v (%x), reference %v (%x)", pr.name, shape, at, o.Name, got[i], math.Float64bits(got[i]), exp[i], math.Float64bits(exp[i]))
					}
				}
			}
		}
	}
}

// TestObserveState: observing a state as it is (a split run's gathered state) equals the
// reference's observation of it bit for bit, with the values before the last step and
// without them (.prev then reads the current values).
func TestObserveState(t *testing.T) {
	for _, pr := range observePrograms {
		p, err := load.Source(pr.name+".stencil", pr.src, load.Options{})
		if err != nil {
			t.Fatalf("%s: %v", pr.name, err)
		}
		for _, shape := range pr.shapes {
			s, err := state.New(p, shape, state.DefaultParams(p), 0)
			if err != nil {
				t.Fatal(err)
			}
			ref.Init(s)
			ref.Run(s, 2)
			before := make([]*gridio.Array, len(p.Grids))
			for _, g := range p.PrevObserved() {
				before[g.Index] = state.CopyArray(s.Cur[g.Index])
			}
			ref.Step(s)
			for _, b := range [][]*gridio.Array{before, nil} {
				got, want := ObserveState(s, b), ref.Observe(s, b)
				for i, o := range p.Observes {
					if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
						t.Errorf("%s %v (before given: %v): %s = %v, reference %v", pr.name, shape, b != nil, o.Name, got[i], want[i])
					}
				}
			}
		}
	}
}
