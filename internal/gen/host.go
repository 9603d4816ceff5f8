package gen

import (
	"fmt"
	"strings"

	"tempest/internal/ir"
	"tempest/internal/kir"
	"tempest/internal/lower"
)

// nslots is how many device buffers the runner keeps for a grid: [0] current, [1] previous
// (one-level state grids: next), [2] next, [3] next previous (gpurun.New).
func (g *gen) nslots(gr *ir.Grid) int {
	switch {
	case gr.Update == nil:
		return 1
	case gr.Levels == 1:
		return 2
	case g.multi:
		return 4
	}
	return 3
}

// slotOf is the buffer slot an argument binds (gpurun.Runner.bind).
func (g *gen) slotOf(a lower.Arg) int {
	gr := g.p.Grids[a.Grid]
	switch a.Role {
	case lower.In0:
		return 0
	case lower.In1:
		return 1
	case lower.Out0:
		if gr.Update != nil && gr.Levels == 1 {
			return 1
		}
		return 2
	case lower.Out1:
		return 3
	}
	panic("internal error: role")
}

func (g *gen) cuda() bool { return g.o.Target == "cuda" }

// hostFile is the .cu file (kernels and host code) or the OpenCL host .c file: a head
// (comment, includes, the kernels) and the host code, its helpers in between.
func (g *gen) hostFile() string {
	head := &w{}
	g.hostHead(head)
	head.f("/* ---- Host code ---- */")
	head.f("")
	x := &w{}
	g.hostContext(x)
	g.hostErrors(x)
	g.layerFunc(x)
	g.hostGridLookup(x)
	g.hostSetup(x)
	g.hostCreate(x)
	g.upDown(x)
	g.rotateFunc(x)
	for i := range g.launches {
		g.launchFunc(x, i)
	}
	g.advanceFunc(x)
	g.hostRun(x)
	return head.b.String() + helpersFor(x.b.String()) + x.b.String()
}

// hostHead is the file's comment, its includes and the kernels (CUDA source, or OpenCL
// source embedded as a string with its build options).
func (g *gen) hostHead(x *w) {
	g.host.head(x)
	x.f("#include <stdarg.h>")
	x.f("#include <stdint.h>")
	x.f("#include <stdio.h>")
	x.f("#include <stdlib.h>")
	x.f("#include <string.h>")
	x.f("")
	x.f("#include \"%s.h\"", g.name)
	x.f("")
	g.host.kernels(x)
}

// hostContext is the grids' tables and the context structure.
func (g *gen) hostContext(x *w) {
	n := g.name
	ng := len(g.p.Grids)
	x.f("#define NGRIDS %d", ng)
	x.f("#define NKERNELS %d", len(g.low.Module.Kernels))
	x.f("#define NARROW_INDEX %d /* 1: kernels index with 32-bit ints */", map[bool]int{true: 0, false: 1}[g.wide])
	x.f("")
	x.f("static const char *const grid_names[NGRIDS] = { %s };", g.quotedGridNames())
	x.f("static const int grid_input[NGRIDS] = { %s };", g.perGrid(func(gr *ir.Grid) string { return boolInt(gr.Update == nil) }))
	x.f("static const int grid_layered[NGRIDS] = { %s };", g.perGrid(func(gr *ir.Grid) string { return boolInt(gr.Layers != nil) }))
	x.f("static const int grid_elem[NGRIDS] = { %s }; /* bytes per element */", g.perGrid(func(gr *ir.Grid) string { return fmt.Sprint(gr.Type.Size()) }))
	x.f("static const int grid_slots[NGRIDS] = { %s }; /* device buffers per grid */", g.perGrid(func(gr *ir.Grid) string { return fmt.Sprint(g.nslots(gr)) }))
	x.f("")
	x.f("%s", g.host.slotTypedef())
	x.f("")
	x.f("struct %s_ctx {", n)
	x.f("  int n[%d];            /* extents, slowest axis first */", g.p.Dims())
	x.f("  int64_t cells;")
	x.f("  int64_t len[NGRIDS]; /* elements per grid */")
	x.f("  int layers[NGRIDS];  /* layer count of layered grids, else 0 */")
	x.f("  int step;            /* steps completed */")
	x.f("  %s_params p;", n)
	x.f("  /* Buffers per grid: [0] current, [1] previous (one-level state grids: next),")
	x.f("   * [2] next, [3] next previous; rotated after every launch. */")
	x.f("  slot_t slot[NGRIDS][4];")
	g.host.ctxFields(x)
	x.f("};")
	x.f("")
	if len(g.inputGrids()) > 0 {
		x.f("static const void *grid_data[NGRIDS]; /* set_data */")
	}
}

