// Command tempest compiles, runs and checks iterative stencil programs.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"tempest/internal/driver"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

func main() {
	root := &cobra.Command{
		Use:           "tempest",
		Short:         "Tempest: a stencil compiler and runtime",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version,
	}
	root.AddCommand(runCmd(), checkCmd(), translateCmd())
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func runCmd() *cobra.Command {
	var o driver.RunOptions
	var data string
	c := &cobra.Command{
		Use:   "run FILE",
		Short: "Run a stencil program and report its speed",
		Example: `  tempest run examples/demos/grayscott.stencil --size 256x256 --steps 5000 --png gs.png
  tempest run examples/an5d/j2d5pt.stencil --size 4096x4096 --steps 100 --verify
  tempest run examples/an5d/star3d1r.stencil --backend cuda --plan tiled:bx=32,by=4,bz=4 --size 512x512x512 --steps 1000`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.File = args[0]
			if data != "" {
				o.Inits = append(o.Inits, "data="+data)
			}
			_, err := driver.Run(o, cmd.OutOrStdout(), os.Stderr)
			return err
		},
	}
	f := c.Flags()
	f.StringVar(&o.Size, "size", "", "grid size, slowest axis first, e.g. 4096x4096 (default: from an --init .npy file, else 65536 / 512x512 / 128x128x128)")
	f.IntVar(&o.Steps, "steps", 100, "number of time steps")
	f.StringArrayVar(&o.Params, "param", nil, "set a parameter: name=value (repeatable)")
	f.StringArrayVar(&o.Inits, "init", nil, "initial values of a grid: grid=file.npy, grid=random[:seed] or grid=zero (repeatable)")
	f.StringVar(&data, "data", "", "read-only data of an SL program (its read(i), SL's SetData): same as --init data=FILE.npy")
	f.StringVar(&o.Type, "type", "", "element type replacing the program's default type: f32, f64, i32 or i64")
	f.Uint64Var(&o.Seed, "seed", 1, "seed for rand() in initial values")
	f.StringVar(&o.Out, "out", "", "write the final state grid(s) as .npy")
	f.StringVar(&o.PNG, "png", "", "write a heat map of the final state grid(s) as PNG (middle slice for 3D)")
	f.StringVar(&o.Backend, "backend", "auto", "engine: auto (CUDA, then OpenCL, then the CPU engine), cuda, opencl or cpu")
	f.StringVar(&o.Plan, "plan", "", "GPU plan: naive, tiled, stream25d or pyramid, with parameters as plan:key=value,... (e.g. tiled:bx=32,by=8)")
	f.BoolVar(&o.Verify, "verify", false, "also run the reference interpreter and report max abs and RMS error")
	f.BoolVar(&o.Quiet, "quiet", false, "no progress bar")
	return c
}

func checkCmd() *cobra.Command {
	var asJSON bool
	var typ string
	c := &cobra.Command{
		Use:   "check FILE",
		Short: "Check a program and print its analysis (radius, shape, FLOPs, bytes per cell)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return driver.Check(args[0], typ, asJSON, cmd.OutOrStdout())
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	c.Flags().StringVar(&typ, "type", "", "element type replacing the program's default type")
	return c
}

// translateCmd prints any program Tempest reads as .stencil source, so that users of the SL and
// C frontends can see what was understood and move to Tempest's own language.
func translateCmd() *cobra.Command {
	var typ string
	c := &cobra.Command{
		Use:   "translate FILE",
		Short: "Print a program (.stencil, SL .sl or C loop nest .c) as an equivalent .stencil program",
		Example: `  tempest translate examples/sl/hotspot.sl
  tempest translate examples/c/j2d5pt.c > j2d5pt.stencil`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return driver.Translate(args[0], typ, cmd.OutOrStdout(), os.Stderr)
		},
	}
	c.Flags().StringVar(&typ, "type", "", "element type replacing the program's default type")
	return c
}
