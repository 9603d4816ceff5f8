// Package gpu is Tempest's device runtime: one Device interface with two
// implementations, CUDA (driver API + NVRTC) and OpenCL (through the ICD
// loader). Both are loaded at run time with purego (dlopen without cgo), so
// the package builds with CGO_ENABLED=0 everywhere and works wherever the
// libraries exist. A missing library is an error that names the library and
// the backend (errors.Is(err, ErrUnavailable)), never a crash.
//
// Conventions shared by both backends:
//
//   - Kernel.Launch takes grid in blocks (CUDA) / work-groups (OpenCL: the
//     global size is grid*block per dimension) and block in threads.
//   - Kernel arguments are Buffer, int32, int64, float32, float64 (and uint32,
//     uint64). Go's int is refused: say int32 or int64.
//   - Dynamic shared memory: CUDA kernels declare `extern __shared__ T s[];`
//     and receive sharedBytes through the launch. OpenCL kernels receive the
//     dynamic local memory as a final `__local T *s` parameter that is NOT
//     passed in args: when sharedBytes > 0 the runtime appends it as the last
//     argument (clSetKernelArg(k, len(args), sharedBytes, NULL)).
//   - CUDA kernels must be declared extern "C" so that Module.Kernel finds
//     them by their plain name.
//
// Library locations can be overridden with the environment variables
// TEMPEST_LIBCUDA, TEMPEST_NVRTC, TEMPEST_LIBOPENCL and TEMPEST_LIBNCCL (a path
// tried first). NCCL (nccl.go) carries halo exchanges between CUDA devices.
// TEMPEST_CUDA_DEVICE picks a CUDA device ordinal (default 0) and
// TEMPEST_OPENCL_PLATFORM keeps only OpenCL platforms whose name or vendor
// contains the given text (case-insensitive).
package gpu

import (
	"errors"
	"fmt"
	"strings"
	"unsafe"
)

// Props describes a device. Fields a backend cannot know are zero.
type Props struct {
	Backend                    string // "cuda" or "opencl"
	Name                       string
	Platform                   string // OpenCL platform name; "NVIDIA CUDA" for CUDA
	ComputeMajor, ComputeMinor int    // CUDA; 0 for OpenCL
	SMs                        int    // multiprocessors / compute units
	WarpSize                   int    // OpenCL: NVIDIA/AMD extensions, else 1
	MaxThreadsPerBlock         int
	SharedPerBlock             int // default static limit (48 KB on NVIDIA)
	SharedPerBlockOptin        int // opt-in maximum (232448 on H100); = SharedPerBlock where no opt-in exists
	SharedPerSM                int
	RegsPerBlock, RegsPerSM    int
	MaxThreadsPerSM            int
	ClockKHz, MemClockKHz      int
	MemBusWidthBits            int
	L2Bytes                    int
	GlobalMem                  int64
	Driver                     string // driver version text
	Compiler                   string // NVRTC version or OpenCL C version
	// CPU says the device is the host's processor (an OpenCL CPU device such as PoCL's), where
	// Tempest's own CPU engine is faster than OpenCL kernels.
	CPU bool
}

// String is a short multi-line summary for reports and -v output.
func (p Props) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", p.Backend, p.Name)
	if p.ComputeMajor > 0 {
		fmt.Fprintf(&b, " (sm_%d%d)", p.ComputeMajor, p.ComputeMinor)
	}
	if p.Platform != "" && p.Backend == "opencl" {
		fmt.Fprintf(&b, " [%s]", p.Platform)
	}
	fmt.Fprintf(&b, "\n  %d SMs, warp %d, %d threads/block, %d threads/SM\n", p.SMs, p.WarpSize, p.MaxThreadsPerBlock, p.MaxThreadsPerSM)
	fmt.Fprintf(&b, "  shared: %d B/block (opt-in %d), %d B/SM; regs: %d/block, %d/SM\n", p.SharedPerBlock, p.SharedPerBlockOptin, p.SharedPerSM, p.RegsPerBlock, p.RegsPerSM)
	fmt.Fprintf(&b, "  clock %d kHz, memory clock %d kHz, bus %d bits, L2 %d B, global %d MiB\n", p.ClockKHz, p.MemClockKHz, p.MemBusWidthBits, p.L2Bytes, p.GlobalMem>>20)
	fmt.Fprintf(&b, "  driver %s; compiler %s", p.Driver, p.Compiler)
	return b.String()
}

