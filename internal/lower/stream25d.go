package lower

import (
	"fmt"
	"slices"

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
	if p.Dims() < 2 {
		return nil, fmt.Errorf("plan %s: streaming needs a 2D or 3D grid", pl)
	}
	return lowerStreaming(p, shape, pl, wide, false)
}

// streamer builds the kernel of a plan whose one-plane-thick blocks walk the slowest axis:
// stream25d, or with forward the forward-plane plan (lowerForwardPlane), which differs in
// how a register-queue level's current plane reaches shared memory (edgeFill) and in the loads
// without boundary handling of blocks inside the domain.
type streamer struct {
	p       *ir.Program
	pl      plan.Plan
	forward bool
	d       int
	block   [3]int
	bsize   []int
	// local, origin and coords are the thread's index in the block, the block's origin and
	// the cell's coordinates per axis (axis 0 streamed).
	local, origin, coords []kir.Expr
	inside                kir.Expr // the cell lies in the domain
	threads               int
	body                  []kir.Stmt
	em                    *emitter
	wins                  map[gridLevel]*streamWindow
	shared                int
	prime, advance, fills []kir.Stmt
	// forward only: the queue levels' loads without boundary handling, for blocks whose
	// columns and halos lie inside the domain at this z (fast), the widest reach per axis
	// of the queue levels, and the ring levels' fills after them.
	fast                              *emitter
	fastAdvance, fastFills, ringFills []kir.Stmt
	H                                 [3]int
	// pf (forward only) is how many planes ahead the halos are loaded (0: in the plane's own
	// step); with dbuf the shared planes alternate between two buffers, so a plane needs one
	// barrier, not two (every window a register queue's plane: the rings keep theirs).
	pf   int
	dbuf bool
	// rz (forward with dbuf only) is the planes a step computes: the queues hold 2r+rz
	// values, the halos and the plane buffers rz planes a step, one barrier for all of them;
	// sub is the step's plane whose terms the emitter reads now.
	rz, sub int
}

// streamWindow is what a streamed grid level keeps of the planes around the current one.
type streamWindow struct {
	tile  tileInfo // one plane (axis 0 extent 1)
	ring  int      // planes kept: 2r+1 (1 for a register-queue level)
	queue []string // a register-queue level's registers, value at z - r + k
	rz    int
}

// lowerStreaming is the streaming kernel as the streamer's stages: its thread geometry, the
// windows of its grid levels, the reads from them, and the plane loop.
func lowerStreaming(p *ir.Program, shape []int, pl plan.Plan, wide, forward bool) (*Lowered, error) {
	name := "tempest_stream25d"
	if forward {
		name = "tempest_forwardplane"
	}
	ps, args := params(p, readRoles)
	if pl.Align {
		ps, args = pitchParam(ps, args)
	}
	k := &kir.Kernel{Name: name, Params: ps}
	s := &streamer{p: p, pl: pl, forward: forward, d: p.Dims()}
	s.rz = 1
	if forward {
		s.pf = pl.Prefetch
		s.rz = max(pl.RZ, 1)
	}
	s.geometry()
	s.em = &emitter{p: p, wide: wide, coords: s.coords, step: kir.Id("step0"), lets: map[*ir.Let]string{}, pitched: pl.Align}
	if forward {
		fast := *s.em
		fast.interior = true
		s.fast = &fast
	}
	s.windows()
	if s.rz > 1 && !s.dbuf {
		panic(fmt.Sprintf("internal error: plan %s: rz without two plane buffers passed the plan's checks", pl))
	}
	if s.shared > staticSharedLimit {
		return nil, fmt.Errorf("plan %s: its planes need %d bytes of shared memory (at most %d); choose smaller blocks", pl, s.shared, staticSharedLimit)
	}
	s.em.read = s.read
	s.body = append(s.body, s.prime...)
	s.body = append(s.body, &kir.Decl{Name: "c0", Type: kir.I32, Init: kir.Id("zbeg")})
	s.body = append(s.body, &kir.For{Var: "z", From: kir.Id("zbeg"), To: kir.Id("zend"), Step: s.rz, Body: s.loop()})
	k.Body = s.body
	if forward && pl.ConstSize {
		k.Body = append(constSizeDecls(k, shape, pl.Align), k.Body...)
	}
	k.Params = append(k.Params, kir.Param{Name: "chunk", Type: kir.I32})
	chunk := pl.ChunkOf(shape[0])
	args = append(args, Arg{Kind: ArgConst, Value: int64(chunk)})
	return &Lowered{
		Module:      &kir.Module{Kernels: []*kir.Kernel{k}, Uses64: uses64(p)},
		Launches:    []Launch{{Kernel: k.Name, Block: s.block, Args: args, Steps: 1}},
		SharedBytes: s.shared,
	}, nil
}

