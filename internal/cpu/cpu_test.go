package cpu

import (
	"math"
	"os"
	"strings"
	"testing"

	"tempest/internal/ir"
	"tempest/internal/load"
	"tempest/internal/ref"
	"tempest/internal/state"
)

// Programs that exercise every feature the engine compiles. The engine must match the
// reference bitwise: both round every operation to the element type.
var programs = []struct {
	name, src string
	shapes    [][]int
	steps     int
}{
	{"fixed5pt", `axes y, x
type f32
state u init rand() boundary fixed
update u = (5.1*u[y-1] + 12.1*u[x-1] + 15.0*u + 12.2*u[x+1] + 5.2*u[y+1]) / 118`,
		[][]int{{17, 23}, {3, 3}, {2, 5}, {1, 1}, {5, 1}, {9, 700}}, 5},
	{"periodic-mirror-clamp", `axes y, x
type f64
state u init sin(0.3*x) + cos(0.7*y) boundary y: periodic, x: mirror
state v: f32 init rand() boundary clamp
let lap = u[x-2] + u[x+2] + u[y-3] + u[y+3] - 4*u
update u = u + 0.1*lap - 0.01*v[x+1, y-1]
update v = v*0.5 + f32(u)*0.25 + 0.25*v[x-1, y+1]`,
		[][]int{{7, 11}, {1, 1}, {2, 2}, {13, 600}}, 4},
	{"constant-edge", `axes y, x
type f32
param a = 0.2
state u init rand() boundary y: constant(a*2), x: edge(value*0.5 + f32(x) + f32(step))
update u = 0.25*(u[x-1] + u[x+1] + u[y-1] + u[y+1]) + a*sqrt(abs(u))`,
		[][]int{{6, 9}, {1, 3}, {4, 1}}, 4},
	{"wave", `axes y, x
type f32
param c = 0.2
state u init exp(-0.05*f32((x-10)*(x-10) + (y-8)*(y-8))) prev 0 boundary constant(0)
update u = 2*u - u.prev + c*(u[x-1] + u[x+1] + u[y-1] + u[y+1] - 4*u)`,
		[][]int{{16, 21}, {1, 1}}, 6},
	{"wave-fixed", `axes x
type f64
state u init f64(x % 5) prev f64(x % 3) boundary fixed
update u = 2*u - u.prev + 0.1*(u[x-1] + u[x+1] - 2*u)`,
		[][]int{{12}, {2}, {3}}, 5},
	{"life", `axes y, x
type i32
state c init select(rand() < 0.35, 1, 0) boundary periodic
let n = sum(i in -1..1, j in -1..1) c[y+i, x+j]
update c = select(n - c == 3 || (c == 1 && n - c == 2), 1, 0)`,
		[][]int{{20, 30}, {3, 3}, {1, 7}}, 8},
	{"pathfinder", `axes x
type i32
param rows = 6
input wall layers rows init i32(rand()*10)
state cost init 0 boundary clamp
update cost = wall(step+1)[x] + min(cost[x-1], min(cost, cost[x+1]))`,
		[][]int{{50}, {1}, {2}}, 5},
	{"layer-varies", `axes x
type f64
input w layers 3 init f64(x)
state u init 1 boundary mirror
update u = 0.5*u + w(x % 3)[x+1] / (1 + f64(x)) + fma(u, 0.5, 1.0) + pow(abs(u), 0.5) + max(u, 0.0) + floor(u) + i32(u) / 3 + i32(u) % 3`,
		[][]int{{40}, {1}}, 3},
	{"box3d", `axes z, y, x
type f32
state u init rand() boundary fixed
update u = sum(i in -1..1, j in -1..1, k in -1..1) (0.01 + 0.001*(9*i+3*j+k+13)) * u[z+i, y+j, x+k]`,
		[][]int{{5, 6, 7}, {3, 3, 3}, {2, 9, 4}}, 3},
	{"star3d-mixed", `axes z, y, x
type f64
state u init f64(x+y*3+z*7) / 100 boundary z: periodic, y: clamp, x: constant(1)
input k init 0.1 + 0.01*f64(x) boundary mirror
update u = u + k*(u[x-1] + u[x+1] + u[y-2] + u[y+2] + u[z-1] + u[z+1] - 6*u) - (x > 3 && y < 2 ? 0.5 : 0.0) * u
`, [][]int{{4, 5, 6}, {1, 1, 1}, {3, 1, 2}}, 3},
	{"nested-chains", `axes y, x
type f32
state u init rand() boundary x: fixed, y: periodic
state v init rand() boundary mirror
let l = 0.5*u[x-1] + 0.25*u[x+1] - u
update u = (u[x-1] + 0.5*u[x+1]) * (u[y-1] - 2*u[y+1] + v) / (1 + (0.1*v[x+1] + v[x-1]) * 0.5)
update v = (l - 3*v[y+1] + v[y-1] + 0.5*v[x-1] - v[x+1]) / 3 + l * 0.1`,
		[][]int{{9, 1030}, {2, 3}}, 3},
	{"ints64", `axes y, x
type i64
state a init i64(x*7 - y*3) boundary periodic
update a = (a[x+1] * 3 - a[y-1]) / (a % 4) + abs(a) - max(a, a[x-1]) + (-a)`,
		[][]int{{5, 6}}, 4},
}

