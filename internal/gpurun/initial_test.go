package gpurun

import (
	"bytes"
	"testing"

	"tempest/internal/gpu"
	"tempest/internal/lower"
	"tempest/internal/plan"
)

// TestInitialCopies: runners filled from device copies of the state (NewFrom with Initial, as
// the tuner makes its candidates) run bitwise as runners that upload it, one after another
// over the same state (the copies stay as uploaded), on a one-level and a two-level program.
func TestInitialCopies(t *testing.T) {
	dev := openDevice(t, "opencl")
	for _, c := range []struct {
		example, plan string
		shape         []int
	}{
		{"an5d/j2d5pt", "n5d:bx=16,bt=3", []int{40, 70}},
		{"demos/wave", "tiled", []int{48, 40}},
	} {
		p, s := initialState(t, c.example, c.shape)
		pl, err := plan.Parse(c.plan, p)
		if err != nil {
			t.Fatal(err)
		}
		low, err := lower.Lower(p, s.Shape, s.Layers, pl)
		if err != nil {
			t.Fatal(err)
		}
		in := NewInitial(dev, s)
		if len(in) == 0 {
			t.Fatalf("%s: no device copies", c.example)
		}
		run := func(init Initial) []byte {
			st := *s // a copy sharing the arrays, as the tuner's candidates do
			r, err := NewFrom(dev, &st, low, gpu.CompileOptions{}, pl.String(), nil, init)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if err := r.Run(7); err != nil {
				t.Fatal(err)
			}
			var out []byte
			for _, u := range p.Updates {
				b := make([]byte, len(s.Cur[u.Grid.Index].Bytes()))
				if err := r.Level(u.Grid.Index, 0).Read(b); err != nil {
					t.Fatal(err)
				}
				out = append(out, b...)
			}
			return out
		}
		want := run(nil)
		for i := range 2 {
			if got := run(in); !bytes.Equal(got, want) {
				t.Errorf("%s %s: run %d from the device copies differs from the uploaded run", c.example, c.plan, i+1)
			}
		}
		in.Free()
		if len(in) != 0 {
			t.Errorf("Free left %d copies", len(in))
		}
	}
}
