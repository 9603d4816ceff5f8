// Package state holds the data of a running stencil program: the grid arrays at their time
// levels, the sizes, the parameter values and the step counter. Every engine (reference, CPU,
// GPU) reads and writes this one representation.
package state

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"tempest/internal/diag"
	"tempest/internal/gridio"
	"tempest/internal/ir"
	"tempest/internal/sema"
	"tempest/internal/syntax"
)

// State is a program's data at one point in time.
type State struct {
	Prog   *ir.Program
	Shape  []int           // cells per axis, slowest first
	Params []ir.Value      // by ir.Param.Index
	Steps  int             // steps completed
	Seed   uint64          // for rand() in initial values
	Cur    []*gridio.Array // by ir.Grid.Index: the current level
	Prev   []*gridio.Array // by ir.Grid.Index: the previous level, nil for one-level grids
	Layers []int           // by ir.Grid.Index: layer count of layered input grids, else 0
}

// DType is the array element type of an IR type.
func DType(t ir.Type) gridio.DType {
	switch t {
	case ir.F32:
		return gridio.F32
	case ir.F64:
		return gridio.F64
	case ir.I32:
		return gridio.I32
	case ir.I64:
		return gridio.I64
	}
	panic("internal error: no array type for " + t.String())
}

// Cells is the number of cells of the domain.
func (s *State) Cells() int {
	n := 1
	for _, d := range s.Shape {
		n *= d
	}
	return n
}

// ParseShape reads "4096x4096" (slowest axis first).
func ParseShape(p *ir.Program, text string) ([]int, error) {
	parts := strings.Split(strings.ToLower(text), "x")
	if len(parts) != p.Dims() {
		return nil, fmt.Errorf("--size %q has %d dimensions but %s has %d (axes %s); write e.g. %s",
			text, len(parts), p.Name, p.Dims(), strings.Join(p.Axes, ", "), exampleSize(p.Dims()))
	}
	shape := make([]int, len(parts))
	for i, s := range parts {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("--size %q: %q is not a whole number", text, s)
		}
		if n <= 0 {
			return nil, fmt.Errorf("--size %q: axis %s has %d cells; sizes must be positive", text, p.Axes[i], n)
		}
		if n > 1<<31-1 {
			return nil, fmt.Errorf("--size %q: axis %s is too large", text, p.Axes[i])
		}
		shape[i] = n
	}
	return shape, nil
}

func exampleSize(d int) string {
	return strings.Join([]string{"512", "512", "512"}[:d], "x")
}

// DefaultParams returns each parameter's default value.
func DefaultParams(p *ir.Program) []ir.Value {
	v := make([]ir.Value, len(p.Params))
	for i, pr := range p.Params {
		v[i] = pr.Default
	}
	return v
}

// SetParam parses "name=value" and stores it in params. The value is a constant expression
// of the language (sema.ConstValue): 0.25, 1/10, 2*pi, sqrt(2)/2, or parameters' names (its own
// too), which stand for the values they hold so far (their defaults, or what an earlier --param
// set).
// Mistakes are diagnostics with a caret under the flag's text.
func SetParam(p *ir.Program, params []ir.Value, kv string) error {
	name, val, ok := strings.Cut(kv, "=")
	if !ok {
		return fmt.Errorf("--param %q: write name=value", kv)
	}
	name = strings.TrimSpace(name)
	for _, pr := range p.Params {
		if pr.Name != name {
			continue
		}
		text := kv
		if v := strings.TrimSpace(val); strings.HasSuffix(v, "f") {
			// C's float suffix (0.5f), as SL and C sources write values: read as the number.
			if _, err := strconv.ParseFloat(strings.TrimSuffix(v, "f"), 64); err == nil {
				i := strings.LastIndex(text, "f")
				text = text[:i] + " " + text[i+1:]
			}
		}
		src := diag.NewSource("--param", text)
		e, err := syntax.ParseExpr(src, len(kv)-len(val))
		if err != nil {
			return err
		}
		consts := map[string]ir.Value{}
		for _, q := range p.Params {
			consts[q.Name] = params[q.Index]
		}
		v, err := sema.ConstValue(src, e, pr.Type, consts)
		if err != nil {
			return err
		}
		params[pr.Index] = v
		return nil
	}
	var names []string
	for _, pr := range p.Params {
		names = append(names, pr.Name)
	}
	if len(names) == 0 {
		return fmt.Errorf("--param %s: %s has no parameters", name, p.Name)
	}
	return fmt.Errorf("--param %s: unknown parameter; %s has %s", name, p.Name, strings.Join(names, ", "))
}

