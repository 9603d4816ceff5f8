package model

import (
	"fmt"
	"math"

	"tempest/internal/analysis"
	"tempest/internal/probe"
)

// AN5D's performance model (Matsumura et al., CGO'20, section 5) for N.5D blocking: b_T
// combined steps, sub-planes of b_S threads streamed along the slowest axis in stream blocks
// of h_SN planes. The functions below are the paper's formulas one by one; AN5D predicts a
// configuration with AN5DPredict and tunes over AN5DSpace (section 6.3).
//
// AN5DModel maps Tempest's n5d plan onto a configuration (the "n5d" strategy itself uses the
// calibrated model of n5d.go): b_T = BT, b_S = BX (2D) or BY x BX (3D), h_SN = Chunk (0: the whole axis),
// rad = the largest reach; the shared memory per block is what lowering reports when known
// (Tempest's ring of planes for box stencils differs from AN5D's Table 1).

// AN5DConfig is one N.5D blocking configuration of one stencil.
type AN5DConfig struct {
	// IS is the number of interior cells per axis, the streaming axis first (AN5D's I_S;
	// boundary cells lie outside, Rad of them on each side).
	IS []int
	// BS is the sub-plane block size per in-plane axis, in the order of IS[1:].
	BS  []int
	BT  int // temporal block b_T
	HSN int // stream block length h_SN (0 or >= IS[0]: the streaming axis is not divided)
	IT  int // time steps I_T
	Rad int
	// Word is n_word in bytes (4 or 8).
	Word int
	// Shape, DiagonalFree and Associative choose Tables 1 and 2's rows.
	Shape                     analysis.Shape
	DiagonalFree, Associative bool
	Ops                       ALUOps // per cell update
	// SharedPerBlock overrides Table 1's footprint in the blocks-per-SM limit (0: Table 1).
	SharedPerBlock int
}

// NThr is the threads per block: prod b_S_i (section 4.1).
func NThr(bs []int) int {
	n := 1
	for _, b := range bs {
		n *= b
	}
	return n
}

// ComputeRegion is b_S - 2 b_T rad, the cells a block stores along an in-plane axis.
func ComputeRegion(bs, bt, rad int) int { return bs - 2*bt*rad }

// NTB is the number of thread blocks per stream block:
// prod ceil(I_S_i / (b_S_i - 2 b_T rad)) over the in-plane axes (0 when a block stores nothing).
func NTB(is, bs []int, bt, rad int) int {
	n := 1
	for i := range bs {
		cr := ComputeRegion(bs[i], bt, rad)
		if cr < 1 {
			return 0
		}
		n *= ceilDiv(is[i], cr)
	}
	return n
}

// StreamBlocks is ceil(I_SN / h_SN) (1 when the streaming axis is not divided).
func StreamBlocks(isn, hsn int) int {
	if hsn <= 0 || hsn >= isn {
		return 1
	}
	return ceilDiv(isn, hsn)
}

// NTBPrime is n'_tb = ceil(I_SN / h_SN) x n_tb (section 4.2, division of the streaming axis).
func NTBPrime(c AN5DConfig) int {
	return StreamBlocks(c.IS[0], c.HSN) * NTB(c.IS[1:], c.BS, c.BT, c.Rad)
}

// RedundantPlanes is the number of redundant sub-planes between two consecutive stream
// blocks: 2 sum_{T=0}^{b_T-1} rad (b_T - T) = rad b_T (b_T + 1).
func RedundantPlanes(bt, rad int) int {
	n := 0
	for T := 0; T < bt; T++ {
		n += rad * (bt - T)
	}
	return 2 * n
}

// SharedReads is Table 2: shared-memory reads per thread and update, the "practical" column
// (NVCC keeps a column of a box in registers) or the expected one. General (neither star nor
// box) shapes are counted as boxes.
func SharedReads(dims int, shape analysis.Shape, rad int, practical bool) int {
	w := 2*rad + 1
	if shape == analysis.Star {
		if dims == 2 {
			return 2 * rad
		}
		return 4 * rad
	}
	if dims == 2 {
		if practical {
			return w - 1
		}
		return w*w - w
	}
	if practical {
		return w*w - 1
	}
	return w*w*w - w
}

// SharedWrites is Table 1's shared-memory stores per cell: 1 for diagonal-access-free or
// associative stencils, else 1 + 2 rad.
func SharedWrites(diagonalFree, associative bool, rad int) int {
	if diagonalFree || associative {
		return 1
	}
	return 1 + 2*rad
}

