package driver

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"

	"tempest/internal/gridio"
)

// checkEventOptions refuses event flags that cannot work together.
func checkEventOptions(o RunOptions) error {
	for _, f := range []struct {
		name string
		v    int
	}{{"--snapshot-every", o.SnapshotEvery}, {"--gif-every", o.GIFEvery}, {"--checkpoint-every", o.CheckpointEvery}} {
		if f.v < 0 {
			return fmt.Errorf("%s %d: a period of steps cannot be negative", f.name, f.v)
		}
	}
	switch {
	case o.Snapshots != "" && o.SnapshotEvery == 0:
		return fmt.Errorf("--snapshots %s: say how often with --snapshot-every N", o.Snapshots)
	case o.SnapshotEvery > 0 && o.Snapshots == "" && o.GIF == "":
		return fmt.Errorf("--snapshot-every %d: say where with --snapshots DIR (.npy frames) or --gif FILE (an animation)", o.SnapshotEvery)
	case o.GIF != "" && o.GIFEvery == 0 && o.SnapshotEvery == 0:
		return fmt.Errorf("--gif %s: say how often with --gif-every N or --snapshot-every N", o.GIF)
	case o.GIFEvery > 0 && o.GIF == "":
		return fmt.Errorf("--gif-every %d: name the animation with --gif FILE", o.GIFEvery)
	case o.GIF != "" && !strings.EqualFold(filepath.Ext(o.GIF), ".gif"):
		return fmt.Errorf("--gif %s: the animation is a GIF; name it FILE.gif", o.GIF)
	}
	return nil
}

// checkOutputPaths refuses, before any work, output files that could not be written at the
// end: an extension of another format, or a directory that cannot hold them. Missing
// directories are created, as --snapshots' is, so that a long run's result is never lost to a
// typo found after it.
func checkOutputPaths(o RunOptions) error {
	for _, f := range []struct {
		flag, path string
		exts       []string // the extensions the format takes; nil: any (--out checks its own)
	}{
		{"--out", o.Out, nil},
		{"--png", o.PNG, []string{".png"}},
		{"--observables", o.Observables, []string{".csv"}},
		{"--observables-png", o.ObservablesPNG, []string{".png"}},
		{"--checkpoint", o.Checkpoint, []string{".npz"}},
		{"--gif", o.GIF, []string{".gif"}},
	} {
		if f.path == "" {
			continue
		}
		if f.exts != nil && !slices.Contains(f.exts, strings.ToLower(filepath.Ext(f.path))) {
			return fmt.Errorf("%s %s: the file is written as %s; name it FILE%s", f.flag, f.path, strings.ToUpper(f.exts[0][1:]), f.exts[0])
		}
		if f.flag == "--out" {
			if _, err := outputFormat(f.path); err != nil {
				return err
			}
		}
		if err := writableDir(filepath.Dir(f.path)); err != nil {
			return fmt.Errorf("%s %s: %w", f.flag, f.path, err)
		}
	}
	return nil
}

// writableDir creates dir if it is missing and checks that a file can be created in it.
func writableDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	probe, err := os.CreateTemp(dir, ".tempest-write-check-*")
	if err != nil {
		return fmt.Errorf("the directory cannot be written: %w", err)
	}
	probe.Close()
	return os.Remove(probe.Name())
}

// outputs are the files a run writes while it goes: snapshots, GIF frames and checkpoints.
type outputs struct {
	o      RunOptions
	pr     *Prepared
	stdout io.Writer
	stderr io.Writer
	gifs   []*gridio.GIFWriter // by update, when o.GIF is set
	ckpt   string              // the checkpoint file
	digits int                 // width of the step in snapshot names
	// record gives the members a checkpoint adds for the run's other records (the
	// observations); nil: none.
	record func() []gridio.NPZEntry
}

func newOutputs(o RunOptions, pr *Prepared, stdout, stderr io.Writer) (*outputs, error) {
	out := &outputs{o: o, pr: pr, stdout: stdout, stderr: stderr, ckpt: checkpointFile(o, pr)}
	if o.Checkpoint == "" && o.CheckpointEvery > 0 {
		fmt.Fprintf(stderr, "checkpoints go to %s (--checkpoint FILE names another)\n", out.ckpt)
	}
	out.digits = max(6, len(fmt.Sprint(o.Steps)))
	if o.Snapshots != "" {
		if err := os.MkdirAll(o.Snapshots, 0o755); err != nil {
			return nil, fmt.Errorf("--snapshots %s: %w", o.Snapshots, err)
		}
	}
	if o.GIF != "" {
		many := len(pr.Prog.Updates) > 1
		for _, u := range pr.Prog.Updates {
			g, err := gridio.NewGIF(outputPath(o.GIF, u.Grid.Name, many), gridio.GIFOptions{})
			if err != nil {
				out.abort()
				return nil, fmt.Errorf("--gif: %w", err)
			}
			out.gifs = append(out.gifs, g)
			// A resumed run goes on with the frames its checkpoint kept.
			if err := g.Resume(pr.Resumed["gif."+u.Grid.Name]); err != nil {
				out.abort()
				return nil, fmt.Errorf("--gif with --resume: %w", err)
			}
		}
	}
	return out, nil
}

