package driver

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRunSplit2D runs `tempest run` over two-dimensional grids of CPU engine sub-domains
// (--split PxQ, 2d, auto) and holds the written grids byte-identical to the run on one
// device; the report names the grid, both halos and, for 2d and auto, the model's choice.
func TestRunSplit2D(t *testing.T) {
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
	for _, c := range []struct {
		m    MultiOptions
		want []string
	}{
		{MultiOptions{Subdomains: 4, Split: "2x2", Exchange: 2}, []string{"4 sub-domains as a 2x2 grid along y and x", "halos: 2 rows along y (reach 1) and 2 cells along x (reach 1), exchange period 2 steps, exchanged 6 times in two phases"}},
		{MultiOptions{Subdomains: 6, Split: "3x2", Exchange: 3}, []string{"as a 3x2 grid"}},
		{MultiOptions{Subdomains: 3, Split: "1x3"}, []string{"as a 1x3 grid"}},
		{MultiOptions{Subdomains: 4, Split: "2d"}, []string{"split: 2d chose 2x2 (predicted per 1000 steps over PCIe 4.0 x16: 2x2 "}},
		{MultiOptions{Subdomains: 4, Split: "auto"}, []string{"split: auto chose ", "4x1 ", "1x4 "}},
	} {
		o := base
		o.Multi = c.m
		o.Out = filepath.Join(dir, "split.npy")
		var out bytes.Buffer
		if _, err := Run(o, &out, io.Discard); err != nil {
			t.Fatalf("--split %s: %v", c.m.Split, err)
		}
		for _, w := range c.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("--split %s: report lacks %q:\n%s", c.m.Split, w, out.String())
			}
		}
		if got, _ := os.ReadFile(o.Out); !bytes.Equal(got, want) {
			t.Errorf("--split %s wrote other values than one device", c.m.Split)
		}
	}
}

func TestRunSplit2DErrors(t *testing.T) {
	for _, c := range []struct {
		file string
		m    MultiOptions
		want string
	}{
		{"../../examples/an5d/j2d5pt.stencil", MultiOptions{Subdomains: 4, Split: "3x2"}, "--split 3x2 makes 6 sub-domains but the run has 4"},
		{"../../examples/an5d/j2d5pt.stencil", MultiOptions{Subdomains: 4, Split: "diagonal"}, "give 1d (slabs along the slowest axis), 2d"},
		{"../../examples/an5d/j2d5pt.stencil", MultiOptions{Split: "2x2"}, "--split 2x2 belongs to split runs"},
		{"../../examples/an5d/j2d5pt.stencil", MultiOptions{Subdomains: 8, Split: "1x8", Exchange: 6}, "owns 4 cells along x but its neighbours need halos of 6"},
		{"../../examples/an5d/j2d5pt.stencil", MultiOptions{Subdomains: 5, Split: "2d"}, "5 sub-domains make no grid with two or more along each axis"},
		{"../../examples/an5d/j2d5pt.stencil", MultiOptions{Subdomains: 64, Split: "auto", Exchange: 8}, "no grid of 64 sub-domains fits"},
		{"../../examples/sl/pathfinder.stencil", MultiOptions{Subdomains: 2, Split: "2d"}, "pathfinder is one-dimensional"},
		{"../../examples/sl/pathfinder.stencil", MultiOptions{Subdomains: 2, Split: "1x2"}, "pathfinder is one-dimensional"},
	} {
		o := RunOptions{File: c.file, Size: "32x32", Steps: 3, Backend: "cpu", Quiet: true, Multi: c.m}
		if strings.Contains(c.file, "pathfinder") {
			o.Size = ""
		}
		_, err := Run(o, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.m, err, c.want)
		}
	}
}

// TestRunSplit2DRanks runs two processes (goroutines) meeting at a coordinator: rank 0 asks
// for a 1x2 grid, rank 1 gives no --split and follows rank 0's layout; the columns travel
// through the coordinator and rank 0's output equals one device's.
func TestRunSplit2DRanks(t *testing.T) {
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
	outs := make([]bytes.Buffer, 2)
	_, errs := runRanks(t, 2, func(r int, addr string) RunOptions {
		o := base
		o.Multi = MultiOptions{Rank: r, Ranks: 2, Coordinator: addr, Timeout: 20 * time.Second, Exchange: 2}
		if r == 0 {
			o.Multi.Split = "1x2"
		}
		o.Out = filepath.Join(dir, fmt.Sprintf("rank%d.npy", r))
		return o
	}, func(r int) io.Writer { return &outs[r] })
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	for r := range outs {
		if !strings.Contains(outs[r].String(), "as a 1x2 grid along y and x") {
			t.Errorf("rank %d's report:\n%s", r, outs[r].String())
		}
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "rank0.npy")); !bytes.Equal(got, want) {
		t.Error("two processes on a 1x2 grid wrote other values than one device")
	}
}