// hostErrors is the error state, fail, CHECK and the error-text function.
func (g *gen) hostErrors(x *w) {
	n, N := g.name, g.upper
	x.f("static char err_msg[16384];")
	x.f("static int err_code;")
	x.f("")
	x.f("static int fail(int code, const char *format, ...) {")
	x.f("  va_list ap;")
	x.f("  va_start(ap, format);")
	x.f("  vsnprintf(err_msg, sizeof err_msg, format, ap);")
	x.f("  va_end(ap);")
	x.f("  err_code = code;")
	x.f("  return code;")
	x.f("}")
	x.f("")
	de := g.host.errors()
	sign, fromCode := "+", fmt.Sprintf("code - %s_ERR_DEVICE", N)
	if de.negative {
		sign, fromCode = "-", fmt.Sprintf("%s_ERR_DEVICE - code", N)
	}
	g.host.errorHelpers(x)
	x.f("#define CHECK(call, what) do { %s e_ = (call); if (e_ != %s) \\", de.typ, de.success)
	x.f("    return fail(%s_ERR_DEVICE %s (int)e_, \"%%s: %%s (%s)\", what, %s(e_), %s); } while (0)", N, sign, de.detailFmt, de.text, de.detailArg)
	x.f("")
	x.f("const char *%s_error(int code) {", n)
	x.f("  static char buf[256];")
	x.f("  if (code == err_code && err_msg[0]) return err_msg;")
	x.f("  switch (code) {")
	for _, e := range errorCodes {
		if e.name == "ERR_DEVICE" {
			continue
		}
		x.f("  case %s_%s: return \"%s\";", N, e.name, e.text)
	}
	x.f("  }")
	x.f("  if (code >= %s_ERR_DEVICE) {", N)
	x.f("    %s e = (%s)(%s);", de.typ, de.typ, fromCode)
	x.f("    snprintf(buf, sizeof buf, \"%s error %%d: %%s\", (int)e, %s(e));", de.api, de.text)
	x.f("    return buf;")
	x.f("  }")
	x.f("  snprintf(buf, sizeof buf, \"unknown error code %%d\", code);")
	x.f("  return buf;")
	x.f("}")
	x.f("")
}

// hostGridLookup is find_grid and set_data.
func (g *gen) hostGridLookup(x *w) {
	n, N := g.name, g.upper
	x.f("static int find_grid(const char *name) {")
	x.f("  int g;")
	x.f("  for (g = 0; g < NGRIDS; g++) if (strcmp(name, grid_names[g]) == 0) return g;")
	for _, gr := range g.p.Grids {
		if g.gname[gr.Index] != gr.Name {
			x.f("  if (strcmp(name, \"%s\") == 0) return %d;", g.gname[gr.Index], gr.Index)
		}
	}
	x.f("  return -1;")
	x.f("}")
	x.f("")
	x.f("int %s_set_data(const char *grid, const void *data) {", n)
	x.f("  int g;")
	x.f("  if (!grid) return %s_ERR_ARGUMENT;", N)
	x.f("  g = find_grid(grid);")
	x.f("  if (g < 0 || !grid_input[g]) return fail(%s_ERR_UNKNOWN_GRID, \"set_data(\\\"%%s\\\"): %%s\", grid,", N)
	x.f("      g < 0 ? \"%s has no grid of that name\" : \"a state grid's data is passed to run or upload\");", g.p.Name)
	if len(g.inputGrids()) > 0 {
		x.f("  grid_data[g] = data;")
	} else {
		x.f("  (void)data;")
	}
	x.f("  return %s_OK;", N)
	x.f("}")
	x.f("")
}

