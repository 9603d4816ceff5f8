package decomp

import (
	"fmt"

	"tempest/internal/gpu"
	"tempest/internal/ir"
)

// Transport carries out an exchange schedule between parts. Every transport moves the same
// copies (Layout.Exchanges) for every exchanged grid level (Exchanged); they differ only in
// how the bytes travel.
type Transport interface {
	// Exchange performs the copies whose source or target part this process holds; parts is
	// indexed by part number, nil where another process holds the part.
	Exchange(parts []Part, copies []Copy, levels []Level) error
	// Start begins the same copies and returns what Wait ends. NCCL's transfers run beside the
	// kernels launched meanwhile and the coordinator's relay beside the process's work; Local
	// completes them in Start. Until Wait, no part may run over the rows the copies read or
	// write.
	Start(parts []Part, copies []Copy, levels []Level) (Pending, error)
	Close() error
}

// PartStarter is a transport whose parts post their side of an exchange independently of one
// another (NCCL: each part is a rank with its own communicator). The domain then drives every
// local part's whole period, exchange included, from a goroutine of its own and in one batch
// of device calls (Domain.Run), so that one process posts to several devices at once.
type PartStarter interface {
	// StartPart starts part i's sends and receives of the exchange; the Pending orders part
	// i's later runs after them.
	StartPart(i int, parts []Part, copies []Copy, levels []Level) (Pending, error)
}

// RowsStarter is a PartStarter that can launch the kernels computing what a part sends on the
// transfers' own stream, ahead of them (NCCL): the part's launches after it then run beside
// those kernels and the transfers, and wait for them only at the Pending's Wait.
type RowsStarter interface {
	StartPartAfter(i int, parts []Part, copies []Copy, levels []Level, first func() error) (Pending, error)
}

// Pending is a started exchange.
type Pending interface {
	// Wait orders the parts' later runs after the exchange (on a device it need not block).
	Wait() error
}

// finished is the Pending of a transport that completes exchanges in Start.
type finished struct{}

func (finished) Wait() error { return nil }

// Level is one grid level that exchanges carry.
type Level struct{ Grid, Level int }

// Exchanged lists the levels halo exchanges carry: both levels of every state grid. Input
// grids never change, so their halos are scattered once.
func Exchanged(p *ir.Program) []Level {
	var out []Level
	for _, u := range p.Updates {
		for l := 0; l < u.Grid.Levels; l++ {
			out = append(out, Level{u.Grid.Index, l})
		}
	}
	return out
}

// Local is the transport between parts of one process: device-to-device copies for parts of
// one device, copies through host memory between devices, and row copies between host parts
// (strided region copies and row-segment copies for the columns of two-dimensional layouts).
type Local struct{}

// Exchange implements Transport.
func (Local) Exchange(parts []Part, copies []Copy, levels []Level) error {
	for _, c := range copies {
		src, dst := parts[c.From], parts[c.To]
		if src == nil || dst == nil {
			return fmt.Errorf("internal error: local exchange %d -> %d with a part of another process", c.From, c.To)
		}
		src, c.FromRow = slab(src, c.FromRow, c.Rows)
		dst, c.ToRow = slab(dst, c.ToRow, c.Rows)
		for _, lv := range levels {
			sb, db := src.Buffer(lv.Grid, lv.Level), dst.Buffer(lv.Grid, lv.Level)
			switch {
			case c.Cols > 0:
				if err := copyRegion(dst, src, c, lv); err != nil {
					return fmt.Errorf("halo exchange %d -> %d: %w", c.From, c.To, err)
				}
			case sb != nil && db != nil:
				rb := bufRowBytes(src, lv.Grid)
				if drb := bufRowBytes(dst, lv.Grid); drb != rb {
					panic(fmt.Sprintf("internal error: halo rows of %d bytes copied to rows of %d", rb, drb))
				}
				if err := gpu.CopyRange(db, int64(c.ToRow)*rb, sb, int64(c.FromRow)*rb, int64(c.Rows)*rb); err != nil {
					return fmt.Errorf("halo exchange %d -> %d: %w", c.From, c.To, err)
				}
			case sb == nil && db == nil:
				ss, ds := src.State(), dst.State()
				sa, da := ss.Cur[lv.Grid], ds.Cur[lv.Grid]
				if lv.Level == 1 {
					sa, da = ss.Prev[lv.Grid], ds.Prev[lv.Grid]
				}
				copyRows(da, c.ToRow, sa, c.FromRow, c.Rows, rowElems(ss.Shape))
			default:
				return fmt.Errorf("internal error: halo exchange between a host part and a device part")
			}
		}
	}
	return nil
}

// Start implements Transport: the copies are done when it returns.
func (t Local) Start(parts []Part, copies []Copy, levels []Level) (Pending, error) {
	return finished{}, t.Exchange(parts, copies, levels)
}

// Close implements Transport.
func (Local) Close() error { return nil }
