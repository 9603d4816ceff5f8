package decomp

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"tempest/internal/gpu"

	"tempest/internal/lower"
	"tempest/internal/plan"
	"tempest/internal/state"
)

// Domain is a decomposed run: the layout, the parts this process holds and the transport
// between them and the others.
type Domain struct {
	L         *Layout
	Parts     []Part // by part number; nil where another process holds the part
	T         Transport
	levels    []Level
	phases    [][]Copy
	Exchanges int // exchanges performed so far
	// since is the steps run since the last exchange (or since the split): the halos still
	// hold Period-since steps of valid rows.
	since int
	prof  *Profile // nil unless EnableProfile
	// SerialSent makes ranged periods launch the planes they send on the device's own
	// stream before the exchange starts, as they did before the transfers' stream took
	// them (RowsStarter); for measuring one against the other (TEMPEST_RANGES_SERIAL).
	SerialSent bool
}

// NewDomain checks the parts against the layout: every exchange period must be a multiple of
// each part's deepest launch, or a launch would run past an exchange.
func NewDomain(l *Layout, parts []Part, t Transport) (*Domain, error) {
	if len(parts) != l.Parts {
		panic(fmt.Sprintf("internal error: %d parts for a layout of %d", len(parts), l.Parts))
	}
	var prog *state.State
	for i, p := range parts {
		if p == nil {
			continue
		}
		prog = p.State()
		if d := p.Depth(); l.Period%d != 0 {
			return nil, fmt.Errorf("exchange period %d is not a multiple of the plan's deepest launch (%d steps) in sub-domain %d: choose a multiple of %d", l.Period, d, i, d)
		}
	}
	if prog == nil {
		panic("internal error: a domain without local parts")
	}
	return &Domain{L: l, Parts: parts, T: t, levels: Exchanged(prog.Prog), phases: l.Phases()}, nil
}

// Run advances every part by steps: runs of at most one period, each preceded by an exchange
// where the halos are used up (none after the last run: only owned rows are read afterwards).
// The domain counts the steps since the last exchange across calls, so a run advanced in
// chunks of any length exchanges at the same steps as one call for all of them (a multiple
// of Period after the split) and gives the same values. Where parts are split into bands
// (SplitOverlapped), the interiors of the run after an exchange overlap it.
func (d *Domain) Run(steps int) error {
	segs := d.schedule(steps)
	if d.byPart() {
		return d.runByPart(segs)
	}
	for _, sg := range segs {
		var pending Pending
		if sg.due {
			var err error
			if pending, err = d.exchange(); err != nil {
				return err
			}
		}
		if err := d.advance(sg.n, pending); err != nil {
			return err
		}
	}
	return nil
}

// schedule cuts a run of steps into segments of at most one period, each preceded by an
// exchange where the halos are used up (none where the layout exchanges nothing), and moves
// the domain's count of steps since the last exchange, and of exchanges, past them.
func (d *Domain) schedule(steps int) []segment {
	var segs []segment
	for done := 0; done < steps; {
		due := d.since == d.L.Period
		if due {
			d.since = 0
			due = len(d.phases) > 0
			if due {
				d.Exchanges++
			}
		}
		n := min(d.L.Period-d.since, steps-done)
		segs = append(segs, segment{n: n, due: due, at: d.since})
		done += n
		d.since += n
	}
	return segs
}

// Connect makes one exchange of the halos as the split left them, before any timed run:
// transports that connect on first use pay for it here (NCCL makes a point-to-point connection
// at the first transfer to a peer). Right after the split every
// halo already holds its neighbour's owned rows, so the copies change no value.
func (d *Domain) Connect() error {
	if d.since != 0 || d.Exchanges != 0 {
		panic("internal error: Connect after the domain ran")
	}
	for _, copies := range d.phases {
		if err := d.T.Exchange(d.Parts, copies, d.levels); err != nil {
			return err
		}
	}
	for i, p := range d.Parts {
		if p != nil {
			if err := p.Wait(); err != nil {
				return fmt.Errorf("sub-domain %d: %w", i, err)
			}
		}
	}
	return nil
}

// byPart says each local part can run its periods on its own (Domain.runByPart): the
// transport lets parts post their sides apart, and the exchange is one phase of whole rows.
func (d *Domain) byPart() bool {
	_, ok := d.T.(PartStarter)
	return ok && len(d.phases) == 1 && !hasRegions(d.phases[0])
}

// segment is a run of n steps, preceded by an exchange where due.
type segment struct {
	n   int
	due bool
	at  int // steps since the last exchange at the segment's start
}

