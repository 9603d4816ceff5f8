// Package model predicts how long a plan takes, one model per plan family, and names what
// limits it: compute, shared memory, global memory, or occupancy/latency (too few resident
// threads or blocks to hide latency, a partial last wave, or launch overhead).
//
//   - naive, tiled, stream25d, pyramid: a roofline over bytes moved per cell and step (DRAM,
//     L2, shared memory) including halo overhead of tiles and stream chunks, and the redundant
//     computation of pyramid's shrinking tiles; AN5D's ALU efficiency (FMA share) and SM
//     efficiency (partial last wave), an occupancy factor, and launch overhead. Pyramid can be
//     calibrated from measured PH=1 and PH=2 runs (SL's pyramid-height model): see PyramidCal.
//   - n5d (N.5D temporal blocking): a model of Tempest's n5d kernel calibrated on H100 and
//     H200 measurements, n5d.go; AN5D's own model (section 5) is kept in an5d.go.
//   - forwardplane, inplane: equations 6-14 of the in-plane paper (inplane.go) fed with the
//     plan's bytes and instructions per block and plane (inplane_plan.go).
//
// Every model is deterministic: the same input gives the same prediction.
package model

import (
	"fmt"
	"math"
	"sync"

	"tempest/internal/analysis"
	"tempest/internal/ir"
	"tempest/internal/plan"
	"tempest/internal/probe"
)

// Bottleneck names what limits a plan.
type Bottleneck string

const (
	Compute      Bottleneck = "compute"
	SharedMemory Bottleneck = "shared memory"
	GlobalMemory Bottleneck = "global memory"
	Latency      Bottleneck = "occupancy/latency"
)

// Input is what a model needs to predict one plan.
type Input struct {
	Prog  *ir.Program
	Sum   *analysis.Summary // nil: computed from Prog
	Plan  plan.Plan
	Shape []int // cells per axis, slowest first
	Steps int
	Dev   *probe.Profile
	// Regs is the compiled kernel's registers per thread (0: unknown, not limiting).
	Regs int
	// SharedBytes is what lowering computed the plan needs per block (0: the model's estimate).
	SharedBytes int
	// Cal calibrates the pyramid model from measurements (nil: uncalibrated).
	Cal *PyramidCal
}

// Prediction is a model's answer.
type Prediction struct {
	Model      string     `json:"model"`
	Seconds    float64    `json:"seconds"` // the whole run: Steps steps
	Bottleneck Bottleneck `json:"bottleneck"`
	// Ideal times of each resource summed over the run (before efficiencies).
	Compute float64 `json:"compute"`
	Shared  float64 `json:"shared"`
	Global  float64 `json:"global"` // the larger of DRAM and L2
	Launch  float64 `json:"launch"` // launch overhead where it exceeds kernel time
	// Efficiencies of the dominant launch: AN5D's SM efficiency (partial last wave), the share
	// of the peak global bandwidth its loads in flight sustain, and AN5D's ALU efficiency.
	EffSM  float64 `json:"effSM"`
	EffOcc float64 `json:"effOcc"`
	EffALU float64 `json:"effALU"`
	// Blocks and threads per block of the dominant launch, and how many blocks fit on an SM.
	Blocks, Threads, ActivePerSM int
	Launches                     int
	Calibrated                   bool `json:"calibrated,omitempty"`
}

func (p Prediction) String() string {
	return fmt.Sprintf("%.4g s (%s; compute %.3g s, shared %.3g s, global %.3g s, SM eff %.2f, memory eff %.2f)",
		p.Seconds, p.Bottleneck, p.Compute, p.Shared, p.Global, p.EffSM, p.EffOcc)
}

// Model predicts one plan family.
type Model interface {
	Name() string
	Predict(in Input) (Prediction, error)
}

var (
	regMu    sync.RWMutex
	registry = map[string]Model{}
)

// Register makes m the model of a strategy (replacing any other).
func Register(strategy string, m Model) {
	regMu.Lock()
	defer regMu.Unlock()
	registry[strategy] = m
}

// For returns the model of a strategy.
func For(strategy string) (Model, bool) {
	regMu.RLock()
	defer regMu.RUnlock()
	m, ok := registry[strategy]
	return m, ok
}

// init registers the model of every strategy: the model package's one table of strategies
// (plan.Registry names them all).
func init() {
	Register(plan.Naive, roofline{strategy: plan.Naive, kind: rooflineCells})
	Register(plan.Tiled, roofline{strategy: plan.Tiled, kind: rooflineTiles})
	Register(plan.Stream25D, roofline{strategy: plan.Stream25D, kind: rooflineStream})
	Register(plan.Pyramid, roofline{strategy: plan.Pyramid, kind: rooflinePyramid})
	Register(plan.N5D, n5dModel{})
	Register(plan.ForwardPlane, inplaneModel{strategy: plan.ForwardPlane, forward: true})
	Register(plan.InPlane, inplaneModel{strategy: plan.InPlane})
}

