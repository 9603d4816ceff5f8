package driver

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"tempest/internal/decomp"
	"tempest/internal/gpu"
	"tempest/internal/load"
	"tempest/internal/plan"
	"tempest/internal/tune"
)

// TestRunSplit runs `tempest run` split into sub-domains on the CPU engine, in one process and
// as two processes meeting at a coordinator, and holds the written grids byte-identical to
// the run on one device.
func TestRunSplit(t *testing.T) {
	dir := t.TempDir()
	base := RunOptions{File: "../../examples/demos/wave.stencil", Size: "40x24", Steps: 13, Backend: "cpu", Quiet: true}
	one := base
	one.Out = filepath.Join(dir, "one.npy")
	if _, err := Run(one, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(one.Out)
	if err != nil {
		t.Fatal(err)
	}

	split := base
	split.Out = filepath.Join(dir, "split.npy")
	split.Multi = MultiOptions{Subdomains: 3, Exchange: 2}
	split.Verify = true
	var out bytes.Buffer
	res, err := Run(split, &out, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "3 sub-domains along y") || !strings.Contains(out.String(), "halos: 2 rows (reach 1 x exchange period 2 steps), exchanged 6 times") {
		t.Errorf("report:\n%s", out.String())
	}
	if res.MaxAbsErr == nil || *res.MaxAbsErr != 0 {
		t.Errorf("verify: max abs error %v, want 0", res.MaxAbsErr)
	}
	if got, _ := os.ReadFile(split.Out); !bytes.Equal(got, want) {
		t.Error("--subdomains 3 wrote other values than one device")
	}
	if !strings.Contains(out.String(), "overlap: off (auto: these halo copies finish before compute goes on") {
		t.Errorf("--subdomains without --overlap should not overlap:\n%s", out.String())
	}

	// The same split into bands and interiors.
	split.Multi.Overlap = "on"
	split.Out = filepath.Join(dir, "overlap.npy")
	out.Reset()
	if res, err = Run(split, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "overlap: on (--overlap on): 3 of 3 sub-domains split into bands of 2 rows") {
		t.Errorf("report:\n%s", out.String())
	}
	if res.MaxAbsErr == nil || *res.MaxAbsErr != 0 {
		t.Errorf("verify with --overlap on: max abs error %v, want 0", res.MaxAbsErr)
	}
	if got, _ := os.ReadFile(split.Out); !bytes.Equal(got, want) {
		t.Error("--subdomains 3 --overlap on wrote other values than one device")
	}

	for _, overlap := range []string{"off", "auto"} { // auto overlaps relayed exchanges
		_, errs := runRanks(t, 2, func(r int, addr string) RunOptions {
			o := base
			o.Multi = MultiOptions{Rank: r, Ranks: 2, Coordinator: addr, Timeout: 20 * time.Second, Overlap: overlap}
			o.Out = filepath.Join(dir, fmt.Sprintf("rank%d_%s.npy", r, overlap))
			return o
		}, nil)
		for r, err := range errs {
			if err != nil {
				t.Fatalf("--overlap %s, rank %d: %v", overlap, r, err)
			}
		}
		if got, _ := os.ReadFile(filepath.Join(dir, "rank0_"+overlap+".npy")); !bytes.Equal(got, want) {
			t.Errorf("two processes (--overlap %s) wrote other values than one device", overlap)
		}
		if _, err := os.Stat(filepath.Join(dir, "rank1_"+overlap+".npy")); err == nil {
			t.Error("rank 1 wrote an output; only rank 0 should")
		}
	}
}

func TestRunSplitErrors(t *testing.T) {
	cases := []struct {
		file string
		m    MultiOptions
		want string
	}{
		{"../../examples/an5d/j2d5pt.stencil", MultiOptions{GPUs: 2, Subdomains: 2}, "choose one"},
		{"../../examples/an5d/j2d5pt.stencil", MultiOptions{Ranks: 2}, "give --coordinator HOST:PORT"},
		{"../../examples/an5d/j2d5pt.stencil", MultiOptions{Ranks: 2, Rank: 2, Coordinator: "127.0.0.1:1"}, "ranks are numbered 0 to 1"},
		{"../../examples/an5d/j2d5pt.stencil", MultiOptions{Rank: 1}, "give --ranks too"},
		{"../../examples/an5d/j2d5pt.stencil", MultiOptions{GPUs: 2}, "--gpus 2 --backend cpu"},
		{"../../examples/an5d/j2d5pt.stencil", MultiOptions{Exchange: 4}, "give --gpus, --subdomains or --ranks too"},
		{"../../examples/an5d/j2d5pt.stencil", MultiOptions{Subdomains: 40}, "use at most 32"},
		{"../../examples/an5d/j2d5pt.stencil", MultiOptions{Subdomains: 8, Exchange: 6}, "use fewer sub-domains, a shorter exchange period or a larger --size"},
		{"../../examples/an5d/j2d5pt.stencil", MultiOptions{Subdomains: 2, Overlap: "maybe"}, `--overlap "maybe": choose auto, on, off or ranges`},
		{"../../examples/an5d/j2d5pt.stencil", MultiOptions{Overlap: "on"}, "--overlap on belongs to split runs"},
		{"../../examples/an5d/j2d5pt.stencil", MultiOptions{Subdomains: 2, Overlap: "ranges"}, "--overlap ranges: the CPU engine's sub-domains run whole"},
	}
	for _, c := range cases {
		o := RunOptions{File: c.file, Size: "32x32", Steps: 3, Backend: "cpu", Quiet: true, Multi: c.m}
		_, err := Run(o, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.m, err, c.want)
		}
	}
}

