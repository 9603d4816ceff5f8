package lower

import (
	"sort"

	"tempest/internal/ir"
	"tempest/internal/plan"
)

// EvaluationOrder is p with every update written in the order pl's kernels evaluate it, for
// error bounds (errbound) that must follow the arithmetic a plan really does. Only n5d with
// partial sums regroups a sum, exact math or not: the parts of each plane of the streaming
// axis (in their written order) are added plane by plane, the lowest offset first, and the
// coefficient applied last. Fast math's own rewrites (folded scales, fused products, terms
// chained onto the partial sums) are not applied here: the reference keeps the written
// arithmetic within each part, so that verify still checks them, within fast math's looser
// bound. Every other plan evaluates the program as written, and p itself is returned.
func EvaluationOrder(p *ir.Program, pl plan.Plan) *ir.Program {
	if s, err := loweringOf(pl); err == nil && s.order != nil {
		return s.order(p, pl)
	}
	return p
}

// n5dEvaluationOrder is EvaluationOrder of n5d's kernels: the parts of each plane of the
// streaming axis summed plane by plane where the lowering takes partial sums.
func n5dEvaluationOrder(p *ir.Program, pl plan.Plan) *ir.Program {
	q := orderSquares(p)
	sums, assoc := n5dAssociative(q)
	if !assoc || !n5dPartialSums(q) {
		return p
	}
	ups := make([]*ir.Update, len(q.Updates))
	for ui, u := range q.Updates {
		s := sums[ui]
		keys := make([]int, 0, len(s.parts))
		for o := range s.parts {
			keys = append(keys, o)
		}
		sort.Ints(keys)
		var v ir.Expr
		for _, o := range keys {
			if v == nil {
				v = s.parts[o]
			} else {
				v = &ir.Binary{Op: "+", X: v, Y: s.parts[o], T: u.Value.Type()}
			}
		}
		if s.op != "" {
			v = &ir.Binary{Op: s.op, X: v, Y: s.coef, T: u.Value.Type()}
		}
		ups[ui] = &ir.Update{Grid: u.Grid, Value: v}
	}
	r := *q
	r.Updates = ups
	return &r
}
