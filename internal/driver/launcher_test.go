package driver

import (
	"strings"
	"testing"
)

// launchEnvOf is a getenv over a map, so the tests never touch the process's environment.
func launchEnvOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// launchEnvWith returns a copy of base with the pairs of kv (name, value, ...) set; "" unsets.
func launchEnvWith(base map[string]string, kv ...string) map[string]string {
	m := map[string]string{}
	for k, v := range base {
		m[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			delete(m, kv[i])
		} else {
			m[kv[i]] = kv[i+1]
		}
	}
	return m
}

// Environments as each launcher sets them, for rank 1 of 4 (two hosts of two where the
// launcher says).
var (
	tempestLaunchEnv = map[string]string{
		"TEMPEST_RANK": "1", "TEMPEST_RANKS": "4", "TEMPEST_LOCAL_RANK": "1",
		"TEMPEST_COORDINATOR": "node0:29600", "TEMPEST_RUN_ID": "exp-7",
	}
	torchrunLaunchEnv = map[string]string{
		"RANK": "1", "WORLD_SIZE": "4", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2",
		"MASTER_ADDR": "node0", "MASTER_PORT": "29400", "TORCHELASTIC_RUN_ID": "job-abc",
	}
	ompiLaunchEnv = map[string]string{
		"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "4",
		"OMPI_COMM_WORLD_LOCAL_RANK": "1", "OMPI_COMM_WORLD_LOCAL_SIZE": "2",
		"OMPI_MCA_ess_base_jobid": "3041656833",
	}
	pmiLaunchEnv = map[string]string{
		"PMI_RANK": "1", "PMI_SIZE": "4", "MPI_LOCALRANKID": "1", "MPI_LOCALNRANKS": "2",
	}
	slurmLaunchEnv = map[string]string{
		"SLURM_PROCID": "1", "SLURM_NTASKS": "4", "SLURM_LOCALID": "1",
		"SLURM_TASKS_PER_NODE": "2(x2)", "SLURM_JOB_ID": "123456", "SLURM_STEP_ID": "0",
		"SLURM_STEP_NODELIST": "gpu[07-08]", "SLURM_JOB_NODELIST": "gpu[01-08]", "SLURM_NODEID": "0",
	}
)