// TestBenchSplit runs `tempest bench --gpus 1` on OpenCL (PoCL in CI) on a tiny j2d5pt and
// checks that the row carries a measurement and both predictions.
func TestBenchSplit(t *testing.T) {
	o := BenchOptions{Suite: "an5d", Backend: "opencl", Plan: "n5d:bt=2", Stencils: []string{"j2d5pt"}, SizeScale: 0.004, Steps: 6, Reps: 1, Root: "../..", GPUs: 1, Link: "pcie5"}
	var out bytes.Buffer
	_, err := Bench(o, &out, io.Discard)
	if err != nil && strings.Contains(err.Error(), "opencl") {
		t.Skipf("no OpenCL: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	var row string
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(line, "| j2d5pt |") {
			row = line
		}
	}
	if f := strings.Split(row, "|"); len(f) != 14 || strings.TrimSpace(f[5]) != "1x1" || strings.TrimSpace(f[9]) == "-" || !strings.Contains(out.String(), "PCIe 5.0 x16") ||
		!strings.Contains(out.String(), "exchanges not overlapped (auto:") {
		t.Errorf("bench --gpus 1 printed:\n%s", out.String())
	}
	o.Link = "carrier-pigeon"
	if _, err := Bench(o, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "choose ndr, nvlink4, pcie4, pcie5") {
		t.Errorf("unknown link: %v", err)
	}
}

// TestRanksAgreeOnTheRun: ranks of a multi-process run started with different options refuse
// the run before any work, every one of them, naming the rank and the option; a rank started
// without --verify where rank 0 verifies would otherwise wait for gathers that never come.
func TestRanksAgreeOnTheRun(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(o *RunOptions)
		want string
	}{
		{"seed", func(o *RunOptions) { o.Seed = 7 }, "seed 7 (rank 0: seed 1)"},
		{"steps", func(o *RunOptions) { o.Steps = 9 }, "steps 9 (rank 0: steps 8)"},
		{"size", func(o *RunOptions) { o.Size = "24x20" }, "size 24x20 (rank 0: size 20x20)"},
		{"param", func(o *RunOptions) { o.Params = []string{"c=0.3"} }, "param c=0.3"},
		{"exchange", func(o *RunOptions) { o.Multi.Exchange = 2 }, "exchange 2 (rank 0: exchange 0)"},
		{"init", func(o *RunOptions) { o.Inits = []string{"u=random:4"} }, "initial data sha256"},
		{"split", func(o *RunOptions) { o.Multi.Split = "2x1" }, "split 2x1 (rank 0: split (none))"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, errs := runRanks(t, 2, func(r int, addr string) RunOptions {
				o := RunOptions{File: "../../examples/demos/wave.stencil", Size: "20x20", Steps: 8, Backend: "cpu", Quiet: true,
					Multi: MultiOptions{Rank: r, Ranks: 2, Coordinator: addr, Timeout: 20 * time.Second}}
				if r == 1 {
					c.edit(&o)
				}
				return o
			}, nil)
			for r, err := range errs {
				if err == nil || !strings.Contains(err.Error(), "rank 1 was started with another run than rank 0: "+c.want) {
					t.Errorf("rank %d: %v", r, err)
				}
			}
		})
	}
}

