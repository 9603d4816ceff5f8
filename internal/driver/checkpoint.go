package driver

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"tempest/internal/gridio"
	"tempest/internal/ir"
	"tempest/internal/irprint"
	"tempest/internal/state"
)

// A checkpoint is an .npz archive (numpy.load reads it) holding everything a run needs to go
// on: for every grid its current level as NAME.npy and, for two-level grids, its previous level
// as NAME.prev.npy; input grids are stored whole too, so that a checkpoint is complete on its
// own and a resumed run cannot read other data by accident; and meta.json with the step, the
// program's hash, the element type, the sizes, the seed and the parameter values.
//
// The program hash is the SHA-256 of the checked program printed as .stencil (irprint), so
// comments, layout and the front end (.stencil, .sl, .c) do not matter, but any change of
// meaning does.

// checkpointFormat names the metadata's format; checkpointVersion changes with its layout.
const (
	checkpointFormat  = "tempest-checkpoint"
	checkpointVersion = 1
	checkpointMeta    = "meta.json"
)

// ckMeta is meta.json.
type ckMeta struct {
	Format      string    `json:"format"`
	Version     int       `json:"version"`
	Program     string    `json:"program"`
	ProgramHash string    `json:"programSha256"`
	Source      string    `json:"source"`
	Type        string    `json:"type"`
	Size        []int     `json:"size"`
	Step        int       `json:"step"`
	Seed        uint64    `json:"seed"`
	Params      []ckParam `json:"params"`
	Grids       []ckGrid  `json:"grids"`
	Tempest     string    `json:"tempest"`
}

type ckParam struct {
	Name  string `json:"name"`
	Type  string `json:"type"`
	Value string `json:"value"` // exact: parses back to the same bits
}

type ckGrid struct {
	Name   string `json:"name"`
	Role   string `json:"role"` // state | input
	DType  string `json:"dtype"`
	Shape  []int  `json:"shape"`
	Levels int    `json:"levels"` // levels stored: 1, or 2 (NAME.prev)
	// Sha256 holds each stored level's SHA-256 (of its .npy member), checked on resume.
	Sha256 []string `json:"sha256,omitempty"`
}

