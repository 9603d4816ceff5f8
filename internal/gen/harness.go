package gen

import (
	"fmt"
	"strings"

	"tempest/internal/ir"
)

// typeCode numbers element types for the harness's comparison and I/O.
func typeCode(t ir.Type) int {
	return map[ir.Type]int{ir.F32: 0, ir.F64: 1, ir.I32: 2, ir.I64: 3}[t]
}

// field names the harness's CPU copy of a grid level: g_<grid>_0 (current), _1 (previous),
// _next (being written).
func (g *gen) field(gr *ir.Grid, which string) string {
	return fmt.Sprintf("g_%s_%s", g.gname[gr.Index], which)
}

// ct is the C type the harness's CPU loop holds values of type t in: float in double while it
// emits the widened loop (widen).
func (g *gen) ct(t ir.Type) string {
	if g.widen && t == ir.F32 {
		return "double"
	}
	return cType(t)
}

// cpre names the CPU loop's state, readers and step: cpu_t, rd_*, cpu_step, or, widened,
// cpuw_t, rdw_*, cpuw_step.
func (g *gen) cpre() string {
	if g.widen {
		return "w"
	}
	return ""
}

// hasF32 says some grid holds float: the harness then runs its CPU loop widened too.
func (g *gen) hasF32() bool {
	for _, gr := range g.p.Grids {
		if gr.Type == ir.F32 {
			return true
		}
	}
	return false
}

func (g *gen) cpuExpr(coords []string) *cexpr {
	return &cexpr{
		wide:  g.widen,
		coord: func(a int) string { return coords[a] },
		size:  func(a int) string { return fmt.Sprintf("c->n[%d]", a) },
		step:  "c->step",
		param: func(p *ir.Param) string { return "c->p." + g.pname[p.Index] },
	}
}

// readers writes rd_<grid>_<level>: the value of a grid level at coordinates that may lie
// outside the domain, by the grid's boundary rules exactly as ref.Read applies them.
func (g *gen) readers(x *w) {
	d := g.p.Dims()
	for _, gr := range g.p.Grids {
		t := g.ct(gr.Type)
		for level := 0; level < gr.Levels; level++ {
			var ps []string
			if gr.Layers != nil {
				ps = append(ps, "int layer")
			}
			for a := 0; a < d; a++ {
				ps = append(ps, fmt.Sprintf("int q%d", a))
			}
			x.f("static inline %s rd%s_%s_%d(const cpu%s_t *c, const %s *a, %s) {", t, g.cpre(), g.gname[gr.Index], level, g.cpre(), t, strings.Join(ps, ", "))
			x.f("  int va = -1;")
			x.f("  int64_t idx = 0;")
			if gr.Layers != nil {
				x.f("  if (layer > c->layers[%d] - 1) layer = c->layers[%d] - 1;", gr.Index, gr.Index)
				x.f("  if (layer < 0) layer = 0;")
				x.f("  idx = (int64_t)layer * c->cells;")
			}
			for a := 0; a < d; a++ {
				n := fmt.Sprintf("c->n[%d]", a)
				q := fmt.Sprintf("q%d", a)
				x.f("  if (%s < 0 || %s >= %s) {", q, q, n)
				switch gr.BC[a].Kind {
				case ir.Periodic:
					x.f("    %s = (%s %% %s + %s) %% %s;", q, q, n, n, n)
				case ir.Clamp, ir.Fixed:
					x.f("    %s = %s < 0 ? 0 : %s - 1;", q, q, n)
				case ir.Mirror:
					x.f("    if (%s == 1) {", n)
					x.f("      %s = 0;", q)
					x.f("    } else {")
					x.f("      int period = 2 * %s - 2;", n)
					x.f("      %s %%= period;", q)
					x.f("      if (%s < 0) %s += period;", q, q)
					x.f("      if (%s >= %s) %s = period - %s;", q, n, q, q)
					x.f("    }")
				default:
					x.f("    if (va < 0) va = %d;", a)
				}
				x.f("  }")
			}
			idx := ""
			for a := 0; a < d; a++ {
				cl := fmt.Sprintf("(q%d < 0 ? 0 : q%d >= c->n[%d] ? c->n[%d] - 1 : q%d)", a, a, a, a, a)
				if a == 0 {
					idx = "(int64_t)" + cl
				} else {
					idx = fmt.Sprintf("(%s) * c->n[%d] + %s", idx, a, cl)
				}
			}
			x.f("  idx += %s;", idx)
			x.f("  if (va >= 0) {")
			x.f("    const %s edge = a[idx];", t)
			x.f("    (void)edge;")
			x.f("    switch (va) {")
			coords := make([]string, d)
			for a := range coords {
				coords[a] = fmt.Sprintf("q%d", a)
			}
			for a, bc := range gr.BC {
				if bc.Kind != ir.Constant && bc.Kind != ir.Edge {
					continue
				}
				ce := g.cpuExpr(coords)
				ce.edge = "edge"
				v := ce.convert(ce.expr(bc.Value), bc.Value.Type(), gr.Type)
				x.f("    case %d: return %s;", a, v)
			}
			x.f("    }")
			x.f("  }")
			x.f("  return a[idx];")
			x.f("}")
			x.f("")
		}
	}
}

