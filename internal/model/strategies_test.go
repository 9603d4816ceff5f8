package model

import (
	"testing"

	"tempest/internal/plan"
)

// TestEveryStrategyHasAModel checks that every strategy of plan.Registry has a model: the
// tuner leaves out the strategies without one.
func TestEveryStrategyHasAModel(t *testing.T) {
	for _, s := range plan.Strategies {
		if _, ok := For(s); !ok {
			t.Errorf("strategy %s has no model", s)
		}
	}
}
