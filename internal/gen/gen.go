// Package gen writes standalone CUDA or OpenCL code for a stencil program: the kernels that
// lowering produces, host code that reproduces the Go runner's launch schedule and buffer
// rotation (internal/gpurun), a C header with the program's API and, on request, a benchmark
// harness with a plain C reference loop generated from the IR. The output compiles with nvcc
// or a C compiler and libOpenCL alone; it does not need Tempest.
package gen

import (
	"fmt"
	"strings"

	"tempest/internal/ir"
	"tempest/internal/kir"
	"tempest/internal/lower"
	"tempest/internal/plan"
	"tempest/internal/state"
)

// Options say what to generate.
type Options struct {
	Target  string // "cuda" or "opencl"
	Plan    plan.Plan
	Shape   []int      // the size lowering sees (default harness size; 32/64-bit indexing)
	Params  []ir.Value // parameter defaults written into the header (nil: the program's)
	Name    string     // C prefix; empty: the program's name
	Harness bool       // also main.c / main.cu
	Index64 bool       // 64-bit element indices whatever the size
	Source  string     // the file name recorded in comments (empty: the program's)
}

// File is one generated file.
type File struct {
	Name string
	Data []byte
}

// Output is what Generate produces.
type Output struct {
	Name  string // the C prefix (<name>.h, <name>_run, ...)
	Files []File
	Build string // the command that builds the harness (or the object file), run in the output directory
}

// Generate produces the files of a program for a target and plan. Output is deterministic.
func Generate(p *ir.Program, o Options) (*Output, error) {
	if o.Target != "cuda" && o.Target != "opencl" {
		return nil, fmt.Errorf("--target %q: choose cuda or opencl", o.Target)
	}
	if len(o.Shape) != p.Dims() {
		return nil, fmt.Errorf("size has %d axes, %s has %d", len(o.Shape), p.Name, p.Dims())
	}
	if o.Params == nil {
		o.Params = state.DefaultParams(p)
	}
	g, err := newGen(p, o)
	if err != nil {
		return nil, err
	}
	return &Output{Name: g.name, Files: g.files(), Build: g.buildCommand()}, nil
}

// launchInfo is one launch of the schedule as the host code performs it.
type launchInfo struct {
	lower.Launch
	kernel *kir.Kernel
	// div is, per grid dimension (x, y, z), how its blocks follow from the size (lowering's
	// formula, lower.GridDims).
	div [3]lower.GridDim
}

// gen holds what every emitter needs.
type gen struct {
	p        *ir.Program
	o        Options
	name     string // C prefix
	upper    string // NAME in macros
	low      *lower.Lowered
	launches []launchInfo // schedule order: deepest first (lower.Lowered.Schedule), as gpurun runs them
	wide     bool
	chunk    int  // the plan's chunk (stream25d)
	multi    bool // some launch advances more than one step
	layers   []int64
	kdialect kir.Dialect
	host     hostTarget // the device API calls of the host code
	src      string     // kernel source (renamed kernels)
	// widen is set while the harness's CPU loop is written a second time, computing in double
	// what the program computes in float (harness.go: ct, cpre).
	widen bool
	// C identifiers of grids and parameters.
	gname []string
	pname []string
}

