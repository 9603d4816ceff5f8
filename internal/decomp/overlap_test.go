package decomp

import (
	"fmt"
	"strings"
	"testing"

	"tempest/internal/cpu"
	"tempest/internal/gpu"
	"tempest/internal/gpurun"
	"tempest/internal/ir"
	"tempest/internal/plan"
	"tempest/internal/ref"
	"tempest/internal/state"
)

// initialAt is initial at a given shape: overlapped parts need rows for two bands and an
// interior of H rows each.
func initialAt(t *testing.T, p *ir.Program, shape []int) *state.State {
	t.Helper()
	s, err := state.New(p, shape, state.DefaultParams(p), 2)
	if err != nil {
		t.Fatal(err)
	}
	ref.Init(s)
	return s
}

// overlapShape is a shape per dimension count with rows enough for bands.
var overlapShape = map[int][]int{1: {97}, 2: {97, 9}, 3: {97, 5, 6}}

func TestBands(t *testing.T) {
	clamp := mustProgram(t, "clamp", progs[0].src)
	per := mustProgram(t, "periodic", progs[2].src)
	cases := []struct {
		p           *ir.Program
		rows, parts int
		period      int
		want        string
	}{
		// Edge parts need one band, inner parts two; a lone part without a wrap none.
		{clamp, 30, 3, 2, "[[[0 8] [8 10]] [[10 12] [12 18] [18 20]] [[20 22] [22 30]]]"},
		{clamp, 30, 1, 2, "[[]]"},
		// A wrap gives every part two bands; a lone periodic part exchanges with itself.
		{per, 30, 1, 3, "[[[0 3] [3 27] [27 30]]]"},
		{per, 24, 2, 4, "[[[0 4] [4 8] [8 12]] [[12 16] [16 20] [20 24]]]"},
		// Too thin: the inner part owns 8 rows, fewer than 3 x 3; the edge parts 8 >= 2 x 3.
		{clamp, 24, 3, 3, "[[[0 5] [5 8]] [] [[16 19] [19 24]]]"},
		// Exactly (bands + 1) x H rows still splits.
		{per, 9, 1, 3, "[[[0 3] [3 6] [6 9]]]"},
		{per, 8, 1, 3, "[[]]"},
	}
	for _, c := range cases {
		l, err := NewLayout(c.p, []int{c.rows, 5}, c.parts, c.period)
		if err != nil {
			t.Fatal(err)
		}
		var got [][][2]int
		for i := range c.parts {
			got = append(got, l.Bands(i))
		}
		if s := fmt.Sprint(got); s != c.want {
			t.Errorf("%s, %d rows, %d parts, period %d: bands %s, want %s", c.p.Name, c.rows, c.parts, c.period, s, c.want)
		}
	}
}

// countBanded counts the parts split into bands.
func countBanded(d *Domain) int {
	n := 0
	for _, p := range d.Parts {
		if _, ok := p.(*banded); ok {
			n++
		}
	}
	return n
}

// TestCPUOverlapBitwise runs every program overlapped (bands and interiors on the CPU engine,
// the local transport between parts) and holds it bitwise equal to the CPU engine on the
// whole domain: tolerance zero. The cases cover a lone periodic part exchanging with itself,
// periods of 1 to 5 steps, and a layout whose inner parts are too thin for bands beside
// edge parts that have them.
func TestCPUOverlapBitwise(t *testing.T) {
	const steps = 11
	for _, pr := range progs {
		p := mustProgram(t, pr.name, pr.src)
		want := initialAt(t, p, overlapShape[p.Dims()])
		e := cpu.New(want)
		e.Run(steps, nil)
		e.Sync()
		for _, c := range []struct{ parts, period int }{{1, 3}, {2, 2}, {3, 3}, {4, 1}, {2, 5}, {4, 3}} {
			t.Run(fmt.Sprintf("%s/k%d_e%d", pr.name, c.parts, c.period), func(t *testing.T) {
				g := initialAt(t, p, overlapShape[p.Dims()])
				l, err := NewLayout(p, g.Shape, c.parts, c.period)
				if err != nil {
					t.Skip(err) // too many parts for the halos: NewLayout's own tests cover it
				}
				d, err := SplitOverlapped(g, l, All, func(i int, s *state.State) (Part, error) { return NewHostPart(s), nil }, Local{})
				if err != nil {
					t.Fatal(err)
				}
				defer d.Close()
				banded := 0
				for i := range c.parts {
					if l.Bands(i) != nil {
						banded++
					}
				}
				if got := countBanded(d); got != banded {
					t.Errorf("%d banded parts, Bands says %d", got, banded)
				}
				if err := d.Run(steps); err != nil {
					t.Fatal(err)
				}
				if err := d.Gather(g); err != nil {
					t.Fatal(err)
				}
				if err := sameBits(want, g); err != nil {
					t.Errorf("%d of %d parts banded: %v", banded, c.parts, err)
				}
			})
		}
	}
}

