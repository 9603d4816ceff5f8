package gpurun

import (
	"math"
	"testing"

	"tempest/internal/cpu"
	"tempest/internal/gridio"
	"tempest/internal/load"
	"tempest/internal/plan"
	"tempest/internal/ref"
	"tempest/internal/state"
)

// observeCases are small programs with observables: every reduction, f32 values summed in
// f64, integer sums, .prev of one- and two-level grids, lets, boundary values at offsets
// beyond the update's reach, coordinates and step; each with the plans it runs under.
var observeCases = []struct {
	name, src string
	shapes    [][]int
	plans     []string
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
observe avg = mean(u[x+3] * d / 3.0)
observe far = sum(u.prev[y-2, x+2] + f32(x) * 0.001 + f32(step))`,
		[][]int{{19, 23}, {1, 1}, {40, 300}}, []string{"naive", "pyramid:ph=3"}},
	{"wave", `axes y, x
type f64
param c = 0.2
state u init exp(-0.05*((x-10)*(x-10) + (y-8)*(y-8))) prev 0 boundary periodic
update u = 2*u - u.prev + c*(u[x-1] + u[x+1] + u[y-1] + u[y+1] - 4*u)
observe energy = sum(0.5*(u - u.prev)*(u - u.prev) + 0.5*c*((u[x+1] - u)*(u[x+1] - u) + (u[y+1] - u)*(u[y+1] - u)))
observe peak = max(u)
observe low = min(u.prev)`,
		[][]int{{16, 21}}, []string{"naive", "pyramid:ph=2"}},
	{"life", `axes y, x
type i32
state c init select(rand() < 0.35, 1, 0) boundary periodic
let n = sum(i in -1..1, j in -1..1) c[y+i, x+j]
update c = select(n - c == 3 || (c == 1 && n - c == 2), 1, 0)
observe alive = sum(c)
observe changed = sum(abs(c - c.prev))
observe density = mean(c)
observe most = max(n * (x + 1))`,
		[][]int{{20, 30}, {300, 300}}, []string{"naive", "pyramid:ph=4"}},
	{"heat3d", `axes z, y, x
type f64
state u init rand() boundary fixed
update u = (u[x-1] + u[x+1] + u[y-1] + u[y+1] + u[z-1] + u[z+1]) / 6
observe diff = max(abs(u - u.prev))
observe rms = mean((u - u.prev) * (u - u.prev))`,
		[][]int{{9, 8, 70}}, []string{"naive", "n5d:bt=2", "n5d:bt=2,align=true", "forwardplane:align=true"}},
}

// observeOn checks a backend's observables: after steps that end in launches of every depth,
// the device's values equal bit for bit those the reference computes from the state the
// device holds (downloaded, with the values before the last step of one-level grids), and
// for integer programs the CPU engine's values from its own run.
func observeOn(t *testing.T, backend string) {
	dev := openDevice(t, backend)
	mods := matrixModules(dev)
	defer mods.Close()
	for _, c := range observeCases {
		p, err := load.Source(c.name+".stencil", c.src, load.Options{})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for _, shape := range c.shapes {
			for _, text := range c.plans {
				pl, err := plan.Parse(text, p)
				if err != nil {
					t.Fatalf("%s %s: %v", c.name, text, err)
				}
				s, err := state.New(p, shape, state.DefaultParams(p), 0)
				if err != nil {
					t.Fatal(err)
				}
				ref.Init(s)
				eng := cpu.New(s.Clone())
				r, err := PrepareWith(dev, s, pl, mods)
				if err != nil {
					t.Fatalf("%s %s: %v", c.name, pl, err)
				}
				done := 0
				for _, at := range []int{0, 3, 8} {
					if err := r.RunObserved(at - done); err != nil {
						t.Fatal(err)
					}
					eng.Run(at-done, nil)
					done = at
					got, err := r.Observe()
					if err != nil {
						t.Fatalf("%s %s: %v", c.name, pl, err)
					}
					if err := r.Download(); err != nil {
						t.Fatal(err)
					}
					before := make([]*gridio.Array, len(p.Grids))
					for _, g := range p.PrevObserved() {
						before[g.Index] = state.CopyArray(s.Cur[g.Index])
						if err := r.read(r.slots[g.Index][1], before[g.Index]); err != nil {
							t.Fatal(err)
						}
					}
					want := ref.Observe(s, before)
					var engine []float64
					if p.DefaultType.IsInt() {
						engine = eng.Observe()
					}
					for i, o := range p.Observes {
						if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
							t.Errorf("%s %s %v step %d: %s = %v on %s, %v by the reference on the same state", c.name, pl, shape, at, o.Name, got[i], backend, want[i])
						}
						if engine != nil && math.Float64bits(got[i]) != math.Float64bits(engine[i]) {
							t.Errorf("%s %s %v step %d: %s = %v on %s, %v on the CPU engine", c.name, pl, shape, at, o.Name, got[i], backend, engine[i])
						}
					}
				}
				r.Close()
			}
		}
	}
}

// TestObserveOpenCL checks the observable kernels on OpenCL (PoCL in CI).
func TestObserveOpenCL(t *testing.T) { observeOn(t, "opencl") }

// TestObserveCUDA is the same on CUDA; it runs on the GPU machine.
func TestObserveCUDA(t *testing.T) { observeOn(t, "cuda") }
