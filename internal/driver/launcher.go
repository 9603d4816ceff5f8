package driver

import (
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"strconv"
	"strings"
)

// Launch is what a launcher's environment says about this process's place in a multi-process run.
type Launch struct {
	Launcher    string // which environment was read, for messages: "TEMPEST_*", "torchrun", "Open MPI", "PMI (MPICH, Intel MPI)", "Slurm"
	Rank, Ranks int
	LocalRank   int    // rank among the processes of this host; -1 when the environment does not say
	LocalRanks  int    // processes on this host; 0 when unknown
	Coordinator string // HOST:PORT where rank 0 listens; "" when the environment names none
	RunID       string // the launcher's job/run identity ("" when none): lets rank 0 and the others tell a stale process of an earlier job from this one
}

// derivedPortBase is the first port of the ones derived from a run id (derivedPort): torchrun's
// default MASTER_PORT, so that the ports tempest picks by itself sit where users of these
// launchers already expect rendezvous traffic.
const derivedPortBase = 29500

// launcherEnv names the variables of one launcher. Launchers differ only in names, in where
// their run id comes from and in whether they name a rendezvous of their own, so one reader
// (read) serves them all and the checks are the same for every launcher.
type launcherEnv struct {
	name       string
	rank, size string   // the rank variable's presence selects the launcher
	localRank  []string // the first one set is read
	localSize  []string // the first one set is read (unless localSizeFn)
	// localSizeFn reads the processes on this host where no single variable says it (Slurm);
	// it returns the variable it read, for messages.
	localSizeFn func(e lenv) (n int, from string, err error)
	runID       func(e lenv) string
	// portSeed is the variable whose value derives ports (derivedPort); "" uses the run id.
	portSeed string
	// own is the launcher's own rendezvous, read before the shared ones; "" where it names none.
	own func(e lenv) (string, error)
	// fallback names a rendezvous where nothing else does (Slurm: the first host of the step).
	fallback func(e lenv) (string, error)
}

// launcherEnvs are read in this order, the first whose rank variable is set winning: the most
// specific first, since the outer launchers' variables leak into the inner ones' processes
// (torchrun or mpirun started inside a Slurm job still sees SLURM_PROCID, which then names
// the launcher's own rank, not this process's).
var launcherEnvs = []launcherEnv{
	{
		name: "TEMPEST_*", rank: "TEMPEST_RANK", size: "TEMPEST_RANKS",
		localRank: []string{"TEMPEST_LOCAL_RANK"},
		runID:     func(e lenv) string { return e.str("TEMPEST_RUN_ID") },
		own:       tempestCoordinator,
	},
	{
		name: "torchrun", rank: "RANK", size: "WORLD_SIZE",
		localRank: []string{"LOCAL_RANK"}, localSize: []string{"LOCAL_WORLD_SIZE"},
		runID: func(e lenv) string { return e.str("TORCHELASTIC_RUN_ID") },
		// torchrun's agent on the first node listens at MASTER_PORT for its own store
		// (TORCHELASTIC_USE_AGENT_STORE: the static rendezvous, and c10d by default since
		// PyTorch 2.4): rank 0 listens at the port after it.
		own: func(e lenv) (string, error) {
			c, err := masterCoordinator(e)
			if c == "" || err != nil {
				return c, err
			}
			host, port, _ := net.SplitHostPort(c)
			p, _ := strconv.Atoi(port)
			if p == 65535 {
				return "", fmt.Errorf("MASTER_PORT=%d: tempest's rank 0 listens at MASTER_PORT+1 (torchrun's agent holds MASTER_PORT); choose a lower port", p)
			}
			return net.JoinHostPort(host, strconv.Itoa(p+1)), nil
		},
	},
	{
		name: "Open MPI", rank: "OMPI_COMM_WORLD_RANK", size: "OMPI_COMM_WORLD_SIZE",
		localRank: []string{"OMPI_COMM_WORLD_LOCAL_RANK"}, localSize: []string{"OMPI_COMM_WORLD_LOCAL_SIZE"},
		// Open MPI 5 (PRRTE) no longer exports the ess job id; its PMIx namespace names the job.
		runID: func(e lenv) string { return e.first("OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE") },
	},
	{
		name: "PMI (MPICH, Intel MPI)", rank: "PMI_RANK", size: "PMI_SIZE",
		// Hydra (MPICH, Intel MPI) says MPI_LOCAL*; Cray MPICH's launchers say PMI_LOCAL_*.
		localRank: []string{"MPI_LOCALRANKID", "PMI_LOCAL_RANK"},
		localSize: []string{"MPI_LOCALNRANKS", "PMI_LOCAL_SIZE"},
		runID:     func(lenv) string { return "" },
	},
	{
		name: "Slurm", rank: "SLURM_PROCID", size: "SLURM_NTASKS",
		localRank:   []string{"SLURM_LOCALID"},
		localSizeFn: slurmLocalSize,
		runID: func(e lenv) string {
			id := e.str("SLURM_JOB_ID")
			if step := e.first("SLURM_STEP_ID", "SLURM_STEPID"); id != "" && step != "" {
				id += "." + step
			}
			return id
		},
		portSeed: "SLURM_JOB_ID",
		fallback: slurmCoordinator,
	},
}

