package main

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startRank starts `tempest ARGS...` in dir with extra environment variables: a process a
// launcher started.
func startRank(t *testing.T, dir string, env []string, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "TEMPEST_TEST_CLI=1"), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, &out
}

// freePort is a local TCP port nothing listens on.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("no local TCP: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestTorchrunEnvironment starts two ranks as torchrun does, with RANK, WORLD_SIZE,
// LOCAL_RANK, MASTER_ADDR and MASTER_PORT and no multi-process flag: they find each other
// (rank 0 listens beside torchrun's own store, at MASTER_PORT+1) and rank 0 writes bitwise
// the result of one process.
func TestTorchrunEnvironment(t *testing.T) {
	j2d, err := filepath.Abs("../../examples/an5d/j2d5pt.stencil")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	args := []string{"run", j2d, "--backend", "cpu", "--size", "96x80", "--steps", "30", "--quiet"}
	one, out := startRank(t, dir, nil, append(args, "--out", "one.npy")...)
	if err := one.Wait(); err != nil {
		t.Fatalf("one process: %v\n%s", err, out)
	}
	port := freePort(t) - 1 // rank 0 listens at MASTER_PORT+1
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for r := range 2 {
		env := []string{"RANK=" + strconv.Itoa(r), "WORLD_SIZE=2", "LOCAL_RANK=" + strconv.Itoa(r), "LOCAL_WORLD_SIZE=2",
			"MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + strconv.Itoa(port), "TORCHELASTIC_RUN_ID=test-job"}
		c, o := startRank(t, dir, env, append(args, "--out", "ranks.npy")...)
		cmds, outs = append(cmds, c), append(outs, o)
	}
	for r, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("rank %d: %v\n%s", r, err, outs[r])
		}
	}
	if !strings.Contains(outs[1].String(), "torchrun: rank 1 of 2, coordinator 127.0.0.1:"+strconv.Itoa(port+1)) {
		t.Errorf("rank 1 does not say what it read:\n%s", outs[1])
	}
	a, err1 := os.ReadFile(filepath.Join(dir, "one.npy"))
	b, err2 := os.ReadFile(filepath.Join(dir, "ranks.npy"))
	if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
		t.Errorf("two ranks differ from one process (%v, %v)", err1, err2)
	}
}

// TestFailedRankStopsTheOthers kills one rank of three with SIGKILL, or stops it with
// SIGSTOP (a hung process), in the middle of a long run: the other two exit non-zero within
// the timeout, naming it.
func TestFailedRankStopsTheOthers(t *testing.T) {
	j2d, err := filepath.Abs("../../examples/an5d/j2d5pt.stencil")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		sig  syscall.Signal
		want string
	}{
		{"killed", syscall.SIGKILL, "rank 1 ended without finishing the run"},
		{"hung", syscall.SIGSTOP, "rank 1 sent no"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
			var cmds []*exec.Cmd
			var outs []*bytes.Buffer
			for r := range 3 {
				c, o := startRank(t, dir, []string{"TEMPEST_SECRET=k"}, "run", j2d, "--backend", "cpu", "--size", "120x64", "--steps", "100000000",
					"--quiet", "--ranks", "3", "--rank", strconv.Itoa(r), "--coordinator", addr, "--rank-timeout", "3s")
				cmds, outs = append(cmds, c), append(outs, o)
			}
			for r := range 3 {
				waitFor(t, "rank "+strconv.Itoa(r)+" to start", func() bool { return strings.Contains(outs[r].String(), "sub-domains in 3 processes") })
			}
			time.Sleep(200 * time.Millisecond)
			start := time.Now()
			cmds[1].Process.Signal(c.sig)
			for _, r := range []int{0, 2} {
				done := make(chan error, 1)
				go func() { done <- cmds[r].Wait() }()
				select {
				case err := <-done:
					if err == nil {
						t.Errorf("rank %d exited 0", r)
					}
					if !strings.Contains(outs[r].String(), c.want) {
						t.Errorf("rank %d does not say %q:\n%s", r, c.want, outs[r])
					}
				case <-time.After(20 * time.Second):
					t.Fatalf("rank %d still runs %v after rank 1 was signalled", r, time.Since(start))
				}
			}
			t.Logf("the other ranks stopped %v after the signal", time.Since(start).Round(time.Millisecond))
		})
	}
}
