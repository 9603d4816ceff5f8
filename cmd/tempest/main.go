// Command tempest compiles, runs and checks iterative stencil programs.
package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"tempest/internal/driver"
	"tempest/internal/serve"
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
	driver.Version = version
	root.AddCommand(probeCmd(), tuneCmd())
	root.AddCommand(genCmd())
	root.AddCommand(benchCmd())
	root.AddCommand(serveCmd())
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if errors.Is(err, driver.ErrInterrupted) {
			os.Exit(130)
		}
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
  tempest run examples/an5d/j2d5pt.stencil --size 1024x1024 --steps 100 --verify
  tempest run examples/sl/hotspot.stencil --init temp=examples/sl/data/temp_64 --init power=examples/sl/data/power_64 --out temp.txt
  tempest run examples/an5d/star3d1r.stencil --backend cuda --plan tiled:bx=32,by=4,bz=4 --size 512x512x512 --steps 1000
  tempest run examples/demos/wave.stencil --steps 2000 --snapshot-every 100 --snapshots frames --gif wave.gif
  tempest run examples/demos/poisson2d.stencil --steps 100000 --check-every 500 --observables poisson.csv
  tempest run examples/demos/grayscott.stencil --steps 100000 --checkpoint gs.npz --checkpoint-every 5000
  tempest run examples/demos/grayscott.stencil --steps 100000 --checkpoint gs.npz --checkpoint-every 5000 --resume gs.npz
  tempest run examples/an5d/j2d5pt.stencil --gpus 4 --plan n5d:bt=8 --size 16384x16384 --steps 1000
  tempest run examples/an5d/j2d5pt.stencil --ranks 2 --rank 0 --coordinator host0:29500 --plan n5d --out out.npy`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.File = args[0]
			if err := positiveIfGiven(cmd, "subdomains", "exchange", "gpus", "ranks", "snapshot-every", "gif-every",
				"checkpoint-every", "observe-every", "check-every"); err != nil {
				return err
			}
			if err := driver.CheckTuneMode(o.Tune); err != nil {
				return err
			}
			if data != "" {
				o.Inits = append(o.Inits, "data="+data)
			}
			o.Signals, o.Env = true, os.Getenv
			_, err := driver.Run(o, cmd.OutOrStdout(), os.Stderr)
			return err
		},
	}
	f := c.Flags()
	f.StringVar(&o.Size, "size", "", "grid size, slowest axis first, e.g. 4096x4096 (default: from an --init file (a .npy's shape, a text file's rows, or the square or cube of its count), else 65536 / 512x512 / 128x128x128)")
	f.IntVar(&o.Steps, "steps", 100, "number of time steps (with --resume: the step the run ends at, counted from the start of the first run; with an until test: the most steps)")
	f.StringArrayVar(&o.Params, "param", nil, "set a parameter: name=value, the value a constant expression such as 0.25, 1/10, 2*pi or sqrt(2)/2, which may name parameters (repeatable)")
	f.StringArrayVar(&o.Inits, "init", nil, "initial values of a grid: grid=file.npy, grid=file.txt (one value per line as Rodinia's data files, or rows of values; .csv: comma-separated), grid=random[:seed] or grid=zero (repeatable)")
	f.StringVar(&data, "data", "", "read-only data of an SL program (its read(i), SL's SetData): same as --init data=FILE.npy")
	f.StringVar(&o.Type, "type", "", "element type replacing the program's default type: f32, f64, i32 or i64")
	f.Uint64Var(&o.Seed, "seed", 0, "seed for rand() in initial values (default 1; a resumed run keeps the checkpoint's)")
	f.StringVar(&o.Out, "out", "", "write the final state grid(s): .npy, .txt (one value per line) or .csv (rows along the last axis)")
	f.StringVar(&o.PNG, "png", "", "write a heat map of the final state grid(s) as PNG (middle slice for 3D)")
	f.StringVar(&o.Backend, "backend", "auto", "engine: auto (CUDA, then OpenCL, then the CPU engine), cuda, opencl, cpu or ref (the reference interpreter: slow, for checking)")
	f.IntVar(&o.SnapshotEvery, "snapshot-every", 0, "write snapshots (and GIF frames) every N steps, step 0 included")
	f.StringVar(&o.Snapshots, "snapshots", "", "directory of the snapshots: DIR/GRID_000100.npy per state grid (the whole grid, also in 3D)")
	f.StringVar(&o.GIF, "gif", "", "write each state grid's evolution as an animated GIF (middle slice for 3D; one colour scale over all frames)")
	f.IntVar(&o.GIFEvery, "gif-every", 0, "a GIF frame every N steps (default: --snapshot-every)")
	f.StringVar(&o.Checkpoint, "checkpoint", "", "checkpoint file (.npz) written at the end of the run, every --checkpoint-every steps and on SIGINT/SIGTERM (default on a signal: PROGRAM.checkpoint.npz)")
	f.IntVar(&o.CheckpointEvery, "checkpoint-every", 0, "write the checkpoint every N steps")
	f.StringVar(&o.Resume, "resume", "", "continue the run a checkpoint holds (same program, type, size and parameters; --steps stays the total)")
	f.StringVar(&o.Tune, "tune", "", "without --plan, how to choose one: none (the default plan), cached (the tuning cache's best), model (the models' pick), full (tune now); default: cached, else model")
	f.StringVar(&o.Plan, "plan", "", "GPU plan: "+driver.PlanHelp())
	f.BoolVar(&o.FastMath, "fastmath", false, "compile with fast math (FMA contraction, approximate sqrt and division, divisions by constants become multiplications; without it CUDA rounds every operation as written) and, without --plan, take fast tuned plans; a --plan that says fastmath=true or fastmath=false wins")
	f.BoolVar(&o.Verify, "verify", false, "also run the reference interpreter and report max abs and RMS error (GPU float runs: and check every cell against its error bound)")
	f.BoolVar(&o.NoBound, "no-bound", false, "with --verify: compare with the CPU engine only, without the error bound (faster on big runs)")
	f.BoolVar(&o.Quiet, "quiet", false, "no progress bar")
	f.StringVar(&o.Observables, "observables", "", "write the program's observables as CSV: a row per observation (step, then each observable)")
	f.StringVar(&o.ObservablesPNG, "observables-png", "", "plot the program's observables over the steps as PNG")
	f.IntVar(&o.ObserveEvery, "observe-every", 0, "steps between observations (default: the --check-every interval with an until test, else steps/100); rounded to a multiple of the plan's deepest launch")
	f.IntVar(&o.CheckEvery, "check-every", 0, fmt.Sprintf("steps between evaluations of the program's until test (default %d); rounded to a multiple of the plan's deepest launch; --steps is then the most steps run", driver.DefaultCheckEvery))
	f.IntVar(&o.Multi.GPUs, "gpus", 0, "split the grid over this many devices of this host (CUDA ordinals 0..N-1 with NCCL, or OpenCL devices), along its slowest axis or as --split says")
	f.IntVar(&o.Multi.Subdomains, "subdomains", 0, "split the grid into this many sub-domains on one device or the CPU engine (the exchanges of a multi-GPU run, by local copies)")
	f.StringVar(&o.Multi.Split, "split", "", "how a split run lays out its sub-domains: 1d (slabs along the slowest axis, the default), 2d (a grid over the two slowest axes, the split model picks its shape), PxQ (P along the slowest axis, Q along the next) or auto (the split model picks slabs or a grid)")
	f.IntVar(&o.Multi.Exchange, "exchange", 0, "steps between halo exchanges of a split run, a multiple of the plan's temporal block (default: the temporal block; CUDA devices exchanging through NCCL: the split model's period, which weighs each exchange's fixed cost against deeper halos); halos are this times the reach deep")
	f.IntVar(&o.Multi.Rank, "rank", 0, "this process's rank in a multi-process run (0 to --ranks - 1)")
	f.IntVar(&o.Multi.Ranks, "ranks", 0, "number of processes of a multi-process run, one sub-domain each")
	f.StringVar(&o.Multi.Coordinator, "coordinator", "", "HOST:PORT where rank 0 of a multi-process run listens and the others connect (an empty HOST is this machine's loopback; launchers' environments name it: torchrun, mpirun, srun)")
	f.StringVar(&o.Multi.Secret, "secret", "", "multi-process runs: a secret every rank shares, which rank 0 checks before admitting a rank (default: TEMPEST_SECRET; the environment keeps it out of the process list)")
	f.DurationVar(&o.Multi.Timeout, "rank-timeout", 5*time.Minute, "multi-process runs: how long to wait for the ranks to join, and for a silent rank before every rank stops, naming it")
	f.StringVar(&o.Multi.Overlap, "overlap", "auto", "split runs: auto, on, off or ranges: split each sub-domain into bands and an interior that computes while the halos travel (auto: on where the coordinator relays the halos; NCCL's sub-domains stay whole, as they run faster); ranges keeps sub-domains whole and, through NCCL, computes the rows the neighbours receive first and the rest while they travel (n5d plans, less rimcut and chain)")
	return c
}

// positiveIfGiven refuses 0 or less for count flags whose zero default means "not set", so
// that an explicit --subdomains 0 is not silently taken as no flag at all.
func positiveIfGiven(cmd *cobra.Command, names ...string) error {
	for _, name := range names {
		if !cmd.Flags().Changed(name) {
			continue
		}
		if v, err := cmd.Flags().GetInt(name); err == nil && v < 1 {
			return fmt.Errorf("--%s %d: give a number of 1 or more, or leave the flag out", name, v)
		}
	}
	return nil
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

func probeCmd() *cobra.Command {
	var o driver.ProbeOptions
	c := &cobra.Command{
		Use:   "probe",
		Short: "Measure the device (DRAM, L2, shared memory, FMA, launch latency) and save its profile",
		Long: `Runs micro-benchmarks on the device and saves the result as its profile in the cache
