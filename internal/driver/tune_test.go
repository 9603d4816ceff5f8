package driver

import (
	"bytes"
	"io"
	"regexp"
	"strings"
	"testing"
)

// TestParsePlanFastMath: --fastmath compiles a plan with fast math unless its text says
// fastmath=... itself.
func TestParsePlanFastMath(t *testing.T) {
	p, err := loadProgram("../../examples/an5d/j2d5pt.stencil", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		text string
		fast bool
		want bool
	}{
		{"n5d:bt=4", true, true},
		{"n5d:bt=4", false, false},
		{"n5d:bt=4,fastmath=false", true, false},
		{"n5d:bt=4, fastmath=true", false, true},
		{"naive", true, true},
		{"tiled", false, false},
	} {
		pl, err := parsePlan(c.text, p, c.fast)
		if err != nil {
			t.Fatal(err)
		}
		if pl.FastMath != c.want {
			t.Errorf("parsePlan(%q, fast=%v): fast math %v, want %v", c.text, c.fast, pl.FastMath, c.want)
		}
	}
	if _, err := parsePlan("n5d:bt=x", p, true); err == nil {
		t.Error("a bad plan must fail")
	}
}

// TestTuneSubdomain: `tempest tune --gpus 2` tunes one sub-domain (half the rows), and a run
// split two ways takes that plan before the whole grid's choice; the unsplit run does not.
func TestTuneSubdomain(t *testing.T) {
	needBackend(t, "opencl")
	t.Setenv("TEMPEST_CACHE_DIR", t.TempDir())
	file := "../../examples/an5d/j2d5pt.stencil"
	best := tunedBest(t, TuneOptions{File: file, Size: "130x66", Backend: "opencl", Mode: "topk", K: 1, Reps: 1, Parts: 2,
		Strategies: []string{"tiled"}, NoRefine: true, Quiet: true}, "2^6x2^6")
	for _, c := range []struct {
		multi MultiOptions
		want  bool
	}{{MultiOptions{Subdomains: 2}, true}, {MultiOptions{}, false}} {
		var log bytes.Buffer
		res, err := Run(RunOptions{File: file, Size: "130x66", Steps: 6, Backend: "opencl", Quiet: true, Multi: c.multi}, io.Discard, &log)
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Contains(log.String(), "tuned for a sub-domain") && res.Plan == best
		if got != c.want {
			t.Errorf("%+v: ran %s (tuned %s), sub-domain plan taken %v, want %v; log:\n%s", c.multi, res.Plan, best, got, c.want, log.String())
		}
	}
}

// TestTuneSubdomainGrid: `tempest tune --gpus 4 --split 2x2` tunes one part of the grid of
// parts (half the rows and half the columns), a run split 2x2 takes that plan and one split
// into four slabs does not; a split the model picks at run time, or one that does not make
// the parts, is refused with the reason.
func TestTuneSubdomainGrid(t *testing.T) {
	needBackend(t, "opencl")
	t.Setenv("TEMPEST_CACHE_DIR", t.TempDir())
	file := "../../examples/an5d/j2d5pt.stencil"
	base := TuneOptions{File: file, Size: "130x66", Backend: "opencl", Mode: "topk", K: 1, Reps: 1, Parts: 4,
		Strategies: []string{"tiled"}, NoRefine: true, Quiet: true}
	for _, c := range []struct{ split, want string }{
		{"auto", "the split model picks that grid when the run starts"},
		{"3x1", "--split 3x1 makes 3 sub-domains, not 4"},
		{"4", `--split "4"`},
	} {
		o := base
		o.Split = c.split
		if err := Tune(o, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--split %s: %v, want %q", c.split, err, c.want)
		}
	}
	o := base
	o.Split = "2x2"
	best := tunedBest(t, o, "2^6x2^5")
	for _, c := range []struct {
		split string
		want  bool
	}{{"2x2", true}, {"1d", false}} {
		var log bytes.Buffer
		res, err := Run(RunOptions{File: file, Size: "130x66", Steps: 6, Backend: "opencl", Quiet: true, Multi: MultiOptions{Subdomains: 4, Split: c.split}}, io.Discard, &log)
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Contains(log.String(), "tuned for a sub-domain") && res.Plan == best
		if got != c.want {
			t.Errorf("--split %s: ran %s (tuned %s), sub-domain plan taken %v, want %v; log:\n%s", c.split, res.Plan, best, got, c.want, log.String())
		}
	}
}

// tunedBest runs a search and returns its best plan, failing where the search was not made at
// size class class (a sub-domain's).
func tunedBest(t *testing.T, o TuneOptions, class string) string {
	t.Helper()
	var tuned bytes.Buffer
	if err := Tune(o, &tuned, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tuned.String(), "size class "+class) {
		t.Fatalf("tuned at another size class than %s:\n%s", class, tuned.String())
	}
	best := regexp.MustCompile(`best: (\S+)`).FindStringSubmatch(tuned.String())
	if best == nil {
		t.Fatalf("no best plan in:\n%s", tuned.String())
	}
	return best[1]
}
