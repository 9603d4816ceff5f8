package driver

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"sync"
	"time"

	"tempest/internal/cpu"
	"tempest/internal/decomp"
	"tempest/internal/gpu"
	"tempest/internal/gpurun"
	"tempest/internal/gridio"
	"tempest/internal/model"
	"tempest/internal/plan"
	"tempest/internal/ref"
	"tempest/internal/state"
)

// MultiOptions are the settings of a run split into sub-domains (internal/decomp): over the
// GPUs of one host, over processes on several hosts, or over parts of one device.
type MultiOptions struct {
	GPUs       int // devices of this host, one sub-domain each: CUDA ordinals 0..N-1 or OpenCL devices
	Subdomains int // sub-domains on one device (or the CPU engine), exchanging by local copies
	Exchange   int // steps between halo exchanges (0: the plan's deepest launch)
	// Rank and Ranks place this process in a multi-process run (Ranks > 0): one sub-domain
	// per process, halos through NCCL (CUDA) or relayed by the coordinator otherwise.
	Rank, Ranks int
	// LocalRank is the process's rank among those of its host where a launcher says it (0
	// otherwise): it picks the CUDA device unless TEMPEST_CUDA_DEVICE does (local rank 0
	// takes device 0, the default).
	LocalRank   int
	Coordinator string // HOST:PORT where rank 0 listens
	// Split is --split: 1d (slabs along the slowest axis; also ""), 2d, PxQ or auto
	// (split2d.go).
	Split string
	// Timeout bounds the wait for the other processes at the start, and how long a rank may
	// stay silent before the others stop, naming it (0: 5 minutes).
	Timeout time.Duration
	// Secret authenticates the ranks to rank 0 (--secret or TEMPEST_SECRET); RunID names the
	// run (a launcher's job id), so that a process of another run is refused.
	Secret, RunID string
	// Overlap is auto ("" too), on or off: whether sub-domains split into bands and an
	// interior that computes while the halos travel (overlap.go); or ranges: whole sub-domains
	// whose n5d launches compute the rows their neighbours receive first and the rest while
	// the halos travel (decomp.RangedPlan; through NCCL).
	Overlap string
}

// Active says whether the run is split at all.
func (m MultiOptions) Active() bool {
	return m.GPUs != 0 || m.Subdomains != 0 || m.Ranks != 0 || m.Rank != 0 || m.Coordinator != "" || m.Exchange != 0 ||
		(m.Overlap != "" && m.Overlap != "auto") || m.Split != ""
}

func (m MultiOptions) check() error {
	switch {
	case m.GPUs < 0 || m.Subdomains < 0 || m.Ranks < 0 || m.Exchange < 0:
		return fmt.Errorf("--gpus, --subdomains, --ranks and --exchange take positive numbers")
	case m.GPUs > 0 && m.Subdomains > 0:
		return fmt.Errorf("--gpus %d --subdomains %d: choose one (--gpus puts one sub-domain on each device; --subdomains splits one device)", m.GPUs, m.Subdomains)
	case m.Ranks > 0 && (m.GPUs > 0 || m.Subdomains > 0):
		return fmt.Errorf("--ranks: each process runs one sub-domain on one device (TEMPEST_CUDA_DEVICE picks it); drop --gpus and --subdomains")
	case m.Ranks > 0 && m.Coordinator == "":
		return fmt.Errorf("--ranks %d: give --coordinator HOST:PORT (where rank 0 listens)", m.Ranks)
	case m.Ranks > 0 && (m.Rank < 0 || m.Rank >= m.Ranks):
		return fmt.Errorf("--rank %d --ranks %d: ranks are numbered 0 to %d", m.Rank, m.Ranks, m.Ranks-1)
	case m.Ranks == 0 && (m.Rank != 0 || m.Coordinator != ""):
		return fmt.Errorf("--rank and --coordinator belong to multi-process runs: give --ranks too")
	case m.Overlap != "" && m.Overlap != "auto" && m.Overlap != "on" && m.Overlap != "off" && m.Overlap != "ranges":
		return fmt.Errorf("--overlap %q: choose auto, on, off or ranges", m.Overlap)
	case m.GPUs == 0 && m.Subdomains == 0 && m.Ranks == 0 && m.Split != "":
		return fmt.Errorf("--split %s belongs to split runs: give --gpus, --subdomains or --ranks too", m.Split)
	case m.GPUs == 0 && m.Subdomains == 0 && m.Ranks == 0 && m.Exchange == 0:
		return fmt.Errorf("--overlap %s belongs to split runs: give --gpus, --subdomains or --ranks too", m.Overlap)
	case m.GPUs == 0 && m.Subdomains == 0 && m.Ranks == 0:
		return fmt.Errorf("--exchange %d belongs to split runs: give --gpus, --subdomains or --ranks too", m.Exchange)
	}
	return nil
}