// geometry declares the thread's place: in-plane axes 1..d-1 map to threads (x fastest),
// axis 0 is streamed in chunks of the chunk parameter.
func (s *streamer) geometry() {
	d, pl := s.d, s.pl
	s.block = [3]int{pl.BX, 1, 1}
	if d == 3 {
		s.block[1] = pl.BY
	}
	s.bsize = make([]int, d)
	s.local = make([]kir.Expr, d)
	s.origin = make([]kir.Expr, d)
	s.coords = make([]kir.Expr, d)
	s.bsize[0] = 1
	s.local[0] = kir.I(0)
	s.coords[0] = kir.Id("c0")
	for a := d - 1; a >= 1; a-- {
		dim := d - 1 - a
		s.bsize[a] = s.block[dim]
		s.local[a] = kir.Id(fmt.Sprintf("l%d", a))
		s.origin[a] = kir.Id(fmt.Sprintf("o%d", a))
		s.coords[a] = kir.Id(fmt.Sprintf("c%d", a))
		s.body = append(s.body,
			&kir.Decl{Name: fmt.Sprintf("l%d", a), Type: kir.I32, Init: &kir.Builtin{D: kir.ThreadIdx, Axis: dim}},
			&kir.Decl{Name: fmt.Sprintf("o%d", a), Type: kir.I32, Init: kir.Mul(&kir.Builtin{D: kir.BlockIdx, Axis: dim}, kir.I(s.bsize[a]))},
			&kir.Decl{Name: fmt.Sprintf("c%d", a), Type: kir.I32, Init: kir.Add(s.origin[a], s.local[a])})
	}
	s.inside = s.insideOf(s.coords)
	s.threads = s.block[0] * s.block[1]
	tid := kir.Expr(kir.Id("l1"))
	for a := 2; a < d; a++ {
		tid = kir.Add(kir.Mul(tid, kir.I(s.bsize[a])), s.local[a])
	}
	s.body = append(s.body, &kir.Decl{Name: "tid", Type: kir.I32, Init: tid})
	// The chunk of the streaming axis this block covers.
	chunkDim := d - 1
	s.body = append(s.body,
		&kir.Decl{Name: "zbeg", Type: kir.I32, Init: kir.Mul(&kir.Builtin{D: kir.BlockIdx, Axis: chunkDim}, kir.Id("chunk"))},
		&kir.Decl{Name: "zend", Type: kir.I32, Init: &kir.Call{Fn: "min", T: kir.I32, Args: []kir.Expr{kir.Add(kir.Id("zbeg"), kir.Id("chunk")), kir.Id("n0")}}})
}

// insideOf is the test that a cell at coords lies in the domain.
func (s *streamer) insideOf(coords []kir.Expr) kir.Expr {
	var inside kir.Expr
	for a := s.d - 1; a >= 1; a-- {
		in := &kir.Binary{Op: "<", X: coords[a], Y: kir.Id(fmt.Sprintf("n%d", a))}
		switch {
		case inside == nil:
			inside = in
		case s.forward:
			inside = and(in, inside) // the forward plane's order: y's test first
		default:
			inside = &kir.Binary{Op: "&&", X: inside, Y: in}
		}
	}
	return inside
}

// windows gives every grid level read at an offset its window: a register queue along the
// streaming axis with the current plane in shared memory where every off-plane read lies
// straight along it (columnOnly), else a ring of 2r+1 shared planes.
func (s *streamer) windows() {
	reach, order := footprints(s.p)
	s.wins = map[gridLevel]*streamWindow{}
	s.dbuf = s.pf > 0
	for _, gl := range order {
		if nonzero(reach[gl]) && !columnOnly(s.p, gl) {
			s.dbuf = false
		}
	}
	for _, gl := range order {
		h := reach[gl]
		if !nonzero(h) {
			continue
		}
		g := s.p.Grids[gl.g]
		w := &streamWindow{rz: h[0]}
		inPlane := append([]int{0}, h[1:]...)
		w.tile = newTile(fmt.Sprintf("plane_%s_%d", g.Name, gl.level), s.bsize, inPlane)
		if columnOnly(s.p, gl) {
			s.queueWindow(gl, g, w, h)
		} else {
			s.ringWindow(gl, g, w)
		}
		s.wins[gl] = w
	}
}

