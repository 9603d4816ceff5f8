package driver

import (
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"tempest/internal/bench"
	"tempest/internal/decomp"
	"tempest/internal/gpu"
	"tempest/internal/gpurun"
	"tempest/internal/model"
	"tempest/internal/probe"
	"tempest/internal/state"
)

// benchSplit carries out `tempest bench --gpus N`: each stencil of the suite on one device
// and split over N, measured (median of o.Reps after a warm-up) beside the split model's
// prediction, priced once from the measured one-device rate and once from the plan's model.
// The split's layout follows o.Split; with 2d or auto the model picks it from the measured
// rate, and the row reports the grid.
func benchSplit(o BenchOptions, stdout, stderr io.Writer) error {
	link, ok := model.Links[o.Link]
	if !ok {
		return fmt.Errorf("--link %q: choose %s", o.Link, strings.Join(model.LinkNames(), ", "))
	}
	suites, err := selectSuites(o)
	if err != nil {
		return err
	}
	if o.Backend == "cpu" {
		return fmt.Errorf("--gpus %d --backend cpu: the CPU engine has no devices", o.GPUs)
	}
	mr := &multiRun{caches: map[gpu.Device]*gpurun.Modules{}}
	defer mr.close()
	ro := RunOptions{Backend: o.Backend, Plan: o.Plan, Multi: MultiOptions{GPUs: o.GPUs, Overlap: o.Overlap}}
	if err := ro.Multi.check(); err != nil {
		return err
	}
	if o.Overlap == "ranges" {
		return fmt.Errorf("--overlap ranges: tempest bench splits with bands or whole sub-domains (auto, on, off); time ranges with tempest run --gpus N --overlap ranges")
	}
	if _, err := mr.openDevices(ro, stderr); err != nil {
		return err
	}
	t, how, err := mr.transport(ro, stderr)
	if err != nil {
		return err
	}
	defer t.Close()
	dev := mr.devs[0]
	prof := loadDeviceProfile(dev, false, nil)
	b := &bencher{o: o, log: stderr}
	b.overlap, b.why = ro.Multi.overlapFor(t)
	fmt.Fprintf(stdout, "%d x %s (%s), halos by %s; link assumed: %s, %.0f GB/s, %.0f us per exchange (%s)\n",
		o.GPUs, dev.Props().Name, dev.Props().Backend, how, link.Name, link.GBs, link.LatencyUs, link.Source)
	if b.overlap {
		fmt.Fprintf(stdout, "exchanges overlapped with the sub-domains' interiors (%s); the model prices a period as max(interior, exchange) + bands (at least %.0f us a band), parts too thin for bands unsplit\n", b.why, model.BandLaunchUs)
	} else {
		fmt.Fprintf(stdout, "exchanges not overlapped (%s); the model prices compute + exchanges\n", b.why)
	}
	fmt.Fprintf(stdout, "| stencil | size | plan | E | split | 1 device ms | %d devices ms | predicted ms (measured rate) | predicted ms (plan model) | speedup | predicted speedup | efficiency |\n", o.GPUs)
	fmt.Fprintln(stdout, "|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, su := range suites {
		steps := su.Steps
		if o.Steps > 0 {
			steps = o.Steps
		}
		files, err := filepath.Glob(filepath.Join(o.Root, su.Dir, "*.stencil"))
		if err != nil {
			return err
		}
		sort.Strings(files)
		for _, file := range files {
			name := strings.TrimSuffix(filepath.Base(file), ".stencil")
			if len(o.Stencils) > 0 && !contains(o.Stencils, name) {
				continue
			}
			p, err := loadProgram(file, su.Type)
			if err != nil {
				return err
			}
			for _, interior := range interiors(su, p.Dims(), o.SizeScale) {
				line, err := b.splitOne(mr, t, prof, link, file, su.Type, interior, steps)
				if err != nil {
					fmt.Fprintf(stderr, "%s/%s: %v\n", su.Name, name, err)
					continue
				}
				fmt.Fprintln(stdout, line)
			}
		}
	}
	return nil
}

