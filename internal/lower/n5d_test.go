package lower

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"tempest/internal/ir"
	"tempest/internal/irprint"
	"tempest/internal/kir"
	"tempest/internal/load"
	"tempest/internal/plan"
	"tempest/internal/testkit"
)

// TestN5DLaunchBoundsAndPrefetch: the shallower remainder kernels carry launch bounds of the
// block (their registers may exceed the main kernel's), the main kernel none (they would
// override the plan's register cap) unless its blocks have 1024 threads; pf loads that many planes ahead in static registers, and
// a pf that does not divide the unrolled round is refused with a hint.
func TestN5DLaunchBoundsAndPrefetch(t *testing.T) {
	src, err := os.ReadFile("../../examples/an5d/star2d1r.stencil")
	if err != nil {
		t.Fatal(err)
	}
	p, err := load.Source("star2d1r.stencil", string(src), load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	lowerText := func(text string) (*Lowered, string, error) {
		pl, err := plan.Parse(text, p)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		l, err := Lower(p, []int{130, 130}, nil, pl)
		if err != nil {
			return nil, "", err
		}
		return l, kir.Print(l.Module, kir.CUDA), nil
	}
	l, cu, err := lowerText("n5d:bx=64,rx=2,bt=4,wave=true,pf=3")
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Module.Kernels) != 3 {
		t.Fatalf("%d kernels, want bt 4, 2 and 1", len(l.Module.Kernels))
	}
	for _, k := range l.Module.Kernels {
		want := 64
		if k.Name == "tempest_n5d" {
			want = 0
		}
		if k.MaxThreads != want {
			t.Errorf("%s: launch bounds %d, want %d", k.Name, k.MaxThreads, want)
		}
	}
	if !strings.Contains(cu, "__launch_bounds__(64) tempest_n5d_2(") || strings.Contains(cu, "__launch_bounds__(64) tempest_n5d(") {
		t.Errorf("launch bounds printed wrong:\n%s", cu[:min(len(cu), 600)])
	}
	for _, want := range []string{"pf_u_2_1 = ", "pf_u_0_0 = in0_u[min(max(jr + 3, 0), n0 - 1)"} {
		if !strings.Contains(cu, want) {
			t.Errorf("pf=3 lacks %q", want)
		}
	}
	if _, _, err := lowerText("n5d:bx=64,rx=2,bt=4,pf=4"); err == nil || !strings.HasSuffix(err.Error(), "try pf=1 or pf=2 or pf=3") {
		t.Errorf("pf=4 on a round of 6 planes: %v", err)
	}
	// Blocks of 1024 threads bound the main kernel too: a thread of theirs has 64 registers.
	if _, cu, err := lowerText("n5d:bx=1024,bt=8"); err != nil || !strings.Contains(cu, "__launch_bounds__(1024) tempest_n5d(") {
		t.Errorf("no launch bounds on a main kernel of 1024 threads (%v)", err)
	}
	// The hint offers only distances that divide the round: not pf=2 for a round of three.
	if _, _, err := lowerText("n5d:bx=64,rx=2,bt=4,pf=2,unroll=3"); err == nil || !strings.HasSuffix(err.Error(), "try pf=1 or pf=3") {
		t.Errorf("pf=2 on a round of 3 planes: %v", err)
	}
	if ocl := kir.Print(l.Module, kir.OpenCL); strings.Contains(ocl, "launch_bounds") {
		t.Error("OpenCL has no launch bounds")
	}
}

// asyncGolden are n5d plans with asynchronous copies whose CUDA kernels are compared with
// testdata/<name>: a star in 2D with pairs of cells two planes ahead (copied straight into
// level 0's six shared planes), a 3D box of 2x2 register tiles in partial sums one plane ahead
// (a ring of its own: two planes, 8-byte copies in interior blocks), and a star four planes
// ahead (too far for level 0's planes: a ring of its own of six planes, more than async+1).
var asyncGolden = []struct {
	example, plan, file string
	private             bool // a ring of the copies' own, not level 0's planes
}{
	{"star2d1r", "n5d:bx=32,rx=2,bt=2,async=2", "star2d1r.n5d_async2.cu", false},
	{"box3d1r", "n5d:bx=8,by=4,rx=2,ry=2,bt=2,async=1", "box3d1r.n5d_async1.cu", true},
	{"star2d1r", "n5d:bx=32,bt=2,async=4", "star2d1r.n5d_async4.cu", true},
}