directory (TEMPEST_CACHE_DIR, else the user's cache directory)/tempest/profiles, where the
performance models of tempest tune and tempest run --tune read it.`,
		Example: `  tempest probe
  tempest probe --backend opencl --quick --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return driver.Probe(o, cmd.OutOrStdout(), os.Stderr)
		},
	}
	f := c.Flags()
	f.StringVar(&o.Backend, "backend", "auto", "device: auto (CUDA, then OpenCL), cuda, opencl or cpu (the host's memory bandwidth, the CPU engine's roof)")
	f.BoolVar(&o.JSON, "json", false, "print the profile as JSON")
	f.BoolVar(&o.Quick, "quick", false, "small sizes (automatic on CPU OpenCL devices)")
	f.IntVar(&o.Reps, "reps", 0, "timed repetitions per benchmark (default 7, quick 5)")
	f.BoolVar(&o.Quiet, "quiet", false, "no progress lines")
	return c
}

func tuneCmd() *cobra.Command {
	var o driver.TuneOptions
	var list bool
	c := &cobra.Command{
		Use:   "tune FILE",
		Short: "Search the plans of a program on the device and cache the best",
		Long: `Enumerates the plans of every strategy (block sizes, pyramid heights, stream chunks, n5d
temporal blocks), prunes those the device cannot run, ranks the rest with the performance
models, and times the best candidates (topk: the k best; beta: every prediction within beta percent of the best;
exhaustive: all). Results go to the tuning cache (TEMPEST_CACHE_DIR, else the user's cache
directory)/tempest/tune, keyed by stencil, element type, size class, device, driver,
compiler, Tempest version and math mode (--fastmath); a second run resumes, measuring only
what is missing.
tempest run uses the cached plan (--tune cached, the default when the cache has one); a split
run (--gpus N, --ranks N, --subdomains N) first takes a plan tuned with --gpus N (and its
--split PxQ, for a grid of parts) for its sub-domains' size, then the whole grid's.`,
		Example: `  tempest tune examples/an5d/j2d5pt.stencil --size 16386x16386
  tempest tune examples/an5d/j2d5pt.stencil --size 16386x16386 --fastmath
  tempest tune examples/an5d/star3d1r.stencil --size 514x514x514 --mode exhaustive
  tempest tune examples/an5d/j2d5pt.stencil --size 16386x16386 --fastmath --gpus 4
  tempest tune examples/an5d/star3d1r.stencil --size 514x514x514 --fastmath --gpus 4 --split 1x4
  tempest tune --list`,
		Args: func(cmd *cobra.Command, args []string) error {
			if list {
				return cobra.NoArgs(cmd, args)
			}
			return cobra.ExactArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if list {
				return driver.TuneList(o.JSON, cmd.OutOrStdout())
			}
			o.File = args[0]
			return driver.Tune(o, cmd.OutOrStdout(), os.Stderr)
		},
	}
	f := c.Flags()
	f.BoolVar(&list, "list", false, "show what the tuning cache holds")
	f.StringVar(&o.Size, "size", "", "grid size, slowest axis first (default 65536 / 512x512 / 128x128x128)")
	f.StringArrayVar(&o.Params, "param", nil, "set a parameter: name=value, the value a constant expression such as 0.25, 1/10, 2*pi or sqrt(2)/2, which may name parameters (repeatable)")
	f.StringVar(&o.Type, "type", "", "element type replacing the program's default type: f32, f64, i32 or i64")
	f.Uint64Var(&o.Seed, "seed", 1, "seed for initial values and for breaking ties in the ranking")
	f.StringVar(&o.Backend, "backend", "auto", "device: auto (CUDA, then OpenCL), cuda, opencl or cpu (the CPU engine: its steps per sweep)")
	f.StringVar(&o.Mode, "mode", "topk", "search: topk, beta, topk+beta (the k best and every plan within beta percent) or exhaustive")
	f.IntVar(&o.K, "k", 5, "topk: how many of the best predictions to time")
	f.Float64Var(&o.Beta, "beta", 5, "beta: time every plan predicted within this percentage of the best")
	f.IntVar(&o.Steps, "steps", 0, "steps per timed run (default: about 50 ms of the best prediction)")
	f.IntVar(&o.Reps, "reps", 3, "timed runs per candidate, after one warm-up run (the median is kept)")
	f.StringSliceVar(&o.Strategies, "strategies", nil, "only these strategies (comma-separated: "+strings.Join(driver.TuneStrategies(), ", ")+")")
	f.BoolVar(&o.FastMath, "fastmath", false, "compile every candidate with fast math; fast and exact results are cached apart (tempest run --fastmath uses the fast ones)")
	f.BoolVar(&o.NoRefine, "no-refine", false, "skip the refinement: register caps and deeper prefetches tried on the best plans of the space, then shorter and longer stream chunks and, for n5d, other loop and tile variants of the fastest (scalar accesses, phased loops, two-row threads, shorter 3D blocks under a register cap)")
	f.BoolVar(&o.Fresh, "fresh", false, "measure again what the cache already holds (results still go to the cache)")
	f.DurationVar(&o.Budget, "budget", time.Minute, "bound the command's wall time: no candidate is timed that would end past it (0: no limit); a search cut short goes on from the cache when run again")
	f.IntVar(&o.Parts, "gpus", 0, "tune one sub-domain of a run split this many ways along the slowest axis (--gpus, --ranks or --subdomains of tempest run), whose plan such runs take first")
	f.StringVar(&o.Split, "split", "", "with --gpus: the run's split, 1d (slabs, the default) or PxQ (a grid over the two slowest axes); the tuned size is one part's")
	f.BoolVar(&o.JSON, "json", false, "print JSON")
	f.BoolVar(&o.Quiet, "quiet", false, "no progress bar or progress lines")
	return c
}

