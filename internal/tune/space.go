package tune

import (
	"slices"

	"tempest/internal/ir"
	"tempest/internal/model"
	"tempest/internal/plan"
)

// The plan space per strategy and dimension: block shapes (x fastest), pyramid heights and
// stream chunks. Block shapes keep a multiple of 32 threads along x where they can (coalesced
// rows, whole warps); the sets are small enough that an exhaustive search of one stencil takes
// about a minute on a GPU (each candidate is compiled, uploaded and timed).
var (
	naive1D = [][3]int{{64, 1, 1}, {128, 1, 1}, {256, 1, 1}, {512, 1, 1}, {1024, 1, 1}}
	naive2D = [][3]int{{32, 4, 1}, {32, 8, 1}, {32, 16, 1}, {64, 4, 1}, {64, 8, 1}, {128, 2, 1}, {128, 4, 1}, {256, 1, 1}, {256, 2, 1}, {512, 1, 1}}
	naive3D = [][3]int{{32, 4, 1}, {32, 8, 1}, {32, 16, 1}, {64, 4, 1}, {64, 8, 1}, {128, 2, 1}, {128, 4, 1}, {256, 1, 1}}

	tiled2D = [][3]int{{16, 16, 1}, {32, 4, 1}, {32, 8, 1}, {32, 16, 1}, {64, 4, 1}, {64, 8, 1}, {128, 2, 1}, {128, 4, 1}, {256, 1, 1}}
	tiled3D = [][3]int{{32, 4, 4}, {32, 8, 2}, {32, 8, 4}, {16, 8, 4}, {16, 16, 2}, {64, 4, 2}, {32, 4, 2}, {32, 16, 2}}

	stream2D      = [][3]int{{128, 1, 1}, {256, 1, 1}, {512, 1, 1}, {1024, 1, 1}}
	stream2DChunk = []int{32, 64, 128, 256}
	stream3D      = [][3]int{{32, 4, 1}, {32, 8, 1}, {32, 16, 1}, {64, 4, 1}, {64, 8, 1}, {128, 2, 1}}
	stream3DChunk = []int{32, 64, 128}

	pyramid1D   = [][3]int{{128, 1, 1}, {256, 1, 1}, {512, 1, 1}, {1024, 1, 1}}
	pyramid1DPH = []int{1, 2, 4, 8, 16, 32, 64} // deep 1D pyramids cost little halo: 2 x 64 of 1024 cells
	// The register tiles of 1D pyramids (rx cells a thread): on the H200 the 1D peers' shapes
	// ran fastest at 128 or 256 threads of 8 or 16 cells, ph 16 to 32 (docs/performance.md).
	pyramidRXBlocks = []int{128, 256}
	pyramidRXCells  = []int{4, 8, 16}
	// Their heights stop at 32: 64 ran 15-21% slower than 32 with every block and tile there,
	// though its halo is 3% of a tile of 4096 cells.
	pyramidRXPH = []int{1, 2, 4, 8, 16, 32}
	pyramid2D   = [][3]int{{32, 8, 1}, {32, 16, 1}, {32, 32, 1}, {64, 8, 1}, {64, 16, 1}}
	pyramid2DPH = []int{1, 2, 3, 4, 5, 6, 8}
	pyramid3D   = [][3]int{{16, 8, 8}, {32, 8, 4}, {16, 16, 4}, {32, 4, 4}}
	pyramid3DPH = []int{1, 2, 3, 4}

	// n5d: AN5D's temporal blocks (b_T 1..16 in 2D, 1..8 in 3D) over blocks of cells that
	// threads cover rx at a time along x. Blocks of one thread per cell take AN5D's widths and
	// two stream chunks; rx = 2 and 4 (neighbours inside the thread come from registers: it
	// helps boxes, while stars pay for rx-way shared bank conflicts) take the widths that
	// measured well on the H100 and one chunk. Blocks wider than 512 cells with rx > 1 lose
	// to narrower ones (fewer resident blocks, longer barriers) and are left out, and so are
	// blocks of 512 threads: no 2D stencil's best plan had them in any record (the H100's
	// exhaustive sweeps, the H200's sweep and the plans tuned for EBISU's and LoRAStencil's 2D
	// stencils, float and double), where the best of them ran at 0.60-0.93 of the best
	// (docs/performance.md, 2026-11-28).
	n5d2D = []n5dShape{
		{bx: 128, rx: 1, chunks: []int{256, 512}}, {bx: 256, rx: 1, chunks: []int{256, 512}},
		{bx: 128, rx: 2, chunks: []int{256}}, {bx: 256, rx: 2, chunks: []int{256}},
		{bx: 64, rx: 4, chunks: []int{256}}, {bx: 128, rx: 4, chunks: []int{256}},
	}
	n5d3D = []n5dShape{
		{bx: 16, by: 16, rx: 1, chunks: []int{64, 128}}, {bx: 32, by: 16, rx: 1, chunks: []int{64, 128}},
		{bx: 32, by: 32, rx: 1, chunks: []int{64, 128}}, {bx: 64, by: 16, rx: 1, chunks: []int{64, 128}},
		{bx: 16, by: 16, rx: 2, chunks: []int{64, 128}}, {bx: 16, by: 32, rx: 2, chunks: []int{64, 128}},
		{bx: 32, by: 16, rx: 2, chunks: []int{64, 128}}, {bx: 8, by: 32, rx: 4, chunks: []int{64}},
	}
	n5dBT = map[int]int{2: 16, 3: 8} // deepest temporal block per dimension

	// forwardplane and inplane (3D): the block shapes that measured best on the H100
	// (docs/performance.md), every loading variant, register tiles of two and four outputs
	// and vector widths of 1, 2 and 4 (4 only for 4-byte elements: Validate refuses the
	// rest). Together with n5d's 3D space they stay under 200 plans per stencil.
	forwardBlock = [][3]int{{32, 4, 1}, {32, 8, 1}, {64, 4, 1}, {32, 16, 1}, {64, 8, 1}}
	forwardChunk = []int{64, 128}
	// forwardPlanes are the planes a forward-plane step computes (rz); the refinement tries
	// the others on the fastest.
	forwardPlanes = []int{1, 2, 4}
	inplaneBlock  = [][3]int{{32, 8, 1}, {64, 4, 1}}
	inplaneTile   = [][2]int{{1, 2}, {2, 2}}
	inplaneVec    = []int{1, 2, 4}
)