// TestN5DAsync: async plans replace the prefetch registers by a ring of shared planes
// per state grid filled with cp.async (the golden kernels), add the ring to the block's shared
// memory, and print for OpenCL as synchronous copies (plans refuse async there; tests use it).
func TestN5DAsync(t *testing.T) {
	for _, c := range asyncGolden {
		src, err := os.ReadFile("../../examples/an5d/" + c.example + ".stencil")
		if err != nil {
			t.Fatal(err)
		}
		p, err := load.Source(c.example+".stencil", string(src), load.Options{})
		if err != nil {
			t.Fatal(err)
		}
		shape := []int{40, 70}
		if p.Dims() == 3 {
			shape = []int{20, 12, 20}
		}
		pl, err := plan.Parse(c.plan, p)
		if err != nil {
			t.Fatal(err)
		}
		l, err := Lower(p, shape, nil, pl)
		if err != nil {
			t.Fatalf("%s: %v", c.plan, err)
		}
		off := pl
		off.Async = 0
		l0, err := Lower(p, shape, nil, off)
		if err != nil {
			t.Fatalf("%s: %v", off, err)
		}
		threads := pl.Threads()
		cells := threads * max(pl.RX, 1) * max(pl.RY, 1)
		planes := pl.N5DRing(N5DRound(p, pl))
		if ring := l.SharedBytes - l0.SharedBytes; c.private && (ring < planes*cells*4 || ring >= planes*cells*4+16) || ring <= 0 {
			t.Errorf("%s: %d shared bytes, %d without async: the ring of %d planes of %d cells is not what was added", c.plan, l.SharedBytes, l0.SharedBytes, planes, cells)
		}
		cu := kir.Print(l.Module, kir.CUDA)
		for _, want := range []string{"cp.async.commit_group", fmt.Sprintf("cp.async.wait_group %d;", pl.Async-1), "cp.async.wait_group 0;", "cvta.to.shared.u64"} {
			if !strings.Contains(cu, want) {
				t.Errorf("%s lacks %q", c.plan, want)
			}
		}
		if strings.Contains(cu, "pf_u") {
			t.Errorf("%s still prefetches into registers", c.plan)
		}
		if !c.private && strings.Contains(cu, "q_u_0_") {
			t.Errorf("%s keeps a register queue for level 0", c.plan)
		}
		path := filepath.Join("testdata", c.file)
		if *update {
			if err := os.WriteFile(path, []byte(cu), 0o644); err != nil {
				t.Fatal(err)
			}
		} else if want, err := os.ReadFile(path); err != nil {
			t.Fatalf("%v (run go test -update)", err)
		} else if string(want) != cu {
			t.Errorf("%s changed; run go test ./internal/lower -run N5DAsync -update and review the diff", path)
		}
		if cl := kir.Print(l.Module, kir.OpenCL); strings.Contains(cl, "asm") || !strings.Contains(cl, "int sring = ") || !strings.Contains(cl, "smem[sring + ") {
			t.Errorf("%s: OpenCL lacks the synchronous copies:\n%s", c.plan, cl[:min(len(cl), 2000)])
		}
	}
}

// TestN5DShortRound: rounds of 2R+1 planes halve the unrolled loop and give each level a ring
// of 2R+1 shared planes instead of two (stars and boxes: 3/2 the shared memory at reach 1);
// programs whose levels keep a ring of every plane refuse them with a hint.
func TestN5DShortRound(t *testing.T) {
	for _, c := range []struct {
		file, plan string
		err        string
	}{
		{"an5d/star2d1r.stencil", "n5d:bx=32,bt=4,rx=2,unroll=3", ""},
		{"an5d/box3d1r.stencil", "n5d:bx=8,by=8,bt=2,rx=2,unroll=3", ""},
		{"morph/dilate2d.stencil", "n5d:bx=32,bt=2,unroll=3", "drop unroll"},
	} {
		p, err := load.File("../../examples/"+c.file, load.Options{})
		if err != nil {
			t.Fatal(err)
		}
		pl, err := plan.Parse(c.plan, p)
		if err != nil {
			t.Fatal(err)
		}
		shape := []int{40, 70}
		if p.Dims() == 3 {
			shape = []int{20, 30, 40}
		}
		short, err := Lower(p, shape, nil, pl)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s %s: got %v, want an error mentioning %q", c.file, c.plan, err, c.err)
			}
			if N5DShortRound(p) {
				t.Errorf("%s: N5DShortRound says yes", c.file)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s %s: %v", c.file, c.plan, err)
		}
		pl.Unroll = 0
		full, err := Lower(p, shape, nil, pl)
		if err != nil {
			t.Fatal(err)
		}
		if short.SharedBytes*2 != full.SharedBytes*3 {
			t.Errorf("%s: %d shared bytes with short rounds, %d without: want 3/2", c.file, short.SharedBytes, full.SharedBytes)
		}
		a, b := kir.Print(short.Module, kir.CUDA), kir.Print(full.Module, kir.CUDA)
		if !(len(a) < len(b)*3/5) {
			t.Errorf("%s: %d bytes of CUDA with short rounds, %d without: not about half", c.file, len(a), len(b))
		}
		if !strings.Contains(a, "j += 3)") || !strings.Contains(b, "j += 6)") {
			t.Errorf("%s: the loops do not advance 3 and 6 planes per round", c.file)
		}
	}
}