func newGen(p *ir.Program, o Options) (*gen, error) {
	g := &gen{p: p, o: o}
	g.name = cName(p.Name)
	if o.Name != "" {
		if !isIdent(o.Name) {
			return nil, fmt.Errorf("--name %q is not a C identifier", o.Name)
		}
		g.name = o.Name
	}
	g.upper = strings.ToUpper(g.name)
	for _, gr := range p.Grids {
		g.gname = append(g.gname, cIdent(gr.Name))
	}
	for _, pr := range p.Params {
		g.pname = append(g.pname, cIdent(pr.Name))
	}
	g.layers = make([]int64, len(p.Grids))
	intLayers := make([]int, len(p.Grids))
	for _, gr := range p.Grids {
		if gr.Layers != nil {
			n := state.LayerCount(gr.Layers, o.Params)
			if n <= 0 || n > 1<<31-1 {
				return nil, fmt.Errorf("grid %s: layer count %d must be positive", gr.Name, n)
			}
			g.layers[gr.Index] = n
			intLayers[gr.Index] = int(n)
		}
	}
	if o.Plan.ConstSize {
		return nil, fmt.Errorf("plan %s: constsize compiles the kernels for one size, but generated code serves every size; drop constsize (tempest run compiles its kernels for the size it runs)", o.Plan)
	}
	if o.Plan.Align {
		return nil, fmt.Errorf("plan %s: align pads the device arrays' rows, but generated code takes dense arrays; drop align (tempest run pads its own buffers)", o.Plan)
	}
	if o.Plan.Chain {
		return nil, fmt.Errorf("plan %s: chain needs the runner's chained launches and completion flags, which generated host code does not issue; drop chain (tempest run chains its launches)", o.Plan)
	}
	shape := append([]int(nil), o.Shape...)
	if o.Index64 {
		shape = wideShape(shape, intLayers)
	}
	low, err := lower.Lower(p, shape, intLayers, o.Plan)
	if err != nil {
		return nil, err
	}
	if err := o.Plan.Validate(p, plan.Limits{NoAsync: o.Target == "opencl"}, low.SharedBytes); err != nil {
		return nil, err
	}
	g.low = low
	g.wide = low.Wide
	g.chunk = o.Plan.Chunk
	kernels := map[string]*kir.Kernel{}
	for _, k := range low.Module.Kernels {
		kernels[k.Name] = k
	}
	hasOne := false
	for _, l := range low.Schedule {
		k := kernels[l.Kernel]
		if k == nil {
			return nil, fmt.Errorf("internal error: launch of unknown kernel %s", l.Kernel)
		}
		if len(k.Params) != len(l.Args) {
			return nil, fmt.Errorf("internal error: kernel %s takes %d parameters, its launch binds %d", k.Name, len(k.Params), len(l.Args))
		}
		li := launchInfo{Launch: l, kernel: k}
		li.div, err = lower.GridDims(p, o.Plan, l)
		if err != nil {
			return nil, err
		}
		g.launches = append(g.launches, li)
		if l.Steps > 1 {
			g.multi = true
		}
		if l.Steps == 1 {
			hasOne = true
		}
	}
	if !hasOne {
		return nil, fmt.Errorf("internal error: plan %s has no single-step launch, so the host cannot cover every step count", o.Plan)
	}
	if err := g.verify(shape, intLayers); err != nil {
		return nil, err
	}
	// Kernels get the program's prefix so that several generated programs link together.
	for _, k := range low.Module.Kernels {
		k.Name = g.name + "_" + k.Name
	}
	for i := range g.launches {
		g.launches[i].Kernel = g.launches[i].kernel.Name
	}
	g.host = g.newHostTarget()
	g.kdialect = kir.CUDA
	if o.Target == "opencl" {
		g.kdialect = kir.OpenCL
	}
	g.src = kir.Print(low.Module, g.kdialect)
	return g, nil
}

// wideShape stretches the slowest axis until lowering chooses 64-bit indices. Only the index
// type and the launch grid depend on the shape, and the host recomputes the grid at run time.
func wideShape(shape, layers []int) []int {
	s := append([]int(nil), shape...)
	for !lower.Wide(s, layers) {
		s[0] = min(s[0]*2+1, 1<<31-1)
	}
	return s
}

