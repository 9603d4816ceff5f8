package lower

import (
	"bufio"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"tempest/internal/ir"
	"tempest/internal/kir"
	"tempest/internal/load"
	"tempest/internal/plan"
	"tempest/internal/testkit"
)

// listedPlans reads every plan of bench/gpu/lists (the tuned tables and every sweep of a plan
// setting): the program, its type (f64 where the list's name says so) and the plan, once each.
func listedPlans(t *testing.T) [][3]string {
	t.Helper()
	files, err := filepath.Glob("../../bench/gpu/lists/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no plan lists: %v", err)
	}
	seen := map[[3]string]bool{}
	var out [][3]string
	for _, f := range files {
		typ := "f32"
		if strings.Contains(filepath.Base(f), "f64") {
			typ = "f64"
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(strings.NewReader(string(b)))
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 2 || strings.HasPrefix(fields[0], "#") {
				continue
			}
			if len(fields) >= 3 && strings.Contains(fields[2], ":") {
				fields = fields[1:] // "label program plan"
			}
			if _, err := os.Stat(examplePath(fields[0])); err != nil {
				continue // a label of a build with source edits (gen-neighbour-sync.txt)
			}
			k := [3]string{fields[0], typ, fields[1]}
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return strings.Join(out[i][:], " ") < strings.Join(out[j][:], " ")
	})
	return out
}

// TestListedPlanKernels is the safety net of the lowering's restructuring: the SHA-256 of the
// CUDA and OpenCL kernels of every plan the GPU sweeps and tuned tables name, at the size they
// ran (16386^2, 514^3), against testdata/listed_kernels.sha256 (-update rewrites it). A change
// that must change kernels shows here plan by plan; a refactor must change none.
func TestListedPlanKernels(t *testing.T) {
	testkit.LongTest(t)
	progs := map[[2]string]*ir.Program{}
	list := listedPlans(t)
	for _, k := range list {
		if progs[[2]string{k[0], k[1]}] != nil {
			continue
		}
		ty := ir.F32
		if k[1] == "f64" {
			ty = ir.F64
		}
		p, err := load.File(examplePath(k[0]), load.Options{DefaultType: &ty})
		if err != nil {
			t.Fatalf("%s: %v", k[0], err)
		}
		progs[[2]string{k[0], k[1]}] = p
	}
	lines := make([]string, len(list))
	var wg sync.WaitGroup
	next := atomic.Int64{}
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(list); i = int(next.Add(1) - 1) {
				lines[i] = listedKernels(list[i], progs[[2]string{list[i][0], list[i][1]}])
			}
		})
	}
	wg.Wait()
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	got := b.String()
	const golden = "testdata/listed_kernels.sha256"
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/lower -run ListedPlanKernels -update)", err)
	}
	if string(want) != got {
		w, g := strings.Split(string(want), "\n"), strings.Split(got, "\n")
		n := 0
		for i := range max(len(w), len(g)) {
			if i >= len(w) || i >= len(g) || w[i] != g[i] {
				if n++; n <= 10 {
					t.Errorf("line %d:\n  want %s\n  got  %s", i+1, at(w, i), at(g, i))
				}
			}
		}
		t.Errorf("%d lines differ from %s (run with -update only where kernels are meant to change)", n, golden)
	}
}

// listedKernels is one line of the golden file: the plan and its kernels' hashes, or why
// the plan is refused.
func listedKernels(k [3]string, p *ir.Program) string {
	line := fmt.Sprintf("%s %s %s", k[0], k[1], k[2])
	pl, err := plan.Parse(k[2], p)
	if err != nil {
		return fmt.Sprintf("%s refused: %v", line, err)
	}
	shape := []int{16386, 16386}
	if p.Dims() == 3 {
		shape = []int{514, 514, 514}
	}
	l, err := Lower(p, shape, make([]int, len(p.Grids)), pl)
	if err != nil {
		return fmt.Sprintf("%s refused: %v", line, err)
	}
	line += fmt.Sprintf(" cuda %x", sha256.Sum256([]byte(kir.Print(l.Module, kir.CUDA))))
	// OpenCL where the plan is valid there (no async copies, chains).
	opencl := plan.Limits{MaxThreadsPerBlock: 1024, MaxSharedPerBlock: 1 << 30, NoAsync: true, NoChain: true}
	if pl.Validate(p, opencl, 0) == nil {
		line += fmt.Sprintf(" opencl %x", sha256.Sum256([]byte(kir.Print(l.Module, kir.OpenCL))))
	}
	return line
}

// examplePath is the AN5D example a list names (j2d9pt_gol is j2d9pt-gol.stencil).
func examplePath(name string) string {
	return "../../examples/an5d/" + strings.ReplaceAll(name, "_", "-") + ".stencil"
}

func at(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "(none)"
}
