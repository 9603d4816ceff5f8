package driver

import (
	"errors"
	"fmt"
	"io"
)

// A session is what `tempest run` does around its segment loop, the same for a run on one
// device and a split one: the events of its observations, outputs and o.Events, the signals
// that interrupt it, the progress bar, and the report of its observations.
type session struct {
	o   RunOptions
	out *outputs      // nil on a rank other than 0
	obs *observations // nil when the run observes nothing, and on a rank other than 0
}

// newSession sets the events of loop l over pr. A rank other than 0 of a multi-process run
// (report false) writes and evaluates nothing but keeps rank 0's schedule, so that it takes
// part in the same gathers (the loop's agree brings the state up to date at every point where
// an event is due) and stops where rank 0 does.
func newSession(o RunOptions, pr *Prepared, l *loop, report bool, stdout, stderr io.Writer) (*session, error) {
	ss := &session{o: o}
	g := l.eng.Granule()
	if !report {
		events := append((&outputs{o: o, pr: pr, ckpt: checkpointFile(o, pr)}).events(), o.Events...)
		if obs := newObservations(o, pr); obs != nil {
			events = append(obs.events(g), events...)
		}
		for i := range events {
			events[i].Fire = func(*Point) error { return nil }
		}
		l.events = roundPeriods(events, g, io.Discard)
		l.onStop = func(p *Point) error {
			_, err := p.State() // rank 0 writes the checkpoint of the rows gathered here
			return err
		}
		return ss, nil
	}
	out, err := newOutputs(o, pr, stdout, stderr)
	if err != nil {
		return nil, err
	}
	ss.out = out
	// At a step, Tempest's own events fire first (observations, then the outputs), then
	// o.Events; an until check that ends the run leaves the end's checkpoint to the outputs.
	ss.obs = newObservations(o, pr)
	var events []Event
	if ss.obs != nil {
		events = ss.obs.events(g)
		if err := ss.obs.resume(pr.Resumed["observations"]); err != nil {
			out.abort()
			return nil, err
		}
		out.record = ss.obs.kept
	}
	events = append(append(events, out.events()...), o.Events...)
	l.events = roundPeriods(events, g, stderr)
	l.onStop = out.interrupted
	if obs := ss.obs; obs != nil {
		// An interrupted run keeps the observations it made, as it keeps its GIF frames.
		l.onStop = func(p *Point) error {
			return errors.Join(out.interrupted(p), obs.write(stdout))
		}
	}
	return ss, nil
}

// run runs the loop (catching signals with o.Signals) and returns the engine's seconds; an
// interrupted run returns an error wrapping ErrInterrupted that says how to go on. Rank 0
// then prints the observables where the run ended.
func (ss *session) run(l *loop, steps int, stdout, stderr io.Writer) (float64, error) {
	o := ss.o
	release := func() {}
	if o.Signals {
		// Caught only while the loop runs: a signal during verification or the final outputs
		// ends the process as usual (the outputs are written atomically).
		c := catchSignals()
		release, l.stop = c.release, c.caught
	}
	var bar interface {
		Set(int) error
		Finish() error
	}
	if ss.out != nil {
		if b := newBar(o, stderr, "running", steps); b != nil {
			bar = b
			l.advance = func(done, _ int) { b.Set(done) }
		}
	}
	sec, err := l.run()
	release()
	if bar != nil {
		bar.Finish()
		fmt.Fprintln(stderr)
	}
	s := l.s
	switch {
	case errors.Is(err, ErrInterrupted) && ss.out == nil:
		return 0, fmt.Errorf("%w at step %d of %d: rank 0 wrote the checkpoint and says how to go on", ErrInterrupted, s.Steps, o.Steps)
	case errors.Is(err, ErrInterrupted):
		ck := ss.out.checkpointPath()
		return 0, fmt.Errorf("%w at step %d of %d: checkpoint written to %s; to go on, run the same command with --resume %s",
			ErrInterrupted, s.Steps, o.Steps, ck, ck)
	case err != nil:
		return 0, err
	}
	if obs := ss.obs; obs != nil {
		if obs.last == nil { // a resumed run with no step left
			v, err := l.eng.(observer).Observe()
			if err != nil {
				return 0, err
			}
			obs.note(s.Steps, v)
		}
		obs.report(stdout)
	}
	return sec, nil
}

// finish writes the animations and the observations of a run that ended.
func (ss *session) finish(stdout io.Writer) error {
	if ss.out == nil {
		return nil
	}
	if err := ss.out.finish(); err != nil {
		return err
	}
	if ss.obs != nil {
		return ss.obs.write(stdout)
	}
	return nil
}

// abort removes what an unfinished run leaves behind.
func (ss *session) abort() {
	if ss.out != nil {
		ss.out.abort()
	}
}
