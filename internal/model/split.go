package model

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"tempest/internal/ir"
	"tempest/internal/plan"
	"tempest/internal/probe"
)

// Link is the interconnect that halos cross between neighbouring sub-domains. Its numbers
// are assumptions stated with their source, not measurements of this machine.
type Link struct {
	Name      string
	GBs       float64 // sustained bandwidth per direction out of one device, GB/s
	LatencyUs float64 // fixed cost of one exchange (a group of sends and receives), microseconds
	Source    string
}

// Links are the interconnects the split model knows, by the names --link takes.
var Links = map[string]Link{
	"nvlink4": {Name: "NVLink 4 through NVSwitch (H100/H200 SXM)", GBs: 360, LatencyUs: 20,
		Source: "assumed: 450 GB/s per direction per GPU nominal (900 GB/s bidirectional), 80% sustained by NCCL send/receive of MB-sized slabs; 20 us per grouped exchange (NCCL launch and handshake)"},
	"pcie5": {Name: "PCIe 5.0 x16", GBs: 50, LatencyUs: 20,
		Source: "assumed: 64 GB/s per direction nominal, 80% sustained; 20 us per exchange"},
	"pcie4": {Name: "PCIe 4.0 x16", GBs: 25, LatencyUs: 20,
		Source: "assumed: 32 GB/s per direction nominal, 80% sustained; 20 us per exchange"},
	"ndr": {Name: "InfiniBand NDR (400 Gb/s per GPU, several hosts)", GBs: 45, LatencyUs: 30,
		Source: "assumed: 50 GB/s per direction nominal, 90% sustained with GPUDirect RDMA; 30 us per exchange"},
}

