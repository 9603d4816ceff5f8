package sim

import (
	"fmt"
	"strings"

	"tempest/internal/gridio"
	"tempest/internal/ir"
	"tempest/internal/state"
)

// An Array is a dense array in C order (the last axis varies fastest), the form in which grids
// go in and out of a Sim: Data is a []float32, []float64, []int32 or []int64 of the grid's
// element type, with as many elements as Shape's product.
type Array struct {
	Shape []int
	Data  any
}

// Number is an element type of Tempest's grids.
type Number interface {
	float32 | float64 | int32 | int64
}

// NewArray wraps data (not copied) as an Array of the given shape.
func NewArray[T Number](shape []int, data []T) Array {
	return Array{Shape: append([]int(nil), shape...), Data: data}
}

// Values returns a's elements as []T, or an error naming the type it holds.
func Values[T Number](a Array) ([]T, error) {
	v, ok := a.Data.([]T)
	if !ok {
		var t T
		return nil, fmt.Errorf("the array holds %s, not %s", typeName(a.Data), typeName([]T{t}))
	}
	return v, nil
}

// DType is the element type of a's data: f32, f64, i32 or i64 ("" for anything else).
func (a Array) DType() string {
	switch a.Data.(type) {
	case []float32:
		return "f32"
	case []float64:
		return "f64"
	case []int32:
		return "i32"
	case []int64:
		return "i64"
	}
	return ""
}

func typeName(data any) string {
	if t := (Array{Data: data}).DType(); t != "" {
		return t
	}
	return fmt.Sprintf("%T", data)
}

// GridShape is the shape of grid name's arrays: the Sim's shape, with a layered grid's layer
// count first; nil for a grid the program does not have.
func (s *Sim) GridShape(name string) []int {
	g, _, err := s.grid(name)
	if err != nil {
		return nil
	}
	return s.eng.State.GridShape(g)
}

// Grid returns a copy of the whole grid name: "u" for its current values, "u.prev" for the
// previous level of a grid the program reads at two levels.
func (s *Sim) Grid(name string) (Array, error) {
	g, level, err := s.grid(name)
	if err != nil {
		return Array{}, err
	}
	full := s.eng.State.GridShape(g)
	return s.box(g, level, make([]int, len(full)), full)
}

// Box returns a copy of the part of grid name (as Grid names it) that starts at lo and has
// the given shape, in the grid's axes (a layered grid's layer axis first). On the CPU engine
// only the box is copied; a GPU's grids come back whole once per step reached.
func (s *Sim) Box(name string, lo, shape []int) (Array, error) {
	g, level, err := s.grid(name)
	if err != nil {
		return Array{}, err
	}
	if err := s.checkBox(name, g, lo, shape); err != nil {
		return Array{}, err
	}
	return s.box(g, level, lo, shape)
}

func (s *Sim) box(g *ir.Grid, level int, lo, shape []int) (Array, error) {
	a, err := s.eng.Read(g, level, lo, shape)
	if err != nil {
		return Array{}, err
	}
	return Array{Shape: a.Shape, Data: a.Data}, nil
}

// SetGrid replaces the values of grid name (as Grid names it) with a, which must have the
// grid's shape and element type. The steps that follow start from them, as a run resumed
// from a state holding them would.
func (s *Sim) SetGrid(name string, a Array) error {
	g, _, err := s.grid(name)
	if err != nil {
		return err
	}
	return s.SetBox(name, make([]int, len(s.eng.State.GridShape(g))), a)
}

// SetBox writes a into grid name (as Grid names it) starting at lo: the box of a's shape
// there takes a's values, the rest keeps its own. On the CPU engine only the box is copied;
// a GPU's grid goes up whole.
func (s *Sim) SetBox(name string, lo []int, a Array) error {
	g, level, err := s.grid(name)
	if err != nil {
		return err
	}
	if err := s.checkBox(name, g, lo, a.Shape); err != nil {
		return err
	}
	want := state.DType(g.Type)
	arr := &gridio.Array{DType: gridio.DType(a.DType()), Shape: append([]int(nil), a.Shape...), Data: a.Data}
	if arr.DType != want {
		return fmt.Errorf("grid %s holds %s values but the array holds %s; convert it first", name, want, typeName(a.Data))
	}
	if err := arr.Validate(); err != nil {
		return fmt.Errorf("grid %s: %w", name, err)
	}
	return s.eng.Write(g, level, lo, arr)
}

// grid finds a grid by name, with ".prev" for its previous level.
func (s *Sim) grid(name string) (*ir.Grid, int, error) {
	base, prev := strings.CutSuffix(name, ".prev")
	g := s.grids[base]
	if g == nil {
		var names []string
		for _, g := range s.prog.p.Grids {
			names = append(names, g.Name)
		}
		return nil, 0, fmt.Errorf("grid %q: %s has no such grid (grids: %s)", name, s.prog.p.Name, strings.Join(names, ", "))
	}
	if !prev {
		return g, 0, nil
	}
	if g.Levels < 2 {
		return nil, 0, fmt.Errorf("grid %q: %s keeps one level of %s (it never reads %s.prev)", name, s.prog.p.Name, base, base)
	}
	return g, 1, nil
}

// checkBox refuses a box that leaves the grid.
func (s *Sim) checkBox(name string, g *ir.Grid, lo, shape []int) error {
	full := s.eng.State.GridShape(g)
	if len(lo) != len(full) || len(shape) != len(full) {
		return fmt.Errorf("grid %s has %d axes (shape %v) but the box has offset %v and shape %v", name, len(full), full, lo, shape)
	}
	for a := range full {
		if lo[a] < 0 || shape[a] < 0 || lo[a]+shape[a] > full[a] {
			return fmt.Errorf("grid %s: the box at %v of shape %v leaves the grid (shape %v) on axis %d", name, lo, shape, full, a)
		}
	}
	return nil
}
