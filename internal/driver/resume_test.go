package driver

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tempest/internal/gpu"
	"tempest/internal/gridio"
	"tempest/internal/state"
)

// needBackend skips a test whose backend is missing, unless TEMPEST_REQUIRE_<BACKEND>=1 says it
// must be there (CI sets it for OpenCL).
func needBackend(t *testing.T, backend string) {
	t.Helper()
	if backend != "opencl" && backend != "cuda" {
		return
	}
	dev, err := gpu.Open(backend)
	if err != nil {
		if os.Getenv("TEMPEST_REQUIRE_"+strings.ToUpper(backend)) == "1" || !errors.Is(err, gpu.ErrUnavailable) {
			t.Fatalf("opening %s: %v", backend, err)
		}
		t.Skipf("%s not available: %v", backend, err)
	}
	dev.Close()
}

// outputsOf reads the .npy files a run wrote with --out base.npy (one per state grid).
func outputsOf(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.npy"))
	if len(files) == 0 {
		t.Fatalf("no output in %s", dir)
	}
	out := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = b
	}
	return out
}

// TestResumeBitwise: 100 steps in one run equal, bit for bit, 50 steps written to a checkpoint
// and 50 more resumed from it, on every engine: the reference, the CPU engine, one-step and
// temporal GPU plans (n5d bt=8 and pyramid ph=8 do not divide 50: each half ends with shallower
// launches, the whole run only once), one-level and two-level grids (wave keeps u's previous
// level), one and two state grids (grayscott).
func TestResumeBitwise(t *testing.T) {
	for _, c := range []struct {
		backend, plan, file, size string
	}{
		{"ref", "", "demos/wave.stencil", "19x23"},
		{"cpu", "", "demos/wave.stencil", "40x37"},
		{"cpu", "", "demos/grayscott.stencil", "33x30"},
		{"cpu", "", "an5d/star3d1r.stencil", "9x10x11"},
		{"opencl", "naive", "an5d/j2d5pt.stencil", "40x37"},
		{"opencl", "n5d:bt=8", "an5d/j2d5pt.stencil", "70x67"},
		{"opencl", "naive", "demos/wave.stencil", "40x37"},
		{"opencl", "pyramid:bx=32,by=32,ph=8", "demos/wave.stencil", "40x37"},
		{"cuda", "naive", "an5d/j2d5pt.stencil", "40x37"},
		{"cuda", "n5d:bt=8", "an5d/j2d5pt.stencil", "70x67"},
		{"cuda", "pyramid:bx=32,by=32,ph=8", "demos/wave.stencil", "40x37"},
	} {
		name := strings.NewReplacer("/", "_", ":", "_", ",", "_", "=", "").Replace(c.backend + "_" + c.plan + "_" + c.file)
		t.Run(name, func(t *testing.T) {
			needBackend(t, c.backend)
			dir := t.TempDir()
			base := RunOptions{File: "../../examples/" + c.file, Size: c.size, Backend: c.backend, Plan: c.plan, Quiet: true,
				Inits: nil, Params: nil}
			run := func(o RunOptions) {
				t.Helper()
				if _, err := Run(o, io.Discard, io.Discard); err != nil {
					t.Fatal(err)
				}
			}
			whole, half, resumed := filepath.Join(dir, "whole"), filepath.Join(dir, "half"), filepath.Join(dir, "resumed")
			for _, d := range []string{whole, half, resumed} {
				os.Mkdir(d, 0o755)
			}
			o := base
			o.Steps, o.Out = 100, filepath.Join(whole, "out.npy")
			run(o)
			ck := filepath.Join(half, "ck.npz")
			o = base
			o.Steps, o.Checkpoint = 50, ck
			run(o)
			o = base
			o.Size = "" // taken from the checkpoint
			o.Steps, o.Resume, o.Out = 100, ck, filepath.Join(resumed, "out.npy")
			run(o)
			want, got := outputsOf(t, whole), outputsOf(t, resumed)
			if len(want) != len(got) {
				t.Fatalf("outputs %d, resumed %d", len(want), len(got))
			}
			for f, w := range want {
				if !bytes.Equal(w, got[f]) {
					t.Errorf("%s: the resumed run differs from the uninterrupted one", f)
				}
			}
		})
	}
}

