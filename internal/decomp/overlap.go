package decomp

import (
	"fmt"

	"tempest/internal/gpu"
	"tempest/internal/state"
)

// Overlapped exchanges: a part whose halos travel through a transport splits its owned rows
// into a band on each side that has a neighbour, H rows deep (H the layout's halo: exactly the
// rows the neighbour needs), and the interior between them. Each is a sub-part of its own, an
// ordinary single-engine run over its rows padded with halos H deep, on the part's engine.
// Only the bands take part in the exchange between parts (their owned rows are sent, their
// outer halos received), so each period (1) starts the exchange, (2) copies halos between
// the bands and the interior locally, (3) runs the interior E steps, (4) waits for the
// exchange and (5) runs the bands E steps: the exchange travels while the interior computes.
// Every sub-part owns at least H rows, so by the layout's argument (halos go wrong by at most
// R rows a step) results stay bitwise those of one device. The cost is the bands' redundant
// halo rows, 4H rows more per part than unsplit, and their smaller launches.

// Bands is how part i splits for overlapped exchanges: the owned rows, in global rows, of its
// lower band (where it has a neighbour below), interior and upper band (where it has one
// above), in row order. Nil when the part runs unsplit: it has no neighbour, or it owns fewer
// than H rows more than its bands (too thin for an interior that can feed the bands' halos),
// and on two-dimensional grids.
func (l *Layout) Bands(i int) [][2]int {
	if l.Cols != nil {
		// A two-dimensional grid exchanges in two phases, the second reading what the first
		// wrote: there is no single exchange for the interiors to overlap.
		return nil
	}
	lo, hi := l.Own[i][0], l.Own[i][1]
	bands := 0
	if l.Below[i] > 0 {
		bands++
	}
	if l.Above[i] > 0 {
		bands++
	}
	if bands == 0 || l.Halo == 0 || hi-lo < (bands+1)*l.Halo {
		return nil
	}
	var out [][2]int
	if l.Below[i] > 0 {
		out = append(out, [2]int{lo, lo + l.Halo})
		lo += l.Halo
	}
	if l.Above[i] > 0 {
		out = append(out, [2]int{lo, hi - l.Halo}, [2]int{hi - l.Halo, hi})
	} else {
		out = append(out, [2]int{lo, hi})
	}
	return out
}

// SplitOverlapped is Split with every part that Bands splits made of its bands and interior
// (each built by build on the part's engine); the domain's runs then overlap each exchange
// with the interiors' steps (transport Start ... Wait). Parts too thin run unsplit.
func SplitOverlapped(g *state.State, l *Layout, mine func(i int) bool, build func(i int, s *state.State) (Part, error), t Transport) (*Domain, error) {
	return Split(g, l, mine, func(i int, s *state.State) (Part, error) {
		if l.Bands(i) == nil {
			return build(i, s)
		}
		return newBanded(g, l, i, s, build)
	}, t)
}

// banded is a part made of its bands and interior (see Bands).
type banded struct {
	s      *state.State // the part's padded state: filled by Sync
	subs   []Part       // in row order
	inner  int          // the interior's index in subs
	start  []int        // each sub-part's first padded row in the part's padded rows
	own    [][2]int     // each sub-part's owned rows in the part's padded rows
	below  int          // the part's lower halo rows
	local  []Copy       // halo copies between the sub-parts (indices into subs)
	levels []Level
}

// newBanded scatters the sub-parts of part i from the global state g and builds them.
func newBanded(g *state.State, l *Layout, i int, s *state.State, build func(i int, s *state.State) (Part, error)) (Part, error) {
	bands := l.Bands(i)
	// The sub-parts as a layout of their own: halos H deep between them, and the part's own
	// halos outside. Its exchanges between sub-parts are the local copies; those that fill
	// the outer halos belong to the part's exchanges, so they are left out.
	last := len(bands) - 1
	sub := *l
	sub.Parts, sub.Own = len(bands), bands
	sub.Below, sub.Above = make([]int, len(bands)), make([]int, len(bands))
	for j := range bands {
		sub.Below[j], sub.Above[j] = l.Halo, l.Halo
	}
	sub.Below[0], sub.Above[last] = l.Below[i], l.Above[i]
	var local []Copy
	for _, c := range sub.Exchanges() {
		outer := (c.To == 0 && c.ToRow < sub.Below[0]) || (c.To == last && c.ToRow >= sub.Below[last]+bands[last][1]-bands[last][0])
		if !outer {
			local = append(local, c)
		}
	}
	origin := l.Own[i][0] - l.Below[i]
	b := &banded{s: s, below: l.Below[i], local: local, levels: Exchanged(s.Prog)}
	if l.Below[i] == 0 {
		b.inner = 0
	} else {
		b.inner = 1
	}
	for j, own := range bands {
		ss, err := sub.Scatter(g, j)
		if err != nil {
			b.Close()
			return nil, err
		}
		p, err := build(i, ss)
		if err != nil {
			b.Close()
			return nil, err
		}
		b.subs = append(b.subs, p)
		if d := p.Depth(); l.Period%d != 0 {
			b.Close()
			return nil, fmt.Errorf("exchange period %d is not a multiple of the plan's deepest launch (%d steps) in the %s of sub-domain %d: choose a multiple of %d",
				l.Period, d, b.name(j), i, d)
		}
		b.start = append(b.start, own[0]-sub.Below[j]-origin)
		b.own = append(b.own, [2]int{own[0] - origin, own[1] - origin})
	}
	return b, nil
}

