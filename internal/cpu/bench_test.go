package cpu

import (
	"testing"

	"tempest/internal/load"
	"tempest/internal/ref"
	"tempest/internal/state"
)

// benchEngine times the CPU engine, its Go code and its C code, on the example at path over
// shape; one iteration is one step, and the rate counts the cells of the interior of width
// shape-2*rim.
func benchEngine(b *testing.B, path string, shape []int, rim int) {
	for _, code := range engineCodes {
		b.Run(code.name, func(b *testing.B) {
			withCode(b, code.native, func() { benchCode(b, path, shape, rim) })
		})
	}
}

func benchCode(b *testing.B, path string, shape []int, rim int) {
	p, err := load.File(path, load.Options{})
	if err != nil {
		b.Fatal(err)
	}
	s, err := state.New(p, shape, state.DefaultParams(p), 3)
	if err != nil {
		b.Fatal(err)
	}
	ref.Init(s)
	e := New(s)
	e.WaitNative()
	b.ResetTimer()
	e.Run(b.N, nil)
	e.Sync()
	cells := float64(b.N)
	for _, n := range shape {
		cells *= float64(n - 2*rim)
	}
	b.ReportMetric(cells/b.Elapsed().Seconds()/1e9, "GCells/s")
}

// BenchmarkJ2D5PT runs the AN5D j2d5pt example on 4096^2 floats; compare it with
// bench/c/j2d5pt.c (docs/performance.md).
func BenchmarkJ2D5PT(b *testing.B) {
	benchEngine(b, "../../examples/an5d/j2d5pt.stencil", []int{4096, 4096}, 1)
}

// BenchmarkGrayScott runs the README's first command's program (two grids on a torus) at
// 256^2.
func BenchmarkGrayScott(b *testing.B) {
	benchEngine(b, "../../examples/demos/grayscott.stencil", []int{256, 256}, 0)
}
