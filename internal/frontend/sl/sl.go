// Package sl is Tempest's frontend for SL, the Stencil Language of Bertolacci, Meng, Skadron
// and others ("A Language and Optimizing Compiler for Iterative Stencil Loops", sections 4 and 5): a file of key-value
// pairs whose CellValue and EdgeValue blocks hold C code. It translates the file into a
// .stencil syntax tree, with positions in the SL file, and lets the .stencil checker build
// the IR, so an SL program and its hand-written .stencil twin get the same typing and folding.
//
// The mapping:
//
//	NumDimensions n     axes x (1D), y, x (2D) or z, y, x (3D), slowest first
//	DataType t          the element type: int -> i32, int64 -> i64, float -> f32, double -> f64
//	StencilSize (a, b)  checked: get() may reach at most a cells along x, b along y (and z)
//	FunctionName f      informational (the program is named after the file)
//	ScalarVariables     parameters: (float Rx, float Ry) or (Rx, Ry); a Tempest extension
//	                    allows a default, (float Rx = 10.0); without one the default is 0
//	CellValue { ... }   the update of the state grid `cell` (renamed if a scalar takes the name)
//	EdgeValue { ... }   the boundary edge(...) on every axis; `value` is the nearest cell's value
//
// Inside the C code: get(dx, dy, dz) is a neighbour read at constant offsets (in the order x,
// y, z, as the paper writes them); x, y, z are the cell's coordinates; iteration is the
// number of the step being computed, counting from 1 (Tempest's step + 1); input_size.x,
// .y and .z are the grid's extents; read(i) reads the read-only data that SL's SetData
// provides, which Tempest holds in an input grid named `data` (give it with --data file.npy).
// read(i) is understood when i is the cell's own row-major index, such as
// y * input_size.x + x (2D) or (z * input_size.y + y) * input_size.x + x (3D), written in
// any order: that is a read of `data` at the cell itself. A multiple of the domain's cell count
// may be added to read row k of a stacked array, as Pathfinder does with
// read(iteration * input_size.x + x): `data` then has layers (the parameter data_rows, default
// 100, says how many; set it to the number of rows in the --data file) and the read takes layer
// k. Any other index (a neighbour's, or one that wraps around a row) is reported.
//
// The C subset: declarations of int, long, float and double variables; assignments (also
// +=, -=, *=, /=, %=, ++ and --); arithmetic, comparisons, && || !, ?:, casts; the math
// functions (sqrt, sqrtf, fabs, exp, log, sin, cos, tan, tanh, floor, ceil, pow, fmin, fmax,
// fma, and min and max); if/else; for loops whose bounds are known at compile time (they are
// unrolled); return. Locals become let bindings or are written in place (see package lower);
// if/else becomes select; a value must be assigned on every path before it is used, and
// CellValue must return on every path.
//
// Deviations from C, all in the direction of the .stencil language: a literal without f such
// as 80.0 does not promote float arithmetic to double (literals take the type of the values
// they meet); float and double locals both have the program's float type, and int and long
// locals its integer type, so --type changes the whole program; integer division and
// conversions truncate toward zero as in C.
package sl

import (
	"fmt"
	"path/filepath"
	"strings"

	"tempest/internal/diag"
	"tempest/internal/frontend/cc"
	"tempest/internal/frontend/lower"
	"tempest/internal/ir"
	"tempest/internal/irprint"
	"tempest/internal/sema"
	"tempest/internal/syntax"
)

// DataRowsParam names the parameter that gives the number of layers of the data grid when
// read() takes rows of a stacked array.
const DataRowsParam = "data_rows"

// DataGrid is the name of the input grid that holds SL's read-only data.
const DataGrid = "data"

// axisNames are get()'s argument order: x first.
var axisNames = []string{"x", "y", "z"}

