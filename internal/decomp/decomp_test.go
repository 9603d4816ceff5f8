package decomp

import (
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"tempest/internal/cpu"
	"tempest/internal/gpu"
	"tempest/internal/gpurun"
	"tempest/internal/gridio"
	"tempest/internal/ir"
	"tempest/internal/load"
	"tempest/internal/plan"
	"tempest/internal/ref"
	"tempest/internal/state"
)

// progs are small programs covering every boundary kind along the split axis, a radius-2
// star, a two-level grid, an input grid, integers and 3D. Their initial values vary along
// every axis so that a wrong halo shows.
var progs = []struct{ name, src string }{
	{"clamp", `stencil clamp
axes y, x
type f32
state u init sin(0.3 * f32(x) + 0.7 * f32(y)) boundary clamp
update u = 0.2 * (u + u[y-1] + u[y+1] + u[x-1] + u[x+1])`},
	{"fixed_r2", `stencil fixed
axes y, x
type f32
state u init cos(0.2 * f32(x * y) + 0.5 * f32(y)) boundary fixed
update u = 0.1 * (2 * u + u[y-1] + u[y+1] + u[y-2] + u[y+2] + u[x-1] + u[x+1] + u[x-2] + u[x+2])`},
	{"periodic", `stencil periodic
axes y, x
type f64
state u init sin(0.4 * f64(x) - 0.9 * f64(y)) boundary periodic
update u = 0.25 * (u[y-1] + 2 * u[y+1] + u[x-1] - 0.5 * u[x+1] + 0.25 * u)`},
	{"constant", `stencil constant
axes y, x
type f32
state u init f32(x % 7) + 0.5 * f32(y % 5) boundary constant(1.5)
update u = 0.2 * (u + u[y-1] + u[y+1] + u[x-1] + u[x+1]) + 0.1 * u[y+1, x-1]`},
	{"mirror", `stencil mirror
axes y, x
type f32
state u init sin(0.3 * f32(x) + 0.7 * f32(y)) boundary mirror
update u = 0.3 * u + 0.2 * (u[y-1] + u[y+2] + u[x-1] + u[x+1]) - 0.1 * u[y-2]`},
	{"life_i32", `stencil life
axes y, x
type i32
state c init select((x * 7 + y * 13) % 5 < 2, 1, 0) boundary periodic
let n = c[y-1,x-1] + c[y-1] + c[y-1,x+1] + c[x-1] + c[x+1] + c[y+1,x-1] + c[y+1] + c[y+1,x+1]
update c = select(n == 3 || (n == 2 && c == 1), 1, 0)`},
	{"wave_two_level", `stencil wave
axes y, x
type f32
param c = 0.5
state u
  init exp(-0.02 * f32((x - size(x) / 3) * (x - size(x) / 3) + (y - size(y) / 3) * (y - size(y) / 3)))
  prev 0.9 * exp(-0.02 * f32((x - size(x) / 3) * (x - size(x) / 3) + (y - size(y) / 3) * (y - size(y) / 3)))
  boundary constant(0)
update u = 0.999 * (2 * u - u.prev + c * c * (u[y-1] + u[y+1] + u[x-1] + u[x+1] - 4 * u))`},
	{"input_grid", `stencil hot
axes y, x
type f32
input power init select((x + 3 * y) % 11 < 3, 2.0, 0.1) boundary clamp
state t init 80.0 boundary clamp
update t = t + power[y+1] + (t[y+1] + t[y-1] - t) / 10.0 + (t[x+1] + t[x-1] - t) / 10.0 + (80.0 - t) / 4.0`},
	{"coords_clamp", `stencil coords
axes y, x
type f32
state u init sin(0.3 * f32(x) + 0.7 * f32(y)) boundary clamp
update u = 0.2 * (u + u[y-1] + u[y+1] + u[x-1] + u[x+1]) + 0.01 * f32(y * 3 - size(y) + x)`},
	{"coords_periodic", `stencil coordsp
axes y, x
type f32
state u init sin(0.3 * f32(x) + 0.7 * f32(y)) boundary periodic
update u = 0.2 * (u + u[y-1] + u[y+2] + u[x-1] + u[x+1]) + 0.01 * f32((y * 5) % 7 - size(y) / 2)`},
	{"coords_edge", `stencil plate
axes y, x
type f32
state u init 0.0 boundary edge(y < 0 ? 100.0 : 0.5 * f32(y % 9 + x))
update u = 0.25 * (u[y-1] + u[y+1] + u[x-1] + u[x+1])`},
	{"pathfinder_1d_layers", `stencil pathfinder
axes x
type i32
param ROWS = 20
input wall: i32 layers ROWS
  init i32(10 * rand())
state cost: i32
  init i32(10 * rand())
  boundary clamp
update cost = wall(step + 1)[x] + min(cost[x-1], min(cost, cost[x+1]))`},
	{"fixed3d", `stencil fixed3d
axes z, y, x
type f32
state u init sin(0.3 * f32(x) + 0.7 * f32(y) - 0.45 * f32(z)) boundary fixed
update u = 0.15 * (u + u[z-1] + u[z+1] + u[y-1] + u[y+1] + u[x-1] + u[x+1]) + 0.05 * u[z+1, y-1]`},
	{"fixed1d_r2", `stencil fixed1d
axes x
type f32
state u init sin(0.3 * f32(x)) boundary fixed
update u = 0.3 * u + 0.2 * (u[x-1] + u[x+1]) + 0.15 * (u[x-2] + u[x+2])`},
	{"star3d", `stencil star3d
axes z, y, x
type f32
state u init sin(0.3 * f32(x) + 0.7 * f32(y) - 0.45 * f32(z)) boundary clamp
update u = 0.15 * (u + u[z-1] + u[z+1] + u[y-1] + u[y+1] + u[x-1] + u[x+1]) + 0.05 * u[z+1, y-1]`},
}

