package model

import (
	"bufio"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"tempest/internal/analysis"
	"tempest/internal/ir"
	"tempest/internal/load"
)

// TestInPlaneModelAgainstH100 compares the in-plane model with the forward-plane and in-plane
// plans measured on the H100 (testdata/h100-inplane.txt): over all of them the rank
// correlation must stay high, and for every stencil and type the plan the model ranks first
// must be within 1.3x of the best measured one (the tuner times its top candidates for the rest).
func TestInPlaneModelAgainstH100(t *testing.T) {
	f, err := os.Open("testdata/h100-inplane.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type row struct {
		stencil, typ, plan string
		gcells             float64
	}
	var rows []row
	var order []string
	by := map[string][]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fs := strings.Fields(line)
		v, err := strconv.ParseFloat(fs[3], 64)
		if err != nil {
			t.Fatal(err)
		}
		k := fs[0] + " " + fs[1]
		if by[k] == nil {
			order = append(order, k)
		}
		by[k] = append(by[k], len(rows))
		rows = append(rows, row{fs[0], fs[1], fs[2], v})
	}
	dev := h100Probed()
	shape := []int{256, 512, 512}
	var allP, allM []float64
	worst := 1.0
	for _, k := range order {
		r0 := rows[by[k][0]]
		opt := load.Options{}
		if r0.typ == "f64" {
			f64 := ir.F64
			opt.DefaultType = &f64
		}
		p, err := load.File("../../examples/inplane/"+r0.stencil+".stencil", opt)
		if err != nil {
			t.Fatal(err)
		}
		s := analysis.Analyze(p)
		line := k
		bestP, bestPi, bestM := 0.0, 0, 0.0
		for _, i := range by[k] {
			pr, err := Predict(Input{Prog: p, Sum: s, Plan: mustParse(t, rows[i].plan, p), Shape: shape, Steps: 100, Dev: dev})
			if err != nil {
				t.Fatal(err)
			}
			g := float64(shape[0]*shape[1]*shape[2]) * 100 / pr.Seconds / 1e9
			allP, allM = append(allP, g), append(allM, rows[i].gcells)
			line += "\n    " + rows[i].plan + " model " + strconv.FormatFloat(g, 'f', 1, 64) + " measured " + strconv.FormatFloat(rows[i].gcells, 'f', 1, 64) + " (" + string(pr.Bottleneck) + ")"
			if g > bestP {
				bestP, bestPi = g, i
			}
			bestM = math.Max(bestM, rows[i].gcells)
		}
		ratio := bestM / rows[bestPi].gcells
		worst = math.Max(worst, ratio)
		t.Logf("%s\n    pick %s at %.2fx below the best", line, rows[bestPi].plan, ratio)
	}
	rho := spearman(allP, allM)
	t.Logf("all: spearman %.3f over %d plans; worst pick %.2fx", rho, len(allP), worst)
	if rho < 0.8 {
		t.Errorf("rank correlation %.3f < 0.8", rho)
	}
	if worst > 1.3 {
		t.Errorf("the model's pick is %.2fx slower than the best measured plan for some stencil", worst)
	}
}