// CompileOptions control kernel compilation.
type CompileOptions struct {
	FastMath bool              // -use_fast_math / -cl-fast-relaxed-math
	MaxRegs  int               // --maxrregcount (CUDA); -cl-nv-maxrregcount on NVIDIA OpenCL; ignored elsewhere
	Defines  map[string]string // -DNAME=VALUE ("" value gives -DNAME)
	// Arch overrides the CUDA target (default: the device's own sm_XY),
	// e.g. "sm_90a". Ignored by OpenCL.
	Arch string
	// Extra flags passed verbatim to the backend compiler.
	Extra []string
}

// Device is one GPU (or OpenCL device) with its context and default queue.
// All methods are safe for concurrent use.
type Device interface {
	Props() Props
	Alloc(bytes int64) (Buffer, error)
	Compile(name, src string, opt CompileOptions) (Module, error) // name is used in error messages
	NewEvent() (Event, error)
	Synchronize() error
	Close() error
}

// Buffer is device memory. Write and Read copy len(src)/len(dst) bytes
// (at most Size) from/to the start of the buffer and are blocking.
type Buffer interface {
	Size() int64
	Write(src []byte) error
	Read(dst []byte) error
	Free() error
}

// Module is a compiled program.
type Module interface {
	Kernel(name string) (Kernel, error)
	Close() error
}

// Kernel is one entry point of a Module.
type Kernel interface {
	// Launch enqueues the kernel; grid is in blocks (CUDA) / work-groups
	// (OpenCL: global = grid*block), block in threads.
	// args are Buffer, int32, int64, float32, float64 (uint32, uint64 too).
	Launch(grid, block [3]int, sharedBytes int, args ...any) error
	Attrs() KernelAttrs
	// MaxActiveBlocksPerSM is the occupancy calculator's answer (CUDA);
	// OpenCL returns an estimate from work-group and local-memory limits.
	MaxActiveBlocksPerSM(blockThreads, dynamicShared int) (int, error)
}

// ChainedKernel is a kernel that can run as a programmatic dependent launch (CUDA on sm_90 and
// newer): LaunchChained enqueues it like Launch, but lets it start before the kernel launched
// just before it on the stream has finished, once every block of that kernel has signalled
// (griddepcontrol.launch_dependents). The two kernels must order their memory accesses
// themselves (lower's chained n5d kernels wait for per-block flags).
type ChainedKernel interface {
	LaunchChained(grid, block [3]int, sharedBytes int, args ...any) error
}

// KernelAttrs are the compiled kernel's resource needs. OpenCL reports
// Regs = 0 (unknown), LocalBytes = private memory per work-item.
type KernelAttrs struct {
	Regs, LocalBytes, StaticShared, MaxThreadsPerBlock int
}

// regsHint says why a kernel refuses a block of n threads when its registers are the cause,
// and what a plan can do about it: a launch that fails this way is a plan the lowering took
// but the compiler made too register-hungry, and the plan's maxregs caps what it may use.
func regsHint(a KernelAttrs, regsPerBlock, n int) string {
	if a.Regs <= 0 || regsPerBlock <= 0 || a.Regs*n <= regsPerBlock {
		return ""
	}
	return fmt.Sprintf(" (its %d registers a thread leave too few for %d threads: add maxregs=%d to the plan or take a smaller block)", a.Regs, n, regsPerBlock/n/8*8)
}

// Event marks a point in the device's queue.
type Event interface {
	Record() error
	Synchronize() error
	// ElapsedMs is the time in milliseconds from since to this event; both
	// must have been recorded.
	ElapsedMs(since Event) (float64, error)
	Free() error
}

// ErrUnavailable is wrapped by Open's error when the backend cannot be used
// on this machine at all: its library is missing, it has no device or
// platform, or its driver cannot be initialized.
var ErrUnavailable = errors.New("backend unavailable")

// ErrClosed is returned by operations on a closed Device or freed object.
var ErrClosed = errors.New("gpu: use of closed device or freed object")

// Backends lists the names Open accepts besides "auto".
var Backends = []string{"cuda", "opencl"}