func mustProgram(t *testing.T, name, src string) *ir.Program {
	t.Helper()
	p, err := load.Source(name+".stencil", src, load.Options{})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return p
}

func initial(t *testing.T, p *ir.Program) *state.State {
	t.Helper()
	shape := map[int][]int{1: {47}, 2: {31, 17}, 3: {13, 9, 11}}[p.Dims()]
	s, err := state.New(p, shape, state.DefaultParams(p), 2)
	if err != nil {
		t.Fatal(err)
	}
	ref.Init(s)
	return s
}

// sameBits reports where two states' grids (every level) first differ bit for bit.
func sameBits(a, b *state.State) error {
	for _, g := range a.Prog.Grids {
		for l, pair := range [][2]*gridio.Array{{a.Cur[g.Index], b.Cur[g.Index]}, {a.Prev[g.Index], b.Prev[g.Index]}} {
			if pair[0] == nil {
				continue
			}
			for i := 0; i < pair[0].Len(); i++ {
				x, y := state.Get(pair[0], g.Type, i), state.Get(pair[1], g.Type, i)
				if math.Float64bits(x.F) != math.Float64bits(y.F) || x.I != y.I {
					return fmt.Errorf("grid %s level %d differs at cell %d of %v: %v vs %v", g.Name, l, i, a.Shape, x, y)
				}
			}
		}
	}
	if a.Steps != b.Steps {
		return fmt.Errorf("steps %d vs %d", a.Steps, b.Steps)
	}
	return nil
}

func TestLayout(t *testing.T) {
	p := mustProgram(t, "clamp", progs[0].src)
	per := mustProgram(t, "periodic", progs[2].src)
	fixed := mustProgram(t, "fixed", progs[1].src)
	cases := []struct {
		p             *ir.Program
		rows, parts   int
		period        int
		own           string
		below, above  string
		exchanges     string
		halo          int
		wantErrSubstr string
	}{
		{p: p, rows: 10, parts: 1, period: 4, own: "[[0 10]]", below: "[0]", above: "[0]", exchanges: "[]", halo: 4},
		{p: p, rows: 10, parts: 3, period: 2, own: "[[0 3] [3 6] [6 10]]", below: "[0 2 2]", above: "[2 2 0]", halo: 2,
			exchanges: "[{1 2 0 3 2} {0 1 1 0 2} {2 2 1 5 2} {1 3 2 0 2}]"},
		{p: per, rows: 8, parts: 2, period: 3, own: "[[0 4] [4 8]]", below: "[3 3]", above: "[3 3]", halo: 3,
			exchanges: "[{1 4 0 0 3} {1 3 0 7 3} {0 4 1 0 3} {0 3 1 7 3}]"},
		{p: per, rows: 5, parts: 1, period: 2, own: "[[0 5]]", below: "[2]", above: "[2]", halo: 2,
			exchanges: "[{0 5 0 0 2} {0 2 0 7 2}]"},
		{p: fixed, rows: 20, parts: 2, period: 2, own: "[[0 10] [10 20]]", below: "[0 4]", above: "[4 0]", halo: 4,
			exchanges: "[{1 4 0 10 4} {0 6 1 0 4}]"},
		{p: p, rows: 10, parts: 4, period: 3, wantErrSubstr: "owns 2 rows along y but its neighbours need halos of 3"},
		{p: p, rows: 3, parts: 4, period: 1, wantErrSubstr: "use at most 3"},
		{p: p, rows: 3, parts: 0, period: 1, wantErrSubstr: "at least one"},
	}
	for _, c := range cases {
		name := fmt.Sprintf("%s_%d_%d_%d", c.p.Name, c.rows, c.parts, c.period)
		t.Run(name, func(t *testing.T) {
			l, err := NewLayout(c.p, []int{c.rows, 7}, c.parts, c.period)
			if c.wantErrSubstr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErrSubstr) {
					t.Fatalf("error %v, want one containing %q", err, c.wantErrSubstr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := fmt.Sprint(l.Own, l.Below, l.Above, l.Exchanges(), l.Halo)
			want := strings.Join([]string{c.own, c.below, c.above, c.exchanges, fmt.Sprint(c.halo)}, " ")
			if got != want {
				t.Errorf("layout %s, want %s", got, want)
			}
		})
	}
}

func TestSplittable(t *testing.T) {
	cases := []struct{ src, want string }{
		{`stencil a
axes y, x
state u boundary clamp
update u = u[y+1] + f32(x)`, ""},
		{`stencil b
axes y, x
state u boundary clamp
update u = u[y+1] + f32(y) * f32(size(y))`, ""},
		{`stencil e
axes y, x
state u boundary periodic
state v boundary clamp
update u = v[y+1]
update v = u[y-1]`, "some grids are periodic along y and others are not"},
	}
	for _, c := range cases {
		p := mustProgram(t, "s", c.src)
		err := Splittable(p)
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", p.Name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "run it on one device") {
			t.Errorf("%s: error %v, want %q", p.Name, err, c.want)
		}
	}
}

