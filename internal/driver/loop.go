package driver

import (
	"errors"
	"fmt"
	"io"
	"time"

	"tempest/internal/cpu"
	"tempest/internal/gpurun"
	"tempest/internal/gridio"
	"tempest/internal/ref"
	"tempest/internal/state"
)

// The run loop of `tempest run` advances a run in segments. A segment ends at every step where
// some event is due (a snapshot, a checkpoint, an observable, ...) and at the run's last step;
// between those stops the engine runs undisturbed. Within a segment the loop still returns to
// the host every so often (a chunk, at most about chunkTarget long) so that a signal ends the
// run quickly; chunks keep the GPU's launch schedule intact (see stepper.Granule).
//
// Whatever wants to look at the state while the run goes on is an Event: a period in steps and
// a function called at each multiple of it with a Point, which gives the step, the host state
// (downloaded from the device only when asked for, once per point) and, on a GPU, the runner
// itself for consumers that work on the device. Events never touch the engine's timing: the
// reported time is the sum of the chunks' times alone.

// An Event is something done at every multiple of Every steps of a run (absolute step numbers,
// so that a resumed run keeps the same rhythm), and optionally at step zero and at the run's
// last step.
type Event struct {
	Name   string // for messages, e.g. "snapshot"
	Every  int    // steps between calls; 0: never periodic
	AtZero bool   // also at step 0 (the initial state of a fresh run)
	AtEnd  bool   // also at the run's last step, if no multiple of Every lands there
	// Observes says Fire calls Point.Observe: the segment before each of its steps then ends so
	// that observables can be evaluated there (on a GPU, with a one-step launch where they read
	// .prev of a one-level grid).
	Observes bool
	// Fire is called at each due step. An error stops the run.
	Fire func(p *Point) error
}

// A Point is the run at one stop between segments.
type Point struct {
	Step  int  // steps completed
	Start int  // the step this run started from (0, or a checkpoint's step)
	Final bool // the run's last step (reached, or where an interruption stopped it)
	// Interrupted says a signal ended the run here.
	Interrupted bool
	// Runner is the GPU runner, nil on the CPU engines and split runs: consumers that compute
	// on the device (reductions, norms) use it without downloading the state.
	Runner *gpurun.Runner
	eng    stepper
	s      *state.State
	synced bool
	ended  bool
	obs    []float64 // the observables at this point, once evaluated
}

// EndRun makes this point the run's last step: a consumer that finds the run converged (or
// blown up) ends it here. Events due at the end (a final checkpoint) still run, then the run
// finishes as if --steps had said this step.
func (p *Point) EndRun() { p.ended = true }

// State returns the host state at this point, bringing it up to date from the engine the first
// time a consumer asks at this point.
func (p *Point) State() (*state.State, error) {
	if !p.synced {
		if err := p.eng.Sync(); err != nil {
			return nil, fmt.Errorf("reading the state back at step %d: %w", p.Step, err)
		}
		p.synced = true
	}
	return p.s, nil
}

// Observe returns the program's observables at this point (by ir.Observe.Index), evaluated by
// the engine on its own state (a GPU reduces on the device and reads back 8 bytes per
// observable), once per point. Only the Fire of an Event with Observes set may call it.
func (p *Point) Observe() ([]float64, error) {
	if p.obs != nil {
		return p.obs, nil
	}
	o, ok := p.eng.(observer)
	if !ok {
		panic("internal error: observing on an engine without observables")
	}
	v, err := o.Observe()
	if err != nil {
		return nil, fmt.Errorf("evaluating the observables at step %d: %w", p.Step, err)
	}
	p.obs = v
	return v, nil
}

// An observer is a stepper that evaluates the program's observables on its own state.
type observer interface {
	// AdvanceObserved is Advance ending so that Observe can follow: where an observable reads
	// .prev of a one-level grid, the level before the last step must still be at hand.
	AdvanceObserved(n int) (float64, error)
	Observe() ([]float64, error)
}

// A stepper is an engine as the run loop drives it. Every engine (reference, CPU, GPU, and a
// multi-GPU one) is driven the same way.
type stepper interface {
	// Advance runs n steps and returns the seconds they took: device time between events on a
	// GPU, wall time on the host.
	Advance(n int) (float64, error)
	// Sync brings the host state up to date with the engine's.
	Sync() error
	// Granule is the step count that chunks and event periods are kept multiples of: a GPU
	// plan's deepest launch (so that every launch but a run's last few stays the deepest),
	// 1 elsewhere.
	Granule() int
}

// cpuStepper drives the CPU engine.
type cpuStepper struct{ e *cpu.Engine }

