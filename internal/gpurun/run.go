// Package gpurun executes a lowered program on a GPU device: it compiles the kernels for the
// device's dialect, keeps each grid's levels in device buffers, binds launch arguments,
// rotates buffers between launches and times the launch sequence with events.
package gpurun

import (
	"fmt"

	"tempest/internal/gpu"
	"tempest/internal/gridio"
	"tempest/internal/ir"
	"tempest/internal/kir"
	"tempest/internal/lower"
	"tempest/internal/state"
)

// Runner runs one lowered program over one state on one device.
type Runner struct {
	dev     gpu.Device
	s       *state.State
	low     *lower.Lowered
	mod     gpu.Module
	kernels map[string]gpu.Kernel
	// slots holds each grid's buffers: [0] current, [1] previous, [2] next, [3] next previous.
	slots [][4]gpu.Buffer
	Attrs map[string]gpu.KernelAttrs
	// sharedMod says the module belongs to a Modules cache, not to this runner.
	sharedMod bool
	obs       *observer // observable kernels, compiled on first use
	cache     *Modules  // where compiled modules come from (nil: compiled for this runner)
	// lastSteps is how many steps the last launch advanced (0: none yet).
	lastSteps int
	// chainFlags holds a flag per block position of the chained kernels (plan.Chain), epoch
	// the last chained launch's number, which its blocks store there.
	chainFlags gpu.Buffer
	epoch      uint32
	// rows are the planes of the streamed axis the next launch writes (plan.Ranges; LaunchRows
	// sets them for one launch, hi 0: the whole axis).
	rows [2]int
}

// Dialect is the kernel language a device compiles.
func Dialect(dev gpu.Device) kir.Dialect {
	if dev.Props().Backend == "cuda" {
		return kir.CUDA
	}
	return kir.OpenCL
}

// Modules keeps compiled modules of one device by source and options, so that runs of the
// same kernels at other sizes skip compilation. It owns the modules: Close frees them.
type Modules struct {
	dev gpu.Device
	m   map[string]gpu.Module
	// Extra are compiler options added to every compilation (the PoCL matrix compiles
	// without optimization, which halves its time).
	Extra []string
}

// NewModules starts an empty cache for dev.
func NewModules(dev gpu.Device) *Modules { return &Modules{dev: dev, m: map[string]gpu.Module{}} }

// Close frees every cached module.
func (c *Modules) Close() {
	for _, m := range c.m {
		m.Close()
	}
	c.m = map[string]gpu.Module{}
}

// compile returns the module of source src (m printed, or nil: src compiled as it is).
func (c *Modules) compile(name, src string, m *kir.Module, opt gpu.CompileOptions) (gpu.Module, error) {
	opt.Extra = append(opt.Extra[:len(opt.Extra):len(opt.Extra)], c.Extra...)
	key := fmt.Sprintf("%v\x00%s", opt, src)
	if mod, ok := c.m[key]; ok {
		return mod, nil
	}
	var mod gpu.Module
	var err error
	if m != nil {
		mod, err = Compile(c.dev, name, m, opt)
	} else {
		mod, err = c.dev.Compile(name, src, opt)
	}
	if err != nil {
		return nil, err
	}
	c.m[key] = mod
	return mod, nil
}

// New compiles the kernels and uploads the state.
func New(dev gpu.Device, s *state.State, low *lower.Lowered, opt gpu.CompileOptions, name string) (*Runner, error) {
	return NewWith(dev, s, low, opt, name, nil)
}

// NewWith is New taking compiled modules from cache (nil: compile, and free on Close).
func NewWith(dev gpu.Device, s *state.State, low *lower.Lowered, opt gpu.CompileOptions, name string, cache *Modules) (*Runner, error) {
	return NewFrom(dev, s, low, opt, name, cache, nil)
}

// Initial holds device copies of a state's arrays, so that runners made one after another
// over the same state (a tuner's candidates) fill their buffers on the device instead of
// uploading the state each time: for a grid of a gigabyte, a fifth of a candidate's time.
type Initial map[*gridio.Array]gpu.Buffer

// NewInitial uploads s's current and previous arrays once; the caller frees them (Free).
// Where the device has no room for the copies it returns what fitted: a runner uploads the
// rest as usual.
func NewInitial(dev gpu.Device, s *state.State) Initial {
	in := Initial{}
	for _, g := range s.Prog.Grids {
		for _, a := range []*gridio.Array{s.Cur[g.Index], s.Prev[g.Index]} {
			if a == nil || in[a] != nil {
				continue
			}
			b, err := dev.Alloc(int64(len(a.Bytes())))
			if err != nil {
				return in
			}
			if err := b.Write(a.Bytes()); err != nil {
				b.Free()
				return in
			}
			in[a] = b
		}
	}
	return in
}