// genCmd writes standalone CUDA or OpenCL code (kernels, host code, a C header and optionally a
// benchmark harness) that builds with nvcc or a C compiler and libOpenCL, without Tempest.
func genCmd() *cobra.Command {
	var o driver.GenOptions
	c := &cobra.Command{
		Use:   "gen FILE --target cuda|opencl -o DIR",
		Short: "Write standalone CUDA or OpenCL code with a C API (and a benchmark harness)",
		Long: "Write standalone CUDA or OpenCL code with a C API (and a benchmark harness).\n\nPlans (--plan name:key=value,...):\n" +
			driver.PlanGuide(),
		Example: `  tempest gen examples/an5d/j2d5pt.stencil --target cuda --plan pyramid -o j2d5pt_cuda --harness
  tempest gen examples/demos/grayscott.stencil --target opencl --size 256x256 -o gs --harness`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.File = args[0]
			return driver.Gen(o, cmd.OutOrStdout())
		},
	}
	f := c.Flags()
	f.StringVar(&o.Target, "target", "", "cuda or opencl")
	f.StringVar(&o.Plan, "plan", "", "GPU plan: "+driver.PlanHelp())
	f.StringVar(&o.Size, "size", "", "size the code is lowered at and the harness's default, slowest axis first (any size works at run time)")
	f.StringVarP(&o.Out, "out", "o", "", "output directory")
	f.StringVar(&o.Type, "type", "", "element type replacing the program's default type: f32, f64, i32 or i64")
	f.StringArrayVar(&o.Params, "param", nil, "parameter default written into the header: name=value (repeatable)")
	f.StringVar(&o.Name, "name", "", "C prefix of the API (default: the program's name)")
	f.BoolVar(&o.Harness, "harness", false, "also write main.c / main.cu: timing (-s -t -n), CPU check (-c), raw input/output (-i -o)")
	f.BoolVar(&o.Index64, "index64", false, "64-bit element indices, for grids of more than 2^31-1 elements")
	c.MarkFlagRequired("target")
	c.MarkFlagRequired("out")
	return c
}

