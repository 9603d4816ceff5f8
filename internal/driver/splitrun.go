package driver

import (
	"encoding/binary"
	"fmt"
	"time"

	"tempest/internal/cpu"
	"tempest/internal/decomp"
	"tempest/internal/gpu"
	"tempest/internal/gridio"
	"tempest/internal/state"
)

// splitStepper drives a run split into sub-domains (decomp.Domain) as the run loop drives one
// device. Advance runs the parts, exchanging halos on the domain's own schedule whatever the
// chunks; Sync gathers their owned rows into the global state. Observables are evaluated on
// that gathered state (cpu.ObserveState): the language reduces in a fixed order over the whole
// domain, which sub-domain boundaries cut across, so this gives bitwise what one device gives,
// at the cost of a gather per observation. In a multi-process run every rank takes part in
// every gather (through the coordinator, at the same steps: the loop's schedule is the same on
// every rank) and only rank 0's global state is filled.
type splitStepper struct {
	d     *decomp.Domain
	s     *state.State        // the global state
	coord *decomp.Coordinator // multi-process runs; nil in one process
	depth int                 // the plan's deepest launch
	// dirty says the parts advanced since the last gather. Every rank advances and syncs
	// alike, so all agree on whether a Sync gathers.
	dirty bool
	// before holds, by grid index, the gathered values before the last step of the one-level
	// grids whose .prev an observable reads; nil after a plain Advance.
	before []*gridio.Array
	prof   *decomp.Profile // TEMPEST_SPLIT_PROFILE; nil otherwise
	// devs are the devices of this process's parts (Domain.Devices), nil for CPU engine parts:
	// a chunk's time is then the longest of theirs from an event before its first launch to
	// one after its last, as a single device's chunks are timed (gpurun's Timed), so that the
	// host's turn between chunks counts in neither; CPU engine parts take the wall clock.
	devs []gpu.Device
}

// Advance runs n steps on every part and waits for them: the devices' time (devs), exchanges
// included, or the wall time.
func (sp *splitStepper) Advance(n int) (float64, error) {
	t := time.Now()
	sp.before = nil
	if n == 0 {
		return 0, nil
	}
	starts, err := record(sp.devs)
	defer free(starts)
	if err != nil {
		return 0, err
	}
	if err := sp.d.Run(n); err != nil {
		return 0, err
	}
	sp.dirty = true
	ends, err := record(sp.devs)
	defer free(ends)
	if err != nil {
		return 0, err
	}
	for i, p := range sp.d.Parts {
		if p != nil {
			if err := p.Wait(); err != nil {
				return 0, fmt.Errorf("sub-domain %d: %w", i, err)
			}
		}
	}
	secs := time.Since(t).Seconds()
	if len(ends) > 0 {
		secs = 0
		for i, end := range ends {
			ms, err := end.ElapsedMs(starts[i])
			if err != nil {
				return 0, err
			}
			secs = max(secs, ms/1e3)
		}
	}
	if err := sp.prof.Collect(); err != nil {
		return 0, fmt.Errorf("reading the split profile: %w", err)
	}
	return secs, nil
}

// record records a new event on each device, in order.
func record(devs []gpu.Device) ([]gpu.Event, error) {
	var evs []gpu.Event
	for _, d := range devs {
		ev, err := d.NewEvent()
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
		if err := ev.Record(); err != nil {
			return evs, err
		}
	}
	return evs, nil
}

func free(evs []gpu.Event) {
	for _, ev := range evs {
		ev.Free()
	}
}

// Sync gathers the parts' owned rows into the global state (on rank 0 in a multi-process run),
// unless nothing ran since the last gather.
func (sp *splitStepper) Sync() error {
	if !sp.dirty {
		return nil
	}
	if sp.coord == nil {
		if err := sp.d.Gather(sp.s); err != nil {
			return err
		}
	} else {
		p := sp.d.Parts[sp.coord.Rank]
		if err := p.Sync(); err != nil {
			return err
		}
		if err := sp.coord.GatherState(sp.d.L, sp.s, p); err != nil {
			return fmt.Errorf("gathering the state on rank 0: %w", err)
		}
		sp.s.Steps = p.State().Steps
	}
	sp.dirty = false
	return nil
}

func (sp *splitStepper) Granule() int { return sp.depth }

// AdvanceObserved keeps, where an observable reads .prev of a one-level grid, the gathered
// values before the last step: n-1 steps, a gather, then the last step (a second gather
// follows when the observables are evaluated).
func (sp *splitStepper) AdvanceObserved(n int) (float64, error) {
	prev := sp.s.Prog.PrevObserved()
	if len(prev) == 0 || n == 0 {
		return sp.Advance(n)
	}
	sec, err := sp.Advance(n - 1)
	if err != nil {
		return sec, err
	}
	if err := sp.Sync(); err != nil {
		return sec, err
	}
	var before []*gridio.Array
	if sp.coord == nil || sp.coord.Rank == 0 {
		before = make([]*gridio.Array, len(sp.s.Prog.Grids))
		for _, g := range prev {
			before[g.Index] = state.CopyArray(sp.s.Cur[g.Index])
		}
	}
	last, err := sp.Advance(1)
	sp.before = before
	return sec + last, err
}

// Observe evaluates the observables on the gathered global state (rank 0 alone).
func (sp *splitStepper) Observe() ([]float64, error) {
	if sp.coord != nil && sp.coord.Rank != 0 {
		panic("internal error: observing on a rank other than 0")
	}
	if err := sp.Sync(); err != nil {
		return nil, err
	}
	return cpu.ObserveState(sp.s, sp.before), nil
}

// agreeOver makes the ranks of a multi-process run take the same decisions (loop.agree): each
// sends rank 0 its own, rank 0 sends back its chunk and end with a stop if any rank asked for
// one. Two small messages per chunk of about chunkTarget: nothing beside the chunk.
func agreeOver(c *decomp.Coordinator) func(decision) (decision, error) {
	encode := func(d decision) []byte {
		b := make([]byte, 9)
		if d.Stop {
			b[0] |= 1
		}
		if d.End {
			b[0] |= 2
		}
		binary.LittleEndian.PutUint64(b[1:], uint64(d.Chunk))
		return b
	}
	return func(d decision) (decision, error) {
		all, err := c.Gather(encode(d))
		if err != nil {
			return d, fmt.Errorf("coordinating the ranks: %w", err)
		}
		for _, b := range all {
			if len(b) == 9 && b[0]&1 != 0 {
				d.Stop = true
			}
		}
		b, err := c.Broadcast(encode(d))
		if err != nil {
			return d, fmt.Errorf("coordinating the ranks (rank 0 ended?): %w", err)
		}
		if len(b) != 9 {
			return d, fmt.Errorf("coordinating the ranks: a message of %d bytes, 9 expected", len(b))
		}
		return decision{Stop: b[0]&1 != 0, End: b[0]&2 != 0, Chunk: int(binary.LittleEndian.Uint64(b[1:]))}, nil
	}
}
