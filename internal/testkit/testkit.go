// Package testkit holds what several packages' tests share: golden diagnostic files and a
// private PoCL kernel cache per test binary. Only tests import it.
package testkit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tempest/internal/gpu"
	"tempest/internal/probe"
)

// Diagnostics loads every testdata/errors/*<ext> file through load and compares the error with
// the .err file beside it (position, source line, caret and hint). With update set it rewrites
// the .err files instead.
func Diagnostics(t *testing.T, ext string, update bool, load func(path, text string) error) {
	t.Helper()
	files, err := filepath.Glob("testdata/errors/*" + ext)
	if err != nil || len(files) == 0 {
		t.Fatal("no error cases found")
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ext)
		t.Run(name, func(t *testing.T) {
			text, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			err = load("testdata/errors/"+filepath.Base(f), string(text))
			if err == nil {
				t.Fatalf("%s: accepted, want a diagnostic", f)
			}
			got := err.Error() + "\n"
			if !strings.Contains(got, "error:") || !strings.Contains(got, ext+":") {
				t.Errorf("diagnostic lacks a position:\n%s", got)
			}
			golden := strings.TrimSuffix(f, ext) + ".err"
			if update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("diagnostic changed:\n--- got\n%s--- want\n%s", got, want)
			}
		})
	}
}

// PoCLMain runs a test binary with a PoCL kernel cache of its own: go test runs packages in
// parallel, and two processes building into one cache can abort PoCL's linker.
func PoCLMain(m *testing.M) {
	if os.Getenv("POCL_CACHE_DIR") == "" {
		dir, err := os.MkdirTemp("", "tempest-pocl-")
		if err == nil {
			os.Setenv("POCL_CACHE_DIR", dir)
			code := m.Run()
			os.RemoveAll(dir)
			os.Exit(code)
		}
	}
	os.Exit(m.Run())
}

// H100Profile is the H100 as `tempest probe` measured it on 2026-11-21 (docs/performance.md):
// the profile the models were calibrated with and the tests that replay H100 measurements use.
func H100Profile() *probe.Profile {
	return &probe.Profile{
		Device: gpu.Props{Backend: "cuda", Name: "NVIDIA H100 80GB HBM3", ComputeMajor: 9, SMs: 132, WarpSize: 32, MaxThreadsPerBlock: 1024,
			SharedPerBlock: 49152, SharedPerBlockOptin: 232448, SharedPerSM: 233472, RegsPerBlock: 65536, RegsPerSM: 65536,
			MaxThreadsPerSM: 2048, ClockKHz: 1980000, MemClockKHz: 2619000, MemBusWidthBits: 5120, L2Bytes: 50 << 20, GlobalMem: 80 << 30},
		DRAMCopyGBs: 2258.6, DRAMTriadGBs: 2622.4, L2GBs: 13283.6, SharedF32GBs: 32396.5, SharedF64GBs: 32867.2,
		FMAF32GFLOPs: 55890.2, FMAF64GFLOPs: 31970.4, LaunchUs: 26.36, LaunchSyncUs: 44.9,
	}
}