// n5dShape is one n5d block of the space: bx x by threads, rx cells per thread along x, and
// the stream chunks it is tried with.
type n5dShape struct {
	bx, by, rx int
	chunks     []int
}

func pow2Ceil(n int) int {
	p := 1
	for p < n {
		p *= 2
	}
	return p
}

// Strategies is every strategy Tempest can lower that has a model, in plan.Strategies order
// (an "n5d" strategy is picked up here when the plan package offers it).
func Strategies() []string {
	var out []string
	for _, s := range plan.Strategies {
		if _, ok := model.For(s); ok {
			out = append(out, s)
		}
	}
	return out
}

// Enumerate lists the candidate plans of the given strategies (nil: Strategies()) for a
// program and size, every one compiled with fast math when fast is set. Blocks far larger
// than the domain are left out (one block shape per strategy is always kept), stream chunks
// at least as long as the streaming axis become the whole axis, and duplicates are removed.
// Validity against the device is checked later.
func Enumerate(p *ir.Program, shape []int, strategies []string, fast bool) []plan.Plan {
	if strategies == nil {
		strategies = Strategies()
	}
	sp := &space{p: p, shape: shape, d: p.Dims(), fast: fast, seen: map[string]bool{}}
	for _, s := range strategies {
		if f, ok := spaces[s]; ok {
			f(sp, s)
		} else if pl, err := plan.Default(s, p); err == nil {
			sp.add(pl)
		}
	}
	return sp.out
}

// spaces is each strategy's plan space: the tuner's one table of strategies (plan.Registry
// names them all; a strategy without an entry is tried at its defaults).
var spaces = map[string]func(sp *space, s string){
	plan.Naive:        naiveSpace,
	plan.Tiled:        tiledSpace,
	plan.Stream25D:    stream25dSpace,
	plan.Pyramid:      pyramidSpace,
	plan.N5D:          n5dSpace,
	plan.ForwardPlane: forwardPlaneSpace,
	plan.InPlane:      inplaneSpace,
}