// Open opens the first device of a backend: "cuda", "opencl", or "auto"
// (CUDA, then OpenCL).
func Open(backend string) (Device, error) {
	switch strings.ToLower(strings.TrimSpace(backend)) {
	case "cuda":
		return openCUDA()
	case "opencl", "cl":
		return openOpenCL()
	case "auto", "":
		d, err := openCUDA()
		if err == nil {
			return d, nil
		}
		d, err2 := openOpenCL()
		if err2 == nil {
			return d, nil
		}
		e := fmt.Errorf("no GPU backend usable:\n  %v\n  %v", err, err2)
		if errors.Is(err, ErrUnavailable) && errors.Is(err2, ErrUnavailable) {
			return nil, &unavailableError{e}
		}
		return nil, e
	default:
		return nil, fmt.Errorf("unknown GPU backend %q (want cuda, opencl or auto)", backend)
	}
}

// unavailableError marks an error as ErrUnavailable while keeping its text.
type unavailableError struct{ err error }

func (e *unavailableError) Error() string   { return e.err.Error() }
func (e *unavailableError) Unwrap() []error { return []error{e.err, ErrUnavailable} }

func unavailable(format string, a ...any) error { return &unavailableError{fmt.Errorf(format, a...)} }
func markUnavailable(err error) error           { return &unavailableError{err} }

// Numeric is the element types the slice helpers accept.
type Numeric interface {
	~int8 | ~uint8 | ~int16 | ~uint16 | ~int32 | ~uint32 | ~int64 | ~uint64 | ~float32 | ~float64
}

// bytesOf views a slice of numbers as bytes (no copy).
func bytesOf[T Numeric](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}

// WriteSlice copies s to the start of b.
func WriteSlice[T Numeric](b Buffer, s []T) error { return b.Write(bytesOf(s)) }

// ReadSlice fills s from the start of b.
func ReadSlice[T Numeric](b Buffer, s []T) error { return b.Read(bytesOf(s)) }

// AllocSlice allocates a buffer holding s and copies s into it.
func AllocSlice[T Numeric](d Device, s []T) (Buffer, error) {
	var zero T
	n := int64(len(s)) * int64(unsafe.Sizeof(zero))
	b, err := d.Alloc(n)
	if err != nil {
		return nil, err
	}
	if err := WriteSlice(b, s); err != nil {
		b.Free()
		return nil, err
	}
	return b, nil
}

func checkCopy(op string, n int, size int64) error {
	if int64(n) > size {
		return fmt.Errorf("gpu: %s of %d bytes into a buffer of %d bytes", op, n, size)
	}
	return nil
}

func dim3String(d [3]int) string { return fmt.Sprintf("(%d,%d,%d)", d[0], d[1], d[2]) }

func checkLaunchDims(grid, block [3]int, sharedBytes int) error {
	for i := 0; i < 3; i++ {
		if grid[i] <= 0 || block[i] <= 0 {
			return fmt.Errorf("grid and block dimensions must be >= 1")
		}
		if grid[i] > 1<<31-1 || block[i] > 1<<31-1 {
			return fmt.Errorf("dimension too large")
		}
	}
	if sharedBytes < 0 {
		return fmt.Errorf("negative shared memory size")
	}
	return nil
}

func argTypeError(i int, a any) error {
	if _, ok := a.(int); ok {
		return fmt.Errorf("argument %d is a Go int: pass int32 or int64 so the kernel's parameter size is explicit", i)
	}
	return fmt.Errorf("argument %d has unsupported type %T (want Buffer, int32, int64, float32, float64, uint32, uint64)", i, a)
}

// ResidentBlocks is how many blocks of a kernel fit on one multiprocessor at once, by threads,
// registers (allocated per warp in units of 256 on NVIDIA GPUs) and shared memory (1 KB
// reserved per block on NVIDIA GPUs): the occupancy that decides how much latency a kernel
// can hide. Unknown limits (0) do not bind; the result is at least 1, since a kernel the
// device cannot hold at all fails when it is launched.
func ResidentBlocks(p Props, threads, shared, regs int) int {
	perSM := p.MaxThreadsPerSM
	if perSM <= 0 {
		perSM = max(threads, p.MaxThreadsPerBlock, 1)
	}
	n := min(perSM/max(threads, 1), 32)
	warps := (threads + 31) / 32
	if p.RegsPerSM > 0 && regs > 0 {
		perWarp := (regs*32 + 255) / 256 * 256
		n = min(n, (p.RegsPerSM/perWarp)/max(warps, 1))
	}
	if p.SharedPerSM > 0 && shared > 0 {
		n = min(n, p.SharedPerSM/(shared+1024))
	}
	return max(n, 1)
}