// queueWindow keeps level gl's column in a register queue, primed with the planes before the
// chunk and advanced a plane a step, and its current plane (where read in-plane) in shared
// memory.
func (s *streamer) queueWindow(gl gridLevel, g *ir.Grid, w *streamWindow, h []int) {
	plane := w.tile
	t := kir.FromIR(g.Type)
	w.ring = 1
	for i := 0; i < 2*w.rz+s.rz; i++ {
		w.queue = append(w.queue, fmt.Sprintf("q_%s_%d_%d", g.Name, gl.level, i))
	}
	queue := w.queue
	for i, q := range queue {
		s.body = append(s.body, &kir.Decl{Name: q, Type: t, Init: zeroOf(t)})
		if i >= s.rz {
			// Value at zbeg - rz - r + i.
			pos := append([]kir.Expr{kir.Bin("-", kir.Id("zbeg"), kir.I(s.rz+w.rz-i))}, s.coords[1:]...)
			s.prime = append(s.prime, kir.Set(kir.Id(q), s.em.globalReadAt(g, gl.level, nil, pos, nil, true)))
		}
	}
	for i := 0; i+s.rz < len(queue); i++ {
		s.advance = append(s.advance, kir.Set(kir.Id(queue[i]), kir.Id(queue[i+s.rz])))
		if s.forward {
			s.fastAdvance = append(s.fastAdvance, kir.Set(kir.Id(queue[i]), kir.Id(queue[i+s.rz])))
		}
	}
	for j := 0; j < s.rz; j++ {
		head := queue[len(queue)-s.rz+j]
		pos := append([]kir.Expr{kir.Add(kir.Id("z"), kir.I(w.rz+j))}, s.coords[1:]...)
		s.advance = append(s.advance, kir.Set(kir.Id(head), s.em.globalReadAt(g, gl.level, nil, pos, nil, true)))
		if s.forward {
			s.fastAdvance = append(s.fastAdvance, kir.Set(kir.Id(head), s.fast.globalReadAt(g, gl.level, nil, pos, []int{0, 0, 0}, false)))
		}
	}
	if s.forward {
		s.H = [3]int{max(s.H[0], w.rz), max(s.H[1], h[1]), max(s.H[2], h[2])}
	}
	if !nonzero(h[1:]) {
		return // read straight along the streaming axis only: no shared plane
	}
	buffers := 1
	if s.dbuf {
		buffers = 2 * s.rz
	}
	s.body = append(s.body, &kir.ArrayDecl{Name: plane.name, Type: t, Space: kir.Shared, Len: plane.len * buffers})
	s.shared += plane.len * buffers * g.Type.Size()
	if !s.forward {
		s.fills = append(s.fills, planeFill(s.em, g, gl.level, plane, s.origin, kir.Id("z"), kir.I(0), s.threads)...)
		return
	}
	if s.pf > 0 {
		// The step's planes' centres: plane z+j sits at queue[r+j].
		var subCentres []kir.Expr
		for j := 0; j < s.rz; j++ {
			subCentres = append(subCentres, kir.Id(w.queue[w.rz+j]))
		}
		base := func(j int) kir.Expr { return s.bufferBase(plane, j) }
		ep := pipelineEdges(s.em, s.fast, g, gl.level, plane, subCentres, s.pl, inPlaneDiagonal(s.p, gl), s.pf, s.threads, base)
		s.body = append(s.body, ep.decls...)
		s.prime = append(s.prime, ep.prime...)
		s.fills = append(s.fills, append(ep.stores, ep.loads...)...)
		s.fastFills = append(s.fastFills, append(slices.Clone(ep.stores), ep.fastLoads...)...)
		return
	}
	centre := kir.Id(w.queue[w.rz])
	s.fills = append(s.fills, edgeFill(s.em, g, gl.level, plane, centre, s.pl, inPlaneDiagonal(s.p, gl), true)...)
	s.fastFills = append(s.fastFills, edgeFill(s.fast, g, gl.level, plane, centre, s.pl, inPlaneDiagonal(s.p, gl), false)...)
}

