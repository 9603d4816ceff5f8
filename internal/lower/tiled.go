package lower

import (
	"fmt"

	"tempest/internal/ir"
	"tempest/internal/kir"
	"tempest/internal/plan"
)

// staticSharedLimit is what a kernel may declare statically on every device Tempest targets.
const staticSharedLimit = 48 * 1024

// gridLevel names one level of one grid.
type gridLevel struct{ g, level int }

// footprints collects, for every grid level the updates read at constant offsets (layered
// reads excluded), the reach per axis.
func footprints(p *ir.Program) (map[gridLevel][]int, []gridLevel) {
	reach := map[gridLevel][]int{}
	var order []gridLevel
	for _, u := range p.Updates {
		ir.WalkDeep(u.Value, func(e ir.Expr) {
			l, ok := e.(*ir.Load)
			if !ok || l.Layer != nil {
				return
			}
			k := gridLevel{l.G.Index, l.Level}
			r, seen := reach[k]
			if !seen {
				r = make([]int, p.Dims())
				order = append(order, k)
			}
			for a, o := range l.Off {
				r[a] = max(r[a], abs(o))
			}
			reach[k] = r
		})
	}
	return reach, order
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func nonzero(r []int) bool {
	for _, v := range r {
		if v != 0 {
			return true
		}
	}
	return false
}

// blockDims maps axis a of a d-dimensional grid to the block dimension (x fastest).
func blockDims(pl plan.Plan) [3]int { return [3]int{pl.BX, pl.BY, pl.BZ} }

// tiled: a shared-memory tile with halo for every grid level read at offsets, one step per
// launch.
func lowerTiled(p *ir.Program, shape []int, pl plan.Plan, wide bool) (*Lowered, error) {
	d := p.Dims()
	block := blockDims(pl)
	ps, args := params(p, readRoles)
	k := &kir.Kernel{Name: "tempest_tiled", Params: ps}
	var body []kir.Stmt
	local := make([]kir.Expr, d)
	origin := make([]kir.Expr, d)
	coords := make([]kir.Expr, d)
	bsize := make([]int, d)
	var inside kir.Expr
	for a := d - 1; a >= 0; a-- {
		dim := d - 1 - a
		bsize[a] = block[dim]
		origin[a] = kir.Id(fmt.Sprintf("o%d", a))
		local[a] = kir.Id(fmt.Sprintf("l%d", a))
		coords[a] = kir.Id(fmt.Sprintf("c%d", a))
		body = append(body,
			&kir.Decl{Name: fmt.Sprintf("l%d", a), Type: kir.I32, Init: &kir.Builtin{D: kir.ThreadIdx, Axis: dim}},
			&kir.Decl{Name: fmt.Sprintf("o%d", a), Type: kir.I32, Init: kir.Mul(&kir.Builtin{D: kir.BlockIdx, Axis: dim}, kir.I(block[dim]))},
			&kir.Decl{Name: fmt.Sprintf("c%d", a), Type: kir.I32, Init: kir.Add(origin[a], local[a])})
		in := &kir.Binary{Op: "<", X: coords[a], Y: kir.Id(fmt.Sprintf("n%d", a))}
		if inside == nil {
			inside = in
		} else {
			inside = &kir.Binary{Op: "&&", X: inside, Y: in}
		}
	}
	threads := pl.Threads()
	tid := kir.Expr(kir.Id("l0"))
	for a := 1; a < d; a++ {
		tid = kir.Add(kir.Mul(tid, kir.I(bsize[a])), local[a])
	}
	body = append(body, &kir.Decl{Name: "tid", Type: kir.I32, Init: tid})

	em := &emitter{p: p, wide: wide, coords: coords, step: kir.Id("step0"), lets: map[*ir.Let]string{}}
	reach, order := footprints(p)
	tiles := map[gridLevel]tileInfo{}
	shared := 0
	for _, gl := range order {
		h := reach[gl]
		if !nonzero(h) {
			continue
		}
		g := p.Grids[gl.g]
		t := newTile(fmt.Sprintf("tile_%s_%d", g.Name, gl.level), bsize, h)
		tiles[gl] = t
		shared += t.len * g.Type.Size()
		body = append(body, &kir.ArrayDecl{Name: t.name, Type: kir.FromIR(g.Type), Space: kir.Shared, Len: t.len})
		body = append(body, t.fill(em, g, gl.level, origin, threads)...)
	}
	if shared > staticSharedLimit {
		return nil, fmt.Errorf("plan %s: its tiles need %d bytes of shared memory (at most %d); choose smaller blocks", pl, shared, staticSharedLimit)
	}
	if len(tiles) > 0 {
		body = append(body, &kir.Barrier{})
	}
	em.read = func(em *emitter, l *ir.Load) kir.Expr {
		if t, ok := tiles[gridLevel{l.G.Index, l.Level}]; ok && l.Layer == nil {
			return t.at(local, l.Off)
		}
		return em.globalRead(l.G, l.Level, l.Layer, coords, l.Off)
	}
	var compute []kir.Stmt
	compute = append(compute, &kir.Decl{Name: "idx", Type: em.idxType(), Init: em.linear(coords, nil)})
	compute = append(compute, storeUpdatesSplit(em, kir.Id("idx"))...)
	body = append(body, &kir.If{Cond: inside, Then: compute})
	k.Body = body
	return &Lowered{
		Module:      &kir.Module{Kernels: []*kir.Kernel{k}, Uses64: uses64(p)},
		Launches:    []Launch{{Kernel: k.Name, Block: block, Args: args, Steps: 1}},
		SharedBytes: shared,
	}, nil
}

// tileInfo is a shared-memory copy of a block's region plus halo.
type tileInfo struct {
	name string
	dims []int // per axis, slowest first
	halo []int
	len  int
}

func newTile(name string, bsize, halo []int) tileInfo {
	t := tileInfo{name: name, halo: halo, len: 1}
	for a := range bsize {
		t.dims = append(t.dims, bsize[a]+2*halo[a])
		t.len *= bsize[a] + 2*halo[a]
	}
	return t
}

// at reads the tile at a thread's local position plus constant offsets.
func (t tileInfo) at(local []kir.Expr, off []int) kir.Expr {
	var idx kir.Expr
	for a := range t.dims {
		c := kir.Add(local[a], kir.I(t.halo[a]+off[a]))
		if idx == nil {
			idx = c
		} else {
			idx = kir.Add(kir.Mul(idx, kir.I(t.dims[a])), c)
		}
	}
	return &kir.Index{Array: kir.Id(t.name), Idx: idx}
}

// fill loads the tile cooperatively: thread tid loads elements tid, tid+threads, ...; each
// element reads the grid at its global position with the grid's boundary rules.
func (t tileInfo) fill(em *emitter, g *ir.Grid, level int, origin []kir.Expr, threads int) []kir.Stmt {
	v := "i_" + t.name
	var body []kir.Stmt
	rest := kir.Expr(kir.Id(v))
	pos := make([]kir.Expr, len(t.dims))
	for a := len(t.dims) - 1; a >= 0; a-- {
		name := fmt.Sprintf("t%d_%s", a, t.name)
		var tc kir.Expr
		if a == 0 {
			tc = rest
		} else {
			tc = kir.Bin("%", rest, kir.I(t.dims[a]))
			rest = kir.Bin("/", rest, kir.I(t.dims[a]))
		}
		body = append(body, &kir.Decl{Name: name, Type: kir.I32, Init: kir.Bin("-", kir.Add(origin[a], tc), kir.I(t.halo[a]))})
		pos[a] = kir.Id(name)
	}
	body = append(body, kir.Set(kir.At(t.name, kir.Id(v)), em.globalReadAt(g, level, nil, pos, nil, true)))
	return []kir.Stmt{&kir.For{Var: v, From: kir.Id("tid"), To: kir.I(t.len), Step: threads, Body: body}}
}
