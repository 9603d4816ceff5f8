package driver

import (
	"fmt"

	"tempest/internal/decomp"
	"tempest/internal/gpu"
	"tempest/internal/model"
	"tempest/internal/plan"
	"tempest/internal/tune"
)

// splitPrediction is the split model's price of a split run (model.PredictSplit), printed
// beside the measured rate so that every run shows how far the model is off. Compute is
// priced at the plan's rate as `tempest tune` measured it (for the sub-domains' size first,
// then the whole grid's), else by the plan's model on the device's profile. Only CUDA runs
// are priced: the model's exchange costs were fitted on them, and OpenCL's split runs copy
// halos through the host, which it does not price.
type splitPrediction struct {
	seconds float64
	from    string
}

// predictSplitRun prices the run; ok is false where the model has nothing to go on (no CUDA
// device, or no profile of it and no tuning record of the plan).
func predictSplitRun(pr *Prepared, pl plan.Plan, dev gpu.Device, m MultiOptions, l *decomp.Layout, period, steps int, overlap bool) (splitPrediction, bool) {
	if dev == nil || steps < 1 || dev.Props().Backend != "cuda" {
		return splitPrediction{}, false
	}
	rows, cols := l.Grid()
	parts := rows * cols
	in := model.SplitInput{Prog: pr.Prog, Shape: pr.State.Shape, Steps: steps, Parts: parts, Cols: cols, Period: period,
		Link: splitLink(m, true), Overlap: overlap && cols == 1}
	if m.Overlap == "ranges" && cols == 1 && (m.GPUs > 0 || m.Ranks > 0) {
		// Through NCCL (what CUDA split runs take): the exchange hides behind the period's
		// last launch; pl is the plan as tuned, before decomp.RangedPlan, whose rate prices it.
		in.Ranges = true
		if ds := pl.Depths(); len(ds) > 0 {
			in.Depth = ds[0]
		}
	}
	// Compute priced at the part's own size costs PartExchangeUs an exchange and nothing per
	// halo row beyond its cells; priced at the whole grid's, the measured terms also carry what
	// a part loses running a plan tuned for another size.
	through := m.GPUs > 0 || m.Ranks > 0
	ownSize := func() {
		if through {
			in.HostUs = model.PartExchangeUs
		}
	}
	var from string
	part := SubdomainShape(pr.State.Shape, parts)
	if cols > 1 {
		part, _, _ = subdomainShapeFor(pr.State.Shape, parts, fmt.Sprintf("%dx%d", rows, cols))
	}
	if rate, at := tunedRate(dev, pr, pl, part); rate > 0 {
		in.Rate = rate
		from = "the plan's rate measured by tempest tune at " + sizeString(at)
		if tune.SizeClass(at) == tune.SizeClass(part) {
			ownSize()
		} else if through {
			in.HostUs, in.RowCells = model.ExchangeUs, model.HaloRowCells
		}
	} else if prof := loadDeviceProfile(dev, false, nil); prof != nil {
		in.Plan, in.Dev = pl, prof
		from = "the plan's model"
		ownSize()
	} else {
		return splitPrediction{}, false
	}
	p, err := model.PredictSplit(in)
	if err != nil || p.Seconds <= 0 {
		return splitPrediction{}, false
	}
	return splitPrediction{seconds: p.Seconds, from: from}, true
}

// tunedRate is the plan's measured rate in cells per second from the tuning cache: the
// record for the sub-domains' size (part), else the whole grid's; 0 where neither holds the plan.
func tunedRate(dev gpu.Device, pr *Prepared, pl plan.Plan, part []int) (float64, []int) {
	cache, err := tune.OpenCache("")
	if err != nil {
		return 0, nil
	}
	for _, shape := range [][]int{part, pr.State.Shape} {
		e, err := cache.Load(tune.KeyFor(pr.Prog, shape, dev.Props(), Version, pl.FastMath))
		if err != nil || e == nil {
			continue
		}
		r := e.Lookup(pl.String())
		if r == nil || r.Status != tune.Measured || r.SecondsPerStep <= 0 || len(r.Shape) == 0 {
			continue
		}
		cells := 1.0
		for _, n := range r.Shape {
			cells *= float64(n)
		}
		return cells / r.SecondsPerStep, r.Shape
	}
	return 0, nil
}

// line is the report's line: the predicted rate (GCells/s, from the run's updated cells) and
// the model's error against the measured rate.
func (p splitPrediction) line(cells, measured float64) string {
	pred := cells / p.seconds / 1e9
	return fmt.Sprintf("split model: %.3f GCells/s predicted (compute from %s), an error of %+.1f%%", pred, p.from, (pred/measured-1)*100)
}
