package examples_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"tempest/internal/analysis"
	"tempest/internal/ir"
	"tempest/internal/load"
)

// flopCase is the FLOP count a program must have, and where the number comes from.
type flopCase struct {
	flops int
	why   string
}

// an5dFLOPs is AN5D's Table 3 (docs/benchmarks.md, section 1): the FLOP counts the
// paper reports and Tempest must reproduce, so that GFLOP/s compare with the paper's.
func an5dFLOPs() map[string]flopCase {
	m := map[string]flopCase{
		"an5d/j2d5pt.stencil":     {10, "5 mul + 4 add + 1 div"},
		"an5d/j2d9pt.stencil":     {18, "9 mul + 8 add + 1 div"},
		"an5d/j2d9pt-gol.stencil": {18, "9 mul + 8 add + 1 div"},
		"an5d/gradient2d.stencil": {19, "8 sub + 4 mul + 4 add + sqrt + div + add"},
		"an5d/j3d27pt.stencil":    {54, "27 mul + 26 add + 1 div"},
	}
	for r := 1; r <= 4; r++ {
		k := 2*r + 1
		m[fmt.Sprintf("an5d/star2d%dr.stencil", r)] = flopCase{8*r + 1, fmt.Sprintf("8r+1, r=%d", r)}
		m[fmt.Sprintf("an5d/box2d%dr.stencil", r)] = flopCase{2*k*k - 1, fmt.Sprintf("2(2r+1)^2-1, r=%d", r)}
		m[fmt.Sprintf("an5d/star3d%dr.stencil", r)] = flopCase{12*r + 1, fmt.Sprintf("12r+1, r=%d", r)}
		m[fmt.Sprintf("an5d/box3d%dr.stencil", r)] = flopCase{2*k*k*k - 1, fmt.Sprintf("2(2r+1)^3-1, r=%d", r)}
	}
	return m
}

// otherFLOPs are the counts the other examples state in their header comments (where a paper
// counts differently, the comment says so). A change here is a change of what a program
// computes or of how Tempest counts, and the comment must follow.
func otherFLOPs() map[string]flopCase {
	m := map[string]flopCase{
		"sl/pathfinder.stencil": {0, "integer"},
		"sl/hotspot.stencil":    {12, "SL Figure 3"},
		"sl/plate.stencil":      {4, "3 add + 1 mul"},
		"sl/platehalo.stencil":  {8, "7 add + 1 mul"},
		"sl/platepp.stencil":    {8, "7 add + 1 mul"},
		"sl/cell.stencil":       {0, "integer"},

		"lift/stencil2d.stencil":    {17, "LIFT Table 2"},
		"lift/srad1.stencil":        {31, "Rodinia srad_cuda_1 (LIFT counts 35)"},
		"lift/srad2.stencil":        {14, "Rodinia srad_cuda_2 with recomputed differences (LIFT counts 13)"},
		"lift/hotspot2d.stencil":    {15, "Rodinia calculate_temp (LIFT lists 4)"},
		"lift/hotspot3d.stencil":    {17, "LIFT Table 2"},
		"lift/acoustic.stencil":     {13, "LIFT Table 2"},
		"lift/gaussian.stencil":     {50, "LIFT Table 2"},
		"lift/gradient.stencil":     {19, "as gradient2d (LIFT counts 1/sqrt as one: 18)"},
		"lift/jacobi2d5pt.stencil":  {10, "LIFT Table 2"},
		"lift/jacobi2d9pt.stencil":  {18, "LIFT Table 2"},
		"lift/jacobi3d7pt.stencil":  {13, "LIFT Table 2"},
		"lift/jacobi3d13pt.stencil": {25, "LIFT Table 2"},
		"lift/jacobi3d19pt.stencil": {37, "LIFT Table 2"},
		"lift/jacobi3d27pt.stencil": {54, "LIFT Table 2"},
		"lift/poisson.stencil":      {21, "LIFT Table 2"},
		"lift/heat.stencil":         {15, "LIFT Table 2"},

		"inplane/div.stencil":       {8, "3 sub + 3 mul + 2 add"},
		"inplane/grad.stencil":      {6, "3 sub + 3 mul"},
		"inplane/laplacian.stencil": {8, "2 mul + 6 add"},
		"inplane/poisson.stencil":   {8, "6 add/sub + 2 mul"},
		"inplane/upstream.stencil":  {22, "7 mul + 15 add"},

		"schafer-fey/jacobi7.stencil": {8, "2 mul + 6 add, as the paper counts"},

		"demos/grayscott.stencil": {24, "two grids"},
		"demos/wave.stencil":      {11, "leapfrog with damping"},
		"demos/life.stencil":      {0, "integer"},
	}
	// The peers of docs/benchmarks.md section "peers" (bench/gpu/peers): the counts of the
	// operations as written; where a peer counts two FLOPs per point, the header says so.
	for p, c := range map[string]flopCase{
		"peers/ebisu_2d5pt.stencil":    {10, "EBISU FPC"},
		"peers/ebisu_2ds9pt.stencil":   {18, "EBISU FPC"},
		"peers/ebisu_2d9pt.stencil":    {18, "EBISU FPC"},
		"peers/ebisu_2d25pt.stencil":   {50, "EBISU FPC"},
		"peers/ebisu_2d49pt.stencil":   {98, "EBISU FPC"},
		"peers/ebisu_3d7pt.stencil":    {13, "as written (EBISU FPC 14)"},
		"peers/ebisu_3d13pt.stencil":   {25, "as written (EBISU FPC 26)"},
		"peers/ebisu_3d17pt.stencil":   {28, "as written (EBISU FPC 34)"},
		"peers/ebisu_3d27pt.stencil":   {54, "EBISU FPC"},
		"peers/ebisu_poisson.stencil":  {21, "as written (EBISU FPC 38)"},
		"peers/perks_2d13pt.stencil":   {26, "as written (PERKS has no per-stencil count)"},
		"peers/perks_2d17pt.stencil":   {34, "as written (PERKS has no per-stencil count)"},
		"peers/perks_2d21pt.stencil":   {42, "as written (PERKS has no per-stencil count)"},
		"peers/perks_2ds25pt.stencil":  {50, "as written (PERKS has no per-stencil count)"},
		"peers/conv_1d1r.stencil":      {5, "3 mul + 2 add"},
		"peers/conv_1d2r.stencil":      {9, "5 mul + 4 add"},
		"peers/flash_1d7p.stencil":     {13, "7 mul + 6 add"},
		"peers/conv_star2d1r.stencil":  {9, "5 mul + 4 add"},
		"peers/conv_box2d1r.stencil":   {17, "9 mul + 8 add"},
		"peers/conv_star2d3r.stencil":  {25, "13 mul + 12 add"},
		"peers/conv_box2d3r.stencil":   {97, "49 mul + 48 add"},
		"peers/flash_star2d9p.stencil": {17, "9 mul + 8 add"},
		"peers/flash_box2d25p.stencil": {49, "25 mul + 24 add"},
		"peers/conv_star3d1r.stencil":  {13, "7 mul + 6 add"},
		"peers/conv_box3d1r.stencil":   {53, "27 mul + 26 add"},
	} {
		m[p] = c
	}
	for r := 1; r <= 6; r++ {
		m[fmt.Sprintf("inplane/inplane_order%d.stencil", 2*r)] = flopCase{7*r + 1, fmt.Sprintf("7r+1, r=%d (in-plane paper)", r)}
	}
	return m
}

