package decomp

import (
	"fmt"

	"tempest/internal/gpu"
	"tempest/internal/gridio"
	"tempest/internal/state"
)

// Broadcast sends b from rank 0 to every rank and returns it on each.
func (c *Coordinator) Broadcast(b []byte) ([]byte, error) {
	if c.Rank == 0 {
		for r := 1; r < c.Ranks; r++ {
			if err := c.send(r, b); err != nil {
				return nil, err
			}
		}
		return b, nil
	}
	return c.recv(0)
}

// Gather sends each rank's b to rank 0, which gets them by rank (nil on other ranks).
func (c *Coordinator) Gather(b []byte) ([][]byte, error) {
	if c.Rank != 0 {
		return nil, c.send(0, b)
	}
	out := make([][]byte, c.Ranks)
	out[0] = b
	for r := 1; r < c.Ranks; r++ {
		m, err := c.recv(r)
		if err != nil {
			return nil, fmt.Errorf("gathering from rank %d: %w", r, err)
		}
		out[r] = m
	}
	return out, nil
}

// GatherState brings every rank's owned cells of the state grids (both levels) into the
// global state g on rank 0; on rank 0 part is its own part, already synced.
func (c *Coordinator) GatherState(l *Layout, g *state.State, part Part) error {
	s := part.State()
	var mine []byte
	for _, lv := range Exchanged(g.Prog) {
		r := l.owned(s, lv.Grid, c.Rank, false)
		b := make([]byte, r.Bytes())
		copyRect(b, gpu.Packed(0, r.Width, r.Height), levelArray(s, lv).Bytes(), r)
		mine = append(mine, b...)
	}
	all, err := c.Gather(mine)
	if err != nil || c.Rank != 0 {
		return err
	}
	for rank, b := range all {
		for _, lv := range Exchanged(g.Prog) {
			r := l.owned(g, lv.Grid, rank, true)
			n := int(r.Bytes())
			if len(b) < n {
				return fmt.Errorf("rank %d sent %d bytes of its cells, %d expected", rank, len(b), n)
			}
			copyRect(levelArray(g, lv).Bytes(), r, b[:n], gpu.Packed(0, r.Width, r.Height))
			b = b[n:]
		}
	}
	return nil
}

func levelArray(s *state.State, lv Level) *gridio.Array {
	if lv.Level == 1 {
		return s.Prev[lv.Grid]
	}
	return s.Cur[lv.Grid]
}

// Exchange implements Transport for runs without NCCL (the CPU engine, OpenCL): halos travel
// over the coordinator's connections, through rank 0. Each rank sends rank 0 its outgoing
// slabs in schedule order; rank 0 sends each rank its incoming ones, in the same order.
func (c *Coordinator) Exchange(parts []Part, copies []Copy, levels []Level) error {
	p := parts[c.Rank]
	if p == nil {
		return fmt.Errorf("internal error: rank %d holds no part", c.Rank)
	}
	var out []byte
	for _, cp := range copies {
		if cp.From != c.Rank {
			continue
		}
		sp, row := slab(p, cp.FromRow, cp.Rows)
		for _, lv := range levels {
			sc := cp
			sc.FromRow = row
			b, err := readRegion(sp, lv, sc.BufRegion(sp, lv.Grid, true))
			if err != nil {
				return err
			}
			out = append(out, b...)
		}
	}
	// The slabs travel as their buffers hold them, padded rows and all (plan.Align): every
	// part of a run pads alike where a pad lies inside a slab, so rank 0's part sizes them.
	size := func(cp Copy, lv Level) int { return int(cp.BufRegion(p, lv.Grid, true).Bytes()) }
	var in []byte
	if c.Rank != 0 {
		if err := c.send(0, out); err != nil {
			return fmt.Errorf("halo exchange: %w", err)
		}
		m, err := c.recv(0)
		if err != nil {
			return fmt.Errorf("halo exchange: %w", err)
		}
		in = m
	} else {
		sent := make([][]byte, c.Ranks)
		sent[0] = out
		for r := 1; r < c.Ranks; r++ {
			m, err := c.recv(r)
			if err != nil {
				return fmt.Errorf("halo exchange with rank %d: %w", r, err)
			}
			sent[r] = m
		}
		// Route: each copy's slabs go, in schedule order, to the rank of its target.
		to := make([][]byte, c.Ranks)
		for _, cp := range copies {
			for _, lv := range levels {
				n := size(cp, lv)
				if len(sent[cp.From]) < n {
					return fmt.Errorf("halo exchange: rank %d sent too few bytes", cp.From)
				}
				to[cp.To] = append(to[cp.To], sent[cp.From][:n]...)
				sent[cp.From] = sent[cp.From][n:]
			}
		}
		for r := 1; r < c.Ranks; r++ {
			if err := c.send(r, to[r]); err != nil {
				return fmt.Errorf("halo exchange with rank %d: %w", r, err)
			}
		}
		in = to[0]
	}
	for _, cp := range copies {
		if cp.To != c.Rank {
			continue
		}
		sp, row := slab(p, cp.ToRow, cp.Rows)
		for _, lv := range levels {
			n := size(cp, lv)
			if len(in) < n {
				return fmt.Errorf("halo exchange: rank %d received too few bytes", c.Rank)
			}
			sc := cp
			sc.ToRow = row
			if err := writeRegion(sp, lv, sc.BufRegion(sp, lv.Grid, false), in[:n]); err != nil {
				return err
			}
			in = in[n:]
		}
	}
	return nil
}

// Start implements Transport: the relay runs on a goroutine of its own, so that the
// process computes (the interiors of its parts) while the slabs travel; Wait returns when
// they have arrived.
func (c *Coordinator) Start(parts []Part, copies []Copy, levels []Level) (Pending, error) {
	r := relayPending(make(chan error, 1))
	go func() { r <- c.Exchange(parts, copies, levels) }()
	return r, nil
}

// relayPending is a relay under way: its goroutine sends Exchange's result.
type relayPending chan error

func (r relayPending) Wait() error { return <-r }

// readRegion copies region r of a part's grid level out, packed.
func readRegion(p Part, lv Level, r gpu.Rect) ([]byte, error) {
	out := make([]byte, r.Bytes())
	if buf := p.Buffer(lv.Grid, lv.Level); buf != nil {
		if contiguous(r) {
			if rbuf, ok := buf.(gpu.RangeBuffer); ok {
				return out, rbuf.ReadAt(out, r.Off)
			}
		}
		rbuf, ok := buf.(gpu.RectBuffer)
		if !ok {
			return nil, fmt.Errorf("internal error: %T cannot read part of itself", buf)
		}
		return out, rbuf.ReadRect(out, r)
	}
	copyRect(out, gpu.Packed(0, r.Width, r.Height), levelArray(p.State(), lv).Bytes(), r)
	return out, nil
}

// writeRegion unpacks b into region r of a part's grid level.
func writeRegion(p Part, lv Level, r gpu.Rect, b []byte) error {
	if buf := p.Buffer(lv.Grid, lv.Level); buf != nil {
		if contiguous(r) {
			if rbuf, ok := buf.(gpu.RangeBuffer); ok {
				return rbuf.WriteAt(b, r.Off)
			}
		}
		rbuf, ok := buf.(gpu.RectBuffer)
		if !ok {
			return fmt.Errorf("internal error: %T cannot write part of itself", buf)
		}
		return rbuf.WriteRect(b, r)
	}
	copyRect(levelArray(p.State(), lv).Bytes(), r, b, gpu.Packed(0, r.Width, r.Height))
	return nil
}