// multiRun is a split run being set up: its devices, transport and caches.
type multiRun struct {
	rank int
	mu   sync.Mutex // guards t, which onFailure reads from another goroutine, and failure
	t    decomp.Transport
	// failure is what NCCL met in the background (decomp.NCCL.Watch), which stopped the run.
	failure error
	devs    []gpu.Device // per part; nil for host parts and parts of other processes
	opened  []gpu.Device
	caches  map[gpu.Device]*gpurun.Modules
	coord   *decomp.Coordinator
}

func (mr *multiRun) close() {
	for _, c := range mr.caches {
		c.Close()
	}
	if mr.coord != nil {
		mr.coord.Close()
	}
	for _, d := range mr.opened {
		d.Close()
	}
}

// openDevices opens the devices of a split run: parts is the number of sub-domains.
func (mr *multiRun) openDevices(o RunOptions, stderr io.Writer) (parts int, err error) {
	m := o.Multi
	switch {
	case m.GPUs > 0:
		backends := []string{o.Backend}
		switch o.Backend {
		case "", "auto":
			backends = []string{"cuda", "opencl"}
		case "cpu":
			return 0, fmt.Errorf("--gpus %d --backend cpu: the CPU engine has no devices; use --subdomains to split it", m.GPUs)
		}
		var errs []error
		for _, b := range backends {
			devs, err := openOrdinals(b, m.GPUs)
			if err == nil {
				mr.devs, mr.opened = devs, devs
				return m.GPUs, nil
			}
			errs = append(errs, err)
			if !errors.Is(err, gpu.ErrUnavailable) {
				// CUDA is there but has too few devices: mixing in OpenCL ones would not do.
				break
			}
		}
		return 0, fmt.Errorf("--gpus %d: %w", m.GPUs, errors.Join(errs...))
	case m.Subdomains > 0:
		dev, err := openBackend(o.Backend, o.Plan, stderr)
		if err != nil {
			return 0, err
		}
		if dev != nil {
			mr.opened = []gpu.Device{dev}
		}
		mr.devs = make([]gpu.Device, m.Subdomains)
		for i := range mr.devs {
			mr.devs[i] = dev
		}
		return m.Subdomains, nil
	}
	var dev gpu.Device
	if m.LocalRank > 0 && os.Getenv("TEMPEST_CUDA_DEVICE") == "" && (o.Backend == "" || o.Backend == "auto" || o.Backend == "cuda") {
		// The launcher said which process of this host this is: one GPU each.
		if dev, err = gpu.OpenLocal(m.LocalRank); err != nil && (o.Backend == "cuda" || !errors.Is(err, gpu.ErrUnavailable)) {
			return 0, fmt.Errorf("rank %d (local rank %d): %w", m.Rank, m.LocalRank, err)
		}
	}
	if dev == nil {
		if dev, err = openBackend(o.Backend, o.Plan, stderr); err != nil {
			return 0, err
		}
	}
	mr.devs = make([]gpu.Device, m.Ranks)
	if dev != nil {
		mr.opened = []gpu.Device{dev}
		mr.devs[m.Rank] = dev
	}
	return m.Ranks, nil
}

// openOrdinals opens devices 0..n-1 of a backend.
func openOrdinals(backend string, n int) ([]gpu.Device, error) {
	var devs []gpu.Device
	for i := 0; i < n; i++ {
		d, err := gpu.OpenOrdinal(backend, i)
		if err != nil {
			for _, d := range devs {
				d.Close()
			}
			return nil, fmt.Errorf("%s device %d: %w", backend, i, err)
		}
		devs = append(devs, d)
	}
	return devs, nil
}

// transport picks how halos travel: NCCL between CUDA devices (in one process or several),
// the coordinator's relay between processes without it, local copies within a process.
func (mr *multiRun) transport(o RunOptions, stderr io.Writer) (decomp.Transport, string, error) {
	m := o.Multi
	cuda := false
	for _, d := range mr.devs {
		if d != nil && d.Props().Backend == "cuda" {
			cuda = true
		}
	}
	if m.Ranks > 0 {
		c := mr.coord
		if !cuda {
			return relay{c}, "relayed by the coordinator (TCP)", nil
		}
		n, err := gpu.LoadNCCL()
		if err != nil {
			return nil, "", fmt.Errorf("--ranks: halos between CUDA processes travel through NCCL: %w", err)
		}
		var id gpu.NCCLID
		if m.Rank == 0 {
			if id, err = n.UniqueID(); err != nil {
				return nil, "", err
			}
		}
		b, err := c.Broadcast(id[:])
		if err != nil {
			return nil, "", fmt.Errorf("sharing the NCCL id: %w", err)
		}
		copy(id[:], b)
		t, err := decomp.NewNCCL(n, id, mr.devs)
		if err != nil {
			return nil, "", err
		}
		return t, n.Version, nil
	}
	if m.GPUs > 0 && cuda {
		n, err := gpu.LoadNCCL()
		if err == nil {
			var id gpu.NCCLID
			if id, err = n.UniqueID(); err == nil {
				var t *decomp.NCCL
				if t, err = decomp.NewNCCL(n, id, mr.devs); err == nil {
					return t, n.Version, nil
				}
			}
		}
		if !errors.Is(err, gpu.ErrUnavailable) {
			return nil, "", err
		}
		fmt.Fprintf(stderr, "note: %v; halos go through host memory\n", err)
		return decomp.Local{}, "host copies", nil
	}
	if mr.devs[0] != nil && m.GPUs == 0 {
		return decomp.Local{}, "device-to-device copies", nil
	}
	return decomp.Local{}, "host copies", nil
}

