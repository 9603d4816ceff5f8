package lower

import (
	"fmt"

	"tempest/internal/ir"
	"tempest/internal/kir"
	"tempest/internal/plan"
)

// n5d: AN5D's N.5D blocking. A block covers a tile of the fastest axes (overlapped by the
// stencil's reach per time step, like a pyramid) and streams along the slowest axis through
// a chunk of hSN planes plus its halo. Each of the BT time levels keeps its grid's column in a
// register queue of 2R+1 values; in-plane neighbours come from shared memory, double buffered
// (a star's current plane) or a ring of 2R+2 planes (box stencils), so one barrier per level
// and plane suffices. Level t of plane m is computed when level t-1 of plane m+R arrives, so
// one pass over the planes advances BT steps. The fixed boundary is AN5D's: rim cells keep
// their values, and cells outside the domain are never needed.
func lowerN5D(p *ir.Program, shape []int, pl plan.Plan, wide bool) (*Lowered, error) {
	d := p.Dims()
	if err := pl.Validate(p, plan.Limits{}, 0); err != nil {
		return nil, err
	}
	if d == 2 && pl.BY > 1 {
		return nil, fmt.Errorf("plan %s: a 2D n5d block is one row of threads (by=1)", pl)
	}
	main, shared, err := n5dKernel(p, shape, pl, wide, pl.BT, "tempest_n5d")
	if err != nil {
		return nil, err
	}
	low := &Lowered{Module: &kir.Module{Kernels: []*kir.Kernel{main.k}, Uses64: uses64(p)}, SharedBytes: shared}
	low.Launches = append(low.Launches, main.launch)
	if pl.BT > 1 {
		one, _, err := n5dKernel(p, shape, pl, wide, 1, "tempest_n5d_1")
		if err != nil {
			return nil, err
		}
		low.Module.Kernels = append(low.Module.Kernels, one.k)
		low.Launches = append(low.Launches, one.launch)
	}
	return low, nil
}