// loops opens a loop nest over the cells (c0 slowest) with i the linear index; close with
// closeLoops.
func (g *gen) loops(x *w, indent string) {
	d := g.p.Dims()
	var cs []string
	for a := 0; a < d; a++ {
		cs = append(cs, fmt.Sprintf("c%d", a))
	}
	x.f("%sint64_t i = 0;", indent)
	x.f("%sint %s;", indent, strings.Join(cs, ", "))
	for a := 0; a < d; a++ {
		x.f("%s%sfor (c%d = 0; c%d < c->n[%d]; c%d++)%s", indent, strings.Repeat("  ", a), a, a, a, a, map[bool]string{true: " {", false: ""}[a == d-1])
	}
}

func (g *gen) closeLoops(x *w, indent string) {
	x.f("%s%s  i++;", indent, strings.Repeat("  ", g.p.Dims()-1))
	x.f("%s%s}", indent, strings.Repeat("  ", g.p.Dims()-1))
}

func (g *gen) coordNames() []string {
	cs := make([]string, g.p.Dims())
	for a := range cs {
		cs[a] = fmt.Sprintf("c%d", a)
	}
	return cs
}

// initFuncs write init_grids: the program's init and prev expressions (ref.Init), with rand()
// the same hash of seed, grid, level and cell.
func (g *gen) initFuncs(x *w) {
	x.f("/* Initial values from the program's init (and prev) expressions, as `tempest run` computes")
	x.f(" * them with --seed c->seed; grids without one start at zero. */")
	x.f("static void init_grids(cpu_t *c) {")
	for _, gr := range g.p.Grids {
		for level := 0; level < gr.Levels; level++ {
			e := gr.Init
			if level == 1 {
				e = gr.Prev
				if e == nil {
					x.f("  memcpy(c->%s, c->%s, (size_t)c->len[%d] * sizeof *c->%s);", g.field(gr, "1"), g.field(gr, "0"), gr.Index, g.field(gr, "0"))
					continue
				}
			}
			if e == nil {
				continue
			}
			x.f("  { /* %s, level %d */", gr.Name, level)
			x.f("    int l, layers = c->layers[%d] > 0 ? c->layers[%d] : 1;", gr.Index, gr.Index)
			g.loops(x, "    ")
			ce := g.cpuExpr(g.coordNames())
			lvl := level
			idx := gr.Index
			ce.rand = func(t ir.Type) string {
				if t == ir.F32 {
					return fmt.Sprintf("(float)tempest_rand(c->seed, %d, %d, i, 1)", idx, lvl)
				}
				return fmt.Sprintf("tempest_rand(c->seed, %d, %d, i, 0)", idx, lvl)
			}
			ind := "    " + strings.Repeat("  ", g.p.Dims())
			x.f("%sconst %s v = %s;", ind, cType(gr.Type), ce.convert(ce.expr(e), e.Type(), gr.Type))
			x.f("%sfor (l = 0; l < layers; l++) c->%s[l * c->cells + i] = v;", ind, g.field(gr, fmt.Sprint(level)))
			g.closeLoops(x, "    ")
			x.f("  }")
		}
	}
	x.f("}")
	x.f("")
}