func TestLaunchFromEnv(t *testing.T) {
	cases := []struct {
		name string
		env  map[string]string
		want Launch
	}{
		{"tempest", tempestLaunchEnv,
			Launch{Launcher: "TEMPEST_*", Rank: 1, Ranks: 4, LocalRank: 1, Coordinator: "node0:29600", RunID: "exp-7"}},
		{"tempest bare", map[string]string{"TEMPEST_RANK": "0", "TEMPEST_RANKS": "1"},
			Launch{Launcher: "TEMPEST_*", Rank: 0, Ranks: 1, LocalRank: -1}},
		{"torchrun", torchrunLaunchEnv,
			Launch{Launcher: "torchrun", Rank: 1, Ranks: 4, LocalRank: 1, LocalRanks: 2, Coordinator: "node0:29401", RunID: "job-abc"}},
		{"torchrun IPv6", launchEnvWith(torchrunLaunchEnv, "MASTER_ADDR", "fd00::1"),
			Launch{Launcher: "torchrun", Rank: 1, Ranks: 4, LocalRank: 1, LocalRanks: 2, Coordinator: "[fd00::1]:29401", RunID: "job-abc"}},
		{"torchrun bracketed IPv6", launchEnvWith(torchrunLaunchEnv, "MASTER_ADDR", "[fd00::1]"),
			Launch{Launcher: "torchrun", Rank: 1, Ranks: 4, LocalRank: 1, LocalRanks: 2, Coordinator: "[fd00::1]:29401", RunID: "job-abc"}},
		{"open mpi", ompiLaunchEnv,
			Launch{Launcher: "Open MPI", Rank: 1, Ranks: 4, LocalRank: 1, LocalRanks: 2, RunID: "3041656833"}},
		{"open mpi 5", launchEnvWith(ompiLaunchEnv, "OMPI_MCA_ess_base_jobid", "", "PMIX_NAMESPACE", "prterun-n0-42@1"),
			Launch{Launcher: "Open MPI", Rank: 1, Ranks: 4, LocalRank: 1, LocalRanks: 2, RunID: "prterun-n0-42@1"}},
		{"pmi", pmiLaunchEnv,
			Launch{Launcher: "PMI (MPICH, Intel MPI)", Rank: 1, Ranks: 4, LocalRank: 1, LocalRanks: 2}},
		{"pmi cray", map[string]string{"PMI_RANK": "3", "PMI_SIZE": "4", "PMI_LOCAL_RANK": "1", "PMI_LOCAL_SIZE": "2"},
			Launch{Launcher: "PMI (MPICH, Intel MPI)", Rank: 3, Ranks: 4, LocalRank: 1, LocalRanks: 2}},
		{"pmi without local", map[string]string{"PMI_RANK": "3", "PMI_SIZE": "4"},
			Launch{Launcher: "PMI (MPICH, Intel MPI)", Rank: 3, Ranks: 4, LocalRank: -1}},
		// Slurm: the step's first host, at 29500 + 123456 % 1000.
		{"slurm", slurmLaunchEnv,
			Launch{Launcher: "Slurm", Rank: 1, Ranks: 4, LocalRank: 1, LocalRanks: 2, Coordinator: "gpu07:29956", RunID: "123456.0"}},
		{"slurm job nodelist", launchEnvWith(slurmLaunchEnv, "SLURM_STEP_NODELIST", ""),
			Launch{Launcher: "Slurm", Rank: 1, Ranks: 4, LocalRank: 1, LocalRanks: 2, Coordinator: "gpu01:29956", RunID: "123456.0"}},
		{"slurm old step name", launchEnvWith(slurmLaunchEnv, "SLURM_STEP_ID", "", "SLURM_STEPID", "3"),
			Launch{Launcher: "Slurm", Rank: 1, Ranks: 4, LocalRank: 1, LocalRanks: 2, Coordinator: "gpu07:29956", RunID: "123456.3"}},
		{"slurm batch step", launchEnvWith(slurmLaunchEnv, "SLURM_STEP_ID", ""),
			Launch{Launcher: "Slurm", Rank: 1, Ranks: 4, LocalRank: 1, LocalRanks: 2, Coordinator: "gpu07:29956", RunID: "123456"}},
		{"slurm ntasks per node", launchEnvWith(slurmLaunchEnv, "SLURM_NTASKS_PER_NODE", "2", "SLURM_TASKS_PER_NODE", "junk"),
			Launch{Launcher: "Slurm", Rank: 1, Ranks: 4, LocalRank: 1, LocalRanks: 2, Coordinator: "gpu07:29956", RunID: "123456.0"}},
		// Uneven nodes: this node's count (SLURM_NODEID), not the first node's.
		{"slurm uneven", launchEnvWith(slurmLaunchEnv, "SLURM_PROCID", "3", "SLURM_LOCALID", "2", "SLURM_TASKS_PER_NODE", "1,3", "SLURM_NODEID", "1"),
			Launch{Launcher: "Slurm", Rank: 3, Ranks: 4, LocalRank: 2, LocalRanks: 3, Coordinator: "gpu07:29956", RunID: "123456.0"}},
		{"slurm uneven unknown node", launchEnvWith(slurmLaunchEnv, "SLURM_PROCID", "3", "SLURM_LOCALID", "2", "SLURM_TASKS_PER_NODE", "1,3", "SLURM_NODEID", ""),
			Launch{Launcher: "Slurm", Rank: 3, Ranks: 4, LocalRank: 2, Coordinator: "gpu07:29956", RunID: "123456.0"}},
		{"slurm repeated counts", launchEnvWith(slurmLaunchEnv, "SLURM_PROCID", "5", "SLURM_NTASKS", "7", "SLURM_LOCALID", "0", "SLURM_TASKS_PER_NODE", "2(x3),1", "SLURM_NODEID", "3"),
			Launch{Launcher: "Slurm", Rank: 5, Ranks: 7, LocalRank: 0, LocalRanks: 1, Coordinator: "gpu07:29956", RunID: "123456.0"}},
		{"spaces trimmed", map[string]string{"RANK": " 2 ", "WORLD_SIZE": "4\n", "MASTER_ADDR": " h ", "MASTER_PORT": " 1234 "},
			Launch{Launcher: "torchrun", Rank: 2, Ranks: 4, LocalRank: -1, Coordinator: "h:1235"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok, err := launchFromEnv(launchEnvOf(c.env))
			if err != nil || !ok {
				t.Fatalf("launchFromEnv = %+v, %v, %v; want ok", got, ok, err)
			}
			if got != c.want {
				t.Errorf("launchFromEnv =\n  %+v\nwant\n  %+v", got, c.want)
			}
		})
	}
}