// launchFromEnv reads the first launcher environment present, in this order: TEMPEST_RANK/TEMPEST_RANKS/TEMPEST_LOCAL_RANK/TEMPEST_COORDINATOR/TEMPEST_RUN_ID; torchrun (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, TORCHELASTIC_RUN_ID); Open MPI (OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_SIZE, run id from OMPI_MCA_ess_base_jobid if set); PMI as set by MPICH's Hydra and Intel MPI (PMI_RANK, PMI_SIZE, MPI_LOCALRANKID, MPI_LOCALNRANKS); Slurm (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_NTASKS_PER_NODE or SLURM_TASKS_PER_NODE's first number, run id SLURM_JOB_ID plus "." SLURM_STEP_ID when set).
// ok is false when none is present (a rank variable absent). err is a clear message naming the variable for malformed or inconsistent values (not a number, size < 1, rank outside 0..size-1, local rank outside its range).
//
// It exists so that ranks started by a launcher need no --ranks, --rank or --coordinator:
// the launcher already told each process where it stands. A variable set to "" counts as
// absent. With err, ok is true and l.Launcher says which environment was read. Besides the
// names above it reads Cray MPICH's PMI_LOCAL_RANK and PMI_LOCAL_SIZE, Open MPI 5's
// PMIX_NAMESPACE as the run id, and of SLURM_TASKS_PER_NODE this node's entry where the nodes'
// counts differ (slurmLocalSize).
//
// The rendezvous (Coordinator) is, in order: TEMPEST_COORDINATOR (the user's word beats a
// launcher's); the launcher's own (torchrun's MASTER_ADDR at MASTER_PORT+1, since torchrun's
// agent holds MASTER_PORT); MASTER_ADDR and MASTER_PORT where both are set (many MPI and
// Slurm scripts export them for PyTorch); for Slurm, the
// first host of the step (slurmCoordinator); where every rank is on this host, 127.0.0.1 at a
// port derived from the run id (derivedPort). Otherwise it is "" and the caller asks for
// --coordinator.
func launchFromEnv(getenv func(string) string) (l Launch, ok bool, err error) {
	e := lenv(getenv)
	for _, le := range launcherEnvs {
		if e.str(le.rank) == "" {
			continue
		}
		got, err := le.read(e)
		if err != nil {
			return Launch{Launcher: le.name, LocalRank: -1}, true, fmt.Errorf("%s environment: %w", le.name, err)
		}
		return got, true, nil
	}
	return Launch{LocalRank: -1}, false, nil
}

