package plan

import (
	"fmt"
	"slices"
	"strings"
)

// param is one plan parameter: its key in plan text, the strategies that take it, its field,
// when String writes it, and the least value Parse accepts. Params is the one list Parse,
// String and the unknown-key message read, so a parameter is added in one place.
type param struct {
	key string
	// parse: the strategies whose text may set it (nil: every strategy); print: those whose
	// String may write it (nil: as parse).
	parse, print []string
	num          func(*Plan) *int  // a whole number, or
	flag         func(*Plan) *bool // a switch
	// show says whether String writes it (nil: a number when positive, a switch when on).
	show  func(Plan) bool
	least int // the smallest number accepted (leastValue)
}

var (
	n5dOnly     = []string{"n5d"}
	inplaneOnly = []string{"inplane"}
)

// Params are the plan parameters in the order String writes them.
var Params = []param{
	{key: "bx", num: func(p *Plan) *int { return &p.BX }, show: func(Plan) bool { return true }, least: 1},
	{key: "by", num: func(p *Plan) *int { return &p.BY }, show: func(p Plan) bool { return p.BY > 1 || p.Strategy != "naive" }, least: 1},
	{key: "bz", num: func(p *Plan) *int { return &p.BZ }, show: func(p Plan) bool { return p.BZ > 1 }, least: 1},
	{key: "ph", num: func(p *Plan) *int { return &p.PH }, print: []string{"pyramid"}, show: func(Plan) bool { return true }, least: 1},
	{key: "bt", num: func(p *Plan) *int { return &p.BT }, print: n5dOnly, show: func(Plan) bool { return true }, least: 1},
	{key: "rx", parse: n5dOnly, num: func(p *Plan) *int { return &p.RX }, show: func(p Plan) bool { return p.RX > 1 }, least: 1},
	{key: "ry", parse: n5dOnly, num: func(p *Plan) *int { return &p.RY }, show: func(p Plan) bool { return p.RY > 1 }, least: 1},
	// Written out either way: wave order is the default, so the text must say it is off.
	{key: "wave", parse: n5dOnly, flag: func(p *Plan) *bool { return &p.Wave }, show: func(Plan) bool { return true }},
	{key: "shfl", parse: n5dOnly, flag: func(p *Plan) *bool { return &p.Shfl }},
	{key: "pf", parse: n5dOnly, num: func(p *Plan) *int { return &p.Prefetch }, show: func(p Plan) bool { return p.Prefetch > 1 }},
	{key: "vec", parse: n5dOnly, num: func(p *Plan) *int { return &p.Vec }, show: func(p Plan) bool { return p.Vec == 1 }, least: 1},
	{key: "async", parse: n5dOnly, num: func(p *Plan) *int { return &p.Async }},
	{key: "cx", parse: n5dOnly, num: func(p *Plan) *int { return &p.CX }, show: func(p Plan) bool { return p.CX > 1 }, least: 1},
	{key: "cy", parse: n5dOnly, num: func(p *Plan) *int { return &p.CY }, show: func(p Plan) bool { return p.CY > 1 }, least: 1},
	{key: "unroll", parse: n5dOnly, num: func(p *Plan) *int { return &p.Unroll }},
	{key: "phased", parse: n5dOnly, flag: func(p *Plan) *bool { return &p.Phased }},
	{key: "rimcut", parse: n5dOnly, flag: func(p *Plan) *bool { return &p.RimCut }},
	{key: "rimblocks", parse: n5dOnly, flag: func(p *Plan) *bool { return &p.RimBlocks }},
	{key: "edges", parse: n5dOnly, flag: func(p *Plan) *bool { return &p.Edges }},
	{key: "edgesfirst", parse: n5dOnly, flag: func(p *Plan) *bool { return &p.EdgesFirst }},
	{key: "unclamped", parse: n5dOnly, flag: func(p *Plan) *bool { return &p.Unclamped }},
	{key: "shrink", parse: n5dOnly, flag: func(p *Plan) *bool { return &p.Shrink }},
	{key: "ascend", parse: n5dOnly, flag: func(p *Plan) *bool { return &p.Ascend }},
	{key: "split", parse: n5dOnly, flag: func(p *Plan) *bool { return &p.Split }},
	{key: "constsize", parse: n5dOnly, flag: func(p *Plan) *bool { return &p.ConstSize }},
	{key: "chain", parse: n5dOnly, flag: func(p *Plan) *bool { return &p.Chain }},
	{key: "load", parse: inplaneOnly, num: func(p *Plan) *int { return &p.Load }, show: func(Plan) bool { return true }},
	{key: "rx", parse: inplaneOnly, num: func(p *Plan) *int { return &p.RX }, show: func(Plan) bool { return true }, least: 1},
	{key: "ry", parse: inplaneOnly, num: func(p *Plan) *int { return &p.RY }, show: func(Plan) bool { return true }, least: 1},
	{key: "vec", parse: inplaneOnly, num: func(p *Plan) *int { return &p.Vec }, show: func(Plan) bool { return true }, least: 1},
	{key: "chunk", num: func(p *Plan) *int { return &p.Chunk }},
	{key: "maxregs", num: func(p *Plan) *int { return &p.MaxRegs }},
	{key: "fastmath", flag: func(p *Plan) *bool { return &p.FastMath }},
	{key: "keepscale", flag: func(p *Plan) *bool { return &p.KeepScale }},
	{key: "centrefirst", flag: func(p *Plan) *bool { return &p.CentreFirst }},
}

// parsedBy says whether strategy's plan text may set q.
func (q param) parsedBy(strategy string) bool {
	return q.parse == nil || slices.Contains(q.parse, strategy)
}

// printedFor says whether String may write q for strategy.
func (q param) printedFor(strategy string) bool {
	if q.print != nil {
		return slices.Contains(q.print, strategy)
	}
	return q.parsedBy(strategy)
}

// shown says whether String writes q for pl.
func (q param) shown(pl Plan) bool {
	switch {
	case !q.printedFor(pl.Strategy):
		return false
	case q.show != nil:
		return q.show(pl)
	case q.num != nil:
		return *q.num(&pl) > 0
	}
	return *q.flag(&pl)
}

// text is q as String writes it.
func (q param) text(pl Plan) string {
	if q.num != nil {
		return fmt.Sprintf("%s=%d", q.key, *q.num(&pl))
	}
	return fmt.Sprintf("%s=%t", q.key, *q.flag(&pl))
}

// paramFor is strategy's parameter of that key.
func paramFor(strategy, key string) (param, bool) {
	for _, q := range Params {
		if q.key == key && q.parsedBy(strategy) {
			return q, true
		}
	}
	return param{}, false
}

// Help says, for the command line, which plans exist and which keys each takes, from the
// same lists Parse reads.
func Help() string {
	var common, n5d, inplane []string
	for _, q := range Params {
		switch {
		case q.parse == nil:
			common = append(common, q.key)
		case slices.Equal(q.parse, n5dOnly):
			n5d = append(n5d, q.key)
		case slices.Equal(q.parse, inplaneOnly):
			inplane = append(inplane, q.key)
		}
	}
	return fmt.Sprintf("%s or wavefront (n5d:bt=2,wave=true), as plan:key=value,... (e.g. n5d:bt=8,rx=2); every plan takes %s; n5d also %s; inplane also %s",
		strings.Join(Strategies, ", "), strings.Join(common, ", "), strings.Join(n5d, ", "), strings.Join(inplane, ", "))
}