// exchangePeriod is the split model's exchange period for sub-domains on CUDA devices
// exchanging through NCCL along the slowest axis (model.ExchangePeriod): the plan's
// predicted rate on one part. Every rank derives the same period from rank 0's plan and the
// same device kind.
func exchangePeriod(pr *Prepared, pl plan.Plan, dev gpu.Device, parts, depth int) int {
	shape := pr.State.Shape
	rows := (shape[0] + parts - 1) / parts
	part := append([]int{rows}, shape[1:]...)
	p, err := model.Predict(model.Input{Prog: pr.Prog, Plan: pl, Shape: part, Steps: 1000, Dev: loadDeviceProfile(dev, false, nil)})
	if err != nil || p.Seconds <= 0 {
		return depth
	}
	cells := 1.0
	row := int64(1)
	for a, n := range part {
		cells *= float64(n)
		if a > 0 {
			row *= int64(n)
		}
	}
	return model.ExchangePeriod(cells*1000/p.Seconds, row, pr.Prog.Reach()[0], depth, rows, model.Links["nvlink4"])
}

// relay is the coordinator as the halos' transport. The run closes the coordinator itself,
// after telling the other ranks how the run ended: a transport closed with its sub-domains
// would leave before an error of this rank could reach them.
type relay struct{ *decomp.Coordinator }

func (relay) Close() error { return nil }

// runFingerprint lists what every rank of a multi-process run must share, one item a line:
// the program, its data and every option that changes the result or the ranks' common
// schedule of exchanges and gathers (output paths aside: only rank 0 writes).
func runFingerprint(o RunOptions, pr *Prepared) []string {
	s := pr.State
	m := o.Multi
	fp := []string{"program " + ProgramHash(pr.Prog), "size " + sizeString(s.Shape), "type " + pr.Prog.DefaultType.String(),
		fmt.Sprintf("steps %d", o.Steps), fmt.Sprintf("seed %d", s.Seed)}
	for _, p := range pr.Prog.Params {
		fp = append(fp, fmt.Sprintf("param %s=%s", p.Name, paramText(s.Params[p.Index])))
	}
	h := sha256.New()
	for _, g := range pr.Prog.Grids {
		for _, a := range []*gridio.Array{s.Cur[g.Index], s.Prev[g.Index]} {
			if a != nil {
				h.Write([]byte(arrayHash(a)))
			}
		}
	}
	fp = append(fp, fmt.Sprintf("initial data sha256 %.16x", h.Sum(nil)),
		"backend "+orNone(o.Backend), "plan "+orNone(o.Plan), "tune "+orNone(o.Tune), fmt.Sprintf("fastmath %v", o.FastMath),
		"split "+orNone(m.Split), fmt.Sprintf("exchange %d", m.Exchange), "overlap "+orNone(m.Overlap), fmt.Sprintf("verify %v", o.Verify),
		fmt.Sprintf("observe-every %d", o.ObserveEvery), fmt.Sprintf("check-every %d", o.CheckEvery),
		fmt.Sprintf("observables %v", o.Observables != "" || o.ObservablesPNG != ""),
		fmt.Sprintf("snapshot-every %d", o.SnapshotEvery), fmt.Sprintf("gif-every %d", o.GIFEvery),
		fmt.Sprintf("checkpoint-every %d", o.CheckpointEvery))
	return fp
}

// followsRankZero says a fingerprint item leaves the choice to rank 0, which chooses the plan
// and the layout and shares them: a rank given no --plan, --split or --tune takes rank 0's.
func followsRankZero(item string) bool {
	return item == "plan (none)" || item == "split (none)" || item == "tune (none)"
}

// orNone is a fingerprint's text for an option's value.
func orNone(v string) string {
	if v == "" {
		return "(none)"
	}
	return v
}