// space collects the candidate plans of one program and size, each once.
type space struct {
	p     *ir.Program
	shape []int
	d     int
	fast  bool
	seen  map[string]bool
	out   []plan.Plan
}

// add keeps pl, with the space's math mode, unless an equal plan is kept already.
func (sp *space) add(pl plan.Plan) {
	pl.FastMath = sp.fast
	if k := pl.String(); !sp.seen[k] {
		sp.seen[k] = true
		sp.out = append(sp.out, pl)
	}
}

// fits says no block dimension is beyond the next power of two of its axis (the streamed
// axis not counted where streaming).
func (sp *space) fits(b [3]int, streaming bool) bool {
	for dim := 0; dim < 3; dim++ {
		a := sp.d - 1 - dim
		if streaming && a == 0 {
			continue
		}
		if a < 0 {
			if b[dim] > 1 {
				return false
			}
			continue
		}
		if b[dim] > max(pow2Ceil(sp.shape[a]), 8) {
			return false
		}
	}
	return true
}

// blocks is the blocks of all that fit, or the smallest of them where none does.
func (sp *space) blocks(all [][3]int, streaming bool) [][3]int {
	var keep [][3]int
	for _, b := range all {
		if sp.fits(b, streaming) {
			keep = append(keep, b)
		}
	}
	if len(keep) == 0 && len(all) > 0 {
		// The smallest block (fewest threads) stands in for a domain smaller than all.
		small := all[0]
		for _, b := range all {
			if b[0]*b[1]*b[2] < small[0]*small[1]*small[2] {
				small = b
			}
		}
		keep = append(keep, small)
	}
	return keep
}

// chunk is c planes of the streaming axis, or 0 (the whole axis) where c covers it.
func (sp *space) chunk(c int) int {
	if c >= sp.shape[0] {
		return 0
	}
	return c
}

// streamed adds a streaming strategy's plans: every block that fits times every stream
// chunk (a chunk as long as the axis is the whole axis).
func (sp *space) streamed(s string, bs [][3]int, chunks []int) {
	for _, b := range sp.blocks(bs, true) {
		for _, c := range chunks {
			sp.add(plan.Plan{Strategy: s, BX: b[0], BY: b[1], BZ: 1, Chunk: sp.chunk(c)})
		}
	}
}

func naiveSpace(sp *space, s string) {
	for _, b := range sp.blocks(pick(sp.d, naive1D, naive2D, naive3D), false) {
		sp.add(plan.Plan{Strategy: s, BX: b[0], BY: b[1], BZ: b[2]})
	}
}

func tiledSpace(sp *space, s string) {
	for _, b := range sp.blocks(pick(sp.d, naive1D, tiled2D, tiled3D), false) {
		sp.add(plan.Plan{Strategy: s, BX: b[0], BY: b[1], BZ: b[2]})
	}
}

func stream25dSpace(sp *space, s string) {
	if sp.d < 2 {
		return
	}
	bs, chunks := stream2D, stream2DChunk
	if sp.d == 3 {
		bs, chunks = stream3D, stream3DChunk
	}
	sp.streamed(s, bs, chunks)
}

func pyramidSpace(sp *space, s string) {
	bs, phs := pyramid1D, pyramid1DPH
	switch sp.d {
	case 2:
		bs, phs = pyramid2D, pyramid2DPH
	case 3:
		bs, phs = pyramid3D, pyramid3DPH
	}
	for _, b := range sp.blocks(bs, false) {
		for _, ph := range phs {
			pl := plan.Plan{Strategy: s, BX: b[0], BY: b[1], BZ: b[2], PH: ph}
			if pl.FitPH(sp.p) != nil || pl.PH != ph {
				continue // this height leaves no output cell in the block
			}
			sp.add(pl)
		}
	}
	if plan.PyramidRXApplies(sp.p) == nil {
		// 1D with a fixed rim: register tiles, rx cells a thread (lower's pyramidRX).
		for _, bx := range pyramidRXBlocks {
			for _, rx := range pyramidRXCells {
				for _, ph := range pyramidRXPH {
					pl := plan.Plan{Strategy: s, BX: bx, BY: 1, BZ: 1, PH: ph, RX: rx}
					if pl.FitPH(sp.p) != nil || pl.PH != ph || !sp.fits(pl.PyramidCells(), false) {
						continue
					}
					sp.add(pl)
				}
			}
		}
	}
}