// TestCPUBitwise runs every program decomposed over the CPU engine with the local transport
// and holds it bitwise equal to the CPU engine on the whole domain (which its own tests hold
// bitwise equal to the reference interpreter): tolerance zero. Chunked runs advance in calls
// that ignore the exchange period, as a run loop stopping for events does.
func TestCPUBitwise(t *testing.T) {
	const steps = 7
	for _, pr := range progs {
		p := mustProgram(t, pr.name, pr.src)
		want := initial(t, p)
		e := cpu.New(want)
		e.Run(steps, nil)
		e.Sync()
		for _, c := range []struct {
			parts, period int
			chunked       bool
		}{{1, 3, false}, {2, 1, false}, {3, 3, false}, {4, 2, false}, {3, 3, true}, {2, 2, true}} {
			name := fmt.Sprintf("%s/k%d_e%d", pr.name, c.parts, c.period)
			if c.chunked {
				name += "_chunked"
			}
			t.Run(name, func(t *testing.T) {
				g := initial(t, p)
				l, err := NewLayout(p, g.Shape, c.parts, c.period)
				if err != nil {
					t.Fatal(err)
				}
				d, err := Split(g, l, All, func(i int, s *state.State) (Part, error) { return NewHostPart(s), nil }, Local{})
				if err != nil {
					t.Fatal(err)
				}
				defer d.Close()
				// One call for all steps, or chunks that ignore the period with gathers between
				// them (as the run loop's events do): the same exchanges, the same values.
				chunks := []int{steps}
				if c.chunked {
					chunks = []int{1, 3, 2, 1}
				}
				for _, n := range chunks {
					if err := d.Run(n); err != nil {
						t.Fatal(err)
					}
					if err := d.Gather(g); err != nil {
						t.Fatal(err)
					}
				}
				if err := sameBits(want, g); err != nil {
					t.Error(err)
				}
				if wantEx := (steps+c.period-1)/c.period - 1; len(l.Exchanges()) > 0 && d.Exchanges != wantEx {
					t.Errorf("%d exchanges, want %d", d.Exchanges, wantEx)
				}
			})
		}
	}
}

// TestOpenCLBitwise runs plans decomposed into sub-domains of one OpenCL device (PoCL in CI)
// with device-to-device halo copies and holds them bitwise equal to the same plan on the
// whole domain: tolerance zero. Steps (11) are not a multiple of n5d's bt (4), so the last
// period runs shallower launches.
func TestOpenCLBitwise(t *testing.T) {
	dev := openOrSkip(t, "opencl")
	// PoCL compiles slowly: the programs the CPU test does not cover as well (n5d's fixed
	// boundaries, wraps, positions, two levels, inputs, layers), with their deep plans, a third
	// of them with a one-step plan too.
	if testing.Short() {
		t.Skip("-short")
	}
	skip := map[string]bool{"constant": true, "life_i32": true, "coords_clamp": true, "star3d": true}
	testDeviceBitwise(t, dev, []string{"-cl-opt-disable"}, []int{3}, 3, skip, func([]Part) Transport { return Local{} })
}

// TestCUDABitwise is TestOpenCLBitwise on a CUDA device: several sub-domains of one GPU with
// cuMemcpyDtoD halo copies (the local transport), n5d among the plans.
func TestCUDABitwise(t *testing.T) {
	dev := openOrSkip(t, "cuda")
	testDeviceBitwise(t, dev, nil, []int{2, 3}, 1, nil, func([]Part) Transport { return Local{} })
}

// TestNCCLOneRank runs every program as one NCCL rank on one CUDA device: periodic programs
// exchange their halos with themselves through ncclSend/ncclRecv; results are bitwise those
// of the plain run. Skips without CUDA or NCCL (TEMPEST_REQUIRE_NCCL=1 makes that fail).
func TestNCCLOneRank(t *testing.T) {
	n, devs := ncclDevices(t, 1)
	dev := devs[0]
	tr := ncclTransport(t, n, devs)
	defer tr.Close()
	testDeviceBitwise(t, dev, nil, []int{1}, 1, nil, func([]Part) Transport { return tr })
}

