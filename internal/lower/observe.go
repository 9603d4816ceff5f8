package lower

import (
	"fmt"
	"math"

	"tempest/internal/ir"
	"tempest/internal/kir"
)

// ArgPartials is the buffer a cell kernel of an observable writes its chunks' results to
// (one f64 or i64 per block); the runner provides it.
const ArgPartials ArgKind = 100

// Observed is the kernels that evaluate a program's observables on the device, in the
// language's reduction order: a cell kernel per observable reduces each chunk of
// ir.ReduceWidth cells (one block) with the tree in shared memory and writes one partial per
// block; a reduce kernel per operation and accumulator type then reduces partials the same
// way, launch after launch, until one value remains.
type Observed struct {
	Module *kir.Module
	// Cells has one launch per observable (by ir.Observe.Index).
	Cells []Launch
	// Reduce names, per observable, the kernel that reduces its partials: parameters
	// (const T* in, T* out, int n), launched with ir.ReduceWidth threads per block and one
	// block per ir.ReduceWidth inputs.
	Reduce []string
}

// accumType is the kernel type an observable reduces in.
func accumType(o *ir.Observe) kir.Type { return kir.FromIR(o.Accum()) }

// identity is the reduction's identity as a kernel literal (see ir.IdentityF64).
func identity(op string, t kir.Type) kir.Expr {
	if t == kir.F64 {
		return &kir.Float{V: ir.IdentityF64(op), T: kir.F64}
	}
	switch op {
	case "max":
		// -9223372036854775808 is not a C literal: write it as an expression.
		return &kir.Binary{Op: "-", X: &kir.Int{V: math.MinInt64 + 1, T: kir.I64}, Y: &kir.Int{V: 1, T: kir.I64}}
	case "min":
		return &kir.Int{V: math.MaxInt64, T: kir.I64}
	}
	return &kir.Int{V: 0, T: kir.I64}
}

// combine is ir.CombineF64 / ir.CombineI64 as a kernel expression of two variables.
func combine(op string, t kir.Type, a, b string) kir.Expr {
	x, y := kir.Id(a), kir.Id(b)
	if op == "sum" || op == "mean" {
		return &kir.Binary{Op: "+", X: x, Y: y}
	}
	if t == kir.I64 {
		cmp := ">"
		if op == "min" {
			cmp = "<"
		}
		return &kir.Cond{C: &kir.Binary{Op: cmp, X: x, Y: y}, A: x, B: y}
	}
	// NaN is ignored; -0 orders below +0 (ir.CombineF64).
	cmp, back := ">", "<"
	var zero kir.Expr = &kir.Binary{Op: "+", X: x, Y: y}
	if op == "min" {
		cmp, back = "<", ">"
		zero = &kir.Unary{Op: "-", X: &kir.Binary{Op: "+", X: &kir.Unary{Op: "-", X: x}, Y: &kir.Unary{Op: "-", X: y}}}
	}
	equal := &kir.Cond{C: &kir.Binary{Op: "==", X: x, Y: &kir.Float{V: 0, T: kir.F64}}, A: zero, B: x}
	ordered := &kir.Cond{C: &kir.Binary{Op: cmp, X: x, Y: y}, A: x, B: &kir.Cond{C: &kir.Binary{Op: back, X: x, Y: y}, A: y, B: equal}}
	return &kir.Cond{C: &kir.Binary{Op: "!=", X: x, Y: x}, A: y, B: &kir.Cond{C: &kir.Binary{Op: "!=", X: y, Y: y}, A: x, B: ordered}}
}

// treeStmts stores v into the shared array red, reduces the block's ir.ReduceWidth values
// with the language's tree (stride ReduceWidth/2 down to 1) and has thread 0 write the result
// to out[block].
func treeStmts(op string, t kir.Type, v kir.Expr, out string) []kir.Stmt {
	tid := kir.Id("tid")
	body := []kir.Stmt{
		kir.Set(kir.At("red", tid), v),
		&kir.Barrier{},
	}
	for s := ir.ReduceWidth / 2; s > 0; s /= 2 {
		body = append(body, &kir.If{Cond: &kir.Binary{Op: "<", X: tid, Y: kir.I(s)}, Then: []kir.Stmt{
			&kir.Decl{Name: "ra", Type: t, Init: kir.At("red", tid)},
			&kir.Decl{Name: "rb", Type: t, Init: kir.At("red", kir.Add(tid, kir.I(s)))},
			kir.Set(kir.At("red", tid), combine(op, t, "ra", "rb")),
		}}, &kir.Barrier{})
	}
	body = append(body, &kir.If{Cond: &kir.Binary{Op: "==", X: tid, Y: kir.I(0)}, Then: []kir.Stmt{
		kir.Set(kir.At(out, &kir.Builtin{D: kir.BlockIdx, Axis: 0}), kir.At("red", kir.I(0))),
	}})
	return body
}

