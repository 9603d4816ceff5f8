package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"tempest/internal/driver"
	"tempest/internal/gridio"
)

// TestMain lets the tests start the real CLI as a process: the test binary re-executed with
// TEMPEST_TEST_CLI=1 is `tempest` itself.
func TestMain(m *testing.M) {
	if os.Getenv("TEMPEST_TEST_CLI") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// startCLI starts `tempest ARGS...` in dir.
func startCLI(t *testing.T, dir string, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TEMPEST_TEST_CLI=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, &out
}

// waitFor polls until cond holds, failing after a few seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

// checkpointMeta reads a checkpoint's step and checks that every member decodes.
func checkpointStep(t *testing.T, path string) int {
	t.Helper()
	entries, err := gridio.ReadNPZ(path)
	if err != nil {
		t.Fatalf("checkpoint %s: %v", path, err)
	}
	for _, e := range entries {
		if e.Name == "meta.json" {
			var m struct{ Step int }
			if err := json.Unmarshal(e.Data, &m); err != nil {
				t.Fatal(err)
			}
			return m.Step
		}
	}
	t.Fatalf("checkpoint %s has no meta.json", path)
	return 0
}

// TestSignalCheckpoint: SIGINT (and SIGTERM) during a run end it at the current chunk with a
// complete checkpoint, exit code 130 and a message saying how to resume; no final output is
// written and no temporary file is left. Resuming the checkpoint reaches bitwise the state of
// an uninterrupted run; that of a split run resumes on one device.
func TestSignalCheckpoint(t *testing.T) {
	wave, err := filepath.Abs("../../examples/demos/wave.stencil")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		sig   syscall.Signal
		split []string // a split run: its checkpoint resumes on one device
	}{
		{"interrupt", syscall.SIGINT, nil},
		{"terminated", syscall.SIGTERM, nil},
		{"interrupt_split", syscall.SIGINT, []string{"--subdomains", "3", "--exchange", "2"}},
	} {
		sig := c.sig
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			args := append([]string{"run", wave, "--backend", "cpu", "--size", "48x40", "--steps", "100000000", "--quiet",
				"--checkpoint", "ck.npz", "--out", "final.npy", "--png", "final.png", "--snapshot-every", "200", "--snapshots", "snaps"}, c.split...)
			cmd, out := startCLI(t, dir, args...)
			waitFor(t, "the first snapshots", func() bool { return exists(filepath.Join(dir, "snaps", "u_000000400.npy")) })
			cmd.Process.Signal(sig)
			err := cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 130 {
				t.Fatalf("exit %v, want code 130; output:\n%s", err, out)
			}
			if !strings.Contains(out.String(), "--resume ck.npz") {
				t.Errorf("the message does not say how to resume:\n%s", out)
			}
			step := checkpointStep(t, filepath.Join(dir, "ck.npz"))
			if step < 400 {
				t.Errorf("checkpoint at step %d, but step 400 had passed", step)
			}
			for _, f := range []string{"final.npy", "final.png"} {
				if exists(filepath.Join(dir, f)) {
					t.Errorf("%s written by an interrupted run", f)
				}
			}
			checkNoTemp(t, dir)

			// Resume to a few steps past the checkpoint and compare with one run of that length.
			end := fmt.Sprint(step + 7)
			cmd, out = startCLI(t, dir, "run", wave, "--backend", "cpu", "--steps", end, "--quiet", "--resume", "ck.npz", "--out", "resumed.npy")
			if err := cmd.Wait(); err != nil {
				t.Fatalf("resume: %v\n%s", err, out)
			}
			_, err = driver.Run(driver.RunOptions{File: wave, Backend: "cpu", Size: "48x40", Steps: step + 7, Quiet: true,
				Out: filepath.Join(dir, "whole.npy")}, io.Discard, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			a, _ := os.ReadFile(filepath.Join(dir, "resumed.npy"))
			b, _ := os.ReadFile(filepath.Join(dir, "whole.npy"))
			if len(a) == 0 || !bytes.Equal(a, b) {
				t.Errorf("the resumed run differs from an uninterrupted run of %s steps", end)
			}
		})
	}
}

// checkNoTemp fails on temporary files of unfinished writes under dir.
func checkNoTemp(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && gridio.IsTemp(d.Name()) {
			t.Errorf("temporary file %s left behind", path)
		}
		return nil
	})
}