// read reads one launcher's variables and checks them against each other.
func (le launcherEnv) read(e lenv) (Launch, error) {
	l := Launch{Launcher: le.name, LocalRank: -1}
	var err error
	if e.str(le.size) == "" {
		return l, fmt.Errorf("%s is set but %s is not: give %s the number of processes of the run", le.rank, le.size, le.size)
	}
	if l.Ranks, err = e.int(le.size, "the number of processes of the run"); err != nil {
		return l, err
	}
	if l.Ranks < 1 {
		return l, fmt.Errorf("%s=%d: expected the number of processes of the run, at least 1", le.size, l.Ranks)
	}
	if l.Rank, err = e.int(le.rank, "this process's rank"); err != nil {
		return l, err
	}
	if l.Rank < 0 || l.Rank >= l.Ranks {
		return l, fmt.Errorf("%s=%d is outside 0..%d (%s=%d): ranks are numbered from 0 to the number of processes less one", le.rank, l.Rank, l.Ranks-1, le.size, l.Ranks)
	}

	sizeVar := ""
	if le.localSizeFn != nil {
		l.LocalRanks, sizeVar, err = le.localSizeFn(e)
	} else if sizeVar = e.firstSet(le.localSize...); sizeVar != "" {
		l.LocalRanks, err = e.int(sizeVar, "the number of processes on this host")
	}
	if err != nil {
		return l, err
	}
	if sizeVar != "" && (l.LocalRanks < 1 || l.LocalRanks > l.Ranks) {
		return l, fmt.Errorf("%s=%d: expected the number of processes on this host, 1 to %d (%s=%d)", sizeVar, l.LocalRanks, l.Ranks, le.size, l.Ranks)
	}
	if v := e.firstSet(le.localRank...); v != "" {
		if l.LocalRank, err = e.int(v, "this process's rank on this host"); err != nil {
			return l, err
		}
		switch {
		case l.LocalRanks > 0 && (l.LocalRank < 0 || l.LocalRank >= l.LocalRanks):
			return l, fmt.Errorf("%s=%d is outside 0..%d (%s says %d processes on this host)", v, l.LocalRank, l.LocalRanks-1, sizeVar, l.LocalRanks)
		case l.LocalRank < 0 || l.LocalRank >= l.Ranks:
			return l, fmt.Errorf("%s=%d is outside 0..%d (%s=%d): a rank on this host is below the number of processes", v, l.LocalRank, l.Ranks-1, le.size, l.Ranks)
		}
	}

	l.RunID = le.runID(e)
	if l.Coordinator, err = le.coordinator(e, l); err != nil {
		return l, err
	}
	return l, nil
}

// coordinator picks the rendezvous, in the order launchFromEnv documents.
func (le launcherEnv) coordinator(e lenv, l Launch) (string, error) {
	for _, f := range []func(lenv) (string, error){tempestCoordinator, le.own, masterCoordinator, le.fallback} {
		if f == nil {
			continue
		}
		if c, err := f(e); c != "" || err != nil {
			return c, err
		}
	}
	if l.LocalRanks > 0 && l.LocalRanks == l.Ranks {
		seed := l.RunID
		if le.portSeed != "" {
			seed = e.str(le.portSeed)
		}
		p, err := derivedPort(seed, le.portSeed)
		if err != nil {
			return "", err
		}
		return net.JoinHostPort("127.0.0.1", strconv.Itoa(p)), nil
	}
	return "", nil
}

// masterCoordinator reads torchrun's MASTER_ADDR and MASTER_PORT, where both are set: one
// alone names no rendezvous (every rank sees the same environment, so all of them then fall
// back alike).
func masterCoordinator(e lenv) (string, error) {
	addr, port := e.str("MASTER_ADDR"), e.str("MASTER_PORT")
	if addr == "" || port == "" {
		return "", nil
	}
	host := strings.TrimSuffix(strings.TrimPrefix(addr, "["), "]")
	if host == "" || strings.ContainsAny(host, " \t/[]") || (strings.Contains(host, ":") && net.ParseIP(host) == nil) {
		return "", fmt.Errorf("MASTER_ADDR=%q: expected a host name or IP address, without a port (the port goes in MASTER_PORT)", addr)
	}
	p, ok := portInRange(port)
	if !ok {
		return "", fmt.Errorf("MASTER_PORT=%q: expected a TCP port, 1 to 65535", port)
	}
	return net.JoinHostPort(host, strconv.Itoa(p)), nil
}

