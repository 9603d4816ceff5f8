package model

import (
	"fmt"

	"tempest/internal/ir"
)

// PackGBs is the rate at which a device packs and unpacks strided halo columns when no
// measured profile gives its DRAM copy rate: bytes copied per second (each read once and
// written once). Assumed: well below an H100's 3.35 TB/s HBM3 peak, since a column halo is
// many short row segments.
const PackGBs = 1000

// axisSplit is one axis of a split as the model sees it: its halo, how many neighbours a part
// exchanges with along it, and the largest part's extent with its halos.
type axisSplit struct {
	halo, neighbours, own, padded int
	periodic                      bool
}

// splitAxis prices axis a of shape split into parts slots for exchanges every period steps,
// as decomp lays them out: a single slot along axis 0 still pads and exchanges with itself
// where the axis wraps; a single slot along axis 1 is no split.
func splitAxis(p *ir.Program, shape []int, a, parts, period int) axisSplit {
	r := p.Reach()[a]
	extra := 0
	s := axisSplit{}
	for _, g := range p.Grids {
		if g.BC[a].Kind == ir.Periodic {
			s.periodic = true
		}
		if g.Update != nil && len(g.Rim) > a {
			extra = max(extra, g.Rim[a]-r)
		}
	}
	s.halo = period*r + extra
	n := shape[a]
	s.own = (n + parts - 1) / parts
	s.neighbours = min(2, parts-1)
	if s.periodic && (a == 0 || parts > 1) {
		s.neighbours = 2
	}
	if s.halo == 0 || s.neighbours == 0 {
		s.neighbours, s.halo = 0, 0
	}
	s.padded = s.own + s.neighbours*s.halo
	return s
}

// feasible says whether every slot of the axis owns at least the halo its neighbours read.
func (s axisSplit) feasible(n, parts int) bool {
	return parts <= n && (s.neighbours == 0 || n/parts >= s.halo)
}

// predictGrid prices a split over a Rows x Cols grid of parts (SplitInput.Cols > 1): the
// largest part's compute with its redundant halo rows and columns, plus per exchange two
// phases, each a latency and its bytes over the link: first whole padded rows to the
// neighbours along axis 0, then columns over the full padded extent of axis 0 to those along
// axis 1, packed and unpacked on the device (at the profile's DRAM copy rate, else PackGBs).
func predictGrid(in SplitInput) (SplitPrediction, error) {
	p := in.Prog
	if p.Dims() < 2 {
		return SplitPrediction{}, fmt.Errorf("split model: %s is one-dimensional: it splits along one axis only", p.Name)
	}
	if in.Parts%in.Cols != 0 {
		return SplitPrediction{}, fmt.Errorf("split model: %d parts do not make columns of %d", in.Parts, in.Cols)
	}
	rows := in.Parts / in.Cols
	a0 := splitAxis(p, in.Shape, 0, rows, in.Period)
	a1 := splitAxis(p, in.Shape, 1, in.Cols, in.Period)
	if rows == 1 && !a0.periodic {
		a0.padded, a0.halo = in.Shape[0], 0
	}
	out := SplitPrediction{Parts: in.Parts, Rows: rows, Cols: in.Cols, Halo: a0.halo, Halo1: a1.halo, PartRows: a0.padded, PartCols: a1.padded,
		Feasible: a0.feasible(in.Shape[0], rows) && a1.feasible(in.Shape[1], in.Cols)}
	shape := append([]int{a0.padded, a1.padded}, in.Shape[2:]...)
	var err error
	if out.Single, err = splitCompute(in, in.Shape); err != nil {
		return out, err
	}
	if out.Compute, err = splitCompute(in, shape); err != nil {
		return out, err
	}
	inner := int64(1)
	for _, d := range in.Shape[2:] {
		inner *= int64(d)
	}
	cell := int64(0) // one cell of every exchanged level
	for _, g := range p.Grids {
		if g.Update != nil {
			cell += int64(g.Levels * g.Type.Size())
		}
	}
	bytes0 := int64(a0.neighbours*a0.halo) * int64(a1.padded) * inner * cell
	bytes1 := int64(a1.neighbours*a1.halo) * int64(a0.padded) * inner * cell
	out.Exchanges = (in.Steps+in.Period-1)/in.Period - 1
	out.ExchangeBytes = bytes0 + bytes1
	out.Messages = a0.neighbours + a1.neighbours
	pack := float64(PackGBs)
	if in.Dev != nil && in.Dev.DRAMCopyGBs > 0 {
		pack = in.Dev.DRAMCopyGBs
	}
	per := 0.0
	if bytes0 > 0 {
		per += in.Link.LatencyUs*1e-6 + float64(bytes0)/(in.Link.GBs*1e9)
	}
	if bytes1 > 0 {
		// Columns sent are packed and columns received unpacked: 2*bytes1 bytes copied.
		per += in.Link.LatencyUs*1e-6 + float64(bytes1)/(in.Link.GBs*1e9) + 2*float64(bytes1)/(pack*1e9)
	}
	out.Exchange = float64(out.Exchanges) * per
	// Two-dimensional grids exchange in two phases and are not overlapped (decomp.Layout.Bands).
	out.Exposed = out.Exchange
	out.Host, out.HaloRows = measuredCosts(in, out)
	out.Seconds = out.Compute + out.Exposed + out.Host + out.HaloRows
	out.Speedup = out.Single / out.Seconds
	out.Efficiency = out.Speedup / float64(in.Parts)
	return out, nil
}

