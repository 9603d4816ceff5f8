package cpu

import (
	"os"
	"testing"

	"tempest/internal/load"
	"tempest/internal/ref"
	"tempest/internal/state"
)

// BenchmarkJ2D5PT runs the AN5D j2d5pt example on 4096^2 floats; compare it with
// bench/c/j2d5pt.c (docs/performance.md). One iteration is one step.
func BenchmarkJ2D5PT(b *testing.B) {
	src, err := os.ReadFile("../../examples/an5d/j2d5pt.stencil")
	if err != nil {
		b.Fatal(err)
	}
	p, err := load.Source("j2d5pt.stencil", string(src), load.Options{})
	if err != nil {
		b.Fatal(err)
	}
	s, err := state.New(p, []int{4096, 4096}, state.DefaultParams(p), 3)
	if err != nil {
		b.Fatal(err)
	}
	ref.Init(s)
	e := New(s)
	b.ResetTimer()
	e.Run(b.N, nil)
	b.ReportMetric(float64(b.N)*4094*4094/b.Elapsed().Seconds()/1e9, "GCells/s")
}

// BenchmarkGrayScott runs the README's first command's program (two grids on a torus) at
// 256^2; one iteration is one step.
func BenchmarkGrayScott(b *testing.B) {
	p, err := load.File("../../examples/demos/grayscott.stencil", load.Options{})
	if err != nil {
		b.Fatal(err)
	}
	s, err := state.New(p, []int{256, 256}, state.DefaultParams(p), 3)
	if err != nil {
		b.Fatal(err)
	}
	ref.Init(s)
	e := New(s)
	b.ResetTimer()
	e.Run(b.N, nil)
	e.Sync()
	b.ReportMetric(float64(b.N)*256*256/b.Elapsed().Seconds()/1e9, "GCells/s")
}