// hostSetup is setup (sizes, element and layer counts) and grid_len.
func (g *gen) hostSetup(x *w) {
	n, N := g.name, g.upper
	x.f("/* setup checks the sizes and fills extents, element counts and layer counts. */")
	x.f("static int setup(%s_ctx *c, const int *sizes, const %s_params *scalars) {", n, n)
	x.f("  int a, g;")
	x.f("  int64_t most = 1;")
	x.f("  if (!sizes) return %s_ERR_ARGUMENT;", N)
	x.f("  c->p = scalars ? *scalars : %s_default_params();", n)
	x.f("  c->cells = 1;")
	x.f("  for (a = 0; a < %d; a++) {", g.p.Dims())
	x.f("    if (sizes[a] < 1) return fail(%s_ERR_SIZE, \"size %%d along axis %%d is not positive\", sizes[a], a);", N)
	x.f("    c->n[a] = sizes[a];")
	x.f("    if (c->cells > INT64_MAX / 8 / sizes[a]) return %s_ERR_TOO_LARGE;", N)
	x.f("    c->cells *= sizes[a];")
	x.f("  }")
	x.f("  for (g = 0; g < NGRIDS; g++) {")
	x.f("    int64_t l = layer_count(g, &c->p);")
	x.f("    if (grid_layered[g] && (l <= 0 || l > INT32_MAX))")
	x.f("      return fail(%s_ERR_LAYERS, \"grid %%s: layer count %%lld is not positive\", grid_names[g], (long long)l);", N)
	x.f("    c->layers[g] = (int)l;")
	x.f("    if (l == 0) l = 1;")
	x.f("    if (c->cells > INT64_MAX / 8 / l) return %s_ERR_TOO_LARGE;", N)
	x.f("    c->len[g] = c->cells * l;")
	x.f("    if (c->len[g] > most) most = c->len[g];")
	x.f("  }")
	x.f("  if ((uint64_t)most * 8 > (uint64_t)SIZE_MAX) return %s_ERR_TOO_LARGE;", N)
	x.f("  if (NARROW_INDEX && most > INT32_MAX)")
	x.f("    return fail(%s_ERR_TOO_LARGE, \"grids of %%lld elements need 64-bit indices; generate the code with --index64 (or a --size this large)\", (long long)most);", N)
	x.f("  return %s_OK;", N)
	x.f("}")
	x.f("")
	x.f("int64_t %s_grid_len(const char *grid, const int *sizes, const %s_params *scalars) {", n, n)
	x.f("  %s_ctx c;", n)
	x.f("  int g, rc;")
	x.f("  if (!grid) return %s_ERR_ARGUMENT;", N)
	x.f("  g = find_grid(grid);")
	x.f("  if (g < 0) return %s_ERR_UNKNOWN_GRID;", N)
	x.f("  memset(&c, 0, sizeof c);")
	x.f("  rc = setup(&c, sizes, scalars);")
	x.f("  if (rc != %s_OK) return rc;", N)
	x.f("  return c.len[g];")
	x.f("}")
	x.f("")
}

// hostRun is the one-call entry point: create, upload, advance, download, destroy.
func (g *gen) hostRun(x *w) {
	n, N := g.name, g.upper
	x.f("int %s_run(%s, const int *sizes, int steps, const %s_params *scalars) {", n, g.gridParams(false), n)
	x.f("  %s_ctx *c = NULL;", n)
	x.f("  int rc;")
	x.f("  if (steps < 0) return %s_ERR_ARGUMENT;", N)
	x.f("  rc = %s_create(&c, sizes, scalars);", n)
	x.f("  if (rc != %s_OK) return rc;", N)
	x.f("  rc = %s_upload(c, %s, 0);", n, g.gridArgs())
	x.f("  if (rc == %s_OK) rc = %s_advance(c, steps, NULL);", N, n)
	x.f("  if (rc == %s_OK) rc = %s_download(c, %s);", N, n, g.gridArgs())
	x.f("  %s_destroy(c);", n)
	x.f("  return rc;")
	x.f("}")
}

func boolInt(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

func (g *gen) perGrid(f func(gr *ir.Grid) string) string {
	var s []string
	for _, gr := range g.p.Grids {
		s = append(s, f(gr))
	}
	return strings.Join(s, ", ")
}

func (g *gen) quotedGridNames() string {
	return g.perGrid(func(gr *ir.Grid) string { return "\"" + cString(gr.Name) + "\"" })
}

// cString escapes text for a C string literal.
func cString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "??", `?\?`, "\t", `\t`)
	return r.Replace(s)
}

