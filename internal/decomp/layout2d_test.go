package decomp

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"tempest/internal/cpu"
	"tempest/internal/gpu"
	"tempest/internal/gpurun"
	"tempest/internal/ir"
	"tempest/internal/plan"
	"tempest/internal/ref"
	"tempest/internal/state"
)

// boxProgs are box stencils (diagonal reads, which need the halo corners) for the
// two-dimensional layouts, beside progs: fixed and periodic edges, radius 2, positions along
// both split axes, 3D.
var boxProgs = []struct{ name, src string }{
	{"box_fixed", `stencil boxf
axes y, x
type f32
state u init sin(0.3 * f32(x) + 0.7 * f32(y)) boundary fixed
update u = 0.1 * (2 * u + u[y-1,x-1] + u[y-1] + u[y-1,x+1] + u[x-1] + u[x+1] + u[y+1,x-1] + u[y+1] + u[y+1,x+1])`},
	{"box_periodic_r2_coords", `stencil boxp
axes y, x
type f64
state u init cos(0.2 * f64(x * y) + 0.5 * f64(y)) boundary periodic
update u = 0.1 * (u[y-2,x-2] + u[y-2,x+2] + u[y+2,x-2] + 1.5 * u[y+2,x+1] + u[y-1,x+1] + u[y+1,x-1] + u) + 0.01 * f64((x * 3 + y) % 5 - size(x) / 4)`},
	{"box3d_clamp", `stencil box3d
axes z, y, x
type f32
state u init sin(0.3 * f32(x) + 0.7 * f32(y) - 0.45 * f32(z)) boundary clamp
update u = 0.1 * (u + u[z-1,y-1,x-1] + u[z+1,y+1,x+1] + u[z-1,y+1] + u[z+1,y-1] + u[y-1,x+1] + u[y+1,x-1] + u[z+1] + u[x-1])`},
}

// gridShape is the domain of the two-dimensional tests: large enough along both split axes
// for three parts with halos of 6.
func gridShape(p *ir.Program) []int {
	return map[int][]int{2: {26, 23}, 3: {14, 13, 5}}[p.Dims()]
}

func initialShape(t *testing.T, p *ir.Program, shape []int) *state.State {
	t.Helper()
	s, err := state.New(p, shape, state.DefaultParams(p), 2)
	if err != nil {
		t.Fatal(err)
	}
	ref.Init(s)
	return s
}

// gridProgs are the programs of the two-dimensional tests: every 2D and 3D one of progs and
// the box stencils.
func gridProgs() []struct{ name, src string } {
	var out []struct{ name, src string }
	for _, pr := range append(append(out, progs...), boxProgs...) {
		if !strings.Contains(pr.src, "axes x\n") {
			out = append(out, pr)
		}
	}
	return out
}

var grids = [][2]int{{2, 2}, {3, 2}, {1, 3}, {2, 1}}

// TestGridCPUBitwise runs every 2D and 3D program split over 2x2, 3x2, 1x3 and 2x1 grids of
// CPU engine parts with the local transport (row-segment copies for the columns), periods 1
// and 3, and holds them bitwise equal to the CPU engine on the whole domain: tolerance zero.
func TestGridCPUBitwise(t *testing.T) {
	const steps = 7
	for _, pr := range gridProgs() {
		p := mustProgram(t, pr.name, pr.src)
		want := initialShape(t, p, gridShape(p))
		e := cpu.New(want)
		e.Run(steps, nil)
		e.Sync()
		for _, gr := range grids {
			for _, period := range []int{1, 3} {
				t.Run(fmt.Sprintf("%s/%dx%d_e%d", pr.name, gr[0], gr[1], period), func(t *testing.T) {
					g := initialShape(t, p, gridShape(p))
					l, err := NewGrid(p, g.Shape, gr[0], gr[1], period)
					if err != nil {
						t.Fatal(err)
					}
					d, err := Split(g, l, All, func(i int, s *state.State) (Part, error) { return NewHostPart(s), nil }, Local{})
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
				})
			}
		}
	}
}

// gridCase is one two-dimensional device test: a program, a plan deeper than one step and an
// exchange period that is a larger multiple of it, on a grid of parts.
type gridCase struct {
	prog     string
	plan     string
	period   int
	rows, cs int
}