// engineCodes are the two ways the engine computes a step: its Go closures and, where a C
// compiler exists, the step compiled to C. CI has a compiler, so there the C code may not be
// skipped.
var engineCodes = []struct {
	name   string
	native bool
}{{"go", false}, {"c", true}}

// withCode runs f with the engine set to compute as code says, skipping C where this machine
// has no compiler.
func withCode(t testing.TB, native bool, f func()) {
	if native {
		if _, err := nativeCompiler(); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("CI must have a C compiler: %v", err)
			}
			t.Skipf("no C code here: %v", err)
		}
	}
	old := UseNative
	UseNative = native
	defer func() { UseNative = old }()
	f()
}

func TestEngineMatchesReference(t *testing.T) {
	for _, code := range engineCodes {
		t.Run(code.name, func(t *testing.T) {
			withCode(t, code.native, func() { matchReference(t, code.native) })
		})
	}
}

func matchReference(t *testing.T, native bool) {
	for _, pc := range programs {
		p, err := load.Source(pc.name+".stencil", pc.src, load.Options{})
		if err != nil {
			t.Fatalf("%s: %v", pc.name, err)
		}
		for _, shape := range pc.shapes {
			s, err := state.New(p, shape, state.DefaultParams(p), 3)
			if err != nil {
				t.Fatal(err)
			}
			ref.Init(s)
			want := s.Clone()
			ref.Run(want, pc.steps)
			got := s.Clone()
			e := New(got)
			e.WaitNative()
			if native && e.nat == nil {
				t.Fatalf("%s: the step was not compiled to C: %v", pc.name, e.natErr)
			}
			if !native && e.nat != nil {
				t.Fatalf("%s: the step was compiled to C with UseNative off", pc.name)
			}
			e.Run(pc.steps, nil)
			e.Sync()
			for _, g := range p.Grids {
				a, b := want.Cur[g.Index].Float64s(), got.Cur[g.Index].Float64s()
				for i := range a {
					if math.Float64bits(a[i]) != math.Float64bits(b[i]) && !(math.IsNaN(a[i]) && math.IsNaN(b[i])) {
						t.Errorf("%s %v grid %s: cell %d: cpu %v, reference %v", pc.name, shape, g.Name, i, b[i], a[i])
						break
					}
				}
			}
			if got.Steps != pc.steps {
				t.Errorf("steps = %d", got.Steps)
			}
		}
	}
}

