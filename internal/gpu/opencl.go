package gpu

import (
	"fmt"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"unsafe"
)

// OpenCL constants (CL/cl.h, CL/cl_ext.h).
const (
	clSuccess              = 0
	clDeviceNotFound       = -1
	clBuildProgramFailure  = -11
	clPlatformNotFoundKHR  = -1001
	clDeviceTypeCPU        = 1 << 1
	clDeviceTypeGPU        = 1 << 2
	clDeviceTypeAll        = 0xFFFFFFFF
	clTrue                 = 1
	clMemReadWrite         = 1 << 0
	clQueueProperties      = 0x1093
	clQueueProfilingEnable = 1 << 1
	clContextPlatform      = 0x1084

	clPlatformVersion = 0x0901
	clPlatformName    = 0x0902
	clPlatformVendor  = 0x0903

	clDeviceType                = 0x1000
	clDeviceMaxComputeUnits     = 0x1002
	clDeviceMaxWorkGroupSize    = 0x1004
	clDeviceMaxClockFrequency   = 0x100C
	clDeviceGlobalMemCacheSize  = 0x101E
	clDeviceGlobalMemSize       = 0x101F
	clDeviceLocalMemSize        = 0x1023
	clDeviceName                = 0x102B
	clDeviceVendor              = 0x102C
	clDriverVersion             = 0x102D
	clDeviceVersion             = 0x102F
	clDeviceOpenCLCVersion      = 0x103D
	clDeviceComputeCapMajorNV   = 0x4000
	clDeviceComputeCapMinorNV   = 0x4001
	clDeviceRegistersPerBlockNV = 0x4002
	clDeviceWarpSizeNV          = 0x4003
	clDeviceWavefrontWidthAMD   = 0x4043
	clProgramBuildLog           = 0x1183
	clKernelNumArgs             = 0x1191
	clKernelWorkGroupSize       = 0x11B0
	clKernelLocalMemSize        = 0x11B2
	clKernelPrivateMemSize      = 0x11B4
	clProfilingCommandStart     = 0x1282
	clProfilingCommandEnd       = 0x1283
	openclLibHint               = "is an OpenCL ICD loader installed? e.g. apt-get install ocl-icd-libopencl1 pocl-opencl-icd"
)

var clErrorNames = map[int32]string{
	0: "CL_SUCCESS", -1: "CL_DEVICE_NOT_FOUND", -2: "CL_DEVICE_NOT_AVAILABLE", -3: "CL_COMPILER_NOT_AVAILABLE",
	-4: "CL_MEM_OBJECT_ALLOCATION_FAILURE", -5: "CL_OUT_OF_RESOURCES", -6: "CL_OUT_OF_HOST_MEMORY",
	-7: "CL_PROFILING_INFO_NOT_AVAILABLE", -8: "CL_MEM_COPY_OVERLAP", -9: "CL_IMAGE_FORMAT_MISMATCH",
	-10: "CL_IMAGE_FORMAT_NOT_SUPPORTED", -11: "CL_BUILD_PROGRAM_FAILURE", -12: "CL_MAP_FAILURE",
	-13: "CL_MISALIGNED_SUB_BUFFER_OFFSET", -14: "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST",
	-15: "CL_COMPILE_PROGRAM_FAILURE", -16: "CL_LINKER_NOT_AVAILABLE", -17: "CL_LINK_PROGRAM_FAILURE",
	-18: "CL_DEVICE_PARTITION_FAILED", -19: "CL_KERNEL_ARG_INFO_NOT_AVAILABLE",
	-30: "CL_INVALID_VALUE", -31: "CL_INVALID_DEVICE_TYPE", -32: "CL_INVALID_PLATFORM", -33: "CL_INVALID_DEVICE",
	-34: "CL_INVALID_CONTEXT", -35: "CL_INVALID_QUEUE_PROPERTIES", -36: "CL_INVALID_COMMAND_QUEUE",
	-37: "CL_INVALID_HOST_PTR", -38: "CL_INVALID_MEM_OBJECT", -39: "CL_INVALID_IMAGE_FORMAT_DESCRIPTOR",
	-40: "CL_INVALID_IMAGE_SIZE", -41: "CL_INVALID_SAMPLER", -42: "CL_INVALID_BINARY", -43: "CL_INVALID_BUILD_OPTIONS",
	-44: "CL_INVALID_PROGRAM", -45: "CL_INVALID_PROGRAM_EXECUTABLE", -46: "CL_INVALID_KERNEL_NAME",
	-47: "CL_INVALID_KERNEL_DEFINITION", -48: "CL_INVALID_KERNEL", -49: "CL_INVALID_ARG_INDEX",
	-50: "CL_INVALID_ARG_VALUE", -51: "CL_INVALID_ARG_SIZE", -52: "CL_INVALID_KERNEL_ARGS",
	-53: "CL_INVALID_WORK_DIMENSION", -54: "CL_INVALID_WORK_GROUP_SIZE", -55: "CL_INVALID_WORK_ITEM_SIZE",
	-56: "CL_INVALID_GLOBAL_OFFSET", -57: "CL_INVALID_EVENT_WAIT_LIST", -58: "CL_INVALID_EVENT",
	-59: "CL_INVALID_OPERATION", -60: "CL_INVALID_GL_OBJECT", -61: "CL_INVALID_BUFFER_SIZE",
	-62: "CL_INVALID_MIP_LEVEL", -63: "CL_INVALID_GLOBAL_WORK_SIZE", -64: "CL_INVALID_PROPERTY",
	-65: "CL_INVALID_IMAGE_DESCRIPTOR", -66: "CL_INVALID_COMPILER_OPTIONS", -67: "CL_INVALID_LINKER_OPTIONS",
	-68: "CL_INVALID_DEVICE_PARTITION_COUNT", -69: "CL_INVALID_PIPE_SIZE", -70: "CL_INVALID_DEVICE_QUEUE",
	-1001: "CL_PLATFORM_NOT_FOUND_KHR",
}

