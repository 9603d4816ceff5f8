package model

import (
	"fmt"
	"math"

	"tempest/internal/lower"
	"tempest/internal/plan"
)

// roofline is the model of Tempest's existing plans. Bytes per cell and step, per plan:
//
//	DRAM    every plan: the compulsory traffic (each level read once, each state written once)
//	L2      what blocks read including their halos: a tile of b_a cells per axis reads
//	        prod (b_a + 2 r_a) / b_a times the cells; streaming chunks of c planes read
//	        (c + 2 r_0) / c times; pyramid blocks read their whole input tile each launch
//	shared  tiled: tile writes (with halo) + one read per offset; stream25d: plane writes +
//	        reads of in-plane offsets (register queues serve the column); pyramid: per step,
//	        the charged lanes of the shrinking valid region read every offset and write once
//	compute lane-instructions of the update, AN5D's FMA mapping; pyramid's redundant cells
//	        included (the valid region shrinks by the reach each step: SL's pyramid height)
//
// The kernel time is max(compute, shared, DRAM, L2) divided by AN5D's SM efficiency and an
// occupancy factor, at least the launch interval; launches of a run add up.
type roofline struct {
	strategy string // the name its predictions carry
	kind     rooflineKind
}

// rooflineKind is which plan family a roofline prices: what its blocks read and stage.
type rooflineKind int

const (
	// rooflineCells: a thread a cell, every read from global memory through L2 (naive).
	rooflineCells rooflineKind = iota
	// rooflineTiles: a thread a cell, each block's tile and halo staged in shared memory (tiled).
	rooflineTiles
	// rooflineStream: one-plane-thick blocks stream the slowest axis in chunks (stream25d).
	rooflineStream
	// rooflinePyramid: several steps a launch, the halo recomputed (pyramid).
	rooflinePyramid
)

func (r roofline) Name() string {
	switch r.kind {
	case rooflinePyramid:
		return "roofline with redundant pyramid computation (SL pyramid height, calibrated from PH=1/PH=2 when measured)"
	case rooflineStream:
		return "roofline with stream-chunk and plane-halo overhead"
	case rooflineTiles:
		return "roofline with tile-halo overhead and shared-memory traffic"
	}
	return "roofline (compulsory DRAM traffic, halo reads through L2)"
}

// blockSizes maps a plan's BX, BY, BZ onto axes (slowest first): BX is the fastest axis.
func blockSizes(pl plan.Plan, d int) []int {
	b := []int{pl.BX, max(pl.BY, 1), max(pl.BZ, 1)}
	out := make([]int, d)
	for a := 0; a < d; a++ {
		if dim := d - 1 - a; dim < 3 {
			out[a] = max(b[dim], 1)
		} else {
			out[a] = 1
		}
	}
	return out
}

// haloFactor is prod (b_a + 2 r_a) / b_a over the given axes.
func haloFactor(b, r []int, axes []int) float64 {
	f := 1.0
	for _, a := range axes {
		f *= float64(b[a]+2*r[a]) / float64(b[a])
	}
	return f
}

// footprint is the cells a block of b reads per cell it computes: its halo box, or for a
// star its cells plus an arm of 2 r_a cells per cell of each face.
func footprint(b []int, lv levelRead, axes []int) float64 {
	if !lv.star {
		return haloFactor(b, lv.reach, axes)
	}
	f := 1.0
	for _, a := range axes {
		f += 2 * float64(lv.reach[a]) / float64(b[a])
	}
	return f
}

func allAxes(d int) []int {
	a := make([]int, d)
	for i := range a {
		a[i] = i
	}
	return a
}

func cellsOf(shape []int) float64 {
	n := 1.0
	for _, s := range shape {
		n *= float64(s)
	}
	return n
}

// Instruction overheads per cell (or per lane and step for pyramid) beside the update's
// arithmetic and its loads and stores: index arithmetic, bounds and rim tests, loop control,
// barriers. Nominal counts read off the generated kernels, not measured.
const (
	ovNaive   = 8
	ovTiled   = 12
	ovStream  = 12
	ovPyramid = 14
	ovFill    = 6 // per element a block copies into shared memory
)