// tempestCoordinator reads TEMPEST_COORDINATOR, written as --coordinator is (HOST:PORT; an
// empty host is this machine), so that a launcher without a rendezvous of its own can be
// given one without a flag on every rank's command line.
func tempestCoordinator(e lenv) (string, error) {
	c := e.str("TEMPEST_COORDINATOR")
	if c == "" {
		return "", nil
	}
	_, port, err := net.SplitHostPort(c)
	if err != nil {
		return "", fmt.Errorf("TEMPEST_COORDINATOR=%q: expected HOST:PORT where rank 0 listens, e.g. node0:29500", c)
	}
	if _, ok := portInRange(port); !ok {
		return "", fmt.Errorf("TEMPEST_COORDINATOR=%q: port %q: expected a TCP port, 1 to 65535", c, port)
	}
	return c, nil
}

// slurmCoordinator names the first host of the step (else of the job) as the rendezvous:
// Slurm gives rank 0 to that host's first task under its default (block) distribution, and
// every rank reads the same list, so no one has to tell the others where rank 0 runs. The
// port is derivedPort's from SLURM_JOB_ID.
func slurmCoordinator(e lenv) (string, error) {
	v := e.firstSet("SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST")
	if v == "" {
		return "", nil
	}
	host, err := firstSlurmHost(e.str(v))
	if err != nil {
		return "", fmt.Errorf("%s: %w", v, err)
	}
	p, err := derivedPort(e.str("SLURM_JOB_ID"), "SLURM_JOB_ID")
	if err != nil {
		return "", err
	}
	return net.JoinHostPort(host, strconv.Itoa(p)), nil
}

// derivedPort is the rendezvous port of a run whose launcher names none: 29500 +
// SLURM_JOB_ID % 1000 for Slurm, the same from the run id otherwise (a hash of it where it
// is not a number), 29500 without one. Every rank of the job derives the same port without
// talking, and two jobs sharing a host rarely collide. from names the seed's variable for
// messages; "" where the seed may be any text.
func derivedPort(seed, from string) (int, error) {
	if seed == "" {
		return derivedPortBase, nil
	}
	if from == "SLURM_JOB_ID" && !digitsOnly(seed) {
		return 0, fmt.Errorf("SLURM_JOB_ID=%q: expected the job's number", seed)
	}
	if digitsOnly(seed) {
		// Digit by digit: job ids may exceed any integer type.
		r := 0
		for _, c := range seed {
			r = (r*10 + int(c-'0')) % 1000
		}
		return derivedPortBase + r, nil
	}
	h := fnv.New32a()
	h.Write([]byte(seed))
	return derivedPortBase + int(h.Sum32()%1000), nil
}

// slurmLocalSize reads the number of tasks on this node: SLURM_NTASKS_PER_NODE where the job
// asked for a fixed number, else SLURM_TASKS_PER_NODE ("2(x3),1": two tasks on each of three
// nodes, then one). A list whose nodes differ gives this node's entry (SLURM_NODEID), or
// unknown (0) without it, rather than the first node's count, which would reject the local
// ranks of a fuller node.
func slurmLocalSize(e lenv) (int, string, error) {
	if e.str("SLURM_NTASKS_PER_NODE") != "" {
		n, err := e.int("SLURM_NTASKS_PER_NODE", "the number of tasks on each node")
		return n, "SLURM_NTASKS_PER_NODE", err
	}
	v := e.str("SLURM_TASKS_PER_NODE")
	if v == "" {
		return 0, "", nil
	}
	counts, err := slurmTaskCounts(v)
	if err != nil {
		return 0, "", fmt.Errorf("SLURM_TASKS_PER_NODE=%q: %w", v, err)
	}
	uniform := true
	for _, c := range counts {
		uniform = uniform && c.n == counts[0].n
	}
	if uniform {
		return counts[0].n, "SLURM_TASKS_PER_NODE", nil
	}
	node, err := strconv.Atoi(e.str("SLURM_NODEID"))
	if err != nil || node < 0 {
		return 0, "", nil
	}
	for _, c := range counts {
		if node < c.times {
			return c.n, "SLURM_TASKS_PER_NODE", nil
		}
		node -= c.times
	}
	return 0, "", nil
}

