package decomp

import (
	"fmt"

	"tempest/internal/gpu"
	"tempest/internal/gridio"
	"tempest/internal/ir"
	"tempest/internal/state"
)

// Axis1 is the second split axis of a two-dimensional layout: the next slowest after Axis.
const Axis1 = 1

// Span is how one axis splits into slots: each slot's owned cells and its halo depths, the
// same rule on both axes of a two-dimensional layout.
type Span struct {
	Axis     int
	Parts    int
	Reach    int  // R: the program's reach along the axis
	Halo     int  // cells of halo on each inner side: E*R, plus a fixed rim's excess over R
	Periodic bool // the grids wrap along the axis: the outer slots exchange too
	// Own is each slot's cells of the global domain along the axis, [lo, hi).
	Own [][2]int
	// Below and Above are each slot's halo cells on either side (0 at a real edge).
	Below, Above []int
	// Origin is the index in Layout.Prog of the parameter through which a slot learns its
	// global origin along the axis, -1 where the program never reads its position there.
	Origin int
}

// Extent is slot k's cells along the axis with its halos.
func (s *Span) Extent(k int) int { return s.Own[k][1] - s.Own[k][0] + s.Below[k] + s.Above[k] }

// global is the global index along the axis of slot k's local index c (wrapped on periodic
// domains), for a domain of n cells.
func (s *Span) global(k, c, n int) int { return ((s.Own[k][0]-s.Below[k]+c)%n + n) % n }

// newSpan splits axis a of shape into parts slots for exchanges every period steps.
// Along Axis a split always pads as the one-dimensional layout did, a single periodic slot
// exchanging with itself; a single slot along Axis1 is no split at all (the caller leaves the
// axis whole).
func newSpan(p *ir.Program, shape []int, a, parts, period int) (*Span, error) {
	s := &Span{Axis: a, Parts: parts, Reach: p.Reach()[a], Origin: -1}
	extra := 0
	for _, g := range p.Grids {
		if g.Update != nil && len(g.Rim) > a {
			extra = max(extra, g.Rim[a]-s.Reach)
		}
	}
	s.Halo = period*s.Reach + extra
	s.Periodic = p.Grids[0].BC[a].Kind == ir.Periodic
	n := shape[a]
	unit := "rows"
	if a != Axis {
		unit = "cells"
	}
	if parts > n {
		return nil, fmt.Errorf("%d sub-domains of %d %s along %s: use at most %d", parts, n, unit, p.Axes[a], n)
	}
	for i := 0; i < parts; i++ {
		lo, hi := n*i/parts, n*(i+1)/parts
		s.Own = append(s.Own, [2]int{lo, hi})
		below, above := s.Halo, s.Halo
		if !s.Periodic && i == 0 {
			below = 0
		}
		if !s.Periodic && i == parts-1 {
			above = 0
		}
		s.Below, s.Above = append(s.Below, below), append(s.Above, above)
		if (below > 0 || above > 0) && hi-lo < s.Halo {
			return nil, fmt.Errorf("sub-domain %d owns %d %s along %s but its neighbours need halos of %d (exchange period %d x reach %d): use fewer sub-domains, a shorter exchange period or a larger --size",
				i, hi-lo, unit, p.Axes[a], s.Halo, period, s.Reach)
		}
	}
	return s, nil
}