// TestOverlapExercised guards the test above against testing nothing: in its layouts, bands
// exist for every program kind (edges, wraps, thin parts).
func TestOverlapExercised(t *testing.T) {
	for _, pr := range progs {
		p := mustProgram(t, pr.name, pr.src)
		l, err := NewLayout(p, overlapShape[p.Dims()], 3, 3)
		if err != nil {
			t.Fatal(err)
		}
		if l.Bands(0) == nil && l.Bands(1) == nil {
			t.Errorf("%s: no part of 3 with period 3 has bands at %v", pr.name, overlapShape[p.Dims()])
		}
	}
}

// TestOverlapThin: a layout with no part thick enough runs every part unsplit, exchanging
// synchronously, and still gives the whole run's bits.
func TestOverlapThin(t *testing.T) {
	p := mustProgram(t, "periodic", progs[2].src)
	want := initialAt(t, p, []int{20, 6})
	e := cpu.New(want)
	e.Run(9, nil)
	e.Sync()
	g := initialAt(t, p, []int{20, 6})
	l, err := NewLayout(p, g.Shape, 4, 2) // 5 rows a part, H = 2: bands need 6
	if err != nil {
		t.Fatal(err)
	}
	d, err := SplitOverlapped(g, l, All, func(i int, s *state.State) (Part, error) { return NewHostPart(s), nil }, Local{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if n := countBanded(d); n != 0 || d.overlapped() {
		t.Errorf("%d parts of 5 rows banded with halos of 2", n)
	}
	if err := d.Run(9); err != nil {
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
}

// TestOpenCLOverlapBitwise runs deep plans overlapped on one OpenCL device (PoCL in CI), the
// parts' bands and interiors each a runner, and holds them bitwise equal to the plan on the
// whole domain: n5d (bt 4) on fixed edges, pyramid (ph 2) on a wrap and on two levels,
// with exchange periods of the plan's depth and twice it; 11 steps end on a partial period.
func TestOpenCLOverlapBitwise(t *testing.T) {
	dev := openOrSkip(t, "opencl")
	if testing.Short() {
		t.Skip("-short")
	}
	want := map[string]bool{"fixed_r2": true, "periodic": true, "wave_two_level": true}
	testDeviceOverlap(t, dev, []string{"-cl-opt-disable"}, want, []int{2, 3}, func([]Part) Transport { return Local{} })
}

// TestCUDAOverlapBitwise is TestOpenCLOverlapBitwise on a CUDA device, for every program:
// sub-domains of one GPU split into bands, cuMemcpyDtoD copies between them.
func TestCUDAOverlapBitwise(t *testing.T) {
	dev := openOrSkip(t, "cuda")
	testDeviceOverlap(t, dev, nil, nil, []int{1, 2, 3}, func([]Part) Transport { return Local{} })
}

// TestNCCLOverlapOneRank runs every program overlapped as one NCCL rank on one CUDA device:
// periodic programs send their bands' rows to themselves on the communicator's own stream
// while the interior runs on stream 0. Bitwise the plain run. Skips without CUDA or NCCL
// (TEMPEST_REQUIRE_NCCL=1 makes that fail).
func TestNCCLOverlapOneRank(t *testing.T) {
	n, devs := ncclDevices(t, 1)
	dev := devs[0]
	tr := ncclTransport(t, n, devs)
	defer tr.Close()
	testDeviceOverlap(t, dev, nil, nil, []int{1}, func([]Part) Transport { return tr })
}

// testDeviceOverlap runs the programs in only (nil: all) with their deep plan on dev, whole and
// overlapped over each count of parts with periods of the plan's depth and twice it, and
// requires equal bits and at least one banded part per run.
func testDeviceOverlap(t *testing.T, dev gpu.Device, extra []string, only map[string]bool, counts []int, transport func([]Part) Transport) {
	cache := gpurun.NewModules(dev)
	cache.Extra = extra
	defer cache.Close()
	const steps = 11
	for _, pr := range progs {
		if only != nil && !only[pr.name] {
			continue
		}
		p := mustProgram(t, pr.name, pr.src)
		deep := "pyramid:ph=2"
		switch {
		case p.Grids[0].BC[0].Kind == ir.Fixed && p.Dims() == 1:
			// n5d streams along the slowest axis of a 2D or 3D grid: 1D takes the pyramid's
			// register tile, as in testDeviceBitwise.
			deep = "pyramid:bx=16,ph=3,rx=4"
		case p.Grids[0].BC[0].Kind == ir.Fixed:
			deep = "n5d:bt=4"
		}
		pl, err := plan.Parse(deep, p)
		if err != nil {
			t.Fatal(err)
		}
		shape := overlapShape[p.Dims()]
		t.Run(pr.name+"/"+deep, func(t *testing.T) {
			want := initialAt(t, p, shape)
			oneDevice(t, dev, want, pl, cache, steps)
			depth, err := PlanDepth(want, pl)
			if err != nil {
				t.Fatal(err)
			}
			for _, parts := range counts {
				for _, period := range []int{depth, 2 * depth} {
					g := initialAt(t, p, shape)
					l, err := NewLayout(p, g.Shape, parts, period)
					if err != nil {
						t.Fatal(err)
					}
					d, err := SplitOverlapped(g, l, All, func(i int, s *state.State) (Part, error) { return NewDevicePart(dev, s, pl, cache) }, transport(nil))
					if err != nil {
						t.Fatal(err)
					}
					banded := countBanded(d)
					err = d.Run(steps)
					if err == nil {
						err = d.Gather(g)
					}
					for _, p := range d.Parts {
						p.Close()
					}
					if err != nil {
						t.Fatal(err)
					}
					if len(l.Exchanges()) > 0 && banded == 0 {
						t.Errorf("%d parts, period %d: no part has bands; the test would test nothing", parts, period)
					}
					if err := sameBits(want, g); err != nil {
						t.Errorf("%d parts (%d banded), period %d: %v", parts, banded, period, err)
					}
				}
			}
		})
	}
}

// TestNCCLOverlapOrder runs the NCCL transport's started exchanges over the fake communicator
// (which lands each transfer only at Wait) on overlapped OpenCL device parts: bitwise equal
// to the whole domain, so no band ran over exchanged rows before Wait.
func TestNCCLOverlapOrder(t *testing.T) {
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
			shape := overlapShape[p.Dims()]
			want := initialAt(t, p, shape)
			oneDevice(t, dev, want, pl, cache, steps)
			tr := fakeNCCL(c.parts)
			g := initialAt(t, p, shape)
			l, err := NewLayout(p, g.Shape, c.parts, 4)
			if err != nil {
				t.Fatal(err)
			}
			d, err := SplitOverlapped(g, l, All, func(i int, s *state.State) (Part, error) { return NewDevicePart(dev, s, pl, cache) }, tr)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if n := countBanded(d); n != c.parts {
				t.Fatalf("%d of %d parts banded", n, c.parts)
			}
			prof := d.EnableProfile()
			if err := d.Run(steps); err != nil {
				t.Fatal(err)
			}
			if err := d.Gather(g); err != nil {
				t.Fatal(err)
			}
			if err := prof.Collect(); err != nil {
				t.Fatal(err)
			}
			if rep := prof.Report(); len(rep) != c.parts || !strings.Contains(rep[0], "sub-domain 0, 3 periods") {
				t.Errorf("profile of %d parts, 3 periods each:\n%s", c.parts, strings.Join(rep, "\n"))
			}
			var csv strings.Builder
			if err := prof.WriteCSV(&csv); err != nil {
				t.Fatal(err)
			}
			if rows := strings.Count(csv.String(), "\n"); rows != 1+3*c.parts {
				t.Errorf("%d lines of CSV, want a header and 3 periods of %d parts:\n%s", rows, c.parts, csv.String())
			}
			if err := sameBits(want, g); err != nil {
				t.Error(err)
			}
			if d.Exchanges != 2 {
				t.Errorf("%d exchanges, want 2", d.Exchanges)
			}
		})
	}
}

