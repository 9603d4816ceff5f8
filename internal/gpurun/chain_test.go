package gpurun

import (
	"slices"
	"testing"

	"tempest/internal/lower"
)

// TestChained: only a chained kernel's launch right after one of the same kernel runs as a
// dependent launch; the first of a run, and the first after another kernel, wait for all.
func TestChained(t *testing.T) {
	main := lower.Launch{Kernel: "tempest_n5d", Steps: 4, Chain: true}
	rest := lower.Launch{Kernel: "tempest_n5d_2", Steps: 2, Chain: true}
	plain := lower.Launch{Kernel: "tempest_n5d", Steps: 4}
	for _, c := range []struct {
		ls   []lower.Launch
		want []bool
	}{
		{[]lower.Launch{main, main, main, rest}, []bool{false, true, true, false}},
		{[]lower.Launch{rest, main, main}, []bool{false, false, true}},
		{[]lower.Launch{plain, plain}, []bool{false, false}},
		{nil, []bool{}},
	} {
		if got := chained(c.ls); !slices.Equal(got, c.want) {
			t.Errorf("%v: chained %v, want %v", c.ls, got, c.want)
		}
	}
}
