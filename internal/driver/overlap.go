package driver

import (
	"fmt"

	"tempest/internal/decomp"
)

// overlapFor decides whether a split run overlaps its exchanges with the sub-domains'
// interiors, and says why. Auto overlaps where halos are relayed by the coordinator (on a
// goroutine, beside the processes' compute). NCCL's transfers take less than the bands cost,
// and local copies finish before compute goes on, so there auto keeps the parts whole.
func (m MultiOptions) overlapFor(t decomp.Transport) (bool, string) {
	switch m.Overlap {
	case "on":
		return true, "--overlap on"
	case "off":
		return false, "--overlap off"
	case "ranges":
		return false, "--overlap ranges: whole sub-domains" // rangesLine reports it
	}
	switch t.(type) {
	case *decomp.NCCL:
		// Measured on four H200s (docs/performance.md, "Several GPUs posted at once"): the bands'
		// own launches and redundant rows cost more than the exchange they hide, which NCCL
		// carries in a fraction of a period (j2d5pt 5821 GCells/s unsplit against 4988 in bands,
		// star3d1r 1088 against 701).
		return false, "auto: through NCCL the halos take less time than the bands' extra launches and rows; --overlap on splits the sub-domains anyway"
	case *decomp.Coordinator, relay:
		return true, "auto: halos travel between processes while they compute"
	}
	return false, "auto: these halo copies finish before compute goes on, so there is nothing to hide; --overlap on splits the sub-domains anyway"
}

// overlapLine reports how the run overlaps its exchanges: how many of this process's
// sub-domains split into bands, and how deep (with ranges, rangesLine).
func overlapLine(l *decomp.Layout, mine func(int) bool, on bool, why string, ranges bool, t decomp.Transport) string {
	if ranges {
		return rangesLine(l, t)
	}
	if !on {
		return fmt.Sprintf("overlap: off (%s)", why)
	}
	if l.Cols != nil {
		return fmt.Sprintf("overlap: on (%s), but a grid of sub-domains (--split) exchanges in two phases, the second reading the first: its sub-domains run unsplit", why)
	}
	banded, local := 0, 0
	for i := range l.Parts {
		if !mine(i) {
			continue
		}
		local++
		if l.Bands(i) != nil {
			banded++
		}
	}
	if banded == 0 {
		return fmt.Sprintf("overlap: on (%s), but no sub-domain owns rows enough for bands of %d rows and an interior of as many: they run unsplit", why, l.Halo)
	}
	return fmt.Sprintf("overlap: on (%s): %d of %d sub-domains split into bands of %d rows and an interior, which runs between each exchange's start and its wait", why, banded, local, l.Halo)
}

// rangesLine reports how a run with --overlap ranges overlaps its exchanges: through a
// transport whose parts post their exchanges alone (NCCL) each sub-domain's last launch of a
// period computes the rows its neighbours receive first; elsewhere the sub-domains run whole
// launches.
func rangesLine(l *decomp.Layout, t decomp.Transport) string {
	if l.Cols != nil {
		return "overlap: ranges, but a grid of sub-domains (--split) exchanges in two phases: its sub-domains run whole launches"
	}
	if _, ok := t.(decomp.PartStarter); ok {
		return fmt.Sprintf("overlap: ranges (each sub-domain's last launch of a period computes the %d rows a side its neighbours receive first, then the rest while they travel; every launch skips the halo rows no later step reads)", l.Halo)
	}
	return "overlap: ranges, but only NCCL's exchanges (each sub-domain posting its own) run beside a launch: with these halo copies the sub-domains run whole launches"
}