// checkpointFile is the checkpoint file of a run: --checkpoint, else the default where
// checkpoints are written every so many steps or on a signal; empty: none.
func checkpointFile(o RunOptions, pr *Prepared) string {
	if o.Checkpoint == "" && (o.CheckpointEvery > 0 || o.Signals) {
		return DefaultCheckpoint(pr.Prog.Name)
	}
	return o.Checkpoint
}

// events are the run loop's events for these outputs.
func (out *outputs) events() []Event {
	o := out.o
	var ev []Event
	if o.Snapshots != "" {
		ev = append(ev, Event{Name: "snapshot", Every: o.SnapshotEvery, AtZero: true, Fire: out.snapshot})
	}
	if o.GIF != "" {
		every := o.GIFEvery
		if every == 0 {
			every = o.SnapshotEvery
		}
		ev = append(ev, Event{Name: "GIF frame", Every: every, AtZero: true, Fire: out.frame})
	}
	if out.ckpt != "" && (o.CheckpointEvery > 0 || o.Checkpoint != "") {
		ev = append(ev, Event{Name: "checkpoint", Every: o.CheckpointEvery, AtEnd: o.Checkpoint != "", Fire: out.checkpoint})
	}
	return ev
}

// snapshot writes every state grid as DIR/NAME_000100.npy.
func (out *outputs) snapshot(p *Point) error {
	s, err := p.State()
	if err != nil {
		return err
	}
	for _, u := range s.Prog.Updates {
		path := filepath.Join(out.o.Snapshots, fmt.Sprintf("%s_%0*d.npy", u.Grid.Name, out.digits, p.Step))
		if err := gridio.WriteNPY(path, s.Cur[u.Grid.Index]); err != nil {
			return fmt.Errorf("snapshot at step %d: %w", p.Step, err)
		}
	}
	return nil
}

// frame adds every state grid's frame to its animation.
func (out *outputs) frame(p *Point) error {
	s, err := p.State()
	if err != nil {
		return err
	}
	for i, u := range s.Prog.Updates {
		if err := out.gifs[i].Add(s.Cur[u.Grid.Index]); err != nil {
			return fmt.Errorf("GIF frame at step %d: %w", p.Step, err)
		}
	}
	return nil
}

// checkpoint writes the checkpoint file (each one replaces the last, atomically).
func (out *outputs) checkpoint(p *Point) error {
	s, err := p.State()
	if err != nil {
		return err
	}
	var extra []gridio.NPZEntry
	for i, g := range out.gifs {
		kept, err := g.Kept()
		if err != nil {
			return err
		}
		if kept != nil {
			extra = append(extra, gridio.NPZEntry{Name: "gif." + out.pr.Prog.Updates[i].Grid.Name, Array: kept})
		}
	}
	if out.record != nil {
		extra = append(extra, out.record()...)
	}
	if err := WriteCheckpoint(out.ckpt, s, extra...); err != nil {
		return err
	}
	if p.Final {
		fmt.Fprintf(out.stdout, "wrote checkpoint %s (step %d)\n", out.ckpt, p.Step)
	}
	return nil
}

// checkpointPath is where a checkpoint of this run goes.
func (out *outputs) checkpointPath() string {
	if out.ckpt == "" {
		return DefaultCheckpoint(out.pr.Prog.Name)
	}
	return out.ckpt
}

// interrupted is the run loop's onStop: it writes the checkpoint at the step reached and
// closes the animations with the frames they have, so that every file left is whole.
func (out *outputs) interrupted(p *Point) error {
	out.ckpt = out.checkpointPath()
	fmt.Fprintf(out.stderr, "stopping at step %d: writing checkpoint %s\n", p.Step, out.ckpt)
	if err := out.checkpoint(p); err != nil {
		return err
	}
	return out.finish()
}

// finish writes the animations.
func (out *outputs) finish() error {
	gifs := out.gifs
	out.gifs = nil
	defer func() {
		for _, g := range gifs {
			g.Abort()
		}
	}()
	many := len(gifs) > 1
	for i, g := range gifs {
		if g.Frames() == 0 {
			continue
		}
		path := outputPath(out.o.GIF, out.pr.Prog.Updates[i].Grid.Name, many)
		if err := g.Close(); err != nil {
			return err
		}
		lo, hi := g.Range()
		fmt.Fprintf(out.stdout, "wrote %s (%d frames, colour scale %.4g to %.4g over all frames)\n", path, g.Frames(), lo, hi)
	}
	return nil
}

// abort removes the temporary files of unfinished animations.
func (out *outputs) abort() {
	for _, g := range out.gifs {
		g.Abort()
	}
	out.gifs = nil
}

// signalCatcher turns SIGINT and SIGTERM into a flag the run loop polls between chunks.
type signalCatcher struct {
	ch  chan os.Signal
	got atomic.Bool
}

func catchSignals() *signalCatcher {
	c := &signalCatcher{ch: make(chan os.Signal, 2)}
	signal.Notify(c.ch, os.Interrupt, syscall.SIGTERM)
	return c
}

func (c *signalCatcher) caught() bool {
	select {
	case <-c.ch:
		c.got.Store(true)
	default:
	}
	return c.got.Load()
}

func (c *signalCatcher) release() { signal.Stop(c.ch) }