// SharedFootprint is Table 1's shared memory per block in bytes: 2 n_thr n_word (double
// buffering) for diagonal-access-free or associative stencils, else 2 n_thr (1 + 2 rad) n_word.
func SharedFootprint(nthr, word, rad int, diagonalFree, associative bool) int {
	if diagonalFree || associative {
		return 2 * nthr * word
	}
	return 2 * nthr * (1 + 2*rad) * word
}

// MinRegisters is section 6.3's measured lower bound on registers per thread:
// b_T (2 rad + 1) + b_T + 20 for float and 2 b_T (2 rad + 1) + b_T + 30 for double.
func MinRegisters(bt, rad, word int) int {
	if word >= 8 {
		return 2*bt*(2*rad+1) + bt + 30
	}
	return bt*(2*rad+1) + bt + 20
}

// RegistersFit is section 6.3's pruning rule: at most 255 registers per thread and 65536 per SM
// (for one block).
func RegistersFit(bt, rad, word, nthr int) bool {
	r := MinRegisters(bt, rad, word)
	return r <= 255 && r*nthr <= 65536
}

// AN5DBlocksPerSM is the number of resident blocks per SM: the smaller of
// maxThreadsPerSM / n_thr (2048 / n_thr in the paper) and sharedPerSM / footprint.
func AN5DBlocksPerSM(nthr, footprint, maxThreadsPerSM, sharedPerSM int) int {
	if maxThreadsPerSM <= 0 {
		maxThreadsPerSM = 2048
	}
	n := maxThreadsPerSM / max(nthr, 1)
	if footprint > 0 && sharedPerSM > 0 {
		n = min(n, sharedPerSM/footprint)
	}
	return n
}

// axisCount is sum_k |[k cr - halo, k cr + cr + halo) n [lo, hi)| over the ceil(I / cr) blocks
// of one axis: how many of the blocks' cells at halo width halo lie in [lo, hi).
func axisCount(I, cr, halo, lo, hi int) int {
	n := 0
	for k := 0; k < ceilDiv(I, cr); k++ {
		a := max(k*cr-halo, lo)
		b := min(k*cr+cr+halo, hi)
		if b > a {
			n += b - a
		}
	}
	return n
}

// ThreadCounts are section 5's thread counts for one kernel call (b_T steps), summed over
// sub-planes and time steps. A thread at time step T (0 loads, 1..b_T compute) covers the
// block's region of half-width (b_T - T) rad around its compute region; along the streaming
// axis stream blocks overlap in the same way (RedundantPlanes).
type ThreadCounts struct {
	// Classes of the threads of the loaded sub-planes (T = 0).
	OutOfBound, Boundary, Redundant, Valid int
	// Totals: threads that compute, read and write shared memory, read and write global memory.
	Comp, SMRead, SMWrite, GMRead, GMWrite int
}

// CountThreads counts one kernel call of c.BT steps.
func CountThreads(c AN5DConfig) ThreadCounts {
	n := len(c.IS)
	cr := make([]int, n)
	blockLen := make([]int, n) // threads (or planes) per block along the axis
	cr[0] = c.IS[0]
	if c.HSN > 0 && c.HSN < c.IS[0] {
		cr[0] = c.HSN
	}
	blockLen[0] = cr[0] + 2*c.BT*c.Rad
	for i := 1; i < n; i++ {
		cr[i] = ComputeRegion(c.BS[i-1], c.BT, c.Rad)
		blockLen[i] = c.BS[i-1]
	}
	interior := func(T int) int {
		p := 1
		for i := 0; i < n; i++ {
			p *= axisCount(c.IS[i], cr[i], (c.BT-T)*c.Rad, 0, c.IS[i])
		}
		return p
	}
	withBoundary := func(T int) int {
		p := 1
		for i := 0; i < n; i++ {
			p *= axisCount(c.IS[i], cr[i], (c.BT-T)*c.Rad, -c.Rad, c.IS[i]+c.Rad)
		}
		return p
	}
	// All threads of the blocks for the sub-planes a stream block walks at step T (the
	// streaming axis never leaves the grid and its boundary planes).
	total := func(T int) int {
		p := axisCount(c.IS[0], cr[0], (c.BT-T)*c.Rad, -c.Rad, c.IS[0]+c.Rad)
		for i := 1; i < n; i++ {
			p *= ceilDiv(c.IS[i], cr[i]) * blockLen[i]
		}
		return p
	}
	var tc ThreadCounts
	tc.Valid = interior(c.BT)
	tc.Redundant = interior(0) - tc.Valid
	tc.Boundary = withBoundary(0) - interior(0)
	tc.OutOfBound = total(0) - withBoundary(0)
	tc.GMRead = withBoundary(0)
	tc.GMWrite = tc.Valid
	for T := 1; T <= c.BT; T++ {
		tc.Comp += interior(T)
		tc.SMRead += withBoundary(T)
	}
	for T := 0; T < c.BT; T++ {
		tc.SMWrite += total(T)
	}
	return tc
}

