package plan

import (
	"fmt"
	"strings"

	"tempest/internal/ir"
)

// Strategy is one way of running a stencil, as the plan package knows it: its name in plan
// text, what it is, which programs it can run, its defaults and its own checks. The
// registry (Registry) is the one place that names strategies and says what sets them apart;
// Parse, String, Default, Validate, Help and the tuner's list read it, and other packages
// consult a plan's properties (Takes, Streams) instead of comparing names. Packages that do
// something different per strategy (lower's lowering, model's models, tune's enumeration)
// keep one table of their own keyed by these names.
type Strategy struct {
	// Name is the strategy in plan text (`name:key=value,...`).
	Name string
	// Doc says in a few words what it does, for help texts.
	Doc string
	// Streams says its blocks are one plane thick and walk the slowest axis, Chunk planes
	// each: Validate holds bz to 1.
	Streams bool
	// Alias is the plan text the name stands for where the strategy is another's settings
	// (wavefront: n5d:bt=2,wave=true): Default returns the other strategy's plan, and the
	// name is offered apart from the strategies proper.
	Alias string
	// applies says why the strategy cannot run p (nil: it can).
	applies func(p *ir.Program) error
	// defaults sets the strategy's parameters for p (block sizes, depths, chunks).
	defaults func(pl *Plan, p *ir.Program) error
	// check is the strategy's consistency checks beyond the ranges of Params.
	check func(pl Plan, p *ir.Program, lim Limits) error
	// parsed adjusts what the text left at its defaults to what it gave (given: the keys).
	parsed func(pl *Plan, p *ir.Program, given map[string]bool)
}

// Names of the strategies, for the packages' per-strategy tables (lower, model, tune):
// a misspelt name is then a compile error rather than a table entry that never matches.
const (
	Naive        = "naive"
	Tiled        = "tiled"
	Stream25D    = "stream25d"
	Pyramid      = "pyramid"
	N5D          = "n5d"
	ForwardPlane = "forwardplane"
	InPlane      = "inplane"
	Wavefront    = "wavefront"
)

// Registry is every strategy, in the order they are offered, aliases last.
var Registry = []*Strategy{
	{Name: Naive, Doc: "one thread per cell, every read from global memory", defaults: naiveDefaults},
	{Name: Tiled, Doc: "one thread per cell, each block's tile and halo staged in shared memory", defaults: tiledDefaults},
	{Name: Stream25D, Doc: "2.5D blocking: one-plane-thick blocks walk the slowest axis in chunks", Streams: true,
		applies: stream25dApplies, defaults: stream25dDefaults},
	{Name: Pyramid, Doc: "ph time steps per launch, each block recomputing its shrinking halo",
		defaults: pyramidDefaults, parsed: fitPyramidBlocks, check: pyramidCheck},
	{Name: N5D, Doc: "N.5D blocking (AN5D): bt time steps per launch streamed through registers", Streams: true,
		applies: n5dApplies, defaults: n5dDefaults, check: n5dCheck},
	{Name: ForwardPlane, Doc: "the forward-plane method: 2D blocks stream z of a 3D grid", Streams: true,
		applies: forwardPlaneApplies, defaults: forwardPlaneDefaults, check: forwardPlaneCheck},
	{Name: InPlane, Doc: "the in-plane method: each plane's z contributions summed as it streams past", Streams: true,
		applies: inplaneApplies, defaults: inplaneDefaults, check: inplaneCheck},
	{Name: Wavefront, Doc: "Schafer and Fey's pipelined wavefront", Alias: "n5d:bt=2,wave=true", defaults: wavefrontDefaults},
}

// Strategies are the names of the strategies proper (not aliases), in the order offered.
var Strategies = func() []string {
	var out []string
	for _, s := range Registry {
		if s.Alias == "" {
			out = append(out, s.Name)
		}
	}
	return out
}()

// Lookup is the registry's strategy of that name (aliases included).
func Lookup(name string) (*Strategy, bool) {
	for _, s := range Registry {
		if s.Name == name {
			return s, true
		}
	}
	return nil, false
}

// Kind is the plan's strategy; a plan whose strategy no registry entry names is a broken
// invariant (Parse and Default only make known ones).
func (pl Plan) Kind() *Strategy {
	s, ok := Lookup(pl.Strategy)
	if !ok {
		panic(fmt.Sprintf("internal error: plan strategy %q is not in the registry", pl.Strategy))
	}
	return s
}

// Streams says the plan's blocks are one plane thick and walk the slowest axis in chunks.
func (pl Plan) Streams() bool { return pl.Kind().Streams }