func clErrName(code int32) string {
	if n, ok := clErrorNames[code]; ok {
		return n
	}
	return fmt.Sprintf("CL error %d", code)
}

type clError struct {
	Op   string
	Code int32
}

func (e *clError) Error() string {
	return fmt.Sprintf("opencl: %s: %s (%d)", e.Op, clErrName(e.Code), e.Code)
}

func clCheck(code int32, op string, args ...any) error {
	if code == clSuccess {
		return nil
	}
	return &clError{Op: fmt.Sprintf(op, args...), Code: code}
}

// clAPI holds the OpenCL entry points. Every cl_* handle is a uintptr;
// size_t is uintptr; cl_bitfield/cl_ulong is uint64.
type clAPI struct {
	lib *dylib

	clGetPlatformIDs                   func(n uint32, platforms *uintptr, num *uint32) int32
	clGetPlatformInfo                  func(p uintptr, param uint32, size uintptr, value unsafe.Pointer, sizeRet *uintptr) int32
	clGetDeviceIDs                     func(p uintptr, typ uint64, n uint32, devices *uintptr, num *uint32) int32
	clGetDeviceInfo                    func(d uintptr, param uint32, size uintptr, value unsafe.Pointer, sizeRet *uintptr) int32
	clCreateContext                    func(props *uintptr, n uint32, devices *uintptr, notify, user uintptr, errcode *int32) uintptr
	clCreateCommandQueueWithProperties func(ctx, dev uintptr, props *uint64, errcode *int32) uintptr
	clCreateCommandQueue               func(ctx, dev uintptr, props uint64, errcode *int32) uintptr
	clCreateBuffer                     func(ctx uintptr, flags uint64, size uintptr, host unsafe.Pointer, errcode *int32) uintptr
	clEnqueueWriteBuffer               func(q, mem uintptr, blocking uint32, offset, size uintptr, ptr unsafe.Pointer, nWait uint32, wait unsafe.Pointer, ev *uintptr) int32
	clEnqueueReadBuffer                func(q, mem uintptr, blocking uint32, offset, size uintptr, ptr unsafe.Pointer, nWait uint32, wait unsafe.Pointer, ev *uintptr) int32
	clEnqueueCopyBuffer                func(q, src, dst uintptr, srcOff, dstOff, size uintptr, nWait uint32, wait unsafe.Pointer, ev *uintptr) int32
	clCreateProgramWithSource          func(ctx uintptr, count uint32, strs **byte, lengths *uintptr, errcode *int32) uintptr
	clBuildProgram                     func(prog uintptr, n uint32, devices *uintptr, options string, notify, user uintptr) int32
	clGetProgramBuildInfo              func(prog, dev uintptr, param uint32, size uintptr, value unsafe.Pointer, sizeRet *uintptr) int32
	clCreateKernel                     func(prog uintptr, name string, errcode *int32) uintptr
	clGetKernelInfo                    func(k uintptr, param uint32, size uintptr, value unsafe.Pointer, sizeRet *uintptr) int32
	clSetKernelArg                     func(k uintptr, idx uint32, size uintptr, value unsafe.Pointer) int32
	clGetKernelWorkGroupInfo           func(k, dev uintptr, param uint32, size uintptr, value unsafe.Pointer, sizeRet *uintptr) int32
	clEnqueueNDRangeKernel             func(q, k uintptr, dim uint32, offset, global, local *uintptr, nWait uint32, wait unsafe.Pointer, ev *uintptr) int32
	clEnqueueMarkerWithWaitList        func(q uintptr, nWait uint32, wait unsafe.Pointer, ev *uintptr) int32
	clEnqueueMarker                    func(q uintptr, ev *uintptr) int32
	clWaitForEvents                    func(n uint32, evs *uintptr) int32
	clGetEventProfilingInfo            func(ev uintptr, param uint32, size uintptr, value unsafe.Pointer, sizeRet *uintptr) int32
	clFinish                           func(q uintptr) int32
	clReleaseEvent                     func(ev uintptr) int32
	clRetainEvent                      func(ev uintptr) int32
	clReleaseMemObject                 func(m uintptr) int32
	clReleaseKernel                    func(k uintptr) int32
	clReleaseProgram                   func(p uintptr) int32
	clReleaseCommandQueue              func(q uintptr) int32
	clReleaseContext                   func(c uintptr) int32

	clRectAPI // optional region copies (copy2d.go)
}