// TestN5DRimCut: rimcut=true runs each chunk in up to three pieces split at the first and last
// planes the unchecked loop may take (a piece loop around the kernel's body); a program whose
// every read is guarded has no unchecked loop, so its kernel is the same with or without it.
func TestN5DRimCut(t *testing.T) {
	for _, c := range []struct {
		src   string
		plan  string
		piece string // in the kernel with rimcut, "" where it changes nothing
	}{
		{"axes y, x\nstate u boundary fixed\nupdate u = 0.25*(u[x-1] + u[x+1] + u[y-1] + u[y+1])\n",
			"n5d:bx=32,bt=3,rx=2,chunk=40", "int z1 = min(max(13, zb0), ze0);"},
		{"axes z, y, x\nstate u boundary fixed\nupdate u = 0.2*(u + u[x-1] + u[x+1] + u[y+1] + u[z-1])\n",
			"n5d:bx=8,by=8,bt=2,rx=2,chunk=16", "int z2 = min(max(n0 - 11, z1), ze0);"},
		{"axes y, x\ninput f init 1\nstate u boundary fixed\nupdate u = 0.25*(u[x-1] + u[x+1] + u[y-1] + u[y+1]) + f\n",
			"n5d:bx=32,bt=3,chunk=40", ""},
	} {
		p, a, b := withAndWithout(t, c.src, c.plan, func(pl *plan.Plan) { pl.RimCut = true })
		if c.piece == "" {
			if a != b || N5DRimCuts(p) {
				t.Errorf("%s: rimcut changed a kernel without an unchecked loop", c.plan)
			}
			continue
		}
		if !N5DRimCuts(p) || !strings.Contains(a, c.piece) || !strings.Contains(a, "for (int pc = 0; pc < 3; ++pc)") || strings.Contains(b, "zb0") {
			t.Errorf("%s: no pieces split at the rim (want %q)", c.plan, c.piece)
		}
	}
}

// TestN5DRimBlocks: rimblocks=true gives the planes within the margins of the streaming axis's
// ends blocks of their own (the first from 0, the last from n0-hi, the chunks between from
// lo), the launch one block more along the chunk axis where that leaves planes between them,
// and nothing changes for a program without an unchecked loop.
func TestN5DRimBlocks(t *testing.T) {
	star2 := "axes y, x\nstate u boundary fixed\nupdate u = 0.25*(u[x-1] + u[x+1] + u[y-1] + u[y+1])\n"
	for _, c := range []struct {
		src, plan string
		shape     []int
		bounds    string // the chunk's first plane in the kernel, "" where it changes nothing
		chunks    int    // blocks along the chunk axis
	}{
		// Level order, bt=3: lo = 1 + 2*1*3, hi = 1 + 1*3 + 6 (the round); 90 planes: 7, 6 x 13, 10.
		{star2, "n5d:bx=32,bt=3,rx=2,wave=false,chunk=13", []int{90, 70}, "int zb = rimsplit ? ((int)blockIdx.y == 0 ? 0 : ((int)blockIdx.y == (int)gridDim.y - 1 ? n0 - 10 : 7 + ((int)blockIdx.y - 1) * chunk)) : (int)blockIdx.y * chunk;", 8},
		// Wave order: lo = 1 + 2*2*3, hi = 1 + 2*3 + 6; 90 planes: 13, 5 x 13, 13; 25 planes are
		// fewer than 13 + 13: plain chunks.
		{star2, "n5d:bx=32,bt=3,rx=2,wave=true,chunk=13", []int{90, 70}, "bool rimsplit = n0 > 26;", 7},
		{star2, "n5d:bx=32,bt=3,rx=2,wave=true,chunk=13", []int{25, 70}, "bool rimsplit = n0 > 26;", 2},
		{"axes z, y, x\nstate u boundary fixed\nupdate u = 0.2*(u + u[x-1] + u[x+1] + u[y+1] + u[z-1])\n",
			"n5d:bx=8,by=8,bt=2,rx=2,wave=true,chunk=16", []int{40, 30, 20}, "(int)gridDim.z - 1 ? n0 - 11 :", 4},
		{"axes y, x\ninput f init 1\nstate u boundary fixed\nupdate u = 0.25*(u[x-1] + u[x+1] + u[y-1] + u[y+1]) + f\n",
			"n5d:bx=32,bt=3,chunk=13", []int{90, 70}, "", 7},
	} {
		p, pl := testkit.Parsed(t, c.src, c.plan)
		plain, err := Lower(p, c.shape, nil, pl)
		if err != nil {
			t.Fatal(err)
		}
		pl.RimBlocks = true
		low, err := Lower(p, c.shape, nil, pl)
		if err != nil {
			t.Fatal(err)
		}
		with, without := kir.Print(low.Module, kir.CUDA), kir.Print(plain.Module, kir.CUDA)
		if got := low.Launches[0].Grid[p.Dims()-1]; got != c.chunks {
			t.Errorf("%s at %v: %d blocks along the chunk axis, want %d", c.plan, c.shape, got, c.chunks)
		}
		if c.bounds == "" {
			if with != without || low.Launches[0].Grid != plain.Launches[0].Grid {
				t.Errorf("%s: rimblocks changed a kernel without an unchecked loop", c.plan)
			}
			continue
		}
		if !strings.Contains(with, c.bounds) || strings.Contains(without, "rimsplit") {
			t.Errorf("%s: no blocks of their own for the rim's planes (want %q)", c.plan, c.bounds)
		}
	}
}