// stepFunc writes cpu_step: one step of every update over every cell (ref.Step).
func (g *gen) stepFunc(x *w) {
	d := g.p.Dims()
	if g.widen {
		x.f("/* cpu_step computing in double what it computes in float. */")
	} else {
		x.f("/* One step of the program on the CPU: a plain loop over the cells, straight from the IR. */")
	}
	x.f("static void cpu%s_step(cpu%s_t *c) {", g.cpre(), g.cpre())
	g.loops(x, "  ")
	ind := "  " + strings.Repeat("  ", d)
	coords := g.coordNames()
	ce := g.cpuExpr(coords)
	ce.let = func(l *ir.Let) string { return "let_" + cName(l.Name) }
	ce.load = func(l *ir.Load) string {
		arr := "c->" + g.field(l.G, fmt.Sprint(l.Level))
		zero := true
		for _, o := range l.Off {
			if o != 0 {
				zero = false
			}
		}
		if zero && l.Layer == nil {
			return arr + "[i]"
		}
		var args []string
		if l.Layer != nil {
			args = append(args, ce.expr(l.Layer))
		}
		for a, o := range l.Off {
			switch {
			case o > 0:
				args = append(args, fmt.Sprintf("c%d + %d", a, o))
			case o < 0:
				args = append(args, fmt.Sprintf("c%d - %d", a, -o))
			default:
				args = append(args, fmt.Sprintf("c%d", a))
			}
		}
		return fmt.Sprintf("rd%s_%s_%d(c, %s, %s)", g.cpre(), g.gname[l.G.Index], l.Level, arr, strings.Join(args, ", "))
	}
	used := map[*ir.Let]bool{}
	for _, u := range g.p.Updates {
		ir.WalkDeep(u.Value, func(e ir.Expr) {
			if l, ok := e.(*ir.LetRef); ok {
				used[l.L] = true
			}
		})
	}
	for _, l := range g.p.Lets {
		if used[l] {
			x.f("%sconst %s let_%s = %s;", ind, g.ct(l.Value.Type()), cName(l.Name), ce.expr(l.Value))
		}
	}
	for _, u := range g.p.Updates {
		gr := u.Grid
		next := "c->" + g.field(gr, "next") + "[i]"
		val := ce.expr(u.Value)
		var rim []string
		for a, r := range gr.Rim {
			if r > 0 {
				rim = append(rim, fmt.Sprintf("c%d < %d || c%d >= c->n[%d] - %d", a, r, a, a, r))
			}
		}
		if len(rim) > 0 {
			x.f("%sif (%s) %s = c->%s[i];", ind, strings.Join(rim, " || "), next, g.field(gr, "0"))
			x.f("%selse %s = %s;", ind, next, val)
		} else {
			x.f("%s%s = %s;", ind, next, val)
		}
	}
	g.closeLoops(x, "  ")
	for _, gr := range g.stateGrids() {
		t := g.ct(gr.Type)
		if gr.Levels > 1 {
			x.f("  { %s *t = c->%s; c->%s = c->%s; c->%s = c->%s; c->%s = t; }", t, g.field(gr, "1"), g.field(gr, "1"), g.field(gr, "0"), g.field(gr, "0"), g.field(gr, "next"), g.field(gr, "next"))
		} else {
			x.f("  { %s *t = c->%s; c->%s = c->%s; c->%s = t; }", t, g.field(gr, "0"), g.field(gr, "0"), g.field(gr, "next"), g.field(gr, "next"))
		}
	}
	x.f("  c->step++;")
	x.f("}")
	x.f("")
}

// updatedCells is the C expression of the cells one step updates (rims excluded, averaged over
// the state grids: driver.UpdatedCells).
func (g *gen) updatedCells() string {
	var terms []string
	for _, gr := range g.stateGrids() {
		var fs []string
		for a := range g.p.Axes {
			r := gr.Rim[a]
			if r > 0 {
				fs = append(fs, fmt.Sprintf("(double)(sizes[%d] > %d ? sizes[%d] - %d : 0)", a, 2*r, a, 2*r))
			} else {
				fs = append(fs, fmt.Sprintf("(double)sizes[%d]", a))
			}
		}
		terms = append(terms, strings.Join(fs, " * "))
	}
	return fmt.Sprintf("(%s) / %d.0", strings.Join(terms, " + "), len(terms))
}

// harness is main.c or main.cu, the benchmark and check harness: a head (comment and
// includes), then the harness's code with the helpers it calls in between: the grids'
// tables, the CPU loop, utilities, parameters and sizes, and main.
func (g *gen) harness() string {
	head := &w{}
	g.harnessHead(head)
	x := &w{}
	g.harnessGrids(x)
	g.harnessCPU(x)
	g.harnessUtils(x)
	g.harnessParams(x)
	g.mainArgs(x)
	g.mainGrids(x)
	g.mainRun(x)
	g.mainCheck(x)
	return head.b.String() + helpersFor(x.b.String()) + x.b.String()
}

// harnessHead is the harness's comment (usage, raw file layout, timing) and its includes.
func (g *gen) harnessHead(x *w) {
	n, d := g.name, g.p.Dims()
	main := "main.c"
	if g.cuda() {
		main = "main.cu"
	}
	x.f("/* %s: benchmark and check harness for %s (%s), generated by Tempest. Do not edit.", main, g.p.Name, g.sourceName())
	x.f(" *")
	x.f(" * Usage: ./%s [-s SIZE] [-t STEPS] [-n REPS] [-c] [-i IN.raw] [-o OUT.raw] [-r SEED] [-p NAME=VALUE]...", n)
	x.f(" *   -s SIZE   extents, slowest axis first: %s, or one number for every axis (default %s)", strings.Repeat("N", d)[:1]+strings.Repeat("xN", d-1), g.sizeString(g.o.Shape))
	x.f(" *   -t STEPS  time steps (default 100)")
	x.f(" *   -n REPS   timed repetitions; the median is reported (default 5)")
	x.f(" *   -c        also run a plain C loop of the same update on the CPU and compare: max abs")
	x.f(" *             error; exit status 1 beyond 1e-4 relative (f32; or 16 times the loop's own drift")
	x.f(" *             from the same loop in double, where that is larger: updates that amplify")
	x.f(" *             rounding), 1e-10 (f64), any difference (ints)")
	x.f(" *   -i FILE   initial data from a raw file instead of the program's init expressions")
	x.f(" *   -o FILE   write the grids after the run to a raw file")
	x.f(" *   -r SEED   seed of rand() in init expressions (default 1, as tempest run)")
	x.f(" *   -p N=V    set a parameter")
	x.f(" * Raw files hold every grid in declaration order (%s), each in C order, the current", strings.Join(g.gridNamesList(), ", "))
	x.f(" * level followed by the previous one for two-level grids, layers first for layered grids, in")
	x.f(" * the machine's byte order. Initial data default to the program's init expressions, computed")
	x.f(" * exactly as `tempest run` does (same rand()), so results compare with `tempest run --out`.")
	x.f(" * Timing covers the launches only (no transfers), after one untimed warm-up. */")
	if !g.cuda() {
		x.f("#ifndef _POSIX_C_SOURCE")
		x.f("#define _POSIX_C_SOURCE 199309L")
		x.f("#endif")
	}
	x.f("#include <math.h>")
	x.f("#include <stdint.h>")
	x.f("#include <stdio.h>")
	x.f("#include <stdlib.h>")
	x.f("#include <string.h>")
	x.f("")
	x.f("#include \"%s.h\"", n)
	x.f("")
}

