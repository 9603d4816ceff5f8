package decomp

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"tempest/internal/gpu"
)

// Profile times where a split run's periods go, per local device part: the host's time to
// post a period, and on the device the interior, the wait for the exchange after it, the bands
// and the idle time between one period's bands and the next period's interior (the host
// posting late). Device times come from events recorded around each stage, so they cost a few
// driver calls a period; the profile is for finding where the time goes (TEMPEST_SPLIT_PROFILE),
// not for timing runs.
type Profile struct {
	mu    sync.Mutex
	parts map[int]*partProfile
}

// partProfile is one part's record: the periods whose events are not read yet, and the
// stages' times read so far (milliseconds).
type partProfile struct {
	dev                               gpu.Device
	banded                            bool // split into bands and an interior; else one run
	open                              [][4]gpu.Event
	last                              gpu.Event // the previous period's end, read for idle
	host, interior, wait, bands, idle []float64
}

// EnableProfile makes the domain's runs record a Profile (periods run by part only: NCCL).
func (d *Domain) EnableProfile() *Profile {
	d.prof = &Profile{parts: map[int]*partProfile{}}
	return d.prof
}

// marks records the events of one part's period: before the interior, after it, after the
// exchange's wait and after the bands. It runs inside the part's batch.
type marks struct {
	pp    *partProfile
	evs   [4]gpu.Event
	start time.Time
	err   error
}

func (p *Profile) begin(i int, part Part) *marks {
	if p == nil {
		return nil
	}
	dp, ok := Interior(part).(*devicePart)
	if !ok {
		return nil
	}
	p.mu.Lock()
	pp := p.parts[i]
	if pp == nil {
		_, banded := part.(*banded)
		pp = &partProfile{dev: dp.r.Device(), banded: banded}
		p.parts[i] = pp
	}
	p.mu.Unlock()
	m := &marks{pp: pp, start: time.Now()}
	m.mark(0)
	return m
}

func (m *marks) mark(k int) {
	if m == nil || m.err != nil {
		return
	}
	ev, err := m.pp.dev.NewEvent()
	if err == nil {
		err = ev.Record()
	}
	m.evs[k], m.err = ev, err
}

// end closes the period: its events wait for Collect.
func (m *marks) end(p *Profile) {
	if m == nil {
		return
	}
	m.mark(3)
	p.mu.Lock()
	defer p.mu.Unlock()
	m.pp.host = append(m.pp.host, float64(time.Since(m.start).Microseconds())/1e3)
	if m.err == nil {
		m.pp.open = append(m.pp.open, m.evs)
	}
}

// Collect reads the events of the periods run so far; the parts must have finished them (after
// Wait).
func (p *Profile) Collect() error {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pp := range p.parts {
		for _, evs := range pp.open {
			var ms [4]float64
			for k := 1; k < 4; k++ {
				t, err := evs[k].ElapsedMs(evs[k-1])
				if err != nil {
					return err
				}
				ms[k] = t
			}
			pp.interior = append(pp.interior, ms[1])
			pp.wait = append(pp.wait, ms[2])
			pp.bands = append(pp.bands, ms[3])
			if pp.last != nil {
				t, err := evs[0].ElapsedMs(pp.last)
				if err != nil {
					return err
				}
				pp.idle = append(pp.idle, t)
				pp.last.Free()
			}
			for _, ev := range evs[:3] {
				ev.Free()
			}
			pp.last = evs[3]
		}
		pp.open = pp.open[:0]
	}
	return nil
}

// Report is one line per part: medians and totals of each stage.
func (p *Profile) Report() []string {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	ids := p.ids()
	for _, i := range ids {
		pp := p.parts[i]
		var b strings.Builder
		fmt.Fprintf(&b, "profile of sub-domain %d, %d periods, median | total ms:", i, len(pp.host))
		stages := []struct {
			name string
			v    []float64
		}{{"host posting", pp.host}, {"interior", pp.interior}, {"exchange wait", pp.wait}, {"bands", pp.bands}, {"idle between periods", pp.idle}}
		if !pp.banded {
			// A whole part: the exchange's post, its wait, then the run.
			stages[1].name, stages[3].name = "exchange post", "run"
		}
		for _, st := range stages {
			fmt.Fprintf(&b, " %s %.3f | %.1f;", st.name, median(st.v), sum(st.v))
		}
		out = append(out, strings.TrimSuffix(b.String(), ";"))
	}
	return out
}

// WriteCSV writes every period's times, one row per part and period (milliseconds; idle is
// the gap before the period, empty for a part's first), for plotting where the time goes.
func (p *Profile) WriteCSV(w io.Writer) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	ids := p.ids()
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "part,period,host_ms,interior_ms,wait_ms,bands_ms,idle_before_ms")
	for _, i := range ids {
		pp := p.parts[i]
		for k := range pp.interior {
			idle := ""
			if k > 0 && k-1 < len(pp.idle) {
				idle = fmt.Sprintf("%.4f", pp.idle[k-1])
			}
			fmt.Fprintf(bw, "%d,%d,%.4f,%.4f,%.4f,%.4f,%s\n", i, k, pp.host[k], pp.interior[k], pp.wait[k], pp.bands[k], idle)
		}
	}
	return bw.Flush()
}

// ids are the profiled parts in order (the caller holds mu).
func (p *Profile) ids() []int {
	var ids []int
	for i := range p.parts {
		ids = append(ids, i)
	}
	slices.Sort(ids)
	return ids
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

func sum(v []float64) float64 {
	t := 0.0
	for _, x := range v {
		t += x
	}
	return t
}