// loadOpenCL loads the ICD loader and binds the API.
func loadOpenCL() (*clAPI, error) {
	lib, err := loadLibrary("opencl", openclLibNames, envLibOpenCL, openclLibHint)
	if err != nil {
		return nil, err
	}
	a := &clAPI{lib: lib}
	b := &binder{l: lib}
	b.fn(&a.clGetPlatformIDs, "clGetPlatformIDs")
	b.fn(&a.clGetPlatformInfo, "clGetPlatformInfo")
	b.fn(&a.clGetDeviceIDs, "clGetDeviceIDs")
	b.fn(&a.clGetDeviceInfo, "clGetDeviceInfo")
	b.fn(&a.clCreateContext, "clCreateContext")
	b.fn(&a.clCreateCommandQueue, "clCreateCommandQueue")
	b.optional(&a.clCreateCommandQueueWithProperties, "clCreateCommandQueueWithProperties")
	b.fn(&a.clCreateBuffer, "clCreateBuffer")
	b.fn(&a.clEnqueueWriteBuffer, "clEnqueueWriteBuffer")
	b.fn(&a.clEnqueueReadBuffer, "clEnqueueReadBuffer")
	b.fn(&a.clEnqueueCopyBuffer, "clEnqueueCopyBuffer")
	a.bindRect(b)
	b.fn(&a.clCreateProgramWithSource, "clCreateProgramWithSource")
	b.fn(&a.clBuildProgram, "clBuildProgram")
	b.fn(&a.clGetProgramBuildInfo, "clGetProgramBuildInfo")
	b.fn(&a.clCreateKernel, "clCreateKernel")
	b.fn(&a.clGetKernelInfo, "clGetKernelInfo")
	b.fn(&a.clSetKernelArg, "clSetKernelArg")
	b.fn(&a.clGetKernelWorkGroupInfo, "clGetKernelWorkGroupInfo")
	b.fn(&a.clEnqueueNDRangeKernel, "clEnqueueNDRangeKernel")
	b.optional(&a.clEnqueueMarkerWithWaitList, "clEnqueueMarkerWithWaitList")
	b.optional(&a.clEnqueueMarker, "clEnqueueMarker")
	b.fn(&a.clWaitForEvents, "clWaitForEvents")
	b.fn(&a.clGetEventProfilingInfo, "clGetEventProfilingInfo")
	b.fn(&a.clFinish, "clFinish")
	b.fn(&a.clReleaseEvent, "clReleaseEvent")
	b.fn(&a.clRetainEvent, "clRetainEvent")
	b.fn(&a.clReleaseMemObject, "clReleaseMemObject")
	b.fn(&a.clReleaseKernel, "clReleaseKernel")
	b.fn(&a.clReleaseProgram, "clReleaseProgram")
	b.fn(&a.clReleaseCommandQueue, "clReleaseCommandQueue")
	b.fn(&a.clReleaseContext, "clReleaseContext")
	if b.err != nil {
		return nil, unavailable("%v", b.err)
	}
	if a.clEnqueueMarkerWithWaitList == nil && a.clEnqueueMarker == nil {
		return nil, unavailable("opencl backend: %s has neither clEnqueueMarkerWithWaitList nor clEnqueueMarker", lib.path)
	}
	return a, nil
}

// info queries fetch typed values through the clGet*Info pattern.
type clInfoFn func(param uint32, size uintptr, value unsafe.Pointer, sizeRet *uintptr) int32