// LinkNames lists Links' names, sorted.
func LinkNames() []string {
	var n []string
	for k := range Links {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// SplitInput is a run split along its slowest axis into Parts sub-domains that exchange halos
// every Period steps (internal/decomp).
type SplitInput struct {
	Prog   *ir.Program
	Shape  []int // the global domain
	Steps  int
	Parts  int
	Cols   int // parts along axis 1 of a two-dimensional grid (Parts/Cols along axis 0); 0 or 1: axis 0 alone
	Period int // E: steps between exchanges (the plan's temporal block or a multiple)
	Link   Link
	// Rate, when positive, is a measured single-device rate (cells per second over the whole
	// domain) that prices compute; otherwise Plan's model on Dev does.
	Rate float64
	Plan plan.Plan
	Dev  *probe.Profile
	// HostUs is time per exchange beyond the link's that nothing hides, in microseconds
	// (ExchangeUs, measured); 0 leaves it out.
	HostUs float64
	// RowCells is what one halo row costs per step beyond its cells, in cells (HaloRowCells,
	// measured: the bands are short grids); 0 leaves it out.
	RowCells float64
	// Overlap prices exchanges overlapped with the interiors (decomp.SplitOverlapped): each
	// part computes a band H rows deep on each side with a neighbour and the interior between
	// them, and an exchange travels while the interior computes its period.
	Overlap bool
	// Ranges prices whole parts over ranges of planes (decomp.RangedPlan, through NCCL): each
	// step computes the owned rows and only the halo rows still needed, (E - t) R a side at
	// step t of a period, and an exchange and its fixed cost (HostUs) travel while the period's
	// last launch, Depth steps, computes its rows other than those sent.
	Ranges bool
	Depth  int
}

// BandLaunchUs is the least a band's period costs when exchanges overlap, in microseconds:
// the bands are small grids, so their launches' fixed cost (launch latency, the tail of a
// grid of few blocks) rather than their cells can bound them. Assumed, not measured.
const BandLaunchUs = 5.0

// SplitPrediction is the split model's answer.
type SplitPrediction struct {
	Parts         int
	Halo          int   // halo rows on each inner side: E*R (plus a fixed rim's excess over R)
	PartRows      int   // rows of the largest sub-domain, halos included
	Exchanges     int   // exchanges in the run
	ExchangeBytes int64 // bytes one device sends per exchange (as many arrive)
	Compute       float64
	Exchange      float64 // all exchanges' time on the link
	// Overlap says whether the prediction assumed exchanges overlapped with the interiors (asked
	// for, and the largest part owns rows enough for its bands and an interior); Exposed is
	// then what of Exchange the interiors do not hide, else all of it.
	Overlap bool
	// Ranges says the prediction priced whole parts over ranges of planes (SplitInput.Ranges);
	// Exposed then includes the exchanges' fixed cost that the last launch does not hide.
	Ranges  bool
	Exposed float64
	// Host is the exchanges' time beyond the link's and HaloRows the halo rows' overhead
	// (HostUs, RowCells), both added to Seconds.
	Host, HaloRows float64
	Seconds        float64
	Single         float64 // the same run on one device
	Speedup        float64 // Single / Seconds
	Efficiency     float64 // Speedup / Parts (strong scaling)
	// Rows x Cols is the grid of parts (Cols 1 for a split along axis 0 alone), Halo1 and
	// PartCols the halo and largest extent along axis 1, Messages the neighbours a device
	// exchanges with per exchange; Feasible says whether every part is at least as thick as
	// the halos its neighbours read.
	Rows, Cols, Halo1, PartCols, Messages int
	Feasible                              bool
}

// PredictSplit prices a split run: the largest sub-domain's compute with its redundant halo
// rows (from a measured rate or the plan's model), plus every exchange's latency and its
// bytes over the link (each device sends a slab of every exchanged grid level to each
// neighbour and receives as many; the two directions overlap, the two neighbours share the
// device's bandwidth). With Overlap, a period costs max(interior compute, exchange) + band
// compute: the interior is the part's owned rows less its bands, with halos of H rows (as
// many rows as the part owns), each band 3H rows (its H, a halo on either side), and a band's
// period costs at least BandLaunchUs. Parts too thin for bands (fewer than H rows more than
// the bands) are priced unsplit, as decomp runs them.
func PredictSplit(in SplitInput) (SplitPrediction, error) {
	p := in.Prog
	if in.Parts < 1 || in.Period < 1 || in.Steps < 1 {
		return SplitPrediction{}, fmt.Errorf("split model: %d parts, period %d, %d steps", in.Parts, in.Period, in.Steps)
	}
	if in.Link.GBs <= 0 {
		return SplitPrediction{}, fmt.Errorf("split model: link %q has no bandwidth", in.Link.Name)
	}
	if in.Cols > 1 {
		return predictGrid(in)
	}
	r := p.Reach()[0]
	extra := 0
	rowBytes := int64(0) // one row of every exchanged level
	row := int64(1)
	for _, d := range in.Shape[1:] {
		row *= int64(d)
	}
	periodic := false
	for _, g := range p.Grids {
		if g.BC[0].Kind == ir.Periodic {
			periodic = true
		}
		if g.Update == nil {
			continue
		}
		if len(g.Rim) > 0 {
			extra = max(extra, g.Rim[0]-r)
		}
		rowBytes += row * int64(g.Levels*g.Type.Size())
	}
	out := SplitPrediction{Parts: in.Parts, Halo: in.Period*r + extra}
	n := in.Shape[0]
	own := (n + in.Parts - 1) / in.Parts
	neighbours := min(2, in.Parts-1)
	if periodic {
		neighbours = 2
	}
	if out.Halo == 0 {
		neighbours = 0
	}
	out.PartRows = own + neighbours*out.Halo
	if in.Parts == 1 && !periodic {
		out.PartRows, out.Halo = n, 0
	}
	compute := func(rows int) (float64, error) {
		shape := append([]int{rows}, in.Shape[1:]...)
		if in.Rate > 0 {
			cells := 1.0
			for _, d := range shape {
				cells *= float64(d)
			}
			return cells * float64(in.Steps) / in.Rate, nil
		}
		pr, err := Predict(Input{Prog: p, Plan: in.Plan, Shape: shape, Steps: in.Steps, Dev: in.Dev})
		return pr.Seconds, err
	}
	var err error
	if out.Single, err = compute(n); err != nil {
		return out, err
	}
	if out.Compute, err = compute(out.PartRows); err != nil {
		return out, err
	}
	if in.Parts > 1 || periodic {
		out.Exchanges = (in.Steps+in.Period-1)/in.Period - 1
	}
	if neighbours > 0 {
		out.ExchangeBytes = int64(neighbours*out.Halo) * rowBytes
		per := in.Link.LatencyUs*1e-6 + float64(out.ExchangeBytes)/(in.Link.GBs*1e9)
		out.Exchange = float64(out.Exchanges) * per
	}
	out.Exposed = out.Exchange
	if bands := neighbours; in.Overlap && bands > 0 && out.Exchanges > 0 && own >= (bands+1)*out.Halo {
		interior, err := compute(own)
		if err != nil {
			return out, err
		}
		band, err := compute(3 * out.Halo)
		if err != nil {
			return out, err
		}
		periods := float64((in.Steps + in.Period - 1) / in.Period)
		perPeriod := func(t float64) float64 { return t * float64(in.Period) / float64(in.Steps) }
		bandPeriod := max(perPeriod(band), BandLaunchUs*1e-6)
		out.Overlap = true
		out.Compute = interior + float64(bands)*periods*bandPeriod
		per := out.Exchange / float64(out.Exchanges)
		out.Exposed = float64(out.Exchanges) * max(0, per-perPeriod(interior))
	}
	out.Host, out.HaloRows = measuredCosts(in, out)
	if in.Ranges && !out.Overlap && neighbours > 0 && out.Exchanges > 0 {
		// The halo rows computed shrink through the period: (E-1)/2 reaches a side on average.
		avg := own + int(math.Round(float64(neighbours*r*(in.Period-1))/2))
		if out.Compute, err = compute(min(avg, out.PartRows)); err != nil {
			return out, err
		}
		middle, err := compute(max(own-neighbours*out.Halo, 0))
		if err != nil {
			return out, err
		}
		hidden := middle * float64(min(max(in.Depth, 1), in.Period)) / float64(in.Steps)
		per := out.Exchange/float64(out.Exchanges) + in.HostUs*1e-6
		out.Exposed = float64(out.Exchanges) * max(0, per-hidden)
		out.Host, out.Ranges = 0, true
	}
	out.Seconds = out.Compute + out.Exposed + out.Host + out.HaloRows
	out.Speedup = out.Single / out.Seconds
	out.Efficiency = out.Speedup / float64(in.Parts)
	out.Rows, out.Cols, out.Messages = in.Parts, 1, neighbours
	if len(in.Shape) > 1 {
		out.PartCols = in.Shape[1]
	}
	out.Feasible = in.Parts <= n && (neighbours == 0 || n/in.Parts >= out.Halo)
	return out, nil
}

// measuredCosts are a split's costs beyond compute and the link that the measurements found
// (HostUs, RowCells): the time per exchange beyond the link's, and per step RowCells cells for every
// halo row, at the single device's rate.
func measuredCosts(in SplitInput, out SplitPrediction) (host, rows float64) {
	host = float64(out.Exchanges) * in.HostUs * 1e-6
	if in.RowCells > 0 && out.Halo > 0 && out.Single > 0 {
		cells := 1.0
		for _, n := range in.Shape {
			cells *= float64(n)
		}
		rate := cells * float64(in.Steps) / out.Single
		rows = float64(in.Steps) * in.RowCells * float64(out.Halo) / rate
	}
	return host, rows
}

// WeakScaling prices the same run with the domain grown K-fold along the split axis on K
// devices, against the original domain on one: the weak-scaling efficiency (1 is perfect).
func WeakScaling(in SplitInput) (float64, error) {
	one := in
	one.Parts = 1
	base, err := PredictSplit(one)
	if err != nil {
		return 0, err
	}
	grown := in
	grown.Shape = append([]int{in.Shape[0] * in.Parts}, in.Shape[1:]...)
	k, err := PredictSplit(grown)
	if err != nil {
		return 0, err
	}
	return base.Single / k.Seconds, nil
}

// SplitTable is a Markdown table of predicted scaling, one row per run: the time on each
// device count, then speedups, strong and weak efficiencies (in the counts' order, the
// first count's omitted when it is 1), the halo rows and what the exchanges cost on the
// largest count: their bytes, their time on the link and what of it compute does not hide
// (all of it unless the run overlaps them).
func SplitTable(rows []SplitInput, counts []int) (string, error) {
	var b strings.Builder
	b.WriteString("| stencil | size | E |")
	var scaled []string
	for _, k := range counts {
		fmt.Fprintf(&b, " %d GPU ms |", k)
		if k > 1 {
			scaled = append(scaled, fmt.Sprint(k))
		}
	}
	last := counts[len(counts)-1]
	list := strings.Join(scaled, " / ")
	fmt.Fprintf(&b, " speedup %s | strong eff. %s | weak eff. %s | halo rows | MB/exchange, exchanges ms, not hidden ms (%d GPUs) |\n", list, list, list, last)
	b.WriteString(strings.Repeat("|---", 8+len(counts)) + "|\n")
	for _, in := range rows {
		size := strings.Trim(strings.ReplaceAll(fmt.Sprint(in.Shape), " ", "x"), "[]")
		fmt.Fprintf(&b, "| %s | %s | %d |", in.Prog.Name, size, in.Period)
		var speed, strong, weak []string
		var end SplitPrediction
		for _, k := range counts {
			x := in
			x.Parts = k
			pr, err := PredictSplit(x)
			if err != nil {
				return "", fmt.Errorf("%s on %d: %w", in.Prog.Name, k, err)
			}
			fmt.Fprintf(&b, " %.1f |", pr.Seconds*1e3)
			if k > 1 {
				w, err := WeakScaling(x)
				if err != nil {
					return "", err
				}
				speed = append(speed, fmt.Sprintf("%.2f", pr.Speedup))
				strong = append(strong, fmt.Sprintf("%.2f", pr.Efficiency))
				weak = append(weak, fmt.Sprintf("%.2f", w))
			}
			end = pr
		}
		fmt.Fprintf(&b, " %s | %s | %s | %d | %.2f, %.1f, %.1f |\n", strings.Join(speed, " / "), strings.Join(strong, " / "), strings.Join(weak, " / "),
			end.Halo, float64(end.ExchangeBytes)/1e6, end.Exchange*1e3, end.Exposed*1e3)
	}
	return b.String(), nil
}

// Exchange costs measured on 4 x H200 SXM (NVLink, NCCL 2.28.3, 2026-11-28; docs/performance.md,
// "Several GPUs posted at once"), once each device's period was posted by a goroutine of its
// own in one batch of driver calls, NCCL connected before the clock and the parts left whole:
// twelve runs of j2d5pt 16386^2 and star3d1r 514^3 (strong and weak, 2 and 4 GPUs, one process
// and a process per GPU, periods 12 to 40, two plans each) fit the split model within 7% with
// ExchangeUs 105 us per exchange beyond the link's own time and HaloRowCells 2.5e5 cells per
// halo row per step, compute priced at the whole grid's measured rate: the two terms also
// carry what a part a quarter of the grid loses running a plan tuned for the whole (wave
// tails, short chunks), which does not depend on the period. Before those changes the host's
// posting cost about 250 us per exchange for each sub-domain one process drove.
//
// PartExchangeUs is the cost per exchange beyond the link's where compute is priced at the
// rate of the part's own size (a plan tuned for the sub-domains, `tempest tune --gpus N`, or
// a weak run's part as large as the grid tuned for): 22 runs on 2 and 4 H200s (2026-11-28,
// "Several GPUs with plans from tempest tune"; strong and weak, one process and a process per
// GPU, periods 8 to 30, star3d1r's period swept) fit within 5% with 35 us and no halo-row
// term: halo rows then cost only their cells. It is the marginal cost the period rule weighs.
const (
	ExchangeUs       = 105.0
	HaloRowCells     = 2.5e5
	PartExchangeUs   = 35.0
	exchangePeriodUp = 256 // the deepest period the rule picks
)

// ExchangePeriod is the exchange period that minimises a step's cost T0 + E/p + 2 p r row /
// rate: p = sqrt(E rate / (2 r row)), with E the link's latency plus PartExchangeUs, 2 p r
// the halo rows a part recomputes (two sides of p r rows), rate a device's cells per second
// on this plan and row the cells of one row (plane) along the split axis; rounded to a
// multiple of depth (the plan's deepest launch), at least depth, and no deeper than an eighth
// of a part's rows. The parts one process drives do not matter: each device's posting runs
// beside the others'.
func ExchangePeriod(rate float64, row int64, reach, depth, partRows int, link Link) int {
	if rate <= 0 || row <= 0 || reach <= 0 || depth < 1 {
		return max(depth, 1)
	}
	e := (PartExchangeUs + link.LatencyUs) * 1e-6
	p := math.Sqrt(e * rate / (2 * float64(reach) * float64(row)))
	m := max(int(math.Round(p/float64(depth))), 1)
	for m > 1 && (m*depth > exchangePeriodUp || m*depth*reach > partRows/8) {
		m--
	}
	return m * depth
}