// layerFunc writes layer_count(g, p): state.LayerCount in C (64-bit integer arithmetic).
func (g *gen) layerFunc(x *w) {
	x.f("/* Layer count of a layered grid from the parameters (0: not layered). */")
	x.f("static int64_t layer_count(int g, const %s_params *p) {", g.name)
	x.f("  (void)g; (void)p;")
	for _, gr := range g.p.Grids {
		if gr.Layers != nil {
			x.f("  if (g == %d) return %s;", gr.Index, g.layerExpr(gr.Layers))
		}
	}
	x.f("  return 0;")
	x.f("}")
	x.f("")
}

func (g *gen) layerExpr(e ir.Expr) string {
	switch e := e.(type) {
	case *ir.Const:
		return fmt.Sprintf("(int64_t)%dLL", e.V.I)
	case *ir.ParamRef:
		return fmt.Sprintf("(int64_t)p->%s", g.pname[e.P.Index])
	case *ir.Convert:
		return g.layerExpr(e.X)
	case *ir.Unary:
		return "t_neg64(" + g.layerExpr(e.X) + ")"
	case *ir.Binary:
		name := map[string]string{"+": "add", "-": "sub", "*": "mul", "/": "div", "%": "rem"}[e.Op]
		if name != "" {
			return fmt.Sprintf("t_%s64(%s, %s)", name, g.layerExpr(e.X), g.layerExpr(e.Y))
		}
	}
	panic(fmt.Sprintf("internal error: layer count %T", e))
}

// hostCreate is create (the device, its buffers), destroy, the create wrapper that destroys on
// failure, and write_slot/read_slot, the blocking copies of one buffer.
func (g *gen) hostCreate(x *w) {
	n, N := g.name, g.upper
	const bytes = "(size_t)c->len[g] * grid_elem[g]"
	g.host.deviceHelpers(x)
	x.f("static int create(%s_ctx *c, const int *sizes, const %s_params *scalars) {", n, n)
	g.host.createDecls(x)
	x.f("  if (rc != %s_OK) return rc;", N)
	g.host.openDevice(x)
	x.f("  for (g = 0; g < NGRIDS; g++)")
	if alloc := g.host.allocSlot(bytes); len(alloc) == 1 {
		x.f("    for (s = 0; s < grid_slots[g]; s++)")
		x.f("      %s", alloc[0])
	} else {
		x.f("    for (s = 0; s < grid_slots[g]; s++) {")
		for _, l := range alloc {
			x.f("      %s", l)
		}
		x.f("    }")
	}
	g.host.afterAlloc(x)
	x.f("  return %s_OK;", N)
	x.f("}")
	x.f("")
	x.f("void %s_destroy(%s_ctx *c) {", n, n)
	x.f("  int g, s;")
	x.f("  if (!c) return;")
	g.host.drain(x)
	x.f("  for (g = 0; g < NGRIDS; g++)")
	x.f("    for (s = 0; s < 4; s++)")
	x.f("      if (c->slot[g][s]) %s", g.host.freeSlot("c->slot[g][s]"))
	g.host.release(x)
	x.f("  free(c);")
	x.f("}")
	x.f("")
	g.createWrapper(x)
	x.f("static int write_slot(%s_ctx *c, int g, int s, const void *src) {", n)
	x.f("  %s", g.host.writeSlot(bytes))
	x.f("  return %s_OK;", N)
	x.f("}")
	x.f("")
	x.f("static int read_slot(%s_ctx *c, int g, int s, void *dst) {", n)
	x.f("  %s", g.host.readSlot(bytes))
	x.f("  return %s_OK;", N)
	x.f("}")
	x.f("")
}

// createWrapper is <name>_create: create into a fresh context, destroyed again on failure.
func (g *gen) createWrapper(x *w) {
	n, N := g.name, g.upper
	x.f("int %s_create(%s_ctx **ctx, const int *sizes, const %s_params *scalars) {", n, n, n)
	x.f("  %s_ctx *c;", n)
	x.f("  int rc;")
	x.f("  if (!ctx) return %s_ERR_ARGUMENT;", N)
	x.f("  *ctx = NULL;")
	x.f("  c = (%s_ctx *)calloc(1, sizeof *c);", n)
	x.f("  if (!c) return %s_ERR_HOST_MEMORY;", N)
	x.f("  rc = create(c, sizes, scalars);")
	x.f("  if (rc != %s_OK) {", N)
	x.f("    %s_destroy(c);", n)
	x.f("    return rc;")
	x.f("  }")
	x.f("  *ctx = c;")
	x.f("  return %s_OK;", N)
	x.f("}")
	x.f("")
}

