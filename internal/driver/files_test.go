package driver

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tempest/internal/gpu"
	"tempest/internal/gridio"
)

const (
	hotspot   = "../../examples/sl/hotspot.stencil"
	tempFile  = "../../examples/sl/data/temp_64"
	powerFile = "../../examples/sl/data/power_64"
)

// run carries out `tempest run` quietly and returns its stdout and stderr.
func run(t *testing.T, o RunOptions) (*Result, string, string, error) {
	t.Helper()
	if o.Backend == "" {
		o.Backend = "cpu"
	}
	o.Quiet = true
	var out, errw bytes.Buffer
	res, err := Run(o, &out, &errw)
	return res, out.String(), errw.String(), err
}

// TestRunTextGrids runs Rodinia's HotSpot layout end to end on the CPU engine: both grids from
// text files of one value per line, the 64x64 shape inferred, the result verified against the
// reference interpreter (bitwise: max abs error 0) and written as .txt, .csv and .npy, which
// must hold the same values exactly.
func TestRunTextGrids(t *testing.T) {
	dir := t.TempDir()
	outs := map[string]string{}
	for _, ext := range []string{".npy", ".txt", ".csv"} {
		outs[ext] = filepath.Join(dir, "temp"+ext)
		res, stdout, stderr, err := run(t, RunOptions{File: hotspot, Steps: 7, Verify: true, Out: outs[ext],
			Inits: []string{"temp=" + tempFile, "power=" + powerFile}, Params: []string{"Rz=2*2"}})
		if err != nil {
			t.Fatal(err)
		}
		if res.MaxAbsErr == nil || *res.MaxAbsErr != 0 {
			t.Fatalf("CPU engine differs from the reference: %v", res.MaxAbsErr)
		}
		if !strings.Contains(stdout, "hotspot: 64x64, f32, 7 steps") {
			t.Fatalf("shape not inferred from the text files:\n%s", stdout)
		}
		for _, want := range []string{
			"note: " + tempFile + ": 4096 values, one per line, read as 64x64 grid temp (y, x)\n",
			"note: " + powerFile + ": 4096 values, one per line, read as 64x64 grid power (y, x)\n",
		} {
			if !strings.Contains(stderr, want) {
				t.Fatalf("stderr lacks %q:\n%s", want, stderr)
			}
		}
		if strings.Contains(stderr, "warning") {
			t.Fatalf("unexpected warning:\n%s", stderr)
		}
	}
	want, err := gridio.ReadNPY(outs[".npy"])
	if err != nil {
		t.Fatal(err)
	}
	for _, ext := range []string{".txt", ".csv"} {
		txt, err := gridio.ReadText(outs[ext], gridio.F32)
		if err != nil {
			t.Fatal(err)
		}
		if ext == ".csv" && (txt.Rows != 64 || txt.Cols != 64) {
			t.Fatalf("CSV has %d rows of %d values, want 64 of 64", txt.Rows, txt.Cols)
		}
		got, err := txt.Fit([]int{64, 64})
		if err != nil {
			t.Fatal(err)
		}
		g, w := got.Data.([]float32), want.Data.([]float32)
		for i := range w {
			if math.Float32bits(g[i]) != math.Float32bits(w[i]) {
				t.Fatalf("%s: cell %d is %v, the .npy holds %v", ext, i, g[i], w[i])
			}
		}
	}
}

// TestRunTextGridsSL: the SL paper's Hotspot.sl reads the same text files (--data for its
// read-only grid) and writes the same result as hotspot.stencil, byte for byte.
func TestRunTextGridsSL(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "sl.txt"), filepath.Join(dir, "stencil.txt")
	params := []string{"Rx=10", "Ry=10", "Rz=4"}
	if _, _, _, err := run(t, RunOptions{File: "../../examples/sl/hotspot.sl", Steps: 6, Out: a, Params: params,
		Inits: []string{"cell=" + tempFile, "data=" + powerFile}}); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := run(t, RunOptions{File: hotspot, Steps: 6, Out: b, Params: params,
		Inits: []string{"temp=" + tempFile, "power=" + powerFile}}); err != nil {
		t.Fatal(err)
	}
	x, err1 := os.ReadFile(a)
	y, err2 := os.ReadFile(b)
	if err1 != nil || err2 != nil || len(x) == 0 || !bytes.Equal(x, y) {
		t.Fatalf("hotspot.sl and hotspot.stencil wrote different files (%v, %v)", err1, err2)
	}
}

