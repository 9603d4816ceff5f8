package gpurun

import (
	"fmt"
	"strings"
	"testing"

	"tempest/internal/gpu"
	"tempest/internal/kir"
	"tempest/internal/load"
	"tempest/internal/lower"
	"tempest/internal/plan"
	"tempest/internal/state"
)

// compileCases are plans whose compilation a search waits on: the searches of star3d1r and
// j2d5pt spent 42 of their 58 s waiting for compilations (docs/performance.md, 2026-11-29).
var compileCases = []struct {
	example string
	shape   []int
	plan    string
}{
	{"an5d/star3d1r", []int{514, 514, 514}, "n5d:bx=32,by=32,bt=4,rx=2,wave=true,pf=3,phased=true,rimblocks=true,edges=true,edgesfirst=true,unclamped=true,shrink=true,ascend=true,align=true,chunk=424,fastmath=true,centrefirst=true"},
	{"an5d/star3d1r", []int{514, 514, 514}, "n5d:bx=16,by=32,bt=4,rx=2,wave=true,chunk=128,fastmath=true"},
	{"an5d/j2d5pt", []int{16386, 16386}, "n5d:bx=128,by=1,bt=10,rx=2,wave=true,pf=2,rimblocks=true,edgesfirst=true,chunk=576,maxregs=96,fastmath=true,centrefirst=true"},
	{"an5d/box3d1r", []int{514, 514, 514}, "n5d:bx=16,by=32,bt=2,rx=2,ry=2,wave=true,async=5,rimblocks=true,edges=true,edgesfirst=true,constsize=true,chunk=64,fastmath=true,centrefirst=true"},
}

// BenchmarkCompile times the compilation of a plan's kernels on CUDA: as one program ("whole",
// what Compile did before), as Compile does it (a program per kernel, all at once), and both
// with NVRTC's own parallel optimisation (-split-compile=0). NVRTC returns a program it has
// compiled before at once, so every compilation renames the kernels: each op compiles anew.
func BenchmarkCompile(b *testing.B) {
	dev, err := gpu.Open("cuda")
	if err != nil {
		b.Skipf("cuda: %v", err)
	}
	defer dev.Close()
	n := 0
	for _, c := range compileCases {
		p, err := load.File("../../examples/"+c.example+".stencil", load.Options{})
		if err != nil {
			b.Fatal(err)
		}
		s, err := state.New(p, c.shape, state.DefaultParams(p), 4)
		if err != nil {
			b.Fatal(err)
		}
		pl, err := plan.Parse(c.plan, p)
		if err != nil {
			b.Fatal(err)
		}
		low, err := lower.Lower(p, s.Shape, s.Layers, pl)
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("%s %s: %d kernels, %d bytes of source", c.example, c.plan, len(low.Module.Kernels), len(kir.Print(low.Module, kir.CUDA)))
		for _, mode := range []string{"whole", "whole-split", "kernels", "kernels-split"} {
			name := fmt.Sprintf("%s/%s/%s", c.example, strings.ReplaceAll(strings.TrimPrefix(c.plan, "n5d:")[:18], ",", "_"), mode)
			b.Run(name, func(b *testing.B) {
				for range b.N {
					n++
					m := renamed(low.Module, n)
					opt := gpu.CompileOptions{FastMath: pl.FastMath, MaxRegs: pl.MaxRegs}
					if strings.HasSuffix(mode, "-split") {
						opt.Extra = []string{"-split-compile=0"}
					}
					var mod gpu.Module
					if strings.HasPrefix(mode, "whole") {
						mod, err = dev.Compile(c.example, kir.Print(m, kir.CUDA), opt)
					} else {
						mod, err = Compile(dev, c.example, m, opt)
					}
					if err != nil {
						b.Fatal(err)
					}
					mod.Close()
				}
			})
		}
	}
}

// renamed is m with its kernels' names suffixed by n.
func renamed(m *kir.Module, n int) *kir.Module {
	r := *m
	r.Kernels = nil
	for _, k := range m.Kernels {
		kk := *k
		kk.Name = fmt.Sprintf("%s_%d", k.Name, n)
		r.Kernels = append(r.Kernels, &kk)
	}
	return &r
}