func benchCmd() *cobra.Command {
	var o driver.BenchOptions
	var stencils string
	c := &cobra.Command{
		Use:   "bench",
		Short: "Run a benchmark suite and report time, GCells/s, GFLOP/s, bandwidth, roofline share and speedups",
		Example: `  tempest bench --suite an5d --backend cuda --json an5d.json --csv an5d.csv --report an5d.html
  tempest bench --suite all --size-scale 0.05 --steps 20 --reps 2 --report quick.html
  tempest bench --suite schafer-fey --plan stream25d
  tempest bench --suite an5d --type f64 --backend cuda --fastmath --reps 3
  tempest bench --suite an5d --gpus 4 --stencils j2d5pt,star3d1r --plan n5d --steps 200`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Command = append([]string{"tempest"}, os.Args[1:]...)
			if stencils != "" {
				o.Stencils = strings.Split(stencils, ",")
			}
			_, err := driver.Bench(o, cmd.OutOrStdout(), os.Stderr)
			return err
		},
	}
	f := c.Flags()
	f.StringVar(&o.Suite, "suite", "an5d", "suite: an5d, sl, lift, inplane, schafer-fey or all")
	f.StringVar(&o.Type, "type", "", "element type of every program, replacing the suite's (an5d: f32, schafer-fey: f64) and the programs' own: f32, f64, i32 or i64; anchors (float) are compared in f32 only")
	f.StringVar(&o.Backend, "backend", "auto", "engine: auto (CUDA, then OpenCL, then the CPU engine), cuda, opencl or cpu")
	f.StringVar(&o.Plan, "plan", "", "force this GPU plan on every stencil (default: chosen by --tune)")
	f.StringVar(&o.Tune, "tune", "", "without --plan, how to choose one: none, cached, model or full (default: cached, else model)")
	f.BoolVar(&o.FastMath, "fastmath", false, "compile every plan with fast math (chosen plans, naive comparison, scaling series) and take fast tuned plans; a --plan that says fastmath=true or fastmath=false wins; the report states the mode")
	f.IntVar(&o.Steps, "steps", 0, "time steps per run (default: the suite's, 1000 for most)")
	f.Float64Var(&o.SizeScale, "size-scale", 1, "multiply every interior extent by this (e.g. 0.05 for CI or PoCL)")
	f.IntVar(&o.Reps, "reps", 5, "timed runs per measurement after a warm-up; the median is reported")
	f.StringVar(&stencils, "stencils", "", "only these stencils of the suite, comma-separated (e.g. j2d5pt,star3d1r)")
	f.StringVar(&o.Scaling, "scaling", "", "stencil of the temporal-depth and tuning-surface charts (default j2d5pt, else the first n5d-capable one; none: skip)")
	f.BoolVar(&o.NoNaive, "no-naive", false, "skip the naive runs (no speedup over naive)")
	f.StringVar(&o.JSON, "json", "", "write the report as JSON")
	f.StringVar(&o.CSV, "csv", "", "write one CSV row per stencil")
	f.StringVar(&o.Report, "report", "", "write a self-contained HTML report with charts (and the charts as PNG beside it)")
	f.StringVar(&o.Split, "split", "auto", "with --gpus, how the split run lays out its sub-domains: 1d, 2d, PxQ or auto (the split model decides; the row reports its choice)")
	f.IntVar(&o.GPUs, "gpus", 0, "benchmark each stencil split over this many devices against one device, with the split model's prediction beside the measurement")
	f.StringVar(&o.Link, "link", "nvlink4", "interconnect the split model assumes with --gpus: nvlink4, pcie5, pcie4 or ndr")
	f.StringVar(&o.Overlap, "overlap", "auto", "with --gpus: auto, on or off: overlap halo exchanges with the sub-domains' interiors (auto: off with NCCL, whose sub-domains run faster whole); the model follows")
	return c
}

// serveCmd runs simulations for another program (Python's tempest module) over stdin and
// stdout; internal/serve says why a process and not a library, and the protocol.
func serveCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "serve",
		Short: "Run simulations for another program (Python's tempest module) over stdin and stdout",
		Long: `Serves Tempest's simulation protocol on standard input and output until the input ends:
framed requests (a JSON line, then raw array bytes where the line has an "array") that load
programs, start simulations on a device, step them, read and write grids and parameters,
evaluate observables and write checkpoints. The device and the compiled kernels stay for the
whole session. Python's tempest module (python/tempest) starts and speaks to it; notes go to
standard error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return serve.Run(os.Stdin, os.Stdout, os.Stderr, version)
		},
	}
}
