package tune

import (
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"tempest/internal/analysis"
	"tempest/internal/gpu"
	"tempest/internal/ir"
	"tempest/internal/load"
	"tempest/internal/plan"
	"tempest/internal/probe"
)

// TestPickRules: the model's first plan for the 2D AN5D stencils in float and double on CUDA
// launches the edge tiles first and the rim's chunks in blocks of their own, and float box
// stencils copy their input five planes ahead (PickRules); the 3D ones take the rim's blocks in
// float and copy ahead in double; on an OpenCL device they keep the plan the model ranked.
func TestPickRules(t *testing.T) {
	opencl := h100Props
	opencl.Backend = "opencl"
	for _, c := range []struct {
		name  string
		typ   ir.Type
		props gpu.Props
		want  string // the settings added, in the plan's order
	}{
		{"j2d5pt", ir.F32, h100Props, "rimblocks=true,edgesfirst=true"},
		{"box2d2r", ir.F32, h100Props, "async=5,rimblocks=true,edgesfirst=true"},
		{"j2d9pt-gol", ir.F32, h100Props, "async=5,rimblocks=true,edgesfirst=true"},
		{"gradient2d", ir.F32, h100Props, "rimblocks=true,edgesfirst=true"},
		{"j2d5pt", ir.F64, h100Props, "rimblocks=true,edgesfirst=true"},
		{"box2d2r", ir.F64, h100Props, "rimblocks=true,edgesfirst=true"},
		{"star3d1r", ir.F32, h100Props, "rimblocks=true"},
		{"box3d1r", ir.F32, h100Props, "rimblocks=true"},
		{"star3d1r", ir.F64, h100Props, "async=5"},
		{"j3d27pt", ir.F64, h100Props, "async=5"},
		{"j2d5pt", ir.F32, opencl, ""},
	} {
		typ := c.typ
		p, err := load.File("../../examples/an5d/"+c.name+".stencil", load.Options{DefaultType: &typ})
		if err != nil {
			t.Fatal(err)
		}
		cands, err := Rank(fakeDevice{props: c.props}, shapeless(p, benchShape(p)), Options{Profile: probe.Estimate(c.props), FastMath: true})
		if err != nil {
			t.Fatal(err)
		}
		first := cands[0].Plan
		got := PickRules(p, c.props, first)
		if first.Strategy != "n5d" {
			t.Fatalf("%s %s: the model's first plan is %s, not n5d", c.name, c.typ, first)
		}
		if a := addedSettings(first, got); a != c.want {
			t.Errorf("%s %s on %s: %s (from %s) adds %q, want %q", c.name, c.typ, c.props.Backend, got, first, a, c.want)
		}
	}
}

// pickRuleRecords are the timed plans PickRules' newer rules rest on.
var pickRuleRecords = []string{"n5d-h200-peers.txt", "n5d-h200-lora.txt", "n5d-h200-suite.txt", "n5d-h200-suite21.txt"}

