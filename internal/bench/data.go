// Package bench holds what `tempest bench` needs besides the measuring itself (which lives in
// internal/driver, bench.go): the benchmark suites and their sizes, the recorded anchor
// numbers to beat, the report's data model and its renderers (terminal table, JSON, CSV and a
// self-contained HTML page with charts drawn by gonum.org/v1/plot).
package bench

import (
	"fmt"
	"math"
	"strings"
)

// Suite is one benchmark suite: the .stencil files of a directory of examples/ and the sizes
// they run at.
type Suite struct {
	Name string
	Dir  string // relative to the repository root
	// Interior is the interior extent per axis (cells updated, fixed rims excluded) for
	// programs of 1, 2 and 3 dimensions; the rim of the program is added around it.
	Interior map[int][]int
	// Cubes lists several n^3 sizes (Schafer-Fey); when set it replaces Interior for 3D.
	Cubes []int
	Steps int
	Type  string // element type forced on every program ("" : the program's own)
	Why   string // where the sizes come from
}

// Suites are the five suites of docs/benchmarks.md, in report order. Sizes are
// interior cells, slowest axis first.
//
//	suite        1D        2D            3D                        steps  type
//	an5d         -         16384^2       512^3                     1000   f32   (AN5D Table 3)
//	sl           2^20      8192^2        256^3                     1000   own   (ours: AN5D-like, fits any GPU)
//	lift         -         8192^2        256^3                     1000   own   (ours; LIFT uses 4096^2-8192^2 and 256^3)
//	inplane      -         -             256x512x512 (512x512x256) 1000   own   (in-plane paper)
//	schafer-fey  -         -             64^3,128^3,256^3,512^3    100    f64   (Schafer-Fey Figure 8)
var Suites = []Suite{
	{Name: "an5d", Dir: "examples/an5d", Interior: map[int][]int{2: {16384, 16384}, 3: {512, 512, 512}}, Steps: 1000, Type: "f32",
		Why: "AN5D Table 3: 16384^2 / 512^3 interior plus the fixed rim, 1000 steps, float"},
	{Name: "sl", Dir: "examples/sl", Interior: map[int][]int{1: {1 << 20}, 2: {8192, 8192}, 3: {256, 256, 256}}, Steps: 1000,
		Why: "chosen here: 2^20 (1D), 8192^2 (2D), 256^3 (3D), 1000 steps, each program's own type"},
	{Name: "lift", Dir: "examples/lift", Interior: map[int][]int{2: {8192, 8192}, 3: {256, 256, 256}}, Steps: 1000,
		Why: "chosen here: 8192^2 (2D), 256^3 (3D), 1000 steps, each program's own type"},
	{Name: "inplane", Dir: "examples/inplane", Interior: map[int][]int{3: {256, 512, 512}}, Steps: 1000,
		Why: "in-plane paper: 512x512x256 (written slowest axis first: 256x512x512), 1000 steps, each program's own type"},
	{Name: "schafer-fey", Dir: "examples/schafer-fey", Cubes: []int{64, 128, 256, 512}, Steps: 100, Type: "f64",
		Why: "Schafer-Fey: n^3 cubes 64..512, double, 100 steps, reported in GLUPS (= GCells/s)"},
}

// SuiteNames are the values of --suite.
func SuiteNames() []string {
	names := []string{}
	for _, s := range Suites {
		names = append(names, s.Name)
	}
	return append(names, "all")
}

// Select returns the suites named by --suite.
func Select(name string) ([]Suite, error) {
	if name == "all" {
		return Suites, nil
	}
	for _, s := range Suites {
		if s.Name == name {
			return []Suite{s}, nil
		}
	}
	return nil, fmt.Errorf("--suite %q: choose %s", name, strings.Join(SuiteNames(), ", "))
}

// Scale shrinks (or grows) an interior extent by f, keeping at least 4 cells.
func Scale(n int, f float64) int {
	if f <= 0 || f == 1 {
		return n
	}
	return max(4, int(math.Round(float64(n)*f)))
}

// Anchor is a recorded number to beat.
type Anchor struct {
	Stencil     string  `json:"stencil"`
	GFLOPPerS   float64 `json:"gflopPerSecond"`
	GCellsPerS  float64 `json:"gcellsPerSecond"`
	Source      string  `json:"source"`
	Measurement string  `json:"conditions"`
}

// AnchorSource and AnchorConditions describe the AN5D anchors.
const (
	AnchorSource     = "docs/benchmarks.md, section 1 (AN5D suite): AN5D's own generated code"
	AnchorConditions = "AN5D generated code built for sm_90, one H100 80GB HBM3, float, 16384^2 or 512^3 interior, 1000 steps, best of its five V100-tuned configurations"
)

// AN5DAnchors are the AN5D numbers to beat, copied from docs/benchmarks.md
// ("AN5D's own generated code, built for sm_90 and run on one H100 80GB HBM3 (float, 16384^2
// or 512^3, 1000 steps, best of its five V100-tuned configurations)"). The same document
// records, on that H100: copy bandwidth 2843 GB/s, a naive j2d5pt at 258 GCells/s, FP32 peak
// ~67 TFLOP/s. The test TestAnchorsMatchDesign holds this table equal to the document.
var AN5DAnchors = []Anchor{
	{Stencil: "star2d1r", GFLOPPerS: 13840, GCellsPerS: 1538},
	{Stencil: "star2d2r", GFLOPPerS: 14523, GCellsPerS: 854},
	{Stencil: "box2d1r", GFLOPPerS: 12427, GCellsPerS: 731},
	{Stencil: "box2d2r", GFLOPPerS: 23535, GCellsPerS: 480},
	{Stencil: "j2d5pt", GFLOPPerS: 15113, GCellsPerS: 1511},
	{Stencil: "j2d9pt", GFLOPPerS: 15217, GCellsPerS: 845},
	{Stencil: "j2d9pt-gol", GFLOPPerS: 13545, GCellsPerS: 753},
	{Stencil: "gradient2d", GFLOPPerS: 19718, GCellsPerS: 1038},
	{Stencil: "star3d1r", GFLOPPerS: 6124, GCellsPerS: 471},
	{Stencil: "box3d1r", GFLOPPerS: 15232, GCellsPerS: 287},
	{Stencil: "j3d27pt", GFLOPPerS: 15452, GCellsPerS: 286},
}

// AnchorFor is the anchor of a stencil of a suite (nil: none recorded).
func AnchorFor(suite, stencil string) *Anchor {
	if suite != "an5d" {
		return nil
	}
	for _, a := range AN5DAnchors {
		if a.Stencil == stencil {
			a.Source, a.Measurement = AnchorSource, AnchorConditions
			return &a
		}
	}
	return nil
}
