package gpurun

import (
	"fmt"

	"tempest/internal/ir"
)

// Upload copies grid g's host arrays (the state's current level, and the previous one of a
// two-level grid) into its device buffers, as New does: every buffer but the previous level's
// takes the current values, so that cells no kernel writes (a fixed rim) hold them whichever
// buffer a launch reads. A program embedding Tempest changes a grid between steps with it
// (package sim); the device must be idle, as it is after Timed, Download or Synchronize.
func (r *Runner) Upload(g *ir.Grid) error {
	if err := r.dev.Synchronize(); err != nil {
		return err
	}
	for i, b := range r.slots[g.Index] {
		if b == nil {
			continue
		}
		src := r.s.Cur[g.Index]
		if i == 1 && g.Levels > 1 {
			src = r.s.Prev[g.Index]
		}
		if err := b.Write(src.Bytes()); err != nil {
			return fmt.Errorf("uploading grid %s: %w", g.Name, err)
		}
	}
	return nil
}
