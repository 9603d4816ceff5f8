package gpurun

import (
	"encoding/binary"
	"fmt"
	"math"

	"tempest/internal/gpu"
	"tempest/internal/ir"
	"tempest/internal/kir"
	"tempest/internal/lower"
)

// observer holds the compiled observable kernels of a runner and their scratch buffers.
type observer struct {
	low     *lower.Observed
	mod     gpu.Module
	kernels map[string]gpu.Kernel
	// scratch holds the partials: [0] one per chunk of cells (and every later odd level),
	// [1] the next level's.
	scratch [2]gpu.Buffer
	Source  string
	shared  bool // the module belongs to a Modules cache
}

func (o *observer) close() {
	for _, b := range o.scratch {
		if b != nil {
			b.Free()
		}
	}
	if o.mod != nil && !o.shared {
		o.mod.Close()
	}
}

// exactOptions compile observable kernels as the reference computes: IEEE operations as
// written (no fast math, no fused multiply-add), correctly rounded division and square root.
func exactOptions(dev gpu.Device) gpu.CompileOptions {
	if Dialect(dev) == kir.CUDA {
		return gpu.CompileOptions{Extra: []string{"--fmad=false"}}
	}
	return gpu.CompileOptions{Extra: []string{"-cl-fp32-correctly-rounded-divide-sqrt"}}
}

// observerFor lowers, compiles and allocates the observable kernels on first use.
func (r *Runner) observerFor() (*observer, error) {
	if r.obs != nil {
		return r.obs, nil
	}
	p := r.s.Prog
	low := lower.LowerObservePitched(p, r.s.Shape, r.s.Layers, r.low.Pitch)
	o := &observer{low: low, kernels: map[string]gpu.Kernel{}, Source: kir.Print(low.Module, Dialect(r.dev))}
	var mod gpu.Module
	var err error
	if r.cache != nil {
		mod, err = r.cache.compile(p.Name+" (observables)", o.Source, nil, exactOptions(r.dev))
		o.shared = true
	} else {
		mod, err = r.dev.Compile(p.Name+" (observables)", o.Source, exactOptions(r.dev))
	}
	if err != nil {
		return nil, fmt.Errorf("compiling the observables: %w", err)
	}
	o.mod = mod
	for _, k := range low.Module.Kernels {
		kk, err := mod.Kernel(k.Name)
		if err != nil {
			o.close()
			return nil, err
		}
		o.kernels[k.Name] = kk
	}
	blocks := int64(low.Cells[0].Grid[0])
	sizes := [2]int64{blocks, max(1, (blocks+ir.ReduceWidth-1)/ir.ReduceWidth)}
	for i, n := range sizes {
		b, err := r.dev.Alloc(n * 8)
		if err != nil {
			o.close()
			return nil, fmt.Errorf("allocating the observables' partials: %w", err)
		}
		o.scratch[i] = b
	}
	r.obs = o
	return o, nil
}

// Observe evaluates every observable of the program on the device's current buffers (the
// grids are not downloaded; only each observable's final 8 bytes are read back) and returns
// their values by ir.Observe.Index: bit for bit what the reference computes from the same
// state, for expressions whose operations the device rounds as IEEE does. Advance with
// RunObserved (or TimedObserved) before it.
func (r *Runner) Observe() ([]float64, error) {
	p := r.s.Prog
	out := make([]float64, len(p.Observes))
	if len(p.Observes) == 0 {
		return out, nil
	}
	if r.lastSteps > 1 && len(p.PrevObserved()) > 0 {
		panic("internal error: observing the level before a multi-step launch; advance with RunObserved")
	}
	o, err := r.observerFor()
	if err != nil {
		return nil, err
	}
	block := [3]int{ir.ReduceWidth, 1, 1}
	for _, ob := range p.Observes {
		l := o.low.Cells[ob.Index]
		args := r.bind(l, 0)
		for i, a := range l.Args {
			if a.Kind == lower.ArgPartials {
				args[i] = o.scratch[0]
			}
		}
		if err := o.kernels[l.Kernel].Launch(l.Grid, l.Block, 0, args...); err != nil {
			return nil, fmt.Errorf("launching %s: %w", l.Kernel, err)
		}
		n, cur := l.Grid[0], 0
		for n > 1 {
			blocks := (n + ir.ReduceWidth - 1) / ir.ReduceWidth
			k := o.low.Reduce[ob.Index]
			if err := o.kernels[k].Launch([3]int{blocks, 1, 1}, block, 0, o.scratch[cur], o.scratch[1-cur], int32(n)); err != nil {
				return nil, fmt.Errorf("launching %s: %w", k, err)
			}
			n, cur = blocks, 1-cur
		}
		var b [8]byte
		if err := o.scratch[cur].Read(b[:]); err != nil {
			return nil, fmt.Errorf("reading observable %s: %w", ob.Name, err)
		}
		bits := binary.LittleEndian.Uint64(b[:])
		v := math.Float64frombits(bits)
		if ob.Accum() == ir.I64 {
			v = float64(int64(bits))
		}
		out[ob.Index] = ob.Finish(v, r.s.Cells())
	}
	return out, nil
}

// RunObserved advances n steps like Run, so that observables can be evaluated next: where an
// observable reads .prev of a one-level grid, the last step is a one-step launch, whose input
// buffer then still holds the values before it.
func (r *Runner) RunObserved(n int) error {
	if n == 0 || len(r.s.Prog.PrevObserved()) == 0 {
		return r.Run(n)
	}
	var single *lower.Launch
	for i, l := range r.low.Launches {
		if l.Steps == 1 {
			single = &r.low.Launches[i]
		}
	}
	if single == nil {
		panic("internal error: no one-step launch")
	}
	if err := r.Run(n - 1); err != nil {
		return err
	}
	return r.launch(*single, false)
}
