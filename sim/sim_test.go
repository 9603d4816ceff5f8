package sim

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tempest/internal/driver"
	"tempest/internal/gpu"
	"tempest/internal/gridio"
)

// backends are the engines of this machine the tests compare: the reference interpreter, the
// CPU engine and, where a device exists, OpenCL (PoCL on the CI machine) and CUDA.
func backends(t *testing.T) []string {
	out := []string{"ref", "cpu"}
	for _, b := range []string{"opencl", "cuda"} {
		if d, err := gpu.Open(b); err == nil {
			d.Close()
			out = append(out, b)
		}
	}
	return out
}

func mustNew(t *testing.T, path string, opt Options) *Sim {
	t.Helper()
	p, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := p.New(opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func mustGrid(t *testing.T, s *Sim, name string) Array {
	t.Helper()
	a, err := s.Grid(name)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// sameBits compares two arrays bit for bit (NaNs included).
func sameBits(t *testing.T, what string, a, b Array) {
	t.Helper()
	if fmt.Sprint(a.Shape) != fmt.Sprint(b.Shape) || a.DType() != b.DType() {
		t.Fatalf("%s: %s %v against %s %v", what, a.DType(), a.Shape, b.DType(), b.Shape)
	}
	x := (&gridio.Array{DType: gridio.DType(a.DType()), Shape: a.Shape, Data: a.Data}).Bytes()
	y := (&gridio.Array{DType: gridio.DType(b.DType()), Shape: b.Shape, Data: b.Data}).Bytes()
	if string(x) != string(y) {
		t.Fatalf("%s: the arrays differ", what)
	}
}

// TestChunksEqualOneRun: stepping in chunks of 7 (which splits a GPU plan's launches) gives
// bitwise the state of tempest run's one run of all the steps, on every engine, for a
// two-level grid (wave), a one-level grid whose .prev is observed (poisson2d) and a layered
// integer input (pathfinder).
func TestChunksEqualOneRun(t *testing.T) {
	cases := []struct {
		file, size, grid string
		steps            int
	}{
		{"../examples/demos/wave.stencil", "40x56", "u", 70},
		{"../examples/demos/poisson2d.stencil", "33x31", "u", 70},
		{"../examples/sl/pathfinder.stencil", "300", "cost", 70},
	}
	for _, c := range cases {
		for _, b := range backends(t) {
			t.Run(filepath.Base(c.file)+"/"+b, func(t *testing.T) {
				out := filepath.Join(t.TempDir(), "out.npy")
				o := driver.RunOptions{File: c.file, Size: c.size, Steps: c.steps, Backend: b, Out: out, Quiet: true}
				if _, err := driver.Run(o, io.Discard, io.Discard); err != nil {
					t.Fatal(err)
				}
				want, err := gridio.ReadNPY(out)
				if err != nil {
					t.Fatal(err)
				}
				var size []int
				for _, f := range strings.Split(c.size, "x") {
					var n int
					fmt.Sscan(f, &n)
					size = append(size, n)
				}
				s := mustNew(t, c.file, Options{Size: size, Backend: b})
				for s.Steps() < c.steps {
					if err := s.Step(min(7, c.steps-s.Steps())); err != nil {
						t.Fatal(err)
					}
					if s.Steps()%2 == 1 {
						continue // steps queued on a GPU go on behind the next ones
					}
					if err := s.Wait(); err != nil {
						t.Fatal(err)
					}
					if _, err := s.Observe(); err != nil { // observing between chunks changes nothing
						t.Fatal(err)
					}
				}
				sameBits(t, "chunked against one run", mustGrid(t, s, c.grid), Array{Shape: want.Shape, Data: want.Data})
			})
		}
	}
}

// TestWritesMatchReference: boxes written between chunks (a state grid's current level, its
// previous level, an input grid) and a parameter changed between them lead every engine to
// the reference interpreter's state, bit for bit; reads of boxes equal the whole grid's.
func TestWritesMatchReference(t *testing.T) {
	type write struct {
		grid   string
		lo     []int
		values []float64
		shape  []int
	}
	cases := []struct {
		name, file string
		size       []int
		grids      []string
		writes     []write
		// param (name=value) is set before the second chunk: its value, a power of two, keeps
		// the products it enters exact, so that an OpenCL compiler that contracts a*b+c into
		// a fused multiply-add rounds as the reference does.
		param string
		// hostOnly keeps the GPU backends out: PoCL rounds j2d5pt's coefficients differently
		// from the reference even in a plain tempest run.
		hostOnly bool
	}{
		// A one-level grid with a fixed rim whose arithmetic every engine rounds alike.
		{"rim", rimProgram(t), []int{20, 24}, []string{"u"},
			[]write{{"u", []int{0, 3}, []float64{5, 6, 7}, []int{1, 3}}, {"u", []int{8, 0}, []float64{-1, 2}, []int{2, 1}}}, "", false},
		{"wave", "../examples/demos/wave.stencil", []int{24, 30}, []string{"u", "u.prev"},
			[]write{{"u", []int{5, 6}, []float64{1, 2, 3, 4, 5, 6}, []int{2, 3}}, {"u.prev", []int{0, 0}, []float64{-1, 0.5}, []int{1, 2}},
				{"u", []int{23, 0}, []float64{9, 9, 9}, []int{1, 3}}}, "c=0.25", false},
		{"poisson2d", "../examples/demos/poisson2d.stencil", []int{20, 21}, []string{"u", "f"},
			[]write{{"f", []int{3, 4}, []float64{100, 200, 300, 400}, []int{2, 2}}, {"u", []int{10, 0}, []float64{1, 1, 1, 1, 1}, []int{1, 5}}}, "h2=0.015625", false},
		// A one-level grid with a fixed rim: a write into the rim stays there.
		{"j2d5pt", "../examples/an5d/j2d5pt.stencil", []int{20, 24}, []string{"u"},
			[]write{{"u", []int{0, 3}, []float64{5, 6, 7}, []int{1, 3}}, {"u", []int{8, 0}, []float64{-1, 2}, []int{2, 1}}}, "", true},
		// A layered integer input: boxes across layers.
		{"pathfinder", "../examples/sl/pathfinder.stencil", []int{40}, []string{"cost", "wall"},
			[]write{{"wall", []int{2, 5}, []float64{-50, 60, 70, -80, 90, 100}, []int{3, 2}}, {"cost", []int{39}, []float64{-7}, []int{1}},
				{"wall", []int{0, 0}, []float64{1, 2, 3}, []int{1, 3}}}, "ROWS=100", false},
	}
	for _, c := range cases {
		states := map[string][]Array{}
		for _, b := range backends(t) {
			if c.hostOnly && b != "ref" && b != "cpu" {
				continue
			}
			s := mustNew(t, c.file, Options{Size: c.size, Backend: b})
			for i, w := range c.writes {
				if err := s.Step(3 + i); err != nil {
					t.Fatal(err)
				}
				typ := s.Program().Type()
				var a Array
				switch typ {
				case "i32":
					v := make([]int32, len(w.values))
					for j, x := range w.values {
						v[j] = int32(x)
					}
					a = NewArray(w.shape, v)
				case "f32":
					v := make([]float32, len(w.values))
					for j, x := range w.values {
						v[j] = float32(x)
					}
					a = NewArray(w.shape, v)
				default:
					a = NewArray(w.shape, append([]float64(nil), w.values...))
				}
				if err := s.SetBox(w.grid, w.lo, a); err != nil {
					t.Fatal(err)
				}
				back, err := s.Box(w.grid, w.lo, w.shape)
				if err != nil {
					t.Fatal(err)
				}
				sameBits(t, c.name+"/"+b+": box read back", back, a)
				if i == 0 && c.param != "" {
					name, val, _ := strings.Cut(c.param, "=")
					if err := s.SetParam(name, val); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := s.Step(5); err != nil {
				t.Fatal(err)
			}
			for _, g := range c.grids {
				states[b] = append(states[b], mustGrid(t, s, g))
			}
			// A box of the whole grid is the grid.
			full, err := s.Box(c.grids[0], make([]int, len(c.size)), c.size)
			if err != nil {
				t.Fatal(err)
			}
			sameBits(t, c.name+"/"+b+": whole box", full, states[b][0])
		}
		for b, st := range states {
			for i, g := range c.grids {
				sameBits(t, c.name+"/"+b+" against ref: grid "+g, st[i], states["ref"][i])
			}
		}
	}
}

// rimProgram writes a program with a fixed rim, a one-level grid, and exact arithmetic (a sum
// times a power of two, which no compiler contracts) and returns its path.
func rimProgram(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "rim.stencil")
	src := "stencil rim\naxes y, x\ntype f64\nstate u init rand() boundary fixed\nupdate u = 0.25 * (u[y-1] + u[y+1] + u[x-1] + u[x+1])\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestErrors: mistakes in calls are errors that say what is wrong, and the Sim stays usable.
func TestErrors(t *testing.T) {
	s := mustNew(t, "../examples/sl/pathfinder.stencil", Options{Size: []int{50}, Backend: "cpu"})
	cases := []struct {
		name string
		call func() error
		want string
	}{
		{"unknown grid", func() error { _, err := s.Grid("nope"); return err }, `grid "nope": pathfinder has no such grid (grids: wall, cost)`},
		{"prev of one level", func() error { _, err := s.Grid("cost.prev"); return err }, "keeps one level of cost"},
		{"box outside", func() error { _, err := s.Box("cost", []int{45}, []int{6}); return err }, "leaves the grid (shape [50]) on axis 0"},
		{"box axes", func() error { _, err := s.Box("wall", []int{0}, []int{5}); return err }, "grid wall has 2 axes (shape [100 50])"},
		{"wrong type", func() error { return s.SetGrid("cost", NewArray([]int{50}, make([]float32, 50))) }, "grid cost holds i32 values but the array holds f32"},
		{"wrong length", func() error { return s.SetGrid("cost", NewArray([]int{50}, make([]int32, 49))) }, "needs 50 elements but Data has 49"},
		{"unknown param", func() error { return s.SetParam("rows", "3") }, "unknown parameter; pathfinder has ROWS"},
		{"layer count", func() error { return s.SetParam("ROWS", "20") }, "grid wall has 100 layers and would have 20"},
		{"bad value", func() error { return s.SetParam("ROWS", "1 +") }, "--param:1:9: error: unexpected end of file"},
		{"negative steps", func() error { return s.Step(-1) }, "step -1: the number of steps cannot be negative"},
	}
	for _, c := range cases {
		err := c.call()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.want)
		}
	}
	if err := s.Step(3); err != nil || s.Steps() != 3 {
		t.Fatalf("after the errors: %v, step %d", err, s.Steps())
	}
	if got := s.Params()[0].Value; got != int64(100) {
		t.Fatalf("ROWS is %v after refused changes, want 100", got)
	}
}

// TestProgramErrors: programs that do not check, in each front end, give diagnostics with
// positions; other failures give none.
func TestProgramErrors(t *testing.T) {
	cases := []struct {
		name, text string
		line, col  int
	}{
		{"a.stencil", "stencil a\naxes x\nstate u init 0\nupdate u = u[x+1] + q\n", 4, 21},
		{"b.stencil", "stencil b\naxes x\nstate u init 0\nupdate u = u[x+1] +\n", 5, 1},
		{"c.c", "void k(float *A1, int n, int steps)\n{\n  float (*A)[n] = (float (*)[n])A1;\n#pragma scop\n  for (int t = 0; t < steps; t++)\n" +
			"    for (int i = 1; i < n - 1; i++)\n      A[(t+1)%2][i] = A[t%2][i-1] + B[t%2][i];\n#pragma endscop\n}\n", 7, 43},
		{"d.sl", "NumDimensions 2\nStencilSize (1, 1)\nDataType float\nFunctionName f\nCellValue {\n  return 0.25 * (get(0, -1) + zz);\n}\n", 6, 31},
	}
	for _, c := range cases {
		_, err := Parse(c.name, c.text)
		ds := Diagnostics(err)
		if len(ds) == 0 {
			t.Fatalf("%s: no diagnostics in %v", c.name, err)
		}
		if d := ds[0]; d.File != c.name || d.Line != c.line || d.Col != c.col || !strings.HasPrefix(d.Text, fmt.Sprintf("%s:%d:%d: error: ", c.name, c.line, c.col)) {
			t.Errorf("%s: got %+v, want %s:%d:%d", c.name, d, c.name, c.line, c.col)
		}
	}
	_, err := Load("no/such/file.stencil")
	if err == nil || Diagnostics(err) != nil || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v, diagnostics %v", err, Diagnostics(err))
	}
}

// TestStepWith: progress is called with increasing step counts ending at n, in multiples of
// the granule but the last, and returning false stops the run with ErrStopped.
func TestStepWith(t *testing.T) {
	s := mustNew(t, "../examples/demos/wave.stencil", Options{Size: []int{32, 32}, Backend: "cpu"})
	var seen []int
	if err := s.StepWith(50, func(done int) bool { seen = append(seen, done); return true }); err != nil {
		t.Fatal(err)
	}
	if len(seen) == 0 || seen[len(seen)-1] != 50 {
		t.Fatalf("progress saw %v, want it to end at 50", seen)
	}
	for i := 1; i < len(seen); i++ {
		if seen[i] <= seen[i-1] {
			t.Fatalf("progress went back: %v", seen)
		}
	}
	err := s.StepWith(1000, func(done int) bool { return done < 3 })
	if !errors.Is(err, ErrStopped) || s.Steps() < 53 || s.Steps() >= 1050 {
		t.Fatalf("stopped run: %v at step %d", err, s.Steps())
	}
}

// TestObserveNaN: observables that are not finite come back as they are.
func TestObserveNaN(t *testing.T) {
	s := mustNew(t, "../examples/demos/wave.stencil", Options{Size: []int{16, 16}, Backend: "cpu"})
	a := mustGrid(t, s, "u")
	v, _ := Values[float32](a)
	v[100] = float32(math.Inf(1))
	if err := s.SetGrid("u", a); err != nil {
		t.Fatal(err)
	}
	obs, err := s.Observe()
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsInf(obs[1].Value, 1) || obs[1].Name != "peak" {
		t.Fatalf("observables %v, want peak +Inf", obs)
	}
}