// needOpenCL skips a test without an OpenCL device (TEMPEST_REQUIRE_OPENCL=1 makes that fail).
func needOpenCL(t *testing.T) {
	t.Helper()
	dev, err := gpu.Open("opencl")
	if err != nil {
		if os.Getenv("TEMPEST_REQUIRE_OPENCL") == "1" || !errors.Is(err, gpu.ErrUnavailable) {
			t.Fatalf("opening opencl: %v", err)
		}
		t.Skipf("opencl not available: %v", err)
	}
	dev.Close()
}

// TestRunTextGridsOpenCL runs the same text files through a GPU plan on OpenCL (PoCL in CI),
// checked against the CPU engine (f32 tolerance 2e-5 of the field's magnitude, as the
// correctness matrix states).
func TestRunTextGridsOpenCL(t *testing.T) {
	needOpenCL(t)
	res, _, _, err := run(t, RunOptions{File: hotspot, Steps: 5, Verify: true, Backend: "opencl", Plan: "tiled",
		Inits: []string{"temp=" + tempFile, "power=" + powerFile}})
	if err != nil {
		t.Fatal(err)
	}
	if res.MaxAbsErr == nil || *res.MaxAbsErr > 2e-5*100 { // temperatures are about 100
		t.Fatalf("max abs error %v against the CPU engine", res.MaxAbsErr)
	}
}

// TestRunFileErrors: text files that do not fit, or are malformed, are refused with the file,
// the counts and a way out.
func TestRunFileErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	odd := write("odd.txt", strings.Repeat("1.5\n", 4095))
	bad := write("bad.txt", "1\n2\n3\nfour\n")
	big := filepath.Join(dir, "big.npy")
	if err := gridio.WriteNPY(big, &gridio.Array{DType: gridio.I64, Shape: []int{2, 2}, Data: []int64{0, 1, 1 << 33, 0}}); err != nil {
		t.Fatal(err)
	}
	inexact := filepath.Join(dir, "inexact.npy")
	if err := gridio.WriteNPY(inexact, &gridio.Array{DType: gridio.I64, Shape: []int{2, 2}, Data: []int64{0, 1, 1<<40 + 1, 0}}); err != nil {
		t.Fatal(err)
	}
	cube := filepath.Join(dir, "cube.npy")
	if err := gridio.WriteNPY(cube, gridio.NewArray(gridio.F32, []int{4, 5, 6})); err != nil {
		t.Fatal(err)
	}
	line := filepath.Join(dir, "line.npy")
	if err := gridio.WriteNPY(line, gridio.NewArray(gridio.F32, []int{20})); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		o    RunOptions
		want string
	}{
		{"rank_3d", RunOptions{File: hotspot, Inits: []string{"power=" + cube}},
			"--init power=" + cube + ": the file holds a 3-D array of shape [4 5 6], but hotspot is 2-D (axes y, x); save the grid as a 2-D array"},
		{"rank_1d", RunOptions{File: hotspot, Inits: []string{"power=" + line}}, "the file holds a 1-D array of shape [20], but hotspot is 2-D"},
		{"inexact_in_float", RunOptions{File: hotspot, Inits: []string{"power=" + inexact}},
			"the i64 value 1099511627777 at (1, 0) does not fit in f32"},
		{"count_vs_size", RunOptions{File: hotspot, Size: "32x32", Inits: []string{"power=" + powerFile}},
			"--init power=" + powerFile + ": " + powerFile + " holds 4096 values but a grid of 32x32 needs 1024 (--size 32x32)"},
		{"not_square", RunOptions{File: hotspot, Inits: []string{"power=" + odd}},
			"holds 4095 values, one per line, and 4095 is not a square; give the grid's size with --size"},
		{"malformed", RunOptions{File: hotspot, Size: "2x2", Inits: []string{"power=" + bad}}, bad + `:4:1: "four" is not a number`},
		{"int_overflow", RunOptions{File: "../../examples/demos/life.stencil", Inits: []string{"alive=" + big}},
			"the i64 value 8589934592 at (1, 0) does not fit in i32"},
		{"no_such_file", RunOptions{File: hotspot, Inits: []string{"power=" + filepath.Join(dir, "none.txt")}}, "no such file"},
		{"init_twice", RunOptions{File: hotspot, Inits: []string{"power=" + powerFile, "power=zero"}},
			"--init power=" + powerFile + " and --init power=zero: grid power is given twice; keep one"},
		{"out_format", RunOptions{File: hotspot, Out: filepath.Join(dir, "t.bmp")}, "--out " + filepath.Join(dir, "t.bmp") + ": write .npy"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.o.Steps = 1
			_, _, _, err := run(t, c.o)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v\nwant an error containing %q", err, c.want)
			}
		})
	}
}

