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
	least int // the smallest number Parse accepts
	// valid is the values Validate accepts for the strategies that take it (nil: any);
	// a plan built in code rather than parsed may hold others.
	valid *valid
}

// valid is a parameter's values that Validate accepts, lo..hi or one of oneOf, and the message
// for the others.
type valid struct {
	lo, hi int
	// hiDims bounds the value per grid dimensions where the grid decides (bt), over hi.
	hiDims map[int]int
	oneOf  []int
	// says is the message after "plan <plan>: ", where {hi} and {d} stand for the bound and
	// the grid's dimensions.
	says string
}

// upTo is the values lo..hi, with its message.
func upTo(lo, hi int, says string) *valid { return &valid{lo: lo, hi: hi, says: says} }

// validate says why pl's value of q is out of its range, for a grid of d dimensions (nil:
// within it, or not a parameter of pl's strategy).
func (q param) validate(pl Plan, d int) error {
	if q.valid == nil || q.num == nil || !q.printedFor(pl.Strategy) {
		return nil
	}
	v, n := q.valid, *q.num(&pl)
	hi := v.hi
	if h, ok := v.hiDims[d]; ok {
		hi = h
	}
	ok := n >= v.lo && (hi == 0 || n <= hi)
	if v.oneOf != nil {
		ok = slices.Contains(v.oneOf, n)
	}
	if ok {
		return nil
	}
	says := strings.NewReplacer("{hi}", fmt.Sprint(hi), "{d}", fmt.Sprint(d)).Replace(v.says)
	return fmt.Errorf("plan %s: %s", pl, says)
}

// blockSizes is the range of the block sizes bx, by and bz.
var blockSizes = upTo(1, 0, "block sizes must be at least 1")

var (
	n5dOnly     = []string{N5D}
	inplaneOnly = []string{InPlane}
	// registerTile is the range of each side of inplane's register tile (its area is
	// inplaneCheck's).
	registerTile = upTo(1, 32, "the register tile rx x ry must be 1..32 outputs")
)