func clInfoString(f clInfoFn, param uint32) (string, error) {
	var n uintptr
	if code := f(param, 0, nil, &n); code != clSuccess {
		return "", clCheck(code, "info 0x%x size", param)
	}
	if n == 0 {
		return "", nil
	}
	buf := make([]byte, n)
	if code := f(param, n, unsafe.Pointer(&buf[0]), nil); code != clSuccess {
		return "", clCheck(code, "info 0x%x", param)
	}
	return strings.TrimRight(string(buf), "\x00 "), nil
}

func clInfoU32(f clInfoFn, param uint32) (uint32, error) {
	var v uint32
	return v, clCheck(f(param, 4, unsafe.Pointer(&v), nil), "info 0x%x", param)
}

func clInfoU64(f clInfoFn, param uint32) (uint64, error) {
	var v uint64
	return v, clCheck(f(param, 8, unsafe.Pointer(&v), nil), "info 0x%x", param)
}

func clInfoSize(f clInfoFn, param uint32) (uintptr, error) {
	var v uintptr
	return v, clCheck(f(param, unsafe.Sizeof(v), unsafe.Pointer(&v), nil), "info 0x%x", param)
}

var clVersionRE = regexp.MustCompile(`OpenCL (\d+)\.(\d+)`)

// clVersion parses "OpenCL X.Y ..." into X*100+Y*10 (120, 200, 300); 0 if unknown.
func clVersion(s string) int {
	m := clVersionRE.FindStringSubmatch(s)
	if m == nil {
		return 0
	}
	maj, _ := strconv.Atoi(m[1])
	mn, _ := strconv.Atoi(m[2])
	return maj*100 + mn*10
}

type clDevice struct {
	api      *clAPI
	platform uintptr
	dev      uintptr
	ctx      uintptr
	queue    uintptr
	version  int // platform version, 120 = OpenCL 1.2
	nvidia   bool
	props    Props

	mu     sync.Mutex
	closed bool

	// Event timing (opencl_events.go). evMu guards every event's state.
	evMu         sync.Mutex
	launchTiming bool       // time with launch events instead of markers
	lastLaunch   uintptr    // event of the last kernel enqueued (launch timing)
	pending      []*clEvent // recorded events waiting for the next launch
}

func (d *clDevice) devInfo() clInfoFn {
	return func(param uint32, size uintptr, value unsafe.Pointer, sizeRet *uintptr) int32 {
		return d.api.clGetDeviceInfo(d.dev, param, size, value, sizeRet)
	}
}

// clOpenMu serialises device discovery: PoCL's platform and device queries are not safe to
// run from two goroutines at once (the second one finds no device).
var clOpenMu sync.Mutex

func openOpenCL() (Device, error) { return openOpenCLAt(0) }

// openOpenCLAt opens the index-th device in openOpenCL's order (GPUs first).
func openOpenCLAt(index int) (Device, error) {
	clOpenMu.Lock()
	defer clOpenMu.Unlock()
	api, err := loadOpenCL()
	if err != nil {
		return nil, err
	}
	var np uint32
	code := api.clGetPlatformIDs(0, nil, &np)
	if code == clPlatformNotFoundKHR || (code == clSuccess && np == 0) {
		return nil, unavailable("opencl backend: no OpenCL platform (the ICD loader %s found no driver; install one, e.g. pocl-opencl-icd)", api.lib.path)
	}
	if code != clSuccess {
		return nil, markUnavailable(fmt.Errorf("opencl backend: %w", clCheck(code, "clGetPlatformIDs")))
	}
	platforms := make([]uintptr, np)
	if err := clCheck(api.clGetPlatformIDs(np, &platforms[0], nil), "clGetPlatformIDs"); err != nil {
		return nil, markUnavailable(fmt.Errorf("opencl backend: %w", err))
	}
	filter := strings.ToLower(strings.TrimSpace(os.Getenv("TEMPEST_OPENCL_PLATFORM")))
	type cand struct{ p, d uintptr }
	var gpus, others []cand
	var seen []string
	for _, p := range platforms {
		pinfo := func(param uint32, size uintptr, value unsafe.Pointer, sizeRet *uintptr) int32 {
			return api.clGetPlatformInfo(p, param, size, value, sizeRet)
		}
		name, _ := clInfoString(pinfo, clPlatformName)
		vendor, _ := clInfoString(pinfo, clPlatformVendor)
		seen = append(seen, name)
		if filter != "" && !strings.Contains(strings.ToLower(name+" "+vendor), filter) {
			continue
		}
		var nd uint32
		if api.clGetDeviceIDs(p, clDeviceTypeAll, 0, nil, &nd) != clSuccess || nd == 0 {
			continue
		}
		devs := make([]uintptr, nd)
		if api.clGetDeviceIDs(p, clDeviceTypeAll, nd, &devs[0], nil) != clSuccess {
			continue
		}
		for _, dv := range devs {
			var typ uint64
			api.clGetDeviceInfo(dv, clDeviceType, 8, unsafe.Pointer(&typ), nil)
			if typ&clDeviceTypeGPU != 0 {
				gpus = append(gpus, cand{p, dv})
			} else {
				others = append(others, cand{p, dv})
			}
		}
	}
	all := append(gpus, others...)
	if len(all) == 0 {
		if filter != "" {
			return nil, unavailable("opencl backend: no OpenCL device on a platform matching TEMPEST_OPENCL_PLATFORM=%q (platforms: %s)", filter, strings.Join(seen, ", "))
		}
		return nil, unavailable("opencl backend: no OpenCL device (platforms: %s)", strings.Join(seen, ", "))
	}
	if index < 0 || index >= len(all) {
		return nil, fmt.Errorf("opencl backend: device %d requested, %d present", index, len(all))
	}
	d := &clDevice{api: api, platform: all[index].p, dev: all[index].d}
	if err := d.init(); err != nil {
		d.release()
		return nil, err
	}
	return d, nil
}