// Takes says whether the plan's strategy uses the parameter key (String writes it when
// set): the tuner's variants of a parameter apply to the plans that take it.
func (pl Plan) Takes(key string) bool {
	for _, q := range Params {
		if q.key == key && q.printedFor(pl.Strategy) {
			return true
		}
	}
	return false
}

// unknownStrategy is the message for a name no strategy has.
func unknownStrategy(name string) error {
	return fmt.Errorf("unknown plan %q; plans are %s and %s", name, strings.Join(Strategies, ", "), aliasList())
}

// aliasList is the aliases with what they stand for: "wavefront (n5d:bt=2,wave=true)".
func aliasList() string {
	var out []string
	for _, s := range Registry {
		if s.Alias != "" {
			out = append(out, fmt.Sprintf("%s (%s)", s.Name, s.Alias))
		}
	}
	return strings.Join(out, ", ")
}

func naiveDefaults(pl *Plan, p *ir.Program) error {
	pl.BX, pl.BY, pl.BZ = 256, 1, 1
	if p.Dims() >= 2 {
		pl.BX, pl.BY = 32, 8
	}
	return nil
}

func tiledDefaults(pl *Plan, p *ir.Program) error {
	pl.BX, pl.BY, pl.BZ = 256, 1, 1
	switch p.Dims() {
	case 2:
		pl.BX, pl.BY = 32, 8
	case 3:
		pl.BX, pl.BY, pl.BZ = 32, 4, 4
	}
	return nil
}

// stream25dApplies says whether 2.5D blocking can run p: it streams the slowest axis of a
// 2D or 3D grid.
func stream25dApplies(p *ir.Program) error {
	if p.Dims() < 2 {
		return fmt.Errorf("plan stream25d streams along the slowest axis of a 2D or 3D grid; %s is 1D", p.Name)
	}
	return nil
}

func stream25dDefaults(pl *Plan, p *ir.Program) error {
	// Chunks of 128 planes give a 16384^2 grid 8192 blocks instead of 64 (docs/performance.md).
	pl.BX, pl.BY, pl.BZ, pl.Chunk = 256, 1, 1, 128
	if p.Dims() == 3 {
		pl.BX, pl.BY = 32, 8
	}
	return nil
}

func pyramidDefaults(pl *Plan, p *ir.Program) error {
	pl.BX, pl.BY, pl.BZ, pl.PH = 256, 1, 1, 4
	switch p.Dims() {
	case 2:
		pl.BX, pl.BY = 32, 16
	case 3:
		pl.BX, pl.BY, pl.BZ, pl.PH = 16, 8, 8, 2
	}
	return pl.FitPH(p)
}

func n5dDefaults(pl *Plan, p *ir.Program) error {
	// Wave order (one barrier per plane) measured as fast or faster on every AN5D stencil
	// (docs/performance.md).
	pl.BX, pl.BY, pl.BZ, pl.BT, pl.Chunk, pl.RX, pl.Wave = 256, 1, 1, 4, 256, 1, true
	if p.Dims() == 3 {
		pl.BX, pl.BY, pl.BT, pl.Chunk = 32, 16, 2, 64
	}
	return pl.FitBT(p)
}

// wavefrontDefaults is Schafer and Fey's pipelined wavefront: two steps per sweep, one barrier
// per plane. It is n5d with those settings, so it is tuned and lowered as n5d.
func wavefrontDefaults(pl *Plan, p *ir.Program) error {
	*pl = Plan{Strategy: N5D}
	if err := n5dApplies(p); err != nil {
		return err
	}
	if err := n5dDefaults(pl, p); err != nil {
		return err
	}
	pl.BT, pl.Wave = 2, true
	return pl.FitBT(p)
}

// forwardPlaneApplies says whether the forward-plane method can run p: a 3D grid.
func forwardPlaneApplies(p *ir.Program) error {
	if p.Dims() != 3 {
		return fmt.Errorf("plan forwardplane streams z through a 2D block over (y, x) of a 3D grid; %s is %dD", p.Name, p.Dims())
	}
	return nil
}

func forwardPlaneDefaults(pl *Plan, p *ir.Program) error {
	pl.BX, pl.BY, pl.BZ, pl.Chunk = 32, 8, 1, 128
	return nil
}

func inplaneDefaults(pl *Plan, p *ir.Program) error {
	pl.BX, pl.BY, pl.BZ, pl.Chunk = 32, 8, 1, 128
	pl.Load, pl.RX, pl.RY, pl.Vec = 2, 1, 2, 1
	return nil
}