// TestRunNotes checks the notes and warnings on stderr: grids left at their built-in initial
// values while others come from files, element types converted on reading, and NaN or Inf in
// the final state.
func TestRunNotes(t *testing.T) {
	dir := t.TempDir()
	power64 := filepath.Join(dir, "power.npy")
	vals := make([]float64, 16)
	for i := range vals {
		vals[i] = 0.1 * float64(i)
	}
	if err := gridio.WriteNPY(power64, &gridio.Array{DType: gridio.F64, Shape: []int{4, 4}, Data: vals}); err != nil {
		t.Fatal(err)
	}
	blowup := filepath.Join(dir, "blowup.stencil")
	if err := os.WriteFile(blowup, []byte("stencil blowup\naxes y, x\ntype f32\nparam g = 1e30\n"+
		"state u init select(y == 2 && x >= 3, 1.0, 0.0) boundary clamp\nupdate u = u * g\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A 4x4 .npy of unsigned bytes, as NumPy writes np.zeros((4, 4), np.uint8).
	bytes8 := filepath.Join(dir, "bytes.npy")
	header := "{'descr': '|u1', 'fortran_order': False, 'shape': (4, 4), }"
	header += strings.Repeat(" ", 128-10-len(header)-1) + "\n" // the data starts 64-byte aligned
	npy := append([]byte("\x93NUMPY\x01\x00"), byte(len(header)), 0)
	npy = append(append(npy, header...), make([]byte, 16)...)
	if err := os.WriteFile(bytes8, npy, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		o      RunOptions
		want   []string
		absent string
	}{
		{"widened", RunOptions{File: hotspot, Inits: []string{"power=" + bytes8, "temp=zero"}},
			[]string{"note: " + bytes8 + ": u1 converted to f32 (grid power)\n"}, "i32"},
		{"default_temp", RunOptions{File: hotspot, Inits: []string{"power=" + powerFile}},
			[]string{"warning: grid temp starts from its built-in initial value (the program's init) while power comes from " + powerFile + "; give --init temp=FILE if it has data too\n"}, ""},
		{"both_given", RunOptions{File: hotspot, Inits: []string{"power=" + powerFile, "temp=random:3"}}, nil, "warning"},
		{"no_files", RunOptions{File: hotspot}, nil, "warning"},
		{"converted", RunOptions{File: hotspot, Inits: []string{"power=" + power64, "temp=zero"}},
			[]string{"note: " + power64 + ": f64 converted to f32 (grid power)\n"}, "warning"},
		{"same_type", RunOptions{File: hotspot, Type: "f64", Inits: []string{"power=" + power64, "temp=zero"}}, nil, "note"},
		{"nonfinite", RunOptions{File: blowup, Size: "4x6", Steps: 2},
			[]string{"warning: grid u holds NaN or Inf in 3 of 24 cells after 2 steps; the first is at (y=2, x=3)\n"}, ""},
		{"finite", RunOptions{File: blowup, Size: "4x6", Steps: 1}, nil, "warning"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.o.Steps == 0 {
				c.o.Steps = 2
			}
			_, _, stderr, err := run(t, c.o)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Fatalf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if c.absent != "" && strings.Contains(stderr, c.absent) {
				t.Fatalf("stderr should hold no %q:\n%s", c.absent, stderr)
			}
		})
	}
}

// TestOutputsCheckedFirst: every output file is checked before the first step, so that a
// long run's result is never lost to a wrong name found at its end: extensions of another
// format and directories that cannot be created are refused with nothing run, and missing
// directories are created.
func TestOutputsCheckedFirst(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	wave := "../../examples/demos/wave.stencil"
	blocked := filepath.Join(file, "sub") // a directory under a regular file cannot exist
	for _, c := range []struct {
		name string
		o    RunOptions
		want string
	}{
		{"png_ext", RunOptions{PNG: filepath.Join(dir, "x.jpg")}, "--png " + filepath.Join(dir, "x.jpg") + ": the file is written as PNG; name it FILE.png"},
		{"observables_png_ext", RunOptions{Observables: filepath.Join(dir, "o.csv"), ObservablesPNG: filepath.Join(dir, "o.svg")}, "name it FILE.png"},
		{"observables_ext", RunOptions{Observables: filepath.Join(dir, "o.json")}, "name it FILE.csv"},
		{"checkpoint_ext", RunOptions{Checkpoint: filepath.Join(dir, "ck.zip")}, "name it FILE.npz"},
		{"out_dir", RunOptions{Out: filepath.Join(blocked, "u.npy")}, "--out " + filepath.Join(blocked, "u.npy") + ": "},
		{"png_dir", RunOptions{PNG: filepath.Join(blocked, "u.png")}, "--png "},
		{"observables_dir", RunOptions{Observables: filepath.Join(blocked, "o.csv")}, "--observables "},
		{"checkpoint_dir", RunOptions{Checkpoint: filepath.Join(blocked, "ck.npz")}, "--checkpoint "},
		{"gif_dir", RunOptions{GIF: filepath.Join(blocked, "u.gif"), GIFEvery: 1}, "--gif "},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.o.File, c.o.Size, c.o.Steps = wave, "16x16", 3
			_, stdout, _, err := run(t, c.o)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v\nwant an error containing %q", err, c.want)
			}
			if stdout != "" {
				t.Errorf("the run went ahead before the error:\n%s", stdout)
			}
		})
	}
	// Missing directories are created, and the files land there.
	o := RunOptions{File: wave, Size: "16x16", Steps: 3, Out: filepath.Join(dir, "a", "u.npy"),
		PNG: filepath.Join(dir, "b", "c", "u.png"), Checkpoint: filepath.Join(dir, "d", "ck.npz")}
	if _, _, _, err := run(t, o); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{o.Out, o.PNG, o.Checkpoint} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestAutoPrefersCPUEngineOverOpenCLOnCPU: where the only OpenCL device is this machine's