func TestLaunchFromEnvNone(t *testing.T) {
	for _, m := range []map[string]string{
		nil,
		// Sizes, rendezvous and run ids without a rank variable name no launcher.
		{"WORLD_SIZE": "4", "MASTER_ADDR": "h", "MASTER_PORT": "1", "SLURM_NTASKS": "4", "SLURM_JOB_ID": "1",
			"TEMPEST_COORDINATOR": "h:1", "PMI_SIZE": "2", "OMPI_COMM_WORLD_SIZE": "2"},
		// Set to "" is absent.
		{"TEMPEST_RANK": "", "RANK": "", "OMPI_COMM_WORLD_RANK": "", "PMI_RANK": "", "SLURM_PROCID": ""},
	} {
		l, ok, err := launchFromEnv(launchEnvOf(m))
		if ok || err != nil {
			t.Errorf("launchFromEnv(%v) = %+v, %v, %v; want no launcher", m, l, ok, err)
		}
	}
}

// TestLaunchPrecedence removes the winning launcher's rank variable one by one: TEMPEST_*
// beats torchrun beats Open MPI beats PMI beats Slurm.
func TestLaunchPrecedence(t *testing.T) {
	all := map[string]string{}
	for _, m := range []map[string]string{slurmLaunchEnv, pmiLaunchEnv, ompiLaunchEnv, torchrunLaunchEnv, tempestLaunchEnv} {
		for k, v := range m {
			all[k] = v
		}
	}
	for _, step := range []struct{ want, drop string }{
		{"TEMPEST_*", "TEMPEST_RANK"},
		{"torchrun", "RANK"},
		{"Open MPI", "OMPI_COMM_WORLD_RANK"},
		{"PMI (MPICH, Intel MPI)", "PMI_RANK"},
		{"Slurm", "SLURM_PROCID"},
		{"", ""},
	} {
		l, ok, err := launchFromEnv(launchEnvOf(all))
		if err != nil || l.Launcher != step.want || ok != (step.want != "") {
			t.Fatalf("launchFromEnv = %+v, %v, %v; want launcher %q", l, ok, err, step.want)
		}
		delete(all, step.drop)
	}
}