// harnessGrids is init expressions' rand() and the tables of the grids' names, levels, roles
// and element sizes (and types, with float grids).
func (g *gen) harnessGrids(x *w) {
	x.f("/* rand() of init expressions: SplitMix64 of seed, grid, level and cell (ref.Rand). */")
	x.f("static inline double tempest_rand(uint64_t seed, int grid, int level, int64_t linear, int f32) {")
	x.f("  uint64_t z = seed * 0x9E3779B97F4A7C15ULL ^ (uint64_t)(grid + 1) * 0xBF58476D1CE4E5B9ULL ^")
	x.f("               (uint64_t)(level + 1) * 0x94D049BB133111EBULL ^ (uint64_t)linear;")
	x.f("  z += 0x9E3779B97F4A7C15ULL;")
	x.f("  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;")
	x.f("  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;")
	x.f("  z ^= z >> 31;")
	x.f("  if (f32) return (double)(z >> 40) / 16777216.0;")
	x.f("  return (double)(z >> 11) / 9007199254740992.0;")
	x.f("}")
	x.f("")
	ng := len(g.p.Grids)
	x.f("#define NGRIDS %d", ng)
	x.f("static const char *const grid_names[NGRIDS] = { %s };", g.quotedGridNames())
	x.f("static const int grid_levels[NGRIDS] = { %s };", g.perGrid(func(gr *ir.Grid) string { return fmt.Sprint(gr.Levels) }))
	x.f("static const int grid_state[NGRIDS] = { %s };", g.perGrid(func(gr *ir.Grid) string { return boolInt(gr.Update != nil) }))
	x.f("static const int grid_elem[NGRIDS] = { %s };", g.perGrid(func(gr *ir.Grid) string { return fmt.Sprint(gr.Type.Size()) }))
	if g.hasF32() {
		x.f("static const int grid_type[NGRIDS] = { %s };", g.perGrid(func(gr *ir.Grid) string { return fmt.Sprint(typeCode(gr.Type)) }))
	}
	x.f("")
}

// harnessCPU is the plain C loop of the update (state, readers, init and step functions),
// and with float grids the same loop widened to double.
func (g *gen) harnessCPU(x *w) {
	g.cpuState(x)
	g.readers(x)
	g.initFuncs(x)
	g.stepFunc(x)
	if g.hasF32() {
		g.widen = true
		g.cpuState(x)
		g.readers(x)
		g.stepFunc(x)
		g.widen = false
	}
}

