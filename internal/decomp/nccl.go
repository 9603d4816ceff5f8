package decomp

import (
	"fmt"
	"sync"
	"time"

	"tempest/internal/gpu"
)

// NCCL is the transport between ranks through NCCL: each part is a rank (part i is rank i),
// and its halos travel device to device as grouped sends and receives on the stream its
// kernels run on, ordered after the launches before them. Strided halos (columns of
// two-dimensional layouts) travel packed in staging buffers, one per part (nccl2d.go).
type NCCL struct {
	Comms []Comm // by part number; nil for parts of other processes
	stage []gpu.Buffer
	// stop ends Watch's polling, watching waits for it (Close).
	stop     chan struct{}
	watching sync.WaitGroup
}

// Comm is one rank's communicator (*gpu.NCCLComm): Exchange posts a group of transfers that
// pair up with the other ranks' in order, after the launches before it and before those after
// it; Start posts it beside the launches after it, until Wait.
type Comm interface {
	Exchange(ops []gpu.P2P) error
	Start(ops []gpu.P2P) error
	// StartAfter is Start with first's launches (the kernels computing what ops send) ahead
	// of the transfers on their stream, beside the launches that follow (gpu.NCCLComm).
	StartAfter(ops []gpu.P2P, first func() error) error
	Wait() error
	Close() error
	// Abort gives the communicator up from any goroutine: transfers waiting for a rank that
	// died return, and later calls fail.
	Abort()
	// AsyncError is an error the communicator met in the background (a lost peer, a network
	// failure), nil while it is healthy; any goroutine may ask.
	AsyncError() error
}

// NewNCCL joins the communicator of ranks ranks for each local part (devs[i] not nil), all
// from one id; each joins from its own goroutine, since joining blocks until all have.
func NewNCCL(n *gpu.NCCL, id gpu.NCCLID, devs []gpu.Device) (*NCCL, error) {
	t := &NCCL{Comms: make([]Comm, len(devs))}
	errs := make([]error, len(devs))
	var wg sync.WaitGroup
	for i, d := range devs {
		if d == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := n.NewComm(d, len(devs), i, id)
			if err == nil {
				t.Comms[i] = c
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Close()
			return nil, err
		}
	}
	return t, nil
}

// Exchange implements Transport: each local rank posts, in schedule order, a send for every
// copy it is the source of and a receive for every copy it is the target of, so that sends
// and receives between two ranks pair up in the same order on both sides.
func (t *NCCL) Exchange(parts []Part, copies []Copy, levels []Level) error {
	if hasRegions(copies) {
		return t.exchangeRegions(parts, copies, levels)
	}
	return t.post(parts, copies, levels, Comm.Exchange)
}

// Start implements Transport: the ranks post the same groups as Exchange on their
// communicators' own streams; Wait orders each device's later launches after them.
func (t *NCCL) Start(parts []Part, copies []Copy, levels []Level) (Pending, error) {
	if hasRegions(copies) {
		// Regions (two-dimensional grids) go through staging buffers synchronously; such
		// grids have no bands, so nothing would overlap them anyway.
		return nil, t.exchangeRegions(parts, copies, levels)
	}
	if err := t.post(parts, copies, levels, Comm.Start); err != nil {
		return nil, err
	}
	return ncclPending{t, parts}, nil
}

// StartPart implements PartStarter: part i's rank posts its group alone, on the calling
// goroutine (the other local ranks post theirs from their own).
func (t *NCCL) StartPart(i int, parts []Part, copies []Copy, levels []Level) (Pending, error) {
	if t.Comms[i] == nil {
		return nil, fmt.Errorf("internal error: part %d has no NCCL communicator", i)
	}
	if err := t.postPart(i, parts[i], copies, levels, Comm.Start); err != nil {
		return nil, fmt.Errorf("halo exchange: %w", err)
	}
	one := make([]Part, len(parts))
	one[i] = parts[i]
	return ncclPending{t, one}, nil
}