// Free frees the copies.
func (in Initial) Free() {
	for a, b := range in {
		b.Free()
		delete(in, a)
	}
}

// fill gives buffer b array a's values: a device copy from init where it holds a, else an
// upload.
func (in Initial) fill(b gpu.Buffer, a *gridio.Array) error {
	if src := in[a]; src != nil && gpu.SameDevice(b, src) {
		return gpu.CopyRange(b, 0, src, 0, int64(len(a.Bytes())))
	}
	return b.Write(a.Bytes())
}

// NewFrom is NewWith filling the grids' buffers from init's device copies where it holds them.
func NewFrom(dev gpu.Device, s *state.State, low *lower.Lowered, opt gpu.CompileOptions, name string, cache *Modules, init Initial) (*Runner, error) {
	r := &Runner{dev: dev, s: s, low: low, kernels: map[string]gpu.Kernel{}, Attrs: map[string]gpu.KernelAttrs{}}
	var err error
	if cache != nil && cache.dev == dev {
		r.mod, err = cache.compile(name, kir.Print(low.Module, Dialect(dev)), low.Module, opt)
		r.sharedMod = true
		r.cache = cache
	} else {
		r.mod, err = Compile(dev, name, low.Module, opt)
	}
	if err != nil {
		return nil, err
	}
	return r.start(init)
}

// NewCompiled is NewFrom with low's module compiled beforehand (by Compile): a tuner compiles
// candidates while it times others. The runner owns mod from then on, and frees it if it fails.
func NewCompiled(dev gpu.Device, s *state.State, low *lower.Lowered, mod gpu.Module, init Initial) (*Runner, error) {
	r := &Runner{dev: dev, s: s, low: low, kernels: map[string]gpu.Kernel{}, Attrs: map[string]gpu.KernelAttrs{}, mod: mod}
	return r.start(init)
}

// start finds the module's kernels and fills the grids' buffers (from init's copies where it
// holds them).
func (r *Runner) start(init Initial) (*Runner, error) {
	dev, s, low := r.dev, r.s, r.low
	for _, k := range low.Module.Kernels {
		if Pending(r.mod, k.Name) {
			continue // compiled when first launched (CompileDeep)
		}
		if _, err := r.kernel(k.Name); err != nil {
			r.Close()
			return nil, err
		}
	}
	multi := false
	flags := 0
	for _, l := range low.Launches {
		if l.Steps > 1 {
			multi = true
		}
		if l.Chain {
			flags = max(flags, l.Grid[0]*l.Grid[1]*l.Grid[2])
		}
	}
	if flags > 0 {
		k, err := r.kernel(low.Schedule[0].Kernel) // the deepest launch's: compiled at once
		if err != nil {
			r.Close()
			return nil, err
		}
		if _, ok := k.(gpu.ChainedKernel); !ok {
			r.Close()
			return nil, fmt.Errorf("chained launches (chain=true): the %s backend has none; drop chain from the plan", dev.Props().Backend)
		}
		b, err := dev.Alloc(int64(4 * flags))
		if err != nil {
			r.Close()
			return nil, fmt.Errorf("allocating the chained launches' %d flags: %w", flags, err)
		}
		r.chainFlags = b
		if err := b.Write(make([]byte, 4*flags)); err != nil {
			r.Close()
			return nil, err
		}
	}
	r.slots = make([][4]gpu.Buffer, len(s.Prog.Grids))
	for _, g := range s.Prog.Grids {
		n := 1
		if g.Update != nil {
			n = 2
			if g.Levels > 1 {
				n = 3
				if multi {
					n = 4
				}
			}
		}
		bytes := int64(r.deviceLen(s.Cur[g.Index].Len()) * g.Type.Size())
		for i := 0; i < n; i++ {
			b, err := dev.Alloc(bytes)
			if err != nil {
				r.Close()
				return nil, fmt.Errorf("allocating %s of device memory for grid %s: %w", state.HumanBytes(bytes), g.Name, err)
			}
			r.slots[g.Index][i] = b
		}
		// Every buffer starts with the current values so that cells no kernel writes (a fixed
		// rim) hold them whichever buffer is read.
		for i := 0; i < n; i++ {
			src := s.Cur[g.Index]
			if i == 1 && g.Levels > 1 {
				src = s.Prev[g.Index]
			}
			fill := init.fill
			if low.Pitch > 0 {
				fill = r.write // the copies are dense
			}
			if err := fill(r.slots[g.Index][i], src); err != nil {
				r.Close()
				return nil, err
			}
		}
	}
	return r, nil
}