// NewGrid checks that the program can be split over a rows x cols grid of parts (Axis into
// rows slots, Axis1 into cols) and splits shape as evenly as cells allow, with halos on both
// axes for exchanges every period steps. Part i is slot i/cols along Axis and i%cols along
// Axis1. One column is the one-dimensional layout of NewLayout.
//
// Exchanges then run in two phases (Phases): first along Axis, whole padded rows (the parts
// above and below have the same columns), then along Axis1, columns over the full padded
// extent of Axis. Why the corners (halo rows x halo columns) are then exact: after a period
// every part's owned cells are exact (each halo is at least E*R deep on its axis, and wrong
// values creep inwards by at most R cells a step along each axis). Phase 1 writes the halo
// rows of part (a, b) from owned rows of (a+-1, b): in its owned columns they are owned cells
// of (a+-1, b), hence exact; only its halo columns are stale. Phase 2 then writes every halo
// column of (a, b), over all its padded rows, from owned columns of (a, b+-1): its owned rows
// there are its owned cells, and its halo rows were just filled by phase 1 from owned cells
// of (a+-1, b+-1) (exact). So each corner cell receives the diagonal neighbour's owned, exact
// value through the intermediate part, and no diagonal message is needed. Within a phase,
// sources are owned cells (phase 1) or owned columns (phase 2) and targets halo cells, so a
// phase's copies are independent of one another.
func NewGrid(p *ir.Program, shape []int, rows, cols, period int) (*Layout, error) {
	if rows < 1 || cols < 1 {
		return nil, fmt.Errorf("%dx%d sub-domains: there must be at least one along each axis", rows, cols)
	}
	if period < 1 {
		return nil, fmt.Errorf("exchange period %d: it must be at least one step", period)
	}
	if err := Splittable(p); err != nil {
		return nil, err
	}
	if cols > 1 {
		if p.Dims() < 2 {
			return nil, fmt.Errorf("%s is one-dimensional: it splits along %s alone (use --split 1d)", p.Name, p.Axes[Axis])
		}
		if err := splittableAlong(p, Axis1); err != nil {
			return nil, err
		}
	}
	s0, err := newSpan(p, shape, Axis, rows, period)
	if err != nil {
		return nil, err
	}
	l := &Layout{Shape: append([]int(nil), shape...), Parts: rows * cols, Reach: s0.Reach, Period: period, Halo: s0.Halo, Periodic: s0.Periodic}
	if cols > 1 {
		if l.Cols, err = newSpan(p, shape, Axis1, cols, period); err != nil {
			return nil, err
		}
	}
	for i := 0; i < l.Parts; i++ {
		k := i / cols
		l.Own = append(l.Own, s0.Own[k])
		l.Below, l.Above = append(l.Below, s0.Below[k]), append(l.Above, s0.Above[k])
	}
	var local []localAxis
	if positionalAlong(p, Axis) {
		local = append(local, localAxis{Axis, shape[Axis], l.Periodic})
	}
	if l.Cols != nil && positionalAlong(p, Axis1) {
		local = append(local, localAxis{Axis1, shape[Axis1], l.Cols.Periodic})
	}
	l.Prog, l.Origin = p, -1
	if len(local) > 0 {
		prog, origins := localize(p, local)
		l.Prog = prog
		for k, la := range local {
			if la.axis == Axis {
				l.Origin = origins[k]
			} else {
				l.Cols.Origin = origins[k]
			}
		}
	}
	return l, nil
}

// Grid is the layout's parts along Axis and Axis1.
func (l *Layout) Grid() (rows, cols int) {
	if l.Cols == nil {
		return l.Parts, 1
	}
	return l.Parts / l.Cols.Parts, l.Cols.Parts
}

// slots is part i's slot along Axis and along Axis1.
func (l *Layout) slots(i int) (int, int) {
	_, cols := l.Grid()
	return i / cols, i % cols
}

// Width is part i's cells along Axis1 with its halos (the whole axis in one-dimensional
// layouts).
func (l *Layout) Width(i int) int {
	if l.Cols == nil {
		return l.Shape[Axis1]
	}
	_, b := l.slots(i)
	return l.Cols.Extent(b)
}

// colExchanges is phase 2 of a two-dimensional layout's schedule: for each part, its left
// halo columns from the part before it along Axis1 and its right ones from the part after,
// over all its padded rows (see NewGrid).
func (l *Layout) colExchanges() []Copy {
	if l.Cols == nil {
		return nil
	}
	c := l.Cols
	_, q := l.Grid()
	var cs []Copy
	for i := 0; i < l.Parts; i++ {
		a, b := l.slots(i)
		own := c.Own[b][1] - c.Own[b][0]
		if c.Below[b] > 0 {
			j := (b - 1 + q) % q
			ownJ := c.Own[j][1] - c.Own[j][0]
			cs = append(cs, Copy{From: a*q + j, To: i, Rows: l.Rows(i), FromCol: c.Below[j] + ownJ - c.Below[b], ToCol: 0, Cols: c.Below[b]})
		}
		if c.Above[b] > 0 {
			j := (b + 1) % q
			cs = append(cs, Copy{From: a*q + j, To: i, Rows: l.Rows(i), FromCol: c.Below[j], ToCol: c.Below[b] + own, Cols: c.Above[b]})
		}
	}
	return cs
}

// Phases is the exchange schedule in the order its phases must run: one phase (Exchanges)
// for one-dimensional layouts; rows, then columns for two-dimensional ones (NewGrid says why
// the order makes corners exact). Each phase must finish before the next starts.
func (l *Layout) Phases() [][]Copy {
	all := l.Exchanges()
	n := len(all) - len(l.colExchanges())
	var ph [][]Copy
	for _, p := range [][]Copy{all[:n], all[n:]} {
		if len(p) > 0 {
			ph = append(ph, p)
		}
	}
	return ph
}

// String prints a copy as its fields, the column window after a bar when it has one.
func (c Copy) String() string {
	if c.Cols == 0 {
		return fmt.Sprintf("{%d %d %d %d %d}", c.From, c.FromRow, c.To, c.ToRow, c.Rows)
	}
	return fmt.Sprintf("{%d %d %d %d %d | %d %d %d}", c.From, c.FromRow, c.To, c.ToRow, c.Rows, c.FromCol, c.ToCol, c.Cols)
}

// Region is the copy's window in bytes of grid gi's array in part state s: at the source
// (from) or at the target. Whole rows (no column window, or a window as wide as the part)
// are one contiguous run.
func (c Copy) Region(s *state.State, gi int, from bool) gpu.Rect {
	return c.region(s.Shape, int64(s.Prog.Grids[gi].Type.Size()), from)
}

