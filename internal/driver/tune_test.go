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
	var tuned bytes.Buffer
	err := Tune(TuneOptions{File: file, Size: "130x66", Backend: "opencl", Mode: "topk", K: 1, Reps: 1, Parts: 2,
		Strategies: []string{"tiled"}, NoRefine: true, Quiet: true}, &tuned, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tuned.String(), "size class 2^6x2^6") {
		t.Fatalf("tuned at another size than a sub-domain's 65x66:\n%s", tuned.String())
	}
	best := regexp.MustCompile(`best: (\S+)`).FindStringSubmatch(tuned.String())
	if best == nil {
		t.Fatalf("no best plan in:\n%s", tuned.String())
	}
	for _, c := range []struct {
		multi MultiOptions
		want  bool
	}{{MultiOptions{Subdomains: 2}, true}, {MultiOptions{}, false}} {
		var log bytes.Buffer
		res, err := Run(RunOptions{File: file, Size: "130x66", Steps: 6, Backend: "opencl", Quiet: true, Multi: c.multi}, io.Discard, &log)
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Contains(log.String(), "tuned for a sub-domain") && res.Plan == best[1]
		if got != c.want {
			t.Errorf("%+v: ran %s (tuned %s), sub-domain plan taken %v, want %v; log:\n%s", c.multi, res.Plan, best[1], got, c.want, log.String())
		}
	}
}
