package ref_test

import (
	"testing"

	"tempest/internal/load"
	"tempest/internal/ref"
	"tempest/internal/state"
)

// BenchmarkStep is one reference step of two AN5D stencils at 512x512: --verify on the CPU
// engine runs the reference for every step of the run, so its rate bounds --verify's time.
func BenchmarkStep(b *testing.B) {
	for _, name := range []string{"j2d5pt", "gradient2d"} {
		b.Run(name, func(b *testing.B) {
			p, err := load.File("../../examples/an5d/"+name+".stencil", load.Options{})
			if err != nil {
				b.Fatal(err)
			}
			s, err := state.New(p, []int{512, 512}, state.DefaultParams(p), 2)
			if err != nil {
				b.Fatal(err)
			}
			ref.Init(s)
			b.ResetTimer()
			for range b.N {
				ref.Step(s)
			}
			b.ReportMetric(float64(512*512*b.N)/b.Elapsed().Seconds()/1e6, "Mcells/s")
		})
	}
}