func (r roofline) Predict(in Input) (Prediction, error) {
	f := factsOf(in.Prog, in.Sum)
	d := in.Prog.Dims()
	pl := in.Plan
	shape := in.Shape
	cells := cellsOf(shape)
	b := blockSizes(pl, d)
	base := f.ops.Instructions()
	compulsory := f.bytesRead + f.bytesWritten
	stores := float64(len(in.Prog.Updates))
	name := r.strategy + ": " + r.Name()
	points := 0.0
	for _, lv := range f.levels {
		points += float64(lv.points)
	}
	directLoads := f.globalOnly / float64(f.word)
	switch r.kind {
	case rooflineCells, rooflineTiles:
		blocks := 1
		for a := 0; a < d; a++ {
			blocks *= ceilDiv(shape[a], b[a])
		}
		threads := pl.Threads()
		l := launchCost{count: in.Steps, blocks: blocks, threads: threads, shared: in.SharedBytes, dram: cells * compulsory}
		l.l2 = cells * (f.bytesWritten + f.globalOnly)
		fill, iters := 0.0, 0
		for _, lv := range f.levels {
			h := haloFactor(b, lv.reach, allAxes(d))
			if r.kind == rooflineCells {
				// Naive threads read only the stencil's points: for a star the block's
				// cells and its arms, not the corners of the halo box.
				l.l2 += cells * float64(lv.bytes) * footprint(b, lv, allAxes(d))
			} else {
				l.l2 += cells * float64(lv.bytes) * h
			}
			if r.kind == rooflineTiles {
				l.smem += cells * float64(lv.bytes) * (h + float64(lv.points))
				fill += h
				tile := 1
				for a := 0; a < d; a++ {
					tile *= b[a] + 2*lv.reach[a]
				}
				iters += ceilDiv(tile, threads)
				if in.SharedBytes == 0 {
					l.shared += tile * lv.bytes
				}
			}
		}
		if r.kind == rooflineCells {
			l.instr = cells * (base + points + directLoads + stores + ovNaive)
			l.mlp = math.Min(8, points+directLoads)
		} else {
			l.instr = cells * (base + points + directLoads + stores + fill*ovFill + ovTiled)
			l.mlp = 2
			if iters > 0 {
				// The fill: the first load misses to DRAM, the halo's further ones hit L2.
				l.blockCycles = dramLatencyCycles + float64(iters-1)*l2LatencyCycles + barrierCycles + chainCycles*(base+points) + l2LatencyCycles
			}
		}
		return combine(name, in, f, []launchCost{l}), nil

	case rooflineStream:
		if d < 2 {
			return Prediction{}, fmt.Errorf("stream25d needs a 2D or 3D grid")
		}
		chunk := pl.ChunkOf(shape[0])
		sb := append([]int(nil), b...)
		sb[0] = 1 // a block is one plane thick and walks the streaming axis
		if d == 2 {
			sb[1] = pl.BX
		}
		blocks := ceilDiv(shape[0], chunk)
		threads := 1
		for a := 1; a < d; a++ {
			blocks *= ceilDiv(shape[a], sb[a])
			threads *= sb[a]
		}
		inPlane := allAxes(d)[1:]
		l := launchCost{count: in.Steps, blocks: blocks, threads: threads, shared: in.SharedBytes, dram: cells * compulsory, mlp: 2}
		l.l2 = cells * (f.bytesWritten + f.globalOnly)
		shared, lds, fill, queue := 0, 0.0, 0.0, 0.0
		for _, lv := range f.levels {
			h := haloFactor(sb, lv.reach, inPlane)
			l.l2 += cells * float64(lv.bytes) * h * float64(chunk+2*lv.reach[0]) / float64(chunk)
			plane := 1
			for a := 1; a < d; a++ {
				plane *= sb[a] + 2*lv.reach[a]
			}
			if lv.columnOnly {
				queue += float64(2*lv.reach[0] + 1)
				if lv.inPlane > 0 {
					l.smem += cells * float64(lv.bytes) * (h + float64(lv.inPlane))
					shared += plane * lv.bytes
					lds += float64(lv.inPlane)
					fill += h
				}
			} else {
				l.smem += cells * float64(lv.bytes) * (h + float64(lv.points))
				shared += plane * (2*lv.reach[0] + 1) * lv.bytes
				lds += float64(lv.points)
				fill += h
			}
		}
		if l.shared == 0 {
			l.shared = shared
		}
		l.instr = cells * (base + lds + queue + directLoads + stores + fill*ovFill + ovStream)
		// Each plane: its load (not prefetched), two barriers, the update.
		l.blockCycles = float64(chunk) * (dramLatencyCycles + 2*barrierCycles + chainCycles*(base+lds))
		return combine(name, in, f, []launchCost{l}), nil

	case rooflinePyramid:
		return r.pyramid(in, f, b, name)
	}
	return Prediction{}, fmt.Errorf("roofline: unknown strategy %s", r.strategy)
}