// TestPickRulesEvidence: in the records PickRules cites, the plans with each setting it adds
// (2D: one row of threads, by=1; 3D plans of one type for the 3D rules) run faster than
// the same plans without it, by the geometric mean over every such pair, and none by more than
// the worst loss its comment names (the pairs of async among float box stencils only; the
// records name a stencil and its type, and the examples tell its shape). A rule whose records
// stop showing a gain fails here.
func TestPickRulesEvidence(t *testing.T) {
	type key struct{ set, stencil string }
	recs := map[key]map[string]float64{}
	shapes := map[string]analysis.Shape{}
	for _, f := range pickRuleRecords {
		data, err := os.ReadFile("../model/testdata/" + f)
		if err != nil {
			t.Fatal(err)
		}
		for n, line := range strings.Split(string(data), "\n") {
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			// name@type | size | plan G GCells/s, regs R
			parts := strings.Split(line, " | ")
			fields := strings.Fields(parts[len(parts)-1])
			if len(parts) != 3 || len(fields) < 3 {
				t.Fatalf("%s:%d: %q is not a record", f, n+1, line)
			}
			g, err := strconv.ParseFloat(fields[1], 64)
			if err != nil {
				t.Fatalf("%s:%d: %v", f, n+1, err)
			}
			k := key{f, parts[0]}
			if recs[k] == nil {
				recs[k] = map[string]float64{}
			}
			recs[k][fields[0]] = g
			name := strings.SplitN(parts[0], "@", 2)[0]
			if _, ok := shapes[name]; !ok {
				shapes[name] = exampleShape(t, name)
			}
		}
	}
	for _, c := range []struct {
		setting string
		box     bool    // pairs of float box stencils only
		in3d    string  // pairs of 3D plans of this type (@f32, @f64), else 2D
		worst   float64 // the worst ratio allowed
		least   int     // the fewest pairs
	}{
		{"rimblocks=true", false, "", 0.95, 20},
		{"async=5", true, "", 0.99, 20},
		{"rimblocks=true", false, "@f32", 0.99, 15},
		{"async=5", false, "@f64", 0.98, 12},
	} {
		var logSum float64
		n, worst := 0, 2.0
		for k, plans := range recs {
			if c.box && (shapes[strings.SplitN(k.stencil, "@", 2)[0]] != analysis.Box || !strings.HasSuffix(k.stencil, "@f32")) {
				continue
			}
			if c.in3d != "" && !strings.HasSuffix(k.stencil, c.in3d) {
				continue
			}
			for pl, g := range plans {
				if !strings.HasPrefix(pl, "n5d:") || !strings.Contains(pl+",", ","+c.setting+",") || strings.Contains(pl, ",by=1,") == (c.in3d != "") {
					continue
				}
				without := strings.Replace(pl+",", ","+c.setting+",", ",", 1)
				h, ok := plans[strings.TrimSuffix(without, ",")]
				if !ok {
					continue
				}
				logSum += math.Log(g / h)
				worst = min(worst, g/h)
				n++
			}
		}
		if n < c.least {
			t.Fatalf("%s: %d pairs in the records, want at least %d", c.setting, n, c.least)
		}
		gm := math.Exp(logSum / float64(n))
		t.Logf("%s (boxes only: %v, 3D: %q): %d pairs, geomean %.3f, worst %.3f", c.setting, c.box, c.in3d, n, gm, worst)
		if gm <= 1 || worst < c.worst {
			t.Errorf("%s: %d pairs, geomean %.3f, worst %.3f: the records no longer show the gain PickRules adds it for (worst allowed %.2f)", c.setting, n, gm, worst, c.worst)
		}
	}
}

// exampleShape is the shape of the example a record names (an AN5D stencil, or a peer's under
// examples/peers).
func exampleShape(t *testing.T, name string) analysis.Shape {
	t.Helper()
	for _, f := range []string{"../../examples/an5d/" + name + ".stencil", "../../examples/peers/" + name + ".stencil"} {
		if p, err := load.File(f, load.Options{}); err == nil {
			return analysis.Analyze(p).Shape
		}
	}
	t.Fatalf("no example for the records' %s", name)
	return ""
}

// TestPyramidRXFirst: on 1D programs with a fixed rim the model ranks the pyramid's register
// tiles (rx cells a thread) first, at a height of at most 32, as they measured on the H200
// (bench/gpu/lists/pyramid-rx.txt: 3.0x-3.4x the one-cell pyramid the model picked before,
// height 64 slower than 32); a 1D program with a clamped boundary keeps one cell a thread.
func TestPyramidRXFirst(t *testing.T) {
	for _, c := range []struct {
		file string
		rx   bool
	}{
		{"peers/conv_1d1r", true},
		{"peers/conv_1d2r", true},
		{"peers/flash_1d7p", true},
		{"sl/pathfinder", false},
	} {
		p, err := load.File("../../examples/"+c.file+".stencil", load.Options{})
		if err != nil {
			t.Fatal(err)
		}
		cands, err := Rank(fakeDevice{props: h100Props}, shapeless(p, []int{10241142}), Options{Profile: probe.Estimate(h100Props)})
		if err != nil {
			t.Fatal(err)
		}
		first := cands[0].Plan
		if got := first.Strategy == "pyramid" && first.RX > 1 && first.PH <= 32; got != c.rx {
			t.Errorf("%s: the model's first plan is %s; want a register tile: %v", c.file, first, c.rx)
		}
	}
}