// Params are the plan parameters in the order String writes them.
var Params = []param{
	{key: "bx", num: func(p *Plan) *int { return &p.BX }, show: func(Plan) bool { return true }, least: 1, valid: blockSizes},
	{key: "by", num: func(p *Plan) *int { return &p.BY }, show: func(p Plan) bool { return p.BY > 1 || p.Strategy != Naive }, least: 1, valid: blockSizes},
	{key: "bz", num: func(p *Plan) *int { return &p.BZ }, show: func(p Plan) bool { return p.BZ > 1 }, least: 1, valid: blockSizes},
	{key: "ph", num: func(p *Plan) *int { return &p.PH }, print: []string{Pyramid}, show: func(Plan) bool { return true }, least: 1,
		valid: upTo(1, 64, "pyramid height must be 1..64")},
	{key: "bt", num: func(p *Plan) *int { return &p.BT }, print: n5dOnly, show: func(Plan) bool { return true }, least: 1,
		valid: &valid{lo: 1, hiDims: map[int]int{2: 16, 3: 8}, says: "the temporal block bt must be 1..{hi} in {d}D"}},
	{key: "rx", parse: n5dOnly, num: func(p *Plan) *int { return &p.RX }, show: func(p Plan) bool { return p.RX > 1 }, least: 1,
		valid: upTo(0, 8, "rx, the cells each thread computes along x, must be 1..8")},
	{key: "rx", parse: []string{Pyramid}, num: func(p *Plan) *int { return &p.RX }, show: func(p Plan) bool { return p.RX > 1 }, least: 1,
		valid: upTo(0, 32, "rx, the cells each thread of a 1D pyramid keeps in registers, must be 1..32")},
	{key: "ry", parse: n5dOnly, num: func(p *Plan) *int { return &p.RY }, show: func(p Plan) bool { return p.RY > 1 }, least: 1,
		valid: upTo(0, 8, "ry, the rows each thread computes along y, must be 1..8")},
	// Written out either way: wave order is the default, so the text must say it is off.
	{key: "wave", parse: n5dOnly, flag: func(p *Plan) *bool { return &p.Wave }, show: func(Plan) bool { return true }},
	{key: "pf", parse: n5dOnly, num: func(p *Plan) *int { return &p.Prefetch }, show: func(p Plan) bool { return p.Prefetch > 1 },
		valid: upTo(0, 8, "pf, the planes n5d loads ahead, must be 1..8")},
	{key: "rz", parse: []string{ForwardPlane}, num: func(p *Plan) *int { return &p.RZ }, show: func(p Plan) bool { return p.RZ > 1 }, least: 1,
		valid: upTo(0, 4, "rz, the planes a forward-plane step computes, must be 1..4")},
	{key: "pf", parse: []string{ForwardPlane}, num: func(p *Plan) *int { return &p.Prefetch }, show: func(p Plan) bool { return p.Prefetch > 0 },
		valid: upTo(0, 4, "pf, the planes ahead forwardplane loads its halos (0: none), must be 0..4")},
	{key: "vec", parse: n5dOnly, num: func(p *Plan) *int { return &p.Vec }, show: func(p Plan) bool { return p.Vec == 1 }, least: 1,
		valid: &valid{oneOf: []int{0, 1}, says: "n5d's vec is 1 (scalar global loads and stores) or left out (one vector of a thread's rx cells where rx is 2 or 4)"}},
	{key: "async", parse: n5dOnly, num: func(p *Plan) *int { return &p.Async },
		valid: upTo(0, 8, "async, the planes n5d copies ahead into shared memory, must be 0 (off) to 8")},
	{key: "unroll", parse: n5dOnly, num: func(p *Plan) *int { return &p.Unroll }},
	{key: "phased", parse: n5dOnly, flag: func(p *Plan) *bool { return &p.Phased }},
	{key: "rimcut", parse: n5dOnly, flag: func(p *Plan) *bool { return &p.RimCut }},
	{key: "rimblocks", parse: n5dOnly, flag: func(p *Plan) *bool { return &p.RimBlocks }},
	{key: "edges", parse: n5dOnly, flag: func(p *Plan) *bool { return &p.Edges }},
	{key: "edgesfirst", parse: n5dOnly, flag: func(p *Plan) *bool { return &p.EdgesFirst }},
	{key: "unclamped", parse: n5dOnly, flag: func(p *Plan) *bool { return &p.Unclamped }},
	{key: "shrink", parse: n5dOnly, flag: func(p *Plan) *bool { return &p.Shrink }},
	{key: "ascend", parse: n5dOnly, flag: func(p *Plan) *bool { return &p.Ascend }},
	{key: "constsize", parse: []string{N5D, ForwardPlane}, flag: func(p *Plan) *bool { return &p.ConstSize }},
	{key: "align", parse: []string{N5D, ForwardPlane, InPlane}, flag: func(p *Plan) *bool { return &p.Align }},
	{key: "chain", parse: n5dOnly, flag: func(p *Plan) *bool { return &p.Chain }},
	{key: "ranges", parse: n5dOnly, flag: func(p *Plan) *bool { return &p.Ranges }},
	{key: "load", parse: inplaneOnly, num: func(p *Plan) *int { return &p.Load }, show: func(Plan) bool { return true },
		valid: upTo(0, 2, "load must be 0 (vertical), 1 (horizontal) or 2 (full slice)")},
	{key: "rx", parse: inplaneOnly, num: func(p *Plan) *int { return &p.RX }, show: func(Plan) bool { return true }, least: 1, valid: registerTile},
	{key: "ry", parse: inplaneOnly, num: func(p *Plan) *int { return &p.RY }, show: func(Plan) bool { return true }, least: 1, valid: registerTile},
	{key: "vec", parse: inplaneOnly, num: func(p *Plan) *int { return &p.Vec }, show: func(Plan) bool { return true }, least: 1,
		valid: &valid{oneOf: []int{1, 2, 4}, says: "vec must be 1, 2 or 4"}},
	{key: "chunk", num: func(p *Plan) *int { return &p.Chunk }, valid: upTo(0, 0, "chunk must be positive")},
	{key: "maxregs", num: func(p *Plan) *int { return &p.MaxRegs }},
	{key: "fastmath", flag: func(p *Plan) *bool { return &p.FastMath }},
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
// registry and the parameter table that Parse reads.
func Help() string {
	var common []string
	for _, q := range Params {
		if q.parse == nil && q.print == nil {
			common = append(common, q.key)
		}
	}
	own := []string{"every plan takes " + strings.Join(common, ", ")}
	for _, s := range Strategies {
		if keys := ownKeys(s); len(keys) > 0 {
			own = append(own, s+" also "+strings.Join(keys, ", "))
		}
	}
	return fmt.Sprintf("%s or %s, as plan:key=value,... (e.g. n5d:bt=8,rx=2); %s",
		strings.Join(Strategies, ", "), aliasList(), strings.Join(own, "; "))
}

// Guide is the strategies for a command's long help, one a line: the name, what it does and
// the keys of its own (Help lists those every plan takes).
func Guide() string {
	var b strings.Builder
	for _, s := range Registry {
		fmt.Fprintf(&b, "  %-13s %s", s.Name, s.Doc)
		if s.Alias != "" {
			fmt.Fprintf(&b, ": %s", s.Alias)
		}
		if keys := ownKeys(s.Name); len(keys) > 0 {
			fmt.Fprintf(&b, " (%s)", strings.Join(keys, ", "))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// ownKeys is the keys that strategy takes and not every plan does.
func ownKeys(strategy string) []string {
	var keys []string
	for _, q := range Params {
		if q.printedFor(strategy) && (q.parse != nil || q.print != nil) {
			keys = append(keys, q.key)
		}
	}
	return keys
}