func n5dSpace(sp *space, s string) {
	d := sp.d
	if d < 2 || d > 3 {
		return
	}
	shapes := n5d2D
	if d == 3 {
		shapes = n5d3D
	}
	for _, sh := range shapes {
		b := [3]int{sh.bx * sh.rx, max(sh.by, 1), 1}
		if !sp.fits(b, true) {
			continue
		}
		for _, c := range sh.chunks {
			c := sp.chunk(c)
			// From bT = 2: with one level n5d blocks no time steps and is a 2.5D
			// streaming kernel that carries n5d's halo threads; it measured slower than
			// the best other plan on all 20 stencils of testdata/h100-exhaustive.txt.
			for bt := 2; bt <= n5dBT[d]; bt++ {
				pl := plan.Plan{Strategy: s, BX: sh.bx, BY: max(sh.by, 1), BZ: 1, BT: bt, RX: sh.rx, Chunk: c, Wave: true}
				// Heights that leave a block no output cell are left out.
				if pl.FitBT(sp.p) != nil || pl.BT != bt {
					continue
				}
				sp.add(pl)
			}
		}
	}
}

func forwardPlaneSpace(sp *space, s string) {
	if sp.d != 3 {
		return
	}
	// Every plan loads its halos a plane ahead (pf=1): on the H200 that doubled the 3D stars
	// of radius 1 to 4 over loading them in the plane's own step (113 to 221 GCells/s on
	// star3d3r), and two planes ahead never beat one; rows along y per thread (ry) lost on
	// every one of them (their queues' registers cost more occupancy than the shared y
	// neighbours save), so the space has none (docs/performance.md).
	// Steps of several planes (rz) between two barriers, where the stencil is a star along z:
	// rz=2 to 4 gained 4-12% on star3d2r-4r over one plane a step. Blocks of 512 threads
	// (64x8, 32x16) cut the halo's share of the loads: star3d3r 268 GCells/s with 64x8 against
	// 242 with 32x8 (rz=2, float, H200); blocks of 1024 threads at best tied them (32x32 on
	// star3d3r), and 128 threads along x lost on every star.
	for _, b := range sp.blocks(forwardBlock, true) {
		for _, c := range forwardChunk {
			for _, rz := range forwardPlanes {
				if rz == 1 && b[0]*b[1] > 256 {
					continue // the large blocks only with rz: keeps the 3D space under 200 plans
				}
				pl := plan.Plan{Strategy: s, BX: b[0], BY: b[1], BZ: 1, RZ: rz, Prefetch: 1, Chunk: sp.chunk(c)}
				if rz == 1 || pl.Validate(sp.p, plan.Limits{}, 0) == nil {
					sp.add(pl)
				}
			}
		}
	}
}

func inplaneSpace(sp *space, s string) {
	def, err := plan.Default(s, sp.p)
	if err != nil {
		return
	}
	for _, b := range sp.blocks(inplaneBlock, true) {
		for load := 0; load <= 2; load++ {
			for _, tile := range inplaneTile {
				for _, v := range inplaneVec {
					pl := def
					pl.BX, pl.BY, pl.Load, pl.RX, pl.RY, pl.Vec = b[0], b[1], load, tile[0], tile[1], v
					if def.Chunk >= sp.shape[0] {
						pl.Chunk = 0
					}
					if pl.Validate(sp.p, plan.Limits{}, 0) == nil {
						sp.add(pl)
					}
				}
			}
		}
	}
}

func pick(d int, one, two, three [][3]int) [][3]int {
	switch d {
	case 1:
		return slices.Clone(one)
	case 2:
		return slices.Clone(two)
	}
	return slices.Clone(three)
}