// agreeOnRun has rank 0 compare every rank's fingerprint with its own before any work, and
// every rank refuse the run if one differs: ranks started with other options would run and
// exit 0 with a wrong result.
func agreeOnRun(c *decomp.Coordinator, fp []string) error {
	all, err := c.Gather([]byte(strings.Join(fp, "\n")))
	if err != nil {
		return fmt.Errorf("comparing the ranks' options: %w", err)
	}
	verdict := ""
	for r, b := range all {
		if r == 0 || verdict != "" {
			continue
		}
		theirs := strings.Split(string(b), "\n")
		for i, line := range fp {
			if i < len(theirs) && followsRankZero(theirs[i]) {
				continue
			}
			if i >= len(theirs) || theirs[i] != line {
				got := "nothing"
				if i < len(theirs) {
					got = theirs[i]
				}
				verdict = fmt.Sprintf("rank %d was started with another run than rank 0: %s (rank 0: %s); start every rank with the same program, data and options", r, got, line)
				break
			}
		}
	}
	b, err := c.Broadcast([]byte(verdict))
	if err != nil {
		return fmt.Errorf("comparing the ranks' options: %w", err)
	}
	if len(b) > 0 {
		return errors.New(string(b))
	}
	return nil
}

// runMulti carries out `tempest run` split into sub-domains, with the run loop of a single
// device over a splitStepper: observables, until, snapshots, GIFs, checkpoints, --resume and
// signals work as on one device, from the state gathered at their steps. Rank 0 (or the only
// process) reports, verifies and writes every file; the other ranks of a multi-process run
// keep its schedule, take part in its gathers and stop where it stops.
func runMulti(o RunOptions, stdout, stderr io.Writer) (*Result, error) {
	m := o.Multi
	if err := m.check(); err != nil {
		return nil, err
	}
	if o.Out != "" {
		if _, err := outputFormat(o.Out); err != nil {
			return nil, err
		}
	}
	mr := &multiRun{caches: map[gpu.Device]*gpurun.Modules{}}
	defer mr.close()
	res, err := mr.run(o, stdout, stderr)
	if err == nil {
		return res, nil
	}
	mr.mu.Lock()
	failure := mr.failure
	mr.mu.Unlock()
	if failure != nil {
		err = failure // the run stopped because its transfers were aborted for it
	}
	if mr.coord != nil {
		if cause := mr.coord.Err(); cause != nil && failure == nil {
			// Another rank failed first: this one stopped because of it (its NCCL transfers
			// were aborted), so the other's reason is the run's.
			return res, fmt.Errorf("rank %d stops: %w", mr.rank, cause)
		}
		mr.coord.Fail(err) // the other ranks stop now, with this rank's reason
	}
	return res, err
}

// watch has an NCCL transport poll its communicators for failures met in the background: one
// aborts the run here (its reason kept for the report) and, through the coordinator, on every
// other rank.
func (mr *multiRun) watch(t decomp.Transport) {
	nt, ok := t.(*decomp.NCCL)
	if !ok {
		return
	}
	nt.Watch(ncclPoll, func(err error) {
		mr.mu.Lock()
		mr.failure = err
		mr.mu.Unlock()
		if mr.coord != nil {
			mr.coord.Fail(err)
		}
	})
}

// ncclPoll is how often a split run asks its NCCL communicators for errors met in the
// background (decomp.NCCL.Watch).
const ncclPoll = time.Second

// aborter is a transport whose transfers can be given up from another goroutine; the NCCL
// transport must stay one, or a failed rank's peers wait for it until failGrace.
type aborter interface{ Abort() }

var _ aborter = (*decomp.NCCL)(nil)

// failGrace is how long a rank whose run failed elsewhere gives its own work to return the
// failure before the process exits regardless (a kernel or NCCL transfer waiting for a dead
// rank may never return).
const failGrace = 10 * time.Second

// onFailure runs when another rank died, hung or failed: it aborts the NCCL communicators,
// whose transfers would otherwise wait for the dead rank forever, and, in the command-line
// tool, ends the process if its work still has not returned after failGrace.
func (mr *multiRun) onFailure(err error, exit bool, stderr io.Writer) {
	mr.mu.Lock()
	t := mr.t
	mr.mu.Unlock()
	if a, ok := t.(aborter); ok {
		a.Abort()
	}
	if !exit {
		return
	}
	time.Sleep(failGrace)
	fmt.Fprintf(stderr, "tempest: rank %d stops: %v\n", mr.rank, err)
	os.Exit(1)
}