// slurmTaskCount is one entry of SLURM_TASKS_PER_NODE: n tasks on each of times nodes.
type slurmTaskCount struct{ n, times int }

// slurmTaskCounts parses SLURM_TASKS_PER_NODE's compressed form, "2(x3),1".
func slurmTaskCounts(v string) ([]slurmTaskCount, error) {
	const want = "expected task counts per node such as 4 or 2(x3),1"
	var counts []slurmTaskCount
	for _, part := range strings.Split(v, ",") {
		c := slurmTaskCount{times: 1}
		num, rep, hasRep := strings.Cut(part, "(x")
		var err error
		if c.n, err = strconv.Atoi(num); err != nil || c.n < 1 || !digitsOnly(num) {
			return nil, fmt.Errorf("%s", want)
		}
		if hasRep {
			r, ok := strings.CutSuffix(rep, ")")
			if c.times, err = strconv.Atoi(r); !ok || err != nil || c.times < 1 || !digitsOnly(r) {
				return nil, fmt.Errorf("%s", want)
			}
		}
		counts = append(counts, c)
	}
	return counts, nil
}

// firstSlurmHost returns the first host of a Slurm host list, the compressed form Slurm
// writes in SLURM_JOB_NODELIST and SLURM_STEP_NODELIST: "gpu[01-04,07],cpu3" -> "gpu01",
// "node7" -> "node7", "rack[1-2]-n[08-09]" -> "rack1-n08". Numbers keep their leading zeros
// (Slurm pads to the width written). Text after the last bracket ("a[009-011]b") is an error,
// as Slurm rejects it too.
func firstSlurmHost(nodelist string) (string, error) {
	s := strings.TrimSpace(nodelist)
	// The first entry ends at a separator outside brackets (Slurm separates by comma, space
	// or tab).
	depth, end := 0, len(s)
scan:
	for i, c := range s {
		switch c {
		case '[':
			if depth++; depth > 1 {
				return "", fmt.Errorf("host list %q: brackets inside brackets", nodelist)
			}
		case ']':
			if depth--; depth < 0 {
				return "", fmt.Errorf("host list %q: a ']' without its '['", nodelist)
			}
		case ',', ' ', '\t':
			if depth == 0 {
				end = i
				break scan
			}
		}
	}
	if depth != 0 {
		return "", fmt.Errorf("host list %q: a '[' without its ']'", nodelist)
	}
	entry := s[:end]
	if entry == "" {
		return "", fmt.Errorf("host list %q: expected host names such as node[01-04],gpu7", nodelist)
	}
	if i := strings.LastIndexByte(entry, ']'); i >= 0 && i != len(entry)-1 {
		return "", fmt.Errorf("host list %q: text after the last ']' of %q (Slurm writes ranges only at the end of a name)", nodelist, entry)
	}
	var host strings.Builder
	rest := entry
	for {
		open := strings.IndexByte(rest, '[')
		if open < 0 {
			host.WriteString(rest)
			break
		}
		host.WriteString(rest[:open])
		shut := strings.IndexByte(rest, ']') // after open: brackets are balanced and not nested
		first, err := firstInRange(rest[open+1 : shut])
		if err != nil {
			return "", fmt.Errorf("host list %q: [%s]: %w", nodelist, rest[open+1:shut], err)
		}
		host.WriteString(first)
		rest = rest[shut+1:]
	}
	return host.String(), nil
}

