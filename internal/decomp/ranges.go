package decomp

import (
	"fmt"
	"slices"

	"tempest/internal/plan"
)

// Periods over ranges of planes: a device part whose plan's kernels write only the planes they
// are given (plan.Ranges) runs each launch of a period over the rows still needed at the
// period's end (its owned rows and, on each side with a neighbour, a reach more per step
// still to come: the halo shrinks as it goes wrong, instead of being computed to no use), and
// the last launch before an exchange over the rows its neighbours receive first; the exchange
// then starts and travels while the same launch computes the rest of its rows. Halos are
// received into rows no launch of the step writes, and the rows sent are final before the
// exchange starts, so results stay bitwise those of one device. One-dimensional layouts over
// transports whose parts post their exchanges alone (PartStarter: NCCL).

// RangedPlan is pl made to run a part's periods over ranges of planes: plan.Ranges set, and the
// settings it excludes (rimcut, chain) dropped. An error where pl is not an n5d plan.
func RangedPlan(pl plan.Plan) (plan.Plan, error) {
	if pl.Strategy != plan.N5D {
		return pl, fmt.Errorf("plan %s: only n5d's kernels compute ranges of planes; give an n5d plan, or another --overlap", pl)
	}
	pl.Ranges, pl.RimCut, pl.Chain = true, false, false
	return pl, nil
}

// rangedPart is part p as a part that runs its periods over ranges of planes, if it is one.
func (d *Domain) rangedPart(p Part) (*devicePart, bool) {
	dp, ok := p.(*devicePart)
	if !ok || d.L.Cols != nil || !dp.r.Ranged() {
		return nil, false
	}
	return dp, true
}

// needed is the rows of part i that must hold valid values t steps after an exchange: its
// owned rows and, on each side with a neighbour, the (Period-t) reaches beyond them that the
// steps before the next exchange read.
func (l *Layout) needed(i, t int) (lo, hi int) {
	lo, hi = 0, l.Rows(i)
	if l.Below[i] > 0 {
		lo = max(l.Below[i]-(l.Period-t)*l.Reach, 0)
	}
	if l.Above[i] > 0 {
		hi = min(l.Rows(i)-l.Above[i]+(l.Period-t)*l.Reach, hi)
	}
	return lo, hi
}

// sent splits part i's rows lo..hi-1 into those its exchanges send (first) and the others.
func sent(copies []Copy, i, lo, hi int) (first, rest [][2]int) {
	var rs [][2]int
	for _, c := range copies {
		if c.From == i {
			if a, b := max(c.FromRow, lo), min(c.FromRow+c.Rows, hi); a < b {
				rs = append(rs, [2]int{a, b})
			}
		}
	}
	slices.SortFunc(rs, func(x, y [2]int) int { return x[0] - y[0] })
	for _, r := range rs {
		if n := len(first); n > 0 && r[0] <= first[n-1][1] {
			first[n-1][1] = max(first[n-1][1], r[1])
		} else {
			first = append(first, r)
		}
	}
	at := lo
	for _, r := range first {
		if at < r[0] {
			rest = append(rest, [2]int{at, r[0]})
		}
		at = r[1]
	}
	if at < hi {
		rest = append(rest, [2]int{at, hi})
	}
	return first, rest
}

// rangedPeriod runs segment sg of part i over ranges of planes. With early, the segment ends a
// period and an exchange follows: its last launch computes the rows sent first (on the
// transfers' stream, ahead of them, where the transport takes them: RowsStarter), the exchange
// starts, and the launch's other rows follow; the exchange is returned to be waited for before
// the next segment.
func (d *Domain) rangedPeriod(pt PartStarter, i int, dp *devicePart, sg segment, early bool) (Pending, error) {
	r := dp.r
	ks := r.Launches(sg.n)
	t := sg.at
	for j, k := range ks {
		t += k
		lo, hi := d.L.needed(i, t)
		if j < len(ks)-1 || !early {
			if lo < hi {
				if err := r.LaunchRows(k, lo, hi); err != nil {
					return nil, err
				}
			}
			r.Advance(k)
			continue
		}
		first, rest := sent(d.phases[0], i, lo, hi)
		r.Advance(k) // the exchange sends the level this launch writes
		launchFirst := func() error {
			for _, rg := range first {
				if err := r.LaunchRowsPast(k, rg[0], rg[1]); err != nil {
					return err
				}
			}
			return nil
		}
		var pending Pending
		var err error
		if rs, ok := pt.(RowsStarter); ok && !d.SerialSent {
			// The sent planes on the transfers' stream, ahead of them: the rest of the
			// launch fills the device beside them instead of after their thin launches.
			pending, err = rs.StartPartAfter(i, d.Parts, d.phases[0], d.levels, launchFirst)
		} else if err = launchFirst(); err == nil {
			pending, err = pt.StartPart(i, d.Parts, d.phases[0], d.levels)
		}
		if err != nil {
			return nil, err
		}
		for _, rg := range rest {
			if err := r.LaunchRowsPast(k, rg[0], rg[1]); err != nil {
				pending.Wait() // no transfer may outlive the run; the launch's error says why it ended
				return nil, err
			}
		}
		return pending, nil
	}
	return nil, nil
}

// rangedPeriodOf is periodOf for a part that runs its periods over ranges of planes: the
// segment's exchange (the one started at the end of the period before, or one started now)
// is waited for first, and where next says an exchange follows the segment, the segment starts
// it itself and returns it.
func (d *Domain) rangedPeriodOf(pt PartStarter, i int, dp *devicePart, sg segment, started Pending, next bool) (Pending, error) {
	m := d.prof.begin(i, dp)
	defer m.end(d.prof)
	m.mark(1)
	if sg.due {
		pending := started
		if pending == nil {
			var err error
			if pending, err = pt.StartPart(i, d.Parts, d.phases[0], d.levels); err != nil {
				return nil, err
			}
		}
		if err := pending.Wait(); err != nil {
			return nil, err
		}
	}
	m.mark(2)
	early, err := d.rangedPeriod(pt, i, dp, sg, next)
	if err != nil {
		return nil, fmt.Errorf("sub-domain %d: %w", i, err)
	}
	return early, nil
}