// harnessUtils are the harness's utilities: errors and usage, the median's comparison,
// comparing a device result with the CPU's, and allocation.
func (g *gen) harnessUtils(x *w) {
	n := g.name
	x.raw(`static void die(const char *what, int rc) {
  fprintf(stderr, "%s: %s: %s (code %d)\n", "` + n + `", what, ` + n + `_error(rc), rc);
  exit(2);
}

static void usage(void) {
  fprintf(stderr, "usage: ` + n + ` [-s SIZE] [-t STEPS] [-n REPS] [-c] [-i IN.raw] [-o OUT.raw] [-r SEED] [-p NAME=VALUE]\n");
  exit(2);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double get(const void *a, int type, int64_t i) {
  switch (type) {
  case 0: return ((const float *)a)[i];
  case 1: return ((const double *)a)[i];
  case 2: return ((const int32_t *)a)[i];
  }
  return (double)((const int64_t *)a)[i];
}

/* Compares a device result with the CPU's; returns 1 on a mismatch beyond the tolerance: the
 * relative one, or slack where that is larger (float grids: how far float rounding drifts). */
static int compare(const char *what, int type, const void *dev, const void *cpu, int64_t len, double slack, double *maxerr) {
  double scale = 1, tol = 0, worst = 0;
  int64_t i, bad = -1;
  if (type == 2 || type == 3) {
    for (i = 0; i < len; i++) {
      int64_t x = type == 2 ? ((const int32_t *)dev)[i] : ((const int64_t *)dev)[i];
      int64_t y = type == 2 ? ((const int32_t *)cpu)[i] : ((const int64_t *)cpu)[i];
      double e = fabs((double)x - (double)y);
      if (x != y && bad < 0) bad = i;
      if (e > worst) worst = e;
    }
  } else {
    for (i = 0; i < len; i++) {
      double y = get(cpu, type, i);
      if (!isinf(y) && !isnan(y) && fabs(y) > scale) scale = fabs(y);
    }
    tol = (type == 0 ? 1e-4 : 1e-10) * scale;
    if (slack > tol) tol = slack;
    for (i = 0; i < len; i++) {
      double x = get(dev, type, i), y = get(cpu, type, i), e;
      if (x == y || (isnan(x) && isnan(y))) continue;
      e = fabs(x - y);
      if (isnan(e)) e = INFINITY;
      if (e > worst) worst = e;
      if (e > tol && bad < 0) bad = i;
    }
  }
  if (worst > *maxerr) *maxerr = worst;
  if (bad >= 0) {
    fprintf(stderr, "mismatch in %s at element %lld: device %.17g, CPU %.17g (tolerance %.3g)\n",
            what, (long long)bad, get(dev, type, bad), get(cpu, type, bad), tol);
    return 1;
  }
  return 0;
}

static void *alloc(int64_t n, int elem) {
  void *p = calloc((size_t)n, (size_t)elem);
  if (!p) {
    fprintf(stderr, "out of host memory (%lld elements)\n", (long long)n);
    exit(2);
  }
  return p;
}

`)
}

// harnessParams are set_param (-p NAME=VALUE) and parse_size (-s SIZE).
func (g *gen) harnessParams(x *w) {
	n, d := g.name, g.p.Dims()
	x.f("static int set_param(%s_params *p, const char *kv) {", n)
	x.f("  const char *eq = strchr(kv, '=');")
	if len(g.p.Params) == 0 {
		x.f("  (void)p; (void)eq;")
	} else {
		x.f("  size_t len;")
		x.f("  if (!eq) return 0;")
		x.f("  len = (size_t)(eq - kv);")
	}
	for _, pr := range g.p.Params {
		conv := "strtod(eq + 1, NULL)"
		if pr.Type.IsInt() {
			conv = "strtoll(eq + 1, NULL, 10)"
		}
		x.f("  if (len == %d && strncmp(kv, \"%s\", len) == 0) { p->%s = (%s)%s; return 1; }", len(pr.Name), pr.Name, g.pname[pr.Index], cType(pr.Type), conv)
	}
	x.f("  return 0;")
	x.f("}")
	x.f("")
	x.f("static int parse_size(const char *s, int *sizes) {")
	x.f("  int a = 0;")
	x.f("  char *end;")
	x.f("  for (;;) {")
	x.f("    long v = strtol(s, &end, 10);")
	x.f("    if (end == s || v < 1 || v > 2147483647L || a == %d) return 0;", d)
	x.f("    sizes[a++] = (int)v;")
	x.f("    if (*end == 0) break;")
	x.f("    if (*end != 'x' && *end != 'X') return 0;")
	x.f("    s = end + 1;")
	x.f("  }")
	x.f("  if (a == 1) while (a < %d) { sizes[a] = sizes[0]; a++; }", d)
	x.f("  return a == %d;", d)
	x.f("}")
	x.f("")
}

// mainArgs begins main: its variables, then the command line.
func (g *gen) mainArgs(x *w) {
	n, d := g.name, g.p.Dims()
	x.f("int main(int argc, char **argv) {")
	x.f("  int sizes[%d] = { %s };", d, strings.Trim(strings.ReplaceAll(fmt.Sprint(g.o.Shape), " ", ", "), "[]"))
	x.f("  int steps = 100, reps = 5, check = 0, warm = %d, g, r, rc, bad = 0;", g.warmSteps())
	x.f("  const char *in = NULL, *out = NULL;")
	x.f("  uint64_t seed = 1;")
	x.f("  %s_params p = %s_default_params();", n, n)
	x.f("  void *init[NGRIDS][3], *res[NGRIDS][3];")
	x.f("  double *times, ms, cells, maxerr = 0, drift[NGRIDS];")
	x.f("  %s_ctx *ctx = NULL;", n)
	x.f("  cpu_t c;")
	x.f("  for (r = 1; r < argc; r++) {")
	x.f("    const char *a = argv[r];")
	x.f("    if (strcmp(a, \"-c\") == 0) { check = 1; continue; }")
	x.f("    if (a[0] != '-' || a[1] == 0 || a[2] != 0 || r + 1 >= argc) usage();")
	x.f("    switch (a[1]) {")
	x.f("    case 's': if (!parse_size(argv[++r], sizes)) { fprintf(stderr, \"-s %%s: write %%d extents like 512x512, or one\\n\", argv[r], %d); return 2; } break;", d)
	x.f("    case 't': steps = atoi(argv[++r]); if (steps < 0) usage(); break;")
	x.f("    case 'n': reps = atoi(argv[++r]); if (reps < 1) usage(); break;")
	x.f("    case 'i': in = argv[++r]; break;")
	x.f("    case 'o': out = argv[++r]; break;")
	x.f("    case 'r': seed = strtoull(argv[++r], NULL, 10); break;")
	x.f("    case 'p': if (!set_param(&p, argv[++r])) { fprintf(stderr, \"-p %%s: no such parameter\\n\", argv[r]); return 2; } break;")
	x.f("    default: usage();")
	x.f("    }")
	x.f("  }")
}