// Load translates the SL program in src and checks it into IR.
func Load(src *diag.Source, opt sema.Options) (*ir.Program, error) {
	var diags diag.List
	f := parseFile(src, &diags)
	if err := diags.Err(); err != nil {
		return nil, err
	}
	t := &translator{src: src, diags: &diags, f: f, names: irprint.NewNamer()}
	sf := t.translate(opt)
	if err := diags.Err(); err != nil {
		return nil, err
	}
	if sf == nil {
		diags.Add(src, diag.Pos{Line: 1, Col: 1}, "", "no stencil found")
		return nil, diags.Err()
	}
	return sema.Check(sf, opt)
}

// translator holds what is known about an SL file while it becomes a .stencil syntax tree:
// the checker needs the whole program at once, so the parts are collected here first.
type translator struct {
	src   *diag.Source
	diags *diag.List
	f     *file
	names *irprint.Namer

	dims     int
	elem     ir.Type
	dataType string
	sizes    []int // StencilSize, x first; nil when not given
	axes     []string
	scalars  map[string]ir.Type
	cell     string // the state grid's name
	// reads of the data grid, patched once it is known whether it has layers
	dataReads []*syntax.Index
	layered   bool
	reach     int // largest |offset| of any get
}

func (t *translator) errorf(pos diag.Pos, hint, format string, args ...any) {
	t.diags.Add(t.src, pos, hint, format, args...)
}

