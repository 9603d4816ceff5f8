package gpurun

import (
	"fmt"

	"tempest/internal/gpu"
	"tempest/internal/gridio"
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
		if err := r.write(b, src); err != nil {
			return fmt.Errorf("uploading grid %s: %w", g.Name, err)
		}
	}
	return nil
}

// deviceLen is the elements of a device array holding a host array of n elements: n, or with
// padded rows (lower.Lowered.Pitch) as many rows of the pitch.
func (r *Runner) deviceLen(n int) int {
	if r.low.Pitch == 0 {
		return n
	}
	return n / r.row() * r.low.Pitch
}

// row is the cells of a row of the grids (the last axis).
func (r *Runner) row() int { return r.s.Shape[len(r.s.Shape)-1] }

// write fills device buffer b with host array a, padding its rows where the plan pads them.
func (r *Runner) write(b gpu.Buffer, a *gridio.Array) error {
	if r.low.Pitch == 0 {
		return b.Write(a.Bytes())
	}
	return b.Write(padRows(a.Bytes(), r.row(), r.low.Pitch, a.Len()))
}

// read copies device buffer b into host array a, dropping the rows' padding.
func (r *Runner) read(b gpu.Buffer, a *gridio.Array) error {
	if r.low.Pitch == 0 {
		return b.Read(a.Bytes())
	}
	dst := a.Bytes()
	es, rows := len(dst)/max(a.Len(), 1), a.Len()/r.row()
	buf := make([]byte, rows*r.low.Pitch*es)
	if err := b.Read(buf); err != nil {
		return err
	}
	copyRows(dst, buf, rows, r.row(), r.low.Pitch, es)
	return nil
}

// padRows is src, n elements in rows of row elements, with every row widened to pitch
// elements (the padding zero).
func padRows(src []byte, row, pitch, n int) []byte {
	es, rows := len(src)/max(n, 1), n/row
	out := make([]byte, rows*pitch*es)
	copyRows(out, src, rows, pitch, row, es)
	return out
}

// copyRows copies rows of min(dstRow, srcRow) elements of es bytes from src, srcRow elements
// apart, to dst, dstRow elements apart.
func copyRows(dst, src []byte, rows, dstRow, srcRow, es int) {
	w := min(dstRow, srcRow) * es
	for i := 0; i < rows; i++ {
		copy(dst[i*dstRow*es:i*dstRow*es+w], src[i*srcRow*es:i*srcRow*es+w])
	}
}
