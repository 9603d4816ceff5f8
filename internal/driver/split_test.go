package driver

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"tempest/internal/decomp"
	"tempest/internal/state"
)

// filesUnder reads every file under dir by its path relative to dir.
func filesUnder(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		rel, _ := filepath.Rel(dir, path)
		out[rel] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sameFiles fails unless dirs a and b hold the same files, byte for byte.
func sameFiles(t *testing.T, what, a, b string) {
	t.Helper()
	fa, fb := filesUnder(t, a), filesUnder(t, b)
	var names []string
	for n := range fa {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(fa) == 0 || len(fa) != len(fb) {
		t.Errorf("%s: %d files, one device %d", what, len(fb), len(fa))
	}
	for _, n := range names {
		if g, ok := fb[n]; !ok {
			t.Errorf("%s: no %s", what, n)
		} else if !bytes.Equal(fa[n], g) {
			t.Errorf("%s: %s differs from one device's", what, n)
		}
	}
}

// in returns o with every file it writes placed under dir (made here).
func in(t *testing.T, o RunOptions, dir string) RunOptions {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	at := func(p *string) {
		if *p != "" {
			*p = filepath.Join(dir, *p)
		}
	}
	for _, p := range []*string{&o.Out, &o.Observables, &o.Snapshots, &o.GIF, &o.Checkpoint} {
		at(p)
	}
	return o
}

// splitCases are the engines split runs are held to one device on: the CPU engine, and plans
// deeper than one step on OpenCL (PoCL in CI) and CUDA (skipped without it). until is a
// program with observables and an until test that the plan runs (n5d needs fixed boundaries),
// wave whether it runs the wave demo (two time levels). PoCL compiles n5d kernels slowly (about
// 8 s each on two busy cores), so its case runs one plan on a program that needs no one-step
// launch; the observables reading .prev of a one-level grid run on the CPU engine and CUDA.
var splitCases = []struct {
	backend, plan string
	split         MultiOptions
	until         string
	wave          bool
}{
	{"cpu", "", MultiOptions{Subdomains: 3, Exchange: 2}, poisson, true},
	{"opencl", "n5d:bt=4", MultiOptions{Subdomains: 2}, fixedPeak, false},
	{"cuda", "n5d:bt=4", MultiOptions{Subdomains: 2}, fixedUntil, false},
	{"cuda", "pyramid:bx=32,by=32,ph=4", MultiOptions{Subdomains: 2, Exchange: 8}, poisson, true},
}

const (
	poisson    = "../../examples/demos/poisson2d.stencil"
	fixedUntil = "testdata/fixed_until.stencil"
	fixedPeak  = "testdata/fixed_peak.stencil"
)

// untilRun is a run that stops where its until test holds (at step 120 for poisson2d, 248 for
// fixed_until, 152 for fixed_peak), with a check every 8 steps.
func untilRun(file string) RunOptions {
	o := RunOptions{File: file, Size: "24x20", Steps: 1000, CheckEvery: 8, Quiet: true}
	if file == poisson {
		o.Params = []string{"tol=1e-4"}
	}
	return o
}

// TestSplitLongRun: a split run writes, byte for byte, the files of the same run on one
// device: the observations (CSV, rows at the same steps: until stops at the same check, and
// maxdiff reads .prev of a one-level grid), snapshots, animations, the final checkpoint and
// state. Tolerance zero.
func TestSplitLongRun(t *testing.T) {
	for _, c := range splitCases {
		var programs []RunOptions
		if c.until != "" {
			o := untilRun(c.until)
			o.Observables, o.Out, o.Checkpoint = "obs.csv", "u.npy", "ck.npz"
			programs = append(programs, o)
		}
		if c.wave {
			programs = append(programs, RunOptions{File: "../../examples/demos/wave.stencil", Size: "30x22", Steps: 26, ObserveEvery: 8,
				Observables: "obs.csv", SnapshotEvery: 8, Snapshots: "snaps", GIF: "u.gif", Out: "u.npy", Quiet: true})
		}
		for _, o := range programs {
			t.Run(c.backend+"/"+c.plan+"/"+strings.TrimSuffix(filepath.Base(o.File), ".stencil"), func(t *testing.T) {
				needBackend(t, c.backend)
				dir := t.TempDir()
				o.Backend, o.Plan = c.backend, c.plan
				one, split := filepath.Join(dir, "one"), filepath.Join(dir, "split")
				r1, _ := runOrSkip(t, in(t, o, one))
				o.Multi = c.split
				r2, out := runOrSkip(t, in(t, o, split))
				if r1.Steps != r2.Steps {
					t.Errorf("one device ran %d steps, the split run %d", r1.Steps, r2.Steps)
				}
				if o.CheckEvery > 0 && (r2.Steps == o.Steps || !strings.Contains(out, fmt.Sprintf("converged at step %d", r2.Steps))) {
					t.Errorf("no convergence at step %d:\n%s", r2.Steps, out)
				}
				sameFiles(t, "split run", one, split)
			})
		}
	}
}

// TestSplitResume: checkpoints of split and single-device runs are the same file, and each
// resumes with the other or with another split: the resumed run stops where the whole run
// converged, with its final state. Tolerance zero.
func TestSplitResume(t *testing.T) {
	for _, c := range splitCases {
		if c.until == "" {
			continue
		}
		k := c.split.Subdomains
		for _, r := range []struct {
			name          string
			first, second MultiOptions
		}{
			{fmt.Sprintf("split%d_split%d", k, k+1), c.split, MultiOptions{Subdomains: k + 1, Exchange: c.split.Exchange}},
			{fmt.Sprintf("split%d_one", k), c.split, MultiOptions{}},
			{fmt.Sprintf("one_split%d", k), MultiOptions{}, c.split},
		} {
			t.Run(c.backend+"/"+c.plan+"/"+r.name, func(t *testing.T) {
				needBackend(t, c.backend)
				dir := t.TempDir()
				o := untilRun(c.until)
				o.Backend, o.Plan = c.backend, c.plan
				whole := o
				whole.Out = filepath.Join(dir, "whole.npy")
				rw, _ := runOrSkip(t, whole)
				for i, m := range []MultiOptions{{}, r.first} {
					h := o
					h.Steps, h.Multi, h.Checkpoint = 48, m, filepath.Join(dir, fmt.Sprintf("ck%d.npz", i))
					runOrSkip(t, h)
				}
				a, _ := os.ReadFile(filepath.Join(dir, "ck0.npz"))
				b, _ := os.ReadFile(filepath.Join(dir, "ck1.npz"))
				if len(a) == 0 || !bytes.Equal(a, b) {
					t.Errorf("the checkpoint at step 48 differs from one device's")
				}
				res := o
				res.Size, res.Params, res.Multi = "", nil, r.second
				res.Resume, res.Out = filepath.Join(dir, "ck1.npz"), filepath.Join(dir, "resumed.npy")
				rr, out := runOrSkip(t, res)
				if rr.StartStep != 48 || rr.StartStep+rr.Steps != rw.Steps {
					t.Errorf("resumed at step %d, ended at %d; the whole run ended at %d\n%s", rr.StartStep, rr.StartStep+rr.Steps, rw.Steps, out)
				}
				a, _ = os.ReadFile(whole.Out)
				b, _ = os.ReadFile(res.Out)
				if len(a) == 0 || !bytes.Equal(a, b) {
					t.Error("the resumed run's final state differs from the whole run's")
				}
			})
		}
	}
}

// TestSplitRanks: a run of two or three processes (in this process, meeting at a coordinator
// on a local port) with observables and until ends at the same step on every rank, writes on
// rank 0 the observations, checkpoint and final state of one device, and resumes from that
// checkpoint (which only rank 0 can read: the others get it from rank 0).
func TestSplitRanks(t *testing.T) {
	dir := t.TempDir()
	base := untilRun(poisson)
	base.Backend, base.Observables, base.Out = "cpu", "obs.csv", "u.npy"
	one := filepath.Join(dir, "one")
	whole, _ := runOrSkip(t, in(t, base, one))
	runSplit := func(t *testing.T, ranks int, o RunOptions, sub string, end int) []*Result {
		t.Helper()
		res, errs := runRanks(t, ranks, func(r int, addr string) RunOptions {
			or := in(t, o, filepath.Join(dir, fmt.Sprintf("%s_rank%d", sub, r)))
			if r > 0 && o.Resume != "" {
				or.Resume = filepath.Join(dir, "nowhere", "ck.npz") // not read: rank 0 sends its checkpoint
			}
			or.Multi = MultiOptions{Rank: r, Ranks: ranks, Coordinator: addr, Timeout: 20 * time.Second}
			return or
		}, nil)
		for r, err := range errs {
			if err != nil {
				t.Fatalf("rank %d: %v", r, err)
			}
		}
		for r := range res {
			if got := res[r].StartStep + res[r].Steps; got != end {
				t.Errorf("rank %d ended at step %d, want %d", r, got, end)
			}
		}
		return res
	}
	for _, ranks := range []int{2, 3} {
		t.Run(fmt.Sprint(ranks), func(t *testing.T) {
			sub := fmt.Sprint("r", ranks)
			runSplit(t, ranks, base, sub, whole.Steps)
			sameFiles(t, "rank 0", one, filepath.Join(dir, sub+"_rank0"))
			for r := 1; r < ranks; r++ {
				if files := filesUnder(t, filepath.Join(dir, fmt.Sprintf("%s_rank%d", sub, r))); len(files) > 0 {
					t.Errorf("rank %d wrote %d files; only rank 0 should", r, len(files))
				}
			}
		})
	}
	t.Run("resume", func(t *testing.T) {
		o := base
		o.Steps, o.Checkpoint, o.Observables, o.Out = 48, "ck.npz", "", ""
		runSplit(t, 2, o, "half", 48)
		o = base
		o.Size, o.Params, o.Observables = "", nil, ""
		o.Resume = filepath.Join(dir, "half_rank0", "ck.npz")
		res := runSplit(t, 2, o, "resumed", whole.Steps)
		if res[0].StartStep != 48 {
			t.Errorf("resumed from step %d, want 48", res[0].StartStep)
		}
		a, _ := os.ReadFile(filepath.Join(one, "u.npy"))
		b, _ := os.ReadFile(filepath.Join(dir, "resumed_rank0", "u.npy"))
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Error("the resumed run's final state differs from one device's")
		}
	})
}

// TestLoopAgree: the run loops of two ranks joined by a coordinator take the same chunks and
// stop at the same step, with onStop on both, when a signal reaches either rank, and end at
// the same step when rank 0's event ends the run; each point with an event due syncs both.
func TestLoopAgree(t *testing.T) {
	for _, c := range []struct {
		name       string
		stopRank   int // the rank a signal reaches after its first chunk; -1: none
		endAt      int // rank 0's event ends the run here; 0: never
		wantEnd    int
		wantStop   bool
		wantEvents string // on rank 0
	}{
		{"signal on rank 1", 1, 0, -1, true, "e@0"},
		{"signal on rank 0", 0, 0, -1, true, "e@0"},
		{"ended by rank 0", -1, 20, 20, false, "e@0 e@10 e@20"},
		{"to the end", -1, 0, 35, false, "e@0 e@10 e@20 e@30 e@35"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Skipf("no local TCP: %v", err)
			}
			addr := ln.Addr().String()
			ln.Close()
			type rankRun struct {
				f      *syncingStepper
				log    []string
				err    error
				stopAt int
			}
			runs := []*rankRun{{stopAt: -1}, {stopAt: -1}}
			var wg sync.WaitGroup
			for r := range runs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rr := runs[r]
					coord, err := decomp.Connect(addr, r, 2, decomp.JoinOptions{Timeout: 10 * time.Second})
					if err != nil {
						rr.err = err
						return
					}
					defer coord.Close()
					rr.f = &syncingStepper{fakeStepper: fakeStepper{granule: 1, s: &state.State{}}}
					l := &loop{eng: rr.f, s: rr.f.s, target: 35, agree: agreeOver(coord)}
					l.events = []Event{{Name: "e", Every: 10, AtZero: true, AtEnd: true, Fire: func(p *Point) error {
						rr.log = append(rr.log, fmt.Sprintf("e@%d", p.Step))
						if r == 0 && c.endAt > 0 && p.Step == c.endAt {
							p.EndRun()
						}
						return nil
					}}}
					if r == c.stopRank {
						// Signals come at wall-clock moments, each rank between its own chunks.
						l.stop = func() bool { return len(rr.f.chunks) >= 1 }
					}
					l.onStop = func(p *Point) error {
						rr.stopAt = p.Step
						_, err := p.State()
						return err
					}
					_, rr.err = l.run()
				}()
			}
			wg.Wait()
			a, b := runs[0], runs[1]
			for r, rr := range runs {
				if c.wantStop != errors.Is(rr.err, ErrInterrupted) || rr.err != nil && !errors.Is(rr.err, ErrInterrupted) {
					t.Fatalf("rank %d: %v", r, rr.err)
				}
			}
			if fmt.Sprint(a.f.chunks) != fmt.Sprint(b.f.chunks) {
				t.Errorf("chunks differ: rank 0 %v, rank 1 %v", a.f.chunks, b.f.chunks)
			}
			if a.f.s.Steps != b.f.s.Steps || a.stopAt != b.stopAt || c.wantStop && a.stopAt != a.f.s.Steps {
				t.Errorf("rank 0 at step %d (stopped at %d), rank 1 at %d (stopped at %d)", a.f.s.Steps, a.stopAt, b.f.s.Steps, b.stopAt)
			}
			if !c.wantStop && a.f.s.Steps != c.wantEnd {
				t.Errorf("ended at step %d, want %d", a.f.s.Steps, c.wantEnd)
			}
			if got := strings.Join(a.log, " "); got != c.wantEvents || got != strings.Join(b.log, " ") {
				t.Errorf("events: rank 0 %q, rank 1 %q, want %q", got, strings.Join(b.log, " "), c.wantEvents)
			}
			if a.f.syncs != b.f.syncs || a.f.syncs < len(a.log) {
				t.Errorf("syncs: rank 0 %d, rank 1 %d, for %d points with events", a.f.syncs, b.f.syncs, len(a.log))
			}
		})
	}
}

// syncingStepper is a fakeStepper that counts its syncs.
type syncingStepper struct {
	fakeStepper
	syncs int
}

func (f *syncingStepper) Sync() error { f.syncs++; return nil }
