package lower

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"tempest/internal/kir"
	"tempest/internal/load"
	"tempest/internal/plan"
)

var update = flag.Bool("update", false, "rewrite the golden kernels under testdata/")

// goldenPrograms cover every boundary rule, integer and float arithmetic, lets, two levels and
// layers; their kernels are compared with testdata/<name>.<plan>.{cu,cl}.
var goldenPrograms = map[string]string{
	"bc2d": `axes y, x
type f32
param a = 0.2
state u init rand() boundary y: constant(a*2), x: edge(value*0.5 + f32(x))
state v: i32 boundary fixed
update u = 0.25*(u[x-1] + u[x+1] + u[y-1] + u[y+1]) + a*sqrt(abs(u))
update v = v[x-1] / (v + 1) + i32(u)`,
	"wave1d": `axes x
type f64
state u init f64(x % 5) prev 0 boundary mirror
input w layers 3 boundary periodic
let lap = u[x-1] + u[x+1] - 2*u
update u = 2*u - u.prev + 0.1*lap + w(step)[x+2]`,
	"box3d": `axes z, y, x
type f32
state u boundary periodic
update u = sum(i in -1..1, j in -1..1, k in -1..1) (0.01 + 0.001*(9*i+3*j+k)) * u[z+i, y+j, x+k]`,
}

// goldenPlans are plans beyond the defaults whose kernels are compared too, under
// testdata/<name>.<file>.{cu,cl}: the in-plane method's vector loads (aligned fast path with
// scalar fallbacks), with a halo of 1 so that rows need a head and a tail lane guard.
var goldenPlans = []struct{ program, plan, file string }{
	{"box3d", "inplane:vec=4", "inplane_vec4"},
	{"div", "inplane", "inplane"},
	{"heat1d", "pyramid:bx=32,ph=4,rx=4", "pyramid_rx4"},
}

// goldenExamples are example programs compared only under their goldenPlans: div, whose uz is
// read only at in-plane offset (0, 0) and so directly, while ux and uy take shared planes with a
// halo along one axis each; heat1d, 1D with a fixed rim, under pyramid's register tile.
var goldenExamples = map[string]string{
	"div":    "../../examples/inplane/div.stencil",
	"heat1d": "../../examples/peers/conv_1d1r.stencil",
}

func TestGoldenKernels(t *testing.T) {
	type job struct {
		pl   plan.Plan
		file string
	}
	sources := map[string]string{}
	for name, src := range goldenPrograms {
		sources[name] = src
	}
	for name, path := range goldenExamples {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		sources[name] = string(src)
	}
	for name, src := range sources {
		p, err := load.Source(name+".stencil", src, load.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var jobs []job
		for _, strategy := range plan.Strategies {
			if _, only := goldenExamples[name]; only {
				break
			}
			pl, err := plan.Default(strategy, p)
			if err != nil {
				continue
			}
			jobs = append(jobs, job{pl, strategy})
		}
		for _, g := range goldenPlans {
			if g.program != name {
				continue
			}
			pl, err := plan.Parse(g.plan, p)
			if err != nil {
				t.Fatalf("%s %s: %v", name, g.plan, err)
			}
			jobs = append(jobs, job{pl, g.file})
		}
		for _, j := range jobs {
			pl := j.pl
			shape := []int{64, 64, 64}[:p.Dims()]
			l, err := Lower(p, shape, []int{0, 3}, pl)
			if err != nil {
				t.Fatalf("%s %s: %v", name, pl, err)
			}
			for _, d := range []kir.Dialect{kir.CUDA, kir.OpenCL} {
				got := kir.Print(l.Module, d)
				if kir.Print(l.Module, d) != got {
					t.Fatalf("%s %s: printing is not deterministic", name, pl)
				}
				ext := map[kir.Dialect]string{kir.CUDA: ".cu", kir.OpenCL: ".cl"}[d]
				path := filepath.Join("testdata", name+"."+j.file+ext)
				if *update {
					os.MkdirAll("testdata", 0o755)
					if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run go test -update)", err)
				}
				if string(want) != got {
					t.Errorf("%s changed; run go test ./internal/lower -update and review the diff", path)
				}
			}
		}
	}
}
