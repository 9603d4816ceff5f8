package decomp

import (
	"testing"

	"tempest/internal/testkit"
)

func TestMain(m *testing.M) { testkit.PoCLMain(m) }
