package driver

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"tempest/internal/cpu"
	"tempest/internal/gpu"
	"tempest/internal/gridio"
)

// runOrSkip runs o, skipping the test where its GPU backend is missing (unless
// TEMPEST_REQUIRE_<BACKEND>=1 says it must be there); it returns stdout and stderr together.
func runOrSkip(t *testing.T, o RunOptions) (*Result, string) {
	t.Helper()
	var out bytes.Buffer
	res, err := Run(o, &out, &out)
	if err != nil {
		if errors.Is(err, gpu.ErrUnavailable) && os.Getenv("TEMPEST_REQUIRE_"+strings.ToUpper(o.Backend)) != "1" {
			t.Skipf("%s not available: %v", o.Backend, err)
		}
		t.Fatalf("%s %s: %v\n%s", o.Backend, o.Plan, err, out.String())
	}
	return res, out.String()
}

// TestUntilStopsAtSameStep: the Poisson demo converges at the same check on the CPU engine
// and on each GPU backend, with a one-step plan and with a temporal one, and their
// observations agree (to rounding: GPU updates may fuse multiply-adds, so the states are not
// bitwise equal). A missing backend skips its subtest.
func TestUntilStopsAtSameStep(t *testing.T) {
	dir := t.TempDir()
	base := RunOptions{File: "../../examples/demos/poisson2d.stencil", Size: "24x24", Steps: 5000, CheckEvery: 20,
		Params: []string{"tol=1e-7"}, Quiet: true}
	run := func(t *testing.T, backend, plan string) (*gridio.Series, int) {
		o := base
		o.Backend, o.Plan = backend, plan
		o.Observables = filepath.Join(dir, backend+strings.ReplaceAll(plan, ":", "_")+".csv")
		res, out := runOrSkip(t, o)
		if !strings.Contains(out, fmt.Sprintf("converged at step %d: maxdiff = ", res.Steps)) {
			t.Fatalf("%s %s: no convergence line for step %d:\n%s", backend, plan, res.Steps, out)
		}
		if res.Steps%20 != 0 || res.Steps >= o.Steps {
			t.Errorf("%s %s: stopped at step %d, want a multiple of 20 below %d", backend, plan, res.Steps, o.Steps)
		}
		text, err := os.ReadFile(o.Observables)
		if err != nil {
			t.Fatal(err)
		}
		series, err := gridio.ParseSeriesCSV(string(text))
		if err != nil {
			t.Fatal(err)
		}
		return series, res.Steps
	}
	first, stop := run(t, "cpu", "")
	for _, c := range []struct{ backend, plan string }{{"opencl", "naive"}, {"opencl", "pyramid:ph=4"}, {"cuda", "naive"}, {"cuda", "pyramid:ph=4"}} {
		t.Run(c.backend+"/"+c.plan, func(t *testing.T) {
			series, steps := run(t, c.backend, c.plan)
			if steps != stop {
				t.Errorf("%s %s converged at step %d, the CPU engine at %d", c.backend, c.plan, steps, stop)
			}
			if fmt.Sprint(series.Steps) != fmt.Sprint(first.Steps) {
				t.Fatalf("%s %s observed at steps %v, the CPU engine at %v", c.backend, c.plan, series.Steps, first.Steps)
			}
			for r := range series.Values {
				for k, v := range series.Values[r] {
					w := first.Values[r][k]
					if math.Abs(v-w) > 1e-9*math.Abs(w)+1e-15 {
						t.Errorf("%s %s step %d: %s = %v, CPU engine %v", c.backend, c.plan, series.Steps[r], series.Names[k], v, w)
					}
				}
			}
		})
	}
}