func typeSuffix(t kir.Type) string {
	if t == kir.I64 {
		return "i64"
	}
	return "f64"
}

// observeValue sets v to the observable's value at the cell: as storeUpdatesSplit does, a
// version without boundary handling for cells at least the expression's reach from every
// edge, and the general one.
func observeValue(em *emitter, o *ir.Observe, t kir.Type) []kir.Stmt {
	set := func(em *emitter) []kir.Stmt {
		var body []kir.Stmt
		em.out = &body
		em.lets = map[*ir.Let]string{}
		em.declareLets(o.Value)
		val := em.expr(o.Value)
		return append(body, kir.Set(kir.Id("v"), &kir.Cast{T: t, From: kir.FromIR(o.Value.Type()), X: val}))
	}
	var cond kir.Expr
	for a, r := range ir.Reach(o.Value, em.p.Dims()) {
		if r == 0 {
			continue
		}
		n := kir.Id(fmt.Sprintf("n%d", a))
		c := &kir.Binary{Op: "&&", X: &kir.Binary{Op: ">=", X: em.coords[a], Y: kir.I(r)}, Y: &kir.Binary{Op: "<", X: em.coords[a], Y: kir.Bin("-", n, kir.I(r))}}
		if cond == nil {
			cond = c
		} else {
			cond = &kir.Binary{Op: "&&", X: cond, Y: c}
		}
	}
	if cond == nil {
		return set(em)
	}
	fast, slow := *em, *em
	fast.interior = true
	return []kir.Stmt{&kir.If{Cond: cond, Then: set(&fast), Else: set(&slow)}}
}

// observeRoles are the buffers a cell kernel reads: every grid's current level, and the
// previous level of two-level grids and of one-level grids whose .prev an observable reads
// (the runner keeps the values before the last step in that buffer).
func observeRoles(p *ir.Program) func(g *ir.Grid) []Role {
	prev := map[*ir.Grid]bool{}
	for _, g := range p.PrevObserved() {
		prev[g] = true
	}
	return func(g *ir.Grid) []Role {
		if g.Levels > 1 || prev[g] {
			return []Role{In0, In1}
		}
		return []Role{In0}
	}
}

// LowerObserve builds the kernels of p's observables for a domain of the given shape (and
// layer counts, which decide whether indices need 64 bits). Cell values are computed by the
// emitter that computes updates, so boundary rules at offsets are the updates' own; the
// module is meant to be compiled without fast math and without contracting a*b+c into
// fused operations (Module.Exact), so that its values equal the reference's.
func LowerObserve(p *ir.Program, shape []int, layers []int) *Observed {
	return LowerObservePitched(p, shape, layers, 0)
}