// mainGrids allocates the grids' initial and result arrays and fills the initial ones, from
// the -i file or the init expressions.
func (g *gen) mainGrids(x *w) {
	n, d := g.name, g.p.Dims()
	x.f("  memset(&c, 0, sizeof c);")
	x.f("  memset(init, 0, sizeof init);")
	x.f("  memset(res, 0, sizeof res);")
	x.f("  c.p = p;")
	x.f("  c.seed = seed;")
	x.f("  c.cells = 1;")
	x.f("  for (g = 0; g < %d; g++) { c.n[g] = sizes[g]; c.cells *= sizes[g]; }", d)
	x.f("  for (g = 0; g < NGRIDS; g++) {")
	x.f("    int l;")
	x.f("    c.len[g] = %s_grid_len(grid_names[g], sizes, &p);", n)
	x.f("    if (c.len[g] < 0) die(grid_names[g], (int)c.len[g]);")
	x.f("    c.layers[g] = c.len[g] == c.cells ? 0 : (int)(c.len[g] / c.cells);")
	x.f("    for (l = 0; l < grid_levels[g]; l++) {")
	x.f("      init[g][l] = alloc(c.len[g], grid_elem[g]);")
	x.f("      if (grid_state[g]) res[g][l] = alloc(c.len[g], grid_elem[g]);")
	x.f("    }")
	x.f("  }")
	for _, gr := range g.p.Grids {
		if gr.Layers != nil {
			// A layered grid of one layer has len == cells; its layer count still matters.
			x.f("  c.layers[%d] = (int)(c.len[%d] / c.cells);", gr.Index, gr.Index)
		}
	}
	x.f("  if (in) {")
	x.f("    FILE *f = fopen(in, \"rb\");")
	x.f("    if (!f) { perror(in); return 2; }")
	x.f("    for (g = 0; g < NGRIDS; g++)")
	x.f("      for (r = 0; r < grid_levels[g]; r++)")
	x.f("        if (fread(init[g][r], (size_t)grid_elem[g], (size_t)c.len[g], f) != (size_t)c.len[g]) {")
	x.f("          fprintf(stderr, \"%%s: too short for grid %%s at this size (layout: see main's comment)\\n\", in, grid_names[g]);")
	x.f("          return 2;")
	x.f("        }")
	x.f("    if (fgetc(f) != EOF) { fprintf(stderr, \"%%s: longer than the grids at this size\\n\", in); return 2; }")
	x.f("    fclose(f);")
	x.f("  } else {")
	x.f("    void *lv[NGRIDS][3];")
	x.f("    for (g = 0; g < NGRIDS; g++) { lv[g][0] = init[g][0]; lv[g][1] = init[g][1]; lv[g][2] = NULL; }")
	x.f("    cpu_bind(&c, lv);")
	x.f("    init_grids(&c);")
	x.f("  }")
}