func (d *clDevice) init() error {
	a := d.api
	pinfo := func(param uint32, size uintptr, value unsafe.Pointer, sizeRet *uintptr) int32 {
		return a.clGetPlatformInfo(d.platform, param, size, value, sizeRet)
	}
	pname, _ := clInfoString(pinfo, clPlatformName)
	pver, _ := clInfoString(pinfo, clPlatformVersion)
	d.version = clVersion(pver)
	di := d.devInfo()
	name, err := clInfoString(di, clDeviceName)
	if err != nil {
		return fmt.Errorf("opencl: device name: %w", err)
	}
	vendor, _ := clInfoString(di, clDeviceVendor)
	dver, _ := clInfoString(di, clDeviceVersion)
	if v := clVersion(dver); v > 0 && (d.version == 0 || v < d.version) {
		d.version = v // the device may support less than its platform
	}
	d.nvidia = strings.Contains(strings.ToUpper(vendor+pname), "NVIDIA")
	drv, _ := clInfoString(di, clDriverVersion)
	clc, _ := clInfoString(di, clDeviceOpenCLCVersion)
	cu, _ := clInfoU32(di, clDeviceMaxComputeUnits)
	wg, _ := clInfoSize(di, clDeviceMaxWorkGroupSize)
	clock, _ := clInfoU32(di, clDeviceMaxClockFrequency)
	l2, _ := clInfoU64(di, clDeviceGlobalMemCacheSize)
	gmem, _ := clInfoU64(di, clDeviceGlobalMemSize)
	lmem, _ := clInfoU64(di, clDeviceLocalMemSize)
	warp := 1
	if w, err := clInfoU32(di, clDeviceWarpSizeNV); err == nil && w > 0 {
		warp = int(w)
	} else if w, err := clInfoU32(di, clDeviceWavefrontWidthAMD); err == nil && w > 0 {
		warp = int(w)
	}
	regs := 0
	if r, err := clInfoU32(di, clDeviceRegistersPerBlockNV); err == nil {
		regs = int(r)
	}
	var typ uint64
	a.clGetDeviceInfo(d.dev, clDeviceType, 8, unsafe.Pointer(&typ), nil)
	d.props = Props{
		CPU:                 typ&clDeviceTypeCPU != 0,
		Backend:             "opencl",
		Name:                name,
		Platform:            pname,
		SMs:                 int(cu),
		WarpSize:            warp,
		MaxThreadsPerBlock:  int(wg),
		SharedPerBlock:      int(lmem),
		SharedPerBlockOptin: int(lmem),
		SharedPerSM:         int(lmem),
		RegsPerBlock:        regs,
		MaxThreadsPerSM:     int(wg),
		ClockKHz:            int(clock) * 1000,
		L2Bytes:             int(l2),
		GlobalMem:           int64(gmem),
		Driver:              strings.TrimSpace(drv + " (" + pname + ")"),
		Compiler:            clc,
	}
	if d.nvidia {
		// An NVIDIA SM holds up to 2048 resident threads on recent parts;
		// OpenCL cannot say, so use two maximal blocks as the estimate.
		d.props.MaxThreadsPerSM = 2 * int(wg)
	}

	var code int32
	props := []uintptr{clContextPlatform, d.platform, 0}
	devs := []uintptr{d.dev}
	d.ctx = a.clCreateContext(&props[0], 1, &devs[0], 0, 0, &code)
	if err := clCheck(code, "clCreateContext"); err != nil {
		return err
	}
	if d.version >= 200 && a.clCreateCommandQueueWithProperties != nil {
		qp := []uint64{clQueueProperties, clQueueProfilingEnable, 0}
		d.queue = a.clCreateCommandQueueWithProperties(d.ctx, d.dev, &qp[0], &code)
	} else {
		d.queue = a.clCreateCommandQueue(d.ctx, d.dev, clQueueProfilingEnable, &code)
	}
	if err := clCheck(code, "clCreateCommandQueue(PROFILING_ENABLE)"); err != nil {
		d.queue = 0
		return err
	}
	return d.chooseTiming()
}