// translate builds the .stencil syntax tree of the file, or returns nil after reporting why not.
func (t *translator) translate(opt sema.Options) *syntax.File {
	f := t.f
	sf := &syntax.File{Src: t.src}
	first := diag.Pos{Line: 1, Col: 1}

	nd := f.entries["NumDimensions"]
	if nd == nil {
		t.errorf(first, "add NumDimensions 1, 2 or 3", "the file does not give NumDimensions")
		return nil
	}
	n, err := cc.ParseNumber(nd.val.Text, false)
	if err != nil || n.Int < 1 || n.Int > 3 {
		t.errorf(nd.val.Pos, "a stencil has 1, 2 or 3 dimensions", "NumDimensions %s is not supported", nd.val.Text)
		return nil
	}
	t.dims = int(n.Int)
	t.axes = []string{"z", "y", "x"}[3-t.dims:]

	dt := f.entries["DataType"]
	if dt == nil {
		t.errorf(first, "add DataType float (or double, int, int64)", "the file does not give DataType")
		return nil
	}
	t.dataType = dt.val.Text
	switch dt.val.Text {
	case "int":
		t.elem = ir.I32
	case "int64", "long":
		t.elem = ir.I64
	case "float":
		t.elem = ir.F32
	case "double":
		t.elem = ir.F64
	default:
		hint := "the data types are int, int64, float and double"
		if strings.Contains(dt.val.Text, "unsigned") {
			hint = "Tempest's integers are signed: use int or int64"
		}
		t.errorf(dt.val.Pos, hint, "DataType %s is not supported", dt.val.Text)
		return nil
	}
	declared := t.elem
	if opt.DefaultType != nil {
		t.elem = *opt.DefaultType
	}

	if fn := f.entries["FunctionName"]; fn != nil && !cc.IsIdent(fn.val.Text) {
		t.errorf(fn.val.Pos, "", "FunctionName %s is not a C name", fn.val.Text)
	}
	if ss := f.entries["StencilSize"]; ss != nil {
		t.stencilSize(ss)
	}

	for _, a := range t.axes {
		t.names.Take(a)
	}
	t.scalars = map[string]ir.Type{}
	var params []*syntax.ParamDecl
	if sv := f.entries["ScalarVariables"]; sv != nil {
		params = t.scalarVars(sv)
	}
	t.names.Take(DataGrid)
	t.cell = t.names.Fresh("cell")

	cv := f.entries["CellValue"]
	if cv == nil {
		t.errorf(first, "add CellValue { ... return new_value; }", "the file does not give CellValue")
		return nil
	}
	types := map[string]lower.Typ{t.cell: {T: t.elem}, DataGrid: {T: t.elem}}
	for _, a := range t.axes {
		types[a] = lower.Typ{T: ir.I32}
	}
	for name, ty := range t.scalars {
		types[name] = lower.Typ{T: ty}
	}
	reserved := map[string]string{
		"iteration":  "iteration is the step number; choose another name",
		"input_size": "input_size holds the grid's extents; choose another name",
	}
	for _, a := range axisNames {
		reserved[a] = a + " is a coordinate of the cell; choose another name"
	}
	for name := range t.scalars {
		reserved[name] = name + " is a scalar variable; choose another name"
	}
	newBuilder := func(edge bool) *lower.Builder {
		return &lower.Builder{Src: t.src, Diags: t.diags, Names: t.names, Elem: t.elem,
			ElemAliases: map[string]bool{t.dataType: true}, Types: types, Reserved: reserved,
			AllowReturn: true, NoLets: edge, Hooks: &hooks{t: t, edge: edge}}
	}

	cb := newBuilder(false)
	body, ok := t.parseBlock(cv)
	if !ok {
		return nil
	}
	ret, all := cb.Run(body)
	if !cb.Failed() && !all {
		t.errorf(cv.end, "return the new cell value on every path, e.g. end with return value;", "CellValue does not return a value on every path")
	}

	var edgeExpr syntax.Expr
	var eb *lower.Builder
	ev := f.entries["EdgeValue"]
	if ev != nil {
		eb = newBuilder(true)
		eb.Reserved = map[string]string{"value": "value is the nearest cell's value; choose another name"}
		for k, v := range reserved {
			eb.Reserved[k] = v
		}
		if ebody, ok := t.parseBlock(ev); ok {
			r, all := eb.Run(ebody)
			if !eb.Failed() && !all {
				t.errorf(ev.end, "return the edge value on every path, e.g. return value;", "EdgeValue does not return a value on every path")
			}
			edgeExpr = r
		}
	} else if t.reach > 0 && t.diags.Err() == nil {
		t.errorf(cv.key.Pos, "add EdgeValue { return value; } to repeat the nearest cell at the edges",
			"CellValue reads neighbours with get(), but the file gives no EdgeValue for cells outside the grid")
	}
	if t.diags.Err() != nil || ret == nil {
		return nil
	}

	// The data grid has layers if any read takes a row of a stacked array; the other reads then
	// read row 0, which is what their index means.
	for _, ix := range t.dataReads {
		if _, isCall := ix.X.(*syntax.Call); !isCall && t.layered {
			ix.X = &syntax.Call{Pos: ix.Pos, Fun: lower.Name(ix.Pos, DataGrid), Args: []syntax.Expr{lower.IntLit(ix.Pos, 0)}}
		}
	}
	if t.layered && !t.names.Take(DataRowsParam) {
		t.errorf(first, "rename the scalar variable", "the name %s is needed for the data grid's row count", DataRowsParam)
		return nil
	}

	lets, roots := cb.Finish(ret)
	update := roots[0]
	var edge syntax.Expr
	if edgeExpr != nil {
		var ok bool
		if edge, ok = eb.Inline(edgeExpr); !ok {
			t.errorf(ev.key.Pos, "simplify EdgeValue", "EdgeValue is too large written out in full")
			return nil
		}
	}

	name := strings.TrimSuffix(filepath.Base(t.src.Name), filepath.Ext(t.src.Name))
	if fn := f.entries["FunctionName"]; name == "" && fn != nil {
		name = fn.val.Text
	}
	sf.Decls = append(sf.Decls, &syntax.StencilDecl{Pos: first, Name: syntax.Ident{Pos: first, Name: irprint.Sanitize(name)}})
	ax := &syntax.AxesDecl{Pos: nd.key.Pos}
	for _, a := range t.axes {
		ax.Names = append(ax.Names, syntax.Ident{Pos: nd.key.Pos, Name: a})
	}
	sf.Decls = append(sf.Decls, ax)
	sf.Decls = append(sf.Decls, &syntax.TypeDecl{Pos: dt.key.Pos, Type: syntax.Ident{Pos: dt.val.Pos, Name: declared.String()}})
	for _, p := range params {
		sf.Decls = append(sf.Decls, p)
	}
	if len(t.dataReads) > 0 {
		g := &syntax.GridDecl{Pos: cv.key.Pos, Input: true, Name: syntax.Ident{Pos: cv.key.Pos, Name: DataGrid}}
		if t.layered {
			sf.Decls = append(sf.Decls, &syntax.ParamDecl{Pos: cv.key.Pos, Name: syntax.Ident{Pos: cv.key.Pos, Name: DataRowsParam},
				Default: lower.IntLit(cv.key.Pos, 100)})
			g.Layers = lower.Name(cv.key.Pos, DataRowsParam)
		}
		sf.Decls = append(sf.Decls, g)
	}
	g := &syntax.GridDecl{Pos: cv.key.Pos, Name: syntax.Ident{Pos: cv.key.Pos, Name: t.cell}}
	if edge != nil {
		g.BPos = ev.key.Pos
		g.Boundary = []syntax.BCSpec{{Pos: ev.key.Pos, Kind: syntax.Ident{Pos: ev.key.Pos, Name: "edge"}, Arg: edge}}
	}
	sf.Decls = append(sf.Decls, g)
	for _, l := range lets {
		sf.Decls = append(sf.Decls, l)
	}
	sf.Decls = append(sf.Decls, &syntax.UpdateDecl{Pos: cv.key.Pos, Name: syntax.Ident{Pos: cv.key.Pos, Name: t.cell}, Value: update})
	return sf
}