// kernel is the module's kernel name, found (and, if the module left it for later, compiled)
// on first use.
func (r *Runner) kernel(name string) (gpu.Kernel, error) {
	if k, ok := r.kernels[name]; ok {
		return k, nil
	}
	k, err := r.mod.Kernel(name)
	if err != nil {
		return nil, err
	}
	r.kernels[name] = k
	r.Attrs[name] = k.Attrs()
	return k, nil
}

// Close frees device resources.
func (r *Runner) Close() {
	if r.obs != nil {
		r.obs.close()
	}
	for _, sl := range r.slots {
		for _, b := range sl {
			if b != nil {
				b.Free()
			}
		}
	}
	if r.chainFlags != nil {
		r.chainFlags.Free()
	}
	if r.mod != nil && !r.sharedMod {
		r.mod.Close()
	}
}

// Depth is the most steps one launch of the plan advances (a temporal plan's bt, else 1;
// lower.Lowered.Depth). Runs that stop every so often keep their stops at multiples of it, so
// that every launch but the last of a run stays the deepest.
func (r *Runner) Depth() int { return r.low.Depth }

// schedule returns the launches that cover n steps: the deepest first, as many as fit, then
// shallower ones for the remainder (lower.Lowered.LaunchesFor).
func (r *Runner) schedule(n int) []lower.Launch { return r.low.LaunchesFor(n) }

// bind gives a launch its arguments; wait is the epoch a chained kernel's blocks wait for (0:
// none).
func (r *Runner) bind(l lower.Launch, wait uint32) []any {
	args := make([]any, len(l.Args))
	for i, a := range l.Args {
		switch a.Kind {
		case lower.ArgBuffer:
			slot := map[lower.Role]int{lower.In0: 0, lower.In1: 1, lower.Out0: 2, lower.Out1: 3}[a.Role]
			g := r.s.Prog.Grids[a.Grid]
			if g.Update != nil && g.Levels == 1 && a.Role == lower.Out0 {
				slot = 1
			}
			args[i] = r.slots[a.Grid][slot]
		case lower.ArgSize:
			args[i] = int32(r.s.Shape[a.Axis])
		case lower.ArgPitch:
			args[i] = int32(r.low.Pitch)
		case lower.ArgStep:
			args[i] = int32(r.s.Steps)
		case lower.ArgConst:
			args[i] = int32(a.Value)
		case lower.ArgLayers:
			args[i] = int32(r.s.Layers[a.Grid])
		case lower.ArgChainFlags:
			args[i] = r.chainFlags
		case lower.ArgChainEpoch:
			args[i] = r.epoch
		case lower.ArgChainWait:
			args[i] = wait
		case lower.ArgRowsLo:
			args[i] = int32(r.rows[0])
		case lower.ArgRowsHi:
			hi := r.rows[1]
			if hi == 0 {
				hi = r.s.Shape[0]
			}
			args[i] = int32(hi)
		case lower.ArgParam:
			v := r.s.Params[a.Param]
			switch v.T {
			case ir.F32:
				args[i] = float32(v.F)
			case ir.F64:
				args[i] = v.F
			case ir.I32:
				args[i] = int32(v.I)
			case ir.I64:
				args[i] = v.I
			}
		}
	}
	return args
}

// rotate moves each state grid's buffers after a launch that advanced k steps.
func (r *Runner) rotate(k int) { r.move(k, false) }

// unrotate undoes rotate(k).
func (r *Runner) unrotate(k int) { r.move(k, true) }

// move rotates each state grid's buffers past a launch of k steps, or back.
func (r *Runner) move(k int, back bool) {
	for _, u := range r.s.Prog.Updates {
		sl := &r.slots[u.Grid.Index]
		switch {
		case u.Grid.Levels == 1:
			sl[0], sl[1] = sl[1], sl[0]
		case k == 1 && back:
			sl[0], sl[1], sl[2] = sl[1], sl[2], sl[0]
		case k == 1:
			sl[0], sl[1], sl[2] = sl[2], sl[0], sl[1]
		default:
			sl[0], sl[1], sl[2], sl[3] = sl[2], sl[3], sl[0], sl[1]
		}
	}
}