// expected lists every program docs/benchmarks.md names, by path under examples/.
func expected() []string {
	var paths []string
	for p := range an5dFLOPs() {
		paths = append(paths, p)
	}
	for p := range otherFLOPs() {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	return paths
}

// nameExceptions are the programs whose stencil name is not their file name.
var nameExceptions = map[string]string{
	"an5d/j2d9pt-gol.stencil": "j2d9pt_gol",      // names are identifiers
	"inplane/poisson.stencil": "inplane_poisson", // lift/poisson.stencil is "poisson"
}

// programs returns the .stencil files under examples/, relative, with forward slashes.
func programs(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".stencil") {
			files = append(files, filepath.ToSlash(path))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no .stencil files found under examples/")
	}
	sort.Strings(files)
	return files
}

// TestExamplesCheck loads every example, in its own element type and with --type f64 and f32
// (every float program runs in float and double).
func TestExamplesCheck(t *testing.T) {
	for _, f := range programs(t) {
		p, err := load.File(f, load.Options{})
		if err != nil {
			t.Errorf("%s does not check:\n%v", f, err)
			continue
		}
		if !p.DefaultType.IsFloat() {
			continue
		}
		for _, typ := range []ir.Type{ir.F32, ir.F64} {
			if _, err := load.File(f, load.Options{DefaultType: &typ}); err != nil {
				t.Errorf("%s does not check with --type %s:\n%v", f, typ, err)
			}
		}
	}
}

// TestExpectedPrograms checks that every program of the benchmark suites exists.
func TestExpectedPrograms(t *testing.T) {
	for _, p := range expected() {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("benchmarks.md names %s, but examples/%s is missing", strings.TrimSuffix(filepath.Base(p), ".stencil"), p)
		}
	}
}

func checkFLOPs(t *testing.T, table map[string]flopCase) {
	t.Helper()
	paths := make([]string, 0, len(table))
	for p := range table {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, path := range paths {
		want := table[path]
		t.Run(path, func(t *testing.T) {
			p, err := load.File(path, load.Options{})
			if err != nil {
				t.Fatalf("%v", err)
			}
			s := analysis.Analyze(p)
			if s.FLOPs != want.flops {
				t.Errorf("%s: %d FLOP/cell, want %d (%s); ops %+v", path, s.FLOPs, want.flops, want.why, s.Ops)
			}
		})
	}
}

// TestAN5DFLOPs compares the analysis with AN5D's Table 3.
func TestAN5DFLOPs(t *testing.T) { checkFLOPs(t, an5dFLOPs()) }

// TestOtherFLOPs compares the analysis with the counts the other examples state.
func TestOtherFLOPs(t *testing.T) { checkFLOPs(t, otherFLOPs()) }

// TestNamesAndHeaders checks that stencil names are unique and match their files, and that
// every example starts with a comment that gives its FLOP count.
func TestNamesAndHeaders(t *testing.T) {
	seen := map[string]string{}
	for _, f := range programs(t) {
		p, err := load.File(f, load.Options{})
		if err != nil {
			continue // reported by TestExamplesCheck
		}
		want := strings.TrimSuffix(filepath.Base(f), ".stencil")
		if n, ok := nameExceptions[f]; ok {
			want = n
		}
		if p.Name != want {
			t.Errorf("%s: stencil is named %q, want %q", f, p.Name, want)
		}
		if other, dup := seen[p.Name]; dup {
			t.Errorf("%s and %s are both named %q; benchmark reports would mix them up", other, f, p.Name)
		}
		seen[p.Name] = f

		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var header []string
		for _, line := range strings.Split(string(text), "\n") {
			if !strings.HasPrefix(line, "//") {
				break
			}
			header = append(header, line)
		}
		h := strings.Join(header, "\n")
		if len(header) == 0 {
			t.Errorf("%s: does not start with a comment saying what it computes, its source and its FLOP count", f)
		} else if !strings.Contains(h, "FLOP") {
			t.Errorf("%s: the header comment does not state the FLOP count", f)
		}
	}
}