// BufRegion is Region in part p's buffers (bufShape: rows padded when its plan pads them).
func (c Copy) BufRegion(p Part, gi int, from bool) gpu.Rect {
	return c.region(bufShape(p), int64(p.State().Prog.Grids[gi].Type.Size()), from)
}

// region is Region in arrays of the given shape and element size.
func (c Copy) region(shape []int, size int64, from bool) gpu.Rect {
	row, col := c.ToRow, c.ToCol
	if from {
		row, col = c.FromRow, c.FromCol
	}
	rb := int64(rowElems(shape)) * size
	if c.Cols == 0 || (len(shape) > Axis1 && c.Cols == shape[Axis1]) {
		return gpu.Rect{Off: int64(row) * rb, Pitch: int64(c.Rows) * rb, Width: int64(c.Rows) * rb, Height: 1}
	}
	cb := size
	for _, d := range shape[min(Axis1+1, len(shape)):] {
		cb *= int64(d)
	}
	return gpu.Rect{Off: int64(row)*rb + int64(col)*cb, Pitch: rb, Width: int64(c.Cols) * cb, Height: int64(c.Rows)}
}

// contiguous says whether a region is one run of bytes.
func contiguous(r gpu.Rect) bool { return r.Height <= 1 || r.Pitch == r.Width }

// copyRect copies region sr of src to region dr of dst (host memory).
func copyRect(dst []byte, dr gpu.Rect, src []byte, sr gpu.Rect) {
	for r := int64(0); r < sr.Height; r++ {
		d, s := dr.Off+r*dr.Pitch, sr.Off+r*sr.Pitch
		copy(dst[d:d+dr.Width], src[s:s+sr.Width])
	}
}

// owned is part i's owned cells as a region of grid gi in its padded state s (local) or in
// the global state (global).
func (l *Layout) owned(s *state.State, gi, i int, global bool) gpu.Rect {
	rows := l.Own[i][1] - l.Own[i][0]
	c := Copy{Rows: rows, FromRow: l.Below[i], ToRow: l.Own[i][0]}
	if l.Cols != nil {
		_, b := l.slots(i)
		c.Cols, c.FromCol, c.ToCol = l.Cols.Own[b][1]-l.Cols.Own[b][0], l.Cols.Below[b], l.Cols.Own[b][0]
	}
	return c.Region(s, gi, !global)
}

// scatterRow copies global row gr of src (layer y) into local row r of part i's dst: the
// whole row in one-dimensional layouts, else the part's padded columns, wrapped where the
// grid is periodic along Axis1.
func (l *Layout) scatterRow(dst *gridio.Array, y, r int, src *gridio.Array, gr, i int) {
	elems := rowElems(l.Shape)
	rows := l.Rows(i)
	if l.Cols == nil {
		copyRows(dst, y*rows+r, src, y*l.Shape[Axis]+gr, 1, elems)
		return
	}
	n := l.Shape[Axis1]
	w := l.Width(i)
	inner := elems / n
	_, b := l.slots(i)
	for c := 0; c < w; {
		g := l.Cols.global(b, c, n)
		run := min(w-c, n-g) // up to the wrap
		copyRows(dst, (y*rows+r)*w+c, src, (y*l.Shape[Axis]+gr)*n+g, run, inner)
		c += run
	}
}

// splittableAlong says why a program cannot be split along axis a, or nil: all grids must
// agree on whether the axis wraps.
func splittableAlong(p *ir.Program, a int) error {
	periodic := 0
	for _, g := range p.Grids {
		if g.BC[a].Kind == ir.Periodic {
			periodic++
		}
	}
	if periodic != 0 && periodic != len(p.Grids) {
		return fmt.Errorf("%s cannot be split into sub-domains along %s: some grids are periodic along %s and others are not, so the outer sub-domains would need an edge and a wrap at once; run it on one device",
			p.Name, p.Axes[a], p.Axes[a])
	}
	return nil
}

// copyRegion carries out one copy with a column window for one grid level between parts of
// one process: a strided device copy (through host memory between devices), or row-segment
// copies between host parts.
func copyRegion(dst, src Part, c Copy, lv Level) error {
	sr, dr := c.BufRegion(src, lv.Grid, true), c.BufRegion(dst, lv.Grid, false)
	sb, db := src.Buffer(lv.Grid, lv.Level), dst.Buffer(lv.Grid, lv.Level)
	switch {
	case sb != nil && db != nil:
		return gpu.CopyRect(db, dr, sb, sr)
	case sb == nil && db == nil:
		copyRect(levelArray(dst.State(), lv).Bytes(), dr, levelArray(src.State(), lv).Bytes(), sr)
		return nil
	}
	return fmt.Errorf("internal error: halo exchange between a host part and a device part")
}
