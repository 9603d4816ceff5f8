package model

import (
	"bufio"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"

	"tempest/internal/probe"
)

// spearman is the rank correlation of two samples (no ties expected).
func spearman(x, y []float64) float64 {
	rank := func(v []float64) []float64 {
		idx := make([]int, len(v))
		for i := range idx {
			idx[i] = i
		}
		sort.Slice(idx, func(a, b int) bool { return v[idx[a]] < v[idx[b]] })
		r := make([]float64, len(v))
		for i, j := range idx {
			r[j] = float64(i)
		}
		return r
	}
	rx, ry := rank(x), rank(y)
	n := float64(len(x))
	var d2 float64
	for i := range rx {
		d2 += (rx[i] - ry[i]) * (rx[i] - ry[i])
	}
	return 1 - 6*d2/(n*(n*n-1))
}

// TestModelAgainstH100 compares the models with the measurements of every plan on the AN5D
// suite recorded in docs/performance.md (testdata/h100-plans.txt), using the H100's
// properties and its measured copy bandwidth. It guards the ranking, not the absolute times:
// the rank correlation over all stencils and plans must stay high, and the plan the model
// ranks first must be within 1.5x of the best measured for every stencil.
func TestModelAgainstH100(t *testing.T) {
	f, err := os.Open("testdata/h100-plans.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type row struct {
		stencil, plan string
		secs          float64
	}
	var rows []row
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fs := strings.Fields(line)
		v, _ := strconv.ParseFloat(fs[2], 64)
		rows = append(rows, row{fs[0], fs[1], v})
	}
	dev := h100()
	dev.L2GBs, dev.SharedF32GBs, dev.FMAF32GFLOPs = 0, 0, 0 // estimates: only copy bandwidth was measured
	dev.Device.MemClockKHz, dev.Device.MemBusWidthBits = 2619000, 5120
	var allP, allM []float64
	by := map[string][]int{}
	var order []string
	for i, r := range rows {
		if by[r.stencil] == nil {
			order = append(order, r.stencil)
		}
		by[r.stencil] = append(by[r.stencil], i)
	}
	worst := 1.0
	for _, st := range order {
		p, s := prog(t, st)
		shape := make([]int, p.Dims())
		for a := range shape {
			shape[a] = 16384 + 2*s.Radius[a]
			if p.Dims() == 3 {
				shape[a] = 512 + 2*s.Radius[a]
			}
		}
		var ps, ms []float64
		line := st
		bestP, bestPi, bestM := math.Inf(1), 0, math.Inf(1)
		for _, i := range by[st] {
			pl := mustParse(t, rows[i].plan, p)
			pr, err := Predict(Input{Prog: p, Sum: s, Plan: pl, Shape: shape, Steps: 1000, Dev: dev})
			if err != nil {
				t.Fatal(err)
			}
			ps, ms = append(ps, pr.Seconds), append(ms, rows[i].secs)
			line += " " + rows[i].plan + "=" + strconv.FormatFloat(pr.Seconds, 'f', 2, 64) + "/" + strconv.FormatFloat(rows[i].secs, 'f', 2, 64)
			if pr.Seconds < bestP {
				bestP, bestPi = pr.Seconds, i
			}
			bestM = math.Min(bestM, rows[i].secs)
		}
		allP, allM = append(allP, ps...), append(allM, ms...)
		ratio := rows[bestPi].secs / bestM
		worst = math.Max(worst, ratio)
		t.Logf("%s\n    spearman %.2f, model's pick %s at %.2fx the best measured", line, spearman(ps, ms), rows[bestPi].plan, ratio)
	}
	rho := spearman(allP, allM)
	t.Logf("all: spearman %.3f over %d plans; worst pick %.2fx", rho, len(allP), worst)
	_ = probe.Median
	if rho < 0.6 {
		t.Errorf("rank correlation %.3f < 0.6", rho)
	}
	if worst > 1.5 {
		t.Errorf("the model's pick is %.2fx slower than the best measured plan for some stencil", worst)
	}
}