// gridDeviceCases keep PoCL's compilations few: a box with fixed edges (n5d), a periodic
// radius-2 box reading both positions (pyramid) and a 3D box with clamped edges.
var gridDeviceCases = []gridCase{
	{"box_fixed", "n5d:bt=2", 4, 2, 2},
	{"box_fixed", "n5d:bt=2", 4, 1, 3},
	{"box_periodic_r2_coords", "pyramid:ph=2", 2, 3, 2},
	{"wave_two_level", "pyramid:ph=2", 4, 2, 1},
	{"box3d_clamp", "pyramid:ph=2", 4, 2, 2},
}

func progSource(t *testing.T, name string) *ir.Program {
	t.Helper()
	for _, pr := range gridProgs() {
		if pr.name == name {
			return mustProgram(t, pr.name, pr.src)
		}
	}
	t.Fatalf("no program %s", name)
	return nil
}

// roundRobin builds part i on devs[i%len(devs)], each device with a module cache of its own.
type roundRobin struct {
	devs   []gpu.Device
	caches map[gpu.Device]*gpurun.Modules
}

// newRoundRobin makes the caches (compiler options extra), closed when the test ends.
func newRoundRobin(t *testing.T, devs []gpu.Device, extra []string) roundRobin {
	rr := roundRobin{devs: devs, caches: map[gpu.Device]*gpurun.Modules{}}
	for _, dev := range devs {
		c := gpurun.NewModules(dev)
		c.Extra = extra
		t.Cleanup(func() { c.Close() })
		rr.caches[dev] = c
	}
	return rr
}

// parts builds the parts of plan pl.
func (rr roundRobin) parts(pl plan.Plan) func(int, *state.State) (Part, error) {
	return func(i int, s *state.State) (Part, error) {
		dev := rr.devs[i%len(rr.devs)]
		return NewDevicePart(dev, s, pl, rr.caches[dev])
	}
}

// testGridDevice runs each case on devs[0] whole and split, part i on devs[i%len(devs)],
// halos through transport, and requires equal bits; steps (11) are not a multiple of the
// period.
func testGridDevice(t *testing.T, devs []gpu.Device, extra []string, cases []gridCase, transport func(parts int) Transport) {
	onDevs := newRoundRobin(t, devs, extra)
	const steps = 11
	for _, c := range cases {
		p := progSource(t, c.prog)
		pl, err := plan.Parse(c.plan, p)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(fmt.Sprintf("%s/%s/%dx%d_e%d", c.prog, c.plan, c.rows, c.cs, c.period), func(t *testing.T) {
			want := initialShape(t, p, gridShape(p))
			r, err := gpurun.PrepareWith(devs[0], want, pl, onDevs.caches[devs[0]])
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Run(steps); err != nil {
				t.Fatal(err)
			}
			if err := r.Download(); err != nil {
				t.Fatal(err)
			}
			r.Close()
			depth, err := PlanDepth(want, pl)
			if err != nil {
				t.Fatal(err)
			}
			if depth < 2 {
				t.Fatalf("plan depth %d: the case should have a deep plan", depth)
			}
			g := initialShape(t, p, gridShape(p))
			l, err := NewGrid(p, g.Shape, c.rows, c.cs, c.period)
			if err != nil {
				t.Fatal(err)
			}
			d, err := Split(g, l, All, onDevs.parts(pl), transport(l.Parts))
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
			if wantEx := (steps+c.period-1)/c.period - 1; d.Exchanges != wantEx {
				t.Errorf("%d exchanges, want %d", d.Exchanges, wantEx)
			}
		})
	}
}

// TestGridOpenCLBitwise runs the two-dimensional cases on parts of one OpenCL device (PoCL in
// CI) with clEnqueueCopyBufferRect halo copies: bitwise the whole-domain run of the same plan.
func TestGridOpenCLBitwise(t *testing.T) {
	dev := openOrSkip(t, "opencl")
	if testing.Short() {
		t.Skip("-short")
	}
	testGridDevice(t, []gpu.Device{dev}, []string{"-cl-opt-disable"}, gridDeviceCases, func(int) Transport { return Local{} })
}