// mainRun runs the program on the device (one warm-up, then the timed repetitions), prints
// the median time and throughput, and writes the -o file.
func (g *gen) mainRun(x *w) {
	n, N, d := g.name, g.upper, g.p.Dims()
	for _, gr := range g.inputGrids() {
		x.f("  if ((rc = %s_set_data(\"%s\", init[%d][0])) != %s_OK) die(\"set_data\", rc);", n, cString(gr.Name), gr.Index, N)
	}
	upArgs := g.harnessGridArgs("init", true)
	downArgs := g.harnessGridArgs("res", false)
	x.f("  if ((rc = %s_create(&ctx, sizes, &p)) != %s_OK) die(\"create\", rc);", n, N)
	x.f("  if (warm > steps) warm = steps;")
	x.f("  if ((rc = %s_upload(ctx, %s, 0)) != %s_OK) die(\"upload\", rc);", n, upArgs, N)
	x.f("  if ((rc = %s_advance(ctx, warm, NULL)) != %s_OK) die(\"warm-up\", rc);", n, N)
	x.f("  times = (double *)alloc(reps, sizeof(double));")
	x.f("  for (r = 0; r < reps; r++) {")
	x.f("    if ((rc = %s_upload(ctx, %s, 0)) != %s_OK) die(\"upload\", rc);", n, upArgs, N)
	x.f("    if ((rc = %s_advance(ctx, steps, &times[r])) != %s_OK) die(\"run\", rc);", n, N)
	x.f("  }")
	x.f("  if ((rc = %s_download(ctx, %s)) != %s_OK) die(\"download\", rc);", n, downArgs, N)
	x.f("  %s_destroy(ctx);", n)
	x.f("  qsort(times, (size_t)reps, sizeof(double), cmp_double);")
	x.f("  ms = reps %% 2 ? times[reps / 2] : (times[reps / 2 - 1] + times[reps / 2]) / 2;")
	x.f("  cells = %s * (double)steps;", g.updatedCells())
	sizeFmt := strings.TrimSuffix(strings.Repeat("%dx", d), "x")
	var sizeArgs []string
	for a := 0; a < d; a++ {
		sizeArgs = append(sizeArgs, fmt.Sprintf("sizes[%d]", a))
	}
	x.f("  printf(\"%s: %s, %%d steps, %s, plan %s\\n\", %s, steps);", g.p.Name, sizeFmt, g.targetName(), g.o.Plan, strings.Join(sizeArgs, ", "))
	x.f("  printf(\"time: median %%.3f ms of %%d runs (min %%.3f, max %%.3f), %%.3f GCells/s\\n\", ms, reps, times[0], times[reps - 1],")
	x.f("         ms > 0 ? cells / (ms * 1e-3) / 1e9 : 0.0);")
	x.f("  if (out) {")
	x.f("    FILE *f = fopen(out, \"wb\");")
	x.f("    if (!f) { perror(out); return 2; }")
	x.f("    for (g = 0; g < NGRIDS; g++)")
	x.f("      for (r = 0; r < grid_levels[g]; r++)")
	x.f("        if (fwrite(grid_state[g] ? res[g][r] : init[g][r], (size_t)grid_elem[g], (size_t)c.len[g], f) != (size_t)c.len[g]) { perror(out); return 2; }")
	x.f("    if (fclose(f) != 0) { perror(out); return 2; }")
	x.f("  }")
}

// mainCheck ends main with the -c check: the CPU loop's steps from the same start, compared
// with the device's result of every state grid.
func (g *gen) mainCheck(x *w) {
	x.f("  if (check) {")
	x.f("    void *lv[NGRIDS][3];")
	x.f("    for (g = 0; g < NGRIDS; g++) {")
	x.f("      for (r = 0; r < 3; r++) lv[g][r] = NULL;")
	x.f("      for (r = 0; r < grid_levels[g]; r++) {")
	x.f("        lv[g][r] = init[g][r];")
	x.f("        if (grid_state[g]) {")
	x.f("          lv[g][r] = alloc(c.len[g], grid_elem[g]);")
	x.f("          memcpy(lv[g][r], init[g][r], (size_t)c.len[g] * grid_elem[g]);")
	x.f("        }")
	x.f("      }")
	x.f("      if (grid_state[g]) lv[g][2] = alloc(c.len[g], grid_elem[g]);")
	x.f("    }")
	x.f("    cpu_bind(&c, lv);")
	x.f("    c.step = 0;")
	x.f("    for (r = 0; r < steps; r++) cpu_step(&c);")
	x.f("    for (g = 0; g < NGRIDS; g++) drift[g] = 0;")
	g.checkDrift(x)
	for _, gr := range g.stateGrids() {
		x.f("    bad |= compare(\"%s\", %d, res[%d][0], c.%s, c.len[%d], 16 * drift[%d], &maxerr);", cString(gr.Name), typeCode(gr.Type), gr.Index, g.field(gr, "0"), gr.Index, gr.Index)
		if gr.Levels > 1 {
			x.f("    bad |= compare(\"%s (previous level)\", %d, res[%d][1], c.%s, c.len[%d], 16 * drift[%d], &maxerr);", cString(gr.Name), typeCode(gr.Type), gr.Index, g.field(gr, "1"), gr.Index, gr.Index)
		}
	}
	x.f("    printf(\"check against the CPU loop: max abs error %%.3g: %%s\\n\", maxerr, bad ? \"MISMATCH\" : \"ok\");")
	x.f("    if (bad) return 1;")
	x.f("  }")
	x.f("  return 0;")
	x.f("}")
}