// verify re-lowers for other shapes and checks that the host's formulas give lowering's launch
// grids, that the kernels do not change with the shape (only their arguments do), and that
// every constant argument is either the streaming chunk or shape-independent. A change in
// lowering that the host code does not follow fails here, at generation time.
func (g *gen) verify(shape, layers []int) error {
	shapes := [][]int{shape}
	for _, extra := range []int{1, 37} {
		s := make([]int, len(shape))
		for i, n := range shape {
			s[i] = n + extra + 3*i
		}
		if g.o.Index64 {
			s = wideShape(s, layers)
		}
		shapes = append(shapes, s)
	}
	small := make([]int, len(shape))
	for i := range small {
		small[i] = 5 + 2*i
	}
	if !g.o.Index64 && !lower.Wide(shape, layers) {
		shapes = append(shapes, small)
	}
	text := kir.Print(g.low.Module, kir.CUDA)
	for _, s := range shapes {
		low, err := lower.Lower(g.p, s, layers, g.o.Plan)
		if err != nil {
			return fmt.Errorf("gen: lowering %s for size %v: %w", g.o.Plan, s, err)
		}
		if low.Wide == g.low.Wide || g.o.Index64 {
			if kir.Print(low.Module, kir.CUDA) != text {
				return fmt.Errorf("gen: the kernels of plan %s change with the size (%v vs %v); generated code must work for every size", g.o.Plan, shape, s)
			}
		}
		if len(low.Launches) != len(g.launches) {
			return fmt.Errorf("gen: plan %s has %d launches at size %v but %d at %v", g.o.Plan, len(low.Launches), s, len(g.launches), shape)
		}
		for i, l := range low.Schedule {
			li := g.launches[i]
			if l.Kernel != li.Launch.Kernel || l.Steps != li.Steps || l.Block != li.Block || l.Shared != li.Shared {
				return fmt.Errorf("gen: launch %d of plan %s differs between sizes %v and %v", i, g.o.Plan, shape, s)
			}
			if got := lower.GridOf(li.div, s, g.o.Plan); got != l.Grid {
				return fmt.Errorf("gen: the launch grid of %s at size %v is %v by the formula of size %v, %v by lowering's: the formula must not depend on the size", l.Kernel, s, got, shape, l.Grid)
			}
			for j, a := range l.Args {
				b := li.Args[j]
				if a.Kind != b.Kind || a.Grid != b.Grid || a.Role != b.Role || a.Axis != b.Axis || a.Param != b.Param {
					return fmt.Errorf("gen: argument %d of %s differs between sizes", j, l.Kernel)
				}
				if a.Kind != lower.ArgConst {
					continue
				}
				if li.kernel.Params[j].Name == "chunk" {
					if want := int64(runtimeChunk(g.o.Plan.Chunk, s[0])); a.Value != want {
						return fmt.Errorf("gen: chunk argument of %s is %d at size %v, the host would pass %d", l.Kernel, a.Value, s, want)
					}
				} else if a.Value != b.Value {
					return fmt.Errorf("gen: constant argument %s of %s depends on the size; the host code cannot reproduce it", li.kernel.Params[j].Name, l.Kernel)
				}
			}
		}
	}
	return nil
}

// Names.

var cKeywords = map[string]bool{}

func init() {
	for _, k := range strings.Fields(`auto break case char const continue default do double else enum extern
		float for goto if inline int long register restrict return short signed sizeof static struct
		switch typedef union unsigned void volatile while _Bool _Complex _Imaginary bool true false
		class delete new this template typename namespace using public private protected virtual
		friend operator throw try catch explicit mutable export asm alignas alignof and or not xor
		bitand bitor compl char16_t char32_t constexpr decltype noexcept nullptr static_assert
		thread_local dynamic_cast static_cast const_cast reinterpret_cast typeid wchar_t
		sizes steps scalars ctx first_step ms main c i p n edge layer errno
		min max abs fmin fmax exp log sin cos tan tanh sqrt floor ceil pow fma fmod`) {
		cKeywords[k] = true
	}
}

// cIdent makes a program name usable as a C identifier (names in the language already are
// identifiers; only C and C++ keywords and names the generated code uses need a suffix).
func cIdent(s string) string {
	s = cName(s)
	if cKeywords[s] || strings.HasPrefix(s, "__") {
		return s + "_"
	}
	return s
}

// cName keeps letters, digits and underscores.
func cName(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	out := b.String()
	if out == "" || out[0] >= '0' && out[0] <= '9' {
		out = "s_" + out
	}
	return out
}

func isIdent(s string) bool { return s != "" && cName(s) == s && !cKeywords[s] }

// runtimeChunk is the chunk a streaming launch uses for a slowest-axis extent n0
// (plan.ChunkOf; the host code's C copy is launchFunc's).
func runtimeChunk(planChunk, n0 int) int { return plan.Plan{Chunk: planChunk}.ChunkOf(n0) }