// TestGridCUDABitwise is TestGridOpenCLBitwise on a CUDA device: cuMemcpy2D halo copies
// between parts of one GPU.
func TestGridCUDABitwise(t *testing.T) {
	dev := openOrSkip(t, "cuda")
	testGridDevice(t, []gpu.Device{dev}, nil, gridDeviceCases, func(int) Transport { return Local{} })
}

// TestGridRelayRanks runs 2x2 and 3x2 grids of ranks (goroutines standing for processes)
// that exchange halos through the coordinator, rows then columns, and gather on rank 0:
// bitwise the single run. CPU engine parts pack host row segments; one OpenCL case reads
// and writes device regions (clEnqueueReadBufferRect, clEnqueueWriteBufferRect).
func TestGridRelayRanks(t *testing.T) {
	host := func(i int, s *state.State) (Part, error) { return NewHostPart(s), nil }
	for _, c := range []struct {
		prog       string
		rows, cols int
	}{{"box_periodic_r2_coords", 2, 2}, {"wave_two_level", 3, 2}, {"input_grid", 2, 2}, {"box3d_clamp", 2, 2}} {
		t.Run(fmt.Sprintf("%s/%dx%d", c.prog, c.rows, c.cols), func(t *testing.T) {
			testGridRelay(t, progSource(t, c.prog), c.rows, c.cols, host, false)
		})
	}
	// On devices, also with rows padded (align): the columns' parts differ in width, so their
	// padded rows hold other numbers of bytes than their cells.
	for _, planText := range []string{"naive", "n5d:bt=2,align=true"} {
		t.Run("box_fixed/opencl/2x2/"+planText, func(t *testing.T) {
			dev := openOrSkip(t, "opencl")
			cache := gpurun.NewModules(dev)
			cache.Extra = []string{"-cl-opt-disable"}
			defer cache.Close()
			p := progSource(t, "box_fixed")
			pl, err := plan.Parse(planText, p)
			if err != nil {
				t.Fatal(err)
			}
			testGridRelay(t, p, 2, 2, func(i int, s *state.State) (Part, error) { return NewDevicePart(dev, s, pl, cache) }, true)
		})
	}
}