// upDown writes upload and download: every buffer of a grid starts with the current values,
// slot 1 of a two-level grid with the previous ones (gpurun.New); download reads slot 0 (and 1).
func (g *gen) upDown(x *w) {
	n, N := g.name, g.upper
	x.f("int %s_upload(%s_ctx *c, %s, int first_step) {", n, n, g.gridParams(true))
	x.f("  int rc;")
	var nulls []string
	for _, gr := range g.stateGrids() {
		nulls = append(nulls, "!"+g.gname[gr.Index])
	}
	x.f("  if (!c || %s) return %s_ERR_ARGUMENT;", strings.Join(nulls, " || "), N)
	for _, gr := range g.p.Grids {
		v := g.gname[gr.Index]
		i := gr.Index
		if gr.Update == nil {
			x.f("  if (!grid_data[%d]) return fail(%s_ERR_NO_DATA, \"read-only grid %s has no data: call %s_set_data(\\\"%s\\\", array) first\");", i, N, gr.Name, n, gr.Name)
			x.f("  if ((rc = write_slot(c, %d, 0, grid_data[%d])) != %s_OK) return rc;", i, i, N)
			continue
		}
		for s := 0; s < g.nslots(gr); s++ {
			src := v
			if s == 1 && gr.Levels > 1 {
				src = fmt.Sprintf("%s_prev ? %s_prev : %s", v, v, v)
			}
			x.f("  if ((rc = write_slot(c, %d, %d, %s)) != %s_OK) return rc;", i, s, src, N)
		}
	}
	x.f("  c->step = first_step;")
	x.f("  return %s_OK;", N)
	x.f("}")
	x.f("")
	x.f("int %s_download(%s_ctx *c, %s) {", n, n, g.gridParams(false))
	x.f("  int rc;")
	x.f("  if (!c || %s) return %s_ERR_ARGUMENT;", strings.Join(nulls, " || "), N)
	for _, gr := range g.stateGrids() {
		v := g.gname[gr.Index]
		x.f("  if ((rc = read_slot(c, %d, 0, %s)) != %s_OK) return rc;", gr.Index, v, N)
		if gr.Levels > 1 {
			x.f("  if (%s_prev && (rc = read_slot(c, %d, 1, %s_prev)) != %s_OK) return rc;", v, gr.Index, v, N)
		}
	}
	x.f("  return %s_OK;", N)
	x.f("}")
	x.f("")
}

// rotateFunc is gpurun.Runner.rotate.
func (g *gen) rotateFunc(x *w) {
	x.f("/* After a launch that advanced k steps, the buffers written become the current ones. */")
	x.f("static void rotate(%s_ctx *c, int k) {", g.name)
	x.f("  slot_t *s, t, t1;")
	x.f("  (void)k; (void)t1;")
	for _, gr := range g.stateGrids() {
		x.f("  s = c->slot[%d]; /* %s */", gr.Index, gr.Name)
		switch {
		case gr.Levels == 1:
			x.f("  t = s[0]; s[0] = s[1]; s[1] = t;")
		case !g.multi:
			x.f("  t = s[2]; s[2] = s[1]; s[1] = s[0]; s[0] = t;")
		default:
			x.f("  if (k == 1) {")
			x.f("    t = s[2]; s[2] = s[1]; s[1] = s[0]; s[0] = t;")
			x.f("  } else {")
			x.f("    t = s[0]; t1 = s[1]; s[0] = s[2]; s[1] = s[3]; s[2] = t; s[3] = t1;")
			x.f("  }")
		}
	}
	x.f("}")
	x.f("")
}

func (g *gen) kernelIndex(k *kir.Kernel) int {
	for i, kk := range g.low.Module.Kernels {
		if kk == k {
			return i
		}
	}
	panic("internal error: kernel index")
}