// AN5DTraffic is one kernel call's totals (section 5): global and shared bytes and FLOPs.
type AN5DTraffic struct {
	GlobalBytes, SharedBytes, FLOPs float64
}

// Traffic applies Tables 1 and 2 to the thread counts:
// total_gm = (th_gm_read + th_gm_write) n_word, total_sm = (th_sm_read reads + th_sm_write
// writes) n_word, total_comp = th_comp (2 FMA + MUL + ADD + OTHER).
func Traffic(c AN5DConfig, tc ThreadCounts) AN5DTraffic {
	reads := SharedReads(len(c.IS), c.Shape, c.Rad, true)
	writes := SharedWrites(c.DiagonalFree, c.Associative, c.Rad)
	return AN5DTraffic{
		GlobalBytes: float64(tc.GMRead+tc.GMWrite) * float64(c.Word),
		SharedBytes: float64(tc.SMRead*reads+tc.SMWrite*writes) * float64(c.Word),
		FLOPs:       float64(tc.Comp) * c.Ops.FLOPs(),
	}
}

// AN5DPeaks are the throughputs the model divides by (bytes or FLOPs per second).
type AN5DPeaks struct {
	Compute, Shared, Global float64
	SMs, MaxThreadsPerSM    int
	SharedPerSM             int
}

// PeaksOf reads a device profile (the measured values; estimates where missing).
func PeaksOf(dev *probe.Profile, word int) AN5DPeaks {
	return AN5DPeaks{Compute: dev.FLOPsPerSec(word), Shared: dev.SharedBytesPerSec(word), Global: dev.DRAMBytesPerSec(),
		SMs: max(dev.Device.SMs, 1), MaxThreadsPerSM: dev.Device.MaxThreadsPerSM, SharedPerSM: dev.Device.SharedPerSM}
}

// AN5DTimes are one kernel call's times per bottleneck and the resulting prediction.
type AN5DTimes struct {
	Comp, SM, GM float64
	EffALU       float64
	EffSM        float64
	Model        float64 // max(comp, sm, gm) / eff_SM
	Bottleneck   Bottleneck
}

// KernelTime is time_model = max(time_comp, time_sm, time_gm) / eff_SM for one call, with
// time_comp = total_comp / (peak_comp eff_ALU) and time_sm|gm = total / peak.
//
// eff_SM = w / ceil(w), w = n'_tb / (n_SM x blocks per SM). The text of the paper available to
// us lost n_SM from this formula in extraction; the paper says it depends on n'_tb and n_SM,
// and the per-SM block limit only makes sense against all SMs, so n_SM is included.
func KernelTime(c AN5DConfig, pk AN5DPeaks) AN5DTimes {
	tr := Traffic(c, CountThreads(c))
	var t AN5DTimes
	t.EffALU = EffALU(c.Ops)
	t.Comp = tr.FLOPs / (pk.Compute * t.EffALU)
	t.SM = tr.SharedBytes / pk.Shared
	t.GM = tr.GlobalBytes / pk.Global
	nthr := NThr(c.BS)
	foot := c.SharedPerBlock
	if foot <= 0 {
		foot = SharedFootprint(nthr, c.Word, c.Rad, c.DiagonalFree, c.Associative)
	}
	per := AN5DBlocksPerSM(nthr, foot, pk.MaxThreadsPerSM, pk.SharedPerSM)
	t.EffSM = EffSM(NTBPrime(c), pk.SMs, per)
	worst := math.Max(t.Comp, math.Max(t.SM, t.GM))
	switch worst {
	case t.Comp:
		t.Bottleneck = Compute
	case t.SM:
		t.Bottleneck = SharedMemory
	default:
		t.Bottleneck = GlobalMemory
	}
	if t.EffSM <= 0 {
		t.Model = math.Inf(1)
		t.Bottleneck = Latency
		return t
	}
	t.Model = worst / t.EffSM
	if t.EffSM < 0.5 {
		t.Bottleneck = Latency
	}
	return t
}

// AN5DPredict is the time of a whole run: I_T / b_T calls of b_T steps and, as AN5D's host
// code does, one call of the remaining I_T mod b_T steps.
func AN5DPredict(c AN5DConfig, pk AN5DPeaks) (float64, AN5DTimes) {
	full := c.IT / c.BT
	t := KernelTime(c, pk)
	total := float64(full) * t.Model
	if r := c.IT % c.BT; r > 0 {
		cr := c
		cr.BT = r
		total += KernelTime(cr, pk).Model
	}
	return total, t
}

