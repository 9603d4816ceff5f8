package gpu

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/ebitengine/purego"
)

// Library search lists. Tests replace them to check the error for a missing
// library; an environment variable, when set, is tried first.
var (
	cudaLibNames   = []string{"libcuda.so.1", "libcuda.so"}
	nvrtcLibNames  = []string{"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "/usr/local/cuda/lib64/libnvrtc.so*", "/usr/local/cuda/targets/x86_64-linux/lib/libnvrtc.so*", "/usr/local/cuda-*/lib64/libnvrtc.so*"}
	openclLibNames = []string{"libOpenCL.so.1", "libOpenCL.so"}
)

const (
	envLibCUDA   = "TEMPEST_LIBCUDA"
	envNVRTC     = "TEMPEST_NVRTC"
	envLibOpenCL = "TEMPEST_LIBOPENCL"
)

// dylib is a dlopen'ed shared library.
type dylib struct {
	backend string
	path    string // the name that loaded
	h       uintptr
}

// dlMu serializes dlopen/dlerror pairs: dlerror is per thread in glibc, but
// goroutines may migrate between threads between the two calls.
var dlMu sync.Mutex

// expandCandidates resolves glob patterns (newest-looking version first) and
// prepends the environment override.
func expandCandidates(names []string, env string) []string {
	var out []string
	if env != "" {
		if v := strings.TrimSpace(os.Getenv(env)); v != "" {
			out = append(out, v)
		}
	}
	for _, n := range names {
		if strings.ContainsAny(n, "*?[") {
			m, _ := filepath.Glob(n)
			sort.Sort(sort.Reverse(sort.StringSlice(m)))
			out = append(out, m...)
			continue
		}
		out = append(out, n)
	}
	return out
}

// loadLibrary tries names in order and returns the first that loads. The
// error names the backend and the first library (the one a user would
// install), says what else was tried, gives a hint, and carries dlerror's
// text; it wraps ErrUnavailable.
func loadLibrary(backend string, names []string, env, hint string) (*dylib, error) {
	cands := expandCandidates(names, env)
	if len(cands) == 0 {
		return nil, unavailable("%s backend: no library names to try", backend)
	}
	var firstErr error
	for _, n := range cands {
		dlMu.Lock()
		h, err := purego.Dlopen(n, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		dlMu.Unlock()
		if err == nil {
			return &dylib{backend: backend, path: n, h: h}, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	first := cands[0]
	also := ""
	if len(cands) > 1 {
		also = " (also tried " + strings.Join(cands[1:], ", ") + ")"
	}
	msg := fmt.Sprintf("%s backend: cannot load %s%s", backend, first, also)
	if hint != "" {
		msg += " (" + hint + ")"
	}
	return nil, unavailable("%s: %v", msg, firstErr)
}

// sym returns the address of the first of names that exists.
func (l *dylib) sym(names ...string) (uintptr, string, error) {
	for _, n := range names {
		dlMu.Lock()
		p, err := purego.Dlsym(l.h, n)
		dlMu.Unlock()
		if err == nil && p != 0 {
			return p, n, nil
		}
	}
	return 0, "", fmt.Errorf("%s backend: %s has no symbol %s", l.backend, l.path, strings.Join(names, " or "))
}

// bind registers fptr (a pointer to a func variable) with the first of names
// that exists in the library.
func (l *dylib) bind(fptr any, names ...string) error {
	p, _, err := l.sym(names...)
	if err != nil {
		return err
	}
	purego.RegisterFunc(fptr, p)
	return nil
}

// binder collects the first error of many bind calls.
type binder struct {
	l   *dylib
	err error
}

func (b *binder) fn(fptr any, names ...string) {
	if b.err != nil {
		return
	}
	b.err = b.l.bind(fptr, names...)
}

// optional binds fptr when a symbol exists and reports whether it did.
func (b *binder) optional(fptr any, names ...string) bool {
	return b.l.bind(fptr, names...) == nil
}

// Libraries are never dlclose'd: the CUDA driver and OpenCL implementations
// start threads of their own, and unloading code under them would crash.