// splitCompute is the compute time of one part of the given shape: from the measured rate,
// else the plan's model.
func splitCompute(in SplitInput, shape []int) (float64, error) {
	if in.Rate > 0 {
		cells := 1.0
		for _, d := range shape {
			cells *= float64(d)
		}
		return cells * float64(in.Steps) / in.Rate, nil
	}
	pr, err := Predict(Input{Prog: in.Prog, Plan: in.Plan, Shape: shape, Steps: in.Steps, Dev: in.Dev})
	return pr.Seconds, err
}

// ChooseGrid prices every grid of in.Parts parts (twoD: only those with at least two parts
// along each axis) that the domain allows (each part at least as thick as its halos) and
// returns the fastest, fewer columns winning ties, with every candidate priced, in order of
// columns. It fails where no grid is possible.
func ChooseGrid(in SplitInput, twoD bool) (SplitPrediction, []SplitPrediction, error) {
	var all []SplitPrediction
	best := -1
	for cols := 1; cols <= in.Parts; cols++ {
		if in.Parts%cols != 0 || (cols > 1 && in.Prog.Dims() < 2) || (twoD && (cols < 2 || in.Parts/cols < 2)) {
			continue
		}
		x := in
		x.Cols = cols
		pr, err := PredictSplit(x)
		if err != nil {
			return SplitPrediction{}, nil, err
		}
		all = append(all, pr)
		if pr.Feasible && (best < 0 || pr.Seconds < all[best].Seconds) {
			best = len(all) - 1
		}
	}
	if best < 0 {
		if in.Prog.Dims() < 2 && twoD {
			return SplitPrediction{}, all, fmt.Errorf("%s is one-dimensional: it splits along %s alone", in.Prog.Name, in.Prog.Axes[0])
		}
		if twoD && len(all) == 0 {
			return SplitPrediction{}, all, fmt.Errorf("%d sub-domains make no grid with two or more along each axis: give --split PxQ", in.Parts)
		}
		return SplitPrediction{}, all, fmt.Errorf("no grid of %d sub-domains fits %v with halos of %d steps of reach %v: use fewer sub-domains, a shorter exchange period or a larger --size",
			in.Parts, in.Shape, in.Period, in.Prog.Reach())
	}
	return all[best], all, nil
}

// GridText is a grid as --split writes it: "4x1" for a split along axis 0 alone.
func (s SplitPrediction) GridText() string {
	rows, cols := s.Rows, s.Cols
	if cols == 0 {
		rows, cols = s.Parts, 1
	}
	return fmt.Sprintf("%dx%d", rows, cols)
}
