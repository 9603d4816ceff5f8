package driver

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tempest/internal/decomp"
	"tempest/internal/load"
)

// TestRunOverlapCUDA runs split runs with overlapped exchanges on a CUDA device and holds
// their --out bitwise equal to one device: sub-domains of one GPU split into bands (n5d on
// fixed edges, an exchange period twice its depth), and one GPU as one NCCL rank exchanging a
// periodic program's halos with itself, unsplit (auto) and in bands on the communicator's
// stream (--overlap on, also forced where the halos go through host memory). Skips without
// CUDA.
func TestRunOverlapCUDA(t *testing.T) {
	testRunOverlap(t, "cuda")
}

func testRunOverlap(t *testing.T, backend string) {
	needBackend(t, backend)
	for _, c := range []struct {
		name, file, size, plan string
		multi                  MultiOptions
		report                 string
	}{
		{"subdomains", "../../examples/an5d/j2d5pt.stencil", "203x67", "n5d:bt=4", MultiOptions{Subdomains: 3, Exchange: 8, Overlap: "on"},
			"overlap: on (--overlap on): 3 of 3 sub-domains split into bands of 8 rows"},
		{"nccl", "../../examples/demos/grayscott.stencil", "96x40", "pyramid:ph=2", MultiOptions{GPUs: 1}, ""},
		{"nccl_on", "../../examples/demos/grayscott.stencil", "96x40", "pyramid:ph=2", MultiOptions{GPUs: 1, Exchange: 4, Overlap: "on"},
			"overlap: on (--overlap on): 1 of 1 sub-domains split into bands of 4 rows"},
		{"gpus_on", "../../examples/demos/grayscott.stencil", "96x40", "pyramid:ph=2", MultiOptions{GPUs: 1, Overlap: "on"},
			"overlap: on (--overlap on): 1 of 1 sub-domains split into bands of 2 rows"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			o := RunOptions{File: c.file, Size: c.size, Steps: 23, Backend: backend, Plan: c.plan, Quiet: true}
			one := o
			one.Out = filepath.Join(dir, "one.npy")
			if _, err := Run(one, io.Discard, io.Discard); err != nil {
				t.Fatal(err)
			}
			split := o
			split.Multi = c.multi
			split.Out = filepath.Join(dir, "split.npy")
			var out bytes.Buffer
			if _, err := Run(split, &out, io.Discard); err != nil {
				t.Fatal(err)
			}
			report := c.report
			if report == "" && strings.Contains(out.String(), "NCCL") {
				report = "overlap: off (auto: through NCCL"
			}
			if report != "" && !strings.Contains(out.String(), report) {
				t.Errorf("no %q in the report:\n%s", report, out.String())
			}
			t.Logf("%s", out.String())
			compared := 0
			for _, grid := range []string{"", "_u", "_v"} {
				a, errA := os.ReadFile(filepath.Join(dir, "one"+grid+".npy"))
				b, errB := os.ReadFile(filepath.Join(dir, "split"+grid+".npy"))
				if errA != nil || errB != nil {
					continue
				}
				compared++
				if !bytes.Equal(a, b) {
					t.Errorf("%s: the overlapped split run wrote other values than one device", grid)
				}
			}
			if compared == 0 {
				t.Error("no output to compare")
			}
		})
	}
}

// TestOverlapLine holds the report of an overlapped run to what runs split: bands on slabs
// thick enough, none on thin slabs, and none on a grid of sub-domains (two-phase exchanges).
func TestOverlapLine(t *testing.T) {
	p, err := load.File("../../examples/demos/wave.stencil", load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	slabs, err := decomp.NewLayout(p, []int{96, 40}, 2, 4)
	if err != nil {
		t.Fatal(err)
	}
	thin, err := decomp.NewLayout(p, []int{14, 40}, 2, 4)
	if err != nil {
		t.Fatal(err)
	}
	grid, err := decomp.NewGrid(p, []int{96, 40}, 2, 2, 4)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		l    *decomp.Layout
		on   bool
		want string
	}{
		{slabs, false, "overlap: off (why)"},
		{slabs, true, "2 of 2 sub-domains split into bands of 4 rows"},
		{thin, true, "no sub-domain owns rows enough"},
		{grid, true, "a grid of sub-domains (--split) exchanges in two phases"},
	} {
		if got := overlapLine(c.l, decomp.All, c.on, "why", false, nil); !strings.Contains(got, c.want) {
			t.Errorf("overlapLine(%v, on=%v) = %q, want it to say %q", c.l.Shape, c.on, got, c.want)
		}
	}
}
