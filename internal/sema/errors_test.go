package sema_test

import (
	"flag"
	"testing"

	"tempest/internal/load"
	"tempest/internal/testkit"
)

var update = flag.Bool("update", false, "rewrite the golden .err files")

// TestErrors checks one program per kind of mistake against its expected diagnostic (the .err
// file beside it): position, source line, caret and hint. Run go test -update to rewrite them.
func TestErrors(t *testing.T) {
	testkit.Diagnostics(t, ".stencil", *update, func(path, text string) error {
		_, err := load.Source(path, text, load.Options{})
		return err
	})
}
