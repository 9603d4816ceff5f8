package driver

import (
	"fmt"
	"strconv"
	"strings"

	"tempest/internal/decomp"
	"tempest/internal/gpu"
	"tempest/internal/model"
	"tempest/internal/plan"
)

// splitMode is a parsed --split: "1d", "2d", "auto" or an explicit grid of Rows x Cols parts.
type splitMode struct {
	mode       string
	rows, cols int
}

// parseSplit reads --split ("" is 1d).
func parseSplit(s string) (splitMode, error) {
	switch s {
	case "", "1d":
		return splitMode{mode: "1d"}, nil
	case "2d", "auto":
		return splitMode{mode: s}, nil
	}
	if a, b, ok := strings.Cut(s, "x"); ok {
		r, err1 := strconv.Atoi(a)
		c, err2 := strconv.Atoi(b)
		if err1 == nil && err2 == nil && r > 0 && c > 0 {
			return splitMode{mode: "grid", rows: r, cols: c}, nil
		}
	}
	return splitMode{}, fmt.Errorf("--split %q: give 1d (slabs along the slowest axis), 2d (a grid over the two slowest axes), PxQ (e.g. 2x2) or auto (the split model decides)", s)
}

// splitLink is the interconnect the split model assumes for a run's halos: NVLink between
// CUDA devices and processes, PCIe where they cross host memory or stay on one device.
func splitLink(m MultiOptions, cuda bool) model.Link {
	if cuda && (m.GPUs > 0 || m.Ranks > 0) {
		return model.Links["nvlink4"]
	}
	return model.Links["pcie4"]
}

// splitLayout lays the run's parts out as --split asks: slabs, an explicit grid, or the grid
// the split model picks (2d: among grids with two or more parts on each axis; auto: slabs
// too). It returns the layout and, where the model chose, a line saying what it predicted.
// Compute is priced from the plan's model on the device's profile where there is one, else
// at a nominal 1 GCell/s (only the ratio of compute to exchanges matters to the choice), and
// halos over link.
func splitLayout(m MultiOptions, pr *Prepared, parts, period int, pl plan.Plan, dev gpu.Device, link model.Link) (*decomp.Layout, string, error) {
	in := model.SplitInput{Prog: pr.Prog, Shape: pr.State.Shape, Steps: 1000, Parts: parts, Period: period, Link: link, Rate: 1e9}
	if dev != nil {
		if prof := loadDeviceProfile(dev, false, nil); prof != nil {
			in.Rate, in.Plan, in.Dev = 0, pl, prof
		}
	}
	return layoutFor(m.Split, in)
}

// layoutFor lays out in.Parts parts of in.Prog over in.Shape as split (--split) asks, the
// split model pricing the candidates for 2d and auto with in.
func layoutFor(split string, in model.SplitInput) (*decomp.Layout, string, error) {
	sm, err := parseSplit(split)
	if err != nil {
		return nil, "", err
	}
	p, shape, parts, period := in.Prog, in.Shape, in.Parts, in.Period
	switch sm.mode {
	case "1d":
		l, err := decomp.NewLayout(p, shape, parts, period)
		return l, "", err
	case "grid":
		if sm.rows*sm.cols != parts {
			return nil, "", fmt.Errorf("--split %dx%d makes %d sub-domains but the run has %d (--gpus, --subdomains or --ranks): make them agree", sm.rows, sm.cols, sm.rows*sm.cols, parts)
		}
		l, err := decomp.NewGrid(p, shape, sm.rows, sm.cols, period)
		return l, "", err
	}
	if p.Dims() < 2 && sm.mode == "2d" {
		return nil, "", fmt.Errorf("--split 2d: %s is one-dimensional: it splits along %s alone (use --split 1d)", p.Name, p.Axes[0])
	}
	if err := decomp.Splittable(p); err != nil {
		return nil, "", err
	}
	best, all, err := model.ChooseGrid(in, sm.mode == "2d")
	if err != nil {
		return nil, "", fmt.Errorf("--split %s: %w", sm.mode, err)
	}
	l, err := decomp.NewGrid(p, shape, best.Rows, best.Cols, period)
	if err != nil {
		return nil, "", err
	}
	return l, fmt.Sprintf("split: %s chose %s (%s)", sm.mode, best.GridText(), gridCandidates(all, in.Link)), nil
}

// gridCandidates lists the priced grids for the choice's report: predicted ms per 1000 steps.
func gridCandidates(all []model.SplitPrediction, link model.Link) string {
	var s []string
	for _, a := range all {
		if a.Feasible {
			s = append(s, fmt.Sprintf("%s %.3g ms", a.GridText(), a.Seconds*1e3))
		} else {
			s = append(s, a.GridText()+" too thin")
		}
	}
	return "predicted per 1000 steps over " + link.Name + ": " + strings.Join(s, ", ")
}

// splitReport is the run's description of its layout: the axes it splits and its halos.
func splitReport(l *decomp.Layout, axes []string, steps int, how string) (where, halos string) {
	rows, cols := l.Grid()
	where = "along " + axes[decomp.Axis]
	if l.Cols != nil {
		where = fmt.Sprintf("as a %dx%d grid along %s and %s", rows, cols, axes[decomp.Axis], axes[decomp.Axis1])
	}
	if len(l.Exchanges()) == 0 {
		return where, "halos: none (one sub-domain without a wrap)"
	}
	exchanges := max(0, (steps+l.Period-1)/l.Period-1)
	if l.Cols == nil {
		return where, fmt.Sprintf("halos: %d rows (reach %d x exchange period %d steps), exchanged %d times, %s", l.Halo, l.Reach, l.Period, exchanges, how)
	}
	return where, fmt.Sprintf("halos: %d rows along %s (reach %d) and %d cells along %s (reach %d), exchange period %d steps, exchanged %d times in two phases (rows, then columns), %s",
		l.Halo, axes[decomp.Axis], l.Reach, l.Cols.Halo, axes[decomp.Axis1], l.Cols.Reach, l.Period, exchanges, how)
}
