package gpu

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"unsafe"
)

const (
	nvrtcSuccess          = 0
	nvrtcErrorCompilation = 6
)

var nvrtcResultNames = map[int32]string{
	0: "NVRTC_SUCCESS", 1: "NVRTC_ERROR_OUT_OF_MEMORY", 2: "NVRTC_ERROR_PROGRAM_CREATION_FAILURE",
	3: "NVRTC_ERROR_INVALID_INPUT", 4: "NVRTC_ERROR_INVALID_PROGRAM", 5: "NVRTC_ERROR_INVALID_OPTION",
	6: "NVRTC_ERROR_COMPILATION", 7: "NVRTC_ERROR_BUILTIN_OPERATION_FAILURE",
	8: "NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION", 9: "NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION",
	10: "NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID", 11: "NVRTC_ERROR_INTERNAL_ERROR",
}

// nvrtcAPI holds NVRTC's entry points (nvrtc.h). nvrtcProgram is a handle.
type nvrtcAPI struct {
	lib     *dylib
	version string

	nvrtcVersion           func(major, minor *int32) int32
	nvrtcGetErrorString    func(res int32) string
	nvrtcCreateProgram     func(prog *uintptr, src, name string, numHeaders int32, headers, includeNames unsafe.Pointer) int32
	nvrtcCompileProgram    func(prog uintptr, numOptions int32, options **byte) int32
	nvrtcGetProgramLogSize func(prog uintptr, size *uintptr) int32
	nvrtcGetProgramLog     func(prog uintptr, log *byte) int32
	nvrtcGetCUBINSize      func(prog uintptr, size *uintptr) int32
	nvrtcGetCUBIN          func(prog uintptr, cubin *byte) int32
	nvrtcGetPTXSize        func(prog uintptr, size *uintptr) int32
	nvrtcGetPTX            func(prog uintptr, ptx *byte) int32
	nvrtcDestroyProgram    func(prog *uintptr) int32
}

func loadNVRTC() (*nvrtcAPI, error) {
	lib, err := loadLibrary("cuda", nvrtcLibNames, envNVRTC, nvrtcLibHint)
	if err != nil {
		return nil, err
	}
	a := &nvrtcAPI{lib: lib}
	b := &binder{l: lib}
	b.fn(&a.nvrtcVersion, "nvrtcVersion")
	b.fn(&a.nvrtcGetErrorString, "nvrtcGetErrorString")
	b.fn(&a.nvrtcCreateProgram, "nvrtcCreateProgram")
	b.fn(&a.nvrtcCompileProgram, "nvrtcCompileProgram")
	b.fn(&a.nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize")
	b.fn(&a.nvrtcGetProgramLog, "nvrtcGetProgramLog")
	b.fn(&a.nvrtcGetCUBINSize, "nvrtcGetCUBINSize")
	b.fn(&a.nvrtcGetCUBIN, "nvrtcGetCUBIN")
	b.fn(&a.nvrtcGetPTXSize, "nvrtcGetPTXSize")
	b.fn(&a.nvrtcGetPTX, "nvrtcGetPTX")
	b.fn(&a.nvrtcDestroyProgram, "nvrtcDestroyProgram")
	if b.err != nil {
		return nil, unavailable("%v (NVRTC older than CUDA 11.1 has no CUBIN output)", b.err)
	}
	var maj, mn int32
	if a.nvrtcVersion(&maj, &mn) == nvrtcSuccess {
		a.version = fmt.Sprintf("NVRTC %d.%d", maj, mn)
	} else {
		a.version = "NVRTC"
	}
	return a, nil
}

func (a *nvrtcAPI) errName(res int32) string {
	if n, ok := nvrtcResultNames[res]; ok {
		return n
	}
	if s := a.nvrtcGetErrorString(res); s != "" {
		return s
	}
	return fmt.Sprintf("nvrtcResult %d", res)
}

// nvrtcOptions builds the option list for one compilation.
func nvrtcOptions(arch string, opt CompileOptions) []string {
	opts := []string{"--gpu-architecture=" + arch, "-default-device", "-std=c++17"}
	if opt.FastMath {
		opts = append(opts, "-use_fast_math")
	} else if !slices.Contains(opt.Extra, "--fmad=false") {
		// Without fast math every operation rounds as written: NVRTC's default contraction of
		// a*b+c into FMAs depends on the surrounding code, so two kernels of one plan (a
		// temporal plan's deep and remainder launches, interior and edge blocks) rounded the
		// same cell differently, and resumed or split runs were not bitwise equal to whole ones.
		opts = append(opts, "--fmad=false")
	}
	if opt.MaxRegs > 0 {
		opts = append(opts, fmt.Sprintf("--maxrregcount=%d", opt.MaxRegs))
	}
	opts = append(opts, defineFlags(opt.Defines)...)
	opts = append(opts, opt.Extra...)
	return opts
}

// compile returns a CUBIN for arch sm_XY, or NUL-terminated PTX for a
// virtual arch compute_XY (which the driver then JIT-compiles).
func (a *nvrtcAPI) compile(name, src, arch string, opt CompileOptions) ([]byte, error) {
	progName := name
	if !strings.HasSuffix(progName, ".cu") {
		progName += ".cu"
	}
	var prog uintptr
	if res := a.nvrtcCreateProgram(&prog, src, progName, 0, nil, nil); res != nvrtcSuccess {
		return nil, fmt.Errorf("cuda: nvrtcCreateProgram(%s): %s", name, a.errName(res))
	}
	defer a.nvrtcDestroyProgram(&prog)

	opts := nvrtcOptions(arch, opt)
	cstrs := make([][]byte, len(opts))
	ptrs := make([]*byte, len(opts))
	for i, o := range opts {
		cstrs[i] = append([]byte(o), 0)
		ptrs[i] = &cstrs[i][0]
	}
	res := a.nvrtcCompileProgram(prog, int32(len(ptrs)), &ptrs[0])
	runtime.KeepAlive(cstrs)
	runtime.KeepAlive(ptrs)
	if res != nvrtcSuccess {
		log := a.programLog(prog)
		if res != nvrtcErrorCompilation && log == "" {
			return nil, fmt.Errorf("cuda: nvrtcCompileProgram(%s, %s): %s", name, strings.Join(opts, " "), a.errName(res))
		}
		return nil, newCompileError("cuda", name, arch, a.errName(res), log, src)
	}

	sizeFn, getFn, what := a.nvrtcGetCUBINSize, a.nvrtcGetCUBIN, "CUBIN"
	if strings.HasPrefix(arch, "compute_") {
		sizeFn, getFn, what = a.nvrtcGetPTXSize, a.nvrtcGetPTX, "PTX"
	}
	var n uintptr
	if res := sizeFn(prog, &n); res != nvrtcSuccess || n == 0 {
		return nil, fmt.Errorf("cuda: nvrtcGet%sSize(%s): %s", what, name, a.errName(res))
	}
	out := make([]byte, n)
	if res := getFn(prog, &out[0]); res != nvrtcSuccess {
		return nil, fmt.Errorf("cuda: nvrtcGet%s(%s): %s", what, name, a.errName(res))
	}
	return out, nil
}

func (a *nvrtcAPI) programLog(prog uintptr) string {
	var n uintptr
	if a.nvrtcGetProgramLogSize(prog, &n) != nvrtcSuccess || n <= 1 {
		return ""
	}
	buf := make([]byte, n)
	if a.nvrtcGetProgramLog(prog, &buf[0]) != nvrtcSuccess {
		return ""
	}
	return strings.TrimRight(string(buf), "\x00")
}
