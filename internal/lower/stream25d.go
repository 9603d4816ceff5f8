package lower

import (
	"fmt"

	"tempest/internal/ir"
	"tempest/internal/kir"
	"tempest/internal/plan"
)

// stream25d: 2.5D streaming (1.5D in 2D). A block covers a tile of the fastest axes and walks
// the slowest axis plane by plane. A grid level read only straight along the streaming axis
// off the current plane (a star) keeps its column in a register queue of 2r+1 values and the
// current plane in shared memory; any other grid level read at offsets keeps a rolling window
// of 2r+1 planes in shared memory (the cached plane sweep).
func lowerStream25D(p *ir.Program, shape []int, pl plan.Plan, wide bool) (*Lowered, error) {
	d := p.Dims()
	if d < 2 {
		return nil, fmt.Errorf("plan %s: streaming needs a 2D or 3D grid", pl)
	}
	ps, args := params(p, readRoles)
	k := &kir.Kernel{Name: "tempest_stream25d", Params: ps}
	var body []kir.Stmt
	// In-plane axes 1..d-1 map to threads (x fastest); axis 0 is streamed.
	block := [3]int{pl.BX, 1, 1}
	if d == 3 {
		block[1] = pl.BY
	}
	bsize := make([]int, d)
	local := make([]kir.Expr, d)
	origin := make([]kir.Expr, d)
	coords := make([]kir.Expr, d)
	bsize[0] = 1
	local[0] = kir.I(0)
	coords[0] = kir.Id("c0")
	var inside kir.Expr
	for a := d - 1; a >= 1; a-- {
		dim := d - 1 - a
		bsize[a] = block[dim]
		local[a] = kir.Id(fmt.Sprintf("l%d", a))
		origin[a] = kir.Id(fmt.Sprintf("o%d", a))
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
	threads := block[0] * block[1]
	tid := kir.Expr(kir.Id("l1"))
	for a := 2; a < d; a++ {
		tid = kir.Add(kir.Mul(tid, kir.I(bsize[a])), local[a])
	}
	body = append(body, &kir.Decl{Name: "tid", Type: kir.I32, Init: tid})
	// The chunk of the streaming axis this block covers.
	chunkDim := d - 1
	body = append(body,
		&kir.Decl{Name: "zbeg", Type: kir.I32, Init: kir.Mul(&kir.Builtin{D: kir.BlockIdx, Axis: chunkDim}, kir.Id("chunk"))},
		&kir.Decl{Name: "zend", Type: kir.I32, Init: &kir.Call{Fn: "min", T: kir.I32, Args: []kir.Expr{kir.Add(kir.Id("zbeg"), kir.Id("chunk")), kir.Id("n0")}}})

	em := &emitter{p: p, wide: wide, coords: coords, step: kir.Id("step0"), lets: map[*ir.Let]string{}}
	reach, order := footprints(p)
	type window struct {
		tile  tileInfo // one plane (axis 0 extent 1)
		ring  int      // planes kept: 2r+1 (1 for a register-queue level)
		queue []string // register names, value at z - r + k
		rz    int
	}
	wins := map[gridLevel]*window{}
	shared := 0
	var prime, advance, fills []kir.Stmt
	for _, gl := range order {
		h := reach[gl]
		if !nonzero(h) {
			continue
		}
		g := p.Grids[gl.g]
		t := kir.FromIR(g.Type)
		w := &window{rz: h[0]}
		inPlane := append([]int{0}, h[1:]...)
		plane := newTile(fmt.Sprintf("plane_%s_%d", g.Name, gl.level), bsize, inPlane)
		w.tile = plane
		if columnOnly(p, gl) {
			// Register queue along the streaming axis, current plane in shared memory.
			w.ring = 1
			for i := 0; i <= 2*w.rz; i++ {
				w.queue = append(w.queue, fmt.Sprintf("q_%s_%d_%d", g.Name, gl.level, i))
			}
			for i, q := range w.queue {
				body = append(body, &kir.Decl{Name: q, Type: t, Init: zeroOf(t)})
				if i >= 1 {
					// Value at zbeg - 1 - r + i.
					pos := append([]kir.Expr{kir.Bin("-", kir.Id("zbeg"), kir.I(1+w.rz-i))}, coords[1:]...)
					prime = append(prime, kir.Set(kir.Id(q), em.globalReadAt(g, gl.level, nil, pos, nil, true)))
				}
			}
			for i := 0; i < len(w.queue)-1; i++ {
				advance = append(advance, kir.Set(kir.Id(w.queue[i]), kir.Id(w.queue[i+1])))
			}
			pos := append([]kir.Expr{kir.Add(kir.Id("z"), kir.I(w.rz))}, coords[1:]...)
			advance = append(advance, kir.Set(kir.Id(w.queue[len(w.queue)-1]), em.globalReadAt(g, gl.level, nil, pos, nil, true)))
			if nonzero(inPlane) {
				body = append(body, &kir.ArrayDecl{Name: plane.name, Type: t, Space: kir.Shared, Len: plane.len})
				shared += plane.len * g.Type.Size()
				fills = append(fills, planeFill(em, g, gl.level, plane, origin, kir.Id("z"), kir.I(0), threads)...)
			}
		} else {
			w.ring = 2*w.rz + 1
			body = append(body, &kir.ArrayDecl{Name: plane.name, Type: t, Space: kir.Shared, Len: plane.len * w.ring})
			shared += plane.len * w.ring * g.Type.Size()
			// Prime planes zbeg-r .. zbeg+r-1, then each step loads plane z+r.
			for dz := -w.rz; dz < w.rz; dz++ {
				zpos := kir.Add(kir.Id("zbeg"), kir.I(dz))
				prime = append(prime, planeFill(em, g, gl.level, plane, origin, zpos, slotOf(zpos, w.ring, plane.len), threads)...)
			}
			zpos := kir.Add(kir.Id("z"), kir.I(w.rz))
			fills = append(fills, planeFill(em, g, gl.level, plane, origin, zpos, slotOf(zpos, w.ring, plane.len), threads)...)
		}
		wins[gl] = w
	}
	if shared > staticSharedLimit {
		return nil, fmt.Errorf("plan %s: its planes need %d bytes of shared memory (at most %d); choose smaller blocks", pl, shared, staticSharedLimit)
	}
	em.read = func(em *emitter, l *ir.Load) kir.Expr {
		w, ok := wins[gridLevel{l.G.Index, l.Level}]
		if !ok || l.Layer != nil {
			return em.globalRead(l.G, l.Level, l.Layer, coords, l.Off)
		}
		if w.queue != nil {
			if !nonzero(l.Off[1:]) {
				return kir.Id(w.queue[w.rz+l.Off[0]])
			}
			return w.tile.at(local, append([]int{0}, l.Off[1:]...))
		}
		zpos := kir.Add(kir.Id("z"), kir.I(l.Off[0]))
		return &kir.Index{Array: kir.Id(w.tile.name), Idx: kir.Add(slotOf(zpos, w.ring, w.tile.len), w.tile.at(local, append([]int{0}, l.Off[1:]...)).(*kir.Index).Idx)}
	}
	body = append(body, prime...)
	var loop []kir.Stmt
	loop = append(loop, kir.Set(kir.Id("c0"), kir.Id("z")))
	loop = append(loop, advance...)
	loop = append(loop, fills...)
	loop = append(loop, &kir.Barrier{})
	var compute []kir.Stmt
	compute = append(compute, &kir.Decl{Name: "idx", Type: em.idxType(), Init: em.linear(coords, nil)})
	compute = append(compute, storeUpdatesSplit(em, kir.Id("idx"))...)
	loop = append(loop, &kir.If{Cond: inside, Then: compute})
	loop = append(loop, &kir.Barrier{})
	body = append(body, &kir.Decl{Name: "c0", Type: kir.I32, Init: kir.Id("zbeg")})
	body = append(body, &kir.For{Var: "z", From: kir.Id("zbeg"), To: kir.Id("zend"), Step: 1, Body: loop})
	k.Body = body
	k.Params = append(k.Params, kir.Param{Name: "chunk", Type: kir.I32})
	chunk := pl.Chunk
	if chunk <= 0 || chunk > shape[0] {
		chunk = shape[0]
	}
	args = append(args, Arg{Kind: ArgConst, Value: int64(chunk)})
	var grid [3]int
	grid[0] = ceilDiv(shape[d-1], block[0])
	grid[1], grid[2] = 1, 1
	if d == 3 {
		grid[1] = ceilDiv(shape[1], block[1])
	}
	grid[chunkDim] = ceilDiv(shape[0], chunk)
	return &Lowered{
		Module:      &kir.Module{Kernels: []*kir.Kernel{k}, Uses64: uses64(p)},
		Launches:    []Launch{{Kernel: k.Name, Grid: grid, Block: block, Args: args, Steps: 1}},
		SharedBytes: shared,
	}, nil
}

// columnOnly reports whether every read of a grid level off the current plane lies straight
// along the streaming axis (no in-plane offset): the star shape a register queue serves.
func columnOnly(p *ir.Program, gl gridLevel) bool {
	ok := true
	for _, u := range p.Updates {
		ir.WalkDeep(u.Value, func(e ir.Expr) {
			if l, is := e.(*ir.Load); is && l.G.Index == gl.g && l.Level == gl.level && l.Off[0] != 0 && nonzero(l.Off[1:]) {
				ok = false
			}
		})
	}
	return ok
}

func zeroOf(t kir.Type) kir.Expr {
	if t.IsFloat() {
		return &kir.Float{V: 0, T: t}
	}
	return &kir.Int{V: 0, T: t}
}

// slotOf is the element offset of the ring slot holding plane z.
func slotOf(z kir.Expr, ring, planeLen int) kir.Expr {
	if ring == 1 {
		return kir.I(0)
	}
	return kir.Mul(kir.Bin("%", kir.Add(z, kir.I(ring)), kir.I(ring)), kir.I(planeLen))
}

// planeFill loads plane z of a grid level (in-plane halo included) into shared memory at
// element offset slot, each element through the grid's boundary rules.
func planeFill(em *emitter, g *ir.Grid, level int, t tileInfo, origin []kir.Expr, z, slot kir.Expr, threads int) []kir.Stmt {
	v := "i_" + t.name
	var body []kir.Stmt
	rest := kir.Expr(kir.Id(v))
	d := len(t.dims)
	pos := make([]kir.Expr, d)
	pos[0] = z
	for a := d - 1; a >= 1; a-- {
		name := fmt.Sprintf("t%d_%s", a, t.name)
		var tc kir.Expr
		if a == 1 {
			tc = rest
		} else {
			tc = kir.Bin("%", rest, kir.I(t.dims[a]))
			rest = kir.Bin("/", rest, kir.I(t.dims[a]))
		}
		body = append(body, &kir.Decl{Name: name, Type: kir.I32, Init: kir.Bin("-", kir.Add(origin[a], tc), kir.I(t.halo[a]))})
		pos[a] = kir.Id(name)
	}
	body = append(body, kir.Set(kir.At(t.name, kir.Add(slot, kir.Id(v))), em.globalReadAt(g, level, nil, pos, nil, true)))
	return []kir.Stmt{&kir.For{Var: v, From: kir.Id("tid"), To: kir.I(t.len), Step: threads, Body: body}}
}