// Run enqueues launches that advance the state by n steps (without waiting). Of a chained
// plan (plan.Chain), each launch that follows one of the same kernel within the call runs as a
// programmatic dependent launch of it; the first, and every launch after another kernel, waits
// for everything before it as usual.
//
// The launches go as one batch of device calls (gpu.Batch): short launches are then posted at
// the driver's speed rather than one hand-over to the device's thread each.
func (r *Runner) Run(n int) error {
	ls := r.schedule(n)
	return gpu.Batch(r.dev, func() error {
		for i, c := range chained(ls) {
			if err := r.launch(ls[i], c); err != nil {
				return err
			}
		}
		return nil
	})
}

// chained says which launches of a sequence run as programmatic dependent launches of the
// one before: those of a chained kernel that directly follow one of the same kernel.
func chained(ls []lower.Launch) []bool {
	c := make([]bool, len(ls))
	for i := 1; i < len(ls); i++ {
		c[i] = ls[i].Chain && ls[i-1].Kernel == ls[i].Kernel
	}
	return c
}

// launch enqueues one launch and moves the buffers and the step count past it; chained says it
// directly follows a launch of the same chained kernel (Run).
func (r *Runner) launch(l lower.Launch, chained bool) error {
	k, err := r.kernel(l.Kernel)
	if err != nil {
		return err
	}
	var wait uint32
	if l.Chain {
		r.epoch++
		if r.epoch == 0 { // wrapped: 0 means no wait
			r.epoch, chained = 1, false
		}
		if chained {
			wait = r.epoch - 1
		}
	}
	if chained {
		err = k.(gpu.ChainedKernel).LaunchChained(l.Grid, l.Block, l.Shared, r.bind(l, wait)...)
	} else {
		err = k.Launch(l.Grid, l.Block, l.Shared, r.bind(l, wait)...)
	}
	if err != nil {
		return fmt.Errorf("launching %s (grid %v, block %v, %d B shared): %w", l.Kernel, l.Grid, l.Block, l.Shared, err)
	}
	r.rotate(l.Steps)
	r.s.Steps += l.Steps
	r.lastSteps = l.Steps
	return nil
}

// Ranged says the plan's kernels write the planes of the streamed axis they are given
// (plan.Ranges), so that LaunchRows can run a launch over part of the axis.
func (r *Runner) Ranged() bool {
	for _, l := range r.low.Launches {
		if rangeArg(l) < 0 {
			return false
		}
	}
	return len(r.low.Launches) > 0
}

// rangeArg is the index of a launch's ArgRowsLo argument, -1 if it takes none.
func rangeArg(l lower.Launch) int {
	for i, a := range l.Args {
		if a.Kind == lower.ArgRowsLo {
			return i
		}
	}
	return -1
}

// Launches is the steps each launch of n steps' schedule advances, in order (Run's
// launches): a caller that splits launches over ranges of planes (LaunchRows) follows it.
func (r *Runner) Launches(n int) []int {
	var ks []int
	for _, l := range r.schedule(n) {
		ks = append(ks, l.Steps)
	}
	return ks
}

// LaunchRows enqueues one launch of the kernel that advances k steps (one of Launches), over
// the planes lo to hi-1 of the streamed axis only: it reads the planes around them as any
// launch does and writes no other plane. It leaves the buffers and the step count where they
// are, so that launches over further ranges of the same step follow; Advance(k) then moves
// past the step. The plan must take ranges (Ranged).
func (r *Runner) LaunchRows(k, lo, hi int) error {
	var l lower.Launch
	found := false
	for _, c := range r.low.Launches {
		if c.Steps == k {
			l, found = c, true
			break
		}
	}
	i := rangeArg(l)
	switch {
	case !found:
		return fmt.Errorf("internal error: no launch of %d steps in the schedule", k)
	case i < 1 || l.Args[i-1].Kind != lower.ArgConst:
		return fmt.Errorf("internal error: launch %s takes no range of planes (plan.Ranges)", l.Kernel)
	case lo < 0 || hi > r.s.Shape[0] || lo >= hi:
		return fmt.Errorf("internal error: planes %d to %d of an axis of %d", lo, hi-1, r.s.Shape[0])
	}
	chunk := int(l.Args[i-1].Value)
	dim := r.s.Prog.Dims() - 1 // n5d's chunks are the launch's last axis
	l.Grid[dim] = lower.N5DRangeChunks(r.s.Shape[0], lo, hi, chunk, l.Rim)
	r.rows = [2]int{lo, hi}
	defer func() { r.rows = [2]int{} }()
	k0, err := r.kernel(l.Kernel)
	if err != nil {
		return err
	}
	if err := k0.Launch(l.Grid, l.Block, l.Shared, r.bind(l, 0)...); err != nil {
		return fmt.Errorf("launching %s over planes %d to %d (grid %v, block %v): %w", l.Kernel, lo, hi-1, l.Grid, l.Block, err)
	}
	return nil
}

