package gpu

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"sync"
	"unsafe"
)

// CUDA driver API constants (cuda.h).
const (
	cuSuccess = 0

	// CUdevice_attribute
	cuDevAttrMaxThreadsPerBlock     = 1
	cuDevAttrMaxSharedPerBlock      = 8
	cuDevAttrWarpSize               = 10
	cuDevAttrMaxRegsPerBlock        = 12
	cuDevAttrClockRate              = 13
	cuDevAttrMultiprocessorCount    = 16
	cuDevAttrMemoryClockRate        = 36
	cuDevAttrGlobalMemoryBusWidth   = 37
	cuDevAttrL2CacheSize            = 38
	cuDevAttrMaxThreadsPerSM        = 39
	cuDevAttrComputeCapabilityMajor = 75
	cuDevAttrComputeCapabilityMinor = 76
	cuDevAttrMaxSharedPerSM         = 81
	cuDevAttrMaxRegsPerSM           = 82
	cuDevAttrMaxSharedPerBlockOptin = 97
	cuFuncAttrMaxThreadsPerBlock    = 0
	cuFuncAttrSharedSizeBytes       = 1
	cuFuncAttrLocalSizeBytes        = 3
	cuFuncAttrNumRegs               = 4
	cuFuncAttrMaxDynamicSharedSize  = 8
	cuEventDefault                  = 0
	cuEventDisableTiming            = 2 // CU_EVENT_DISABLE_TIMING: an event only to order streams
	cuStreamNonBlocking             = 1 // CU_STREAM_NON_BLOCKING: no implicit sync with stream 0
	defaultDynamicSharedLimit       = 48 * 1024
	cudaLibHint                     = "is the NVIDIA driver installed?"
	nvrtcLibHint                    = "is the CUDA toolkit's NVRTC installed? set " + envNVRTC + " to its path"
)

// cudaAPI holds the driver API entry points. Handles are uintptr; CUdevice
// is an int; CUdeviceptr is a 64-bit integer; CUresult is an int enum.
type cudaAPI struct {
	lib *dylib

	cuInit                    func(flags uint32) int32
	cuDriverGetVersion        func(v *int32) int32
	cuDeviceGetCount          func(n *int32) int32
	cuDeviceGet               func(dev *int32, ordinal int32) int32
	cuDeviceGetName           func(name *byte, n int32, dev int32) int32
	cuDeviceGetAttribute      func(v *int32, attr int32, dev int32) int32
	cuDeviceTotalMem          func(bytes *uintptr, dev int32) int32
	cuDevicePrimaryCtxRetain  func(ctx *uintptr, dev int32) int32
	cuDevicePrimaryCtxRelease func(dev int32) int32
	cuCtxSetCurrent           func(ctx uintptr) int32
	cuCtxSynchronize          func() int32
	cuCtxSynchronizeV2        func(ctx uintptr) int32 // CUDA 13: cuCtxSynchronize_v2(CUcontext)
	cuMemAlloc                func(dptr *uint64, bytes uintptr) int32
	cuMemFree                 func(dptr uint64) int32
	cuMemcpyHtoD              func(dst uint64, src unsafe.Pointer, n uintptr) int32
	cuMemcpyDtoH              func(dst unsafe.Pointer, src uint64, n uintptr) int32
	cuMemcpyDtoD              func(dst, src uint64, n uintptr) int32
	cuModuleLoadData          func(mod *uintptr, image unsafe.Pointer) int32
	cuModuleGetFunction       func(fn *uintptr, mod uintptr, name string) int32
	cuModuleUnload            func(mod uintptr) int32
	cuLaunchKernel            func(f uintptr, gx, gy, gz, bx, by, bz, shared uint32, stream uintptr, params unsafe.Pointer, extra unsafe.Pointer) int32
	cuLaunchKernelEx          func(config unsafe.Pointer, f uintptr, params unsafe.Pointer, extra unsafe.Pointer) int32 // optional: CUDA 12 and newer
	cuFuncGetAttribute        func(v *int32, attr int32, f uintptr) int32
	cuFuncSetAttribute        func(f uintptr, attr int32, v int32) int32
	cuEventCreate             func(ev *uintptr, flags uint32) int32
	cuEventRecord             func(ev uintptr, stream uintptr) int32
	cuEventSynchronize        func(ev uintptr) int32
	cuEventDestroy            func(ev uintptr) int32
	cuEventElapsedTime        func(ms *float32, start, end uintptr) int32
	cuStreamCreate            func(stream *uintptr, flags uint32) int32
	// optional: the side stream's priority (stream.go)
	cuStreamCreateWithPriority  func(stream *uintptr, flags uint32, priority int32) int32
	cuCtxGetStreamPriorityRange func(least, greatest *int32) int32
	cuStreamDestroy             func(stream uintptr) int32
	cuStreamWaitEvent           func(stream, ev uintptr, flags uint32) int32
	cuOccupancyMaxActiveBlocks  func(n *int32, f uintptr, blockSize int32, dynShared uintptr) int32
	cuGetErrorName              func(res int32, s **byte) int32
	cuGetErrorString            func(res int32, s **byte) int32

	cuMemcpy2D func(p unsafe.Pointer) int32 // optional: region copies (copy2d.go)
}