func (t *translator) parseBlock(e *entry) ([]cc.Stmt, bool) {
	p := cc.NewParser(t.src, e.body, t.diags)
	p.IsType = func(name string) bool { return name == t.dataType && cc.IsIdent(name) }
	return p.ParseStmts()
}

func (t *translator) stencilSize(e *entry) {
	for _, item := range e.list {
		if len(item) != 1 || item[0].Kind != cc.Int {
			pos := e.open.Pos
			if len(item) > 0 {
				pos = item[0].Pos
			}
			t.errorf(pos, "write StencilSize (1, 1): one integer per dimension, x first", "StencilSize needs integers")
			t.sizes = nil
			return
		}
		n, err := cc.ParseNumber(item[0].Text, false)
		if err != nil || n.Int < 0 || n.Int > 1<<16 {
			t.errorf(item[0].Pos, "", "StencilSize %s is out of range", item[0].Text)
			t.sizes = nil
			return
		}
		t.sizes = append(t.sizes, int(n.Int))
	}
	switch {
	case len(t.sizes) == 1 && t.dims > 1 && len(e.list) == 1 && e.open.Text == "":
		for len(t.sizes) < t.dims {
			t.sizes = append(t.sizes, t.sizes[0])
		}
	case len(t.sizes) != t.dims:
		t.errorf(e.key.Pos, fmt.Sprintf("give one size per dimension: %d", t.dims), "StencilSize has %d entries but the stencil has %d dimensions", len(t.sizes), t.dims)
		t.sizes = nil
	}
}