// testGridRelay runs p on a rows x cols grid of relayed ranks with parts from build (period
// 2) and compares with the whole domain on the CPU engine, or (onBuild) on one part built the
// same way.
func testGridRelay(t *testing.T, p *ir.Program, rows, cols int, build func(i int, s *state.State) (Part, error), onBuild bool) {
	const steps = 9
	ranks := rows * cols
	want := initialShape(t, p, gridShape(p))
	if !onBuild {
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
				g := initialShape(t, p, gridShape(p))
				l, err := NewGrid(p, g.Shape, rows, cols, 2)
				if err != nil {
					return err
				}
				d, err := Split(g, l, func(i int) bool { return i == r }, build, c)
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

// TestGridNCCLStaging runs the NCCL transport over the fake communicator (fakeHub) on OpenCL
// device parts of 2x2 and 3x2 grids: whole rows travel in place, columns packed into staging
// buffers and unpacked after the group. Bitwise the whole domain.
func TestGridNCCLStaging(t *testing.T) {
	dev := openOrSkip(t, "opencl")
	cases := []gridCase{
		{"box_periodic_r2_coords", "pyramid:ph=2", 2, 2, 2},
		{"wave_two_level", "pyramid:ph=2", 4, 3, 2},
	}
	testGridDevice(t, []gpu.Device{dev}, []string{"-cl-opt-disable"}, cases, func(parts int) Transport { return fakeNCCL(parts) })
}

// TestGridNCCL is TestGridNCCLStaging through real NCCL: one rank per CUDA device of this
// host (NCCL takes one rank per device), a 1x2 grid on two devices (its rows wrap onto the
// part itself), 2x2 on four; columns through staging buffers (cuMemcpy2D). It skips without
// CUDA, NCCL or a second device.
func TestGridNCCL(t *testing.T) {
	n, devs := ncclDevices(t, 4)
	if len(devs) < 2 {
		t.Skip("one CUDA device: NCCL needs a device per rank")
	}
	cases := []gridCase{{"box_periodic_r2_coords", "pyramid:ph=2", 2, 1, 2}, {"box_fixed", "n5d:bt=2", 4, 1, 2}}
	if len(devs) >= 4 {
		devs = devs[:4]
		cases = append(cases, gridCase{"box3d_clamp", "pyramid:ph=2", 4, 2, 2}, gridCase{"wave_two_level", "pyramid:ph=2", 4, 2, 2})
	} else {
		devs = devs[:2]
	}
	for _, c := range cases {
		if c.rows*c.cs != len(devs) {
			continue
		}
		testGridDevice(t, devs, nil, []gridCase{c}, func(int) Transport { return ncclTransport(t, n, devs) })
	}
}

// TestGridLayout checks two-dimensional layouts: extents, halos and the two phases of the
// schedule, and the errors of impossible splits.
func TestGridLayout(t *testing.T) {
	clamp := mustProgram(t, "clamp", progs[0].src)
	per := mustProgram(t, "periodic", progs[2].src)
	fixed := mustProgram(t, "fixed", progs[1].src)
	oneD := mustProgram(t, "pathfinder", progs[11].src)
	mixed := mustProgram(t, "mixed", `stencil mixed
axes y, x
state u boundary clamp
state v boundary y: clamp, x: periodic
update u = v[x+1]
update v = u[x-1]`)
	cases := []struct {
		p          *ir.Program
		shape      []int
		rows, cols int
		period     int
		want       string // part shapes, then the phases
		err        string
	}{
		{p: clamp, shape: []int{6, 8}, rows: 2, cols: 2, period: 1,
			want: "[[4 5] [4 5] [4 5] [4 5]] [[{2 1 0 3 1 | 0 0 5} {3 1 1 3 1 | 0 0 5} {0 2 2 0 1 | 0 0 5} {1 2 3 0 1 | 0 0 5}] [{1 0 0 0 4 | 1 4 1} {0 0 1 0 4 | 3 0 1} {3 0 2 0 4 | 1 4 1} {2 0 3 0 4 | 3 0 1}]]"},
		{p: per, shape: []int{6, 8}, rows: 1, cols: 2, period: 2,
			want: "[[10 8] [10 8]] [[{0 6 0 0 2 | 0 0 8} {0 2 0 8 2 | 0 0 8} {1 6 1 0 2 | 0 0 8} {1 2 1 8 2 | 0 0 8}] [{1 0 0 0 10 | 4 0 2} {1 0 0 0 10 | 2 6 2} {0 0 1 0 10 | 4 0 2} {0 0 1 0 10 | 2 6 2}]]"},
		{p: fixed, shape: []int{9, 12}, rows: 1, cols: 3, period: 1,
			want: "[[9 6] [9 8] [9 6]] [[{1 0 0 0 9 | 2 4 2} {0 0 1 0 9 | 2 0 2} {2 0 1 0 9 | 2 6 2} {1 0 2 0 9 | 4 0 2}]]"},
		{p: clamp, shape: []int{6, 8}, rows: 3, cols: 1, period: 1,
			want: "[[3 8] [4 8] [3 8]] [[{1 1 0 2 1} {0 1 1 0 1} {2 1 1 3 1} {1 2 2 0 1}]]"},
		{p: clamp, shape: []int{12, 8}, rows: 2, cols: 3, period: 3, err: "owns 2 cells along x but its neighbours need halos of 3"},
		{p: fixed, shape: []int{12, 20}, rows: 3, cols: 2, period: 3, err: "owns 4 rows along y but its neighbours need halos of 6"},
		{p: clamp, shape: []int{12, 3}, rows: 2, cols: 4, period: 1, err: "use at most 3"},
		{p: oneD, shape: []int{40}, rows: 2, cols: 2, period: 1, err: "pathfinder is one-dimensional"},
		{p: mixed, shape: []int{8, 8}, rows: 1, cols: 2, period: 1, err: "some grids are periodic along x and others are not"},
		{p: clamp, shape: []int{8, 8}, rows: 2, cols: 0, period: 1, err: "at least one along each axis"},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s_%v_%dx%d_e%d", c.p.Name, c.shape, c.rows, c.cols, c.period), func(t *testing.T) {
			l, err := NewGrid(c.p, c.shape, c.rows, c.cols, c.period)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var shapes [][]int
			for i := 0; i < l.Parts; i++ {
				shapes = append(shapes, l.PartShape(i))
			}
			if got := fmt.Sprint(shapes, l.Phases()); got != c.want {
				t.Errorf("layout\n%s, want\n%s", got, c.want)
			}
		})
	}
}