// LayerCount evaluates a layered grid's layer expression (an integer of parameters).
func LayerCount(e ir.Expr, params []ir.Value) int64 {
	switch e := e.(type) {
	case *ir.Const:
		return e.V.I
	case *ir.ParamRef:
		return params[e.P.Index].I
	case *ir.Convert:
		return LayerCount(e.X, params)
	case *ir.Unary:
		return -LayerCount(e.X, params)
	case *ir.Binary:
		a, b := LayerCount(e.X, params), LayerCount(e.Y, params)
		return ir.EvalBinary(e.Op, ir.Value{T: ir.I64, I: a}, ir.Value{T: ir.I64, I: b}).I
	}
	panic(fmt.Sprintf("internal error: layer count %T", e))
}

// Bytes is the memory the state's arrays take.
func Bytes(p *ir.Program, shape []int, layers []int) int64 {
	cells := int64(1)
	for _, d := range shape {
		cells *= int64(d)
	}
	var total int64
	for _, g := range p.Grids {
		n := cells * int64(g.Levels)
		if layers[g.Index] > 0 {
			n *= int64(layers[g.Index])
		}
		total += n * int64(g.Type.Size())
	}
	return total
}

// New allocates a zeroed state after checking that it fits in memory. factor is how many
// copies of the state the caller will hold in all (engines keep a second buffer to write into,
// verification a reference copy); the check is made before anything is allocated.
func New(p *ir.Program, shape []int, params []ir.Value, factor float64) (*State, error) {
	if len(shape) != p.Dims() {
		return nil, fmt.Errorf("size has %d axes, %s has %d", len(shape), p.Name, p.Dims())
	}
	layers := make([]int, len(p.Grids))
	for _, g := range p.Grids {
		if g.Layers != nil {
			n := LayerCount(g.Layers, params)
			if n <= 0 || n > 1<<31-1 {
				return nil, fmt.Errorf("grid %s: layer count %d must be positive", g.Name, n)
			}
			layers[g.Index] = int(n)
		}
	}
	need := int64(float64(Bytes(p, shape, layers)) * factor)
	if avail := AvailableMemory(); avail > 0 && need > avail*9/10 {
		return nil, fmt.Errorf("the run needs about %s of memory but %s is available; choose a smaller --size",
			HumanBytes(need), HumanBytes(avail))
	}
	s := &State{Prog: p, Shape: append([]int(nil), shape...), Params: append([]ir.Value(nil), params...),
		Seed: 1, Cur: make([]*gridio.Array, len(p.Grids)), Prev: make([]*gridio.Array, len(p.Grids)), Layers: layers}
	for _, g := range p.Grids {
		gs := s.GridShape(g)
		s.Cur[g.Index] = gridio.NewArray(DType(g.Type), gs)
		if g.Levels > 1 {
			s.Prev[g.Index] = gridio.NewArray(DType(g.Type), gs)
		}
	}
	return s, nil
}

// GridShape is the array shape of grid g: the domain, with a leading layer axis if it has one.
func (s *State) GridShape(g *ir.Grid) []int {
	if s.Layers[g.Index] > 0 {
		return append([]int{s.Layers[g.Index]}, s.Shape...)
	}
	return append([]int(nil), s.Shape...)
}

// Clone returns a deep copy.
func (s *State) Clone() *State {
	c := *s
	c.Shape = append([]int(nil), s.Shape...)
	c.Params = append([]ir.Value(nil), s.Params...)
	c.Cur = make([]*gridio.Array, len(s.Cur))
	c.Prev = make([]*gridio.Array, len(s.Prev))
	for i := range s.Cur {
		c.Cur[i] = CopyArray(s.Cur[i])
		c.Prev[i] = CopyArray(s.Prev[i])
	}
	return &c
}

// CopyArray returns a deep copy of a (nil for nil).
func CopyArray(a *gridio.Array) *gridio.Array {
	if a == nil {
		return nil
	}
	b, err := a.Convert(a.DType)
	if err != nil {
		panic("internal error: " + err.Error())
	}
	return b
}

// Get reads element i of array a as a Value of type t.
func Get(a *gridio.Array, t ir.Type, i int) ir.Value {
	switch d := a.Data.(type) {
	case []float32:
		return ir.Value{T: t, F: float64(d[i])}
	case []float64:
		return ir.Value{T: t, F: d[i]}
	case []int32:
		return ir.Value{T: t, I: int64(d[i])}
	case []int64:
		return ir.Value{T: t, I: d[i]}
	}
	panic("internal error: array data")
}

// Set writes v (already of the array's type) into element i.
func Set(a *gridio.Array, i int, v ir.Value) {
	switch d := a.Data.(type) {
	case []float32:
		d[i] = float32(v.F)
	case []float64:
		d[i] = v.F
	case []int32:
		d[i] = int32(v.I)
	case []int64:
		d[i] = v.I
	default:
		panic("internal error: array data")
	}
}

// AvailableMemory reads MemAvailable from /proc/meminfo; 0 when unknown.
func AvailableMemory() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemAvailable:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// HumanBytes prints a byte count with a binary unit.
func HumanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