func (d *clDevice) release() {
	d.evMu.Lock()
	if d.lastLaunch != 0 {
		d.api.clReleaseEvent(d.lastLaunch)
		d.lastLaunch = 0
	}
	d.evMu.Unlock()
	if d.queue != 0 {
		d.api.clReleaseCommandQueue(d.queue)
		d.queue = 0
	}
	if d.ctx != 0 {
		d.api.clReleaseContext(d.ctx)
		d.ctx = 0
	}
}

func (d *clDevice) Props() Props { return d.props }

func (d *clDevice) isClosed() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.closed
}

func (d *clDevice) Synchronize() error {
	if d.isClosed() {
		return ErrClosed
	}
	return clCheck(d.api.clFinish(d.queue), "clFinish")
}

func (d *clDevice) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	d.mu.Unlock()
	err := clCheck(d.api.clFinish(d.queue), "clFinish")
	d.release()
	return err
}

// ---- memory ----

type clBuffer struct {
	d    *clDevice
	mem  uintptr
	size int64
	mu   sync.Mutex
}

func (d *clDevice) Alloc(bytes int64) (Buffer, error) {
	if bytes <= 0 {
		return nil, fmt.Errorf("opencl: Alloc(%d): size must be positive", bytes)
	}
	if d.isClosed() {
		return nil, ErrClosed
	}
	var code int32
	m := d.api.clCreateBuffer(d.ctx, clMemReadWrite, uintptr(bytes), nil, &code)
	if err := clCheck(code, "clCreateBuffer(%d bytes)", bytes); err != nil {
		return nil, err
	}
	return &clBuffer{d: d, mem: m, size: bytes}, nil
}

func (b *clBuffer) Size() int64 { return b.size }

func (b *clBuffer) handle() (uintptr, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.mem == 0 {
		return 0, ErrClosed
	}
	return b.mem, nil
}

func (b *clBuffer) Write(src []byte) error {
	if err := checkCopy("write", len(src), b.size); err != nil {
		return err
	}
	if len(src) == 0 {
		return nil
	}
	m, err := b.handle()
	if err != nil {
		return err
	}
	if b.d.isClosed() {
		return ErrClosed
	}
	code := b.d.api.clEnqueueWriteBuffer(b.d.queue, m, clTrue, 0, uintptr(len(src)), unsafe.Pointer(&src[0]), 0, nil, nil)
	runtime.KeepAlive(src)
	return clCheck(code, "clEnqueueWriteBuffer(%d bytes)", len(src))
}

func (b *clBuffer) Read(dst []byte) error {
	if err := checkCopy("read", len(dst), b.size); err != nil {
		return err
	}
	if len(dst) == 0 {
		return nil
	}
	m, err := b.handle()
	if err != nil {
		return err
	}
	if b.d.isClosed() {
		return ErrClosed
	}
	code := b.d.api.clEnqueueReadBuffer(b.d.queue, m, clTrue, 0, uintptr(len(dst)), unsafe.Pointer(&dst[0]), 0, nil, nil)
	runtime.KeepAlive(dst)
	return clCheck(code, "clEnqueueReadBuffer(%d bytes)", len(dst))
}

func (b *clBuffer) Free() error {
	b.mu.Lock()
	m := b.mem
	b.mem = 0
	b.mu.Unlock()
	if m == 0 {
		return nil
	}
	return clCheck(b.d.api.clReleaseMemObject(m), "clReleaseMemObject")
}

// ---- programs and kernels ----

type clModule struct {
	d       *clDevice
	name    string
	prog    uintptr
	mu      sync.Mutex
	kernels []*clKernel // released by Close
}

// clBuildOptions builds the option string. OpenCL takes one string, so a
// define whose value contains white space is refused.
func (d *clDevice) clBuildOptions(opt CompileOptions) (string, error) {
	var opts []string
	if opt.FastMath {
		opts = append(opts, "-cl-fast-relaxed-math")
	}
	if opt.MaxRegs > 0 && d.nvidia {
		opts = append(opts, fmt.Sprintf("-cl-nv-maxrregcount=%d", opt.MaxRegs))
	}
	for _, f := range defineFlags(opt.Defines) {
		if strings.ContainsAny(f, " \t\n\"'") {
			return "", fmt.Errorf("opencl: define %q contains white space or quotes", f)
		}
		opts = append(opts, f)
	}
	opts = append(opts, opt.Extra...)
	return strings.Join(opts, " "), nil
}

