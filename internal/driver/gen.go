package driver

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"tempest/internal/gen"
	"tempest/internal/gridio"
	"tempest/internal/plan"
	"tempest/internal/state"
)

// GenOptions are the settings of `tempest gen`.
type GenOptions struct {
	File    string
	Target  string   // cuda | opencl
	Plan    string   // empty: the default plan
	Size    string   // the size lowering sees and the harness's default; empty: a default
	Out     string   // output directory
	Type    string   // overrides the program's default element type
	Params  []string // name=value: parameter defaults written into the header
	Name    string   // C prefix; empty: the program's name
	Harness bool     // also write main.c / main.cu
	Index64 bool     // 64-bit element indices whatever the size
}

// Gen carries out `tempest gen`: it writes standalone CUDA or OpenCL code for a program.
func Gen(o GenOptions, stdout io.Writer) error {
	if o.Out == "" {
		return fmt.Errorf("-o DIR: say where to write the generated files")
	}
	if o.Target != "cuda" && o.Target != "opencl" {
		return fmt.Errorf("--target %q: choose cuda or opencl", o.Target)
	}
	p, err := loadProgram(o.File, o.Type)
	if err != nil {
		return err
	}
	params := state.DefaultParams(p)
	for _, kv := range o.Params {
		if err := state.SetParam(p, params, kv); err != nil {
			return err
		}
	}
	size := o.Size
	if size == "" {
		size = defaultSizes[p.Dims()]
	}
	shape, err := state.ParseShape(p, size)
	if err != nil {
		return err
	}
	name := o.Plan
	if name == "" {
		name = DefaultPlan(p)
	}
	pl, err := plan.Parse(name, p)
	if err != nil {
		return fmt.Errorf("--plan: %w", err)
	}
	out, err := gen.Generate(p, gen.Options{Target: o.Target, Plan: pl, Shape: shape, Params: params, Name: o.Name,
		Harness: o.Harness, Index64: o.Index64, Source: filepath.ToSlash(o.File)})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return err
	}
	for _, f := range out.Files {
		path := filepath.Join(o.Out, f.Name)
		if err := gridio.WriteFileAtomic(path, f.Data); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %s\n", path)
	}
	fmt.Fprintf(stdout, "%s: %s, plan %s, lowered at %s\n", p.Name, o.Target, pl, sizeString(shape))
	fmt.Fprintf(stdout, "build: cd %s && %s\n", o.Out, out.Build)
	return nil
}