// name says which sub-part j is, for errors.
func (b *banded) name(j int) string {
	switch {
	case j == b.inner:
		return "interior"
	case j < b.inner:
		return "lower band"
	}
	return "upper band"
}

// slab resolves rows [row, row+rows) of part p's padded rows to the part that holds them and
// the rows' first index there: p itself, or for a banded part the sub-part that owns them or,
// for halo rows, whose halo they are.
func slab(p Part, row, rows int) (Part, int) {
	b, ok := p.(*banded)
	if !ok {
		return p, row
	}
	last := len(b.subs) - 1
	switch {
	case row+rows <= b.below:
		return b.subs[0], row - b.start[0]
	case row >= b.own[last][1]:
		return b.subs[last], row - b.start[last]
	}
	for j, o := range b.own {
		if o[0] <= row && row+rows <= o[1] {
			return b.subs[j], row - b.start[j]
		}
	}
	panic(fmt.Sprintf("internal error: rows [%d, %d) straddle the sub-parts %v of a banded part", row, row+rows, b.own))
}

// Interior is the part that runs p's interior: p itself when it is not split into bands. Its
// kernels are those of every sub-part.
func Interior(p Part) Part {
	if b, ok := p.(*banded); ok {
		return b.subs[b.inner]
	}
	return p
}

// runInterior copies the halos between the bands and the interior and runs the interior n
// steps: steps (2) and (3) of a period, which need nothing from other parts.
func (b *banded) runInterior(n int) error {
	if err := (Local{}).Exchange(b.subs, b.local, b.levels); err != nil {
		return err
	}
	return b.subs[b.inner].Run(n)
}

// runBands runs the bands n steps: step (5), after the exchange.
func (b *banded) runBands(n int) error {
	for j, p := range b.subs {
		if j == b.inner {
			continue
		}
		if err := p.Run(n); err != nil {
			return fmt.Errorf("%s: %w", b.name(j), err)
		}
	}
	return nil
}

func (b *banded) State() *state.State { return b.s }

// Run advances the part by n steps on its own (no exchange between parts).
func (b *banded) Run(n int) error {
	if err := b.runInterior(n); err != nil {
		return err
	}
	return b.runBands(n)
}

// Buffer is never asked of a banded part: its rows live in several sub-parts, which slab
// finds.
func (b *banded) Buffer(grid, level int) gpu.Buffer {
	panic("internal error: a banded part's rows live in its sub-parts; resolve them with slab")
}

// Pitch is the sub-parts' row pitch: one plan on rows of one length pads them alike.
func (b *banded) Pitch() int {
	if p, ok := b.subs[0].(pitched); ok {
		return p.Pitch()
	}
	return 0
}

func (b *banded) Depth() int {
	d := 1
	for _, p := range b.subs {
		d = max(d, p.Depth())
	}
	return d
}

func (b *banded) Wait() error {
	for j, p := range b.subs {
		if err := p.Wait(); err != nil {
			return fmt.Errorf("%s: %w", b.name(j), err)
		}
	}
	return nil
}

// Sync brings the sub-parts' values into the part's state: their owned rows, and the part's
// halos from the outer sub-parts.
func (b *banded) Sync() error {
	last := len(b.subs) - 1
	for j, p := range b.subs {
		if err := p.Sync(); err != nil {
			return fmt.Errorf("%s: %w", b.name(j), err)
		}
		lo, hi := b.own[j][0], b.own[j][1]
		if j == 0 {
			lo = 0
		}
		if j == last {
			hi = b.s.Shape[Axis]
		}
		ss := p.State()
		for _, lv := range b.levels {
			copyRows(levelArray(b.s, lv), lo, levelArray(ss, lv), lo-b.start[j], hi-lo, rowElems(b.s.Shape))
		}
		b.s.Steps = ss.Steps
	}
	return nil
}

func (b *banded) Close() {
	for _, p := range b.subs {
		p.Close()
	}
}

// overlapped says whether any local part is banded: the domain then starts exchanges and
// runs the interiors while they travel.
func (d *Domain) overlapped() bool {
	for _, p := range d.Parts {
		if _, ok := p.(*banded); ok {
			return true
		}
	}
	return false
}

// exchange carries out the exchange between periods: started where parts overlap it with
// their interiors, else done at once (pending nil).
func (d *Domain) exchange() (Pending, error) {
	if d.overlapped() {
		if len(d.phases) != 1 {
			panic(fmt.Sprintf("internal error: overlapped exchanges in %d phases", len(d.phases)))
		}
		return d.T.Start(d.Parts, d.phases[0], d.levels)
	}
	// A phase reads what the one before it wrote (corners): each completes first.
	for _, copies := range d.phases {
		if err := d.T.Exchange(d.Parts, copies, d.levels); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// advance runs one period of n steps: the banded parts' interiors first, which need nothing
// from the exchange pending (nil: none), then, after it, the bands and the unsplit parts.
func (d *Domain) advance(n int, pending Pending) error {
	for i, p := range d.Parts {
		if b, ok := p.(*banded); ok {
			if err := b.runInterior(n); err != nil {
				if pending != nil {
					pending.Wait() // no transfer may outlive the run; the interior's error says why it ended
				}
				return fmt.Errorf("sub-domain %d: %w", i, err)
			}
		}
	}
	if pending != nil {
		if err := pending.Wait(); err != nil {
			return err
		}
	}
	for i, p := range d.Parts {
		if p == nil {
			continue
		}
		var err error
		if b, ok := p.(*banded); ok {
			err = b.runBands(n)
		} else {
			err = p.Run(n)
		}
		if err != nil {
			return fmt.Errorf("sub-domain %d: %w", i, err)
		}
	}
	return nil
}