// Advance moves the buffers and the step count past a step of k launched over ranges
// (LaunchRows).
func (r *Runner) Advance(k int) {
	r.rotate(k)
	r.s.Steps += k
	r.lastSteps = k
}

// LaunchRowsPast is LaunchRows for the step Advance(k) has just moved past: the launch reads
// and writes the buffers that step did. A caller that must act on the step's results before
// all of its planes are computed (a split run starting an exchange of the planes computed
// first) advances, acts, and launches the rest so.
func (r *Runner) LaunchRowsPast(k, lo, hi int) error {
	r.unrotate(k)
	r.s.Steps -= k
	err := r.LaunchRows(k, lo, hi)
	r.rotate(k)
	r.s.Steps += k
	return err
}

// Timed runs n steps between two events and returns the elapsed milliseconds.
func (r *Runner) Timed(n int) (float64, error) { return r.timed(n, r.Run) }

// TimedObserved is Timed advancing with RunObserved, so that observables can follow.
func (r *Runner) TimedObserved(n int) (float64, error) { return r.timed(n, r.RunObserved) }

func (r *Runner) timed(n int, run func(int) error) (float64, error) {
	start, err := r.dev.NewEvent()
	if err != nil {
		return 0, err
	}
	defer start.Free()
	end, err := r.dev.NewEvent()
	if err != nil {
		return 0, err
	}
	defer end.Free()
	if err := start.Record(); err != nil {
		return 0, err
	}
	if err := run(n); err != nil {
		return 0, err
	}
	if err := end.Record(); err != nil {
		return 0, err
	}
	if err := end.Synchronize(); err != nil {
		return 0, err
	}
	return end.ElapsedMs(start)
}

// Download copies the current (and previous) levels back into the state.
func (r *Runner) Download() error {
	if err := r.dev.Synchronize(); err != nil {
		return err
	}
	for _, u := range r.s.Prog.Updates {
		g := u.Grid
		if err := r.read(r.slots[g.Index][0], r.s.Cur[g.Index]); err != nil {
			return err
		}
		if g.Levels > 1 {
			if err := r.read(r.slots[g.Index][1], r.s.Prev[g.Index]); err != nil {
				return err
			}
		}
	}
	return nil
}

// KernelUse is what one launched kernel of a plan takes of a multiprocessor.
type KernelUse struct {
	Kernel  string
	Threads int // per block
	Shared  int // bytes per block: the launch's dynamic shared memory plus the kernel's static
	// Regs is registers per thread (0: the backend does not say, as OpenCL).
	Regs       int
	LocalBytes int // spilled (CUDA) or private (OpenCL) bytes per thread
	// Blocks is the resident blocks per multiprocessor that threads, registers and shared
	// memory allow (gpu.ResidentBlocks); 0 where the registers are unknown.
	Blocks int
}

// Kernels are the plan's kernels in launch order, each once, with the resources that bound
// their occupancy.
func (r *Runner) Kernels() []KernelUse {
	props := r.dev.Props()
	var out []KernelUse
	seen := map[string]bool{}
	for _, l := range r.low.Launches {
		if seen[l.Kernel] {
			continue
		}
		seen[l.Kernel] = true
		a := r.Attrs[l.Kernel]
		k := KernelUse{Kernel: l.Kernel, Threads: l.Block[0] * l.Block[1] * l.Block[2], Shared: l.Shared + a.StaticShared, Regs: a.Regs, LocalBytes: a.LocalBytes}
		if a.Regs > 0 {
			k.Blocks = gpu.ResidentBlocks(props, k.Threads, k.Shared, a.Regs)
		}
		out = append(out, k)
	}
	return out
}

// KernelReport is a line per launched kernel with the resources that bound its occupancy:
// registers, local (spilled) bytes, shared memory, threads and the resident blocks per
// multiprocessor they allow. Kernels appear in launch order, each once.
func (r *Runner) KernelReport() []string {
	var out []string
	for _, k := range r.Kernels() {
		line := fmt.Sprintf("kernel %s: %d threads, %d B shared", k.Kernel, k.Threads, k.Shared)
		if k.Regs > 0 {
			line += fmt.Sprintf(", %d registers, %d B local; %d blocks (%d warps) per SM", k.Regs, k.LocalBytes, k.Blocks, k.Blocks*((k.Threads+31)/32))
		} else if k.LocalBytes > 0 {
			line += fmt.Sprintf(", %d B private", k.LocalBytes)
		}
		out = append(out, line)
	}
	return out
}