// splitOne measures and predicts one stencil at one size; it returns the table row.
func (b *bencher) splitOne(mr *multiRun, t decomp.Transport, prof *probe.Profile, link model.Link, file, typ string, interior []int, steps int) (string, error) {
	p, err := loadProgram(file, typ)
	if err != nil {
		return "", err
	}
	pr, err := b.prepareAt(file, typ, p, interior)
	if err != nil {
		return "", err
	}
	dev := mr.devs[0]
	name := b.o.Plan
	if name == "" {
		name = ChoosePlanName(dev, pr, b.o.Tune, b.o.FastMath, nil)
	}
	pl, err := parsePlan(name, pr.Prog, b.o.FastMath)
	if err != nil {
		return "", fmt.Errorf("--plan: %w", err)
	}
	period, err := decomp.PlanDepth(pr.State, pl)
	if err != nil {
		return "", err
	}
	reps := max(b.o.Reps, 1)
	median := func(f func() (float64, error)) (float64, error) {
		var xs []float64
		for i := 0; i <= reps; i++ { // the first is the warm-up
			x, err := f()
			if err != nil {
				return 0, err
			}
			if i > 0 {
				xs = append(xs, x)
			}
		}
		sort.Float64s(xs)
		return xs[len(xs)/2], nil
	}
	one := pr.State.Clone()
	r, err := gpurun.PrepareWith(dev, one, pl, mr.cache(dev))
	if err != nil {
		return "", err
	}
	single, err := median(func() (float64, error) {
		ms, err := r.Timed(steps)
		return ms / 1e3, err
	})
	r.Close()
	if err != nil {
		return "", err
	}
	// The split model chooses the layout (--split 2d, auto) from the measured rate.
	in := model.SplitInput{Prog: pr.Prog, Shape: pr.State.Shape, Steps: steps, Parts: len(mr.devs), Period: period, Link: link,
		Rate: float64(pr.State.Cells()) * float64(steps) / single, Overlap: b.overlap}
	if mr.devs[0].Props().Backend == "cuda" {
		// What the measurements added to the model: the time per exchange beyond the link's,
		// and the halo rows' overhead.
		in.HostUs, in.RowCells = model.ExchangeUs, model.HaloRowCells
	}
	l, chose, err := layoutFor(b.o.Split, in)
	if err != nil {
		return "", err
	}
	if chose != "" && b.log != nil {
		fmt.Fprintf(b.log, "%s: %s\n", pr.Prog.Name, chose)
	}
	rows, cols := l.Grid()
	in.Cols = cols
	grid := fmt.Sprintf("%dx%d", rows, cols)
	if chose != "" {
		grid += " (model)"
	}
	// Two-dimensional grids have no bands (decomp.Layout.Bands): nothing to overlap.
	in.Overlap = b.overlap && cols == 1
	splitter := decomp.Split
	if b.overlap {
		splitter = decomp.SplitOverlapped
	}
	d, err := splitter(pr.State, l, decomp.All, func(i int, s *state.State) (decomp.Part, error) {
		return decomp.NewDevicePart(mr.devs[i], s, pl, mr.cache(mr.devs[i]))
	}, t)
	if err != nil {
		return "", err
	}
	if err := d.Connect(); err != nil {
		return "", err
	}
	split, err := median(func() (float64, error) {
		start := time.Now()
		if err := d.Run(steps); err != nil {
			return 0, err
		}
		for _, p := range d.Parts {
			if err := p.Wait(); err != nil {
				return 0, err
			}
		}
		return time.Since(start).Seconds(), nil
	})
	for _, p := range d.Parts {
		p.Close()
	}
	if err != nil {
		return "", err
	}
	byRate, err := model.PredictSplit(in)
	if err != nil {
		return "", err
	}
	modelled := "-"
	if prof != nil {
		in.Rate, in.Plan, in.Dev = 0, pl, prof
		if m, err := model.PredictSplit(in); err == nil {
			modelled = fmt.Sprintf("%.2f", m.Seconds*1e3)
		}
	}
	return fmt.Sprintf("| %s | %s | %s | %d | %s | %.2f | %.2f | %.2f | %s | %.2f | %.2f | %.2f |",
		pr.Prog.Name, bench.SizeText(pr.State.Shape), pl, period, grid, single*1e3, split*1e3, byRate.Seconds*1e3, modelled,
		single/split, byRate.Speedup, single/split/float64(len(mr.devs))), nil
}

// cache is the module cache of a device of the run.
func (mr *multiRun) cache(d gpu.Device) *gpurun.Modules {
	c := mr.caches[d]
	if c == nil {
		c = gpurun.NewModules(d)
		mr.caches[d] = c
	}
	return c
}