// join connects this rank to the others and, for --resume, gives it rank 0's checkpoint
// (o.Resume then names the local copy, which remove deletes).
func (mr *multiRun) join(o *RunOptions, stderr io.Writer) (remove func(), err error) {
	m := o.Multi
	mr.rank = m.Rank
	jo := decomp.JoinOptions{Timeout: m.Timeout, Secret: m.Secret, RunID: m.RunID,
		Log:       func(s string) { fmt.Fprintln(stderr, "note: "+s) },
		OnFailure: func(err error) { mr.onFailure(err, o.Signals, stderr) }}
	if mr.coord, err = decomp.Connect(m.Coordinator, m.Rank, m.Ranks, jo); err != nil {
		return nil, err
	}
	if o.Resume == "" {
		return func() {}, nil
	}
	resume, remove, err := shareCheckpoint(mr.coord, o.Resume)
	if err != nil {
		return nil, err
	}
	o.Resume = resume
	return remove, nil
}

// choosePlan picks the plan every part runs (rank 0's, in a multi-process run), its deepest
// launch and the exchange period, and fills res's device and plan (devices only).
func (mr *multiRun) choosePlan(o RunOptions, pr *Prepared, dev gpu.Device, parts int, res *Result, stderr io.Writer) (pl plan.Plan, depth, period int, err error) {
	m := o.Multi
	depth = 1
	if dev != nil {
		name := o.Plan
		if name == "" && m.Rank == 0 {
			name = subdomainPlan(dev, pr, o, parts, stderr)
		}
		if name == "" && m.Rank == 0 {
			name = ChoosePlanName(dev, pr, o.Tune, o.FastMath, stderr)
		}
		if mr.coord != nil {
			// Every process runs rank 0's plan: tuning caches of other hosts may differ, and
			// the exchange period follows from the plan.
			b, err := mr.coord.Broadcast([]byte(name))
			if err != nil {
				return pl, 0, 0, fmt.Errorf("sharing the plan: %w", err)
			}
			name = string(b)
		}
		if pl, err = parsePlan(name, pr.Prog, o.FastMath); err != nil {
			return pl, 0, 0, fmt.Errorf("--plan: %w", err)
		}
		if depth, err = decomp.PlanDepth(pr.State, pl); err != nil {
			return pl, 0, 0, err
		}
		props := dev.Props()
		res.Backend, res.Device, res.Plan, res.FastMath = props.Backend, props.Name, pl.String(), pl.FastMath
	}
	period = depth
	if m.Exchange > 0 {
		period = m.Exchange
	} else if dev != nil && dev.Props().Backend == "cuda" && parts > 1 && m.Subdomains == 0 && (m.Split == "" || m.Split == "1d") {
		period = exchangePeriod(pr, pl, dev, parts, depth)
	}
	return pl, depth, period, nil
}

// subdomainPlan is the tuning cache's plan for the sub-domains' size (`tempest tune --gpus N`,
// with --split PxQ for a grid of parts), which a split run takes before the whole grid's: a
// part a quarter of the grid is another size class, with other best chunks and tiles. "" when
// the cache has none, the split model picks the grid at run time (2d, auto) or --tune asks
// otherwise.
func subdomainPlan(dev gpu.Device, pr *Prepared, o RunOptions, parts int, log io.Writer) string {
	if parts < 2 || (o.Tune != "" && o.Tune != "cached") {
		return ""
	}
	shape, ok, err := subdomainShapeFor(pr.State.Shape, parts, o.Multi.Split)
	if err != nil || !ok {
		return ""
	}
	pl, b, err := cachedPlan(dev, pr.Prog, shape, o.FastMath)
	if err != nil || b == nil {
		return ""
	}
	fmt.Fprintf(log, "plan %s from the tuning cache, tuned for a sub-domain (%.4f ms/step measured at %v)\n", pl, b.SecondsPerStep*1e3, sizeString(b.Shape))
	return pl.String()
}

// layout lays the parts out: rank 0 (or the only process) decides, and every other rank lays
// them out as rank 0 does (its device profile decides --split auto).
func (mr *multiRun) layout(m MultiOptions, pr *Prepared, parts, period int, pl plan.Plan, dev gpu.Device) (l *decomp.Layout, chose string, err error) {
	link := splitLink(m, dev != nil && dev.Props().Backend == "cuda")
	if mr.coord == nil || m.Rank == 0 {
		if l, chose, err = splitLayout(m, pr, parts, period, pl, dev, link); err != nil {
			return nil, "", err
		}
	}
	if mr.coord != nil {
		var grid []byte
		if l != nil {
			rows, cols := l.Grid()
			grid = fmt.Appendf(nil, "%dx%d", rows, cols)
		}
		b, err := mr.coord.Broadcast(grid)
		if err != nil {
			return nil, "", fmt.Errorf("sharing the split: %w", err)
		}
		m.Split = string(b)
		if l, _, err = splitLayout(m, pr, parts, period, pl, dev, link); err != nil {
			return nil, "", err
		}
	}
	return l, chose, nil
}