// launchFunc writes launch_<i>: the launch grid from the run-time sizes, the arguments bound
// as gpurun binds them, and the launch.
func (g *gen) launchFunc(x *w, i int) {
	li := g.launches[i]
	k := li.kernel
	N := g.upper
	x.f("/* %s: %d step(s) per launch, blocks of %dx%dx%d threads. */", k.Name, li.Steps, li.Block[0], li.Block[1], li.Block[2])
	x.f("static int launch_%d(%s_ctx *c) {", i, g.name)
	usesChunk := false
	for _, dv := range li.div {
		if dv.Chunk {
			usesChunk = true
		}
	}
	for j, a := range li.Args {
		if a.Kind == lower.ArgConst && k.Params[j].Name == "chunk" {
			usesChunk = true
		}
	}
	if usesChunk {
		x.f("  int chunk = %d; /* the plan's chunk of the slowest axis; 0 or more than the axis: all of it */", g.chunk)
		x.f("  if (chunk <= 0 || chunk > c->n[0]) chunk = c->n[0];")
	}
	x.f("  size_t grid[3], block[3] = { %d, %d, %d };", li.Block[0], li.Block[1], li.Block[2])
	g.host.launchDecls(x, li)
	for dim, dv := range li.div {
		switch {
		case dv.Axis < 0:
			x.f("  grid[%d] = 1;", dim)
		case dv.Chunk && dv.Rim:
			x.f("  if (c->n[%d] > %d) /* blocks of their own for the first %d and the last %d planes */", dv.Axis, dv.RimLo+dv.RimHi, dv.RimLo, dv.RimHi)
			x.f("    grid[%d] = (size_t)(2 + ((int64_t)c->n[%d] - %d + chunk - 1) / chunk);", dim, dv.Axis, dv.RimLo+dv.RimHi)
			x.f("  else")
			x.f("    grid[%d] = (size_t)(((int64_t)c->n[%d] + chunk - 1) / chunk);", dim, dv.Axis)
		case dv.Chunk:
			x.f("  grid[%d] = (size_t)(((int64_t)c->n[%d] + chunk - 1) / chunk);", dim, dv.Axis)
		default:
			x.f("  grid[%d] = (size_t)(((int64_t)c->n[%d] + %d) / %d);", dim, dv.Axis, dv.By-1, dv.By)
		}
	}
	// Argument values.
	vals := make([]string, len(li.Args))
	for j, a := range li.Args {
		switch a.Kind {
		case lower.ArgBuffer:
			vals[j] = fmt.Sprintf("c->slot[%d][%d]", a.Grid, g.slotOf(a))
		case lower.ArgSize:
			vals[j] = fmt.Sprintf("c->n[%d]", a.Axis)
		case lower.ArgStep:
			vals[j] = "c->step"
		case lower.ArgLayers:
			vals[j] = fmt.Sprintf("c->layers[%d]", a.Grid)
		case lower.ArgConst:
			if k.Params[j].Name == "chunk" {
				vals[j] = "chunk"
			} else {
				vals[j] = fmt.Sprint(a.Value)
			}
		case lower.ArgParam:
			vals[j] = "c->p." + g.pname[a.Param]
		case lower.ArgRowsLo: // plan.Ranges: the generated code launches the whole axis
			vals[j] = "0"
		case lower.ArgRowsHi:
			vals[j] = "c->n[0]"
		default:
			panic("internal error: argument kind")
		}
	}
	g.host.launch(x, li, vals)
	x.f("  return %s_OK;", N)
	x.f("}")
	x.f("")
}

// advanceFunc covers the steps with the deepest launches first (gpurun.Runner.schedule), rotating
// the buffers after each launch.
func (g *gen) advanceFunc(x *w) {
	n, N := g.name, g.upper
	x.f("int %s_advance(%s_ctx *c, int steps, double *ms) {", n, n)
	x.f("  int rc;")
	g.host.timerDecl(x)
	x.f("  if (!c || steps < 0) return %s_ERR_ARGUMENT;", N)
	g.host.timerStart(x)
	for i, li := range g.launches {
		x.f("  while (steps >= %d) {", li.Steps)
		x.f("    if ((rc = launch_%d(c)) != %s_OK) return rc;", i, N)
		x.f("    rotate(c, %d);", li.Steps)
		x.f("    c->step += %d;", li.Steps)
		x.f("    steps -= %d;", li.Steps)
		x.f("  }")
	}
	x.f("  if (steps != 0) return %s_ERR_INTERNAL;", N)
	g.host.timerStop(x)
	x.f("  return %s_OK;", N)
	x.f("}")
	x.f("")
}