// ringWindow keeps level gl's planes z-r .. z+r in a ring of shared planes, primed with
// the planes zbeg-r .. zbeg+r-1, each step loading plane z+r.
func (s *streamer) ringWindow(gl gridLevel, g *ir.Grid, w *streamWindow) {
	plane := w.tile
	w.ring = 2*w.rz + 1
	s.body = append(s.body, &kir.ArrayDecl{Name: plane.name, Type: kir.FromIR(g.Type), Space: kir.Shared, Len: plane.len * w.ring})
	s.shared += plane.len * w.ring * g.Type.Size()
	for dz := -w.rz; dz < w.rz; dz++ {
		zpos := kir.Add(kir.Id("zbeg"), kir.I(dz))
		s.prime = append(s.prime, planeFill(s.em, g, gl.level, plane, s.origin, zpos, slotOf(zpos, w.ring, plane.len), s.threads)...)
	}
	zpos := kir.Add(kir.Id("z"), kir.I(w.rz))
	fill := planeFill(s.em, g, gl.level, plane, s.origin, zpos, slotOf(zpos, w.ring, plane.len), s.threads)
	if s.forward {
		s.ringFills = append(s.ringFills, fill...)
	} else {
		s.fills = append(s.fills, fill...)
	}
}

// read is a load of the update: from a level's queue or shared planes where it has a window.
func (s *streamer) read(em *emitter, l *ir.Load) kir.Expr {
	w, ok := s.wins[gridLevel{l.G.Index, l.Level}]
	if !ok || l.Layer != nil {
		return em.globalRead(l.G, l.Level, l.Layer, s.coords, l.Off)
	}
	local := s.local
	if w.queue != nil {
		if !nonzero(l.Off[1:]) {
			return kir.Id(w.queue[w.rz+l.Off[0]+s.sub])
		}
		at := w.tile.at(local, append([]int{0}, l.Off[1:]...)).(*kir.Index)
		if base := s.bufferBase(w.tile, s.sub); base != nil {
			return &kir.Index{Array: at.Array, Idx: kir.Add(base, at.Idx)}
		}
		return at
	}
	zpos := kir.Add(kir.Id("z"), kir.I(l.Off[0]))
	return &kir.Index{Array: kir.Id(w.tile.name), Idx: kir.Add(slotOf(zpos, w.ring, w.tile.len), w.tile.at(local, append([]int{0}, l.Off[1:]...)).(*kir.Index).Idx)}
}

// loop is one plane's step: advance the windows, then (between barriers) the updates of the
// cells in the domain. The forward plane advances its queues without boundary handling where
// the block's columns and halos lie inside the domain at this z.
func (s *streamer) loop() []kir.Stmt {
	pl := s.pl
	var loop []kir.Stmt
	loop = append(loop, kir.Set(kir.Id("c0"), kir.Id("z")))
	if s.dbuf {
		step := kir.Expr(kir.Id("z"))
		if s.rz > 1 {
			step = kir.Bin("/", kir.Bin("-", kir.Id("z"), kir.Id("zbeg")), kir.I(s.rz))
		}
		loop = append(loop, &kir.Decl{Name: "pb", Type: kir.I32, Init: kir.Bin("&", step, kir.I(1))})
	}
	if !s.forward {
		loop = append(loop, s.advance...)
		loop = append(loop, s.fills...)
	} else {
		if len(s.advance) > 0 {
			z := kir.Id("z")
			H0, H1, H2 := s.H[0], s.H[1], s.H[2]
			interior := and(and(&kir.Binary{Op: ">=", X: z, Y: kir.I(H0)}, &kir.Binary{Op: "<", X: kir.Add(z, kir.I(max(H0, s.pf*s.rz)+s.rz-1)), Y: kir.Id("n0")}),
				and(and(&kir.Binary{Op: ">=", X: kir.Id("o1"), Y: kir.I(H1)}, &kir.Binary{Op: "<=", X: kir.Add(kir.Id("o1"), kir.I(s.bsize[1]+H1)), Y: kir.Id("n1")}),
					and(&kir.Binary{Op: ">=", X: kir.Id("o2"), Y: kir.I(H2)}, &kir.Binary{Op: "<=", X: kir.Add(kir.Id("o2"), kir.I(pl.BX+H2)), Y: kir.Id("n2")})))
			loop = append(loop, &kir.If{Cond: interior, Then: append(s.fastAdvance, s.fastFills...), Else: append(s.advance, s.fills...)})
		}
		loop = append(loop, s.ringFills...)
	}
	loop = append(loop, &kir.Barrier{})
	var checked []kir.Stmt
	for j := 0; j < s.rz; j++ {
		s.sub = j
		var sub []kir.Stmt
		if j > 0 {
			sub = append(sub, kir.Set(kir.Id("c0"), kir.Add(kir.Id("z"), kir.I(j))))
		}
		var compute []kir.Stmt
		compute = append(compute, &kir.Decl{Name: "idx", Type: s.em.idxType(), Init: s.em.linear(s.coords, nil)})
		compute = append(compute, storeUpdatesSplit(s.em, kir.Id("idx"))...)
		sub = append(sub, &kir.If{Cond: s.inside, Then: compute})
		if j == 0 {
			checked = append(checked, sub...)
		} else {
			// The chunk's last step may hold fewer planes.
			checked = append(checked, &kir.If{Cond: &kir.Binary{Op: "<", X: kir.Add(kir.Id("z"), kir.I(j)), Y: kir.Id("zend")}, Then: sub})
		}
	}
	s.sub = 0
	if inside := s.blockInside(); inside != nil {
		loop = append(loop, &kir.If{Cond: inside, Then: s.uncheckedCompute(), Else: checked})
	} else {
		loop = append(loop, checked...)
	}
	if !s.dbuf {
		loop = append(loop, &kir.Barrier{})
	}
	return loop
}

