// Package testkit holds what several packages' tests share: golden diagnostic files, a
// private PoCL kernel cache per test binary and parsed programs with plans. Only tests import
// it.
package testkit

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"tempest/internal/ir"
	"tempest/internal/load"
	"tempest/internal/plan"
)

// Diagnostics loads every testdata/errors/*<ext> file through load and compares the error with
// the .err file beside it (position, source line, caret and hint). With update set it rewrites
// the .err files instead.
func Diagnostics(t *testing.T, ext string, update bool, load func(path, text string) error) {
	t.Helper()
	files, err := filepath.Glob("testdata/errors/*" + ext)
	if err != nil || len(files) == 0 {
		t.Fatal("no error cases found")
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ext)
		t.Run(name, func(t *testing.T) {
			text, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			err = load("testdata/errors/"+filepath.Base(f), string(text))
			if err == nil {
				t.Fatalf("%s: accepted, want a diagnostic", f)
			}
			got := err.Error() + "\n"
			if !strings.Contains(got, "error:") || !strings.Contains(got, ext+":") {
				t.Errorf("diagnostic lacks a position:\n%s", got)
			}
			golden := strings.TrimSuffix(f, ext) + ".err"
			if update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("diagnostic changed:\n--- got\n%s--- want\n%s", got, want)
			}
		})
	}
}

// PoCLMain runs a test binary with a PoCL kernel cache of its own: go test runs packages in
// parallel, and two processes building into one cache can abort PoCL's linker.
//
// It also leaves the CPU engine its Go code (TEMPEST_CC=none unless set): these packages use
// the engine as a reference for GPU plans and split runs, and building C for every example
// they touch took CI minutes of compiler time. The cpu package tests its C code, and
// cmd/tempest and sim reach it through the CLI and the library.
func PoCLMain(m *testing.M) {
	if os.Getenv("TEMPEST_CC") == "" {
		os.Setenv("TEMPEST_CC", "none")
	}
	if os.Getenv("POCL_CACHE_DIR") == "" {
		dir, err := os.MkdirTemp("", "tempest-pocl-")
		if err == nil {
			os.Setenv("POCL_CACHE_DIR", dir)
			code := m.Run()
			os.RemoveAll(dir)
			os.Exit(code)
		}
	}
	os.Exit(m.Run())
}

// Parsed loads the stencil source src and parses plan text for it, failing the test on
// either error.
func Parsed(t *testing.T, src, text string) (*ir.Program, plan.Plan) {
	t.Helper()
	p, err := load.Source("t.stencil", src, load.Options{})
	return withPlan(t, p, err, text)
}

// ExampleParsed loads examples/NAME.stencil (from a package two folders below the repository
// root) and parses plan text for it, failing the test on either error.
func ExampleParsed(t *testing.T, name, text string) (*ir.Program, plan.Plan) {
	t.Helper()
	p, err := load.File("../../examples/"+name+".stencil", load.Options{})
	return withPlan(t, p, err, text)
}

// withPlan parses plan text for p, failing the test on the load's error or the parse's.
func withPlan(t *testing.T, p *ir.Program, err error, text string) (*ir.Program, plan.Plan) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	pl, err := plan.Parse(text, p)
	if err != nil {
		t.Fatal(err)
	}
	return p, pl
}

// Long says whether the long tests run: TEMPEST_LONG=1, which .ci/run's second step sets. The
// README's go test ./... leaves them out so that it stays a few minutes on two cores.
func Long() bool { return os.Getenv("TEMPEST_LONG") == "1" }

// LongTest skips t unless the long tests run and this process's shard owns t. A
// package with long tests must be in .ci/run's LONG_PKGS, or they never run.
func LongTest(t *testing.T) {
	t.Helper()
	if !Long() {
		t.Skip("a long test: TEMPEST_LONG=1 runs it (.ci/run does)")
	}
	// The long tests are dealt out in turn in the order they start, the same in every shard
	// (tests run in source order): hashing their names left one shard with most of them.
	if !OwnsIndex(int(longTests.Add(1)) - 1) {
		t.Skipf("another shard's test (TEMPEST_SHARD=%s)", os.Getenv("TEMPEST_SHARD"))
	}
}

// longTests counts the long tests started in this process.
var longTests atomic.Int32

// OwnsIndex says whether this process runs the k-th of a list of pieces of work when the long
// tests are split into shards run side by side: TEMPEST_SHARD=i/n runs those whose k is i
// modulo n (PoCL compiles one program at a time per process, so two processes use two cores).
// Without TEMPEST_SHARD it owns everything.
func OwnsIndex(k int) bool {
	i, n := shard()
	return k%n == i
}

// shard parses TEMPEST_SHARD (i/n); a malformed value panics, since a shard that silently ran
// nothing would hide its tests.
func shard() (i, n int) {
	v := os.Getenv("TEMPEST_SHARD")
	if v == "" {
		return 0, 1
	}
	if _, err := fmt.Sscanf(v, "%d/%d", &i, &n); err != nil || n < 1 || i < 0 || i >= n {
		panic(fmt.Sprintf("TEMPEST_SHARD=%q: want i/n with 0 <= i < n", v))
	}
	return i, n
}