// TestN5DEdges: edges=true adds the edge loop (clamped vector runs, a select for the rim
// columns) where every grid's rim is as wide as the reach; elsewhere (reads of other grids,
// which keep a guard, or a grid whose rim is narrower than the program's reach, so that its
// cells outside the domain would feed its interior) the kernel is the same with or without it.
func TestN5DEdges(t *testing.T) {
	for _, c := range []struct {
		src, plan string
		edge      bool
	}{
		{"axes y, x\nstate u boundary fixed\nupdate u = 0.25*(u[x-1] + u[x+1] + u[y-1] + u[y+1])\n",
			"n5d:bx=32,bt=3,rx=2,chunk=40", true},
		{"axes z, y, x\nstate u boundary fixed\nupdate u = 0.2*(u + u[x-1] + u[x+1] + u[y+1] + u[z-1])\n",
			"n5d:bx=8,by=8,bt=2,rx=2,chunk=16", true},
		{"axes y, x\ninput f init 1\nstate u boundary fixed\nupdate u = 0.25*(u[x-1] + u[x+1] + u[y-1] + u[y+1]) + f\n",
			"n5d:bx=32,bt=3,rx=2,chunk=40", false},
		{"axes y, x\nstate u boundary fixed\nstate v boundary fixed\nupdate u = 0.25*(u[x-2] + u[x+2] + v[y-1] + v[y+1])\nupdate v = 0.5*(v[x-1] + u)\n",
			"n5d:bx=32,bt=2,rx=2,chunk=40", false},
	} {
		p, a, b := withAndWithout(t, c.src, c.plan, func(pl *plan.Plan) { pl.Edges = true })
		if N5DEdges(p, plan.Plan{}) != c.edge {
			t.Errorf("%s: N5DEdges %v, want %v", c.src, !c.edge, c.edge)
		}
		if !c.edge {
			if a != b {
				t.Errorf("%s: edges=true changed a kernel without an edge loop", c.src)
			}
			continue
		}
		x := p.Dims() - 1
		run := fmt.Sprintf("int cv%d_0 = min(max(c%d_0, 0), n%d - 2);", x, x, x)
		if !strings.Contains(a, run) || !strings.Contains(a, "rimc_u_0 ? ") || strings.Contains(b, "rimc_u_0 ? ") {
			t.Errorf("%s: no edge loop with edges=true (want %q and a select)", c.plan, run)
		}
	}
}

// withAndWithout lowers the program src under plan text at a small shape (90x70 or 40x30x20),
// with the setting set applies and without, and prints both kernels (CUDA).
func withAndWithout(t *testing.T, src, text string, set func(*plan.Plan)) (p *ir.Program, with, without string) {
	t.Helper()
	p, pl := testkit.Parsed(t, src, text)
	shape := []int{90, 70}
	if p.Dims() == 3 {
		shape = []int{40, 30, 20}
	}
	plain, err := Lower(p, shape, nil, pl)
	if err != nil {
		t.Fatal(err)
	}
	set(&pl)
	changed, err := Lower(p, shape, nil, pl)
	if err != nil {
		t.Fatal(err)
	}
	return p, kir.Print(changed.Module, kir.CUDA), kir.Print(plain.Module, kir.CUDA)
}

// an5dWithAndWithout is withAndWithout on examples/an5d/NAME.stencil.
func an5dWithAndWithout(t *testing.T, name, text string, set func(*plan.Plan)) (with, without string) {
	t.Helper()
	src, err := os.ReadFile("../../examples/an5d/" + name + ".stencil")
	if err != nil {
		t.Fatal(err)
	}
	_, with, without = withAndWithout(t, string(src), text, set)
	return with, without
}