func openOrSkip(t *testing.T, backend string) gpu.Device {
	t.Helper()
	dev, err := gpu.Open(backend)
	if err != nil {
		if errors.Is(err, gpu.ErrUnavailable) && os.Getenv("TEMPEST_REQUIRE_"+strings.ToUpper(backend)) != "1" {
			t.Skipf("no %s: %v", backend, err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	return dev
}

// testDeviceBitwise runs each program with a one-step plan and a deep one (n5d where the
// boundary is fixed, pyramid elsewhere) on dev, whole and split into each count of
// sub-domains, and requires equal bits. Every every-th program also runs a one-step plan;
// programs in skip do not run.
func testDeviceBitwise(t *testing.T, dev gpu.Device, extra []string, counts []int, every int, skip map[string]bool, transport func([]Part) Transport) {
	cache := gpurun.NewModules(dev)
	cache.Extra = extra
	defer cache.Close()
	const steps = 11
	for pi, pr := range progs {
		if skip[pr.name] {
			continue
		}
		p := mustProgram(t, pr.name, pr.src)
		// n5d takes fixed boundaries only; the others get the other temporal blocking plan.
		deep := "pyramid:ph=2"
		switch {
		case p.Grids[0].BC[0].Kind == ir.Fixed && p.Dims() == 1:
			// 1D with a fixed rim: the pyramid's register tile (lower's pyramidRX).
			deep = "pyramid:bx=16,ph=3,rx=4"
		case p.Grids[0].BC[0].Kind == ir.Fixed:
			deep = "n5d:bt=4"
		}
		plans := []string{deep}
		if pi%every == 0 {
			plans = append(plans, []string{"naive", "tiled"}[pi/every%2])
		}
		for _, planText := range plans {
			pl, err := plan.Parse(planText, p)
			if err != nil {
				t.Fatal(err)
			}
			t.Run(pr.name+"/"+planText, func(t *testing.T) {
				want := initial(t, p)
				oneDevice(t, dev, want, pl, cache, steps)
				depth, err := PlanDepth(want, pl)
				if err != nil {
					t.Fatal(err)
				}
				for _, parts := range counts {
					g := initial(t, p)
					l, err := NewLayout(p, g.Shape, parts, depth)
					if err != nil {
						t.Fatal(err)
					}
					d, err := Split(g, l, All, func(i int, s *state.State) (Part, error) { return NewDevicePart(dev, s, pl, cache) }, transport(nil))
					if err != nil {
						t.Fatal(err)
					}
					if err := d.Run(steps); err != nil {
						t.Fatal(err)
					}
					if err := d.Gather(g); err != nil {
						t.Fatal(err)
					}
					for _, p := range d.Parts {
						p.Close()
					}
					if err := sameBits(want, g); err != nil {
						t.Errorf("%d sub-domains, period %d: %v", parts, depth, err)
					}
				}
			})
		}
	}
}

// freeAddr is a local TCP address nothing listens on.
func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("no local TCP: %v", err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestRelayRanks runs three ranks (goroutines standing for processes) that meet at a
// coordinator, exchange halos through it and gather on rank 0: bitwise the single run. The
// CPU engine's parts exchange host rows; one OpenCL case reads and writes device slabs.
func TestRelayRanks(t *testing.T) {
	host := func(i int, s *state.State) (Part, error) { return NewHostPart(s), nil }
	for _, name := range []string{"periodic", "wave_two_level", "input_grid"} {
		t.Run(name, func(t *testing.T) { testRelay(t, name, host, nil, Split) })
	}
	t.Run("wave_two_level/opencl", func(t *testing.T) {
		dev := openOrSkip(t, "opencl")
		cache := gpurun.NewModules(dev)
		cache.Extra = []string{"-cl-opt-disable"}
		defer cache.Close()
		pl, err := plan.Parse("naive", mustProgram(t, "wave", progs[6].src))
		if err != nil {
			t.Fatal(err)
		}
		testRelay(t, "wave_two_level", func(i int, s *state.State) (Part, error) { return NewDevicePart(dev, s, pl, cache) }, &pl, Split)
	})
}

// testRelay runs program name on three relayed ranks with parts from build and compares with
// the whole domain on the CPU engine (pl nil) or on one device part built the same way;
// split is Split or SplitOverlapped.
func testRelay(t *testing.T, name string, build func(i int, s *state.State) (Part, error), pl *plan.Plan,
	split func(*state.State, *Layout, func(int) bool, func(int, *state.State) (Part, error), Transport) (*Domain, error)) {
	const steps, ranks = 9, 3
	var src string
	for _, pr := range progs {
		if pr.name == name {
			src = pr.src
		}
	}
	p := mustProgram(t, name, src)
	want := initial(t, p)
	if pl == nil {
		e := cpu.New(want)
		e.Run(steps, nil)
		e.Sync()
	} else {
		one, err := build(0, want)
		if err != nil {
			t.Fatal(err)
		}
		if err := one.Run(steps); err != nil {
			t.Fatal(err)
		}
		if err := one.Sync(); err != nil {
			t.Fatal(err)
		}
		one.Close()
	}
	addr := freeAddr(t)
	var wg sync.WaitGroup
	errs := make([]error, ranks)
	var got *state.State
	for r := 0; r < ranks; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = func() error {
				c, err := Connect(addr, r, ranks, JoinOptions{Timeout: 20 * time.Second})
				if err != nil {
					return err
				}
				defer c.Close()
				g := initial(t, p)
				l, err := NewLayout(p, g.Shape, ranks, 2)
				if err != nil {
					return err
				}
				d, err := split(g, l, func(i int) bool { return i == r }, build, c)
				if err != nil {
					return err
				}
				defer d.Close()
				if err := d.Run(steps); err != nil {
					return err
				}
				if err := d.Parts[r].Sync(); err != nil {
					return err
				}
				if err := c.GatherState(l, g, d.Parts[r]); err != nil {
					return err
				}
				if r == 0 {
					g.Steps = d.Parts[0].State().Steps
					got = g
				}
				return nil
			}()
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	if err := sameBits(want, got); err != nil {
		t.Error(err)
	}
}

func TestConnectErrors(t *testing.T) {
	if _, err := Connect("127.0.0.1:1", 2, 2, JoinOptions{Timeout: time.Second}); err == nil || !strings.Contains(err.Error(), "ranks are numbered 0 to ranks-1") {
		t.Errorf("rank 2 of 2: %v", err)
	}
	if _, err := Connect(freeAddr(t), 1, 2, JoinOptions{Timeout: 300 * time.Millisecond}); err == nil || !strings.Contains(err.Error(), "cannot reach the coordinator") {
		t.Errorf("no coordinator: %v", err)
	}
}

// deepPart is a host part whose plan claims launches of depth steps.
type deepPart struct {
	Part
	depth int
}

func (d deepPart) Depth() int { return d.depth }

func TestPeriodMultiple(t *testing.T) {
	p := mustProgram(t, "clamp", progs[0].src)
	for _, c := range []struct {
		period, depth int
		ok            bool
	}{{8, 4, true}, {4, 4, true}, {6, 4, false}, {2, 4, false}} {
		g := initial(t, p)
		l, err := NewLayout(p, g.Shape, 2, c.period)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Split(g, l, All, func(i int, s *state.State) (Part, error) { return deepPart{NewHostPart(s), c.depth}, nil }, Local{})
		if c.ok != (err == nil) || (err != nil && !strings.Contains(err.Error(), fmt.Sprintf("choose a multiple of %d", c.depth))) {
			t.Errorf("period %d, depth %d: %v", c.period, c.depth, err)
		}
	}
}

// fakeHub stands for NCCL between ranks of one process: each rank's group waits for every
// rank's, then the k-th send from a to b fills the k-th receive on b from a, as NCCL pairs
// them. It checks the NCCL transport's order, offsets and sizes without NCCL.
type fakeHub struct {
	mu     sync.Mutex
	cond   *sync.Cond
	ranks  int
	posted [][]gpu.P2P
	in     int
	gen    int
	err    error
	due    []fakeTransfer // the transfers started exchanges left to a Wait
	// aborted: a rank's communicator was aborted; every group waiting or posted fails.
	aborted bool
	// async is what the communicators report as met in the background (AsyncError).
	async error
}

// fakeTransfer is a started transfer from rank from to rank to: it lands at the first Wait of
// either, the latest a real one may (the sender's later runs may overwrite its source rows
// after its Wait, the receiver's may read the target rows after its own).
type fakeTransfer struct {
	from, to int
	send     gpu.P2P
	recv     gpu.P2P
}

// fakeNCCL is NCCL's transport over fake communicators of parts ranks (fakeComm).
func fakeNCCL(parts int) *NCCL {
	h := &fakeHub{ranks: parts, posted: make([][]gpu.P2P, parts)}
	h.cond = sync.NewCond(&h.mu)
	tr := &NCCL{Comms: make([]Comm, parts)}
	for i := range tr.Comms {
		tr.Comms[i] = fakeComm{h, i}
	}
	return tr
}

// oneDevice runs pl on s for steps on dev, unsplit, and downloads the result into s: what the
// split runs are held to.
func oneDevice(t *testing.T, dev gpu.Device, s *state.State, pl plan.Plan, cache *gpurun.Modules, steps int) {
	t.Helper()
	r, err := gpurun.PrepareWith(dev, s, pl, cache)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Run(steps); err != nil {
		t.Fatal(err)
	}
	if err := r.Download(); err != nil {
		t.Fatal(err)
	}
}

type fakeComm struct {
	h    *fakeHub
	rank int
}

func (c fakeComm) Close() error { return nil }

// Abort fails the groups waiting for the other ranks and every later one, as NCCL's abort does.
func (c fakeComm) Abort() {
	c.h.mu.Lock()
	defer c.h.mu.Unlock()
	c.h.aborted = true
	c.h.cond.Broadcast()
}

var errFakeAborted = errors.New("fake communicator aborted")

func (c fakeComm) AsyncError() error {
	c.h.mu.Lock()
	defer c.h.mu.Unlock()
	return c.h.async
}

func (c fakeComm) Exchange(ops []gpu.P2P) error { return c.h.exchange(c.rank, ops, false) }

// Start pairs the transfers as Exchange does but copies nothing until each receiving rank's
// Wait, the latest a real transfer may land, reading the sources then: a domain that ran a
// band over the exchanged rows before Wait would get other bits.
func (c fakeComm) Start(ops []gpu.P2P) error { return c.h.exchange(c.rank, ops, true) }

// StartAfter launches first's kernels, then starts the transfers: one queue keeps them in order.
func (c fakeComm) StartAfter(ops []gpu.P2P, first func() error) error {
	if err := first(); err != nil {
		return err
	}
	return c.Start(ops)
}

func (c fakeComm) Wait() error {
	h := c.h
	h.mu.Lock()
	defer h.mu.Unlock()
	keep := h.due[:0]
	var first error
	for _, tr := range h.due {
		if tr.from != c.rank && tr.to != c.rank {
			keep = append(keep, tr)
			continue
		}
		if err := gpu.CopyRange(tr.recv.Buf, tr.recv.Off, tr.send.Buf, tr.send.Off, tr.send.Bytes); err != nil && first == nil {
			first = err
		}
	}
	h.due = keep
	return first
}

func (h *fakeHub) exchange(rank int, ops []gpu.P2P, deferred bool) error {
	c := fakeComm{h, rank}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.aborted {
		return errFakeAborted
	}
	gen := h.gen
	h.posted[c.rank] = ops
	h.in++
	if h.in < h.ranks {
		for gen == h.gen && !h.aborted {
			h.cond.Wait()
		}
		if gen == h.gen {
			return errFakeAborted
		}
		return h.err
	}
	h.err = nil
	for a := 0; a < h.ranks; a++ {
		for b := 0; b < h.ranks; b++ {
			var sends, recvs []gpu.P2P
			for _, o := range h.posted[a] {
				if o.Send && o.Peer == b {
					sends = append(sends, o)
				}
			}
			for _, o := range h.posted[b] {
				if !o.Send && o.Peer == a {
					recvs = append(recvs, o)
				}
			}
			if len(sends) != len(recvs) {
				h.err = fmt.Errorf("%d sends from %d to %d, %d receives", len(sends), a, b, len(recvs))
			}
			for k := range min(len(sends), len(recvs)) {
				s, r := sends[k], recvs[k]
				if s.Bytes != r.Bytes {
					h.err = fmt.Errorf("send %d from %d to %d of %d bytes meets a receive of %d", k, a, b, s.Bytes, r.Bytes)
					continue
				}
				if deferred {
					h.due = append(h.due, fakeTransfer{a, b, s, r})
				} else if err := gpu.CopyRange(r.Buf, r.Off, s.Buf, s.Off, s.Bytes); err != nil {
					h.err = err
				}
			}
		}
	}
	h.in = 0
	h.gen++
	h.cond.Broadcast()
	return h.err
}

// TestNCCLTransportOrder runs the NCCL transport over a fake communicator on OpenCL device
// parts (3 ranks; 2 periodic ranks, each sending both halos to the other): bitwise equal to
// the whole domain.
func TestNCCLTransportOrder(t *testing.T) {
	dev := openOrSkip(t, "opencl")
	cache := gpurun.NewModules(dev)
	cache.Extra = []string{"-cl-opt-disable"}
	defer cache.Close()
	const steps = 9
	for _, c := range []struct {
		prog  int
		parts int
	}{{6, 3}, {2, 2}} { // wave_two_level (constant edges, two levels), periodic
		pr := progs[c.prog]
		p := mustProgram(t, pr.name, pr.src)
		pl, err := plan.Parse("pyramid:ph=2", p)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(fmt.Sprintf("%s/%d", pr.name, c.parts), func(t *testing.T) {
			want := initial(t, p)
			oneDevice(t, dev, want, pl, cache, steps)
			tr := fakeNCCL(c.parts)
			g := initial(t, p)
			l, err := NewLayout(p, g.Shape, c.parts, 2)
			if err != nil {
				t.Fatal(err)
			}
			d, err := Split(g, l, All, func(i int, s *state.State) (Part, error) { return NewDevicePart(dev, s, pl, cache) }, tr)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if err := d.Run(steps); err != nil {
				t.Fatal(err)
			}
			if err := d.Gather(g); err != nil {
				t.Fatal(err)
			}
			if err := sameBits(want, g); err != nil {
				t.Error(err)
			}
			if d.Exchanges != 4 {
				t.Errorf("%d exchanges, want 4", d.Exchanges)
			}
		})
	}
}

// TestAbortStopsTheParts: a part whose peer rank never posts (it died) waits in its exchange
// until the transport is aborted (what a rank does when the coordinator reports another's
// failure); the run then returns the abort's error, and later exchanges fail at once.
func TestAbortStopsTheParts(t *testing.T) {
	d, _, tr := lonePart(t)
	done := make(chan error, 1)
	go func() { done <- d.Run(8) }()
	select {
	case err := <-done:
		t.Fatalf("the run returned before the abort: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	tr.Abort()
	awaitAbort(t, done)
	if err := d.Run(4); !errors.Is(err, errFakeAborted) {
		t.Errorf("a later run: %v, want the abort's error", err)
	}
}

// TestWatchAbortsOnAsyncError: an error a communicator meets in the background (with no
// process dying, so no coordinator notices) aborts the transport through Watch: the part
// waiting in its exchange returns, and the error reaches onError naming the sub-domain.
func TestWatchAbortsOnAsyncError(t *testing.T) {
	d, h, tr := lonePart(t)
	reported := make(chan error, 1)
	tr.Watch(20*time.Millisecond, func(err error) { reported <- err })
	done := make(chan error, 1)
	go func() { done <- d.Run(8) }()
	time.Sleep(100 * time.Millisecond)
	h.mu.Lock()
	h.async = errors.New("remote process exited or there was a network error")
	h.mu.Unlock()
	select {
	case err := <-reported:
		if !strings.Contains(err.Error(), "sub-domain 0's NCCL communicator: remote process exited") {
			t.Errorf("reported %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no error reported within 5 s")
	}
	awaitAbort(t, done)
}

// awaitAbort waits for a run's result on done: the abort's error, within 10 s.
func awaitAbort(t *testing.T, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		if !errors.Is(err, errFakeAborted) {
			t.Errorf("run: %v, want the abort's error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the run did not return within 10 s of the abort")
	}
}

// lonePart is part 0 of a two-part split over a fake NCCL communicator (tiled plan, OpenCL)
// whose rank 1 never posts, as if its process died: the part's exchanges wait for it.
func lonePart(t *testing.T) (*Domain, *fakeHub, *NCCL) {
	t.Helper()
	dev := openOrSkip(t, "opencl")
	cache := gpurun.NewModules(dev)
	t.Cleanup(cache.Close)
	pr := progs[0]
	p := mustProgram(t, pr.name, pr.src)
	pl, err := plan.Parse("tiled", p)
	if err != nil {
		t.Fatal(err)
	}
	h := &fakeHub{ranks: 2, posted: make([][]gpu.P2P, 2)}
	h.cond = sync.NewCond(&h.mu)
	tr := &NCCL{Comms: []Comm{fakeComm{h, 0}, nil}}
	g := initial(t, p)
	l, err := NewLayout(p, g.Shape, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	d, err := Split(g, l, func(i int) bool { return i == 0 }, func(i int, s *state.State) (Part, error) { return NewDevicePart(dev, s, pl, cache) }, tr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	return d, h, tr
}

// TestRangedPeriods runs n5d plans made to run their periods over ranges of planes
// (RangedPlan) as parts over the NCCL transport on a fake communicator, whose transfers land
// at the latest a real one may (each receiver's Wait, reading the sources then): the period's
// last launch computes the rows sent, the exchange starts, the launch's other rows follow, and
// a launch that wrote a sent row after the start, or read a halo row before the Wait, would
// give other bits. Parts of 2D and 3D programs, reach 1 and 2, a fixed rim wider than the reach,
// periods of several launches and of one, steps that end mid-period, calls that stop between
// periods: bitwise the plan on the whole domain.
func TestRangedPeriods(t *testing.T) {
	dev := openOrSkip(t, "opencl")
	testRanged(t, []gpu.Device{dev}, []string{"-cl-opt-disable"}, rangedCases(t), func(parts int) Transport { return fakeNCCL(parts) })
}

// TestRangedPeriodsNCCL is TestRangedPeriods through real NCCL, a rank per CUDA device, on two
// GPUs (it skips with fewer): the planes sent run on the communicator's stream beside the
// launch's other planes on the kernels' stream.
func TestRangedPeriodsNCCL(t *testing.T) {
	n, devs := ncclDevices(t, 2)
	if len(devs) < 2 {
		t.Skip("one CUDA device: NCCL needs a device per rank")
	}
	devs = devs[:2]
	var two []rangedCase
	for _, c := range rangedCases(t) {
		if c.parts == 2 {
			c.calls = []int{9, 8}
			two = append(two, c)
		}
	}
	testRanged(t, devs, nil, two, func(int) Transport { return ncclTransport(t, n, devs) })
}

// ncclDevices loads NCCL and opens up to max CUDA devices (skipping without CUDA or NCCL;
// TEMPEST_REQUIRE_NCCL=1 makes a missing NCCL fail).
func ncclDevices(t *testing.T, max int) (*gpu.NCCL, []gpu.Device) {
	first := openOrSkip(t, "cuda")
	n, err := gpu.LoadNCCL()
	if err != nil {
		if errors.Is(err, gpu.ErrUnavailable) && os.Getenv("TEMPEST_REQUIRE_NCCL") != "1" {
			t.Skipf("NCCL unavailable: %v", err)
		}
		t.Fatal(err)
	}
	devs := []gpu.Device{first}
	for i := 1; i < max; i++ {
		d, err := gpu.OpenOrdinal("cuda", i)
		if err != nil {
			break
		}
		t.Cleanup(func() { d.Close() })
		devs = append(devs, d)
	}
	return n, devs
}

// ncclTransport joins a fresh communicator with a rank on each of devs.
func ncclTransport(t *testing.T, n *gpu.NCCL, devs []gpu.Device) *NCCL {
	id, err := n.UniqueID()
	if err != nil {
		t.Fatal(err)
	}
	tr, err := NewNCCL(n, id, devs)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

type rangedCase struct {
	p             *ir.Program
	shape         []int
	plan          string
	parts, period int
	calls         []int
}

func rangedCases(t *testing.T) []rangedCase {
	star3d, err := load.File("../../examples/an5d/star3d1r.stencil", load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fixed := mustProgram(t, "fixed_r2", progs[1].src)
	return []rangedCase{
		{fixed, []int{61, 23}, "n5d:bx=16,bt=2,wave=true,rimblocks=true,chunk=5", 3, 4, []int{13}},
		{fixed, []int{61, 23}, "n5d:bx=16,bt=2,wave=true,chunk=7", 2, 2, []int{4, 5, 2}},
		{star3d, []int{40, 12, 14}, "n5d:bx=8,by=8,rx=2,bt=3,wave=true,pf=3,chunk=4", 3, 6, []int{6, 7}},
		{star3d, []int{40, 12, 14}, "n5d:bx=4,by=8,rx=2,bt=2,wave=true,edges=true,edgesfirst=true,chunk=5", 4, 2, []int{9}},
		{star3d, []int{40, 12, 14}, "n5d:bx=8,by=8,rx=2,bt=3,wave=true,rimblocks=true,align=true,chunk=4", 2, 6, []int{13}},
	}
}

// testRanged runs each case whole on devs[0] and split, part i on devs[i%len(devs)], halos
// through transport, with the sent planes through the transport (StartPartAfter) and before it
// (SerialSent): bitwise the same.
func testRanged(t *testing.T, devs []gpu.Device, extra []string, cases []rangedCase, transport func(parts int) Transport) {
	onDevs := newRoundRobin(t, devs, extra)
	for _, c := range cases {
		steps := 0
		for _, n := range c.calls {
			steps += n
		}
		name := fmt.Sprintf("%s/%s/k%d_e%d_%v", c.p.Name, c.plan, c.parts, c.period, c.calls)
		t.Run(name, func(t *testing.T) {
			pl, err := plan.Parse(c.plan, c.p)
			if err != nil {
				t.Fatal(err)
			}
			start := func() *state.State {
				s, err := state.New(c.p, c.shape, state.DefaultParams(c.p), 2)
				if err != nil {
					t.Fatal(err)
				}
				ref.Init(s)
				return s
			}
			want := start()
			oneDevice(t, devs[0], want, pl, onDevs.caches[devs[0]], steps)
			rpl, err := RangedPlan(pl)
			if err != nil {
				t.Fatal(err)
			}
			for _, serial := range []bool{false, true} {
				g := start()
				l, err := NewLayout(c.p, g.Shape, c.parts, c.period)
				if err != nil {
					t.Fatal(err)
				}
				d, err := Split(g, l, All, onDevs.parts(rpl), transport(c.parts))
				if err != nil {
					t.Fatal(err)
				}
				d.SerialSent = serial
				for i, p := range d.Parts {
					if _, ok := d.rangedPart(p); !ok {
						t.Fatalf("part %d does not run over ranges of planes", i)
					}
				}
				if err := d.Connect(); err != nil {
					d.Close()
					t.Fatal(err)
				}
				if err := runGather(t, d, g, want, c.calls...); err != nil {
					t.Errorf("serial %v: %v", serial, err)
				}
			}
		})
	}
}

// runGather runs the domain's calls, gathers into g and closes the domain (a failure is
// fatal), and says where g differs from want.
func runGather(t *testing.T, d *Domain, g, want *state.State, calls ...int) error {
	t.Helper()
	var err error
	for _, n := range calls {
		if err == nil {
			err = d.Run(n)
		}
	}
	if err == nil {
		err = d.Gather(g)
	}
	d.Close()
	if err != nil {
		t.Fatal(err)
	}
	return sameBits(want, g)
}
