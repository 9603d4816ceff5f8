package plan

import "cmp"

// ClusterPushes lists the neighbours a block of an n5d plan in clusters stores cells into, for
// a program of dims dimensions whose in-plane reads of state grids are at offsets reads (full
// offsets, the streamed axis first). A neighbour is a direction: -1, 0 or 1 along each
// in-plane axis the cluster spans (y and x in 3D, x in 2D), 0 elsewhere. A block pushes into
// the neighbour at e where some read reaches across their shared edge: its offset points
// against e along every axis e moves along. The lowering emits the stores and the model
// prices them from this one list, in this order (the outer axis slowest, -1 before +1), so
// that the two agree.
func (pl Plan) ClusterPushes(dims int, reads [][]int) [][]int {
	cx, cy := pl.Cluster()
	X, Y := dims-1, dims-2
	span := map[int]int{X: cx}
	axes := []int{X}
	if dims == 3 {
		span[Y] = cy
		axes = []int{Y, X}
	}
	needed := func(e []int) bool {
		for _, off := range reads {
			ok := true
			for _, a := range axes {
				if e[a] != 0 && cmp.Compare(off[a], 0) != -e[a] {
					ok = false
				}
			}
			if ok {
				return true
			}
		}
		return false
	}
	var out [][]int
	e := make([]int, dims)
	var enum func(k int)
	enum = func(k int) {
		if k == len(axes) {
			moves := false
			for _, v := range e {
				moves = moves || v != 0
			}
			if moves && needed(e) {
				out = append(out, append([]int(nil), e...))
			}
			return
		}
		for _, v := range []int{-1, 0, 1} {
			if v != 0 && span[axes[k]] == 1 {
				continue
			}
			e[axes[k]] = v
			enum(k + 1)
		}
		e[axes[k]] = 0
	}
	enum(0)
	return out
}
