package driver

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"

	"tempest/internal/cpu"
	"tempest/internal/gpurun"
	"tempest/internal/gridio"
	"tempest/internal/ir"
	"tempest/internal/probe"
)

// DefaultCheckEvery is how many steps apart the until test is evaluated without
// --check-every: often enough that a run stops soon after converging, seldom enough that
// the observations cost little next to the steps.
const DefaultCheckEvery = 100

// segments is an engine advanced in segments between observations.
type segments interface {
	// advance runs n steps so that observe can follow; it returns the seconds they took.
	advance(n int) (float64, error)
	observe() ([]float64, error)
	// depth is the most steps one launch advances: checks fall at its multiples.
	depth() int
}

type cpuSegments struct {
	eng  *cpu.Engine
	bar  *progressbar.ProgressBar
	done int
}

func (c *cpuSegments) advance(n int) (float64, error) {
	start := time.Now()
	c.eng.Run(n, func(k int) {
		if c.bar != nil {
			c.bar.Set(c.done + k)
		}
	})
	c.done += n
	return time.Since(start).Seconds(), nil
}

func (c *cpuSegments) observe() ([]float64, error) { return c.eng.Observe(), nil }
func (c *cpuSegments) depth() int                  { return 1 }

type gpuSegments struct{ r *gpurun.Runner }

func (g gpuSegments) advance(n int) (float64, error) {
	ms, err := g.r.TimedObserved(n)
	return ms / 1e3, err
}

func (g gpuSegments) observe() ([]float64, error) { return g.r.Observe() }
func (g gpuSegments) depth() int                  { return g.r.Depth() }

// observing reports whether a run evaluates observables: the program declares some, or a
// flag asks for them.
func observing(o RunOptions, p *ir.Program) bool {
	return len(p.Observes) > 0 || o.Observables != "" || o.ObservablesPNG != "" || o.ObserveEvery != 0 || o.CheckEvery != 0
}

// checkObserveFlags refuses observation flags that cannot apply to p, before anything runs.
func checkObserveFlags(o RunOptions, p *ir.Program) error {
	if !observing(o, p) {
		return nil
	}
	flag := "--observables"
	switch {
	case o.Observables == "" && o.ObservablesPNG != "":
		flag = "--observables-png"
	case o.Observables == "" && o.ObserveEvery != 0:
		flag = "--observe-every"
	}
	switch {
	case o.ObserveEvery < 0:
		return fmt.Errorf("--observe-every %d: give a positive number of steps", o.ObserveEvery)
	case o.CheckEvery < 0:
		return fmt.Errorf("--check-every %d: give a positive number of steps", o.CheckEvery)
	case o.CheckEvery > 0 && p.Until == nil:
		return fmt.Errorf("--check-every: %s has no until test; add one, e.g. until maxdiff < 1e-6", p.Name)
	case len(p.Observes) == 0:
		return fmt.Errorf("%s: %s declares no observables; add one, e.g. observe total = sum(u)", flag, p.Name)
	}
	return nil
}

// roundUp rounds n up to a multiple of depth, saying so when it changes.
func roundUp(n, depth int, flag string, stdout io.Writer) int {
	if n%depth == 0 {
		return n
	}
	r := (n + depth - 1) / depth * depth
	fmt.Fprintf(stdout, "%s %d rounded up to %d, a multiple of the plan's %d-step launches\n", flag, n, r, depth)
	return r
}

// advance runs the steps of `tempest run` on an engine, setting res.Steps and res.Seconds
// (the steps' time, observations excluded). With observables it stops at each observation:
// step 0 when a file is asked for, every --observe-every steps, every --check-every steps
// when the program has an until test (and stops at the first check where it holds), and the
// last step; it prints the final values and writes the observations' CSV and plot.
func advance(o RunOptions, pr *Prepared, res *Result, seg segments, stdout io.Writer) error {
	p, s := pr.Prog, pr.State
	if !observing(o, p) {
		sec, err := seg.advance(o.Steps)
		res.Steps, res.Seconds = o.Steps, sec
		return err
	}
	if err := checkObserveFlags(o, p); err != nil {
		return err
	}
	depth := seg.depth()
	check := 0
	if p.Until != nil {
		check = o.CheckEvery
		if check == 0 {
			check = DefaultCheckEvery
		}
		check = roundUp(check, depth, "--check-every", stdout)
	}
	record := o.Observables != "" || o.ObservablesPNG != ""
	every := o.ObserveEvery
	switch {
	case every > 0:
		every = roundUp(every, depth, "--observe-every", stdout)
	case record && check > 0:
		every = check
	case record:
		every = roundUp(max(1, o.Steps/100), depth, "--observe-every", io.Discard)
	}
	series := &gridio.Series{Title: fmt.Sprintf("%s, %s", p.Name, sizeString(s.Shape))}
	for _, ob := range p.Observes {
		series.Names = append(series.Names, ob.Name)
	}
	var last []float64
	observe := func() error {
		v, err := seg.observe()
		if err != nil {
			return err
		}
		last = v
		if record {
			series.Steps = append(series.Steps, s.Steps)
			series.Values = append(series.Values, v)
		}
		return nil
	}
	if record {
		if err := observe(); err != nil {
			return err
		}
	}
	start := s.Steps
	converged := false
	for done := 0; done < o.Steps && !converged; {
		next := o.Steps
		if every > 0 {
			next = min(next, (done/every+1)*every)
		}
		if check > 0 {
			next = min(next, (done/check+1)*check)
		}
		sec, err := seg.advance(next - done)
		res.Seconds += sec
		if err != nil {
			return err
		}
		done = next
		isCheck := check > 0 && (done%check == 0 || done == o.Steps)
		if !(every > 0 && done%every == 0) && !isCheck && done != o.Steps {
			continue
		}
		if err := observe(); err != nil {
			return err
		}
		if isCheck && ir.EvalUntil(p.Until, s.Params, last).B {
			converged = true
		}
	}
	res.Steps = s.Steps - start
	if last == nil {
		if err := observe(); err != nil { // --steps 0
			return err
		}
	}
	values := formatObservables(p, last)
	switch {
	case converged:
		fmt.Fprintf(stdout, "converged at step %d: %s\n", s.Steps, values)
	case p.Until != nil:
		fmt.Fprintf(stdout, "not converged after %d steps: %s\n", s.Steps, values)
	default:
		fmt.Fprintf(stdout, "observables at step %d: %s\n", s.Steps, values)
	}
	if o.Observables != "" {
		if err := probe.WriteFileAtomic(o.Observables, series.CSV()); err != nil {
			return fmt.Errorf("writing %s: %w", o.Observables, err)
		}
		fmt.Fprintf(stdout, "wrote %s (%d observations)\n", o.Observables, len(series.Steps))
	}
	if o.ObservablesPNG != "" {
		img, err := series.PNG()
		if err == nil {
			err = probe.WriteFileAtomic(o.ObservablesPNG, img)
		}
		if err != nil {
			return fmt.Errorf("writing %s: %w", o.ObservablesPNG, err)
		}
		fmt.Fprintf(stdout, "wrote %s\n", o.ObservablesPNG)
	}
	return nil
}

// formatObservables prints name = value pairs, each value in the shortest form that reads
// back as the same float64.
func formatObservables(p *ir.Program, v []float64) string {
	parts := make([]string, len(p.Observes))
	for i, ob := range p.Observes {
		parts[i] = ob.Name + " = " + strconv.FormatFloat(v[i], 'g', -1, 64)
	}
	return strings.Join(parts, ", ")
}