// pyramidLaunch is the cost of one pyramid launch of ph steps.
func pyramidLaunch(in Input, f *facts, b []int, ph int) (launchCost, float64, error) {
	if in.Plan.RX > 1 {
		return pyramidRXLaunch(in, f, ph)
	}
	d := in.Prog.Dims()
	shape := in.Shape
	cells := cellsOf(shape)
	blocks, threads := 1, 1
	for a := 0; a < d; a++ {
		out := b[a] - 2*f.reach[a]*ph
		if out < 1 {
			return launchCost{}, 0, fmt.Errorf("a block of %d cells cannot cover %d steps of reach %d", b[a], ph, f.reach[a])
		}
		blocks *= ceilDiv(shape[a], out)
		threads *= b[a]
	}
	warp := max(in.Dev.Device.WarpSize, 1)
	// Lanes charged per block at step t: the valid region, the fastest axis rounded up to
	// whole warps (a warp with one busy lane issues every instruction).
	var lanes float64
	for t := 1; t <= ph; t++ {
		n := 1.0
		for a := 0; a < d; a++ {
			ext := b[a] - 2*f.reach[a]*t
			if a == d-1 && warp > 1 {
				ext = min(b[a], ceilDiv(ext, warp)*warp)
			}
			n *= float64(ext)
		}
		lanes += n
	}
	work := float64(blocks) * lanes // charged lane-steps per launch
	l := launchCost{count: 1, blocks: blocks, threads: threads, shared: in.SharedBytes, mlp: 1}
	base := f.ops.Instructions()
	points := 0.0
	for _, lv := range f.levels {
		if lv.state {
			points += float64(lv.points)
		}
	}
	tileReads := float64(blocks) * float64(threads)
	l.instr = work*(base+points+1+ovPyramid) + tileReads*ovFill
	l.dram = cells * (f.bytesRead + f.bytesWritten)
	l.l2 = tileReads*f.stateBytes + cells*(f.bytesWritten+f.globalOnly) + cells*float64(ph-1)*f.globalOnly
	for _, lv := range f.levels {
		if lv.state {
			l.smem += work * float64(lv.bytes) * float64(lv.points)
		} else {
			// Input grids read at offsets come from global memory every step.
			l.l2 += work * float64(lv.bytes) * float64(lv.points)
			l.instr += work * float64(lv.points)
		}
	}
	l.smem += work*float64(f.word) + tileReads*f.stateBytes // writes of new values and the tile load
	if l.shared == 0 {
		l.shared = threads * f.stateLevelsSh * f.word
	}
	// The tile load, then ph dependent steps of an update, two barriers and the ghost refill.
	l.blockCycles = dramLatencyCycles + float64(ph)*(chainCycles*(base+points)+3*barrierCycles) + l2LatencyCycles
	return l, work, nil
}

func (r roofline) pyramid(in Input, f *facts, b []int, name string) (Prediction, error) {
	ph := max(in.Plan.PH, 1)
	// The launches' depths and counts: ph, and single steps for the remainder; a register
	// tile's kernels also halve ph down to 1 (lower's pyramidRX), covering it deepest first.
	depths, counts := []int{ph, 1}, []int{in.Steps / ph, in.Steps % ph}
	switch {
	case in.Plan.RX > 1:
		depths = plan.Halvings(ph)
		counts = lower.Cover(depths, in.Steps)
	case counts[0] == 0:
		depths, counts = []int{in.Steps}, []int{1}
	}
	var ls []launchCost
	var works []float64
	for i, dp := range depths {
		if counts[i] == 0 {
			continue
		}
		l, work, err := pyramidLaunch(in, f, b, dp)
		if err != nil {
			return Prediction{}, err
		}
		l.count = counts[i]
		ls, works = append(ls, l), append(works, work)
	}
	pred := combine(name, in, f, ls)
	if c := in.Cal; c != nil && c.matches(in.Plan) {
		launch := in.Dev.LaunchSeconds()
		t := 0.0
		for i, l := range ls {
			t += float64(l.count) * (launch + c.Block*float64(l.blocks) + c.Cell*works[i])
		}
		pred.Seconds = t
		pred.Calibrated = true
	}
	return pred, nil
}

