package errbound

import (
	"testing"

	"tempest/internal/load"
	"tempest/internal/ref"
	"tempest/internal/state"
)

// BenchmarkGradient is one bounded step of gradient2d at 512x512 (the bounded reference's
// cost per cell: --verify's budget depends on it).
func BenchmarkGradient(b *testing.B) {
	p, _ := load.File("../../examples/an5d/gradient2d.stencil", load.Options{})
	s, _ := state.New(p, []int{512, 512}, state.DefaultParams(p), 2)
	ref.Init(s)
	b.ResetTimer()
	for range b.N {
		Run(s, 1, CUDAFast)
	}
}