// checkDrift measures, with float grids, how far the CPU loop drifts in float from the same
// loop in double (drift[g]), which widens the check's tolerance.
func (g *gen) checkDrift(x *w) {
	if !g.hasF32() {
		return
	}
	// The same steps in double from the same start: an update that amplifies rounding
	// differences (gradient2d's 1/sqrt of small sums of squares) drifts far in float
	// whatever computes it, and the device's rounding (fast math's approximate division
	// and square root, reordered sums, FMAs) differs from the loop's by a few times the
	// loop's own. So float grids allow 16 times the loop's largest drift from double.
	x.f("    {")
	x.f("      cpuw_t cw;")
	x.f("      void *lw[NGRIDS][3];")
	x.f("      int64_t i;")
	x.f("      memcpy(cw.n, c.n, sizeof cw.n);")
	x.f("      memcpy(cw.len, c.len, sizeof cw.len);")
	x.f("      memcpy(cw.layers, c.layers, sizeof cw.layers);")
	x.f("      cw.cells = c.cells;")
	x.f("      cw.seed = c.seed;")
	x.f("      cw.p = c.p;")
	x.f("      cw.step = 0;")
	x.f("      for (g = 0; g < NGRIDS; g++) {")
	x.f("        for (r = 0; r < 3; r++) lw[g][r] = NULL;")
	x.f("        for (r = 0; r < grid_levels[g] + (grid_state[g] ? 1 : 0); r++) {")
	x.f("          int wl = r < grid_levels[g] ? r : 2;")
	x.f("          if (grid_type[g] == 0) {")
	x.f("            double *dst = (double *)alloc(c.len[g], 8);")
	x.f("            if (wl < 2)")
	x.f("              for (i = 0; i < c.len[g]; i++) dst[i] = ((const float *)init[g][r])[i];")
	x.f("            lw[g][wl] = dst;")
	x.f("          } else {")
	x.f("            lw[g][wl] = alloc(c.len[g], grid_elem[g]);")
	x.f("            if (wl < 2) memcpy(lw[g][wl], init[g][r], (size_t)c.len[g] * grid_elem[g]);")
	x.f("          }")
	x.f("        }")
	x.f("      }")
	x.f("      cpuw_bind(&cw, lw);")
	x.f("      for (r = 0; r < steps; r++) cpuw_step(&cw);")
	for _, gr := range g.stateGrids() {
		if gr.Type != ir.F32 {
			continue
		}
		for level := 0; level < gr.Levels; level++ {
			f := g.field(gr, fmt.Sprint(level))
			x.f("      for (i = 0; i < c.len[%d]; i++) {", gr.Index)
			x.f("        double e = fabs((double)c.%s[i] - cw.%s[i]);", f, f)
			x.f("        if (e > drift[%d] && !isnan(e) && !isinf(e)) drift[%d] = e;", gr.Index, gr.Index)
			x.f("      }")
		}
	}
	x.f("    }")
}

// cpuState writes the CPU loop's state (cpu_t, or widened cpuw_t) and cpu_bind, which points it
// at level arrays.
func (g *gen) cpuState(x *w) {
	n := g.name
	d := g.p.Dims()
	x.f("typedef struct {")
	x.f("  int n[%d];", d)
	x.f("  int64_t cells;")
	x.f("  int64_t len[NGRIDS];")
	x.f("  int layers[NGRIDS];")
	x.f("  int step;")
	x.f("  uint64_t seed;")
	x.f("  %s_params p;", n)
	for _, gr := range g.p.Grids {
		t := g.ct(gr.Type)
		fs := []string{"*" + g.field(gr, "0")}
		if gr.Levels > 1 {
			fs = append(fs, "*"+g.field(gr, "1"))
		}
		if gr.Update != nil {
			fs = append(fs, "*"+g.field(gr, "next"))
		}
		x.f("  %s %s;", t, strings.Join(fs, ", "))
	}
	x.f("} cpu%s_t;", g.cpre())
	x.f("")
	x.f("/* Points the CPU state at level arrays: lv[g][0] current, lv[g][1] previous, lv[g][2] next. */")
	x.f("static void cpu%s_bind(cpu%s_t *c, void *lv[NGRIDS][3]) {", g.cpre(), g.cpre())
	for _, gr := range g.p.Grids {
		t := g.ct(gr.Type)
		x.f("  c->%s = (%s *)lv[%d][0];", g.field(gr, "0"), t, gr.Index)
		if gr.Levels > 1 {
			x.f("  c->%s = (%s *)lv[%d][1];", g.field(gr, "1"), t, gr.Index)
		}
		if gr.Update != nil {
			x.f("  c->%s = (%s *)lv[%d][2];", g.field(gr, "next"), t, gr.Index)
		}
	}
	x.f("}")
	x.f("")
}

// warmSteps runs each kernel of the schedule once.
func (g *gen) warmSteps() int {
	s := 0
	for _, l := range g.launches {
		s += l.Steps
	}
	return s
}

func (g *gen) gridNamesList() []string {
	var s []string
	for _, gr := range g.p.Grids {
		s = append(s, gr.Name)
	}
	return s
}

// harnessGridArgs passes arr[g][0] (and [1]) for every state grid, cast to the API's types.
func (g *gen) harnessGridArgs(arr string, isConst bool) string {
	var as []string
	c := ""
	if isConst {
		c = "const "
	}
	for _, gr := range g.stateGrids() {
		t := cType(gr.Type)
		as = append(as, fmt.Sprintf("(%s%s *)%s[%d][0]", c, t, arr, gr.Index))
		if gr.Levels > 1 {
			as = append(as, fmt.Sprintf("(%s%s *)%s[%d][1]", c, t, arr, gr.Index))
		}
	}
	return strings.Join(as, ", ")
}
