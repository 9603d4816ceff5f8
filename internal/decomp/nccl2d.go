package decomp

import (
	"fmt"

	"tempest/internal/gpu"
)

// Device is the device a device part runs on (staging buffers for strided halos live there).
func (d *devicePart) Device() gpu.Device { return d.r.Device() }

// hasRegions says whether a schedule carries column windows (two-dimensional layouts).
func hasRegions(copies []Copy) bool {
	for _, c := range copies {
		if c.Cols > 0 {
			return true
		}
	}
	return false
}

// staged is one transfer of a region: where its bytes lie in the grid's buffer and, for a
// strided region, at which offset of the part's staging buffer they travel packed.
type staged struct {
	send   bool
	buf    gpu.Buffer
	region gpu.Rect
	peer   int
	at     int64 // offset in the staging buffer; -1 for a contiguous region sent in place
}

// exchangeRegions is Exchange for schedules with column windows: contiguous regions (whole
// rows) travel straight from and into the grids' buffers, strided ones (columns) through a
// staging buffer per part, packed by strided device copies before the group and unpacked
// after it. The copies, the group and the kernels share the device's stream, so packing
// follows the launches before it and unpacking precedes the launches after it.
func (t *NCCL) exchangeRegions(parts []Part, copies []Copy, levels []Level) error {
	if len(t.stage) < len(parts) {
		t.stage = append(t.stage, make([]gpu.Buffer, len(parts)-len(t.stage))...)
	}
	return t.onRanks(parts, func(i int, p Part) error {
		var list []staged
		var need int64
		for _, c := range copies {
			for _, lv := range levels {
				buf := p.Buffer(lv.Grid, lv.Level)
				for _, send := range []bool{true, false} {
					if (send && c.From != i) || (!send && c.To != i) {
						continue
					}
					s := staged{send: send, buf: buf, region: c.BufRegion(p, lv.Grid, send), peer: c.From, at: -1}
					if send {
						s.peer = c.To
					}
					if !contiguous(s.region) {
						s.at = need
						need += s.region.Bytes()
					}
					list = append(list, s)
				}
			}
		}
		return t.exchangeStaged(i, p, list, need)
	})
}

// exchangeStaged packs part i's strided sends into its staging buffer (grown to need bytes),
// posts the group and unpacks the strided receives.
func (t *NCCL) exchangeStaged(i int, p Part, list []staged, need int64) error {
	stage := t.stage[i]
	if need > 0 && (stage == nil || stage.Size() < need) {
		dp, ok := p.(interface{ Device() gpu.Device })
		if !ok {
			return fmt.Errorf("internal error: part %d (%T) has no device for staging buffers", i, p)
		}
		if stage != nil {
			stage.Free()
			t.stage[i] = nil
		}
		var err error
		if stage, err = dp.Device().Alloc(need); err != nil {
			return fmt.Errorf("staging buffer of %d bytes for strided halos: %w", need, err)
		}
		t.stage[i] = stage
	}
	packed := func(s staged) gpu.Rect { return gpu.Packed(s.at, s.region.Width, s.region.Height) }
	var ops []gpu.P2P
	for _, s := range list {
		if s.at < 0 {
			ops = append(ops, gpu.P2P{Send: s.send, Buf: s.buf, Off: s.region.Off, Bytes: s.region.Bytes(), Peer: s.peer})
			continue
		}
		if s.send {
			if err := gpu.CopyRect(stage, packed(s), s.buf, s.region); err != nil {
				return fmt.Errorf("packing a halo: %w", err)
			}
		}
		ops = append(ops, gpu.P2P{Send: s.send, Buf: stage, Off: s.at, Bytes: s.region.Bytes(), Peer: s.peer})
	}
	if err := t.Comms[i].Exchange(ops); err != nil {
		return err
	}
	for _, s := range list {
		if !s.send && s.at >= 0 {
			if err := gpu.CopyRect(s.buf, s.region, stage, packed(s)); err != nil {
				return fmt.Errorf("unpacking a halo: %w", err)
			}
		}
	}
	return nil
}

// freeStage frees the staging buffers.
func (t *NCCL) freeStage() {
	for i, b := range t.stage {
		if b != nil {
			b.Free()
			t.stage[i] = nil
		}
	}
}
