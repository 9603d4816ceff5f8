package model

import (
	"fmt"
	"math"
	"sync"

	"tempest/internal/ir"
	"tempest/internal/lower"
	"tempest/internal/plan"
	"tempest/internal/probe"
)

// inplaneModel predicts the forward-plane and in-plane plans with the in-plane paper's model
// (equations 6-14, InPlane): per plane, blocks in stages of the resident ones, each stage
// costing the latency-hidden memory time of a block plus the compute of all its blocks. The
// plan supplies what the paper leaves to the kernel: bytes a block moves per plane (its
// loaded region in 32-byte sectors, halos included), and the instructions per output cell,
// which is where the loading variants differ (how many load instructions the region takes:
// vector loads where the region is aligned, idle lanes of partial iterations, edge threads
// that load halos alone) and where register tiling pays (fewer threads for the same loads,
// index arithmetic shared by a thread's outputs).
type inplaneModel struct {
	strategy string // the name its predictions carry
	// forward: the forward-plane plan (one output a thread, scalar loads) rather than inplane.
	forward bool
}

func (m inplaneModel) Name() string {
	return "in-plane (equations 6-14 of the in-plane paper; load instructions per variant)"
}

// Constants of the in-plane model (warp-instructions unless stated). They are nominal counts
// of the generated code, checked against the H100 measurements in testdata/h100-inplane.txt.
const (
	ipIndexInstr  = 2   // address arithmetic of one load or store of a region
	ipCellInstr   = 3   // per output cell: loop, coordinates, bounds of the store
	ipIssuePerSM  = 4.0 // warp-instructions an SM issues per cycle (four schedulers)
	ipBarriers    = 2   // barriers per plane (before and after the shared planes are written)
	ipSectorBytes = 32
)