// firstInRange checks a bracket's ranges ("01-04,07") and returns the first number as
// written, leading zeros included, since Slurm pads every number of a range to the width of
// its low end.
func firstInRange(r string) (string, error) {
	const want = "expected numbers and ranges such as 01-04,07"
	var first string
	for i, part := range strings.Split(r, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		if !digitsOnly(lo) || (isRange && !digitsOnly(hi)) {
			return "", fmt.Errorf("%s", want)
		}
		if isRange {
			a, errA := strconv.ParseUint(lo, 10, 64)
			b, errB := strconv.ParseUint(hi, 10, 64)
			if errA != nil || errB != nil || a > b {
				return "", fmt.Errorf("%s: %s runs backwards", want, part)
			}
		}
		if i == 0 {
			first = lo
		}
	}
	return first, nil
}

// portInRange checks a TCP port (1 to 65535), so that a bad one is reported with the variable
// that holds it rather than as a failed listen or dial on some rank.
func portInRange(v string) (int, bool) {
	p, err := strconv.Atoi(v)
	return p, err == nil && digitsOnly(v) && p >= 1 && p <= 65535
}

// digitsOnly says whether s is a non-empty run of ASCII digits: strconv alone would take a
// sign.
func digitsOnly(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// lenv reads the environment through a getenv function, so tests give a map instead of
// changing the process's environment.
type lenv func(string) string

// str reads a variable, spaces trimmed: launchers' scripts sometimes leave a stray one.
func (e lenv) str(name string) string { return strings.TrimSpace(e(name)) }

// firstSet returns the first of names that is set, "" if none.
func (e lenv) firstSet(names ...string) string {
	for _, n := range names {
		if e.str(n) != "" {
			return n
		}
	}
	return ""
}

// first returns the value of the first of names that is set.
func (e lenv) first(names ...string) string {
	if n := e.firstSet(names...); n != "" {
		return e.str(n)
	}
	return ""
}

// int reads a whole number; what says what the variable holds, for the message.
func (e lenv) int(name, what string) (int, error) {
	v := e.str(name)
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("%s=%q: expected a whole number, %s", name, v, what)
	}
	return n, nil
}

// applyLauncher makes o a rank of a multi-process run where a launcher started this process
// as one of several and no --ranks says otherwise: the launcher already told each process its
// rank, the run's size and, mostly, where rank 0 listens. Flags given by hand win.
func applyLauncher(o *RunOptions, stderr io.Writer) error {
	if o.Env == nil {
		return nil
	}
	m := &o.Multi
	if m.Secret == "" {
		m.Secret = o.Env("TEMPEST_SECRET")
	}
	if m.Ranks > 0 {
		return nil
	}
	l, ok, err := launchFromEnv(o.Env)
	switch {
	case !ok || (err == nil && l.Ranks < 2):
		return nil // not started by a launcher, or as its only process
	case err != nil:
		return err
	case m.GPUs > 0 || m.Subdomains > 0:
		return fmt.Errorf("%s started %d processes: each runs one sub-domain on one device; drop --gpus and --subdomains (or start one process)", l.Launcher, l.Ranks)
	}
	if m.Coordinator == "" {
		m.Coordinator = l.Coordinator
	}
	if m.Coordinator == "" {
		return fmt.Errorf("%s started %d processes (this is rank %d), but nothing says where rank 0 listens: give --coordinator HOST:PORT, or set TEMPEST_COORDINATOR (or MASTER_ADDR and MASTER_PORT) for every rank", l.Launcher, l.Ranks, l.Rank)
	}
	m.Rank, m.Ranks, m.LocalRank = l.Rank, l.Ranks, max(l.LocalRank, 0)
	if m.RunID == "" {
		m.RunID = l.RunID
	}
	fmt.Fprintf(stderr, "%s: rank %d of %d, coordinator %s\n", l.Launcher, l.Rank, l.Ranks, m.Coordinator)
	return nil
}