// processor (PoCL in CI), --backend auto runs the CPU engine and says why in one line; with a
// --plan, which only GPU backends take, it keeps OpenCL.
func TestAutoPrefersCPUEngineOverOpenCLOnCPU(t *testing.T) {
	dev, err := gpu.Open("auto")
	if err != nil {
		t.Skipf("no OpenCL or CUDA device: %v", err)
	}
	cpuDevice := dev.Props().CPU
	dev.Close()
	if !cpuDevice {
		t.Skip("auto opens a GPU here")
	}
	res, _, stderr, err := run(t, RunOptions{File: "../../examples/demos/wave.stencil", Size: "16x16", Steps: 2, Backend: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Backend != "cpu" || !strings.Contains(stderr, "backend auto: the CPU engine (no GPU; the OpenCL device") {
		t.Errorf("auto ran %s:\n%s", res.Backend, stderr)
	}
	res, _, _, err = run(t, RunOptions{File: "../../examples/demos/wave.stencil", Size: "16x16", Steps: 2, Backend: "auto", Plan: "naive"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Backend != "opencl" {
		t.Errorf("auto with --plan ran %s", res.Backend)
	}
}

// TestVerifyFollowsTheN5DSums: --verify holds an n5d build of a 3D box whose written groups
// cancel (a derivative-like stencil on values near 1e6) to the sums n5d really adds, plane by
// plane: against the written grouping its correct result differed by twice the bound.
func TestVerifyFollowsTheN5DSums(t *testing.T) {
	needBackend(t, "opencl")
	// PoCL builds the kernel without optimization (what it computes is the question here),
	// which takes a fraction of the time.
	t.Setenv("POCL_EXTRA_BUILD_FLAGS", "-cl-opt-disable")
	file := filepath.Join(t.TempDir(), "deriv.stencil")
	src := "axes z, y, x\ntype f32\nstate u init 1000000 + 0.5 * f32(x) + 0.25 * f32(y * y) + 0.125 * f32(z * x) boundary fixed\n" +
		"update u = (u[z-1, y+1, x] - u[z+1, y+1, x]) + (u[z-1, y-1, x] - u[z+1, y-1, x]) + u\n"
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, steps := range []int{1} {
		res, stdout, _, err := run(t, RunOptions{File: file, Size: "12x20x24", Steps: steps, Verify: true, Backend: "opencl", Plan: "n5d:bx=8,by=4,bt=1"})
		if err != nil {
			t.Fatalf("%d steps: %v\n%s", steps, err, stdout)
		}
		if res.WithinBound == nil || !*res.WithinBound || !strings.Contains(stdout, "sums grouped plane by plane") {
			t.Errorf("%d steps:\n%s", steps, stdout)
		}
	}
}