// TestObservablesCSV: the CSV has a header and a row at step 0, every --observe-every steps
// and the last step, with the values the engine computes there, in a form that reads back
// bit for bit; a temporal plan rounds the interval to a multiple of its depth and says so.
func TestObservablesCSV(t *testing.T) {
	dir := t.TempDir()
	o := RunOptions{File: "../../examples/demos/wave.stencil", Size: "16x20", Steps: 10, ObserveEvery: 4, Backend: "cpu", Quiet: true,
		Observables: filepath.Join(dir, "wave.csv"), ObservablesPNG: filepath.Join(dir, "wave.png")}
	_, out := runOrSkip(t, o)
	text, err := os.ReadFile(o.Observables)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(text)), "\n")
	if lines[0] != "step,energy,peak" || len(lines) != 5 {
		t.Fatalf("CSV:\n%s", text)
	}
	pr, err := Prepare(o, 1)
	if err != nil {
		t.Fatal(err)
	}
	eng := cpu.New(pr.State)
	done := 0
	for i, step := range []int{0, 4, 8, 10} {
		eng.Run(step-done, nil)
		done = step
		v := eng.Observe()
		want := fmt.Sprintf("%d,%s,%s", step, fmtExact(v[0]), fmtExact(v[1]))
		if lines[i+1] != want {
			t.Errorf("row %d: %q, want %q", i+1, lines[i+1], want)
		}
	}
	if !strings.Contains(out, "observables at step 10: energy = ") {
		t.Errorf("no final values:\n%s", out)
	}
	if png, err := os.ReadFile(o.ObservablesPNG); err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Errorf("plot: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("temporary files left behind: %v", entries)
	}

	t.Run("opencl", func(t *testing.T) {
		g := o
		g.Backend, g.Plan, g.ObserveEvery, g.ObservablesPNG = "opencl", "pyramid:ph=4", 3, ""
		res, out := runOrSkip(t, g)
		if !strings.Contains(out, "observation every 3 steps becomes every 4 steps: the plan advances 4 steps per launch") || res.Steps != 10 {
			t.Errorf("GPU run:\n%s", out)
		}
		text, _ := os.ReadFile(g.Observables)
		series, err := gridio.ParseSeriesCSV(string(text))
		if err != nil || fmt.Sprint(series.Steps) != "[0 4 8 10]" {
			t.Errorf("GPU observations (%v):\n%s", err, text)
		}
	})
}

func fmtExact(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// TestObservedNaNStep: a NaN that appears in the state is reported with the first observation
// that saw it, besides the final state's NaN cells.
func TestObservedNaNStep(t *testing.T) {
	o := RunOptions{File: "testdata/nan_at_step7.stencil", Size: "32x32", Steps: 20, ObserveEvery: 2,
		Observables: filepath.Join(t.TempDir(), "o.csv"), Backend: "cpu", Quiet: true}
	var out, errs bytes.Buffer
	if _, err := Run(o, &out, &errs); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"warning: grid u holds NaN or Inf", "warning: observable total was first NaN or Inf at step 8"} {
		if !strings.Contains(errs.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs.String())
		}
	}
}

// TestObserveErrors: flags that cannot apply are refused with the reason.
func TestObserveErrors(t *testing.T) {
	for _, c := range []struct {
		o    RunOptions
		want string
	}{
		{RunOptions{File: "../../examples/an5d/j2d5pt.stencil", Observables: "x.csv"}, "--observables: j2d5pt declares no observables"},
		{RunOptions{File: "../../examples/demos/wave.stencil", CheckEvery: 10}, "--check-every: wave has no until test"},
		{RunOptions{File: "../../examples/demos/wave.stencil", ObserveEvery: -1}, "--observe-every -1"},
	} {
		c.o.Size, c.o.Steps, c.o.Backend, c.o.Quiet = "8x8", 2, "cpu", true
		_, err := Run(c.o, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.o, err, c.want)
		}
	}
}

