package tune

import (
	"testing"

	"tempest/internal/plan"
)

// TestEveryStrategyHasASpace checks that every strategy the tuner searches has a plan space
// of its own in spaces, not only its defaults.
func TestEveryStrategyHasASpace(t *testing.T) {
	for _, s := range Strategies() {
		if spaces[s] == nil {
			t.Errorf("strategy %s has no plan space", s)
		}
	}
	if len(Strategies()) != len(plan.Strategies) {
		t.Errorf("the tuner searches %v of %v", Strategies(), plan.Strategies)
	}
}