// TestHighOrderBoxesRankInPlane: for AN5D's 3D boxes of radius 2 to 4 in fast math, the model
// ranks an in-plane plan first. The in-plane method shares fast math's factored rows between
// the outputs a plane feeds; counted as the formula, the model had ranked box3d4r's
// forward-plane plan first, which ran at 9.9 GCells/s against the in-plane plan's 70.6 on
// the H200 (docs/performance.md, "AN5D's whole suite on four H200s: float").
func TestHighOrderBoxesRankInPlane(t *testing.T) {
	for _, name := range []string{"box3d2r", "box3d3r", "box3d4r"} {
		typ := ir.F32
		p, err := load.File("../../examples/an5d/"+name+".stencil", load.Options{DefaultType: &typ})
		if err != nil {
			t.Fatal(err)
		}
		cands, err := Rank(fakeDevice{props: h100Props}, shapeless(p, benchShape(p)), Options{Profile: probe.Estimate(h100Props), FastMath: true})
		if err != nil {
			t.Fatal(err)
		}
		if got := cands[0].Plan.Strategy; got != plan.InPlane {
			t.Errorf("%s: the model ranks %s first, want an inplane plan", name, cands[0].Plan)
		}
	}
}

// regsDevice compiles nothing: each kernel of a module reports base registers a thread plus
// per more for each of the settings named in per's keys that the plan (in the module's name)
// has, so that Pick's register check can be tried without a GPU.
type regsDevice struct {
	fakeDevice
	base int
	per  map[string]int
}

func (d regsDevice) Compile(name, src string, opt gpu.CompileOptions) (gpu.Module, error) {
	regs := d.base
	for k, n := range d.per {
		if strings.Contains(name, k) {
			regs += n
		}
	}
	return regsModule{props: d.props, regs: regs}, nil
}

type regsModule struct {
	props gpu.Props
	regs  int
}

func (m regsModule) Kernel(name string) (gpu.Kernel, error) { return regsKernel(m), nil }
func (m regsModule) Close() error                           { return nil }

type regsKernel regsModule

func (k regsKernel) Launch(grid, block [3]int, sharedBytes int, args ...any) error {
	panic("internal error: regsKernel does not launch")
}
func (k regsKernel) Attrs() gpu.KernelAttrs {
	return gpu.KernelAttrs{Regs: k.regs, MaxThreadsPerBlock: 1024}
}
func (k regsKernel) MaxActiveBlocksPerSM(threads, shared int) (int, error) {
	return gpu.ResidentBlocks(k.props, threads, shared, k.regs), nil
}

// TestPickKeepsBlocks: the model's pick adds PickRules' settings only while the main kernel
// keeps more than one block per multiprocessor: gradient2d's double plan (256 threads) at 120
// registers has two; where edgesfirst and rimblocks each cost 8 registers, both together leave
// one block, so the pick takes edgesfirst (the first rule) alone; where they cost nothing it
// takes both, and where they take three blocks to two as well.
func TestPickKeepsBlocks(t *testing.T) {
	typ := ir.F64
	p, err := load.File("../../examples/an5d/gradient2d.stencil", load.Options{DefaultType: &typ})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		base int
		per  map[string]int
		want string
	}{
		{120, map[string]int{"rimblocks=true": 8, "edgesfirst=true": 8}, "edgesfirst=true"},
		{120, map[string]int{"rimblocks=true": 0, "edgesfirst=true": 0}, "rimblocks=true,edgesfirst=true"},
		{120, map[string]int{"rimblocks=true": 16, "edgesfirst=true": 0}, "edgesfirst=true"},
		{120, map[string]int{"rimblocks=true": 0, "edgesfirst=true": 16}, "rimblocks=true"},
		// Three blocks to two: both kept.
		{80, map[string]int{"rimblocks=true": 8, "edgesfirst=true": 8}, "rimblocks=true,edgesfirst=true"},
	} {
		dev := regsDevice{fakeDevice: fakeDevice{props: h100Props}, base: c.base, per: c.per}
		s := shapeless(p, benchShape(p))
		got, err := Pick(dev, s, Options{Profile: probe.Estimate(h100Props), FastMath: true})
		if err != nil {
			t.Fatal(err)
		}
		cands, err := Rank(dev, s, Options{Profile: probe.Estimate(h100Props), FastMath: true})
		if err != nil {
			t.Fatal(err)
		}
		first := cands[0].Plan
		if a := addedSettings(first, got.Plan); a != c.want {
			t.Errorf("registers %v: the pick %s (from %s) adds %q, want %q", c.per, got.Plan, first, a, c.want)
		}
	}
}

// addedSettings are the settings of got's text that from's lacks, in got's order.
func addedSettings(from, got plan.Plan) string {
	var added []string
	for _, kv := range strings.Split(strings.SplitN(got.String(), ":", 2)[1], ",") {
		if !strings.Contains(","+strings.SplitN(from.String(), ":", 2)[1]+",", ","+kv+",") {
			added = append(added, kv)
		}
	}
	return strings.Join(added, ",")
}