// partPlan is the plan the sub-domains run: pl, or with --overlap ranges pl made to run over
// ranges of planes (decomp.RangedPlan: GPU sub-domains, n5d plans).
func partPlan(m MultiOptions, pl plan.Plan, dev gpu.Device) (plan.Plan, error) {
	if m.Overlap != "ranges" {
		return pl, nil
	}
	if dev == nil {
		return pl, fmt.Errorf("--overlap ranges: the CPU engine's sub-domains run whole; it is for GPU sub-domains with n5d plans")
	}
	r, err := decomp.RangedPlan(pl)
	if err != nil {
		return pl, fmt.Errorf("--overlap ranges: %w", err)
	}
	return r, nil
}

// dropped says which settings of the plan as chosen the sub-domains' plan goes without
// (--overlap ranges: rimcut and chain follow the whole axis), "" if none.
func dropped(chosen, part plan.Plan) string {
	var d []string
	for _, s := range []struct {
		name        string
		had, hasNow bool
	}{{"rimcut", chosen.RimCut, part.RimCut}, {"chain", chosen.Chain, part.Chain}} {
		if s.had && !s.hasNow {
			d = append(d, s.name)
		}
	}
	if len(d) == 0 {
		return ""
	}
	return "; the plan goes without " + strings.Join(d, " and ") + ", whose chunks follow the whole axis"
}