// TestLaunchCoordinator checks where the rendezvous comes from when the launcher names none
// of its own.
func TestLaunchCoordinator(t *testing.T) {
	oneHost := map[string]string{"PMI_RANK": "0", "PMI_SIZE": "2", "MPI_LOCALRANKID": "0", "MPI_LOCALNRANKS": "2"}
	cases := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"mpi: TEMPEST_COORDINATOR before MASTER_*",
			launchEnvWith(ompiLaunchEnv, "MASTER_ADDR", "n0", "MASTER_PORT", "2000", "TEMPEST_COORDINATOR", "n1:3000"), "n1:3000"},
		{"mpi: MASTER_*", launchEnvWith(ompiLaunchEnv, "MASTER_ADDR", "n0", "MASTER_PORT", "2000"), "n0:2000"},
		{"mpi: TEMPEST_COORDINATOR", launchEnvWith(ompiLaunchEnv, "TEMPEST_COORDINATOR", "n1:3000"), "n1:3000"},
		{"mpi: MASTER_ADDR alone names none", launchEnvWith(ompiLaunchEnv, "MASTER_ADDR", "n0", "TEMPEST_COORDINATOR", "n1:3000"), "n1:3000"},
		{"mpi: MASTER_PORT alone names none", launchEnvWith(ompiLaunchEnv, "MASTER_PORT", "2000"), ""},
		{"tempest: its own before MASTER_*", launchEnvWith(tempestLaunchEnv, "MASTER_ADDR", "n0", "MASTER_PORT", "2000"), "node0:29600"},
		{"tempest: MASTER_* without its own", launchEnvWith(tempestLaunchEnv, "TEMPEST_COORDINATOR", "", "MASTER_ADDR", "n0", "MASTER_PORT", "2000"), "n0:2000"},
		{"tempest: empty host is this machine", launchEnvWith(tempestLaunchEnv, "TEMPEST_COORDINATOR", ":29600"), ":29600"},
		{"torchrun: TEMPEST_COORDINATOR without MASTER_*",
			launchEnvWith(torchrunLaunchEnv, "MASTER_ADDR", "", "MASTER_PORT", "", "TEMPEST_COORDINATOR", "n1:3000"), "n1:3000"},
		{"slurm: MASTER_* before the node list", launchEnvWith(slurmLaunchEnv, "MASTER_ADDR", "n0", "MASTER_PORT", "2000"), "n0:2000"},
		{"slurm: TEMPEST_COORDINATOR before the node list", launchEnvWith(slurmLaunchEnv, "TEMPEST_COORDINATOR", "n1:3000"), "n1:3000"},
		{"slurm: no node list, two hosts", launchEnvWith(slurmLaunchEnv, "SLURM_STEP_NODELIST", "", "SLURM_JOB_NODELIST", ""), ""},
		{"slurm: no job id", launchEnvWith(slurmLaunchEnv, "SLURM_JOB_ID", ""), "gpu07:29500"},
		// One host, nothing named: loopback at a port every rank derives alike.
		{"one host: no run id", oneHost, "127.0.0.1:29500"},
		{"one host: numeric run id", launchEnvWith(ompiLaunchEnv, "OMPI_COMM_WORLD_LOCAL_SIZE", "4"), "127.0.0.1:30333"},
		{"one host: slurm job id", launchEnvWith(slurmLaunchEnv, "SLURM_TASKS_PER_NODE", "4", "SLURM_STEP_NODELIST", "", "SLURM_JOB_NODELIST", ""), "127.0.0.1:29956"},
		{"one host: slurm node list still wins", launchEnvWith(slurmLaunchEnv, "SLURM_TASKS_PER_NODE", "4"), "gpu07:29956"},
		{"one host: MASTER_* still wins", launchEnvWith(oneHost, "MASTER_ADDR", "n0", "MASTER_PORT", "2000"), "n0:2000"},
		{"one host unknown: none", launchEnvWith(oneHost, "MPI_LOCALNRANKS", ""), ""},
		{"two hosts: none", launchEnvWith(oneHost, "PMI_SIZE", "4"), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l, ok, err := launchFromEnv(launchEnvOf(c.env))
			if err != nil || !ok {
				t.Fatalf("launchFromEnv = %+v, %v, %v", l, ok, err)
			}
			if l.Coordinator != c.want {
				t.Errorf("Coordinator = %q, want %q", l.Coordinator, c.want)
			}
		})
	}

	// A run id that is not a number hashes to a port, the same on every rank.
	torch := launchEnvWith(torchrunLaunchEnv, "MASTER_ADDR", "", "MASTER_PORT", "", "LOCAL_WORLD_SIZE", "4", "LOCAL_RANK", "3")
	a, _, errA := launchFromEnv(launchEnvOf(torch))
	b, _, errB := launchFromEnv(launchEnvOf(launchEnvWith(torch, "RANK", "0", "LOCAL_RANK", "0")))
	if errA != nil || errB != nil || a.Coordinator != b.Coordinator || !strings.HasPrefix(a.Coordinator, "127.0.0.1:") {
		t.Errorf("one host, run id %q: coordinators %q (%v) and %q (%v); want one loopback address", a.RunID, a.Coordinator, errA, b.Coordinator, errB)
	}
	other, _, _ := launchFromEnv(launchEnvOf(launchEnvWith(torch, "TORCHELASTIC_RUN_ID", "job-abd")))
	if other.Coordinator == a.Coordinator {
		t.Errorf("run ids job-abc and job-abd derive the same port %s", a.Coordinator)
	}
}

func TestLaunchDerivedPort(t *testing.T) {
	for _, c := range []struct {
		seed, from string
		want       int
	}{
		{"", "", 29500},
		{"", "SLURM_JOB_ID", 29500},
		{"123456", "SLURM_JOB_ID", 29956},
		{"1000", "SLURM_JOB_ID", 29500},
		{"999", "", 30499},
		{"123456789012345678901234567890", "", 29500 + 890},
	} {
		got, err := derivedPort(c.seed, c.from)
		if err != nil || got != c.want {
			t.Errorf("derivedPort(%q, %q) = %d, %v; want %d", c.seed, c.from, got, err, c.want)
		}
	}
	for _, seed := range []string{"none", "job-abc", "a", "3a"} {
		p, err := derivedPort(seed, "")
		q, _ := derivedPort(seed, "")
		if err != nil || p != q || p < 29500 || p > 30499 {
			t.Errorf("derivedPort(%q) = %d, %d, %v; want one port in 29500..30499", seed, p, q, err)
		}
	}
}