// TestN5DPublishesReadCellsOnly: a thread publishes to its shared plane only the cells another
// thread reads. With rx=4, a first-order 2D star's threads publish their two outer cells (as
// many stores as with rx=2), a second-order one all four (twice as many), and a 3D star all
// four, which the rows above and below read.
func TestN5DPublishesReadCellsOnly(t *testing.T) {
	stores := regexp.MustCompile(`smem\[tid \+ \d+\] = `)
	for _, c := range []struct {
		name   string
		plan   string // with rx=2
		factor int    // stores with rx=4 per store with rx=2
	}{
		{"star2d1r", "n5d:bx=32,bt=2,rx=2,wave=true,chunk=16", 1},
		{"j2d5pt", "n5d:bx=32,bt=3,rx=2,wave=true,pf=3,edges=true,chunk=16", 1},
		{"star2d2r", "n5d:bx=32,bt=2,rx=2,wave=true,chunk=16", 2},
		{"star3d1r", "n5d:bx=8,by=8,bt=2,rx=2,wave=true,chunk=8", 2},
	} {
		rx4, rx2 := an5dWithAndWithout(t, c.name, c.plan, func(pl *plan.Plan) { pl.RX = 4 })
		two, four := len(stores.FindAllString(rx2, -1)), len(stores.FindAllString(rx4, -1))
		if four != c.factor*two {
			t.Errorf("%s: %d shared stores with rx=4, want %d x %d (rx=2)", c.name, four, c.factor, two)
		}
	}
}

// TestEdgesFirstBlocks evaluates the reordering's declarations (plan.EdgesFirst) for every
// block of grids from 1 x 1 to 6 x 5 tiles and 1 to 3 chunks: each block gets a distinct tile
// and chunk inside the grid, the edge tiles (first or last row or column) all come before the
// interior ones, and the interior ones keep the raster order.
func TestEdgesFirstBlocks(t *testing.T) {
	for _, d := range []int{2, 3} {
		pre, at := edgesFirstBlocks(d)
		maxY := 5
		if d == 2 {
			maxY = 1
		}
		for gx := 1; gx <= 6; gx++ {
			for gy := 1; gy <= maxY; gy++ {
				for gz := 1; gz <= 3; gz++ {
					grid := [3]int{gx, gy, gz}
					if d == 2 {
						grid = [3]int{gx, gz, 1}
					}
					seen := map[[3]int]bool{}
					interior, last := false, -1
					for l := 0; l < gx*gy*gz; l++ {
						block := [3]int{l % grid[0], l / grid[0] % grid[1], l / (grid[0] * grid[1])}
						env := map[string]int{}
						for _, s := range pre {
							dc := s.(*kir.Decl)
							env[dc.Name] = evalInt(t, dc.Init, env, block, grid)
						}
						var got [3]int
						for i := 0; i < d; i++ {
							got[i] = evalInt(t, at[i], env, block, grid)
							if got[i] < 0 || got[i] >= grid[i] {
								t.Fatalf("%dD grid %v: block %d goes to %v, outside", d, grid, l, got)
							}
						}
						if seen[got] {
							t.Fatalf("%dD grid %v: block %d goes to %v, taken twice", d, grid, l, got)
						}
						seen[got] = true
						x, y := got[0], 0
						if d == 3 {
							y = got[1]
						}
						edge := x == 0 || x == gx-1 || (d == 3 && (y == 0 || y == gy-1))
						if edge && interior {
							t.Fatalf("%dD grid %v: edge tile %v after an interior one", d, grid, got)
						}
						if !edge {
							interior = true
							raster := (got[d-1]*gy+y)*gx + x
							if raster <= last {
								t.Fatalf("%dD grid %v: interior tile %v out of raster order", d, grid, got)
							}
							last = raster
						}
					}
				}
			}
		}
	}
}

// evalInt evaluates the integer expressions edgesFirstBlocks declares, for one block of a grid.
func evalInt(t *testing.T, e kir.Expr, env map[string]int, block, grid [3]int) int {
	t.Helper()
	ev := func(x kir.Expr) int { return evalInt(t, x, env, block, grid) }
	switch e := e.(type) {
	case *kir.Int:
		return int(e.V)
	case *kir.Ident:
		v, ok := env[e.Name]
		if !ok {
			t.Fatalf("%s used before its declaration", e.Name)
		}
		return v
	case *kir.Builtin:
		switch e.D {
		case kir.BlockIdx:
			return block[e.Axis]
		case kir.GridDim:
			return grid[e.Axis]
		}
	case *kir.Cond:
		if ev(e.C) != 0 {
			return ev(e.A)
		}
		return ev(e.B)
	case *kir.Call:
		a, b := ev(e.Args[0]), ev(e.Args[1])
		switch e.Fn {
		case "max":
			return max(a, b)
		case "min":
			return min(a, b)
		}
	case *kir.Binary:
		x, y := ev(e.X), ev(e.Y)
		b2i := func(b bool) int {
			if b {
				return 1
			}
			return 0
		}
		switch e.Op {
		case "+":
			return x + y
		case "-":
			return x - y
		case "*":
			return x * y
		case "/", "%":
			if y == 0 {
				t.Fatalf("division by zero (%s)", e.Op)
			}
			if e.Op == "/" {
				return x / y
			}
			return x % y
		case "<":
			return b2i(x < y)
		case "==":
			return b2i(x == y)
		}
	}
	t.Fatalf("unexpected expression %T", e)
	return 0
}

