package gpurun

import (
	"errors"
	"fmt"
	"sync"

	"tempest/internal/gpu"
	"tempest/internal/kir"
	"tempest/internal/lower"
)

// Compile compiles m's kernels for dev. On CUDA a module of several kernels is compiled as one
// program per kernel, all at once: NVRTC's time grows faster than a program's length, and a
// temporal plan's kernels (the deepest launch's, and the shallower ones' for the steps it
// leaves) are each about as long as the first. The searches of star3d1r and j2d5pt spent
// 42 of their 58 s waiting for compilations; one plan of box3d1r took 5.2 s as one program and
// 2.2 s as two compiled at once (docs/performance.md, 2026-11-29). Every kernel is a program
// of its own already (the printers emit no shared helpers), so the parts compile as they are.
// OpenCL keeps one program: its drivers build kernels on their own schedule.
func Compile(dev gpu.Device, name string, m *kir.Module, opt gpu.CompileOptions) (gpu.Module, error) {
	return compileParts(dev, name, m, opt, nil)
}

// CompileDeep is Compile leaving the kernels of low's shallower launches (the steps a run's
// deepest launches leave over) to be compiled when first used: a tuner times whole numbers of
// deepest launches, and those kernels were 60% of j2d5pt's tuned plan's source.
func CompileDeep(dev gpu.Device, name string, low *lower.Lowered, opt gpu.CompileOptions) (gpu.Module, error) {
	deep := map[string]bool{}
	for _, l := range low.Launches {
		if l.Steps == low.Depth {
			deep[l.Kernel] = true
		}
	}
	return compileParts(dev, name, low.Module, opt, func(k string) bool { return !deep[k] })
}

// compileParts compiles m's kernels, each a program of its own on CUDA, all at once, and
// those later says (nil: none) when first used.
func compileParts(dev gpu.Device, name string, m *kir.Module, opt gpu.CompileOptions, later func(string) bool) (gpu.Module, error) {
	d := Dialect(dev)
	if d != kir.CUDA || len(m.Kernels) < 2 {
		return dev.Compile(name, kir.Print(m, d), opt)
	}
	j := &joined{dev: dev, name: name, opt: opt, byKernel: map[string]gpu.Module{}, pending: map[string]string{}}
	var now []*kir.Kernel
	for _, k := range m.Kernels {
		if later != nil && later(k.Name) {
			j.pending[k.Name] = kernelSource(m, k, d)
		} else {
			now = append(now, k)
		}
	}
	mods := make([]gpu.Module, len(now))
	errs := make([]error, len(now))
	var wg sync.WaitGroup
	for i, k := range now {
		wg.Add(1)
		go func() {
			defer wg.Done()
			gpu.Background(func() {
				mods[i], errs[i] = dev.Compile(j.partName(k.Name), kernelSource(m, k, d), opt)
			})
		}()
	}
	wg.Wait()
	for i, k := range now {
		if mods[i] != nil {
			j.parts = append(j.parts, mods[i])
			j.byKernel[k.Name] = mods[i]
		}
	}
	for _, err := range errs {
		if err != nil {
			// The first only: the kernels of one plan mostly fail alike, and a compile
			// error quotes its program.
			j.Close()
			return nil, err
		}
	}
	return j, nil
}

// kernelSource is kernel k of module m printed as a program of its own.
func kernelSource(m *kir.Module, k *kir.Kernel, d kir.Dialect) string {
	return kir.Print(&kir.Module{Kernels: []*kir.Kernel{k}, Uses64: m.Uses64, Exact: m.Exact}, d)
}

// Pending says module m leaves kernel name to be compiled when first used (CompileDeep).
func Pending(m gpu.Module, name string) bool {
	j, ok := m.(*joined)
	if !ok {
		return false
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	_, p := j.pending[name]
	return p
}

// joined is one module made of modules compiled apart, each holding one of its kernels, and
// the sources of those still to compile.
type joined struct {
	dev  gpu.Device
	name string
	opt  gpu.CompileOptions

	mu       sync.Mutex
	parts    []gpu.Module
	byKernel map[string]gpu.Module
	pending  map[string]string
}

func (j *joined) partName(kernel string) string { return fmt.Sprintf("%s, kernel %s", j.name, kernel) }

func (j *joined) Kernel(name string) (gpu.Kernel, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	m, ok := j.byKernel[name]
	if !ok {
		src, p := j.pending[name]
		if !p {
			return nil, fmt.Errorf("no kernel %s in the module", name)
		}
		var err error
		if m, err = j.dev.Compile(j.partName(name), src, j.opt); err != nil {
			return nil, err
		}
		delete(j.pending, name)
		j.parts = append(j.parts, m)
		j.byKernel[name] = m
	}
	return m.Kernel(name)
}

func (j *joined) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	var errs []error
	for _, m := range j.parts {
		errs = append(errs, m.Close())
	}
	j.parts, j.byKernel = nil, map[string]gpu.Module{}
	return errors.Join(errs...)
}