// TestLaunchErrors checks that each malformed or inconsistent value is refused with a
// message naming its variable.
func TestLaunchErrors(t *testing.T) {
	cases := []struct {
		name    string
		env     map[string]string
		varName string
	}{
		{"tempest size missing", launchEnvWith(tempestLaunchEnv, "TEMPEST_RANKS", ""), "TEMPEST_RANKS"},
		{"tempest rank not a number", launchEnvWith(tempestLaunchEnv, "TEMPEST_RANK", "one"), "TEMPEST_RANK"},
		{"tempest rank too big", launchEnvWith(tempestLaunchEnv, "TEMPEST_RANK", "4"), "TEMPEST_RANK"},
		{"tempest rank negative", launchEnvWith(tempestLaunchEnv, "TEMPEST_RANK", "-1"), "TEMPEST_RANK"},
		{"tempest local rank", launchEnvWith(tempestLaunchEnv, "TEMPEST_LOCAL_RANK", "4"), "TEMPEST_LOCAL_RANK"},
		{"tempest local rank not a number", launchEnvWith(tempestLaunchEnv, "TEMPEST_LOCAL_RANK", "x"), "TEMPEST_LOCAL_RANK"},
		{"tempest coordinator no port", launchEnvWith(tempestLaunchEnv, "TEMPEST_COORDINATOR", "node0"), "TEMPEST_COORDINATOR"},
		{"tempest coordinator port 0", launchEnvWith(tempestLaunchEnv, "TEMPEST_COORDINATOR", "node0:0"), "TEMPEST_COORDINATOR"},
		{"tempest coordinator port big", launchEnvWith(tempestLaunchEnv, "TEMPEST_COORDINATOR", "node0:65536"), "TEMPEST_COORDINATOR"},
		{"tempest coordinator port name", launchEnvWith(tempestLaunchEnv, "TEMPEST_COORDINATOR", "node0:http"), "TEMPEST_COORDINATOR"},
		{"torchrun size zero", launchEnvWith(torchrunLaunchEnv, "WORLD_SIZE", "0"), "WORLD_SIZE"},
		{"torchrun size not a number", launchEnvWith(torchrunLaunchEnv, "WORLD_SIZE", "4.0"), "WORLD_SIZE"},
		{"torchrun size missing", launchEnvWith(torchrunLaunchEnv, "WORLD_SIZE", ""), "WORLD_SIZE"},
		{"torchrun local size zero", launchEnvWith(torchrunLaunchEnv, "LOCAL_WORLD_SIZE", "0"), "LOCAL_WORLD_SIZE"},
		{"torchrun local size above size", launchEnvWith(torchrunLaunchEnv, "LOCAL_WORLD_SIZE", "5"), "LOCAL_WORLD_SIZE"},
		{"torchrun local rank", launchEnvWith(torchrunLaunchEnv, "LOCAL_RANK", "2"), "LOCAL_RANK"},
		{"torchrun master port 0", launchEnvWith(torchrunLaunchEnv, "MASTER_PORT", "0"), "MASTER_PORT"},
		{"torchrun master port big", launchEnvWith(torchrunLaunchEnv, "MASTER_PORT", "70000"), "MASTER_PORT"},
		{"torchrun master port text", launchEnvWith(torchrunLaunchEnv, "MASTER_PORT", "29500x"), "MASTER_PORT"},
		{"torchrun master port signed", launchEnvWith(torchrunLaunchEnv, "MASTER_PORT", "+29500"), "MASTER_PORT"},
		{"torchrun master addr with port", launchEnvWith(torchrunLaunchEnv, "MASTER_ADDR", "node0:29500"), "MASTER_ADDR"},
		{"ompi rank", launchEnvWith(ompiLaunchEnv, "OMPI_COMM_WORLD_RANK", "9"), "OMPI_COMM_WORLD_RANK"},
		{"ompi local rank", launchEnvWith(ompiLaunchEnv, "OMPI_COMM_WORLD_LOCAL_RANK", "-1"), "OMPI_COMM_WORLD_LOCAL_RANK"},
		{"ompi local size", launchEnvWith(ompiLaunchEnv, "OMPI_COMM_WORLD_LOCAL_SIZE", "two"), "OMPI_COMM_WORLD_LOCAL_SIZE"},
		{"ompi master port via MPI", launchEnvWith(ompiLaunchEnv, "MASTER_ADDR", "n0", "MASTER_PORT", "99999"), "MASTER_PORT"},
		{"pmi size missing", launchEnvWith(pmiLaunchEnv, "PMI_SIZE", ""), "PMI_SIZE"},
		{"pmi local rank", launchEnvWith(pmiLaunchEnv, "MPI_LOCALRANKID", "2"), "MPI_LOCALRANKID"},
		{"pmi local size", launchEnvWith(pmiLaunchEnv, "MPI_LOCALNRANKS", "x"), "MPI_LOCALNRANKS"},
		{"pmi tempest coordinator", launchEnvWith(pmiLaunchEnv, "TEMPEST_COORDINATOR", "n1:"), "TEMPEST_COORDINATOR"},
		{"slurm ntasks", launchEnvWith(slurmLaunchEnv, "SLURM_NTASKS", "-2"), "SLURM_NTASKS"},
		{"slurm procid", launchEnvWith(slurmLaunchEnv, "SLURM_PROCID", "4"), "SLURM_PROCID"},
		{"slurm localid", launchEnvWith(slurmLaunchEnv, "SLURM_LOCALID", "2"), "SLURM_LOCALID"},
		{"slurm ntasks per node", launchEnvWith(slurmLaunchEnv, "SLURM_NTASKS_PER_NODE", "many"), "SLURM_NTASKS_PER_NODE"},
		{"slurm ntasks per node above ntasks", launchEnvWith(slurmLaunchEnv, "SLURM_NTASKS_PER_NODE", "8"), "SLURM_NTASKS_PER_NODE"},
		{"slurm tasks per node", launchEnvWith(slurmLaunchEnv, "SLURM_TASKS_PER_NODE", "2(x)"), "SLURM_TASKS_PER_NODE"},
		{"slurm tasks per node zero", launchEnvWith(slurmLaunchEnv, "SLURM_TASKS_PER_NODE", "0(x4)"), "SLURM_TASKS_PER_NODE"},
		{"slurm job id", launchEnvWith(slurmLaunchEnv, "SLURM_JOB_ID", "12a"), "SLURM_JOB_ID"},
		{"slurm step node list", launchEnvWith(slurmLaunchEnv, "SLURM_STEP_NODELIST", "gpu[01-"), "SLURM_STEP_NODELIST"},
		{"slurm job node list", launchEnvWith(slurmLaunchEnv, "SLURM_STEP_NODELIST", "", "SLURM_JOB_NODELIST", "a[009-011]b"), "SLURM_JOB_NODELIST"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l, ok, err := launchFromEnv(launchEnvOf(c.env))
			if err == nil {
				t.Fatalf("launchFromEnv = %+v, %v, nil; want an error naming %s", l, ok, c.varName)
			}
			if !ok || l.Launcher == "" {
				t.Errorf("launchFromEnv with an error = %+v, ok %v; want ok and the launcher named", l, ok)
			}
			if !strings.Contains(err.Error(), c.varName) {
				t.Errorf("error %q does not name %s", err, c.varName)
			}
		})
	}
}