// TestN5DRowLayout checks where a thread's cells lie in n5d's shared rows: side by side (a
// thread publishes its two cells of a level a word apart) where a cell reads two or more words
// of a neighbouring thread (reach 2 along x, 3D boxes), split by cell (a run of TX words apart,
// 32 threads along x here) for first-order stars.
func TestN5DRowLayout(t *testing.T) {
	stores := regexp.MustCompile(`smem\[tid \+ (\d+)\] = (\w+)_([01]);`)
	gap := func(src string) int {
		m := stores.FindAllStringSubmatch(src, -1)
		for i := 0; i+1 < len(m); i++ {
			if m[i][2] == m[i+1][2] && m[i][3] == "0" && m[i+1][3] == "1" {
				a, _ := strconv.Atoi(m[i][1])
				b, _ := strconv.Atoi(m[i+1][1])
				return b - a
			}
		}
		t.Fatal("no pair of a level's stores found")
		return 0
	}
	for _, c := range []struct {
		name, plan string
		gap        int
	}{
		{"star2d2r", "n5d:bx=32,bt=2,rx=2,wave=true,pf=5,chunk=16", 1},
		{"box2d2r", "n5d:bx=32,bt=2,rx=2,wave=true,chunk=16", 1},
		{"box3d1r", "n5d:bx=32,by=4,bt=2,rx=2,ry=3,wave=true,pf=2,chunk=8", 1},
		{"star2d1r", "n5d:bx=32,bt=2,rx=2,wave=true,chunk=16", 32},
	} {
		src, _ := an5dWithAndWithout(t, c.name, c.plan, func(pl *plan.Plan) {})
		if g := gap(src); g != c.gap {
			t.Errorf("%s %s: cells published %d words apart, want %d", c.name, c.plan, g, c.gap)
		}
	}
}

// TestConstSizeKernels: with constsize every kernel of an n5d or forward-plane plan declares
// the lowered sizes as constants and leaves the size arguments unread; without it the kernels
// read the arguments.
func TestConstSizeKernels(t *testing.T) {
	p, err := load.File("../../examples/an5d/star3d1r.stencil", load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		plan    string
		kernels int // at least
	}{
		{"n5d:bx=16,by=8,bt=3,rx=2,wave=true,chunk=16", 2}, // the main kernel and shallower ones
		{"forwardplane:bx=16,by=8,rz=2,pf=1,chunk=16", 1},
	} {
		for _, on := range []bool{false, true} {
			pl, err := plan.Parse(c.plan, p)
			if err != nil {
				t.Fatal(err)
			}
			pl.ConstSize = on
			l, err := Lower(p, []int{40, 50, 60}, nil, pl)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range l.Module.Kernels {
				text := kir.Print(&kir.Module{Kernels: []*kir.Kernel{k}}, kir.CUDA)
				consts := strings.Contains(text, "const int n0 = 40;") && strings.Contains(text, "const int n1 = 50;") && strings.Contains(text, "const int n2 = 60;")
				args := strings.Contains(text, "int n0_arg, int n1_arg, int n2_arg,")
				if consts != on || args != on {
					t.Errorf("%s, constsize %v: constants %v, renamed arguments %v", k.Name, on, consts, args)
				}
			}
			if len(l.Module.Kernels) < c.kernels {
				t.Errorf("%s, constsize %v: %d kernels, want at least %d", c.plan, on, len(l.Module.Kernels), c.kernels)
			}
		}
	}
}

