package lower

import (
	"tempest/internal/analysis"
	"tempest/internal/ir"
	"tempest/internal/plan"
)

// Arithmetic is the floating-point work per cell and step that pl's kernels issue for p, as
// the performance model needs it: the updates after the rewrites Lower applies for the plan
// (fast math's folded scales and factored boxes), counted once per distinct subexpression as
// the compiler's common subexpression elimination leaves them (analysis.DistinctOps). For
// inplane, each plane's terms towards every output it feeds are computed once per plane from
// the shared plane, plus one accumulation per term, so the count is over the parts of every
// z offset with their planes taken as one. ok is false where pl cannot lower p in that way
// (the caller keeps its own count).
func Arithmetic(p *ir.Program, pl plan.Plan) (ops analysis.Ops, ok bool) {
	p = rewritten(p, pl)
	if pl.Strategy == plan.InPlane {
		parts, _, err := inPlaneParts(p, pl)
		if err != nil {
			return ops, false
		}
		var es []ir.Expr
		acc := 0
		for _, m := range parts {
			for _, e := range m { // the count of distinct terms does not depend on their order
				es = append(es, e)
			}
			acc += len(m) - 1
		}
		ops = analysis.DistinctOps(es, true)
		ops.Add += acc
		return ops, true
	}
	es := make([]ir.Expr, len(p.Updates))
	for i, u := range p.Updates {
		es[i] = u.Value
	}
	return analysis.DistinctOps(es, false), true
}
