package sim_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"tempest/sim"
)

// The wave demo stepped in chunks, its observables read between them.
func Example() {
	prog, err := sim.Load("../examples/demos/wave.stencil")
	if err != nil {
		log.Fatal(err)
	}
	s, err := prog.New(sim.Options{Size: []int{64, 64}, Backend: "cpu"})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	for s.Steps() < 300 {
		if err := s.Step(100); err != nil {
			log.Fatal(err)
		}
		obs, err := s.Observe()
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("step %d: %s %.6f, %s %.6f\n", s.Steps(), obs[0].Name, obs[0].Value, obs[1].Name, obs[1].Value)
	}
	// Output:
	// step 100: energy 0.562949, peak 0.227211
	// step 200: energy 0.535574, peak 0.348059
	// step 300: energy 0.511864, peak 0.426642
}

// A heat source added between chunks of steps: the program is written inline, the source
// goes into a 1x1 box of the grid and a row is read back without copying the whole grid.
func ExampleSim_SetBox() {
	prog, err := sim.Parse("heat.stencil", `
stencil heat
axes y, x
type f64
param k = 0.2
state t
  init 0
  boundary constant(0)
update t = t + k * (t[y-1] + t[y+1] + t[x-1] + t[x+1] - 4 * t)
`)
	if err != nil {
		log.Fatal(err)
	}
	s, err := prog.New(sim.Options{Size: []int{9, 9}, Backend: "cpu"})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	for i := 0; i < 3; i++ {
		// Add 1 to the centre cell, then diffuse for 5 steps.
		c, err := s.Box("t", []int{4, 4}, []int{1, 1})
		if err != nil {
			log.Fatal(err)
		}
		v, _ := sim.Values[float64](c)
		v[0]++
		if err := s.SetBox("t", []int{4, 4}, c); err != nil {
			log.Fatal(err)
		}
		if err := s.Step(5); err != nil {
			log.Fatal(err)
		}
	}
	row, err := s.Box("t", []int{4, 0}, []int{1, 9})
	if err != nil {
		log.Fatal(err)
	}
	v, _ := sim.Values[float64](row)
	fmt.Printf("%.4f\n", v)
	// Output:
	// [0.0127 0.0366 0.0716 0.1203 0.1350 0.1203 0.0716 0.0366 0.0127]
}

// A mistake in a program is an error whose diagnostics carry the position.
func ExampleDiagnostics() {
	_, err := sim.Parse("bad.stencil", `stencil bad
axes x
state u
  init 0
update u = u[x-1] + v
`)
	for _, d := range sim.Diagnostics(err) {
		fmt.Printf("%s:%d:%d: %s\n", d.File, d.Line, d.Col, d.Message)
	}
	// Output:
	// bad.stencil:5:21: undefined name "v"
}

// A run checkpointed, then resumed in a second Sim, reaches the state of one run.
func ExampleSim_Checkpoint() {
	dir, err := os.MkdirTemp("", "tempest-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ck := filepath.Join(dir, "wave.npz")
	prog, err := sim.Load("../examples/demos/wave.stencil")
	if err != nil {
		log.Fatal(err)
	}
	run := func(opt sim.Options, steps int) sim.Array {
		opt.Size, opt.Backend = []int{48, 64}, "cpu"
		s, err := prog.New(opt)
		if err != nil {
			log.Fatal(err)
		}
		defer s.Close()
		if err := s.Step(steps - s.Steps()); err != nil {
			log.Fatal(err)
		}
		if opt.Resume == "" && steps == 50 {
			if err := s.Checkpoint(ck); err != nil {
				log.Fatal(err)
			}
		}
		u, err := s.Grid("u")
		if err != nil {
			log.Fatal(err)
		}
		return u
	}
	run(sim.Options{Params: []string{"damping=1"}}, 50)
	resumed := run(sim.Options{Resume: ck}, 120)
	whole := run(sim.Options{Params: []string{"damping=1"}}, 120)
	a, _ := sim.Values[float32](resumed)
	b, _ := sim.Values[float32](whole)
	fmt.Println(resumed.Shape, equal(a, b))
	// Output:
	// [48 64] true
}

func equal(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