// scalarVars reads `(float Rx, float Ry = 2.5, Rz)`.
func (t *translator) scalarVars(e *entry) []*syntax.ParamDecl {
	var out []*syntax.ParamDecl
	for _, item := range e.list {
		if len(item) == 0 {
			t.errorf(e.open.Pos, "separate the names with single commas", "empty entry in ScalarVariables")
			continue
		}
		// type words, a name, optionally = [-]number
		eq := len(item)
		for i, tk := range item {
			if tk.Kind == cc.Punct && tk.Text == "=" {
				eq = i
				break
			}
		}
		head := item[:eq]
		if len(head) == 0 {
			t.errorf(item[0].Pos, "write a type and a name, e.g. float Rx = 1.0", "expected a scalar variable name before =")
			continue
		}
		nameTok := head[len(head)-1]
		if nameTok.Kind != cc.Ident {
			t.errorf(nameTok.Pos, "write a type and a name, e.g. float Rx", "expected a scalar variable name, found %s", nameTok)
			continue
		}
		ty := t.elem
		if len(head) > 1 {
			words := make([]string, len(head)-1)
			for i, w := range head[:len(head)-1] {
				words[i] = w.Text
			}
			var ok bool
			if ty, ok = t.scalarType(words, head[0].Pos); !ok {
				continue
			}
		}
		name := nameTok.Text
		switch {
		case irprint.Reserved(name) || name == "iteration" || name == "input_size" || name == "x" || name == "y" || name == "z" || name == DataGrid:
			t.errorf(nameTok.Pos, "choose another name", "scalar variable name %s is reserved", name)
			continue
		case t.names.Taken(name):
			t.errorf(nameTok.Pos, "", "scalar variable %s declared twice", name)
			continue
		}
		t.names.Take(name)
		t.scalars[name] = ty
		def := syntax.Expr(lower.IntLit(nameTok.Pos, 0))
		if ty.IsFloat() {
			def = lower.FloatLit(nameTok.Pos, 0)
		}
		if eq < len(item) {
			v, ok := t.constant(item[eq+1:], item[eq].Pos, ty.IsFloat())
			if !ok {
				continue
			}
			def = v
		}
		p := &syntax.ParamDecl{Pos: nameTok.Pos, Name: syntax.Ident{Pos: nameTok.Pos, Name: name}, Default: def}
		// Float scalars take the program's float type, as an untyped float default does in a
		// .stencil file; integer scalars are declared with their type.
		if ty.IsInt() {
			p.Type = &syntax.Ident{Pos: nameTok.Pos, Name: ty.String()}
		} else if ty != t.floatType() {
			p.Type = &syntax.Ident{Pos: nameTok.Pos, Name: ty.String()}
		}
		out = append(out, p)
	}
	return out
}

func (t *translator) floatType() ir.Type {
	if t.elem.IsFloat() {
		return t.elem
	}
	return ir.F64
}

func (t *translator) scalarType(words []string, pos diag.Pos) (ir.Type, bool) {
	s := strings.Join(words, " ")
	switch s {
	case "float":
		if t.elem.IsFloat() {
			return t.elem, true
		}
		return ir.F32, true
	case "double":
		if t.elem.IsFloat() {
			return t.elem, true
		}
		return ir.F64, true
	case "int":
		if t.elem.IsInt() {
			return t.elem, true
		}
		return ir.I32, true
	case "int64", "long":
		if t.elem.IsInt() {
			return t.elem, true
		}
		return ir.I64, true
	}
	if s == t.dataType {
		return t.elem, true
	}
	t.errorf(pos, "scalar variables are int, int64, float or double", "scalar type %s is not supported", s)
	return 0, false
}

// constant reads a default value: a number with an optional sign.
func (t *translator) constant(toks []cc.Token, pos diag.Pos, float bool) (syntax.Expr, bool) {
	neg := false
	if len(toks) > 0 && toks[0].Kind == cc.Punct && (toks[0].Text == "-" || toks[0].Text == "+") {
		neg = toks[0].Text == "-"
		toks = toks[1:]
	}
	if len(toks) != 1 || toks[0].Kind != cc.Int && toks[0].Kind != cc.Float {
		t.errorf(pos, "a default is a number, e.g. float Rx = 10.0", "expected a number after =")
		return nil, false
	}
	n, err := cc.ParseNumber(toks[0].Text, toks[0].Kind == cc.Float)
	if err != nil {
		t.errorf(toks[0].Pos, "", "%v", err)
		return nil, false
	}
	if n.IsFloat || float {
		f := n.Float
		if !n.IsFloat {
			f = float64(n.Int)
		}
		if neg {
			f = -f
		}
		return lower.FloatLit(toks[0].Pos, f), true
	}
	i := n.Int
	if neg {
		i = -i
	}
	return lower.IntLit(toks[0].Pos, i), true
}