// TestRelayOverlap runs three relayed ranks (goroutines standing for processes) whose parts
// are split into bands: the relay travels on its own goroutine while the interiors compute.
// Bitwise the single run; host parts, and one OpenCL case whose relay reads and writes device
// slabs while the interior's kernels are enqueued.
func TestRelayOverlap(t *testing.T) {
	host := func(i int, s *state.State) (Part, error) { return NewHostPart(s), nil }
	for _, name := range []string{"periodic", "wave_two_level", "input_grid"} { // all with bands: 10 rows a part, H = 2
		t.Run(name, func(t *testing.T) { testRelay(t, name, host, nil, SplitOverlapped) })
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
		testRelay(t, "wave_two_level", func(i int, s *state.State) (Part, error) { return NewDevicePart(dev, s, pl, cache) }, &pl, SplitOverlapped)
	})
}

// TestBandedErrors: a banded part refuses plans whose launches do not divide the period, and
// names the sub-part.
func TestBandedErrors(t *testing.T) {
	p := mustProgram(t, "periodic", progs[2].src)
	g := initialAt(t, p, []int{40, 5})
	l, err := NewLayout(p, g.Shape, 2, 4)
	if err != nil {
		t.Fatal(err)
	}
	_, err = SplitOverlapped(g, l, All, func(i int, s *state.State) (Part, error) { return deepPart{NewHostPart(s), 3}, nil }, Local{})
	if err == nil || !strings.Contains(err.Error(), "lower band of sub-domain 0") || !strings.Contains(err.Error(), "choose a multiple of 3") {
		t.Errorf("period 4 with launches of 3: %v", err)
	}
}
