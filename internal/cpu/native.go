package cpu

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"tempest/internal/ir"
	"tempest/internal/kir"
	"tempest/internal/lower"
	"tempest/internal/native"
)

// nativeStep is the engine's step compiled to C (lower.LowerHost): the same padded arrays and
// halos, the update loops built by a C compiler for this processor.
type nativeStep struct {
	fn   native.Func
	args []lower.Arg
	desc string
	cc   *native.Compiler
	// blockEntry is the kernel that advances several steps per sweep (lower.HostBlockable
	// programs; nil otherwise), built into block with blockArgs when a run blocks.
	blockEntry *lower.HostEntry
	block      native.Func
	blockArgs  []lower.Arg
	bt         int     // steps per sweep (1: no blocking)
	rings      [][]any // per worker, per state grid: scratch of the blocked sweep
	ringBT     int     // the bt the rings are sized for
}

// UseNative says whether New compiles the step to C where a compiler exists; tests of the Go
// code turn it off.
var UseNative = true

// NativeWait is how long New waits for the C compiler before it lets the Go code start; the C
// takes over between steps once built (large updates take the compiler most of a minute).
var NativeWait = 3 * time.Second

// buildEntry compiles one host module (or finds it in the cache) and looks up its kernel.
func buildEntry(cc *native.Compiler, en *lower.HostEntry) (native.Func, error) {
	lib, err := cc.Build(kir.PrintC(en.Module))
	if err != nil {
		return 0, err
	}
	return lib.Func(en.Name)
}

// newNative compiles e's step, and its blocked sweep where e would block, or says why not.
func newNative(e *Engine) (*nativeStep, error) {
	cc, err := native.Find()
	if err != nil {
		return nil, err
	}
	hk := lower.LowerHost(e.s.Prog, e.halo)
	fn, err := buildEntry(cc, &hk.Step)
	if err != nil {
		return nil, err
	}
	n := &nativeStep{fn: fn, args: hk.Step.Args, desc: "C, " + cc.Name() + " -O3 -march=native", cc: cc, blockEntry: hk.Block, bt: 1}
	if hk.Block != nil {
		if bt := chooseBT(e); bt > 1 && n.buildBlock() == nil {
			n.bt = bt
		}
	}
	return n, nil
}

// buildBlock builds the blocked sweep's module once.
func (n *nativeStep) buildBlock() error {
	if n.block != 0 {
		return nil
	}
	f, err := buildEntry(n.cc, n.blockEntry)
	if err != nil {
		return err
	}
	n.block, n.blockArgs = f, n.blockEntry.Args
	return nil
}

// startNative builds the C code in the background, waiting NativeWait for it (a cached
// module loads at once, a new one of a small program builds in well under a second), or
// hardly at all while the process builds other modules.
func (e *Engine) startNative() {
	wait := NativeWait
	if native.Compiling() {
		// Builds of other programs come first: start at once rather than wait behind them
		// (a cached module still loads within the short wait).
		wait = min(wait, 50*time.Millisecond)
	}
	done := make(chan struct{})
	go func() {
		e.pendNat, e.pendErr = newNative(e)
		close(done)
	}()
	select {
	case <-done:
		e.adopt()
	case <-time.After(wait):
		e.pending = done
		e.tookOver = -1
	}
}

// adopt takes the built C code (or the reason there is none) from the background build.
func (e *Engine) adopt() {
	e.nat, e.natErr, e.pending = e.pendNat, e.pendErr, nil
	if e.tookOver == -1 && e.nat != nil {
		e.tookOver = e.s.Steps
	}
}

// poll adopts the C code if its build has finished since.
func (e *Engine) poll() {
	if e.pending == nil {
		return
	}
	select {
	case <-e.pending:
		e.adopt()
	default:
	}
}

// WaitNative waits for the C code's build, for callers that time the engine or test it.
func (e *Engine) WaitNative() {
	if e.pending != nil {
		<-e.pending
		e.adopt()
	}
}

// TookOver says at which step the C code took over from the Go code that ran while the
// compiler built it (false: one of them ran from the start).
func (e *Engine) TookOver() (int, bool) { return e.tookOver, e.tookOver > 0 }

// bufPtr is the address of a padded buffer's first element.
func bufPtr(b any) int64 {
	switch b := b.(type) {
	case []float32:
		return int64(uintptr(unsafe.Pointer(&b[0])))
	case []float64:
		return int64(uintptr(unsafe.Pointer(&b[0])))
	case []int32:
		return int64(uintptr(unsafe.Pointer(&b[0])))
	case []int64:
		return int64(uintptr(unsafe.Pointer(&b[0])))
	}
	panic("internal error: buffer type")
}

