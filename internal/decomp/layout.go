// Package decomp splits a run over several sub-domains (devices, processes or, for tests, parts
// of one device) along the slowest axis. Each sub-domain is an ordinary single-device run over
// its rows padded with halos E*R rows deep (R the program's reach along the split axis, E the
// exchange period in steps); the halos are exchanged every E steps, so between exchanges a
// sub-domain computes E steps without communicating (communication-avoiding temporal blocking
// across devices). Values in a halo go wrong from its outer end inwards by at most R rows a
// step, so after E steps the owned rows are still exact: results are bitwise those of one
// device. One Layout and one exchange schedule serve every transport (local copies, NCCL).
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
}

// NewLayout checks that the program can be split and splits shape into parts as evenly as
// rows allow, with halos for exchanges every period steps.
func NewLayout(p *ir.Program, shape []int, parts, period int) (*Layout, error) {
	if parts < 1 {
		return nil, fmt.Errorf("%d sub-domains: there must be at least one", parts)
	}
	if period < 1 {
		return nil, fmt.Errorf("exchange period %d: it must be at least one step", period)
	}
	if err := Splittable(p); err != nil {
		return nil, err
	}
	l := &Layout{Shape: append([]int(nil), shape...), Parts: parts, Reach: p.Reach()[Axis], Period: period}
	extra := 0
	for _, g := range p.Grids {
		if g.Update != nil && len(g.Rim) > Axis {
			extra = max(extra, g.Rim[Axis]-l.Reach)
		}
	}
	l.Halo = period*l.Reach + extra
	l.Periodic = p.Grids[0].BC[Axis].Kind == ir.Periodic
	l.Prog, l.Origin = p, -1
	if positional(p) {
		l.Prog, l.Origin = localize(p, shape[Axis], l.Periodic)
	}
	n := shape[Axis]
	if parts > n {
		return nil, fmt.Errorf("%d sub-domains of %d rows along %s: use at most %d", parts, n, p.Axes[Axis], n)
	}
	for i := 0; i < parts; i++ {
		lo, hi := n*i/parts, n*(i+1)/parts
		l.Own = append(l.Own, [2]int{lo, hi})
		below, above := l.Halo, l.Halo
		if !l.Periodic && i == 0 {
			below = 0
		}
		if !l.Periodic && i == parts-1 {
			above = 0
		}
		l.Below, l.Above = append(l.Below, below), append(l.Above, above)
		if (below > 0 || above > 0) && hi-lo < l.Halo {
			return nil, fmt.Errorf("sub-domain %d owns %d rows along %s but its neighbours need halos of %d (exchange period %d x reach %d): use fewer sub-domains, a shorter exchange period or a larger --size",
				i, hi-lo, p.Axes[Axis], l.Halo, period, l.Reach)
		}
	}
	return l, nil
}

// Rows is part i's rows with its halos: the extent of its padded state along Axis.
func (l *Layout) Rows(i int) int { return l.Own[i][1] - l.Own[i][0] + l.Below[i] + l.Above[i] }

// Shape of part i's padded state.
func (l *Layout) PartShape(i int) []int {
	s := append([]int(nil), l.Shape...)
	s[Axis] = l.Rows(i)
	return s
}

// Global is the global row of part i's local row r (wrapped on periodic domains).
func (l *Layout) Global(i, r int) int {
	n := l.Shape[Axis]
	return ((l.Own[i][0]-l.Below[i]+r)%n + n) % n
}

// Copy moves Rows rows of every exchanged grid level from part From (local rows from FromRow)
// to part To (local rows from ToRow).
type Copy struct {
	From, FromRow, To, ToRow, Rows int
}

// Exchanges is the exchange schedule: for each part, its lower halo from the part below and
// its upper halo from the part above (the last and first parts across a periodic wrap; a
// single periodic part from itself), in part order. Sources are owned rows and targets halo
// rows, so the copies are independent of one another.
func (l *Layout) Exchanges() []Copy {
	var cs []Copy
	k := l.Parts
	for i := 0; i < k; i++ {
		own := l.Own[i][1] - l.Own[i][0]
		if l.Below[i] > 0 {
			j := (i - 1 + k) % k
			ownJ := l.Own[j][1] - l.Own[j][0]
			cs = append(cs, Copy{From: j, FromRow: l.Below[j] + ownJ - l.Below[i], To: i, ToRow: 0, Rows: l.Below[i]})
		}
		if l.Above[i] > 0 {
			j := (i + 1) % k
			cs = append(cs, Copy{From: j, FromRow: l.Below[j], To: i, ToRow: l.Below[i] + own, Rows: l.Above[i]})
		}
	}
	return cs
}

// Splittable says why a program cannot be split along Axis, or nil: all grids must agree on
// whether the axis wraps, since that decides whether the outer parts have a real edge.
func Splittable(p *ir.Program) error {
	periodic := 0
	for _, g := range p.Grids {
		if g.BC[Axis].Kind == ir.Periodic {
			periodic++
		}
	}
	if periodic != 0 && periodic != len(p.Grids) {
		return fmt.Errorf("%s cannot be split into sub-domains along %s: some grids are periodic along %s and others are not, so the outer sub-domains would need an edge and a wrap at once; run it on one device",
			p.Name, p.Axes[Axis], p.Axes[Axis])
	}
	return nil
}