// runRanks runs the ranks of a multi-process run as goroutines, rank r with the options opts
// gives it and the coordinator's address (a free local port), its report to stdout(r) (nil:
// discarded), and returns their results and errors.
func runRanks(t *testing.T, n int, opts func(r int, addr string) RunOptions, stdout func(r int) io.Writer) ([]*Result, []error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("no local TCP: %v", err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var wg sync.WaitGroup
	res, errs := make([]*Result, n), make([]error, n)
	for r := 0; r < n; r++ {
		o := opts(r, addr)
		w := io.Discard
		if stdout != nil {
			w = stdout(r)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[r], errs[r] = Run(o, w, io.Discard)
		}()
	}
	wg.Wait()
	return res, errs
}

// TestRunSplitRangesOpenCL runs whole sub-domains over ranges of planes (--overlap ranges, n5d
// plans) on OpenCL (PoCL in CI): local copies run no exchange beside a launch, which the report
// says, the plan keeps rimblocks, and the output is bitwise one device's (TestRangedPlanDrops:
// the settings it drops).
func TestRunSplitRangesOpenCL(t *testing.T) {
	needOpenCL(t)
	for _, c := range []struct{ plan, kept, dropped string }{
		{"n5d:bt=2,rimblocks=true", "rimblocks=true", ""},
	} {
		dir := t.TempDir()
		whole := RunOptions{File: "../../examples/an5d/j2d5pt.stencil", Size: "41x24", Steps: 13, Backend: "opencl", Plan: c.plan, Quiet: true}
		whole.Out = filepath.Join(dir, "whole.npy")
		if _, err := Run(whole, io.Discard, io.Discard); err != nil {
			t.Fatal(err)
		}
		rng := whole
		rng.Multi = MultiOptions{Subdomains: 3, Exchange: 2, Overlap: "ranges"}
		rng.Out = filepath.Join(dir, "ranges.npy")
		var out bytes.Buffer
		if _, err := Run(rng, &out, io.Discard); err != nil {
			t.Fatal(err)
		}
		report := out.String()
		ok := strings.Contains(report, "overlap: ranges, but only NCCL's exchanges (each sub-domain posting its own) run beside a launch") &&
			strings.Contains(report, "ranges=true") && strings.Contains(report, c.kept)
		if c.dropped != "" {
			ok = ok && strings.Contains(report, "the plan goes without "+c.dropped+", whose chunks") && !strings.Contains(report, c.dropped+"=true")
		} else {
			ok = ok && !strings.Contains(report, "the plan goes without")
		}
		if !ok {
			t.Errorf("%s --overlap ranges report:\n%s", c.plan, report)
		}
		a, _ := os.ReadFile(whole.Out)
		if b, _ := os.ReadFile(rng.Out); len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("%s: --subdomains 3 --overlap ranges wrote other values than one device", c.plan)
		}
	}
}

// TestRangedPlanDrops: --overlap ranges runs the sub-domains' plan without rimcut and chain,
// whose pieces and flags follow the whole axis, keeps rimblocks, and the report names what it
// dropped.
func TestRangedPlanDrops(t *testing.T) {
	p, err := load.File("../../examples/an5d/j2d5pt.stencil", load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ plan, want string }{
		{"n5d:bt=2,rimcut=true", "; the plan goes without rimcut, whose chunks follow the whole axis"},
		{"n5d:bt=2,rimblocks=true,chain=true", "; the plan goes without chain, whose chunks follow the whole axis"},
		{"n5d:bt=2,rimblocks=true", ""},
	} {
		pl, err := plan.Parse(c.plan, p)
		if err != nil {
			t.Fatal(err)
		}
		part, err := decomp.RangedPlan(pl)
		if err != nil {
			t.Fatal(err)
		}
		if got := dropped(pl, part); got != c.want || !part.Ranges || part.RimCut || part.Chain || part.RimBlocks != pl.RimBlocks {
			t.Errorf("%s: ranged as %s, reported %q, want %q", c.plan, part, got, c.want)
		}
	}
}

// TestRunSplitCachedAlign: a cached plan that pads its rows (align) runs split with its rows
// padded and writes what one device writes; so does the plan given with --plan.
func TestRunSplitCachedAlign(t *testing.T) {
	needOpenCL(t)
	t.Setenv("TEMPEST_CACHE_DIR", t.TempDir())
	file, size := "../../examples/an5d/j2d5pt.stencil", "130x67"
	dev, err := gpu.Open("opencl")
	if err != nil {
		t.Fatal(err)
	}
	props := dev.Props()
	dev.Close()
	pr, err := Prepare(RunOptions{File: file, Size: size}, 1.5)
	if err != nil {
		t.Fatal(err)
	}
	cache, err := tune.OpenCache("")
	if err != nil {
		t.Fatal(err)
	}
	cached := "n5d:bx=16,by=1,bt=2,rx=2,edges=true,align=true,chunk=16"
	if err := cache.Put(tune.KeyFor(pr.Prog, pr.State.Shape, props, Version, false),
		tune.Record{Plan: cached, Status: tune.Measured, SecondsPerStep: 1e-3, Shape: pr.State.Shape, When: time.Now()}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	whole := RunOptions{File: file, Size: size, Steps: 9, Backend: "opencl", Quiet: true, Out: filepath.Join(dir, "whole.npy")}
	res, err := Run(whole, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Plan, "align=true") {
		t.Fatalf("one device ran %s, want the cached %s", res.Plan, cached)
	}
	split := whole
	split.Multi, split.Out = MultiOptions{Subdomains: 2}, filepath.Join(dir, "split.npy")
	given := split
	given.Plan, given.Out = cached, filepath.Join(dir, "given.npy")
	a, _ := os.ReadFile(whole.Out)
	for _, o := range []RunOptions{split, given} {
		res, err = Run(o, io.Discard, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(res.Plan, "align=true") {
			t.Errorf("split run's plan %s, want %s", res.Plan, cached)
		}
		if b, _ := os.ReadFile(o.Out); len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("the split run (--plan %q) wrote other values than one device", o.Plan)
		}
	}
}