// AN5DSpaceConfig is one point of AN5D's tuning space.
type AN5DSpaceConfig struct {
	BT  int
	BS  []int
	HSN int
}

// AN5DSpace is section 6.3's search space: b_T in [1,16] (2D) or [1,8] (3D); b_S in
// {128, 256, 512} (2D) or {16x16, 32x16, 32x32, 64x16} (3D); h_SN in {256, 512, 1024} (2D) or
// {128, 256} (3D): 144 configurations for 2D and 64 for 3D.
func AN5DSpace(dims int) []AN5DSpaceConfig {
	var out []AN5DSpaceConfig
	switch dims {
	case 2:
		for bt := 1; bt <= 16; bt++ {
			for _, bs := range []int{128, 256, 512} {
				for _, h := range []int{256, 512, 1024} {
					out = append(out, AN5DSpaceConfig{BT: bt, BS: []int{bs}, HSN: h})
				}
			}
		}
	case 3:
		for bt := 1; bt <= 8; bt++ {
			for _, bs := range [][]int{{16, 16}, {16, 32}, {32, 32}, {16, 64}} {
				for _, h := range []int{128, 256} {
					out = append(out, AN5DSpaceConfig{BT: bt, BS: bs, HSN: h})
				}
			}
		}
	}
	return out
}

// AN5DModel applies AN5D's model to an n5d plan (see the mapping at the top of this file). It
// is kept beside the calibrated n5d model for comparison; Predict's checks do not run on it.
var AN5DModel Model = an5dModel{}

type an5dModel struct{}

func (an5dModel) Name() string { return "AN5D roofline (thread classes, ALU and SM efficiency)" }

func (an5dModel) Predict(in Input) (Prediction, error) {
	if in.Sum == nil {
		in.Sum = analysis.Analyze(in.Prog)
	}
	c, err := AN5DConfigOf(in)
	if err != nil {
		return Prediction{}, err
	}
	if !RegistersFit(c.BT, c.Rad, c.Word, NThr(c.BS)) {
		return Prediction{}, fmt.Errorf("n5d: b_T=%d needs at least %d registers per thread (AN5D's bound), more than %d threads can have",
			c.BT, MinRegisters(c.BT, c.Rad, c.Word), NThr(c.BS))
	}
	pk := PeaksOf(in.Dev, c.Word)
	total, t := AN5DPredict(c, pk)
	launches := ceilDiv(c.IT, c.BT)
	total = math.Max(total, float64(launches)*in.Dev.LaunchSeconds())
	calls := float64(c.IT) / float64(c.BT)
	return Prediction{Model: "an5d: " + an5dModel{}.Name(), Seconds: total, Bottleneck: t.Bottleneck,
		Compute: calls * t.Comp, Shared: calls * t.SM, Global: calls * t.GM, EffSM: t.EffSM, EffOcc: 1, EffALU: t.EffALU,
		Blocks: NTBPrime(c), Threads: NThr(c.BS), Launches: launches}, nil
}

// AN5DConfigOf maps an n5d plan onto an AN5D configuration: b_T = BT, b_S = BX (2D) or
// BY x BX (3D, slowest first), h_SN = Chunk, rad = the largest reach.
func AN5DConfigOf(in Input) (AN5DConfig, error) {
	d := in.Prog.Dims()
	if d < 2 || d > 3 {
		return AN5DConfig{}, fmt.Errorf("n5d: N.5D blocking needs a 2D or 3D grid")
	}
	s := in.Sum
	rad := 0
	for _, r := range s.Radius {
		rad = max(rad, r)
	}
	c := AN5DConfig{IS: append([]int(nil), in.Shape...), BT: max(in.Plan.BT, 1), HSN: in.Plan.Chunk, IT: in.Steps, Rad: rad,
		Word: in.Prog.DefaultType.Size(), Shape: s.Shape, DiagonalFree: s.DiagonalFree, Associative: s.Associative, Ops: OpsOf(s),
		SharedPerBlock: in.SharedBytes}
	if d == 2 {
		c.BS = []int{in.Plan.BX}
	} else {
		c.BS = []int{max(in.Plan.BY, 1), in.Plan.BX}
	}
	if NTB(c.IS[1:], c.BS, c.BT, c.Rad) == 0 {
		return c, fmt.Errorf("n5d: blocks of %v cannot cover %d steps of radius %d", c.BS, c.BT, rad)
	}
	return c, nil
}