// run is runMulti once the options are checked; its errors end the run on every rank.
func (mr *multiRun) run(o RunOptions, stdout, stderr io.Writer) (*Result, error) {
	m := o.Multi
	parts, err := mr.openDevices(o, stderr)
	if err != nil {
		return nil, err
	}
	if m.Ranks > 0 {
		remove, err := mr.join(&o, stderr)
		if err != nil {
			return nil, err
		}
		defer remove()
	}
	copies := 3.0 // the global state, the parts' states and their engines' buffers
	if o.Verify {
		copies++
	}
	pr, err := Prepare(o, copies)
	if err != nil {
		return nil, err
	}
	if err := checkObserveFlags(o, pr.Prog); err != nil {
		return nil, err
	}
	if err := decomp.Splittable(pr.Prog); err != nil {
		return nil, err
	}
	if mr.coord != nil {
		if err := agreeOnRun(mr.coord, runFingerprint(o, pr)); err != nil {
			return nil, err
		}
	}
	report := m.Ranks == 0 || m.Rank == 0
	if report {
		for _, n := range pr.Notes {
			fmt.Fprintln(stderr, n)
		}
	}
	s := pr.State
	start := s.Steps
	if start > o.Steps {
		return nil, fmt.Errorf("--resume %s: the checkpoint is at step %d, past --steps %d (with --resume, --steps is the step the run ends at)", o.Resume, start, o.Steps)
	}
	steps := o.Steps - start
	var initial *state.State
	if o.Verify {
		initial = s.Clone()
	}
	var dev gpu.Device
	for _, d := range mr.devs {
		if d != nil && dev == nil {
			dev = d
		}
	}
	res := &Result{Program: pr.Prog.Name, Size: s.Shape, Steps: steps, StartStep: start, Type: pr.Prog.DefaultType.String(), Backend: "cpu", Device: cpuName(), Plan: "cpu engine"}
	pl, depth, period, err := mr.choosePlan(o, pr, dev, parts, res, stderr)
	if err != nil {
		return nil, err
	}
	l, chose, err := mr.layout(m, pr, parts, period, pl, dev)
	if err != nil {
		return nil, err
	}
	if mr.coord != nil {
		// No message of the run is larger than its state: a longer one is refused.
		mr.coord.SetLimit(stateBytes(s) + 1<<20)
	}
	t, how, err := mr.transport(o, stderr)
	if err != nil {
		return nil, err
	}
	mr.mu.Lock()
	mr.t = t
	mr.mu.Unlock()
	mr.watch(t)
	mine := decomp.All
	if m.Ranks > 0 {
		mine = func(i int) bool { return i == m.Rank }
	}
	overlap, why := m.overlapFor(t)
	ratePlan := pl // the plan whose tuned rate prices the split model's compute
	if pl, err = partPlan(m, pl, dev); err != nil {
		t.Close()
		return nil, err
	}
	res.Plan = pl.String()
	d, err := mr.split(s, l, mine, pl, t, overlap)
	if err != nil {
		t.Close()
		return nil, err
	}
	defer d.Close()
	where := fmt.Sprintf("%d sub-domains", parts)
	switch {
	case m.GPUs > 0:
		where += fmt.Sprintf(" on %d %s devices", m.GPUs, res.Backend)
	case m.Ranks > 0:
		where += fmt.Sprintf(" in %d processes (this is rank %d)", m.Ranks, m.Rank)
	}
	from := ""
	if start > 0 {
		from = fmt.Sprintf(" (from step %d of a checkpoint)", start)
	}
	along, halos := splitReport(l, pr.Prog.Axes, steps, how)
	fmt.Fprintf(stdout, "%s: %s, %s, %d steps%s, %s on %s (%s), %s %s\n", pr.Prog.Name, sizeString(s.Shape), res.Type, steps, from, res.Plan, res.Device, res.Backend, where, along)
	if chose != "" && report {
		fmt.Fprintln(stdout, chose)
	}
	fmt.Fprintln(stdout, halos)
	if len(l.Exchanges()) > 0 {
		fmt.Fprintln(stdout, overlapLine(l, mine, overlap, why, m.Overlap == "ranges", t)+dropped(ratePlan, pl))
	}
	for _, p := range d.Parts {
		if dp, ok := decomp.Interior(p).(interface{ Runner() *gpurun.Runner }); ok && report {
			for _, line := range dp.Runner().KernelReport() {
				fmt.Fprintln(stdout, line)
			}
			break
		}
	}
	prof, profReport := splitProfile(d, m, stdout)
	defer profReport()
	sp := &splitStepper{d: d, s: s, coord: mr.coord, depth: depth, prof: prof, devs: d.Devices()}
	loop := &loop{eng: sp, s: s, target: o.Steps}
	if mr.coord != nil {
		loop.agree = agreeOver(mr.coord)
	}
	ss, err := newSession(o, pr, loop, report, stdout, stderr)
	if err != nil {
		return nil, err
	}
	defer ss.abort()
	if err := mr.start(d); err != nil {
		return nil, err
	}
	if res.Seconds, err = ss.run(loop, steps, stdout, stderr); err != nil {
		return nil, err
	}
	if s.Steps != o.Steps {
		steps = s.Steps - start // an until test ended the run early
		res.Steps = steps
		if report {
			fmt.Fprintf(stdout, "the run ended at step %d\n", s.Steps)
		}
	}
	if m.Ranks > 0 {
		if res.Seconds, err = mr.slowest(res.Seconds); err != nil {
			return nil, err
		}
	}
	cells := UpdatedCells(s) * float64(steps)
	if res.Seconds > 0 {
		res.GCellsPerS = cells / res.Seconds / 1e9
		res.GFLOPPerS = cells * float64(pr.Summary.FLOPs) / res.Seconds / 1e9
	}
	if !report {
		fmt.Fprintf(stdout, "rank %d done at step %d; rank 0 reports and writes the outputs\n", m.Rank, s.Steps)
		return res, nil
	}
	clock := "the devices' time, exchanges included"
	if sp.devs == nil {
		clock = "wall clock, exchanges included"
	}
	fmt.Fprintf(stdout, "time %.3f s (%s), %.3f GCells/s, %.2f GFLOP/s (%d FLOP/cell)\n", res.Seconds, clock, res.GCellsPerS, res.GFLOPPerS, pr.Summary.FLOPs)
	if sp, ok := predictSplitRun(pr, ratePlan, dev, m, l, period, steps, overlap); ok && res.GCellsPerS > 0 {
		fmt.Fprintln(stdout, sp.line(cells, res.GCellsPerS))
	}
	warnNonFinite(s, stderr)
	ss.obs.warnNonFinite(stderr)
	if o.Verify {
		eng := cpu.New(initial)
		eng.Run(steps, nil)
		eng.Sync()
		maxAbs, rms := ref.Compare(initial, s)
		res.MaxAbsErr, res.RMSErr = &maxAbs, &rms
		fmt.Fprintf(stdout, "verify against the reference (CPU engine on the whole domain): max abs error %.3g, RMS error %.3g\n", maxAbs, rms)
	}
	if err := ss.finish(stdout); err != nil {
		return nil, err
	}
	if err := writeOutputs(o, pr, stdout); err != nil {
		return nil, err
	}
	return res, nil
}

// slowest is the run's time over every process, the slowest's, gathered from the ranks. That is
// the ranks' last exchange: what follows (rank 0's verification and files) is local, and a rank
// that ends now, however it ends, must not stop it, so it leaves the coordinator.
func (mr *multiRun) slowest(seconds float64) (float64, error) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], math.Float64bits(seconds))
	all, err := mr.coord.Gather(b[:])
	if err != nil {
		return 0, err
	}
	for _, x := range all {
		if len(x) == 8 {
			seconds = max(seconds, math.Float64frombits(binary.LittleEndian.Uint64(x)))
		}
	}
	mr.coord.Close()
	return seconds, nil
}