// Predict runs the model of the plan's strategy.
func Predict(in Input) (Prediction, error) {
	m, ok := For(in.Plan.Strategy)
	if !ok {
		return Prediction{}, fmt.Errorf("no performance model for plan %s", in.Plan.Strategy)
	}
	if in.Dev == nil {
		return Prediction{}, fmt.Errorf("model %s: no device profile", m.Name())
	}
	if len(in.Shape) != in.Prog.Dims() {
		return Prediction{}, fmt.Errorf("model %s: size has %d axes, %s has %d", m.Name(), len(in.Shape), in.Prog.Name, in.Prog.Dims())
	}
	if in.Steps < 1 {
		in.Steps = 1
	}
	if in.Sum == nil {
		in.Sum = analysis.Analyze(in.Prog)
	}
	p, err := m.Predict(in)
	if err != nil {
		return p, err
	}
	if e, ok := Efficiency[in.Plan.Strategy]; ok && in.Prog.Dims() >= 2 && in.Prog.Dims() <= 3 {
		k := e[in.Prog.Dims()-2]
		p.Seconds *= k
		p.Compute *= k
		p.Shared *= k
		p.Global *= k
	}
	if !(p.Seconds > 0) || math.IsInf(p.Seconds, 0) {
		return p, fmt.Errorf("model %s: plan %s cannot run (%s)", m.Name(), in.Plan, p.Bottleneck)
	}
	return p, nil
}

// Efficiency scales the predicted time of the plan families whose models are not fitted to
// measurements (2D, 3D): the geometric mean of measured over predicted time of their plans in
// the exhaustive tuner runs on the H100 of 2026-11-22 (internal/tune/testdata/h100-exhaustive.txt:
// seven 2D AN5D stencils, two 3D ones and the eleven of the in-plane suite, 5-36 plans per
// family and stencil; TestReplayH100 re-ranks them).
// Without it the tuner ranks these families against the calibrated n5d model as if they were
// 1.2-2x faster than they run. The in-plane model (forward-plane and in-plane plans) is
// checked against its own measurements and has no factor.
var Efficiency = map[string][2]float64{
	plan.Naive:     {1.25, 1.41},
	plan.Tiled:     {1.47, 2.02},
	plan.Stream25D: {1.27, 1.79},
}

// ALUOps is an update's floating-point work per cell mapped onto instructions as AN5D maps it:
// a multiply feeding an add becomes one FMA; division, special functions and min/max are OTHER.
type ALUOps struct{ FMA, MUL, ADD, OTHER float64 }

// OpsOf maps an analysis onto instructions.
func OpsOf(s *analysis.Summary) ALUOps { return aluOps(s.Ops) }

// aluOps maps operation counts onto instructions.
func aluOps(o analysis.Ops) ALUOps {
	pairs := o.FMAPairs
	a := ALUOps{
		FMA:   float64(o.FMA + pairs),
		MUL:   float64(max(0, o.Mul-pairs)),
		ADD:   float64(max(0, o.Add-pairs)),
		OTHER: float64(o.Div + o.Special + o.MinMax + o.Compare + o.IntOps),
	}
	if a.FMA+a.MUL+a.ADD+a.OTHER == 0 {
		a.OTHER = 1 // a copy still issues an instruction
	}
	return a
}

// Instructions per cell.
func (a ALUOps) Instructions() float64 { return a.FMA + a.MUL + a.ADD + a.OTHER }

// FLOPs per cell, an FMA counting two.
func (a ALUOps) FLOPs() float64 { return 2*a.FMA + a.MUL + a.ADD + a.OTHER }

// EffALU is AN5D's ALU utilisation efficiency:
// (2 FMA + MUL + ADD + OTHER) / (2 (FMA + MUL + ADD + OTHER)).
func EffALU(a ALUOps) float64 {
	n := a.Instructions()
	if n == 0 {
		return 1
	}
	return a.FLOPs() / (2 * n)
}

// levelRead is one grid level an update reads at constant offsets.
type levelRead struct {
	bytes      int
	reach      []int
	points     int  // distinct offsets
	inPlane    int  // offsets with an in-plane (non-streaming) component
	columnOnly bool // off-plane reads lie straight along the streaming axis
	star       bool // every offset lies on an axis: a block reads its cells plus arms, no corners
	state      bool // a state grid (pyramid keeps these in shared memory)
}