// StartPartAfter implements RowsStarter: StartPart with first's launches on the transfers'
// stream ahead of them.
func (t *NCCL) StartPartAfter(i int, parts []Part, copies []Copy, levels []Level, first func() error) (Pending, error) {
	if t.Comms[i] == nil {
		return nil, fmt.Errorf("internal error: part %d has no NCCL communicator", i)
	}
	after := func(c Comm, ops []gpu.P2P) error { return c.StartAfter(ops, first) }
	if err := t.postPart(i, parts[i], copies, levels, after); err != nil {
		return nil, fmt.Errorf("halo exchange: %w", err)
	}
	one := make([]Part, len(parts))
	one[i] = parts[i]
	return ncclPending{t, one}, nil
}

type ncclPending struct {
	t     *NCCL
	parts []Part
}

func (p ncclPending) Wait() error {
	for i, part := range p.parts {
		if part != nil {
			if err := p.t.Comms[i].Wait(); err != nil {
				return fmt.Errorf("halo exchange: %w", err)
			}
		}
	}
	return nil
}

// post has each local rank post its group through send.
func (t *NCCL) post(parts []Part, copies []Copy, levels []Level, send func(Comm, []gpu.P2P) error) error {
	return t.onRanks(parts, func(i int, p Part) error { return t.postPart(i, p, copies, levels, send) })
}

// postPart has part i's rank post its group through send: a send for every copy it is the
// source of and a receive for every copy it is the target of, in schedule order.
func (t *NCCL) postPart(i int, p Part, copies []Copy, levels []Level, send func(Comm, []gpu.P2P) error) error {
	var ops []gpu.P2P
	for _, c := range copies {
		for _, lv := range levels {
			if c.From == i {
				sp, row := slab(p, c.FromRow, c.Rows)
				rb := bufRowBytes(sp, lv.Grid)
				ops = append(ops, gpu.P2P{Send: true, Buf: sp.Buffer(lv.Grid, lv.Level), Off: int64(row) * rb, Bytes: int64(c.Rows) * rb, Peer: c.To})
			}
			if c.To == i {
				sp, row := slab(p, c.ToRow, c.Rows)
				rb := bufRowBytes(sp, lv.Grid)
				ops = append(ops, gpu.P2P{Buf: sp.Buffer(lv.Grid, lv.Level), Off: int64(row) * rb, Bytes: int64(c.Rows) * rb, Peer: c.From})
			}
		}
	}
	return send(t.Comms[i], ops)
}

// onRanks runs work for every local rank's part, each on its own goroutine (a rank's group
// may wait for its peers'), and returns the first error as the halo exchange's.
func (t *NCCL) onRanks(parts []Part, work func(i int, p Part) error) error {
	for i, p := range parts {
		if p != nil && t.Comms[i] == nil {
			return fmt.Errorf("internal error: part %d has no NCCL communicator", i)
		}
	}
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	for i, p := range parts {
		if p == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = work(i, p)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return fmt.Errorf("halo exchange: %w", err)
		}
	}
	return nil
}

// Abort gives every local communicator up (Comm.Abort), from any goroutine: another rank died
// or failed, so transfers waiting for it would wait forever, and the parts' periods stop at
// their next exchange with the abort's error.
func (t *NCCL) Abort() {
	for _, c := range t.Comms {
		if c != nil {
			c.Abort()
		}
	}
}

// Watch polls the local communicators' asynchronous errors every period until Close: at the
// first, it aborts them all (the transfers waiting on the failure return, the parts stop at
// their next exchange) and hands the error to onError. Without it a failure NCCL meets in
// the background, with no rank's process dying, would leave the run waiting forever.
func (t *NCCL) Watch(period time.Duration, onError func(error)) {
	if t.stop != nil {
		panic("internal error: NCCL.Watch called twice")
	}
	t.stop = make(chan struct{})
	t.watching.Go(func() {
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			select {
			case <-t.stop:
				return
			case <-tick.C:
			}
			for i, c := range t.Comms {
				if c == nil {
					continue
				}
				if err := c.AsyncError(); err != nil {
					t.Abort()
					onError(fmt.Errorf("sub-domain %d's NCCL communicator: %w", i, err))
					return
				}
			}
		}
	})
}

// Close destroys the communicators.
func (t *NCCL) Close() error {
	if t.stop != nil {
		close(t.stop)
		t.watching.Wait()
		t.stop = nil
	}
	t.freeStage()
	var first error
	for _, c := range t.Comms {
		if c != nil {
			if err := c.Close(); err != nil && first == nil {
				first = err
			}
		}
	}
	return first
}