func n5dKernel(p *ir.Program, shape []int, pl plan.Plan, wide bool, bt int, name string) (builtKernel, int, error) {
	d := p.Dims()
	h := p.Reach()
	R := h[0]
	block := [3]int{pl.BX, 1, 1}
	if d == 3 {
		block[1] = pl.BY
	}
	bsize := make([]int, d)
	outSize := make([]int, d)
	bsize[0] = 1
	for a := 1; a < d; a++ {
		bsize[a] = block[d-1-a]
		outSize[a] = bsize[a] - 2*h[a]*bt
		if outSize[a] < 1 {
			return builtKernel{}, 0, fmt.Errorf("plan %s: a block of %d cells along %s leaves nothing after %d steps of reach %d", pl, bsize[a], p.Axes[a], bt, h[a])
		}
	}
	ps, args := params(p, readRoles)
	ps = append(ps, kir.Param{Name: "chunk", Type: kir.I32})
	chunk := pl.Chunk
	if chunk <= 0 || chunk > shape[0] {
		chunk = shape[0]
	}
	args = append(args, Arg{Kind: ArgConst, Value: int64(chunk)})
	k := &kir.Kernel{Name: name, Params: ps}
	var body []kir.Stmt
	local := make([]kir.Expr, d)
	c := make([]kir.Expr, d)
	var inPlane kir.Expr = &kir.BoolLit{V: true}
	for a := d - 1; a >= 1; a-- {
		dim := d - 1 - a
		n := kir.Id(fmt.Sprintf("n%d", a))
		local[a] = kir.Id(fmt.Sprintf("l%d", a))
		c[a] = kir.Id(fmt.Sprintf("c%d", a))
		body = append(body,
			&kir.Decl{Name: fmt.Sprintf("l%d", a), Type: kir.I32, Init: &kir.Builtin{D: kir.ThreadIdx, Axis: dim}},
			&kir.Decl{Name: fmt.Sprintf("c%d", a), Type: kir.I32, Init: kir.Add(kir.Bin("-", kir.Mul(&kir.Builtin{D: kir.BlockIdx, Axis: dim}, kir.I(outSize[a])), kir.I(h[a]*bt)), local[a])})
		inPlane = and(inPlane, and(&kir.Binary{Op: ">=", X: c[a], Y: kir.I(0)}, &kir.Binary{Op: "<", X: c[a], Y: n}))
	}
	tid := kir.Expr(local[1])
	tstride := make([]int, d)
	tstride[d-1] = 1
	for a := d - 2; a >= 1; a-- {
		tstride[a] = tstride[a+1] * bsize[a+1]
	}
	for a := 2; a < d; a++ {
		tid = kir.Add(kir.Mul(tid, kir.I(bsize[a])), local[a])
	}
	plane := 1
	for a := 1; a < d; a++ {
		plane *= bsize[a]
	}
	body = append(body, &kir.Decl{Name: "tid", Type: kir.I32, Init: tid})
	body = append(body, &kir.Decl{Name: "inplane", Type: kir.Bool, Init: inPlane})
	chunkDim := d - 1
	body = append(body,
		&kir.Decl{Name: "zb", Type: kir.I32, Init: kir.Mul(&kir.Builtin{D: kir.BlockIdx, Axis: chunkDim}, kir.Id("chunk"))},
		&kir.Decl{Name: "ze", Type: kir.I32, Init: &kir.Call{Fn: "min", T: kir.I32, Args: []kir.Expr{kir.Add(kir.Id("zb"), kir.Id("chunk")), kir.Id("n0")}}})

	// Windows per state grid and level 0..bt-1.
	type window struct {
		queue []string
		sh    int // element offset of its planes in the dynamic shared array smem
		ring  int // planes in shared memory: 0 (none), 2 (double-buffered current plane), 2R+2
	}
	// All planes live in one dynamic shared array, so blocks may use the opt-in maximum
	// (227 KB on Hopper) rather than the 48 KB of static declarations. It needs one element
	// type for every state grid.
	var shType ir.Type
	for i, u := range p.Updates {
		if i == 0 {
			shType = u.Grid.Type
		} else if u.Grid.Type != shType {
			return builtKernel{}, 0, fmt.Errorf("plan %s: n5d needs state grids of one element type (%s is %s, %s is %s)", pl, p.Updates[0].Grid.Name, shType, u.Grid.Name, u.Grid.Type)
		}
	}
	shElems := 0
	win := map[[2]int]*window{}
	shared := 0
	for _, u := range p.Updates {
		g := u.Grid
		t := kir.FromIR(g.Type)
		inPlaneReads, offPlaneInPlane := false, false
		for _, q := range p.Updates {
			ir.WalkDeep(q.Value, func(e ir.Expr) {
				if l, ok := e.(*ir.Load); ok && l.G == g && nonzero(l.Off[1:]) {
					inPlaneReads = true
					if l.Off[0] != 0 {
						offPlaneInPlane = true
					}
				}
			})
		}
		for lv := 0; lv < bt; lv++ {
			w := &window{}
			for i := 0; i <= 2*R; i++ {
				nm := fmt.Sprintf("q_%s_%d_%d", g.Name, lv, i)
				w.queue = append(w.queue, nm)
				body = append(body, &kir.Decl{Name: nm, Type: t, Init: zeroOf(t)})
			}
			switch {
			case offPlaneInPlane:
				w.ring = 2*R + 2
			case inPlaneReads:
				w.ring = 2
			}
			if w.ring > 0 {
				w.sh = shElems
				shElems += w.ring * plane
				shared += w.ring * plane * g.Type.Size()
			}
			win[[2]int{g.Index, lv}] = w
		}
	}

	// The loop over planes is unrolled 2R+1 times so that queues rotate through fixed
	// registers instead of shifting (AN5D's fixed register allocation): in copy r of the
	// body, the plane pushed overwrites register r, and afterwards logical element k of a
	// queue is register (k + r + 1) mod (2R+1). jr is the plane of the copy.
	U := 2*R + 1
	bodyAt := func(r int) []kir.Stmt {
		q := func(w *window, k int) kir.Expr { return kir.Id(w.queue[(k+r+1)%U]) }
		push := func(w *window, v kir.Expr) []kir.Stmt {
			return []kir.Stmt{kir.Set(kir.Id(w.queue[r%U]), v)}
		}
		publish := func(w *window, row kir.Expr) []kir.Stmt {
			switch w.ring {
			case 0:
				return nil
			case 2:
				// The queue's centre is the plane the next level computes.
				slot := kir.Mul(kir.Bin("&", kir.Id("jr"), kir.I(1)), kir.I(plane))
				return []kir.Stmt{kir.Set(kir.At("smem", kir.Add(kir.I(w.sh), kir.Add(slot, kir.Id("tid")))), q(w, R))}
			}
			slot := kir.Mul(kir.Bin("%", kir.Add(row, kir.I(w.ring*(1<<20))), kir.I(w.ring)), kir.I(plane))
			return []kir.Stmt{kir.Set(kir.At("smem", kir.Add(kir.I(w.sh), kir.Add(slot, kir.Id("tid")))), q(w, 2*R))}
		}

		var loop []kir.Stmt
		// Level 0: plane j of every state grid, through its boundary rule.
		em0 := &emitter{p: p, wide: wide, step: kir.Id("step0"), lets: map[*ir.Let]string{}}
		for _, u := range p.Updates {
			g := u.Grid
			w := win[[2]int{g.Index, 0}]
			pos := append([]kir.Expr{kir.Id("jr")}, c[1:]...)
			loop = append(loop, push(w, em0.globalReadAt(g, 0, nil, pos, nil, true))...)
			loop = append(loop, publish(w, kir.Id("jr"))...)
		}
		loop = append(loop, &kir.Barrier{})
		for t := 1; t <= bt; t++ {
			row := fmt.Sprintf("m%d", t)
			var lvl []kir.Stmt
			lvl = append(lvl, &kir.Decl{Name: row, Type: kir.I32, Init: kir.Bin("-", kir.Id("jr"), kir.I(R*t))})
			coords := append([]kir.Expr{kir.Id(row)}, c[1:]...)
			// valid: far enough from the tile edge for level t, and inside the domain.
			var valid kir.Expr = and(kir.Id("inplane"), and(&kir.Binary{Op: ">=", X: kir.Id(row), Y: kir.I(0)}, &kir.Binary{Op: "<", X: kir.Id(row), Y: kir.Id("n0")}))
			for a := 1; a < d; a++ {
				if h[a] == 0 {
					continue
				}
				valid = and(valid, and(&kir.Binary{Op: ">=", X: local[a], Y: kir.I(h[a] * t)}, &kir.Binary{Op: "<", X: local[a], Y: kir.I(bsize[a] - h[a]*t)}))
			}
			em := &emitter{p: p, wide: wide, coords: coords, step: kir.Add(kir.Id("step0"), kir.I(t-1)), lets: map[*ir.Let]string{}}
			prev := t - 1
			em.read = func(em *emitter, l *ir.Load) kir.Expr {
				if l.G.Update == nil || l.Layer != nil {
					return em.globalRead(l.G, l.Level, l.Layer, coords, l.Off)
				}
				w := win[[2]int{l.G.Index, prev}]
				if !nonzero(l.Off[1:]) {
					return q(w, R+l.Off[0])
				}
				var idx kir.Expr = kir.Id("tid")
				for a := 1; a < d; a++ {
					idx = kir.Add(idx, kir.I(l.Off[a]*tstride[a]))
				}
				var slot kir.Expr
				if w.ring == 2 {
					slot = kir.Mul(kir.Bin("&", kir.Id("jr"), kir.I(1)), kir.I(plane))
				} else {
					slot = kir.Mul(kir.Bin("%", kir.Add(kir.Id(row), kir.I(l.Off[0]+w.ring*(1<<20))), kir.I(w.ring)), kir.I(plane))
				}
				return kir.At("smem", kir.Add(kir.I(w.sh), kir.Add(slot, idx)))
			}
			var compute []kir.Stmt
			em.out = &compute
			var vals []ir.Expr
			for _, u := range p.Updates {
				vals = append(vals, u.Value)
			}
			em.declareLets(vals...)
			for _, u := range p.Updates {
				g := u.Grid
				nv := fmt.Sprintf("v_%s_%d", g.Name, t)
				keep := q(win[[2]int{g.Index, prev}], R)
				lvl = append(lvl, &kir.Decl{Name: nv, Type: kir.FromIR(g.Type), Init: keep})
				store := kir.Set(kir.Id(nv), em.expr(u.Value))
				if rim := inRim(g, coords); rim != nil {
					compute = append(compute, &kir.If{Cond: &kir.Unary{Op: "!", X: rim}, Then: []kir.Stmt{store}})
				} else {
					compute = append(compute, store)
				}
			}
			lvl = append(lvl, &kir.If{Cond: valid, Then: compute})
			for _, u := range p.Updates {
				g := u.Grid
				v := kir.Id(fmt.Sprintf("v_%s_%d", g.Name, t))
				if t < bt {
					w := win[[2]int{g.Index, t}]
					lvl = append(lvl, push(w, v)...)
					lvl = append(lvl, publish(w, kir.Id(row))...)
				} else {
					// Store plane m of the output if this block owns it.
					var own kir.Expr = and(kir.Id("inplane"), and(&kir.Binary{Op: ">=", X: kir.Id(row), Y: kir.Id("zb")}, &kir.Binary{Op: "<", X: kir.Id(row), Y: kir.Id("ze")}))
					for a := 1; a < d; a++ {
						own = and(own, and(&kir.Binary{Op: ">=", X: local[a], Y: kir.I(h[a] * bt)}, &kir.Binary{Op: "<", X: local[a], Y: kir.I(bsize[a] - h[a]*bt)}))
					}
					idx := em.linear(coords, nil)
					lvl = append(lvl, &kir.If{Cond: own, Then: []kir.Stmt{kir.Set(kir.At(bufName(g, Out0), idx), v)}})
				}
			}
			loop = append(loop, &kir.Block{Body: lvl})
			if t < bt {
				loop = append(loop, &kir.Barrier{})
			}
		}
		return loop
	}
	// Planes zb-R*bt .. ze+R*bt-1 in whole rounds of U copies; the last round may run up to
	// U-1 planes past the end, which read clamped planes and store nothing. (Copies under a
	// condition would put barriers inside it, which some OpenCL compilers mishandle.)
	first := kir.Bin("-", kir.Id("zb"), kir.I(R*bt))
	end := kir.Add(kir.Id("ze"), kir.I(R*bt))
	var round []kir.Stmt
	for r := 0; r < U; r++ {
		round = append(round, &kir.Block{Body: append([]kir.Stmt{&kir.Decl{Name: "jr", Type: kir.I32, Init: kir.Add(kir.Id("j"), kir.I(r))}}, bodyAt(r)...)})
	}
	body = append(body, &kir.For{Var: "j", From: first, To: end, Step: U, Body: round})
	k.Body = body
	if shElems > 0 {
		k.DynShared = kir.FromIR(shType)
	}
	var grid [3]int
	grid[0], grid[1], grid[2] = 1, 1, 1
	for a := 1; a < d; a++ {
		grid[d-1-a] = ceilDiv(shape[a], outSize[a])
	}
	grid[chunkDim] = ceilDiv(shape[0], chunk)
	return builtKernel{k: k, launch: Launch{Kernel: name, Grid: grid, Block: block, Args: args, Steps: bt, Shared: shared}}, shared, nil
}
