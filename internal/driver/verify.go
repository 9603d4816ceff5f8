package driver

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"tempest/internal/cpu"
	"tempest/internal/errbound"
	"tempest/internal/lower"
	"tempest/internal/plan"
	"tempest/internal/ref"
	"tempest/internal/state"
)

// boundBudget is the most cells x steps --verify propagates error bounds for: the bounded
// reference is slow (docs/performance.md), and this keeps it to about four minutes.
// Larger runs are checked against the CPU engine with no bound.
func boundBudget() float64 { return 1.2e8 * float64(runtime.GOMAXPROCS(0)) }

// verify runs the reference from initial and compares the engine's state s with it. GPU runs
// of float programs also get the error bound of their compilation (fast math or not): the
// reference then runs with bounds (errbound), every cell must lie within its own bound, and
// the report says how large the bound is and whether the program amplifies differences.
// CPU results are checked against the interpreter itself, GPU results without a bound
// against the CPU engine, which the tests hold bitwise equal to the interpreter.
func verify(o RunOptions, res *Result, initial, s *state.State, gpuRun bool, stdout, stderr io.Writer) error {
	// A signal while the reference runs says what it interrupted: the run itself finished.
	if o.Signals {
		c := catchSignals()
		defer c.release()
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			select {
			case <-c.ch:
				fmt.Fprintf(stderr, "\ninterrupted while verifying: the run of %d steps finished, but its result is not verified and its outputs are not written (run without --verify to skip the check)\n", res.Steps)
				os.Exit(130)
			case <-stop:
			}
		}()
	}
	// progress is a bar's callback for a phase of the verification (nil with --quiet or
	// without a terminal); each bar ends itself at the last step.
	progress := func(what string) func(int) {
		bar := newBar(o, stderr, what, res.Steps)
		if bar == nil {
			if !o.Quiet {
				// No terminal for a bar: one line says what the wait is for.
				fmt.Fprintf(stderr, "verify: running the %s for %d steps (%.3g cells x steps)\n", what, res.Steps, float64(s.Cells())*float64(res.Steps))
			}
			return nil
		}
		return func(done int) {
			bar.Set(done)
			if done == res.Steps {
				bar.Finish()
				fmt.Fprintln(stderr)
			}
		}
	}
	cellSteps := float64(s.Cells()) * float64(res.Steps)
	order := ""
	if gpuRun {
		// The reference adds as the plan does: n5d sums a box plane by plane, and a sum whose
		// terms cancel rounds differently in another grouping, by more than its bound.
		if pl, err := plan.Parse(res.Plan, initial.Prog); err == nil {
			pl.FastMath = res.FastMath
			if q := lower.EvaluationOrder(initial.Prog, pl); q != initial.Prog {
				initial.Prog = q
				order = " (sums grouped plane by plane, as the plan adds them)"
			}
		}
	}
	floats := false
	for _, u := range s.Prog.Updates {
		floats = floats || u.Grid.Type.IsFloat()
	}
	if gpuRun && floats && !o.NoBound && cellSteps <= boundBudget() {
		arith := errbound.For(res.Backend, res.FastMath)
		start := time.Now()
		b := errbound.RunProgress(initial, res.Steps, arith, progress("bounded reference"))
		maxAbs, rms := ref.Compare(initial, s)
		res.MaxAbsErr, res.RMSErr = &maxAbs, &rms
		v := b.Check(initial, s)
		res.ErrorBound, res.WithinBound = &v.MaxB, new(v.Outside == 0)
		fmt.Fprintf(stdout, "verify against the reference interpreter%s: max abs error %.3g, RMS error %.3g\n", order, maxAbs, rms)
		fmt.Fprintf(stdout, "error bound (%s, first-order propagation over %d steps, %.1f s): largest %.3g, median %.3g, 99th percentile %.3g\n",
			arith.Name, res.Steps, time.Since(start).Seconds(), v.MaxB, v.Median, v.P99)
		switch {
		case b.Amplification > 10:
			fmt.Fprintf(stdout, "note: a difference may grow up to %.3g times in one step here (ill-conditioned): engines that round differently agree only to within the bound, not to the last digit\n", b.Amplification)
		case b.Amplification > 1.01:
			fmt.Fprintf(stdout, "note: a difference may grow up to %.3g times in one step here, so the bound, taken cell by cell, grows geometrically with the steps and says little over long runs\n", b.Amplification)
		}
		if v.Outside > 0 {
			fmt.Fprintf(stdout, "verify: OUTSIDE the bound: %d of %d cells; first %s%v: error %.3g > bound %.3g\n", v.Outside, v.Cells, v.Grid, v.Where, v.Diff, v.Bound)
			return fmt.Errorf("verify: %d cells differ from the reference by more than rounding can explain (a wrong result)", v.Outside)
		}
		fmt.Fprintf(stdout, "verify: within the bound in every cell (largest error/bound %.3g)\n", v.Ratio)
		return nil
	}
	what := "the reference interpreter"
	if gpuRun {
		what = "the reference (CPU engine)"
		eng := cpu.New(initial)
		eng.Run(res.Steps, progress("reference (CPU engine)"))
		eng.Sync()
	} else {
		done := progress("reference")
		for i := 0; i < res.Steps; i++ {
			ref.Step(initial)
			if done != nil {
				done(i + 1)
			}
		}
	}
	maxAbs, rms := ref.Compare(initial, s)
	res.MaxAbsErr, res.RMSErr = &maxAbs, &rms
	fmt.Fprintf(stdout, "verify against %s%s: max abs error %.3g, RMS error %.3g\n", what, order, maxAbs, rms)
	if gpuRun && floats && !o.NoBound {
		fmt.Fprintf(stdout, "error bound not computed: %.3g cells x steps is above the %.0e the bounded reference covers in reasonable time on %d cores\n", cellSteps, boundBudget(), runtime.GOMAXPROCS(0))
	}
	return nil
}