// blockInside is the test, the same for every thread of the block, that every cell of the
// step's planes lies in the domain, at least the reach from every edge and off every grid's
// fixed rim (nil where the step has no such test: the pipelined forward plane only).
func (s *streamer) blockInside() kir.Expr {
	if !s.dbuf {
		return nil
	}
	margin := slices.Clone(s.p.Reach())
	for _, g := range s.p.Grids {
		for a, r := range g.Rim {
			margin[a] = max(margin[a], r)
		}
	}
	last := kir.Add(kir.Id("z"), kir.I(s.rz-1))
	inside := and(and(&kir.Binary{Op: ">=", X: kir.Id("z"), Y: kir.I(margin[0])}, &kir.Binary{Op: "<", X: last, Y: kir.Bin("-", kir.Id("n0"), kir.I(margin[0]))}),
		&kir.Binary{Op: "<", X: last, Y: kir.Id("zend")})
	for a := 1; a < s.d; a++ {
		o, n := kir.Id(fmt.Sprintf("o%d", a)), kir.Id(fmt.Sprintf("n%d", a))
		inside = and(inside, and(&kir.Binary{Op: ">=", X: o, Y: kir.I(margin[a])},
			&kir.Binary{Op: "<=", X: kir.Add(o, kir.I(s.bsize[a]+margin[a])), Y: n}))
	}
	return inside
}

// uncheckedCompute is the step's updates where blockInside holds: no cell needs a test of
// the domain, the boundary or the rim.
func (s *streamer) uncheckedCompute() []kir.Stmt {
	var out []kir.Stmt
	for j := 0; j < s.rz; j++ {
		s.sub = j
		em := *s.em
		em.interior = true
		em.lets = map[*ir.Let]string{}
		var body []kir.Stmt
		if j > 0 {
			body = append(body, kir.Set(kir.Id("c0"), kir.Add(kir.Id("z"), kir.I(j))))
		}
		body = append(body, &kir.Decl{Name: "idx", Type: em.idxType(), Init: em.linear(s.coords, nil)})
		em.out = &body
		em.declareUpdateLets(s.p.Updates)
		for _, u := range s.p.Updates {
			body = append(body, kir.Set(&kir.Index{Array: kir.Id(bufName(u.Grid, Out0)), Idx: kir.Id("idx")}, em.expr(u.Value)))
		}
		out = append(out, &kir.Block{Body: body})
	}
	s.sub = 0
	return out
}

// bufferBase is the element offset of the buffer of tile t holding the step's plane j (nil
// with one buffer): two sets of rz buffers, alternating steps.
func (s *streamer) bufferBase(t tileInfo, j int) kir.Expr {
	if !s.dbuf {
		return nil
	}
	if s.rz == 1 {
		return kir.Mul(kir.Id("pb"), kir.I(t.len))
	}
	return kir.Mul(kir.Add(kir.Mul(kir.Id("pb"), kir.I(s.rz)), kir.I(j)), kir.I(t.len))
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