// arrayHash is the SHA-256 of an array's .npy encoding.
func arrayHash(a *gridio.Array) string {
	h := sha256.New()
	if err := gridio.EncodeNPY(h, a); err != nil {
		panic("internal error: hashing a checkpoint's grid: " + err.Error())
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ProgramHash identifies a checked program by meaning.
func ProgramHash(p *ir.Program) string {
	text := irprint.Stencil(p)
	if extra := irprint.Inexpressible(p); len(extra) > 0 {
		text += "\n" + strings.Join(extra, "\n")
	}
	h := sha256.Sum256([]byte(text))
	return hex.EncodeToString(h[:])
}

// paramText prints a parameter value so that it parses back to the same bits.
func paramText(v ir.Value) string {
	switch v.T {
	case ir.F32:
		return strconv.FormatFloat(v.F, 'g', -1, 32)
	case ir.F64:
		return strconv.FormatFloat(v.F, 'g', -1, 64)
	}
	return strconv.FormatInt(v.I, 10)
}

func parseParamText(t ir.Type, s string) (ir.Value, error) {
	if t.IsFloat() {
		f, err := strconv.ParseFloat(s, 64)
		return ir.MakeFloat(t, f), err
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return ir.Value{T: t, I: n}, err
}

func sameValue(a, b ir.Value) bool {
	if a.T.IsFloat() {
		return math.Float64bits(a.F) == math.Float64bits(b.F)
	}
	return a.I == b.I
}

// WriteCheckpoint writes s as a checkpoint at path (atomically), with extra members: what
// the run made so far that a resumed run continues (resumable).
func WriteCheckpoint(path string, s *state.State, extra ...gridio.NPZEntry) error {
	p := s.Prog
	m := ckMeta{Format: checkpointFormat, Version: checkpointVersion, Program: p.Name, ProgramHash: ProgramHash(p),
		Source: p.Source, Type: p.DefaultType.String(), Size: s.Shape, Step: s.Steps, Seed: s.Seed, Tempest: Version}
	for _, pr := range p.Params {
		m.Params = append(m.Params, ckParam{Name: pr.Name, Type: pr.Type.String(), Value: paramText(s.Params[pr.Index])})
	}
	var entries []gridio.NPZEntry
	for _, g := range p.Grids {
		cg := ckGrid{Name: g.Name, Role: "input", DType: string(state.DType(g.Type)), Shape: s.GridShape(g), Levels: 1}
		if g.Update != nil {
			cg.Role = "state"
		}
		entries = append(entries, gridio.NPZEntry{Name: g.Name, Array: s.Cur[g.Index]})
		cg.Sha256 = []string{arrayHash(s.Cur[g.Index])}
		if s.Prev[g.Index] != nil {
			cg.Levels = 2
			entries = append(entries, gridio.NPZEntry{Name: g.Name + ".prev", Array: s.Prev[g.Index]})
			cg.Sha256 = append(cg.Sha256, arrayHash(s.Prev[g.Index]))
		}
		m.Grids = append(m.Grids, cg)
	}
	meta, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		panic("internal error: " + err.Error())
	}
	entries = append([]gridio.NPZEntry{{Name: checkpointMeta, Data: append(meta, '\n')}}, entries...)
	entries = append(entries, extra...)
	if err := gridio.WriteNPZ(path, entries); err != nil {
		return fmt.Errorf("writing checkpoint: %w", err)
	}
	return nil
}

// resumable names a checkpoint member that is no grid but the run's outputs so far: a GIF's
// frames (gif.GRID) or the observations (observations), which a resumed run continues.
func resumable(name string) bool {
	return strings.HasPrefix(name, "gif.") || name == "observations"
}

// resumed is the checkpoint's members that resumable names.
func (ck *checkpoint) resumed() map[string]*gridio.Array {
	out := map[string]*gridio.Array{}
	for name, a := range ck.arrays {
		if resumable(name) {
			out[name] = a
		}
	}
	return out
}

// checkpoint is a checkpoint read back.
type checkpoint struct {
	path   string
	meta   ckMeta
	arrays map[string]*gridio.Array
}

// readCheckpoint reads and checks the form of a checkpoint; whether it fits the run is
// checked by apply.
func readCheckpoint(path string) (*checkpoint, error) {
	entries, err := gridio.ReadNPZ(path)
	if err != nil {
		return nil, fmt.Errorf("--resume %s: %w", path, err)
	}
	ck := &checkpoint{path: path, arrays: map[string]*gridio.Array{}}
	found := false
	for _, e := range entries {
		if e.Name == checkpointMeta {
			if err := json.Unmarshal(e.Data, &ck.meta); err != nil {
				return nil, fmt.Errorf("--resume %s: %s: %w", path, checkpointMeta, err)
			}
			found = true
		} else if e.Array != nil {
			ck.arrays[e.Name] = e.Array
		}
	}
	if !found || ck.meta.Format != checkpointFormat {
		return nil, fmt.Errorf("--resume %s: not a Tempest checkpoint (no %s of format %q); write one with --checkpoint", path, checkpointMeta, checkpointFormat)
	}
	if ck.meta.Version != checkpointVersion {
		return nil, fmt.Errorf("--resume %s: checkpoint format version %d; this Tempest reads version %d", path, ck.meta.Version, checkpointVersion)
	}
	if ck.meta.Step < 0 {
		return nil, fmt.Errorf("--resume %s: %s says step %d; the checkpoint is damaged", path, checkpointMeta, ck.meta.Step)
	}
	for _, g := range ck.meta.Grids {
		for l, want := range g.Sha256 {
			name := g.Name
			if l == 1 {
				name += ".prev"
			}
			if a := ck.arrays[name]; a != nil && arrayHash(a) != want {
				return nil, fmt.Errorf("--resume %s: %s.npy does not hold what was written (its SHA-256 differs from %s's); the checkpoint is damaged", path, name, checkpointMeta)
			}
		}
	}
	return ck, nil
}

// refuse is the error of a checkpoint that does not fit the run.
func (ck *checkpoint) refuse(what, theirs, ours, hint string) error {
	return fmt.Errorf("--resume %s: the %s differs: the checkpoint has %s, this run %s; %s", ck.path, what, theirs, ours, hint)
}

// checkProgram refuses a checkpoint of another program or element type.
func (ck *checkpoint) checkProgram(p *ir.Program) error {
	if ck.meta.Type != p.DefaultType.String() {
		return ck.refuse("element type", ck.meta.Type, p.DefaultType.String(), "resume with --type "+ck.meta.Type+" or without --type")
	}
	if h := ProgramHash(p); h != ck.meta.ProgramHash {
		return ck.refuse("program", fmt.Sprintf("%s (%s, sha256 %.12s)", ck.meta.Program, ck.meta.Source, ck.meta.ProgramHash),
			fmt.Sprintf("%s (%s, sha256 %.12s)", p.Name, p.Source, h), "resume with the program the checkpoint was written by")
	}
	return nil
}

// checkShape refuses a checkpoint of other sizes.
func (ck *checkpoint) checkShape(shape []int) error {
	if fmt.Sprint(shape) != fmt.Sprint(ck.meta.Size) {
		return ck.refuse("size", sizeString(ck.meta.Size), sizeString(shape), "resume with --size "+sizeString(ck.meta.Size)+" or without --size")
	}
	return nil
}

// applyParams takes the checkpoint's parameter values; a value given on the command line
// (given[name]) must equal the checkpoint's.
func (ck *checkpoint) applyParams(p *ir.Program, params []ir.Value, given map[string]bool) error {
	byName := map[string]ckParam{}
	for _, cp := range ck.meta.Params {
		byName[cp.Name] = cp
	}
	for _, pr := range p.Params {
		cp, ok := byName[pr.Name]
		if !ok {
			return ck.refuse("parameter list", "no parameter "+pr.Name, "one", "resume with the program the checkpoint was written by")
		}
		v, err := parseParamText(pr.Type, cp.Value)
		if err != nil {
			return fmt.Errorf("--resume %s: parameter %s: %q is not a %s value", ck.path, pr.Name, cp.Value, pr.Type)
		}
		if given[pr.Name] && !sameValue(v, params[pr.Index]) {
			return ck.refuse("parameter "+pr.Name, pr.Name+"="+cp.Value, pr.Name+"="+paramText(params[pr.Index]),
				"a resumed run keeps the checkpoint's parameters (drop --param "+pr.Name+")")
		}
		params[pr.Index] = v
	}
	return nil
}

// restore fills s from the checkpoint. inputs holds the input grids that --init set on this
// run: each must equal the checkpoint's.
func (ck *checkpoint) restore(s *state.State, inputs map[int]bool) error {
	if o := ck.meta.Seed; o != 0 {
		s.Seed = o
	}
	s.Steps = ck.meta.Step
	for _, g := range s.Prog.Grids {
		want := s.GridShape(g)
		levels := []struct {
			name string
			dst  **gridio.Array
		}{{g.Name, &s.Cur[g.Index]}}
		if s.Prev[g.Index] != nil {
			levels = append(levels, struct {
				name string
				dst  **gridio.Array
			}{g.Name + ".prev", &s.Prev[g.Index]})
		}
		for _, l := range levels {
			a, ok := ck.arrays[l.name]
			if !ok {
				return fmt.Errorf("--resume %s: the checkpoint has no %s.npy for grid %s; it is incomplete", ck.path, l.name, g.Name)
			}
			if a.DType != state.DType(g.Type) || fmt.Sprint(a.Shape) != fmt.Sprint(want) {
				return fmt.Errorf("--resume %s: %s.npy holds %s %v but grid %s needs %s %v", ck.path, l.name, a.DType, a.Shape, g.Name, state.DType(g.Type), want)
			}
			if inputs[g.Index] && l.name == g.Name && !equalArrays(a, *l.dst) {
				return ck.refuse("data of input grid "+g.Name, "its own", "the data of --init "+g.Name,
					"a resumed run takes its input grids from the checkpoint (drop --init "+g.Name+")")
			}
			*l.dst = a
		}
	}
	return nil
}

func equalArrays(a, b *gridio.Array) bool {
	if a.DType != b.DType || fmt.Sprint(a.Shape) != fmt.Sprint(b.Shape) {
		return false
	}
	switch x := a.Data.(type) {
	case []float32:
		y := b.Data.([]float32)
		for i := range x {
			if math.Float32bits(x[i]) != math.Float32bits(y[i]) {
				return false
			}
		}
	case []float64:
		y := b.Data.([]float64)
		for i := range x {
			if math.Float64bits(x[i]) != math.Float64bits(y[i]) {
				return false
			}
		}
	case []int32:
		y := b.Data.([]int32)
		for i := range x {
			if x[i] != y[i] {
				return false
			}
		}
	case []int64:
		y := b.Data.([]int64)
		for i := range x {
			if x[i] != y[i] {
				return false
			}
		}
	}
	return true
}