func (c cpuStepper) Advance(n int) (float64, error) {
	t := time.Now()
	c.e.Run(n, nil)
	return time.Since(t).Seconds(), nil
}
func (c cpuStepper) Sync() error  { c.e.Sync(); return nil }
func (c cpuStepper) Granule() int { return 1 }

// AdvanceObserved is Advance: the CPU engine steps one at a time and keeps the buffer the last
// step read, the level an observable's .prev of a one-level grid reads.
func (c cpuStepper) AdvanceObserved(n int) (float64, error) { return c.Advance(n) }
func (c cpuStepper) Observe() ([]float64, error)            { return c.e.Observe(), nil }

// refStepper drives the reference interpreter, which works on the state itself. before holds,
// by grid index, the one-level grids' values before the last step (ref.Step makes new arrays,
// so keeping the old ones costs nothing), for observables that read their .prev.
type refStepper struct {
	s      *state.State
	before []*gridio.Array
}

func newRefStepper(s *state.State) *refStepper {
	return &refStepper{s: s, before: make([]*gridio.Array, len(s.Prog.Grids))}
}

func (r *refStepper) Advance(n int) (float64, error) {
	t := time.Now()
	prev := r.s.Prog.PrevObserved()
	for i := 0; i < n; i++ {
		for _, g := range prev {
			r.before[g.Index] = r.s.Cur[g.Index]
		}
		ref.Step(r.s)
	}
	return time.Since(t).Seconds(), nil
}
func (r *refStepper) Sync() error  { return nil }
func (r *refStepper) Granule() int { return 1 }

func (r *refStepper) AdvanceObserved(n int) (float64, error) { return r.Advance(n) }
func (r *refStepper) Observe() ([]float64, error)            { return ref.Observe(r.s, r.before), nil }

// gpuStepper drives a GPU runner, timing each chunk's launches between device events.
type gpuStepper struct{ r *gpurun.Runner }

func (g gpuStepper) Advance(n int) (float64, error) {
	ms, err := g.r.Timed(n)
	return ms / 1e3, err
}
func (g gpuStepper) Sync() error  { return g.r.Download() }
func (g gpuStepper) Granule() int { return g.r.Depth() }

// AdvanceObserved ends with a one-step launch where an observable reads .prev of a one-level
// grid (gpurun's RunObserved): the launch's input buffer then still holds the level before.
func (g gpuStepper) AdvanceObserved(n int) (float64, error) {
	ms, err := g.r.TimedObserved(n)
	return ms / 1e3, err
}
func (g gpuStepper) Observe() ([]float64, error) { return g.r.Observe() }

// chunkTarget is how long a chunk should take: long enough that the host round trip between
// chunks costs nothing measurable, short enough that a signal is answered at once.
const chunkTarget = 200 * time.Millisecond

// grow is how many times longer the chunk after one of n steps that took took (of at most
// chunk steps) should be: toward chunkTarget at the rate this one ran, at least twice and at
// most 16 times as long, since a short chunk's time is mostly the host's round trip. A split
// run's first chunks (a temporal block each) cost the host's posting of a period apiece, so
// fewer of them count (star3d1r on two GPUs: 9 chunks in 1000 steps doubling, 4 growing so).
func grow(chunk, n int, took time.Duration) int {
	if took <= 0 {
		return 16
	}
	return min(16, max(2, int(float64(chunkTarget)*float64(n)/float64(took)/float64(chunk))))
}

// ErrInterrupted is returned (wrapped, with how to resume) when a signal ended a run.
var ErrInterrupted = errors.New("interrupted")

// loop is one run of the segment loop.
type loop struct {
	eng     stepper
	s       *state.State
	runner  *gpurun.Runner
	events  []Event
	target  int                 // the step the run ends at
	stop    func() bool         // a signal arrived; nil: never
	onStop  func(*Point) error  // writes the checkpoint of an interrupted run
	advance func(done, all int) // progress; nil: none
	// agree, in a multi-process run, gives every rank the same decisions at the same steps: a
	// stop asked for on any rank, rank 0's chunk lengths and rank 0's EndRun. With it, every
	// point where an event is due first brings the state up to date on every rank (a gather
	// all ranks take part in), whatever the events then do. nil: one process.
	agree func(decision) (decision, error)
}

// A decision is what every rank of a multi-process run must do alike.
type decision struct {
	Stop  bool // a signal arrived: end the run here with a checkpoint (any rank's)
	End   bool // an event ended the run at this point (rank 0's)
	Chunk int  // the steps of the next chunk (rank 0's)
}