// facts are the program properties the roofline needs.
type facts struct {
	word          int // element size of the program's default type
	reach         []int
	bytesRead     float64 // compulsory bytes read per cell
	bytesWritten  float64
	levels        []levelRead // levels read at some nonzero offset
	stateBytes    float64     // bytes per cell of every state grid's levels
	globalOnly    float64     // bytes per cell read straight from global memory (no offsets, or layered)
	ops           ALUOps
	stateLevelsSh int // shared slots per cell of pyramid (2 or 3 per state grid)
}

var factCache sync.Map // *ir.Program -> *facts

func factsOf(p *ir.Program, s *analysis.Summary) *facts {
	if f, ok := factCache.Load(p); ok {
		return f.(*facts)
	}
	f := &facts{word: p.DefaultType.Size(), reach: make([]int, p.Dims()), ops: OpsOf(s),
		bytesRead: float64(s.BytesRead), bytesWritten: float64(s.BytesWritten)}
	if f.word == 0 {
		f.word = 4
	}
	type key struct{ g, l int }
	offs := map[key]map[string][]int{}
	var order []key
	for _, u := range p.Updates {
		ir.WalkDeep(u.Value, func(e ir.Expr) {
			l, ok := e.(*ir.Load)
			if !ok || l.Layer != nil {
				return
			}
			k := key{l.G.Index, l.Level}
			if offs[k] == nil {
				offs[k] = map[string][]int{}
				order = append(order, k)
			}
			offs[k][fmt.Sprint(l.Off)] = l.Off
			for a, o := range l.Off {
				f.reach[a] = max(f.reach[a], abs(o))
			}
		})
	}
	for _, k := range order {
		g := p.Grids[k.g]
		lr := levelRead{bytes: g.Type.Size(), reach: make([]int, p.Dims()), columnOnly: true, state: g.Update != nil, star: true}
		for _, off := range offs[k] {
			lr.points++
			plane := false
			axes := 0
			for _, o := range off {
				if o != 0 {
					axes++
				}
			}
			lr.star = lr.star && axes <= 1
			for a, o := range off {
				lr.reach[a] = max(lr.reach[a], abs(o))
				if a > 0 && o != 0 {
					plane = true
				}
			}
			if plane {
				lr.inPlane++
				if off[0] != 0 {
					lr.columnOnly = false
				}
			}
		}
		nz := false
		for _, r := range lr.reach {
			nz = nz || r > 0
		}
		if nz {
			f.levels = append(f.levels, lr)
		} else {
			f.globalOnly += float64(lr.bytes)
		}
	}
	for _, u := range p.Updates {
		f.stateBytes += float64(u.Grid.Type.Size() * u.Grid.Levels)
		f.stateLevelsSh += 2 + u.Grid.Levels - 1
	}
	factCache.Store(p, f)
	return f
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func ceilDiv(a, b int) int {
	if b <= 0 {
		return 0
	}
	return (a + b - 1) / b
}

// occupancy is how many blocks of a launch fit on one multiprocessor.
func occupancy(dev *probe.Profile, threads, shared, regs int) int {
	d := dev.Device
	perSM := d.MaxThreadsPerSM
	if perSM <= 0 {
		perSM = max(threads, d.MaxThreadsPerBlock)
	}
	n := perSM / max(threads, 1)
	if d.Backend == "cuda" || d.WarpSize > 1 {
		n = min(n, 32) // resident blocks per SM on NVIDIA since Maxwell (16 on some parts)
	}
	if shared > 0 && d.SharedPerSM > 0 {
		n = min(n, d.SharedPerSM/shared)
	}
	if regs > 0 && d.RegsPerSM > 0 {
		n = min(n, d.RegsPerSM/(regs*threads))
	}
	if regs > 0 && d.RegsPerBlock > 0 && regs*threads > d.RegsPerBlock {
		n = 0
	}
	return max(n, 0)
}

// EffSM is AN5D's SM utilisation efficiency: the fraction of the last wave's slots in use,
// averaged over the waves: w / ceil(w) with w = blocks / (SMs x blocks per SM).
func EffSM(blocks, sms, perSM int) float64 {
	if blocks <= 0 || sms <= 0 || perSM <= 0 {
		return 0
	}
	w := float64(blocks) / float64(sms*perSM)
	return w / math.Ceil(w)
}

// Latency constants of the roofline's latency terms (GPU cycles; CPU devices have none). They
// are nominal values for NVIDIA GPUs since Volta, not measured by the probe.
const (
	dramLatencyCycles = 650 // a global load that misses L2
	l2LatencyCycles   = 250 // a global load that hits L2
	barrierCycles     = 40  // a block-wide barrier
	chainCycles       = 4   // dependent arithmetic, per instruction of an update
	lineBytes         = 128 // one warp's coalesced load of 4-byte words
)

// launchCost is one kind of launch in a run: its resource totals per launch.
type launchCost struct {
	count          int
	blocks         int
	threads        int
	shared         int
	instr          float64 // lane-instructions (arithmetic, loads, stores, index overhead)
	dram, l2, smem float64 // bytes
	// mlp is the independent global loads a warp has in flight (memory-level parallelism).
	mlp float64
	// blockCycles is a block's critical path in cycles: latency a block cannot overlap with
	// itself (a tile load before a barrier, PH dependent steps); 0 for kernels without barriers.
	blockCycles float64
}

// combine turns launch costs into a prediction. Per launch kind:
//
//	SM-local work (compute, shared memory) runs at the peak rates times AN5D's SM efficiency
//	(partial last wave); global traffic at the peak bandwidth or what the loads in flight
//	sustain by Little's law (resident warps x mlp x 128 B per latency), whichever is lower;
//	a block's critical path repeats once per wave of resident blocks.
//
// The kernel takes a smooth maximum of the three (their cube norm: resources overlap, but not
// perfectly, so two near-equal limits cost more than one) and at least the launch interval.
// The bottleneck is the resource behind the largest term, occupancy/latency when the latency
// effects (Little's law, partial waves, critical path, launch overhead) decide it.
func combine(name string, in Input, f *facts, ls []launchCost) Prediction {
	dev := in.Dev
	word := f.word
	pred := Prediction{Model: name, EffALU: EffALU(f.ops)}
	instrRate := dev.FLOPsPerSec(word) / 2 // lane-instructions per second at one FMA per lane and cycle
	dram, l2, sh := dev.DRAMBytesPerSec(), dev.L2BytesPerSec(), dev.SharedBytesPerSec(word)
	launch := dev.LaunchSeconds()
	d := dev.Device
	sms := max(d.SMs, 1)
	cpu := probe.LooksLikeCPU(d)
	clock := float64(d.ClockKHz) * 1e3
	if clock <= 0 {
		clock = 1.5e9
	}
	var worst float64
	for _, l := range ls {
		if l.count == 0 {
			continue
		}
		tComp := l.instr / instrRate
		tSh := l.smem / sh
		tGlob := math.Max(l.dram/dram, l.l2/l2)
		// Hard limits (threads, shared memory, registers per block) are validation's and the
		// compiler's to enforce; a plan that launches at all has at least one block per SM.
		act := max(occupancy(dev, l.threads, l.shared, in.Regs), 1)
		effSM := EffSM(l.blocks, sms, act)
		tLocal := math.Max(tComp, tSh) / effSM
		effMem, tLat := 1.0, 0.0
		if !cpu {
			warps := float64(min(act, ceilDiv(l.blocks, sms))*ceilDiv(l.threads, max(d.WarpSize, 1))) * float64(sms)
			inflight := warps * math.Max(l.mlp, 1) * lineBytes * float64(word) / 4
			bwDRAM := math.Min(dram, inflight/(dramLatencyCycles/clock))
			bwL2 := math.Min(l2, inflight/(l2LatencyCycles/clock))
			slow := math.Max(l.dram/bwDRAM, l.l2/bwL2)
			if slow > 0 {
				effMem = tGlob / slow
			}
			tGlob = slow
			waves := math.Ceil(float64(l.blocks) / float64(sms*act))
			tLat = waves * l.blockCycles / clock
		}
		tKernel := smoothMax(tLocal, tGlob, tLat)
		t := math.Max(tKernel, launch)
		n := float64(l.count)
		pred.Seconds += n * t
		pred.Compute += n * tComp
		pred.Shared += n * tSh
		pred.Global += n * math.Max(l.dram/dram, l.l2/l2)
		pred.Launch += n * math.Max(0, launch-tKernel)
		pred.Launches += l.count
		if n*t > worst {
			worst = n * t
			pred.EffSM, pred.EffOcc = effSM, effMem
			pred.Blocks, pred.Threads, pred.ActivePerSM = l.blocks, l.threads, act
			switch {
			case launch > tKernel, tLat >= tLocal && tLat >= tGlob:
				pred.Bottleneck = Latency
			case tLocal >= tGlob:
				switch {
				case effSM < 0.5:
					pred.Bottleneck = Latency
				case tComp >= tSh:
					pred.Bottleneck = Compute
				default:
					pred.Bottleneck = SharedMemory
				}
			case effMem < 0.5:
				pred.Bottleneck = Latency
			default:
				pred.Bottleneck = GlobalMemory
			}
		}
	}
	return pred
}

// smoothMax is the cube norm of the terms: the largest, raised where others come close.
func smoothMax(ts ...float64) float64 {
	var sum float64
	for _, t := range ts {
		sum += t * t * t
	}
	return math.Cbrt(sum)
}