// TestChainKernels: with chain every n5d kernel of the plan takes the flags, the epoch and the
// epoch to wait for, lets the next launch start, waits for its neighbours of the launch before
// (with the rim's blocks, the edge tiles first and asynchronous copies too), takes its input
// without __restrict__ (so no read reaches the non-coherent read-only path) and signals last;
// its launches say they chain. Without it nothing of that.
func TestChainKernels(t *testing.T) {
	for _, c := range []struct {
		file, plan string
		shape      []int
	}{
		{"star2d1r", "n5d:bx=32,bt=4,rx=2,wave=true,pf=3,rimblocks=true,edges=true,edgesfirst=true,chunk=24,fastmath=true", []int{200, 150}},
		{"box2d1r", "n5d:bx=32,bt=4,rx=2,wave=true,async=5,rimblocks=true,edgesfirst=true,chunk=24,fastmath=true", []int{200, 150}},
		{"star3d1r", "n5d:bx=16,by=8,bt=3,rx=2,wave=true,rimcut=true,chunk=16", []int{40, 50, 60}},
	} {
		p, err := load.File("../../examples/an5d/"+c.file+".stencil", load.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, on := range []bool{false, true} {
			pl, err := plan.Parse(c.plan, p)
			if err != nil {
				t.Fatal(err)
			}
			pl.Chain = on
			l, err := Lower(p, c.shape, nil, pl)
			if err != nil {
				t.Fatal(err)
			}
			for i, k := range l.Module.Kernels {
				text := kir.Print(&kir.Module{Kernels: []*kir.Kernel{k}}, kir.CUDA)
				n := len(l.Launches[i].Args)
				args := n >= 3 && l.Launches[i].Args[n-3].Kind == ArgChainFlags && l.Launches[i].Args[n-2].Kind == ArgChainEpoch && l.Launches[i].Args[n-1].Kind == ArgChainWait
				for what, got := range map[string]bool{
					"chained kernel":    k.Chained,
					"chained launch":    l.Launches[i].Chain,
					"chain arguments":   args,
					"chain parameters":  strings.Contains(text, "unsigned* __restrict__ chainflags, unsigned chainepoch, unsigned chainwait)"),
					"launch_dependents": strings.Contains(text, "griddepcontrol.launch_dependents"),
					"acquire":           strings.Contains(text, "ld.acquire.gpu.global.u32") && strings.Contains(text, "(int)(cwv - chainwait) < 0"),
					"release":           strings.Contains(text, "st.release.gpu.global.u32"),
					"coherent input":    strings.Contains(text, "(const float* in0_u,") && !strings.Contains(text, "float* __restrict__ in0_u"),
				} {
					if got != on {
						t.Errorf("%s %v, chain %v, kernel %s: %s %v", c.file, c.shape, on, k.Name, what, got)
					}
				}
				if on && !strings.Contains(text[strings.LastIndex(text, "__syncthreads();"):], "st.release") {
					t.Errorf("%s: the signal is not the kernel's last statement", k.Name)
				}
			}
		}
	}
}

// TestChainReach: a chained block waits for as many chunks around its own as the planes it
// reads reach into, more than one where a chunk is shorter than that.
func TestChainReach(t *testing.T) {
	for _, c := range []struct {
		n0, chunk, lo, hi int
		rim               bool
		m, want           int
	}{
		{16386, 512, 41, 24, true, 16, 1},
		{100, 10, 0, 0, false, 10, 1},
		{100, 10, 0, 0, false, 11, 2},
		{105, 20, 0, 0, false, 12, 1}, // a short last chunk: nothing lies beyond it
		{95, 20, 10, 10, true, 20, 2}, // a 15-plane last chunk before the rim's block
		{95, 20, 10, 10, true, 14, 1},
	} {
		b := n5dChunkBounds(c.n0, c.chunk, c.lo, c.hi, c.rim)
		if b[0][0] != 0 || b[len(b)-1][1] != c.n0 {
			t.Errorf("%+v: chunks %v do not cover the axis", c, b)
		}
		for i := 1; i < len(b); i++ {
			if b[i][0] != b[i-1][1] {
				t.Errorf("%+v: chunks %v and %v are not adjacent", c, b[i-1], b[i])
			}
		}
		if got := n5dChainReach(b, c.m); got != c.want {
			t.Errorf("%+v: reach %d, want %d", c, got, c.want)
		}
	}
}

// TestEvaluationOrder: n5d plans of boxes sum plane by plane, lowest offset first, the
// coefficient last, with fast math too; stars and other strategies evaluate as written.
func TestEvaluationOrder(t *testing.T) {
	box := "axes y, x\ntype f32\nstate u boundary fixed\nupdate u = (u[y-1, x-1] + u[y+1, x+1] + u[y, x] + u[y-1, x+1]) / 4\n"
	star := "axes y, x\ntype f32\nstate u boundary fixed\nupdate u = (u[y-1] + u[y+1] + u[x-1] + u[x+1]) / 4\n"
	for _, c := range []struct {
		src, plan string
		want      string // the update as irprint writes it; "" for the program unchanged
	}{
		{box, "n5d", "(u[y-1, x-1] + u[y-1, x+1] + u + u[y+1, x+1]) / 4.0"},
		{box, "n5d:fastmath=true", "(u[y-1, x-1] + u[y-1, x+1] + u + u[y+1, x+1]) / 4.0"},
		{box, "tiled", ""},
		{star, "n5d", ""},
	} {
		p, pl := testkit.Parsed(t, c.src, c.plan)
		q := EvaluationOrder(p, pl)
		if c.want == "" {
			if q != p {
				t.Errorf("%s: regrouped, want the program as written", c.plan)
			}
			continue
		}
		if got := irprint.Stencil(q); !strings.Contains(got, "update u = "+c.want+"\n") {
			t.Errorf("%s: got\n%s\nwant update u = %s", c.plan, got, c.want)
		}
	}
}

// TestAlignKernels: with align the kernels of n5d and forward-plane plans take the row pitch
// and step rows by it (as a constant when compiled for their size), the launches pass it, and
// Lowered.Pitch is the last axis rounded up to 32 cells; without align nothing names a pitch.
func TestAlignKernels(t *testing.T) {
	p, err := load.File("../../examples/an5d/star3d1r.stencil", load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"n5d:bx=16,by=8,bt=3,rx=2,wave=true,edges=true,chunk=16", "forwardplane:bx=16,by=8,rz=2,pf=1,chunk=16"} {
		for _, c := range []struct {
			align, constsize bool
			want             []string
			pitch            int
		}{
			{false, false, nil, 0},
			{true, false, []string{"int pitch,", "* pitch +"}, 64},
			{true, true, []string{"int pitch_arg,", "const int pitch = 64;", "* pitch +"}, 64},
		} {
			pl, err := plan.Parse(text, p)
			if err != nil {
				t.Fatal(err)
			}
			pl.Align, pl.ConstSize = c.align, c.constsize
			l, err := Lower(p, []int{40, 50, 60}, nil, pl)
			if err != nil {
				t.Fatal(err)
			}
			if l.Pitch != c.pitch {
				t.Errorf("%s: pitch %d, want %d", pl, l.Pitch, c.pitch)
			}
			src := kir.Print(l.Module, kir.CUDA)
			if !c.align && strings.Contains(src, "pitch") {
				t.Errorf("%s: the kernels name a pitch", pl)
			}
			// n5d's vectors ask dense rows for a length of a multiple of the vector, and
			// padded rows for nothing: their edge runs clamp to the pitch.
			if pl.Strategy == plan.N5D {
				rowTest, clampN := strings.Contains(src, "n2 % 2 == 0"), strings.Contains(src, "n2 - 2);")
				if rowTest == c.align || clampN == c.align {
					t.Errorf("%s: the row length's test %v, edge runs clamped to n2 %v; want both %v", pl, rowTest, clampN, !c.align)
				}
				if c.align && !strings.Contains(src, "pitch - 2);") {
					t.Errorf("%s: the edge runs are not clamped to the pitch", pl)
				}
			}
			for _, w := range c.want {
				if !strings.Contains(src, w) {
					t.Errorf("%s: no %q in the kernels", pl, w)
				}
			}
			for _, la := range l.Launches {
				n := 0
				for _, a := range la.Args {
					if a.Kind == ArgPitch {
						n++
					}
				}
				if n != map[bool]int{false: 0, true: 1}[c.align] {
					t.Errorf("%s: launch %s passes the pitch %d times", pl, la.Kernel, n)
				}
			}
		}
	}
}

// TestAlignInPlaneKernels: the in-plane method's vector fills ask dense rows for a length of a
// multiple of vec and padded rows (plan.Align) for nothing, whose kernel indexes rows by the
// pitch it takes.
func TestAlignInPlaneKernels(t *testing.T) {
	p, err := load.File("../../examples/an5d/box3d2r.stencil", load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, align := range []bool{false, true} {
		pl, err := plan.Parse("inplane:bx=8,by=4,load=2,rx=2,ry=2,vec=4,chunk=6", p)
		if err != nil {
			t.Fatal(err)
		}
		pl.Align = align
		l, err := Lower(p, []int{17, 21, 35}, nil, pl)
		if err != nil {
			t.Fatal(err)
		}
		src := kir.Print(l.Module, kir.CUDA)
		if got := strings.Contains(src, "n2 % 4 == 0"); got == align {
			t.Errorf("align=%v: the row length's test %v, want %v", align, got, !align)
		}
		if got := strings.Contains(src, "* pitch +"); got != align {
			t.Errorf("align=%v: rows indexed by the pitch %v", align, got)
		}
		if want := map[bool]int{false: 0, true: 64}[align]; l.Pitch != want {
			t.Errorf("align=%v: pitch %d, want %d", align, l.Pitch, want)
		}
	}
}