func TestChainsCompile(t *testing.T) {
	// The accumulation fast path must be chosen for a linear stencil.
	p, err := load.Source("x.stencil", programs[0].src, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := state.New(p, []int{8, 8}, nil, 1)
	c := &compiler{e: New(s), last: 1}
	b := p.Updates[0].Value.(*ir.Binary).X.(*ir.Binary)
	if c.chain(b, nil, 0, false) == nil {
		t.Fatal("the 5-point sum did not compile to an accumulation chain")
	}
	_ = strings.TrimSpace
}

// Programs whose steps the C code blocks in time (lower.HostBlockable).
var blockable = []struct {
	name, src string
	shapes    [][]int
}{
	{"fixed5pt", programs[0].src, [][]int{{17, 23}, {40, 9}, {3, 3}, {2, 5}, {5, 1}}},
	{"box3d", programs[8].src, [][]int{{13, 6, 7}, {30, 5, 4}, {3, 3, 3}}},
	{"two-grids-radius2", `axes y, x
type f64
param a = 0.1
input k init 0.1 + 0.01*f64(x % 7) boundary mirror
state u init rand() boundary fixed
state v init rand() boundary fixed
let l = u[y-2] + u[y+2] + u[x-1] + u[x+1] - 4*u + v[y+1, x-2]
update u = u + k*l*a + 0.001*f64(step % 3) - 0.01*v[y+1]
update v = 0.5*v + 0.25*(u[y-1] + u[y+2] + v[x+2, y-2]) * k[x+1] / 3 + min(l, 0.5)`,
		[][]int{{31, 12}, {9, 40}, {5, 5}}},
}

// TestBlockedStepsMatchReference runs the C code's temporally blocked sweep at several depths
// (in 3D also in tiles of one and two rows of the second axis), over step counts that leave a
// remainder, and compares bitwise with the reference.
func TestBlockedStepsMatchReference(t *testing.T) {
	withCode(t, true, func() {
		for _, pc := range blockable {
			p, err := load.Source(pc.name+".stencil", pc.src, load.Options{})
			if err != nil {
				t.Fatalf("%s: %v", pc.name, err)
			}
			for _, shape := range pc.shapes {
				for _, bt := range []int{2, 3, 5} {
					for _, tile := range []string{"", "1", "2"} {
						if tile != "" && len(shape) != 3 {
							continue
						}
						t.Setenv("TEMPEST_CPU_TILE", tile)
						blockedMatches(t, p, pc.name, shape, bt)
					}
				}
			}
		}
	})
}

// blockedMatches runs p over shape bt steps per sweep and compares it with the reference.
func blockedMatches(t *testing.T, p *ir.Program, name string, shape []int, bt int) {
	t.Helper()
	s, err := state.New(p, shape, state.DefaultParams(p), 3)
	if err != nil {
		t.Fatal(err)
	}
	ref.Init(s)
	const steps = 11
	want := s.Clone()
	ref.Run(want, steps)
	got := s.Clone()
	e := New(got)
	if err := e.SetStepsPerSweep(bt); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if e.nat == nil || e.nat.block == 0 || e.StepsPerSweep() != bt {
		t.Fatalf("%s: no blocked C code: %v", name, e.natErr)
	}
	e.Run(steps, nil)
	e.Sync()
	for _, g := range p.Grids {
		a, b := want.Cur[g.Index].Float64s(), got.Cur[g.Index].Float64s()
		for i := range a {
			if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
				t.Errorf("%s %v bt=%d tile %q grid %s: cell %d: cpu %v, reference %v", name, shape, bt, os.Getenv("TEMPEST_CPU_TILE"), g.Name, i, b[i], a[i])
				break
			}
		}
	}
}

// TestCTakesOverMidRun starts the Go code while the C builds (an empty cache, no wait), lets
// the C take over after two steps, and compares the result bitwise with the reference.
func TestCTakesOverMidRun(t *testing.T) {
	withCode(t, true, func() {
		t.Setenv("TEMPEST_CACHE_DIR", t.TempDir())
		old := NativeWait
		NativeWait = 0
		defer func() { NativeWait = old }()
		// A program of its own: a module this process loaded before would be adopted at once.
		src := strings.Replace(programs[1].src, "0.01*v", "0.0125*v", 1)
		p, err := load.Source("x.stencil", src, load.Options{})
		if err != nil {
			t.Fatal(err)
		}
		s, err := state.New(p, []int{13, 600}, state.DefaultParams(p), 3)
		if err != nil {
			t.Fatal(err)
		}
		ref.Init(s)
		want := s.Clone()
		ref.Run(want, 5)
		got := s.Clone()
		e := New(got)
		if e.pending == nil {
			t.Skip("the C was built within no wait at all")
		}
		if !strings.HasPrefix(e.Code(), "Go while") {
			t.Errorf("Code() = %q while the C builds", e.Code())
		}
		e.Run(2, nil)
		e.WaitNative()
		e.Run(3, nil)
		e.Sync()
		if at, ok := e.TookOver(); !ok || at > 2 || e.nat == nil {
			t.Fatalf("TookOver() = %d, %v (C code %v, %v)", at, ok, e.nat != nil, e.natErr)
		}
		for _, g := range p.Grids {
			a, b := want.Cur[g.Index].Float64s(), got.Cur[g.Index].Float64s()
			for i := range a {
				if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
					t.Fatalf("grid %s: cell %d: cpu %v, reference %v", g.Name, i, b[i], a[i])
				}
			}
		}
	})
}