// runByPart runs the segments on every local part, each from a goroutine of its own and as one batch
// of device calls: per period the part's side of the exchange first where due, then its
// interior (which needs nothing from the exchange), then, after the exchange, its bands (or
// the whole part where it has no bands). The parts meet only on the devices, through the
// exchanges, so one process posts to all its devices at once and no device waits for the
// host to finish posting another's period; each device's calls cost one hand-over to its
// thread, not one each.
func (d *Domain) runByPart(segs []segment) error {
	pt := d.T.(PartStarter)
	errs := make([]error, len(d.Parts))
	var failed atomic.Bool // a part failed: the others post no further periods
	run := func(i int, p Part) {
		dp, ranged := d.rangedPart(p)
		errs[i] = batch(p, func() error {
			var early Pending // the exchange a ranged part started at the end of its period
			for k, sg := range segs {
				if failed.Load() {
					if early != nil {
						early.Wait() // no transfer may outlive the run
					}
					return nil
				}
				var err error
				if ranged {
					early, err = d.rangedPeriodOf(pt, i, dp, sg, early, k+1 < len(segs) && segs[k+1].due)
				} else {
					err = d.periodOf(pt, i, p, sg)
				}
				if err != nil {
					failed.Store(true)
					return err
				}
			}
			return nil
		})
	}
	var wg sync.WaitGroup
	last := -1
	for i, p := range d.Parts {
		if p == nil {
			continue
		}
		if last >= 0 {
			wg.Add(1)
			go func(i int, p Part) {
				defer wg.Done()
				run(i, p)
			}(last, d.Parts[last])
		}
		last = i
	}
	run(last, d.Parts[last]) // the last on this goroutine: a process of one rank starts none
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// periodOf posts one segment of part i (runByPart).
func (d *Domain) periodOf(pt PartStarter, i int, p Part, sg segment) error {
	m := d.prof.begin(i, p)
	defer m.end(d.prof)
	var pending Pending
	if sg.due {
		var err error
		if pending, err = pt.StartPart(i, d.Parts, d.phases[0], d.levels); err != nil {
			return err
		}
	}
	b, banded := p.(*banded)
	if banded {
		if err := b.runInterior(sg.n); err != nil {
			if pending != nil {
				pending.Wait() // no transfer may outlive the run; the interior's error says why it ended
			}
			return fmt.Errorf("sub-domain %d: %w", i, err)
		}
	}
	m.mark(1)
	if pending != nil {
		if err := pending.Wait(); err != nil {
			return err
		}
	}
	m.mark(2)
	var err error
	if banded {
		err = b.runBands(sg.n)
	} else {
		err = p.Run(sg.n)
	}
	if err != nil {
		return fmt.Errorf("sub-domain %d: %w", i, err)
	}
	return nil
}

// batch runs f as one batch of device calls on part p's device (gpu.Batch); host parts run
// it as it is.
func batch(p Part, f func() error) error {
	switch q := p.(type) {
	case *devicePart:
		return gpu.Batch(q.r.Device(), f)
	case *banded:
		return batch(q.subs[0], f)
	}
	return f()
}

// Gather syncs the local parts and copies their owned rows into the global state g.
func (d *Domain) Gather(g *state.State) error {
	for i, p := range d.Parts {
		if p == nil {
			continue
		}
		if err := p.Sync(); err != nil {
			return fmt.Errorf("sub-domain %d: %w", i, err)
		}
		d.L.Gather(g, p.State(), i)
		g.Steps = p.State().Steps
	}
	return nil
}

// Devices lists the devices the parts of this process run on, each once, in part order; nil
// when a part runs on the CPU engine. A run timed on them (events on each device, the longest
// from start to end) is timed as a single device's run is, exchanges and waits included.
func (d *Domain) Devices() []gpu.Device {
	var out []gpu.Device
	for _, p := range d.Parts {
		if p == nil {
			continue
		}
		dp, ok := Interior(p).(*devicePart)
		if !ok {
			return nil
		}
		if dev := dp.Device(); !slices.Contains(out, dev) {
			out = append(out, dev)
		}
	}
	return out
}

// Close frees the parts and the transport.
func (d *Domain) Close() {
	for _, p := range d.Parts {
		if p != nil {
			p.Close()
		}
	}
	if d.T != nil {
		d.T.Close()
	}
}

// PlanDepth is the deepest launch of a plan for a program and shape, in steps: the smallest
// exchange period the plan allows (every period must be a multiple of it), from lower.Depth,
// which builds no n5d kernel bodies.
func PlanDepth(s *state.State, pl plan.Plan) (int, error) {
	return lower.Depth(s.Prog, s.Shape, s.Layers, pl)
}

// Split scatters the global state g over the parts of layout l that this process holds
// (mine(i)), builds each with build and joins them with transport t.
func Split(g *state.State, l *Layout, mine func(i int) bool, build func(i int, s *state.State) (Part, error), t Transport) (*Domain, error) {
	parts := make([]Part, l.Parts)
	fail := func(err error) (*Domain, error) {
		for _, p := range parts {
			if p != nil {
				p.Close()
			}
		}
		return nil, err
	}
	for i := range parts {
		if !mine(i) {
			continue
		}
		s, err := l.Scatter(g, i)
		if err != nil {
			return fail(err)
		}
		p, err := build(i, s)
		if err != nil {
			return fail(fmt.Errorf("sub-domain %d: %w", i, err))
		}
		parts[i] = p
	}
	d, err := NewDomain(l, parts, t)
	if err != nil {
		return fail(err)
	}
	return d, nil
}

// All is a mine function for a process that holds every part.
func All(int) bool { return true }
