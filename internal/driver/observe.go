package driver

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"tempest/internal/gridio"
	"tempest/internal/ir"
)

// DefaultCheckEvery is how many steps apart the until test is evaluated without
// --check-every: often enough that a run stops soon after converging, seldom enough that
// the observations cost little next to the steps.
const DefaultCheckEvery = 100

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

// observations are a run's observables as the run loop's Events: an "observation" at step 0
// when a file is asked for, every --observe-every steps and at the run's last step, and, for a
// program with an until test, an "until check" every --check-every steps and at the last step,
// which ends the run (Point.EndRun) where the test holds. Both periods are absolute steps, so a
// resumed run keeps the rhythm of the run it continues, and multiples of the plan's deepest
// launch (roundPeriods); a check is an observation too.
type observations struct {
	o         RunOptions
	p         *ir.Program
	record    bool // a file is asked for: the series is kept
	series    *gridio.Series
	last      []float64 // the latest values, at step lastStep
	lastStep  int
	converged bool
	// badStep is the first observation step at which an observable was NaN or Inf (-1: none),
	// badName that observable: where a run's NaN appeared, as closely as the observations tell.
	badStep int
	badName string
}

// newObservations returns the observations of a run, or nil when it evaluates none.
func newObservations(o RunOptions, pr *Prepared) *observations {
	p := pr.Prog
	if !observing(o, p) {
		return nil
	}
	ob := &observations{o: o, p: p, badStep: -1, record: o.Observables != "" || o.ObservablesPNG != "",
		series: &gridio.Series{Title: fmt.Sprintf("%s, %s", p.Name, sizeString(pr.State.Shape))}}
	for _, v := range p.Observes {
		ob.series.Names = append(ob.series.Names, v.Name)
	}
	return ob
}

// events are the observations' Events on an engine whose launches advance granule steps.
// Periods given by flags are left to roundPeriods, which says when it changes them; default
// periods are rounded here, silently.
func (ob *observations) events(granule int) []Event {
	o := ob.o
	check := 0
	if ob.p.Until != nil {
		check = o.CheckEvery
		if check == 0 {
			check = roundPeriod(DefaultCheckEvery, granule)
		}
	}
	every := o.ObserveEvery
	switch {
	case every > 0:
	case ob.record && check > 0:
		every = roundPeriod(check, granule) // observations at the checks
	case ob.record:
		every = roundPeriod(max(1, o.Steps/100), granule)
	}
	ev := []Event{{Name: "observation", Every: every, AtZero: ob.record, AtEnd: true, Observes: true, Fire: ob.observe}}
	if check > 0 {
		ev = append(ev, Event{Name: "until check", Every: check, AtEnd: true, Observes: true, Fire: ob.check})
	}
	return ev
}

// note keeps the values v of step: the latest, and a row of the series (once per step).
func (ob *observations) note(step int, v []float64) {
	ob.last, ob.lastStep = v, step
	for i, x := range v {
		if ob.badStep < 0 && (math.IsNaN(x) || math.IsInf(x, 0)) {
			ob.badStep, ob.badName = step, ob.p.Observes[i].Name
		}
	}
	if n := len(ob.series.Steps); ob.record && (n == 0 || ob.series.Steps[n-1] != step) {
		ob.series.Steps = append(ob.series.Steps, step)
		ob.series.Values = append(ob.series.Values, v)
	}
}

// kept is the series recorded so far as a checkpoint member, observations: a row per
// observation, its step and then each observable's value (none where nothing is recorded).
func (ob *observations) kept() []gridio.NPZEntry {
	n := len(ob.series.Steps)
	if !ob.record || n == 0 {
		return nil
	}
	cols := 1 + len(ob.series.Names)
	data := make([]float64, 0, n*cols)
	for i, step := range ob.series.Steps {
		data = append(append(data, float64(step)), ob.series.Values[i]...)
	}
	return []gridio.NPZEntry{{Name: "observations", Array: &gridio.Array{DType: gridio.F64, Shape: []int{n, cols}, Data: data}}}
}

// resume takes the rows a checkpoint kept (kept) as the series' first, so that a resumed
// run's observables continue the interrupted run's.
func (ob *observations) resume(rows *gridio.Array) error {
	if rows == nil || !ob.record {
		return nil
	}
	cols := 1 + len(ob.series.Names)
	if rows.DType != gridio.F64 || len(rows.Shape) != 2 || rows.Shape[1] != cols || rows.Validate() != nil {
		return fmt.Errorf("--resume: the checkpoint's observations are of shape %v, not rows of a step and %d observables", rows.Shape, cols-1)
	}
	data := rows.Data.([]float64)
	for r := 0; r < rows.Shape[0]; r++ {
		row := data[r*cols : (r+1)*cols]
		ob.note(int(row[0]), append([]float64(nil), row[1:]...))
	}
	ob.last = nil // this run's own values are not observed yet
	return nil
}

func (ob *observations) observe(p *Point) error {
	v, err := p.Observe()
	if err != nil {
		return err
	}
	ob.note(p.Step, v)
	return nil
}

// check evaluates the until test and ends the run where it holds. It needs a step of this
// run: before one, .prev of a one-level grid is the current level itself (a run of --steps 0).
func (ob *observations) check(p *Point) error {
	v, err := p.Observe()
	if err != nil {
		return err
	}
	ob.note(p.Step, v)
	if p.Step > p.Start && ir.EvalUntil(ob.p.Until, p.s.Params, v).B {
		ob.converged = true
		p.EndRun()
	}
	return nil
}

// warnNonFinite says at which observation an observable first became NaN or Inf.
func (ob *observations) warnNonFinite(stderr io.Writer) {
	if ob != nil && ob.badStep >= 0 {
		fmt.Fprintf(stderr, "warning: observable %s was first NaN or Inf at step %d (the first observation that saw it; --observe-every narrows it down)\n", ob.badName, ob.badStep)
	}
}

// report prints the latest values: where the run converged, or that it did not.
func (ob *observations) report(stdout io.Writer) {
	values := formatObservables(ob.p, ob.last)
	switch {
	case ob.converged:
		fmt.Fprintf(stdout, "converged at step %d: %s\n", ob.lastStep, values)
	case ob.p.Until != nil:
		fmt.Fprintf(stdout, "not converged after %d steps: %s\n", ob.lastStep, values)
	default:
		fmt.Fprintf(stdout, "observables at step %d: %s\n", ob.lastStep, values)
	}
}

// write writes the CSV and the plot of the observations made (atomically, as every output).
func (ob *observations) write(stdout io.Writer) error {
	o := ob.o
	if o.Observables != "" {
		if err := gridio.WriteFileAtomic(o.Observables, ob.series.CSV()); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %s (%d observations)\n", o.Observables, len(ob.series.Steps))
	}
	if o.ObservablesPNG != "" && len(ob.series.Steps) > 0 {
		img, err := ob.series.PNG()
		if err != nil {
			return fmt.Errorf("plotting %s: %w", o.ObservablesPNG, err)
		}
		if err := gridio.WriteFileAtomic(o.ObservablesPNG, img); err != nil {
			return err
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