// TestResumeRefused: a checkpoint resumed with another program, size, type, parameter value,
// seed or input data is refused with an error that names what differs.
func TestResumeRefused(t *testing.T) {
	dir := t.TempDir()
	ck := filepath.Join(dir, "wave.npz")
	o := RunOptions{File: "../../examples/demos/wave.stencil", Size: "20x20", Steps: 10, Backend: "cpu", Quiet: true,
		Params: []string{"c=0.25"}, Checkpoint: ck}
	if _, err := Run(o, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	hs := filepath.Join(dir, "heat.npz")
	h := RunOptions{File: "../../examples/sl/hotspot.stencil", Size: "20x20", Steps: 5, Backend: "cpu", Quiet: true, Checkpoint: hs}
	if _, err := Run(h, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		edit func(o *RunOptions)
		want []string
	}{
		{"program", func(o *RunOptions) { o.File = "../../examples/an5d/j2d5pt.stencil" }, []string{"program differs", "wave", "j2d5pt"}},
		{"size", func(o *RunOptions) { o.Size = "20x21" }, []string{"size differs", "20x20", "20x21"}},
		{"type", func(o *RunOptions) { o.Type = "f64" }, []string{"element type differs", "f32", "f64"}},
		{"param", func(o *RunOptions) { o.Params = []string{"c=0.3"} }, []string{"parameter c differs", "c=0.25", "c=0.3"}},
		{"seed", func(o *RunOptions) { o.Seed = 7 }, []string{"seed differs"}},
		{"init of a state grid", func(o *RunOptions) { o.Inits = []string{"u=zero"} }, []string{"drop --init u"}},
		{"past the end", func(o *RunOptions) { o.Steps = 5 }, []string{"step 10, past --steps 5"}},
		{"not a checkpoint", func(o *RunOptions) { o.Resume = "../../examples/demos/wave.stencil" }, []string{"zip"}},
		{"input data", func(o *RunOptions) {
			*o = h
			o.Checkpoint, o.Resume, o.Inits = "", hs, []string{"power=random:9"}
		}, []string{"data of input grid power differs"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := o
			r.Checkpoint, r.Resume, r.Steps, r.Params, r.Size = "", ck, 20, nil, ""
			c.edit(&r)
			_, err := Run(r, io.Discard, io.Discard)
			if err == nil {
				t.Fatal("resumed without complaint")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
	// Repeating the checkpoint's own values is fine.
	r := o
	r.Checkpoint, r.Resume, r.Steps = "", ck, 12
	if _, err := Run(r, io.Discard, io.Discard); err != nil {
		t.Errorf("resuming with the same flags: %v", err)
	}
}

// fakeStepper records the chunks the loop asks for.
type fakeStepper struct {
	granule int
	s       *state.State
	chunks  []int
}

func (f *fakeStepper) Advance(n int) (float64, error) {
	f.chunks = append(f.chunks, n)
	f.s.Steps += n
	return 0.001 * float64(n), nil
}
func (f *fakeStepper) Sync() error  { return nil }
func (f *fakeStepper) Granule() int { return f.granule }

// TestLoopStops: events fire at the multiples of their (rounded) periods, step 0 only where
// asked, the end where asked; every chunk but those ending at a stop is a multiple of the
// granule; the time is the sum of the chunks'; a stop request ends the run with onStop.
func TestLoopStops(t *testing.T) {
	for _, c := range []struct {
		name          string
		granule       int
		start, target int
		every         []int
		stopAfter     int // chunks before a signal; 0: none
		endAt         int // an event ends the run at this step; 0: none
		want          string
	}{
		{"one", 1, 0, 10, []int{3}, 0, 0, "e0@0 e0@3 e0@6 e0@9 end@10"},
		{"two", 1, 0, 12, []int{4, 6}, 0, 0, "e0@0 e1@0 e0@4 e0@8 e1@6 e0@12 e1@12 end@12"},
		{"rounded", 8, 0, 50, []int{20}, 0, 0, "e0@0 e0@24 e0@48 end@50"},
		{"resumed", 4, 6, 20, []int{8}, 0, 0, "e0@8 e0@16 end@20"},
		{"interrupted", 1, 0, 1000, []int{500}, 3, 0, "e0@0 stop@273"}, // chunks of 1, 16 and 256 steps (grow)
		{"ended", 1, 0, 100, []int{10}, 0, 30, "e0@0 e0@10 e0@20 e0@30 end@30"},
		{"ended at the end", 1, 0, 30, []int{10}, 0, 30, "e0@0 e0@10 e0@20 e0@30 end@30"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeStepper{granule: c.granule, s: &state.State{Steps: c.start}}
			var log []string
			var events []Event
			for i, e := range c.every {
				events = append(events, Event{Name: fmt.Sprint("e", i), Every: e, AtZero: true, Fire: func(p *Point) error {
					log = append(log, fmt.Sprintf("e%d@%d", i, p.Step))
					if c.endAt > 0 && p.Step == c.endAt {
						p.EndRun()
					}
					return nil
				}})
			}
			events = append(events, Event{Name: "end", AtEnd: true, Fire: func(p *Point) error {
				log = append(log, fmt.Sprintf("end@%d", p.Step))
				return nil
			}})
			l := &loop{eng: f, target: c.target, events: roundPeriods(events, c.granule, io.Discard)}
			l.s = f.s
			if c.stopAfter > 0 {
				l.stop = func() bool { return len(f.chunks) >= c.stopAfter }
				l.onStop = func(p *Point) error { log = append(log, fmt.Sprintf("stop@%d", p.Step)); return nil }
			}
			sec, err := l.run()
			if c.stopAfter > 0 != errors.Is(err, ErrInterrupted) || (err != nil && !errors.Is(err, ErrInterrupted)) {
				t.Fatalf("err %v", err)
			}
			if c.endAt > 0 && f.s.Steps != c.endAt {
				t.Errorf("ended at step %d, want %d", f.s.Steps, c.endAt)
			}
			sortEvents(log)
			want := strings.Fields(c.want)
			sortEvents(want)
			if strings.Join(log, " ") != strings.Join(want, " ") {
				t.Errorf("events %v, want %v", log, want)
			}
			total := 0
			for _, n := range f.chunks {
				total += n
			}
			if d := sec - 0.001*float64(total); d > 1e-9 || d < -1e-9 {
				t.Errorf("time %g, chunks took %g", sec, 0.001*float64(total))
			}
			at := c.start
			for _, n := range f.chunks {
				at += n
				if n%c.granule != 0 && !strings.Contains(" "+strings.Join(log, " ")+" ", fmt.Sprintf("@%d ", at)) {
					t.Errorf("chunk of %d steps ending at %d splits a launch of %d", n, at, c.granule)
				}
			}
		})
	}
}

// sortEvents orders a log by step, keeping the order of events at one step.
func sortEvents(log []string) {
	step := func(s string) int {
		var n int
		fmt.Sscan(s[strings.Index(s, "@")+1:], &n)
		return n
	}
	for i := 1; i < len(log); i++ {
		for j := i; j > 0 && step(log[j]) < step(log[j-1]); j-- {
			log[j], log[j-1] = log[j-1], log[j]
		}
	}
}

// TestLoopChunksGrow: cheap steps are run in growing chunks, so the host round trips do not
// cost time; no chunk outgrows the target by much.
func TestLoopChunksGrow(t *testing.T) {
	f := &fakeStepper{granule: 1, s: &state.State{}}
	l := &loop{eng: f, target: 1 << 20, s: f.s}
	start := time.Now()
	if _, err := l.run(); err != nil {
		t.Fatal(err)
	}
	if len(f.chunks) > 40 {
		t.Errorf("%d chunks for %d free steps", len(f.chunks), 1<<20)
	}
	if time.Since(start) > 5*time.Second {
		t.Error("too slow")
	}
}

// observingStepper is a fakeStepper that observes, recording where observed chunks end.
type observingStepper struct {
	fakeStepper
	observedEnds []int
	observations int
}

func (f *observingStepper) AdvanceObserved(n int) (float64, error) {
	sec, err := f.Advance(n)
	f.observedEnds = append(f.observedEnds, f.s.Steps)
	return sec, err
}
func (f *observingStepper) Observe() ([]float64, error) {
	f.observations++
	return []float64{float64(f.s.Steps)}, nil
}

// TestLoopObserved: the chunk that reaches a step where an observing event is due (its
// multiples, the end where it asks for it, a run ended early) ends so that observables can
// follow, and no other chunk does; a point evaluates them once however many events ask.
func TestLoopObserved(t *testing.T) {
	for _, c := range []struct {
		name        string
		granule     int
		target, end int // end: an observing event ends the run there; 0: never
		want        string
	}{
		{"periods", 1, 30, 0, "[10 20 30]"},
		{"granule", 4, 30, 0, "[12 24 30]"}, // every 10 becomes every 12
		{"ended", 1, 100, 20, "[10 20]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &observingStepper{fakeStepper: fakeStepper{granule: c.granule, s: &state.State{}}}
			calls := 0
			obs := func(p *Point) error {
				v, err := p.Observe()
				if err != nil || int(v[0]) != p.Step {
					t.Errorf("step %d: observed %v, %v", p.Step, v, err)
				}
				calls++
				if p.Step == c.end {
					p.EndRun()
				}
				return nil
			}
			events := []Event{
				{Name: "observation", Every: 10, AtEnd: true, Observes: true, Fire: obs},
				{Name: "check", Every: 10, Observes: true, Fire: obs},
				{Name: "snapshot", Every: 7, AtZero: true, Fire: func(*Point) error { return nil }},
			}
			l := &loop{eng: f, s: f.s, target: c.target, events: roundPeriods(events, c.granule, io.Discard)}
			if _, err := l.run(); err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(f.observedEnds); got != c.want {
				t.Errorf("observed chunks end at %s, want %s (chunks %v)", got, c.want, f.chunks)
			}
			if calls == 0 || f.observations != len(f.observedEnds) {
				t.Errorf("%d observing calls, %d evaluations at %d points", calls, f.observations, len(f.observedEnds))
			}
		})
	}
}

// TestResumeDamaged: a checkpoint whose bytes changed after it was written is refused, never
// resumed from: a byte flipped inside a grid's data (the zip member's CRC-32), a grid
// replaced inside a well-formed archive (the SHA-256 in meta.json) and a negative step.
func TestResumeDamaged(t *testing.T) {
	dir := t.TempDir()
	ck := filepath.Join(dir, "wave.npz")
	o := RunOptions{File: "../../examples/demos/wave.stencil", Size: "20x20", Steps: 10, Backend: "cpu", Quiet: true, Checkpoint: ck}
	if _, err := Run(o, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(ck)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := gridio.ReadNPZ(ck)
	if err != nil {
		t.Fatal(err)
	}
	resume := func(path string) error {
		r := o
		r.Checkpoint, r.Resume, r.Steps, r.Size = "", path, 20, ""
		_, err := Run(r, io.Discard, io.Discard)
		return err
	}
	// A byte flipped in the middle of u.npy's data: the data of u follows its name and header.
	flipped := bytes.Clone(good)
	at := bytes.Index(flipped, []byte("u.npy")) + 5 + 128 + 4*200
	flipped[at] ^= 0x40
	// u replaced by other values in an archive written anew (valid CRCs).
	var swapped []gridio.NPZEntry
	for _, e := range entries {
		if e.Name == "u" {
			e.Array = state.CopyArray(e.Array)
			e.Array.Data.([]float32)[7] += 1
		}
		swapped = append(swapped, e)
	}
	// meta.json with a negative step.
	var negative []gridio.NPZEntry
	for _, e := range entries {
		if e.Name == "meta.json" {
			e.Data = bytes.Replace(e.Data, []byte(`"step": 10`), []byte(`"step": -3`), 1)
		}
		negative = append(negative, e)
	}
	for _, c := range []struct {
		name  string
		write func(path string) error
		want  string
	}{
		{"flipped", func(p string) error { return os.WriteFile(p, flipped, 0o644) }, "checksum"},
		{"swapped", func(p string) error { return gridio.WriteNPZ(p, swapped) }, "u.npy does not hold what was written"},
		{"negative step", func(p string) error { return gridio.WriteNPZ(p, negative) }, "says step -3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_")+".npz")
			if err := c.write(path); err != nil {
				t.Fatal(err)
			}
			if err := resume(path); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error saying %q", err, c.want)
			}
		})
	}
	if err := resume(ck); err != nil {
		t.Errorf("the intact checkpoint: %v", err)
	}
}