func (d *clDevice) Compile(name, src string, opt CompileOptions) (Module, error) {
	if d.isClosed() {
		return nil, ErrClosed
	}
	options, err := d.clBuildOptions(opt)
	if err != nil {
		return nil, err
	}
	a := d.api
	srcb := []byte(src)
	if len(srcb) == 0 {
		return nil, fmt.Errorf("opencl: compiling %s: empty source", name)
	}
	strs := []*byte{&srcb[0]}
	lens := []uintptr{uintptr(len(srcb))}
	var code int32
	prog := a.clCreateProgramWithSource(d.ctx, 1, &strs[0], &lens[0], &code)
	runtime.KeepAlive(srcb)
	runtime.KeepAlive(strs)
	if err := clCheck(code, "clCreateProgramWithSource(%s)", name); err != nil {
		return nil, err
	}
	devs := []uintptr{d.dev}
	code = a.clBuildProgram(prog, 1, &devs[0], options, 0, 0)
	if code != clSuccess {
		log, _ := clInfoString(func(param uint32, size uintptr, value unsafe.Pointer, sizeRet *uintptr) int32 {
			return a.clGetProgramBuildInfo(prog, d.dev, param, size, value, sizeRet)
		}, clProgramBuildLog)
		a.clReleaseProgram(prog)
		if code == clBuildProgramFailure || log != "" {
			return nil, newCompileError("opencl", name, d.props.Name, clErrName(code), log, src)
		}
		return nil, clCheck(code, "clBuildProgram(%s, %q)", name, options)
	}
	return &clModule{d: d, name: name, prog: prog}, nil
}

func (m *clModule) Close() error {
	m.mu.Lock()
	p := m.prog
	m.prog = 0
	ks := m.kernels
	m.kernels = nil
	m.mu.Unlock()
	if p == 0 {
		return nil
	}
	for _, k := range ks {
		k.mu.Lock()
		if k.k != 0 {
			m.d.api.clReleaseKernel(k.k)
			k.k = 0
		}
		k.mu.Unlock()
	}
	return clCheck(m.d.api.clReleaseProgram(p), "clReleaseProgram(%s)", m.name)
}

type clKernel struct {
	m       *clModule
	name    string
	k       uintptr
	numArgs int
	attrs   KernelAttrs
	mu      sync.Mutex // clSetKernelArg + enqueue must not interleave
}

func (m *clModule) Kernel(name string) (Kernel, error) {
	m.mu.Lock()
	p := m.prog
	m.mu.Unlock()
	if p == 0 {
		return nil, ErrClosed
	}
	a := m.d.api
	var code int32
	h := a.clCreateKernel(p, name, &code)
	if err := clCheck(code, "clCreateKernel(%q in %s)", name, m.name); err != nil {
		return nil, err
	}
	k := &clKernel{m: m, name: name, k: h}
	var nargs uint32
	if err := clCheck(a.clGetKernelInfo(h, clKernelNumArgs, 4, unsafe.Pointer(&nargs), nil), "clGetKernelInfo(%s, NUM_ARGS)", name); err != nil {
		a.clReleaseKernel(h)
		return nil, err
	}
	k.numArgs = int(nargs)
	wi := func(param uint32, size uintptr, value unsafe.Pointer, sizeRet *uintptr) int32 {
		return a.clGetKernelWorkGroupInfo(h, m.d.dev, param, size, value, sizeRet)
	}
	wgs, err := clInfoSize(wi, clKernelWorkGroupSize)
	if err != nil {
		a.clReleaseKernel(h)
		return nil, fmt.Errorf("opencl: kernel %s: %w", name, err)
	}
	local, _ := clInfoU64(wi, clKernelLocalMemSize)
	priv, _ := clInfoU64(wi, clKernelPrivateMemSize)
	k.attrs = KernelAttrs{MaxThreadsPerBlock: int(wgs), StaticShared: int(local), LocalBytes: int(priv)}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.prog == 0 { // closed meanwhile
		a.clReleaseKernel(h)
		return nil, ErrClosed
	}
	m.kernels = append(m.kernels, k)
	return k, nil
}

func (k *clKernel) Attrs() KernelAttrs { return k.attrs }

