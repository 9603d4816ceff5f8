package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// python is the interpreter the Python tests use: Debian's /usr/bin/python3 with its
// python3-numpy, as the README's set-up says.
const python = "/usr/bin/python3"

// TestPython runs the tempest module's tests (python/tests), which include the README's
// example examples/python/wave_source.py, against this binary as `tempest serve`: on the CPU
// engine, and on OpenCL where a device exists (PoCL in CI; with TEMPEST_REQUIRE_OPENCL set it
// must). Without python3 and NumPy the test is skipped, except under CI (the CI variable
// set), where they must be installed.
func TestPython(t *testing.T) {
	if out, err := exec.Command(python, "-c", "import numpy").CombinedOutput(); err != nil {
		msg := "no " + python + " with NumPy (apt-get install python3-numpy): " + strings.TrimSpace(string(out)) + " " + err.Error()
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, "-m", "unittest", "discover", "-v", "-s", filepath.Join(root, "python", "tests"))
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "TEMPEST_TEST_CLI=1", "TEMPEST_BIN="+os.Args[0], "PYTHONPATH="+filepath.Join(root, "python"),
		"PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the Python tests failed: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "test_chunks_of_10_equal_one_cli_run") || !strings.Contains(string(out), "\nOK") {
		t.Fatalf("the Python tests did not run as expected:\n%s", out)
	}
	t.Logf("%s", out)
}