// TestResumeObservablesUntil: a run of the Poisson demo stopped at step 300 with a checkpoint
// and resumed converges at the step where the uninterrupted run converged, with the same final
// state bit for bit; the resumed run's observations are the uninterrupted run's rows (it goes
// on from the rows its checkpoint kept, in absolute steps, with .prev of the one-level grid
// read right after the resume); --verify checks the resumed steps alone,
// from the checkpoint's state. On a temporal plan the launches before each observation end
// with a one-step launch.
func TestResumeObservablesUntil(t *testing.T) {
	for _, c := range []struct{ backend, plan string }{{"cpu", ""}, {"ref", ""}, {"opencl", "pyramid:ph=4"}, {"cuda", "pyramid:ph=4"}} {
		t.Run(c.backend, func(t *testing.T) {
			needBackend(t, c.backend)
			dir := t.TempDir()
			base := RunOptions{File: "../../examples/demos/poisson2d.stencil", Size: "24x24", Steps: 5000, CheckEvery: 20, ObserveEvery: 8,
				Params: []string{"tol=1e-7"}, Backend: c.backend, Plan: c.plan, Quiet: true}
			path := func(n string) string { return filepath.Join(dir, n) }
			whole := base
			whole.Observables, whole.Out = path("whole.csv"), path("whole.npy")
			wres, _ := runOrSkip(t, whole)
			half := base
			half.Steps, half.Observables, half.Checkpoint = 300, path("a.csv"), path("ck.npz")
			if _, out := runOrSkip(t, half); !strings.Contains(out, "not converged after 300 steps") {
				t.Fatalf("the first part converged:\n%s", out)
			}
			resumed := base
			resumed.Size, resumed.Params = "", nil // from the checkpoint
			resumed.Resume, resumed.Observables, resumed.Out, resumed.Verify = path("ck.npz"), path("b.csv"), path("res.npy"), true
			rres, out := runOrSkip(t, resumed)
			if wres.Steps <= 300 || rres.StartStep != 300 || rres.Steps != wres.Steps-300 {
				t.Fatalf("uninterrupted run: %d steps; resumed: from %d, %d steps\n%s", wres.Steps, rres.StartStep, rres.Steps, out)
			}
			if !strings.Contains(out, fmt.Sprintf("converged at step %d: ", wres.Steps)) {
				t.Errorf("no convergence at step %d:\n%s", wres.Steps, out)
			}
			if rres.MaxAbsErr == nil || (c.backend == "cpu" || c.backend == "ref") && *rres.MaxAbsErr != 0 {
				t.Errorf("verify of the resumed steps: max abs error %v\n%s", rres.MaxAbsErr, out)
			}
			a, _ := os.ReadFile(whole.Out)
			b, _ := os.ReadFile(resumed.Out)
			if len(a) == 0 || !bytes.Equal(a, b) {
				t.Error("the resumed run ends in another state")
			}
			read := func(p string) []string {
				text, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				return strings.Split(strings.TrimSpace(string(text)), "\n")
			}
			w, h, r := read(whole.Observables), read(half.Observables), read(resumed.Observables)
			if strings.Join(r, "\n") != strings.Join(w, "\n") {
				t.Errorf("observations of the resumed run:\n%s\nwant those of one run:\n%s", strings.Join(r, "\n"), strings.Join(w, "\n"))
			}
			if len(r) <= len(h) || strings.Join(r[:len(h)], "\n") != strings.Join(h, "\n") || !strings.HasPrefix(r[len(h)], "304,") {
				t.Errorf("the resumed run does not go on from the first part's rows with step 304:\n%s", strings.Join(r, "\n"))
			}
		})
	}
}

// TestUntilNeedsAStep: a run of no steps observes but does not test convergence (u.prev of a
// one-level grid is u itself before the first step, so maxdiff is 0).
func TestUntilNeedsAStep(t *testing.T) {
	o := RunOptions{File: "../../examples/demos/poisson2d.stencil", Size: "8x8", Steps: 0, Backend: "cpu", Quiet: true}
	_, out := runOrSkip(t, o)
	if !strings.Contains(out, "not converged after 0 steps: maxdiff = 0,") {
		t.Errorf("a run of no steps:\n%s", out)
	}
}