// setArgs runs under k.mu.
func (k *clKernel) setArgs(sharedBytes int, args []any) error {
	a := k.m.d.api
	want := len(args)
	if sharedBytes > 0 {
		want++
	}
	if want != k.numArgs {
		extra := ""
		if sharedBytes > 0 {
			extra = " + 1 dynamic __local pointer (last)"
		}
		return fmt.Errorf("kernel takes %d arguments, got %d%s", k.numArgs, len(args), extra)
	}
	for i, arg := range args {
		var size uintptr
		var val unsafe.Pointer
		switch v := arg.(type) {
		case *clBuffer:
			m, err := v.handle()
			if err != nil {
				return fmt.Errorf("argument %d: freed buffer", i)
			}
			h := new(uintptr)
			*h = m
			size, val = unsafe.Sizeof(m), unsafe.Pointer(h)
		case Buffer:
			return fmt.Errorf("argument %d: %T is not an OpenCL buffer", i, arg)
		case int32:
			size, val = 4, unsafe.Pointer(&v)
		case uint32:
			size, val = 4, unsafe.Pointer(&v)
		case int64:
			size, val = 8, unsafe.Pointer(&v)
		case uint64:
			size, val = 8, unsafe.Pointer(&v)
		case float32:
			size, val = 4, unsafe.Pointer(&v)
		case float64:
			size, val = 8, unsafe.Pointer(&v)
		default:
			return argTypeError(i, arg)
		}
		if err := clCheck(a.clSetKernelArg(k.k, uint32(i), size, val), "clSetKernelArg(%d, %T)", i, arg); err != nil {
			return err
		}
	}
	if sharedBytes > 0 {
		// Dynamic local memory: the kernel's last parameter is __local T*.
		if err := clCheck(a.clSetKernelArg(k.k, uint32(len(args)), uintptr(sharedBytes), nil), "clSetKernelArg(%d, __local %d bytes)", len(args), sharedBytes); err != nil {
			return err
		}
	}
	return nil
}

func (k *clKernel) Launch(grid, block [3]int, sharedBytes int, args ...any) error {
	fail := func(err error) error {
		return fmt.Errorf("opencl: launch %s grid=%s block=%s shared=%d B: %w", k.name, dim3String(grid), dim3String(block), sharedBytes, err)
	}
	if err := checkLaunchDims(grid, block, sharedBytes); err != nil {
		return fail(err)
	}
	d := k.m.d
	if d.isClosed() {
		return fail(ErrClosed)
	}
	if n := block[0] * block[1] * block[2]; n > k.attrs.MaxThreadsPerBlock {
		return fail(fmt.Errorf("%d work-items per group, kernel allows %d", n, k.attrs.MaxThreadsPerBlock))
	}
	if lim := d.props.SharedPerBlock; lim > 0 && sharedBytes+k.attrs.StaticShared > lim {
		return fail(fmt.Errorf("needs %d B dynamic + %d B static local memory, device allows %d B", sharedBytes, k.attrs.StaticShared, lim))
	}
	dim := 1
	for i := 1; i < 3; i++ {
		if grid[i] > 1 || block[i] > 1 {
			dim = i + 1
		}
	}
	global := make([]uintptr, 3)
	local := make([]uintptr, 3)
	for i := 0; i < 3; i++ {
		global[i] = uintptr(grid[i]) * uintptr(block[i])
		local[i] = uintptr(block[i])
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.k == 0 {
		return fail(fmt.Errorf("module %s is closed", k.m.name))
	}
	if err := k.setArgs(sharedBytes, args); err != nil {
		return fail(err)
	}
	var evp *uintptr
	if d.launchTiming {
		evp = new(uintptr)
	}
	code := d.api.clEnqueueNDRangeKernel(d.queue, k.k, uint32(dim), nil, &global[0], &local[0], 0, nil, evp)
	runtime.KeepAlive(global)
	runtime.KeepAlive(local)
	if err := clCheck(code, "clEnqueueNDRangeKernel"); err != nil {
		return fail(err)
	}
	if evp != nil && *evp != 0 {
		d.noteLaunch(*evp)
	}
	return nil
}

// MaxActiveBlocksPerSM estimates resident work-groups per compute unit from
// the thread and local-memory limits (OpenCL has no occupancy calculator).
func (k *clKernel) MaxActiveBlocksPerSM(blockThreads, dynamicShared int) (int, error) {
	if blockThreads <= 0 || dynamicShared < 0 {
		return 0, fmt.Errorf("opencl: occupancy of %s: bad block size %d / shared %d", k.name, blockThreads, dynamicShared)
	}
	p := k.m.d.props
	if blockThreads > k.attrs.MaxThreadsPerBlock {
		return 0, nil
	}
	n := max(1, p.MaxThreadsPerSM/blockThreads)
	if sh := dynamicShared + k.attrs.StaticShared; sh > 0 && p.SharedPerSM > 0 {
		if sh > p.SharedPerBlock {
			return 0, nil
		}
		n = min(n, p.SharedPerSM/sh)
	}
	return max(n, 0), nil
}
