package lower

import (
	"testing"

	"tempest/internal/plan"
)

// TestEveryStrategyLowers checks that lowerings has an entry, with a launch grid, for every
// strategy of plan.Registry: a strategy added there and not here would fail at run time.
func TestEveryStrategyLowers(t *testing.T) {
	for _, s := range plan.Strategies {
		if l, ok := lowerings[s]; !ok || l.lower == nil || l.grid == nil {
			t.Errorf("strategy %s: no lowering or launch grid in lowerings", s)
		}
	}
}