// slots packs the kernel's arguments for this step, leaving the row range (the last two) to
// the callers.
func (n *nativeStep) slots(e *Engine, args []lower.Arg, trailing int) []int64 {
	s := make([]int64, len(args)+trailing)
	for i, a := range args {
		switch a.Kind {
		case lower.ArgBuffer:
			switch a.Role {
			case lower.In0:
				s[i] = bufPtr(e.bufs[a.Grid][0])
			case lower.In1:
				s[i] = bufPtr(e.bufs[a.Grid][1])
			case lower.Out0:
				s[i] = bufPtr(e.next[a.Grid])
			default:
				panic("internal error: host kernel buffer role")
			}
		case lower.ArgSize:
			s[i] = int64(e.s.Shape[a.Axis])
		case lower.ArgStep:
			s[i] = int64(e.s.Steps)
		case lower.ArgLayers:
			s[i] = int64(e.layers(e.s.Prog.Grids[a.Grid]))
		case lower.ArgScratch:
			// Set per worker (runBlock).
		case lower.ArgParam:
			v := e.s.Params[a.Param]
			switch {
			case v.T == ir.F32:
				s[i] = int64(math.Float32bits(float32(v.F)))
			case v.T.IsFloat():
				s[i] = int64(math.Float64bits(v.F))
			case v.T.IsInt():
				s[i] = v.I
			default:
				if v.B {
					s[i] = 1
				}
			}
		default:
			panic("internal error: host kernel argument kind")
		}
	}
	return s
}

// run advances every state grid one step: rows are spread over the engine's workers.
func (n *nativeStep) run(e *Engine) {
	base := n.slots(e, n.args, 2)
	d := len(e.s.Shape)
	rows := e.s.Cells() / e.s.Shape[d-1]
	nw := min(len(e.workers), rows)
	var wg sync.WaitGroup
	for k := 0; k < nw; k++ {
		lo, hi := rows*k/nw, rows*(k+1)/nw
		s := append([]int64(nil), base...)
		s[len(s)-2], s[len(s)-1] = int64(lo), int64(hi)
		if k == nw-1 {
			n.fn.Call(s)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			n.fn.Call(s)
		}()
	}
	wg.Wait()
	runtime.KeepAlive(e.bufs)
	runtime.KeepAlive(e.next)
}

// nativeCompiler is the compiler the engine would use.
func nativeCompiler() (*native.Compiler, error) { return native.Find() }

// runBlock advances every state grid bt steps in one sweep per worker: each takes an equal
// range of the slowest axis's slabs (and computes (bt-1)r more on each side, which its
// neighbours also compute) with rings of its own.
func (n *nativeStep) runBlock(e *Engine, bt int) {
	base := n.slots(e, n.blockArgs, 5)
	rows := e.s.Shape[0]
	tile := n.tileRows(e, bt)
	nw := min(len(e.workers), rows)
	if n.ringBT < bt || len(n.rings) < nw {
		n.rings = make([][]any, nw)
		cells := lower.HostRingCells(e.s.Prog, e.halo, e.s.Shape, bt)
		for k := range n.rings {
			n.rings[k] = make([]any, len(e.s.Prog.Grids))
			for _, u := range e.updates {
				n.rings[k][u.Grid.Index] = newBuf(u.Grid.Type, cells)
			}
		}
		n.ringBT = bt
	}
	var wg sync.WaitGroup
	for k := 0; k < nw; k++ {
		lo, hi := rows*k/nw, rows*(k+1)/nw
		s := append([]int64(nil), base...)
		for i, a := range n.blockArgs {
			if a.Kind == lower.ArgScratch {
				s[i] = bufPtr(n.rings[k][a.Grid])
			}
		}
		s[len(s)-5], s[len(s)-2], s[len(s)-1] = int64(bt), int64(lo), int64(hi)
		sweep := func() {
			// 3D: the second axis in tiles, one sweep each (2D: one tile, the whole row).
			n1 := 1
			if len(e.s.Shape) == 3 {
				n1 = e.s.Shape[1]
			}
			for t := 0; t < n1; t += tile {
				s[len(s)-4], s[len(s)-3] = int64(t), int64(min(t+tile, n1))
				n.block.Call(s)
			}
		}
		if k == nw-1 {
			sweep()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sweep()
		}()
	}
	wg.Wait()
	runtime.KeepAlive(e.bufs)
	runtime.KeepAlive(e.next)
	runtime.KeepAlive(n.rings)
}