// roundPeriods keeps event periods multiples of the engine's granule, so that stopping for an
// event never splits a deepest launch; each period changed is reported on w.
func roundPeriods(events []Event, granule int, w io.Writer) []Event {
	out := append([]Event(nil), events...)
	if granule <= 1 {
		return out
	}
	for i := range out {
		e := &out[i]
		if e.Every <= 0 || e.Every%granule == 0 {
			continue
		}
		r := roundPeriod(e.Every, granule)
		fmt.Fprintf(w, "%s every %d steps becomes every %d steps: the plan advances %d steps per launch\n", e.Name, e.Every, r, granule)
		e.Every = r
	}
	return out
}

// roundPeriod is the multiple of granule nearest to every (granule at least).
func roundPeriod(every, granule int) int {
	return max(granule, (every+granule/2)/granule*granule)
}

// nextStop is the first step after t where an event is due, or the target.
func (l *loop) nextStop(t int) int {
	next := l.target
	for _, e := range l.events {
		if e.Every > 0 {
			next = min(next, (t/e.Every+1)*e.Every)
		}
	}
	return next
}

// periodicAt says the event's period brings it to step t.
func (e *Event) periodicAt(t int) bool {
	return e.Every > 0 && t%e.Every == 0 && (t != 0 || e.AtZero)
}

// observedAt says an event that observes is due at step t, the end of a segment: the chunk
// that reaches it must end so that observables can be evaluated.
func (l *loop) observedAt(t int) bool {
	for i := range l.events {
		e := &l.events[i]
		if e.Observes && (e.periodicAt(t) || t == l.target && e.AtEnd) {
			return true
		}
	}
	return false
}

// fire calls the events due at the point; with onlyEnd, those due at the end of a run alone
// that the point's periodic calls did not already serve (a run ended early by EndRun).
func (l *loop) fire(p *Point, onlyEnd bool) error {
	var due []Event
	for _, e := range l.events {
		periodic := e.periodicAt(p.Step)
		if onlyEnd && p.Final && e.AtEnd && !periodic || !onlyEnd && (periodic || p.Final && e.AtEnd) {
			due = append(due, e)
		}
	}
	if len(due) > 0 && l.agree != nil {
		if _, err := p.State(); err != nil {
			return err
		}
	}
	for _, e := range due {
		if err := e.Fire(p); err != nil {
			return err
		}
	}
	return nil
}

// run advances the state from its current step to the target (or to where an event ended the
// run: the state's Steps tell) and returns the seconds the engine took. An interruption calls
// onStop at the step reached and returns ErrInterrupted.
func (l *loop) run() (float64, error) {
	start := l.s.Steps
	g := l.eng.Granule()
	point := func(t int) *Point {
		return &Point{Step: t, Start: start, Final: t == l.target, Runner: l.runner, eng: l.eng, s: l.s}
	}
	// ended handles EndRun at a point: the run's end moves there.
	ended := func(p *Point) (bool, error) {
		if l.agree != nil {
			d, err := l.agree(decision{End: p.ended})
			if err != nil {
				return false, err
			}
			p.ended = d.End
		}
		if !p.ended || p.Final {
			return false, nil
		}
		l.target = p.Step
		return true, l.fire(point(p.Step), true)
	}
	if start == 0 {
		p := point(0)
		if err := l.fire(p, false); err != nil {
			return 0, err
		}
		if stop, err := ended(p); stop || err != nil {
			return 0, errors.Join(err, l.eng.Sync())
		}
	}
	total := 0.0
	chunk := g
	for t := start; t < l.target; {
		end := l.nextStop(t)
		for t < end {
			stop := l.stop != nil && l.stop()
			if l.agree != nil {
				d, err := l.agree(decision{Stop: stop, Chunk: chunk})
				if err != nil {
					return total, err
				}
				stop, chunk = d.Stop, d.Chunk
			}
			if stop {
				p := point(t)
				p.Final, p.Interrupted = true, true
				if err := l.onStop(p); err != nil {
					return total, err
				}
				return total, ErrInterrupted
			}
			n := min(chunk, end-t)
			if r := n % g; r != 0 && t+n != end {
				n -= r
			}
			wall := time.Now()
			advance := l.eng.Advance
			if t+n == end && l.observedAt(end) {
				advance = l.eng.(observer).AdvanceObserved
			}
			sec, err := advance(n)
			if err != nil {
				return total, err
			}
			total += sec
			t += n
			if l.advance != nil {
				l.advance(t-start, l.target-start)
			}
			switch took := time.Since(wall); {
			case took < chunkTarget/2 && chunk < 1<<30:
				chunk *= grow(chunk, n, took)
			case took > 2*chunkTarget && chunk > g:
				chunk = max(g, chunk/2/g*g)
			}
		}
		p := point(t)
		if err := l.fire(p, false); err != nil {
			return total, err
		}
		if stop, err := ended(p); err != nil {
			return total, err
		} else if stop {
			break
		}
	}
	if err := l.eng.Sync(); err != nil {
		return total, err
	}
	return total, nil
}
