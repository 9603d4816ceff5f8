package driver

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"tempest/internal/gridio"
	"tempest/internal/ir"
	"tempest/internal/state"
)

// readInitFile reads the file of --init grid=FILE: NumPy's .npy, or a text grid (Rodinia's one
// value per line, or rows of values; .txt, .csv, .dat or no extension), read straight into the
// grid's element type.
func readInitFile(sp *initSpec, flag, path string) error {
	if strings.EqualFold(filepath.Ext(path), ".npy") {
		a, err := gridio.ReadNPY(path)
		if err != nil {
			return fmt.Errorf("--init %s: %w", flag, err)
		}
		sp.kind, sp.path, sp.arr = "npy", path, a
		return nil
	}
	if st, err := os.Stat(path); err != nil || st.IsDir() || !gridio.IsTextPath(path) {
		if filepath.Ext(path) == "" && errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("--init %s: %q is not a file, random[:seed] or zero", flag, path)
		}
		if err != nil {
			return fmt.Errorf("--init %s: %w", flag, err)
		}
		return fmt.Errorf("--init %s: %q is not a .npy or text file (.txt, .csv, .dat), random[:seed] or zero", flag, path)
	}
	txt, err := gridio.ReadText(path, state.DType(sp.grid.Type))
	if err != nil {
		return fmt.Errorf("--init %s: %w", flag, err)
	}
	sp.kind, sp.path, sp.text = "text", path, txt
	return nil
}

// sizeFromInits gives the grid size when --size is not given: the shape of the first .npy
// file, or the one a text file implies (its rows, or the square or cube of its count), for a
// grid without layers.
func sizeFromInits(p *ir.Program, inits []initSpec) (string, error) {
	for _, in := range inits {
		if in.grid.Layers != nil {
			continue
		}
		switch {
		case in.arr != nil:
			if len(in.arr.Shape) != p.Dims() {
				return "", fmt.Errorf("--init %s=%s: the file holds a %d-D array of shape %v, but %s is %d-D (axes %s); save the grid as a %d-D array",
					in.grid.Name, in.path, len(in.arr.Shape), in.arr.Shape, p.Name, p.Dims(), strings.Join(p.Axes, ", "), p.Dims())
			}
			return sizeString(in.arr.Shape), nil
		case in.text != nil:
			shape, err := in.text.Shape(p.Dims())
			if err != nil {
				return "", fmt.Errorf("--init %s=%s: %w; give the grid's size with --size, one number per axis (%s), %d cells in all",
					in.grid.Name, in.path, err, strings.Join(p.Axes, ", "), in.text.Count())
			}
			return sizeString(shape), nil
		}
	}
	return "", nil
}

// fileArray turns a file read for --init into the grid's array of shape want, with a note
// when its values change type or a text file's flat values take a shape.
func fileArray(s *state.State, in initSpec, want []int, notes *[]string) (*gridio.Array, error) {
	g := in.grid
	dt := state.DType(g.Type)
	if in.text != nil {
		a, err := in.text.Fit(want)
		if err != nil {
			return nil, fmt.Errorf("--init %s=%s: %w (--size %s)", g.Name, in.path, err, sizeString(s.Shape))
		}
		if in.text.Column && len(want) > 1 {
			*notes = append(*notes, fmt.Sprintf("note: %s: %d values, one per line, read as %s grid %s (%s)",
				in.path, in.text.Count(), sizeString(want), g.Name, strings.Join(axesOf(s, g), ", ")))
		}
		return a, nil
	}
	if fmt.Sprint(in.arr.Shape) != fmt.Sprint(want) {
		return nil, fmt.Errorf("--init %s=%s: the file holds an array of shape %v but grid %s needs %v (--size %s); make them agree",
			g.Name, in.path, in.arr.Shape, g.Name, want, sizeString(s.Shape))
	}
	a, err := in.arr.ConvertChecked(dt)
	if err != nil {
		return nil, fmt.Errorf("--init %s=%s: %w", g.Name, in.path, err)
	}
	if from := string(in.arr.DType); in.arr.DType != dt || in.arr.Widened != "" {
		if in.arr.Widened != "" {
			from = in.arr.Widened // the file's own type, which reading widened
		}
		*notes = append(*notes, fmt.Sprintf("note: %s: %s converted to %s (grid %s)", in.path, from, dt, g.Name))
	}
	return a, nil
}

// axesOf names the axes of a grid's array, with a layer axis first for layered inputs.
func axesOf(s *state.State, g *ir.Grid) []string {
	axes := append([]string{}, s.Prog.Axes...)
	if len(s.GridShape(g)) > len(axes) {
		axes = append([]string{"layer"}, axes...)
	}
	return axes
}

// defaultWarnings names the grids that start from the program's own initial values although
// others come from files: a forgotten --init would otherwise pass unnoticed.
func defaultWarnings(p *ir.Program, inits []initSpec) []string {
	var files []string
	given := map[*ir.Grid]bool{}
	for _, in := range inits {
		given[in.grid] = true
		if in.path != "" {
			files = append(files, fmt.Sprintf("%s comes from %s", in.grid.Name, in.path))
		}
	}
	if len(files) == 0 {
		return nil
	}
	var out []string
	for _, g := range p.Grids {
		if given[g] {
			continue
		}
		what := "the program's init"
		if g.Init == nil {
			what = "zero, the program gives no init"
		}
		out = append(out, fmt.Sprintf("warning: grid %s starts from its built-in initial value (%s) while %s; give --init %s=FILE if it has data too",
			g.Name, what, strings.Join(files, " and "), g.Name))
	}
	return out
}

// warnNonFinite reports state grids that hold NaN or Inf after the run: the grid, how many
// cells and the first of them.
func warnNonFinite(s *state.State, stderr io.Writer) {
	for _, u := range s.Prog.Updates {
		a := s.Cur[u.Grid.Index]
		n, first := a.NonFinite()
		if n == 0 {
			continue
		}
		fmt.Fprintf(stderr, "warning: grid %s holds NaN or Inf in %d of %d cells after %d steps; the first is at %s\n",
			u.Grid.Name, n, a.Len(), s.Steps, cellName(axesOf(s, u.Grid), a.Shape, first))
	}
}

// cellName writes element i of an array of this shape with the axes' names: (y=3, x=17).
func cellName(axes []string, shape []int, i int) string {
	parts := make([]string, len(shape))
	for k := len(shape) - 1; k >= 0; k-- {
		parts[k] = fmt.Sprintf("%s=%d", axes[k], i%shape[k])
		i /= shape[k]
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// outputFormat says how --out writes a grid, by the file's extension.
func outputFormat(path string) (string, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".npy":
		return "npy", nil
	case ".csv":
		return "csv", nil
	case ".txt", ".dat", "":
		return "text", nil
	}
	return "", fmt.Errorf("--out %s: write .npy (NumPy), .txt (one value per line, as Rodinia's programs read) or .csv (rows along the last axis)", path)
}

// writeGrid writes one grid in the format its file name asks for.
func writeGrid(path string, a *gridio.Array) error {
	format, err := outputFormat(path)
	if err != nil {
		return err
	}
	switch format {
	case "csv":
		return gridio.WriteCSV(path, a)
	case "text":
		return gridio.WriteText(path, a)
	}
	return gridio.WriteNPY(path, a)
}
