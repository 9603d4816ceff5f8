package analysis

import (
	"fmt"
	"strings"

	"tempest/internal/ir"
)

// DistinctOps counts the operations of es as a compiler issues them after common
// subexpression elimination: a subexpression written twice (the same operation on the same
// operands, structurally) counts once, however often and in whichever of es it appears. Lets
// are entered once each. With sameAxis0, loads that differ only in their offset along axis
// 0 are the same value: the in-plane method sums each plane's contributions to the outputs
// of every z-offset from one shared plane, so what those contributions share is computed once
// per plane (box stencils whose coefficients fast math factored into sums of the plane's
// rows: box3d4r's inplane kernel issues about a ninth of the FLOPs its formula has, and the
// tree count, which sees none of this, ranked it below a plan four times slower).
func DistinctOps(es []ir.Expr, sameAxis0 bool) Ops {
	d := &distinct{seen: map[string]bool{}, keys: map[ir.Expr]string{}, lets: map[*ir.Let]string{}, sameAxis0: sameAxis0}
	for _, e := range es {
		d.key(e)
	}
	return d.ops
}

type distinct struct {
	seen      map[string]bool
	keys      map[ir.Expr]string
	lets      map[*ir.Let]string
	sameAxis0 bool
	ops       Ops
}

// key is e's structural key, counting e's own operation the first time the key is seen.
func (d *distinct) key(e ir.Expr) string {
	if k, ok := d.keys[e]; ok {
		return k
	}
	var k string
	switch x := e.(type) {
	case *ir.Const:
		k = "c" + x.V.T.String() + ":" + x.V.String()
	case *ir.Load:
		off := x.Off
		if d.sameAxis0 && len(off) > 0 {
			off = append([]int{0}, off[1:]...)
		}
		k = fmt.Sprintf("L%d.%d%v", x.G.Index, x.Level, off)
		if x.Layer != nil {
			k += "[" + d.key(x.Layer) + "]"
		}
	case *ir.ParamRef:
		k = "p" + x.P.Name
	case *ir.LetRef:
		lk, ok := d.lets[x.L]
		if !ok {
			lk = d.key(x.L.Value)
			d.lets[x.L] = lk
		}
		k = lk
	default:
		kids := ir.Children(e)
		parts := make([]string, len(kids))
		for i, c := range kids {
			parts[i] = d.key(c)
		}
		k = fmt.Sprintf("%T%s(%s)", e, opName(e), strings.Join(parts, ","))
		if !d.seen[k] {
			countNode(e, &d.ops) // its operands were counted above, once each
		}
	}
	d.seen[k] = true
	d.keys[e] = k
	return k
}

// opName tells apart the operations of one node type.
func opName(e ir.Expr) string {
	switch x := e.(type) {
	case *ir.Unary:
		return x.Op + x.T.String()
	case *ir.Binary:
		return x.Op + x.T.String()
	case *ir.Call:
		return x.Fn + x.T.String()
	case *ir.Select:
		return x.T.String()
	case *ir.Convert:
		return x.To.String()
	}
	return ""
}