// TestResumeContinuesRecords: a run stopped at a checkpoint and resumed writes the same GIF
// and observables CSV, byte for byte, as one run over all the steps: the checkpoint keeps the
// frames and the observations made so far, and the resumed run goes on with them.
func TestResumeContinuesRecords(t *testing.T) {
	dir := t.TempDir()
	base := RunOptions{File: "../../examples/demos/wave.stencil", Size: "24x20", Steps: 40, Backend: "cpu", Quiet: true,
		GIFEvery: 5, ObserveEvery: 4, Observables: "obs.csv", GIF: "u.gif"}
	one := base
	one.GIF, one.Observables = filepath.Join(dir, "one.gif"), filepath.Join(dir, "one.csv")
	if _, err := Run(one, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	first := base
	first.Steps, first.Checkpoint = 20, filepath.Join(dir, "ck.npz")
	first.GIF, first.Observables = filepath.Join(dir, "two.gif"), filepath.Join(dir, "two.csv")
	if _, err := Run(first, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	second := first
	second.Steps, second.Checkpoint, second.Resume = 40, "", first.Checkpoint
	if _, err := Run(second, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, pair := range [][2]string{{"one.gif", "two.gif"}, {"one.csv", "two.csv"}} {
		a, err1 := os.ReadFile(filepath.Join(dir, pair[0]))
		b, err2 := os.ReadFile(filepath.Join(dir, pair[1]))
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s after a resume differs from %s of one run (%d and %d bytes)", pair[1], pair[0], len(b), len(a))
		}
	}
}
