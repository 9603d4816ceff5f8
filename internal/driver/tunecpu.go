package driver

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"tempest/internal/cpu"
	"tempest/internal/gpu"
	"tempest/internal/ir"
	"tempest/internal/native"
	"tempest/internal/probe"
	"tempest/internal/tune"
)

// cpuProps describes the CPU engine as a device of the tuning cache: the processor and what
// compiles its steps, so that a new compiler tunes afresh.
func cpuProps() gpu.Props {
	p := probe.HostProps()
	p.Compiler = cpuCompiler()
	return p
}

// cpuTuneKey is the tuning cache's key of the CPU engine for a program and size.
func cpuTuneKey(p *ir.Program, shape []int) tune.Key {
	return tune.KeyFor(p, shape, cpuProps(), Version, false)
}

// sweepPlan names a CPU engine record of the tuning cache.
func sweepPlan(bt int) string { return "cpu:bt=" + strconv.Itoa(bt) }

// tunedSweep is the cached best steps per sweep of the CPU engine for the program and size
// (0: none cached).
func tunedSweep(p *ir.Program, shape []int) int {
	c, err := tune.OpenCache("")
	if err != nil {
		return 0
	}
	e, err := c.Load(cpuTuneKey(p, shape))
	if err != nil {
		return 0
	}
	if b := e.Best(); b != nil {
		if v, err := strconv.Atoi(strings.TrimPrefix(b.Plan, "cpu:bt=")); err == nil {
			return v
		}
	}
	return 0
}

// tuneCPU times the CPU engine's steps per sweep (its one plan setting) on the program and
// size, from the same initial state each time, and caches the fastest for tempest run.
func tuneCPU(o TuneOptions, stdout, stderr io.Writer) error {
	if _, err := native.Find(); err != nil || !cpu.UseNative {
		return fmt.Errorf("--backend cpu: nothing to tune: the CPU engine runs its Go code here (%v)", err)
	}
	pr, err := Prepare(RunOptions{File: o.File, Size: o.Size, Type: o.Type, Params: o.Params, Seed: o.Seed}, 3)
	if err != nil {
		return err
	}
	s := pr.State
	probeEng := cpu.New(s.Clone())
	depths := probeEng.SweepDepths()
	if len(depths) == 1 {
		fmt.Fprintf(stdout, "%s: nothing to tune on the CPU: its steps are not blocked in time (%s); the engine runs one step per sweep\n", pr.Prog.Name, probeEng.Code())
		return nil
	}
	steps := o.Steps
	if steps <= 0 {
		steps = 48
	}
	reps := o.Reps
	if reps <= 0 {
		reps = 3
	}
	if !o.Quiet {
		fmt.Fprintf(stderr, "tuning %s: %s, %s, on %s (cpu), steps per sweep %v, %d steps, median of %d\n", pr.Prog.Name, sizeString(s.Shape), pr.Prog.DefaultType, cpuName(), depths, steps, reps)
	}
	key := cpuTuneKey(pr.Prog, s.Shape)
	var recs []tune.Record
	for _, bt := range depths {
		var samples []float64
		for r := 0; r <= reps; r++ {
			eng := cpu.New(s.Clone())
			if err := eng.SetStepsPerSweep(bt); err != nil {
				return err
			}
			start := time.Now()
			eng.Run(steps, nil)
			if r > 0 { // the first run warms the caches
				samples = append(samples, time.Since(start).Seconds())
			}
		}
		sec := probe.Median(samples)
		ms := make([]float64, len(samples))
		for i, x := range samples {
			ms[i] = x * 1e3
		}
		recs = append(recs, tune.Record{Plan: sweepPlan(bt), Status: tune.Measured, SecondsPerStep: sec / float64(steps), SamplesMs: ms, Steps: steps, Shape: slices.Clone(s.Shape), When: time.Now().UTC().Truncate(time.Second)})
		if !o.Quiet {
			fmt.Fprintf(stderr, "  bt %2d: %.3f GCells/s\n", bt, UpdatedCells(s)*float64(steps)/sec/1e9)
		}
	}
	if !o.Fresh {
		c, err := tune.OpenCache("")
		if err != nil {
			return err
		}
		if err := c.Put(key, recs...); err != nil {
			return fmt.Errorf("tuning cache: %w", err)
		}
	}
	best := recs[0]
	for _, r := range recs {
		if r.SecondsPerStep < best.SecondsPerStep {
			best = r
		}
	}
	fmt.Fprintf(stdout, "%s %s: best %s, %.3f GCells/s (the model's pick: bt %d)\n", pr.Prog.Name, sizeString(s.Shape), best.Plan, UpdatedCells(s)/best.SecondsPerStep/1e9, probeEng.StepsPerSweep())
	return nil
}
