// Package decomp splits a run over several sub-domains (devices, processes or, for tests, parts
// of one device) along the slowest axis. Each sub-domain is an ordinary single-device run over
// its rows padded with halos E*R rows deep (R the program's reach along the split axis, E the
// exchange period in steps); the halos are exchanged every E steps, so between exchanges a
// sub-domain computes E steps without communicating (communication-avoiding temporal blocking
// across devices). Values in a halo go wrong from its outer end inwards by at most R rows a
// step, so after E steps the owned rows are still exact: results are bitwise those of one
// device. One Layout and one exchange schedule serve every transport (local copies, NCCL).
// Layouts may also split the next axis too, as a grid of parts (NewGrid, layout2d.go).
package decomp

import (
	"fmt"

	"tempest/internal/ir"
)

// Axis is the split axis: the slowest, whose slabs are contiguous in memory.
const Axis = 0

// Layout is how a global domain splits into parts along Axis.
type Layout struct {
	Shape    []int // the global domain
	Parts    int
	Reach    int  // R: the program's reach along Axis
	Period   int  // E: steps between exchanges
	Halo     int  // rows of halo on each inner side: E*R, plus a fixed rim's excess over R
	Periodic bool // the grids wrap along Axis: the first and last parts exchange too
	// Own is each part's rows of the global domain, [lo, hi).
	Own [][2]int
	// Below and Above are each part's halo rows on either side (0 at a real edge).
	Below, Above []int
	// Prog is the program the parts run: the global one, or, where updates or boundaries
	// read positions along Axis, a copy that adds each part's origin (parameter Origin).
	Prog   *ir.Program
	Origin int // index of the origin parameter in Prog, -1 if none
	// Cols is the split of Axis1 in a two-dimensional layout (NewGrid); nil where Axis alone
	// is split. Own, Below and Above above are then each part's extents along Axis.
	Cols *Span
}

// NewLayout checks that the program can be split and splits shape into parts as evenly as
// rows allow, with halos for exchanges every period steps: the one-column grid of NewGrid.
func NewLayout(p *ir.Program, shape []int, parts, period int) (*Layout, error) {
	if parts < 1 {
		return nil, fmt.Errorf("%d sub-domains: there must be at least one", parts)
	}
	return NewGrid(p, shape, parts, 1, period)
}

// Rows is part i's rows with its halos: the extent of its padded state along Axis.
func (l *Layout) Rows(i int) int { return l.Own[i][1] - l.Own[i][0] + l.Below[i] + l.Above[i] }

// Shape of part i's padded state.
func (l *Layout) PartShape(i int) []int {
	s := append([]int(nil), l.Shape...)
	s[Axis] = l.Rows(i)
	if l.Cols != nil {
		s[Axis1] = l.Width(i)
	}
	return s
}

// Global is the global row of part i's local row r (wrapped on periodic domains).
func (l *Layout) Global(i, r int) int {
	n := l.Shape[Axis]
	return ((l.Own[i][0]-l.Below[i]+r)%n + n) % n
}

// Copy moves Rows rows of every exchanged grid level from part From (local rows from FromRow)
// to part To (local rows from ToRow). Cols, when not zero, narrows each row to Cols cells of
// Axis1, from FromCol at the source and ToCol at the target: a strided region
// (two-dimensional layouts, whose copies all carry their width).
type Copy struct {
	From, FromRow, To, ToRow, Rows int
	FromCol, ToCol, Cols           int
}

// Exchanges is the exchange schedule: for each part, its lower halo from the part below and
// its upper halo from the part above (the last and first parts across a periodic wrap; a
// single periodic part from itself), in part order; in two-dimensional layouts whole padded
// rows, followed by the column copies of the second phase (Phases). Sources are owned rows and
// targets halo rows, so the copies of a phase are independent of one another.
func (l *Layout) Exchanges() []Copy {
	var cs []Copy
	k, q := l.Grid()
	for i := 0; i < l.Parts; i++ {
		a, b := l.slots(i)
		own := l.Own[i][1] - l.Own[i][0]
		width := 0
		if l.Cols != nil {
			width = l.Width(i)
		}
		if l.Below[i] > 0 {
			j := (a-1+k)%k*q + b
			ownJ := l.Own[j][1] - l.Own[j][0]
			cs = append(cs, Copy{From: j, FromRow: l.Below[j] + ownJ - l.Below[i], To: i, ToRow: 0, Rows: l.Below[i], Cols: width})
		}
		if l.Above[i] > 0 {
			j := (a+1)%k*q + b
			cs = append(cs, Copy{From: j, FromRow: l.Below[j], To: i, ToRow: l.Below[i] + own, Rows: l.Above[i], Cols: width})
		}
	}
	return append(cs, l.colExchanges()...)
}

// Splittable says why a program cannot be split along Axis, or nil: all grids must agree on
// whether the axis wraps, since that decides whether the outer parts have a real edge.
func Splittable(p *ir.Program) error { return splittableAlong(p, Axis) }