func loadCUDA() (*cudaAPI, error) {
	lib, err := loadLibrary("cuda", cudaLibNames, envLibCUDA, cudaLibHint)
	if err != nil {
		return nil, err
	}
	a := &cudaAPI{lib: lib}
	b := &binder{l: lib}
	b.fn(&a.cuInit, "cuInit")
	b.fn(&a.cuDriverGetVersion, "cuDriverGetVersion")
	b.fn(&a.cuDeviceGetCount, "cuDeviceGetCount")
	b.fn(&a.cuDeviceGet, "cuDeviceGet")
	b.fn(&a.cuDeviceGetName, "cuDeviceGetName")
	b.fn(&a.cuDeviceGetAttribute, "cuDeviceGetAttribute")
	b.fn(&a.cuDeviceTotalMem, "cuDeviceTotalMem_v2", "cuDeviceTotalMem")
	b.fn(&a.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain")
	b.fn(&a.cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease")
	b.fn(&a.cuCtxSetCurrent, "cuCtxSetCurrent")
	// cuCtxSynchronize_v2 (CUDA 13) is not an alias: it takes the context.
	// The plain export has been in every driver; use it when present.
	if !b.optional(&a.cuCtxSynchronize, "cuCtxSynchronize") {
		b.fn(&a.cuCtxSynchronizeV2, "cuCtxSynchronize_v2")
	}
	b.fn(&a.cuMemAlloc, "cuMemAlloc_v2", "cuMemAlloc")
	b.fn(&a.cuMemFree, "cuMemFree_v2", "cuMemFree")
	b.fn(&a.cuMemcpyHtoD, "cuMemcpyHtoD_v2", "cuMemcpyHtoD")
	b.fn(&a.cuMemcpyDtoH, "cuMemcpyDtoH_v2", "cuMemcpyDtoH")
	b.fn(&a.cuMemcpyDtoD, "cuMemcpyDtoD_v2", "cuMemcpyDtoD")
	b.optional(&a.cuMemcpy2D, "cuMemcpy2D_v2")
	b.fn(&a.cuModuleLoadData, "cuModuleLoadData")
	b.fn(&a.cuModuleGetFunction, "cuModuleGetFunction")
	b.fn(&a.cuModuleUnload, "cuModuleUnload")
	b.fn(&a.cuLaunchKernel, "cuLaunchKernel")
	b.optional(&a.cuLaunchKernelEx, "cuLaunchKernelEx")
	b.optional(&a.cuStreamCreateWithPriority, "cuStreamCreateWithPriority")
	b.optional(&a.cuCtxGetStreamPriorityRange, "cuCtxGetStreamPriorityRange")
	b.fn(&a.cuFuncGetAttribute, "cuFuncGetAttribute")
	b.fn(&a.cuFuncSetAttribute, "cuFuncSetAttribute")
	b.fn(&a.cuEventCreate, "cuEventCreate")
	b.fn(&a.cuEventRecord, "cuEventRecord")
	b.fn(&a.cuEventSynchronize, "cuEventSynchronize")
	b.fn(&a.cuEventDestroy, "cuEventDestroy_v2", "cuEventDestroy")
	b.fn(&a.cuEventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime")
	b.fn(&a.cuStreamCreate, "cuStreamCreate")
	b.fn(&a.cuStreamDestroy, "cuStreamDestroy_v2", "cuStreamDestroy")
	b.fn(&a.cuStreamWaitEvent, "cuStreamWaitEvent")
	b.fn(&a.cuOccupancyMaxActiveBlocks, "cuOccupancyMaxActiveBlocksPerMultiprocessor")
	b.fn(&a.cuGetErrorName, "cuGetErrorName")
	b.fn(&a.cuGetErrorString, "cuGetErrorString")
	if b.err != nil {
		return nil, unavailable("%v (driver too old?)", b.err)
	}
	return a, nil
}

// cString copies a NUL-terminated C string.
func cString(p *byte) string {
	if p == nil {
		return ""
	}
	var n int
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}

// cudaError is a failed driver call.
type cudaError struct {
	Op   string
	Code int32
	Name string
	Desc string
}

func (e *cudaError) Error() string {
	return fmt.Sprintf("cuda: %s: %s (%d): %s", e.Op, e.Name, e.Code, e.Desc)
}

func (a *cudaAPI) check(res int32, op string, args ...any) error {
	if res == cuSuccess {
		return nil
	}
	var name, desc *byte
	e := &cudaError{Op: fmt.Sprintf(op, args...), Code: res, Name: "CUDA_ERROR", Desc: "unknown error"}
	if a.cuGetErrorName(res, &name) == cuSuccess && name != nil {
		e.Name = cString(name)
	}
	if a.cuGetErrorString(res, &desc) == cuSuccess && desc != nil {
		e.Desc = cString(desc)
	}
	return e
}

// cudaDevice is a CUDA device with its primary context. Every driver call
// runs on ex (one locked OS thread with the context current).
type cudaDevice struct {
	api   *cudaAPI
	nvrtc *nvrtcAPI
	ex    *executor
	dev   int32
	ctx   uintptr
	props Props
	// stream is where launches go: 0 (the legacy default stream) but while a communicator's
	// StartAfter runs the launches its transfers send (NCCLComm.StartAfter). Read and written
	// on the executor only.
	stream uintptr

	closeOnce sync.Once
	closeErr  error
}

func openCUDA() (Device, error) { return openCUDAAt(-1) }

// openCUDAAt opens device ordinal (-1: TEMPEST_CUDA_DEVICE, else 0).
func openCUDAAt(ordinal int) (Device, error) { return openCUDAWrapped(ordinal, false) }

// openCUDAWrapped is openCUDAAt; wrap takes the ordinal modulo the devices present (a local
// rank picks one of the devices it sees, however many CUDA_VISIBLE_DEVICES leaves).
func openCUDAWrapped(ordinal int, wrap bool) (Device, error) {
	api, err := loadCUDA()
	if err != nil {
		return nil, err
	}
	nv, err := loadNVRTC()
	if err != nil {
		return nil, err
	}
	if s := os.Getenv("TEMPEST_CUDA_DEVICE"); s != "" && ordinal < 0 {
		ordinal, err = strconv.Atoi(s)
		if err != nil {
			return nil, fmt.Errorf("cuda backend: TEMPEST_CUDA_DEVICE=%q is not a device number", s)
		}
	}
	ordinal = max(ordinal, 0)
	d := &cudaDevice{api: api, nvrtc: nv, ex: newExecutor()}
	err = d.ex.do(func() error {
		if res := api.cuInit(0); res != cuSuccess {
			return markUnavailable(fmt.Errorf("cuda backend: %w", api.check(res, "cuInit")))
		}
		var n int32
		if err := api.check(api.cuDeviceGetCount(&n), "cuDeviceGetCount"); err != nil {
			return markUnavailable(fmt.Errorf("cuda backend: %w", err))
		}
		if n == 0 {
			return unavailable("cuda backend: no CUDA device")
		}
		if wrap {
			ordinal %= int(n)
		}
		if ordinal < 0 || ordinal >= int(n) {
			return fmt.Errorf("cuda backend: device %d requested, %d present", ordinal, n)
		}
		if err := api.check(api.cuDeviceGet(&d.dev, int32(ordinal)), "cuDeviceGet(%d)", ordinal); err != nil {
			return err
		}
		if err := api.check(api.cuDevicePrimaryCtxRetain(&d.ctx, d.dev), "cuDevicePrimaryCtxRetain"); err != nil {
			return err
		}
		if err := api.check(api.cuCtxSetCurrent(d.ctx), "cuCtxSetCurrent"); err != nil {
			api.cuDevicePrimaryCtxRelease(d.dev)
			d.ctx = 0
			return err
		}
		return d.queryProps()
	})
	if err != nil {
		d.ex.stop(func() error {
			if d.ctx != 0 {
				api.cuDevicePrimaryCtxRelease(d.dev)
			}
			return nil
		})
		return nil, err
	}
	return d, nil
}

// queryProps runs on the executor.
func (d *cudaDevice) queryProps() error {
	a := d.api
	attr := func(id int32) int {
		var v int32
		if a.cuDeviceGetAttribute(&v, id, d.dev) != cuSuccess {
			return 0
		}
		return int(v)
	}
	var name [256]byte
	if err := a.check(a.cuDeviceGetName(&name[0], int32(len(name)), d.dev), "cuDeviceGetName"); err != nil {
		return err
	}
	var total uintptr
	if err := a.check(a.cuDeviceTotalMem(&total, d.dev), "cuDeviceTotalMem"); err != nil {
		return err
	}
	var drv int32
	a.cuDriverGetVersion(&drv)
	p := Props{
		Backend:             "cuda",
		Name:                cString(&name[0]),
		Platform:            "NVIDIA CUDA",
		ComputeMajor:        attr(cuDevAttrComputeCapabilityMajor),
		ComputeMinor:        attr(cuDevAttrComputeCapabilityMinor),
		SMs:                 attr(cuDevAttrMultiprocessorCount),
		WarpSize:            attr(cuDevAttrWarpSize),
		MaxThreadsPerBlock:  attr(cuDevAttrMaxThreadsPerBlock),
		SharedPerBlock:      attr(cuDevAttrMaxSharedPerBlock),
		SharedPerBlockOptin: attr(cuDevAttrMaxSharedPerBlockOptin),
		SharedPerSM:         attr(cuDevAttrMaxSharedPerSM),
		RegsPerBlock:        attr(cuDevAttrMaxRegsPerBlock),
		RegsPerSM:           attr(cuDevAttrMaxRegsPerSM),
		MaxThreadsPerSM:     attr(cuDevAttrMaxThreadsPerSM),
		ClockKHz:            attr(cuDevAttrClockRate),
		MemClockKHz:         attr(cuDevAttrMemoryClockRate),
		MemBusWidthBits:     attr(cuDevAttrGlobalMemoryBusWidth),
		L2Bytes:             attr(cuDevAttrL2CacheSize),
		GlobalMem:           int64(total),
		Driver:              fmt.Sprintf("CUDA driver %d.%d", drv/1000, (drv%1000)/10),
		Compiler:            d.nvrtc.version,
	}
	if p.SharedPerBlockOptin < p.SharedPerBlock {
		p.SharedPerBlockOptin = p.SharedPerBlock
	}
	d.props = p
	return nil
}

func (d *cudaDevice) Props() Props { return d.props }

func (d *cudaDevice) Synchronize() error {
	return d.ex.do(func() error {
		return d.ctxSync()
	})
}

// ctxSync runs on the executor.
func (d *cudaDevice) ctxSync() error {
	if d.api.cuCtxSynchronize != nil {
		return d.api.check(d.api.cuCtxSynchronize(), "cuCtxSynchronize")
	}
	return d.api.check(d.api.cuCtxSynchronizeV2(d.ctx), "cuCtxSynchronize_v2")
}

func (d *cudaDevice) Close() error {
	d.closeOnce.Do(func() {
		d.closeErr = d.ex.stop(func() error {
			err := d.ctxSync()
			if e := d.api.check(d.api.cuDevicePrimaryCtxRelease(d.dev), "cuDevicePrimaryCtxRelease"); err == nil {
				err = e
			}
			return err
		})
	})
	return d.closeErr
}

// ---- memory ----

type cudaBuffer struct {
	d    *cudaDevice
	ptr  uint64
	size int64
	mu   sync.Mutex
}

func (d *cudaDevice) Alloc(bytes int64) (Buffer, error) {
	if bytes <= 0 {
		return nil, fmt.Errorf("cuda: Alloc(%d): size must be positive", bytes)
	}
	b := &cudaBuffer{d: d, size: bytes}
	err := d.ex.do(func() error {
		return d.api.check(d.api.cuMemAlloc(&b.ptr, uintptr(bytes)), "cuMemAlloc(%d bytes)", bytes)
	})
	if err != nil {
		return nil, err
	}
	return b, nil
}

func (b *cudaBuffer) Size() int64 { return b.size }

func (b *cudaBuffer) devPtr() (uint64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ptr == 0 {
		return 0, ErrClosed
	}
	return b.ptr, nil
}

func (b *cudaBuffer) Write(src []byte) error {
	if err := checkCopy("write", len(src), b.size); err != nil {
		return err
	}
	if len(src) == 0 {
		return nil
	}
	p, err := b.devPtr()
	if err != nil {
		return err
	}
	return b.d.ex.do(func() error {
		return b.d.api.check(b.d.api.cuMemcpyHtoD(p, unsafe.Pointer(&src[0]), uintptr(len(src))), "cuMemcpyHtoD(%d bytes)", len(src))
	})
}

func (b *cudaBuffer) Read(dst []byte) error {
	if err := checkCopy("read", len(dst), b.size); err != nil {
		return err
	}
	if len(dst) == 0 {
		return nil
	}
	p, err := b.devPtr()
	if err != nil {
		return err
	}
	return b.d.ex.do(func() error {
		return b.d.api.check(b.d.api.cuMemcpyDtoH(unsafe.Pointer(&dst[0]), p, uintptr(len(dst))), "cuMemcpyDtoH(%d bytes)", len(dst))
	})
}

func (b *cudaBuffer) Free() error {
	b.mu.Lock()
	p := b.ptr
	b.ptr = 0
	b.mu.Unlock()
	if p == 0 {
		return nil
	}
	return b.d.ex.do(func() error { return b.d.api.check(b.d.api.cuMemFree(p), "cuMemFree") })
}

// ---- modules and kernels ----

type cudaModule struct {
	d    *cudaDevice
	name string
	mod  uintptr
	mu   sync.Mutex
}

func (d *cudaDevice) Compile(name, src string, opt CompileOptions) (Module, error) {
	arch := opt.Arch
	if arch == "" {
		arch = fmt.Sprintf("sm_%d%d", d.props.ComputeMajor, d.props.ComputeMinor)
	}
	// NVRTC needs no context: compile on the caller's goroutine.
	cubin, err := d.nvrtc.compile(name, src, arch, opt)
	if err != nil {
		return nil, err
	}
	m := &cudaModule{d: d, name: name}
	err = d.ex.do(func() error {
		return d.api.check(d.api.cuModuleLoadData(&m.mod, unsafe.Pointer(&cubin[0])), "cuModuleLoadData(%s)", name)
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

func (m *cudaModule) open() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mod != 0
}

func (m *cudaModule) Close() error {
	m.mu.Lock()
	h := m.mod
	m.mod = 0
	m.mu.Unlock()
	if h == 0 {
		return nil
	}
	return m.d.ex.do(func() error { return m.d.api.check(m.d.api.cuModuleUnload(h), "cuModuleUnload(%s)", m.name) })
}

type cudaKernel struct {
	m     *cudaModule
	name  string
	fn    uintptr
	attrs KernelAttrs

	mu        sync.Mutex
	dynShared int // last CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES set
}

func (m *cudaModule) Kernel(name string) (Kernel, error) {
	m.mu.Lock()
	h := m.mod
	m.mu.Unlock()
	if h == 0 {
		return nil, ErrClosed
	}
	k := &cudaKernel{m: m, name: name}
	a := m.d.api
	err := m.d.ex.do(func() error {
		if err := a.check(a.cuModuleGetFunction(&k.fn, h, name), "cuModuleGetFunction(%q in %s; is it extern \"C\"?)", name, m.name); err != nil {
			return err
		}
		get := func(attr int32, what string) (int, error) {
			var v int32
			err := a.check(a.cuFuncGetAttribute(&v, attr, k.fn), "cuFuncGetAttribute(%s, %s)", name, what)
			return int(v), err
		}
		var err error
		if k.attrs.Regs, err = get(cuFuncAttrNumRegs, "NUM_REGS"); err != nil {
			return err
		}
		if k.attrs.LocalBytes, err = get(cuFuncAttrLocalSizeBytes, "LOCAL_SIZE_BYTES"); err != nil {
			return err
		}
		if k.attrs.StaticShared, err = get(cuFuncAttrSharedSizeBytes, "SHARED_SIZE_BYTES"); err != nil {
			return err
		}
		if k.attrs.MaxThreadsPerBlock, err = get(cuFuncAttrMaxThreadsPerBlock, "MAX_THREADS_PER_BLOCK"); err != nil {
			return err
		}
		// The default dynamic limit is 48 KB minus the static shared memory.
		k.dynShared, _ = get(cuFuncAttrMaxDynamicSharedSize, "MAX_DYNAMIC_SHARED_SIZE_BYTES")
		return nil
	})
	if err != nil {
		return nil, err
	}
	return k, nil
}

func (k *cudaKernel) Attrs() KernelAttrs { return k.attrs }

// ensureDynShared raises the kernel's dynamic shared memory limit when a
// launch needs more than the default 48 KB. Runs on the executor.
func (k *cudaKernel) ensureDynShared(bytes int) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if bytes <= k.dynShared || bytes <= defaultDynamicSharedLimit-k.attrs.StaticShared {
		return nil // within the limit already in force
	}
	optin := k.m.d.props.SharedPerBlockOptin
	if optin > 0 && bytes+k.attrs.StaticShared > optin {
		return fmt.Errorf("needs %d B dynamic + %d B static shared memory, device allows %d B per block", bytes, k.attrs.StaticShared, optin)
	}
	a := k.m.d.api
	if err := a.check(a.cuFuncSetAttribute(k.fn, cuFuncAttrMaxDynamicSharedSize, int32(bytes)), "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES=%d)", bytes); err != nil {
		return err
	}
	k.dynShared = bytes
	return nil
}

// packCUDAArgs lays the arguments out for cuLaunchKernel: one 8-byte slot
// per argument (values are at most 8 bytes, stored at the slot's start as
// C's little-endian layout has them) and an array of pointers to the slots.
// Both are Go heap memory that the caller keeps alive across the call.
func packCUDAArgs(args []any) (slab []uint64, params []unsafe.Pointer, err error) {
	if len(args) == 0 {
		return nil, nil, nil
	}
	slab = make([]uint64, len(args))
	params = make([]unsafe.Pointer, len(args))
	for i, a := range args {
		p := unsafe.Pointer(&slab[i])
		switch v := a.(type) {
		case *cudaBuffer:
			ptr, err := v.devPtr()
			if err != nil {
				return nil, nil, fmt.Errorf("argument %d: freed buffer", i)
			}
			*(*uint64)(p) = ptr
		case Buffer:
			return nil, nil, fmt.Errorf("argument %d: %T is not a CUDA buffer", i, a)
		case int32:
			*(*int32)(p) = v
		case uint32:
			*(*uint32)(p) = v
		case int64:
			*(*int64)(p) = v
		case uint64:
			*(*uint64)(p) = v
		case float32:
			*(*float32)(p) = v
		case float64:
			*(*float64)(p) = v
		default:
			return nil, nil, argTypeError(i, a)
		}
		params[i] = p
	}
	return slab, params, nil
}

func (k *cudaKernel) Launch(grid, block [3]int, sharedBytes int, args ...any) error {
	return k.launch(grid, block, sharedBytes, false, args)
}

// LaunchChained is Launch as a programmatic dependent launch (gpu.ChainedKernel), through
// cuLaunchKernelEx with CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION.
func (k *cudaKernel) LaunchChained(grid, block [3]int, sharedBytes int, args ...any) error {
	return k.launch(grid, block, sharedBytes, true, args)
}

// cuLaunchConfig and cuLaunchAttribute are the driver's CUlaunchConfig and CUlaunchAttribute
// (cuda.h): Go lays them out as C does (CUlaunchAttribute's value is a 64-byte union).
type cuLaunchConfig struct {
	gridDimX, gridDimY, gridDimZ    uint32
	blockDimX, blockDimY, blockDimZ uint32
	sharedMemBytes                  uint32
	_                               uint32
	hStream                         uintptr
	attrs                           *cuLaunchAttribute
	numAttrs                        uint32
	_                               uint32
}

type cuLaunchAttribute struct {
	id    uint32
	_     uint32
	value [64]byte
}

// cuLaunchAttributeProgrammaticStreamSerialization is CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION.
const cuLaunchAttributeProgrammaticStreamSerialization = 6

func (k *cudaKernel) launch(grid, block [3]int, sharedBytes int, chained bool, args []any) error {
	fail := func(err error) error {
		return fmt.Errorf("cuda: launch %s grid=%s block=%s shared=%d B: %w", k.name, dim3String(grid), dim3String(block), sharedBytes, err)
	}
	if err := checkLaunchDims(grid, block, sharedBytes); err != nil {
		return fail(err)
	}
	if n := block[0] * block[1] * block[2]; n > k.attrs.MaxThreadsPerBlock {
		return fail(fmt.Errorf("%d threads per block, kernel allows %d%s", n, k.attrs.MaxThreadsPerBlock, regsHint(k.attrs, k.m.d.props.RegsPerBlock, n)))
	}
	a := k.m.d.api
	if chained && a.cuLaunchKernelEx == nil {
		return fail(fmt.Errorf("the CUDA driver has no cuLaunchKernelEx (programmatic dependent launches need CUDA 12 or newer); drop chain from the plan"))
	}
	slab, params, err := packCUDAArgs(args)
	if err != nil {
		return fail(err)
	}
	var cfg *cuLaunchConfig // chained launches only: plain ones allocate nothing more
	if chained {
		attr := &cuLaunchAttribute{id: cuLaunchAttributeProgrammaticStreamSerialization}
		attr.value[0] = 1 // programmaticStreamSerializationAllowed, an int: 1
		cfg = &cuLaunchConfig{
			gridDimX: uint32(grid[0]), gridDimY: uint32(grid[1]), gridDimZ: uint32(grid[2]),
			blockDimX: uint32(block[0]), blockDimY: uint32(block[1]), blockDimZ: uint32(block[2]),
			sharedMemBytes: uint32(sharedBytes), attrs: attr, numAttrs: 1,
		}
	}
	err = k.m.d.ex.do(func() error {
		if !k.m.open() {
			return fmt.Errorf("module %s is closed", k.m.name)
		}
		if err := k.ensureDynShared(sharedBytes); err != nil {
			return err
		}
		var pp unsafe.Pointer
		if len(params) > 0 {
			pp = unsafe.Pointer(&params[0])
		}
		if cfg != nil {
			cfg.hStream = k.m.d.stream
			return a.check(a.cuLaunchKernelEx(unsafe.Pointer(cfg), k.fn, pp, nil), "cuLaunchKernelEx")
		}
		res := a.cuLaunchKernel(k.fn,
			uint32(grid[0]), uint32(grid[1]), uint32(grid[2]),
			uint32(block[0]), uint32(block[1]), uint32(block[2]),
			uint32(sharedBytes), k.m.d.stream, pp, nil)
		return a.check(res, "cuLaunchKernel")
	})
	// The driver copies the parameter values during the launch call.
	runtime.KeepAlive(slab)
	runtime.KeepAlive(params)
	runtime.KeepAlive(cfg) // and its attribute, which it points to
	if err != nil {
		return fail(err)
	}
	return nil
}

func (k *cudaKernel) MaxActiveBlocksPerSM(blockThreads, dynamicShared int) (int, error) {
	if blockThreads <= 0 || dynamicShared < 0 {
		return 0, fmt.Errorf("cuda: occupancy of %s: bad block size %d / shared %d", k.name, blockThreads, dynamicShared)
	}
	if blockThreads > k.attrs.MaxThreadsPerBlock {
		return 0, nil
	}
	if optin := k.m.d.props.SharedPerBlockOptin; optin > 0 && dynamicShared+k.attrs.StaticShared > optin {
		return 0, nil
	}
	var n int32
	a := k.m.d.api
	err := k.m.d.ex.do(func() error {
		if !k.m.open() {
			return fmt.Errorf("module %s is closed", k.m.name)
		}
		// The calculator honours the function's dynamic shared limit.
		if err := k.ensureDynShared(dynamicShared); err != nil {
			return err
		}
		return a.check(a.cuOccupancyMaxActiveBlocks(&n, k.fn, int32(blockThreads), uintptr(dynamicShared)),
			"cuOccupancyMaxActiveBlocksPerMultiprocessor(%s, %d threads, %d B)", k.name, blockThreads, dynamicShared)
	})
	return int(n), err
}

// ---- events ----

type cudaEvent struct {
	d  *cudaDevice
	ev uintptr
	mu sync.Mutex
}

func (d *cudaDevice) NewEvent() (Event, error) {
	e := &cudaEvent{d: d}
	err := d.ex.do(func() error { return d.api.check(d.api.cuEventCreate(&e.ev, cuEventDefault), "cuEventCreate") })
	if err != nil {
		return nil, err
	}
	return e, nil
}

func (e *cudaEvent) handle() (uintptr, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ev == 0 {
		return 0, ErrClosed
	}
	return e.ev, nil
}

func (e *cudaEvent) Record() error {
	h, err := e.handle()
	if err != nil {
		return err
	}
	return e.d.ex.do(func() error { return e.d.api.check(e.d.api.cuEventRecord(h, 0), "cuEventRecord") })
}

func (e *cudaEvent) Synchronize() error {
	h, err := e.handle()
	if err != nil {
		return err
	}
	return e.d.ex.do(func() error { return e.d.api.check(e.d.api.cuEventSynchronize(h), "cuEventSynchronize") })
}

func (e *cudaEvent) ElapsedMs(since Event) (float64, error) {
	s, ok := since.(*cudaEvent)
	if !ok {
		return 0, fmt.Errorf("cuda: ElapsedMs since a %T", since)
	}
	h, err := e.handle()
	if err != nil {
		return 0, err
	}
	hs, err := s.handle()
	if err != nil {
		return 0, err
	}
	var ms float32
	err = e.d.ex.do(func() error {
		if err := e.d.api.check(e.d.api.cuEventSynchronize(h), "cuEventSynchronize"); err != nil {
			return err
		}
		return e.d.api.check(e.d.api.cuEventElapsedTime(&ms, hs, h), "cuEventElapsedTime")
	})
	if err != nil {
		return 0, err
	}
	if math.IsNaN(float64(ms)) {
		return 0, fmt.Errorf("cuda: cuEventElapsedTime returned NaN")
	}
	return float64(ms), nil
}

func (e *cudaEvent) Free() error {
	e.mu.Lock()
	h := e.ev
	e.ev = 0
	e.mu.Unlock()
	if h == 0 {
		return nil
	}
	return e.d.ex.do(func() error { return e.d.api.check(e.d.api.cuEventDestroy(h), "cuEventDestroy") })
}