// pyramidRXLaunch is the cost of one launch of ph steps of a 1D pyramid with a register tile
// (lower's pyramidRX): every thread computes its rx cells at every step (no lane idles while
// the valid region shrinks: the cells are in its registers), publishes its 2R edge cells and
// reads its neighbours' (4R shared accesses a thread and step) around one barrier a step, and
// the tile is staged through shared memory once on the way in and once on the way out.
func pyramidRXLaunch(in Input, f *facts, ph int) (launchCost, float64, error) {
	bx, rx, R := in.Plan.BX, in.Plan.RX, f.reach[0]
	tile := in.Plan.PyramidCells()[0]
	out := tile - 2*R*ph
	if out < 1 {
		return launchCost{}, 0, fmt.Errorf("a tile of %d cells cannot cover %d steps of reach %d", tile, ph, R)
	}
	cells := cellsOf(in.Shape)
	blocks := ceilDiv(in.Shape[0], out)
	work := float64(blocks) * float64(tile) * float64(ph) // cell-steps computed
	threadSteps := float64(blocks) * float64(bx) * float64(ph)
	staged := float64(blocks) * float64(tile)
	l := launchCost{count: 1, blocks: blocks, threads: bx, shared: in.SharedBytes, mlp: 1}
	base := f.ops.Instructions()
	l.instr = work*(base+1) + threadSteps*(float64(4*R)+ovPyramid) + staged*2*ovFill
	l.dram = cells * (f.bytesRead + f.bytesWritten)
	l.l2 = staged*f.stateBytes + cells*(f.bytesWritten+f.globalOnly) + cells*float64(ph-1)*f.globalOnly
	for _, lv := range f.levels {
		if !lv.state {
			// Input grids read at offsets come from global memory every step.
			l.l2 += work * float64(lv.bytes) * float64(lv.points)
			l.instr += work * float64(lv.points)
		}
	}
	l.smem = threadSteps*float64(4*R*f.word) + 2*staged*f.stateBytes
	if l.shared == 0 {
		l.shared = bx * (rx + 1) * f.word * max(f.stateLevelsSh/2, 1)
	}
	// The tile's load, then ph steps of a barrier and rx independent updates.
	l.blockCycles = dramLatencyCycles + float64(ph)*(chainCycles*base+barrierCycles) + l2LatencyCycles
	return l, work, nil
}

// PyramidCal is SL's calibration of the pyramid-height model (section 6.3), made from two
// measured runs of one block shape at PH=1 and PH=2. A launch of PH steps costs
//
//	launch + Block x blocks(PH) + Cell x lane-steps(PH)
//
// where blocks(PH) grows as the output tile shrinks and lane-steps counts the redundant cells
// of the shrinking tiles: Block is the per-block setup (tile load, store, scheduling) and Cell
// the per-cell cost of a step, both in seconds of the whole device.
type PyramidCal struct {
	BX, BY, BZ int
	// RX is the register tile's cells a thread (0 or 1: none); its plans cost differently.
	RX    int     `json:"rx,omitempty"`
	Block float64 `json:"block"`
	Cell  float64 `json:"cell"`
}

func (c *PyramidCal) matches(pl plan.Plan) bool {
	return pl.Takes("ph") && c.BX == pl.BX && max(c.BY, 1) == max(pl.BY, 1) && max(c.BZ, 1) == max(pl.BZ, 1) && max(c.RX, 1) == max(pl.RX, 1)
}

// CalibratePyramid solves for Block and Cell from measured seconds t1 (plan with PH=1, steps1
// steps) and t2 (PH=2, steps2 steps) of the same block shape. in is any input of that block
// shape (its PH and Steps are replaced). Negative solutions are clamped to zero.
func CalibratePyramid(in Input, steps1 int, t1 float64, steps2 int, t2 float64) (*PyramidCal, error) {
	if in.Sum == nil {
		return nil, fmt.Errorf("calibrate: no analysis")
	}
	if !in.Plan.Takes("ph") {
		return nil, fmt.Errorf("calibrate: plan %s is not a pyramid", in.Plan)
	}
	f := factsOf(in.Prog, in.Sum)
	b := blockSizes(in.Plan, in.Prog.Dims())
	l1, w1, err := pyramidLaunch(in, f, b, 1)
	if err != nil {
		return nil, err
	}
	l2, w2, err := pyramidLaunch(in, f, b, 2)
	if err != nil {
		return nil, err
	}
	launch := in.Dev.LaunchSeconds()
	// Per launch: y = Block*B + Cell*W.
	n1 := float64(steps1)
	if n1 == 0 || steps2 < 2 {
		return nil, fmt.Errorf("calibrate: need at least 1 and 2 steps")
	}
	// A remainder step of the PH=2 run is a PH=1 launch: subtract its share using the PH=1 run.
	y1 := t1/n1 - launch
	y2 := t2
	if steps2%2 == 1 {
		y2 -= t1 / n1
	}
	y2 = y2/float64(steps2/2) - launch
	B1, B2 := float64(l1.blocks), float64(l2.blocks)
	det := B1*w2 - B2*w1
	c := &PyramidCal{BX: in.Plan.BX, BY: in.Plan.BY, BZ: in.Plan.BZ, RX: in.Plan.RX}
	if math.Abs(det) < 1e-12*math.Abs(B1*w2) {
		// Proportional: attribute everything to cells.
		c.Cell = math.Max(0, y1/w1)
		return c, nil
	}
	c.Block = (y1*w2 - y2*w1) / det
	c.Cell = (B1*y2 - B2*y1) / det
	if c.Block < 0 {
		c.Block, c.Cell = 0, math.Max(0, (y1/w1+y2/w2)/2)
	}
	if c.Cell < 0 {
		c.Cell, c.Block = 0, math.Max(0, (y1/B1+y2/B2)/2)
	}
	return c, nil
}