func (m inplaneModel) Predict(in Input) (Prediction, error) {
	p := in.Prog
	if p.Dims() != 3 {
		return Prediction{}, fmt.Errorf("%s needs a 3D grid", m.strategy)
	}
	f := factsOf(p, in.Sum)
	pl := in.Plan
	fp := m.forward
	rx, ry, vec := max(pl.RX, 1), max(pl.RY, 1), max(pl.Vec, 1)
	if fp {
		rx, ry, vec = 1, 1, 1 // one cell a thread, scalar loads
	}
	tx, ty := pl.BX, max(pl.BY, 1)
	threads := tx * ty
	warps := ceilDiv(threads, 32)
	bx, by := tx*rx, ty*ry // output cells of a block along x and y
	outs := float64(bx * by)
	w := f.word

	// Per block and plane: warp-instructions, sector bytes, and what each shared level costs.
	var instr, sectors, sharedBytes float64
	loadCost := func(elems int, v int, aligned bool) float64 {
		// warp-instructions for elems elements spread over the block, v per thread.
		per := float64(1+v) + ipIndexInstr
		if !aligned && v > 1 {
			per = float64(2*v) + ipIndexInstr // unaligned: v scalar loads each
		}
		return float64(ceilDiv(elems, threads*v)*warps) * per
	}
	edgeCost := func(elems int) float64 { // elements loaded by one lane each, warp by warp
		return float64(ceilDiv(elems, 32)) * (2 + ipIndexInstr)
	}
	queue, queueRegs := 0.0, 0
	rz := 1
	if fp && pl.Prefetch > 0 && allColumns(f) {
		rz = max(pl.RZ, 1)
	}
	for _, lv := range f.levels {
		hx, hy, hz := lv.reach[2], lv.reach[1], lv.reach[0]
		if fp {
			queueRegs += 2*hz + rz
			// The register queue shifts every step (2r moves and rz loads for rz planes).
			queue += float64(2*hz+rz) / float64(rz)
		} else {
			queue += float64(hz) // pending partial sums
			queueRegs += hz
		}
		if lv.inPlane == 0 {
			// Read only along z: straight into registers, the block's own columns.
			instr += loadCost(bx*by, vec, true)
			sectors += float64(by) * math.Ceil(float64(bx*lv.bytes)/ipSectorBytes)
			continue
		}
		rows, cols := by+2*hy, bx+2*hx
		sectors += float64(rows) * (math.Ceil(float64(cols*lv.bytes)/ipSectorBytes) + 1)
		sharedBytes += float64(rows * cols * lv.bytes)
		switch {
		case fp && pl.Prefetch > 0 && lv.columnOnly:
			// Interior one per thread, the halo dealt to every thread in turn (a load into
			// its register queue and a store from it).
			halo := 2*hy*bx + 2*hx*by
			if !lv.star {
				halo += 4 * hx * hy
			}
			instr += loadCost(bx*by, 1, true) + loadCost(halo, 1, true)
		case fp:
			// Interior one per thread, then halos by the edge threads: the left and right
			// columns by the warps holding them, the top and bottom rows by the first rows.
			instr += loadCost(bx*by, 1, true) + float64(by*2*hx)*(2+ipIndexInstr)/float64(max(1, tx/32)) + edgeCost(2*hy*bx)
		case pl.Load == 2: // full slice: one region, aligned where the halo keeps vectors aligned
			instr += loadCost(rows*cols, vec, hx%vec == 0)
		case pl.Load == 0: // vertical: columns with top and bottom halos, then left and right
			instr += loadCost(bx*rows, vec, true) + edgeCost(2*hx*rows)
		default: // horizontal: rows with left and right halos, then top and bottom
			instr += loadCost(cols*by, vec, hx%vec == 0) + loadCost(cols*2*hy, vec, hx%vec == 0)
		}
		// Shared-memory reads: every in-plane point of every output (a thread's rx x ry outputs
		// are strided by the block, so their neighbourhoods do not overlap).
		pts := float64(lv.inPlane)
		instr += outs / 32 * pts
	}
	if in.SharedBytes > 0 {
		sharedBytes = float64(in.SharedBytes)
	}
	stores := float64(len(p.Updates))
	instr += outs / 32 * (planOps(p, pl, f.ops).Instructions() + queue + f.globalOnly/float64(w) + stores + ipCellInstr)
	sectors += stores * float64(by) * math.Ceil(float64(bx*w)/ipSectorBytes)
	regs := in.Regs
	if regs == 0 {
		regs = 32 + rx*ry*(queueRegs+2)*max(1, w/4)
	}
	dev := in.Dev
	d := dev.Device
	clock := float64(d.ClockKHz) * 1e3
	if clock <= 0 {
		clock = 1.5e9
	}
	sms := max(d.SMs, 1)
	warpSM := max(d.MaxThreadsPerSM/32, 1)
	issue := ipIssuePerSM
	if probe.LooksLikeCPU(d) {
		issue = 1
	}
	lat := float64(dramLatencyCycles + ipBarriers*barrierCycles) // one DRAM round trip per plane
	if fp && pl.Prefetch > 0 && allColumns(f) {
		// The halos come from registers loaded planes before (the queue heads r planes
		// before): a plane waits only at its one barrier (two buffers).
		lat = float64(barrierCycles) / float64(rz)
	}
	ipd := InPlaneDevice{SM: sms, BW: dev.DRAMBytesPerSec(), Smem: d.SharedPerSM, Reg: d.RegsPerSM, BlkSM: 32, WarpSM: warpSM,
		Lat: lat, Clock: clock}
	// Sector traffic beyond the compulsory bytes is served by L2: charge it at L2's rate on
	// the DRAM bandwidth the model's eq. 10 uses.
	comp := float64(bx*by) * (f.bytesRead + f.bytesWritten)
	bytesBlk := math.Max(comp, sectors*ipSectorBytes*dev.DRAMBytesPerSec()/dev.L2BytesPerSec())
	k := InPlaneKernel{LX: in.Shape[2], LY: in.Shape[1], TX: tx, TY: ty, RX: rx, RY: ry, KR: regs * threads,
		KS: int(sharedBytes), Ops: instr / outs * 32 / issue, BytesBlk: bytesBlk}
	r := InPlane(k, ipd) // blocks, resident blocks, stages, last stage (eqs. 6-9)
	if r.ActBlks <= 0 {
		return Prediction{Model: m.strategy + ": " + m.Name(), Bottleneck: Latency}, nil
	}
	// Eqs. 10-13 with two corrections: compute is the SM's issue time of every resident
	// block once (eq. 11 as printed counts the resident blocks twice), and the bytes of every
	// resident block share the SM's bandwidth (eq. 12 charges one block's), while the
	// latency of the plane's load is hidden by the resident warps as the paper's f() says.
	tLat := ipd.Lat / clock
	tBytes := bytesBlk / (ipd.BW / float64(sms))
	tcBlk := k.Ops * float64(rx*ry*r.WarpBlk) / clock
	hideAct := hide(r.ActBlks, r.WarpBlk, warpSM)
	stage := func(n int) float64 {
		return hide(n, r.WarpBlk, warpSM)*tLat + smoothMax(float64(n)*tBytes, float64(n)*tcBlk)
	}
	perPlane := stage(r.ActBlks)*float64(r.Stages-1) + stage(r.RemBlks)
	chunk := pl.ChunkOf(in.Shape[0])
	planes := float64(in.Shape[0]) * float64(chunk+2*f.reach[0]) / float64(chunk)
	t := math.Max(float64(in.Steps)*planes*perPlane, float64(in.Steps)*dev.LaunchSeconds())
	pr := Prediction{Model: m.strategy + ": " + m.Name(), Seconds: t, Launches: in.Steps,
		Blocks: r.Blks * ceilDiv(in.Shape[0], chunk), Threads: threads, ActivePerSM: r.ActBlks,
		EffSM: EffSM(r.Blks, sms, r.ActBlks), EffOcc: 1 / hideAct, EffALU: EffALU(f.ops)}
	n := float64(in.Steps) * planes * float64(r.Stages)
	pr.Global = n * float64(r.ActBlks) * tBytes
	pr.Compute = n * float64(r.ActBlks) * tcBlk
	switch {
	case hideAct*tLat > float64(r.ActBlks)*math.Max(tBytes, tcBlk):
		pr.Bottleneck = Latency
	case tcBlk >= tBytes:
		pr.Bottleneck = Compute
	default:
		pr.Bottleneck = GlobalMemory
	}
	return pr, nil
}