// tileRows is, for 3D programs, how many rows of the second axis a blocked sweep covers at
// once: all of them where every thread's rings fit half the last-level cache together, else
// as many as keep a thread's rings (bt-1 of 2r+1 partial planes per state grid, each row
// widened by what later steps need) within half a core's L2, since a tile's overlap with its
// neighbours is computed twice (star3d1r 256^3 at bt 8 lost 30% in tiles of 32 rows on a
// machine whose last-level cache held the whole rings); TEMPEST_CPU_TILE sets it. 2D sweeps
// take whole rows.
func (n *nativeStep) tileRows(e *Engine, bt int) int {
	if len(e.s.Shape) != 3 {
		return 1
	}
	n1 := e.s.Shape[1]
	if v, err := strconv.Atoi(os.Getenv("TEMPEST_CPU_TILE")); err == nil && v >= 1 {
		return min(v, n1)
	}
	p := e.s.Prog
	reach := p.Reach()
	rowBytes := 0
	for _, u := range e.updates {
		rowBytes += (e.s.Shape[2] + 2*e.halo[2]) * u.Grid.Type.Size()
	}
	perRow := (bt - 1) * (2*reach[0] + 1) * rowBytes
	if perRow*(n1+2*e.halo[1])*len(e.workers) <= cacheBytes(3, 8<<20)/2 {
		return n1
	}
	rows := cacheBytes(2, 1<<20)/2/max(perRow, 1) - 2*(bt-1)*reach[1]
	return min(max(rows, 8), n1)
}

// cacheBytes is the size of the cache of a level (2: a core's L2, 3: the last level) as Linux
// reports it for the first processor, else def.
func cacheBytes(level int, def int) int {
	b, err := os.ReadFile(fmt.Sprintf("/sys/devices/system/cpu/cpu0/cache/index%d/size", level))
	if err != nil {
		return def
	}
	t := strings.TrimSpace(string(b))
	mul := 1
	switch {
	case strings.HasSuffix(t, "K"):
		mul, t = 1<<10, strings.TrimSuffix(t, "K")
	case strings.HasSuffix(t, "M"):
		mul, t = 1<<20, strings.TrimSuffix(t, "M")
	}
	v, err := strconv.Atoi(t)
	if err != nil || v <= 0 {
		return def
	}
	return v * mul
}

// blockSteps is how many steps the next advance of at most left steps computes.
func (e *Engine) blockSteps(left int) int {
	if e.nat == nil || e.nat.bt <= 1 {
		return 1
	}
	return min(e.nat.bt, left)
}

// chooseBT picks the steps per sweep of the blocked kernel: TEMPEST_CPU_BT if set, else 8
// (j2d5pt 4096^2, star2d2r 4096^2 and star3d1r 256^3 ran fastest at 8 or close to it on the
// project's 2-core machine, docs/performance.md), fewer where a thread's rings would pass
// ringBudget bytes or its overlap with its neighbours, (bt-1)r slabs on each side, would pass
// a tenth of its range. Below 3 steps blocking does not pay for its overlap.
func chooseBT(e *Engine) int {
	if v, err := strconv.Atoi(os.Getenv(EnvBT)); err == nil && v >= 1 {
		return v
	}
	p := e.s.Prog
	r := max(p.Reach()[0], 1)
	rows := e.s.Shape[0] / max(len(e.workers), 1)
	bt := 8
	for ; bt >= 3; bt-- {
		bytes := 0
		for _, u := range e.updates {
			bytes += lower.HostRingCells(p, e.halo, e.s.Shape, bt) * u.Grid.Type.Size()
		}
		if bytes <= ringBudget && 2*(bt-1)*r*10 <= rows {
			return bt
		}
	}
	return 1
}

// EnvBT sets the CPU engine's steps per sweep (1: no temporal blocking).
const EnvBT = "TEMPEST_CPU_BT"

// ringBudget bounds a thread's rings: they should stay in cache (the outer levels of it).
const ringBudget = 16 << 20

// StepsPerSweep is the steps the engine computes per sweep (1: not blocked in time).
func (e *Engine) StepsPerSweep() int {
	if e.nat == nil {
		return 1
	}
	return e.nat.bt
}

// Blockable says whether the engine can block this program's steps in time.
func (e *Engine) Blockable() bool {
	e.WaitNative()
	return e.nat != nil && e.nat.blockEntry != nil
}

// SetStepsPerSweep sets the steps per sweep (a tuned value); the engine must be Blockable for
// more than 1.
func (e *Engine) SetStepsPerSweep(bt int) error {
	e.WaitNative()
	switch {
	case bt < 1:
		return fmt.Errorf("steps per sweep %d: at least 1", bt)
	case bt > 1 && !e.Blockable():
		return fmt.Errorf("steps per sweep %d: this program's steps are not blocked in time on the CPU (%s)", bt, e.Code())
	case bt > 1:
		if err := e.nat.buildBlock(); err != nil {
			return err
		}
	}
	if e.nat != nil {
		e.nat.bt = bt
	}
	return nil
}

// SweepDepths are the steps per sweep worth timing for this engine's program and size: 1, and
// where it blocks, the depths whose overlap stays within a tenth of a thread's range.
func (e *Engine) SweepDepths() []int {
	out := []int{1}
	if !e.Blockable() {
		return out
	}
	r := max(e.s.Prog.Reach()[0], 1)
	rows := e.s.Shape[0] / max(len(e.workers), 1)
	for _, bt := range []int{2, 3, 4, 6, 8, 12, 16, 24} {
		if 2*(bt-1)*r*10 <= rows {
			out = append(out, bt)
		}
	}
	return out
}
