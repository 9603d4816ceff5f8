package model

import "math"

// The in-plane method's model (in-plane-method.txt, section VI, equations 6-14), as functions.
// inplane_plan.go maps the forwardplane and inplane plans onto InPlaneKernel and turns
// LX x LY / InPlane(...) per plane into a run's time.

// InPlaneDevice holds the model's device parameters.
type InPlaneDevice struct {
	SM     int     // multiprocessors
	BW     float64 // global memory bandwidth, bytes per second
	Smem   int     // shared memory per SM, bytes
	Reg    int     // registers per SM
	BlkSM  int     // resident blocks per SM at most
	WarpSM int     // resident warps per SM at most
	Lat    float64 // global memory latency in cycles
	Clock  float64 // Hz
}

// InPlaneKernel holds one configuration of one stencil.
type InPlaneKernel struct {
	LX, LY         int     // plane size
	TX, TY, RX, RY int     // threads per block and cells per thread (register tiling)
	KR             int     // registers per block
	KS             int     // shared memory per block, bytes
	Ops            float64 // cycles of computation per cell and warp (the paper's Ops, "flops per point")
	BytesBlk       float64 // bytes read and written per block and plane
	WarpSize       int     // 32 when zero
}

// InPlaneResult carries every intermediate quantity, for tests and reports.
type InPlaneResult struct {
	Blks, ActBlks, Stages, RemBlks, WarpBlk int
	Tm, Tc, Ts, Tl                          float64 // seconds
	Perf                                    float64 // cells per second (eq. 14)
}

// hide is f(arg) of eqs. 12-13: latency hiding, linear between 1 (arg blocks fill the SM's
// warps: perfect hiding) and arg (a single warp: serialised).
func hide(arg, warpBlk, warpSM int) float64 {
	if arg <= 1 || warpSM <= 1 {
		return math.Max(1, float64(arg))
	}
	warps := arg * warpBlk
	f := float64(arg) - float64(arg-1)*float64(warps-1)/float64(warpSM-1)
	return math.Min(float64(arg), math.Max(1, f))
}

// InPlane evaluates equations 6-14 as printed: eq. 11 multiplies by ActBlks and eq. 12 does
// again, and both are kept.
func InPlane(k InPlaneKernel, d InPlaneDevice) InPlaneResult {
	var r InPlaneResult
	ws := k.WarpSize
	if ws <= 0 {
		ws = 32
	}
	r.WarpBlk = ceilDiv(k.TX*k.TY, ws)
	// (6) blocks per plane.
	r.Blks = ceilDiv(k.LX*k.LY, k.TX*k.RX*k.TY*k.RY)
	// (7) active blocks per SM.
	act := d.BlkSM
	if k.KR > 0 {
		act = min(act, d.Reg/k.KR)
	}
	if k.KS > 0 {
		act = min(act, d.Smem/k.KS)
	}
	act = min(act, d.WarpSM/max(r.WarpBlk, 1))
	r.ActBlks = act
	if act <= 0 {
		r.Perf = 0
		return r
	}
	// (8) stages, (9) blocks per SM of the last stage.
	r.Stages = ceilDiv(r.Blks, d.SM*act)
	r.RemBlks = ceilDiv(r.Blks-(r.Stages-1)*act*d.SM, d.SM)
	// (10) memory time of a block, (11) compute time.
	bwSM := d.BW / float64(d.SM)
	r.Tm = d.Lat/d.Clock + k.BytesBlk/bwSM
	r.Tc = float64(act) * k.Ops * float64(k.RX*k.RY) * float64(r.WarpBlk) / d.Clock
	// (12) a full stage, (13) the last stage.
	r.Ts = hide(act, r.WarpBlk, d.WarpSM)*r.Tm + float64(act)*r.Tc
	r.Tl = hide(r.RemBlks, r.WarpBlk, d.WarpSM)*r.Tm + float64(r.RemBlks)*r.Tc
	// (14) cells per second.
	r.Perf = float64(k.LX*k.LY) / (r.Ts*float64(r.Stages-1) + r.Tl)
	return r
}