// allColumns says every level read at an offset is read off its plane straight along the
// streaming axis only (the forward plane keeps them all in register queues).
func allColumns(f *facts) bool {
	for _, lv := range f.levels {
		if !lv.columnOnly {
			return false
		}
	}
	return true
}

// planOpsCache holds planOps' counts per program and the plan settings they depend on.
var planOpsCache sync.Map // planOpsKey -> ALUOps

type planOpsKey struct {
	p                 *ir.Program
	strategy          string
	fast, centreFirst bool
}

// planOps is the arithmetic per cell that pl's kernels issue for p (lower.Arithmetic: after
// the plan's fast-math rewrites, each distinct subexpression once, inplane's plane terms once
// per plane), or the formula's own count where the plan cannot lower p that way. Fast math
// factors the coefficients of AN5D's 3D boxes into sums of rows, which the in-plane method
// shares between the outputs a plane feeds (box3d4r: 177 instructions a cell instead of
// 729) while a forward-plane kernel issues the factored sum for every cell (1457): the
// formula's count had both at 729, and the model picked the forward plane, which ran at a
// seventh of the in-plane method's speed (docs/performance.md, 2026-11-28).
func planOps(p *ir.Program, pl plan.Plan, formula ALUOps) ALUOps {
	k := planOpsKey{p, pl.Strategy, pl.FastMath, pl.CentreFirst}
	if v, ok := planOpsCache.Load(k); ok {
		return v.(ALUOps)
	}
	ops := formula
	if o, ok := lower.Arithmetic(p, pl); ok {
		ops = aluOps(o)
	}
	planOpsCache.Store(k, ops)
	return ops
}
