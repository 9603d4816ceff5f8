package gen

import (
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"tempest/internal/ir"
	"tempest/internal/load"
	"tempest/internal/plan"
	"tempest/internal/testkit"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden/")

// goldenCases: a 2D float star with a parameter (tiled), and two grids with four parameters on a
// torus under overlapped temporal tiling (two kernels, so a schedule of deepest launches first).
var goldenCases = []struct {
	name, src, plan string
	shape           []int
}{
	{"heat", `stencil heat
axes y, x
type f32
param alpha = 0.2
state u init exp(-0.01 * f32((x - 64) * (x - 64) + (y - 64) * (y - 64))) boundary clamp
update u = u + alpha * (u[x-1] + u[x+1] + u[y-1] + u[y+1] - 4*u)
`, "tiled", []int{128, 128}},
	{"grayscott", `stencil grayscott
axes y, x
type f32
param F = 0.037
param k = 0.06
param Du = 0.2097
param Dv = 0.105
state u init select(abs(x - size(x) / 2) < size(x) / 24 && abs(y - size(y) / 2) < size(y) / 24, 0.5, 1.0) + 0.01 * (rand() - 0.5)
  boundary periodic
state v init select(abs(x - size(x) / 2) < size(x) / 24 && abs(y - size(y) / 2) < size(y) / 24, 0.25, 0.0) + 0.01 * (rand() - 0.5)
  boundary periodic
let uvv = u * v * v
let lapu = u[y-1] + u[y+1] + u[x-1] + u[x+1] - 4 * u
let lapv = v[y-1] + v[y+1] + v[x-1] + v[x+1] - 4 * v
update u = u + Du * lapu - uvv + F * (1 - u)
update v = v + Dv * lapv + uvv - (F + k) * v
`, "pyramid", []int{256, 256}},
}

func TestGolden(t *testing.T) {
	for _, c := range goldenCases {
		p, err := load.Source(c.name+".stencil", c.src, load.Options{})
		if err != nil {
			t.Fatal(err)
		}
		pl, err := plan.Parse(c.plan, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, target := range []string{"cuda", "opencl"} {
			o := Options{Target: target, Plan: pl, Shape: c.shape, Harness: true, Source: c.name + ".stencil"}
			out, err := Generate(p, o)
			if err != nil {
				t.Fatalf("%s %s: %v", c.name, target, err)
			}
			again, err := Generate(p, o)
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join("testdata", "golden", c.name+"."+target)
			var names []string
			for i, f := range out.Files {
				names = append(names, f.Name)
				if string(again.Files[i].Data) != string(f.Data) {
					t.Errorf("%s %s: %s is not deterministic", c.name, target, f.Name)
				}
				path := filepath.Join(dir, f.Name)
				if *update {
					if err := os.MkdirAll(dir, 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(path, f.Data, 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run go test ./internal/gen -update)", err)
				}
				if string(want) != string(f.Data) {
					t.Errorf("%s changed; run go test ./internal/gen -run TestGolden -update and review the diff", path)
				}
			}
			wantNames := map[string][]string{
				"cuda":   {c.name + ".h", c.name + ".cu", "main.cu", "Makefile", "README.txt"},
				"opencl": {c.name + ".h", c.name + ".cl", c.name + "_host.c", "main.c", "Makefile", "README.txt"},
			}[target]
			if strings.Join(names, " ") != strings.Join(wantNames, " ") {
				t.Errorf("%s %s: files %v, want %v", c.name, target, names, wantNames)
			}
			if !*update {
				entries, _ := os.ReadDir(dir)
				if len(entries) != len(out.Files) {
					t.Errorf("%s holds %d files, the generator writes %d: remove stale ones", dir, len(entries), len(out.Files))
				}
			}
		}
	}
}

// TestGenerateEveryExample generates every example for every plan that applies, at several
// sizes: generation re-lowers at other sizes and fails if the host's launch-grid formulas, the
// chunk argument or the kernels' independence of the size no longer match lowering.
func TestGenerateEveryExample(t *testing.T) {
	files, _ := filepath.Glob("../../examples/*/*.stencil")
	sort.Strings(files)
	if len(files) == 0 {
		t.Fatal("no examples")
	}
	// Each example in parallel: generation is the test's time, and every core helps. The 3D
	// boxes of reach 3 and 4 (343 and 729 points, a third of the time) are long tests.
	long := 0
	for _, f := range files {
		name := strings.TrimSuffix(strings.TrimPrefix(f, "../../examples/"), ".stencil")
		wide := name == "an5d/box3d3r" || name == "an5d/box3d4r"
		if testkit.Long() != wide {
			continue
		}
		if wide {
			if long++; !testkit.OwnsIndex(long - 1) {
				continue // another shard's example (TEMPEST_SHARD)
			}
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			generateExample(t, f)
		})
	}
}

// generateExample generates one example file for every plan that applies at several sizes.
func generateExample(t *testing.T, f string) {
	n := 0
	p, err := load.File(f, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range plan.Strategies {
		pl, err := plan.Default(s, p)
		if err != nil {
			continue
		}
		for _, shape := range [][]int{{1000, 20, 9}, {3, 1, 1}, {1, 1, 1}} {
			for _, target := range []string{"cuda", "opencl"} {
				_, err := Generate(p, Options{Target: target, Plan: pl, Shape: shape[:p.Dims()], Harness: true})
				if err != nil {
					if strings.Contains(err.Error(), "does not fit") || strings.Contains(err.Error(), "leaves nothing") {
						continue
					}
					t.Errorf("%s %s %v %s: %v", f, pl, shape[:p.Dims()], target, err)
				}
				n++
			}
		}
	}
	t.Logf("%d generations", n)
}

func TestIndex64(t *testing.T) {
	p, err := load.Source("h.stencil", goldenCases[0].src, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pl, _ := plan.Parse("tiled", p)
	narrow, err := Generate(p, Options{Target: "cuda", Plan: pl, Shape: []int{64, 64}})
	if err != nil {
		t.Fatal(err)
	}
	wide, err := Generate(p, Options{Target: "cuda", Plan: pl, Shape: []int{64, 64}, Index64: true})
	if err != nil {
		t.Fatal(err)
	}
	src := func(o *Output) string {
		for _, f := range o.Files {
			if strings.HasSuffix(f.Name, ".cu") {
				return string(f.Data)
			}
		}
		return ""
	}
	if !strings.Contains(src(narrow), "#define NARROW_INDEX 1") || !strings.Contains(src(wide), "#define NARROW_INDEX 0") {
		t.Error("NARROW_INDEX does not follow --index64")
	}
	if !strings.Contains(src(wide), "long long idx") || strings.Contains(src(narrow), "long long idx") {
		t.Error("--index64 does not give 64-bit element indices")
	}
}

func TestNames(t *testing.T) {
	for in, want := range map[string]string{"j2d9pt-gol": "j2d9pt_gol", "3d": "s_3d", "int": "int_", "u": "u", "steps": "steps_"} {
		if got := cIdent(in); got != want {
			t.Errorf("cIdent(%q) = %q, want %q", in, got, want)
		}
	}
	p, _ := load.Source("h.stencil", goldenCases[0].src, load.Options{})
	pl, _ := plan.Parse("naive", p)
	if _, err := Generate(p, Options{Target: "cuda", Plan: pl, Shape: []int{8, 8}, Name: "bad-name"}); err == nil {
		t.Error("a --name that is not a C identifier was accepted")
	}
	if _, err := Generate(p, Options{Target: "metal", Plan: pl, Shape: []int{8, 8}}); err == nil {
		t.Error("an unknown target was accepted")
	}
}

func TestLiterals(t *testing.T) {
	for _, c := range []struct {
		v    ir.Value
		want string
	}{
		{ir.MakeFloat(ir.F32, 0.1), "1e-01f"},
		{ir.MakeFloat(ir.F64, -2.5), "(-2.5e+00)"},
		{ir.Value{T: ir.I32, I: -2147483648}, "(-2147483647 - 1)"},
		{ir.Value{T: ir.I64, I: 7}, "7LL"},
		{ir.Value{T: ir.Bool, B: true}, "1"},
	} {
		if got := cLit(c.v); got != c.want {
			t.Errorf("cLit(%v) = %s, want %s", c.v, got, c.want)
		}
	}
}

// TestConstSizeRefused: generated code serves every size, so a plan compiled for one size
// (constsize) is refused with a hint, and the same plan without it generates.
func TestConstSizeRefused(t *testing.T) {
	p, err := load.File("../../examples/an5d/box2d1r.stencil", load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pl, err := plan.Parse("n5d:bx=32,rx=2,bt=2,chunk=16,constsize=true", p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Generate(p, Options{Target: "cuda", Plan: pl, Shape: []int{100, 100}}); err == nil || !strings.Contains(err.Error(), "drop constsize") {
		t.Errorf("constsize: got %v, want an error that says to drop constsize", err)
	}
	pl.ConstSize = false
	if _, err := Generate(p, Options{Target: "cuda", Plan: pl, Shape: []int{100, 100}}); err != nil {
		t.Errorf("without constsize: %v", err)
	}
}

// TestChainRefused: generated host code issues no chained launches, so gen refuses chain with
// a hint.
func TestChainRefused(t *testing.T) {
	p, err := load.File("../../examples/an5d/star2d1r.stencil", load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pl, err := plan.Parse("n5d:bx=32,rx=2,bt=2,chunk=16,chain=true", p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Generate(p, Options{Target: "cuda", Plan: pl, Shape: []int{100, 100}}); err == nil || !strings.Contains(err.Error(), "drop chain") {
		t.Errorf("chain: got %v, want an error that says to drop chain", err)
	}
}