func TestLaunchFirstSlurmHost(t *testing.T) {
	for _, c := range []struct{ list, want string }{
		{"node7", "node7"},
		{"gpu[01-04,07],cpu3", "gpu01"},
		{"gpu[07,01-04]", "gpu07"},
		{"cpu3,gpu[01-04]", "cpu3"},
		{"n[009-011]", "n009"},
		{"n[9-11]", "n9"},
		{"n[0]", "n0"},
		{"rack[2-3]-n[08-09]", "rack2-n08"},
		{"a.b-c_d[1-2]", "a.b-c_d1"},
		{"  node1 node2", "node1"},
		{"node1\tnode2", "node1"},
		{"node-1,node-2", "node-1"},
	} {
		got, err := firstSlurmHost(c.list)
		if err != nil || got != c.want {
			t.Errorf("firstSlurmHost(%q) = %q, %v; want %q", c.list, got, err, c.want)
		}
	}
	for _, bad := range []string{
		"", ",", "a[009-011]b", "gpu[01-", "gpu01]", "gpu[[1]]", "gpu[]", "gpu[a-b]",
		"gpu[4-1]", "gpu[1-]", "gpu[-1]", "gpu[1,,2]",
	} {
		if got, err := firstSlurmHost(bad); err == nil {
			t.Errorf("firstSlurmHost(%q) = %q; want an error", bad, got)
		}
	}
}