// start readies the split run's clock: the sub-domains' first exchange (NCCL connects on
// first use, which must not fall inside the run) and, between processes, a barrier, so that
// no rank's clock runs while another still compiles.
func (mr *multiRun) start(d *decomp.Domain) error {
	if err := d.Connect(); err != nil {
		return fmt.Errorf("connecting the sub-domains: %w", err)
	}
	if mr.coord != nil {
		if err := mr.coord.Barrier(); err != nil {
			return fmt.Errorf("waiting for the ranks to start: %w", err)
		}
	}
	return nil
}

// split builds the domain: this process's parts of layout l on their devices (the CPU engine
// where a part has none) with plan pl, halos through t, bands where overlap says.
func (mr *multiRun) split(s *state.State, l *decomp.Layout, mine func(int) bool, pl plan.Plan, t decomp.Transport, overlap bool) (*decomp.Domain, error) {
	split := decomp.Split
	if overlap {
		split = decomp.SplitOverlapped
	}
	d, err := split(s, l, mine, func(i int, ps *state.State) (decomp.Part, error) {
		dv := mr.devs[i]
		if dv == nil {
			return decomp.NewHostPart(ps), nil
		}
		c := mr.caches[dv]
		if c == nil {
			c = gpurun.NewModules(dv)
			mr.caches[dv] = c
		}
		return decomp.NewDevicePart(dv, ps, pl, c)
	}, t)
	if err != nil {
		return nil, err
	}
	// A diagnostic for measuring: ranged periods launch the planes they send before the
	// exchange, on the kernels' stream, as before the transfers' stream took them.
	d.SerialSent = os.Getenv("TEMPEST_RANGES_SERIAL") == "1"
	return d, nil
}

// splitProfile starts the diagnostic TEMPEST_SPLIT_PROFILE asks for: where a split run's
// periods go (decomp.Profile), reported per sub-domain when the run ends; a value ending in
// .csv also names a file for every period's times (a rank's file adds .rankN). Without it the
// profile is nil and the report does nothing.
func splitProfile(d *decomp.Domain, m MultiOptions, stdout io.Writer) (*decomp.Profile, func()) {
	v := os.Getenv("TEMPEST_SPLIT_PROFILE")
	if v == "" {
		return nil, func() {}
	}
	prof := d.EnableProfile()
	return prof, func() {
		for _, line := range prof.Report() {
			fmt.Fprintf(stdout, "rank %d: %s\n", m.Rank, line)
		}
		if strings.HasSuffix(v, ".csv") {
			if m.Ranks > 0 {
				v = strings.TrimSuffix(v, ".csv") + fmt.Sprintf(".rank%d.csv", m.Rank)
			}
			if f, err := os.Create(v); err == nil {
				prof.WriteCSV(f)
				f.Close()
			}
		}
	}
}

// stateBytes is the size of a state's arrays, both levels.
func stateBytes(s *state.State) int64 {
	var n int64
	for _, g := range s.Prog.Grids {
		for _, a := range []*gridio.Array{s.Cur[g.Index], s.Prev[g.Index]} {
			if a != nil {
				n += int64(len(a.Bytes()))
			}
		}
	}
	return n
}

// shareCheckpoint gives every rank of a multi-process run the checkpoint rank 0 reads, as
// rank 0 alone writes them: the other ranks get its bytes through the coordinator, in a
// temporary file (remove deletes it), so that their hosts need no copy.
func shareCheckpoint(c *decomp.Coordinator, path string) (string, func(), error) {
	var b []byte
	var rerr error
	if c.Rank == 0 {
		b, rerr = os.ReadFile(path) // on failure, the empty message stops the other ranks
	}
	// The size first: every rank then accepts a message that large, and no larger.
	size, err := c.Broadcast(binary.LittleEndian.AppendUint64(nil, uint64(len(b))))
	if err != nil || len(size) != 8 {
		return "", nil, fmt.Errorf("--resume: receiving rank 0's checkpoint: %v", err)
	}
	c.SetLimit(int64(binary.LittleEndian.Uint64(size)) + 1<<20)
	b, err = c.Broadcast(b)
	switch {
	case rerr != nil:
		return "", nil, fmt.Errorf("--resume %s: %w", path, rerr)
	case err != nil:
		return "", nil, fmt.Errorf("--resume: receiving rank 0's checkpoint: %w", err)
	case c.Rank == 0:
		return path, func() {}, nil
	}
	if len(b) == 0 {
		return "", nil, fmt.Errorf("--resume: rank 0 could not read its checkpoint %s", path)
	}
	f, err := os.CreateTemp("", "tempest-resume-*.npz")
	if err != nil {
		return "", nil, fmt.Errorf("--resume: %w", err)
	}
	remove := func() { os.Remove(f.Name()) }
	_, err = f.Write(b)
	if err = errors.Join(err, f.Close()); err != nil {
		remove()
		return "", nil, fmt.Errorf("--resume: %w", err)
	}
	return f.Name(), remove, nil
}