// LowerObservePitched is LowerObserve for device arrays whose rows are pitch elements apart
// (Lowered.Pitch; 0: dense): the kernels then take the pitch as their last argument.
func LowerObservePitched(p *ir.Program, shape []int, layers []int, pitch int) *Observed {
	cells := int64(1)
	for _, n := range shape {
		cells *= int64(n)
	}
	wide := Wide(PaddedShape(shape, pitch), layers)
	d := p.Dims()
	W := ir.ReduceWidth
	blocks := int((cells + int64(W) - 1) / int64(W))
	obs := &Observed{Module: &kir.Module{Uses64: true, Exact: true}}
	reducers := map[string]bool{}
	for _, o := range p.Observes {
		t := accumType(o)
		ps, args := params(p, observeRoles(p))
		ps = append(ps, kir.Param{Name: "partials", Type: t, Pointer: true})
		args = append(args, Arg{Kind: ArgPartials})
		if pitch > 0 {
			ps, args = pitchParam(ps, args)
		}
		k := &kir.Kernel{Name: fmt.Sprintf("tempest_observe_%d", o.Index), Params: ps, MaxThreads: W}
		em := &emitter{p: p, wide: wide, step: kir.Id("step0"), lets: map[*ir.Let]string{}, pitched: pitch > 0}
		it := em.idxType()
		gi := kir.Expr(kir.Add(kir.Mul(&kir.Builtin{D: kir.BlockIdx, Axis: 0}, kir.I(W)), kir.Id("tid")))
		if wide {
			gi = kir.Add(kir.Mul(&kir.Cast{T: kir.I64, From: kir.I32, X: &kir.Builtin{D: kir.BlockIdx, Axis: 0}}, &kir.Int{V: int64(W), T: kir.I64}), kir.Id("tid"))
		}
		body := []kir.Stmt{
			&kir.ArrayDecl{Name: "red", Type: t, Space: kir.Shared, Len: W},
			&kir.Decl{Name: "tid", Type: kir.I32, Init: &kir.Builtin{D: kir.ThreadIdx, Axis: 0}},
			&kir.Decl{Name: "gi", Type: it, Init: gi},
			&kir.Decl{Name: "v", Type: t, Init: identity(o.Op, t)},
		}
		// The number of cells, and the cell's coordinates from its row-major index.
		var ncells kir.Expr
		for a := 0; a < d; a++ {
			n := kir.Expr(kir.Id(fmt.Sprintf("n%d", a)))
			if wide {
				n = &kir.Cast{T: kir.I64, From: kir.I32, X: n}
			}
			if ncells == nil {
				ncells = n
			} else {
				ncells = kir.Mul(ncells, n)
			}
		}
		var inner []kir.Stmt
		inner = append(inner, &kir.Decl{Name: "rest", Type: it, Init: kir.Id("gi")})
		coords := make([]kir.Expr, d)
		for a := d - 1; a >= 0; a-- {
			n := kir.Id(fmt.Sprintf("n%d", a))
			name := fmt.Sprintf("c%d", a)
			var c kir.Expr = kir.Bin("%", kir.Id("rest"), n)
			if a == 0 {
				c = kir.Id("rest")
			}
			if wide {
				c = &kir.Cast{T: kir.I32, From: kir.I64, X: c}
			}
			inner = append(inner, &kir.Decl{Name: name, Type: kir.I32, Init: c})
			if a > 0 {
				inner = append(inner, kir.Set(kir.Id("rest"), kir.Bin("/", kir.Id("rest"), n)))
			}
			coords[a] = kir.Id(name)
		}
		em.coords = coords
		em.read = func(em *emitter, l *ir.Load) kir.Expr { return em.globalRead(l.G, l.Level, l.Layer, coords, l.Off) }
		inner = append(inner, observeValue(em, o, t)...)
		body = append(body, &kir.If{Cond: &kir.Binary{Op: "<", X: kir.Id("gi"), Y: ncells}, Then: inner})
		body = append(body, treeStmts(o.Op, t, kir.Id("v"), "partials")...)
		k.Body = body
		obs.Module.Kernels = append(obs.Module.Kernels, k)
		obs.Cells = append(obs.Cells, Launch{Kernel: k.Name, Grid: [3]int{blocks, 1, 1}, Block: [3]int{W, 1, 1}, Args: args})

		op := o.Op
		if op == "mean" {
			op = "sum"
		}
		rname := fmt.Sprintf("tempest_reduce_%s_%s", op, typeSuffix(t))
		obs.Reduce = append(obs.Reduce, rname)
		if reducers[rname] {
			continue
		}
		reducers[rname] = true
		rk := &kir.Kernel{Name: rname, MaxThreads: W, Params: []kir.Param{
			{Name: "in", Type: t, Pointer: true, Const: true}, {Name: "out", Type: t, Pointer: true}, {Name: "n", Type: kir.I32}}}
		rk.Body = []kir.Stmt{
			&kir.ArrayDecl{Name: "red", Type: t, Space: kir.Shared, Len: W},
			&kir.Decl{Name: "tid", Type: kir.I32, Init: &kir.Builtin{D: kir.ThreadIdx, Axis: 0}},
			&kir.Decl{Name: "gi", Type: kir.I32, Init: kir.Add(kir.Mul(&kir.Builtin{D: kir.BlockIdx, Axis: 0}, kir.I(W)), kir.Id("tid"))},
			&kir.Decl{Name: "v", Type: t, Init: identity(op, t)},
			&kir.If{Cond: &kir.Binary{Op: "<", X: kir.Id("gi"), Y: kir.Id("n")}, Then: []kir.Stmt{kir.Set(kir.Id("v"), kir.At("in", kir.Id("gi")))}},
		}
		rk.Body = append(rk.Body, treeStmts(op, t, kir.Id("v"), "out")...)
		obs.Module.Kernels = append(obs.Module.Kernels, rk)
	}
	return obs
}