// TestKillWhileWriting proves the writes atomic: a run that writes a snapshot and a checkpoint
// every step is killed (SIGKILL, no chance to clean up) at several moments, and every output
// file present afterwards is complete and loads. Unfinished temporary files may remain; they
// carry gridio.TempPrefix.
func TestKillWhileWriting(t *testing.T) {
	gs, err := filepath.Abs("../../examples/demos/grayscott.stencil")
	if err != nil {
		t.Fatal(err)
	}
	for i, wait := range []time.Duration{0, 7 * time.Millisecond, 23 * time.Millisecond, 61 * time.Millisecond} {
		t.Run(fmt.Sprint(wait), func(t *testing.T) {
			dir := t.TempDir()
			cmd, out := startCLI(t, dir, "run", gs, "--backend", "cpu", "--type", "f64", "--size", "192x160", "--steps", "100000000", "--quiet",
				"--snapshot-every", "1", "--snapshots", ".", "--checkpoint-every", "1", "--checkpoint", "ck.npz")
			waitFor(t, "a checkpoint", func() bool { return exists(filepath.Join(dir, "ck.npz")) })
			time.Sleep(wait + time.Duration(i)*time.Millisecond)
			cmd.Process.Kill()
			cmd.Wait()
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			loaded := 0
			for _, e := range entries {
				path := filepath.Join(dir, e.Name())
				switch {
				case gridio.IsTemp(e.Name()):
				case strings.HasSuffix(e.Name(), ".npy"):
					a, err := gridio.ReadNPY(path)
					if err != nil {
						t.Errorf("%s: %v\n%s", e.Name(), err, out)
					} else if fmt.Sprint(a.Shape) != "[192 160]" {
						t.Errorf("%s: shape %v", e.Name(), a.Shape)
					}
					loaded++
				case e.Name() == "ck.npz":
					checkpointStep(t, path)
					loaded++
				default:
					t.Errorf("unexpected file %s", e.Name())
				}
			}
			if loaded < 3 {
				t.Errorf("only %d files written before the kill", loaded)
			}
		})
	}
}

// TestZeroCountsRefused: a count flag given as 0, whose default 0 means "not set", is refused
// instead of being taken silently as no flag; --fastmath on the CPU engine says it does nothing.
func TestZeroCountsRefused(t *testing.T) {
	for _, flag := range []string{"--subdomains", "--exchange", "--gpus", "--ranks", "--snapshot-every", "--check-every"} {
		c := runCmd()
		var out bytes.Buffer
		c.SetOut(&out)
		c.SetErr(&out)
		c.SetArgs([]string{"../../examples/demos/wave.stencil", "--size", "16x16", "--steps", "2", "--backend", "cpu", "--quiet", flag, "0"})
		err := c.Execute()
		if err == nil || !strings.Contains(err.Error(), flag+" 0: give a number of 1 or more") {
			t.Errorf("%s 0: got %v", flag, err)
		}
	}
	cmd, out := startCLI(t, t.TempDir(), "run", filepath.Join(wd(t), "../../examples/demos/wave.stencil"), "--size", "16x16", "--steps", "2", "--backend", "cpu", "--quiet", "--fastmath")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out.String(), "note: --fastmath has no effect on the CPU engine") {
		t.Errorf("no note on --fastmath:\n%s", out)
	}
}

// wd is the test's working directory.
func wd(t *testing.T) string {
	d, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestSignalWhileVerifying: SIGINT while --verify runs the reference says what it interrupted
// (the run finished, its result unverified) and exits with code 130.
func TestSignalWhileVerifying(t *testing.T) {
	wave, err := filepath.Abs("../../examples/demos/wave.stencil")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd, out := startCLI(t, dir, "run", wave, "--backend", "cpu", "--size", "512x512", "--steps", "200", "--quiet", "--verify",
		"--snapshot-every", "200", "--snapshots", "snaps")
	// The last snapshot is written at the run's end, just before the verification, which
	// takes seconds here.
	waitFor(t, "the run's end", func() bool { return exists(filepath.Join(dir, "snaps", "u_000200.npy")) })
	time.Sleep(300 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGINT)
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit %v, want code 130; output:\n%s", err, out)
	}
	if !strings.Contains(out.String(), "interrupted while verifying: the run of 200 steps finished, but its result is not verified") {
		t.Errorf("the message does not say what was interrupted:\n%s", out)
	}
}
