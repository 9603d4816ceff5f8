// Package native runs generated C on the host processor: it finds a C compiler, builds a module
// once into Tempest's cache, loads it with dlopen (no cgo: the binary still builds with
// CGO_ENABLED=0) and calls its kernels. The CPU engine uses it where a compiler exists, since
// compiled loops run several times faster than the Go engine's closures.
package native

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/ebitengine/purego"

	"tempest/internal/probe"
)

// EnvCC names the compiler to use (a name on PATH or a path); "none" turns compilation off, so
// that the CPU engine runs its Go code.
const EnvCC = "TEMPEST_CC"

// Flags are the compiler's options. Generated code must round as the reference does:
// -ffp-contract=off keeps a*b+c two roundings, -fwrapv gives signed overflow the reference's
// wrap-around; -fno-math-errno and -fno-trapping-math change no value but let sqrt inline and
// conditionals vectorise. -march=native: the module is built on the machine it runs on (the
// cache key holds the processor).
var Flags = []string{"-std=gnu11", "-O3", "-march=native", "-ffp-contract=off", "-fwrapv", "-fno-math-errno", "-fno-trapping-math", "-fPIC", "-shared"}

// ErrNoCompiler says no C compiler was found or compilation was turned off.
var ErrNoCompiler = errors.New("no C compiler")

// Compiler is a C compiler found on this machine.
type Compiler struct {
	Path    string
	Version string // the first line of --version
}

// Name is the compiler's short description, for reports: "gcc 12.2.0".
func (c *Compiler) Name() string {
	base := filepath.Base(c.Path)
	f := strings.Fields(c.Version)
	if len(f) == 0 {
		return base
	}
	ver := f[len(f)-1]
	if i := slices.Index(f, "version"); i >= 0 && i+1 < len(f) {
		ver = f[i+1] // clang: "Debian clang version 14.0.6"
	}
	kind := base
	switch {
	case strings.Contains(c.Version, "clang"):
		kind = "clang"
	case strings.Contains(c.Version, "gcc") || strings.Contains(c.Version, "GCC"):
		kind = "gcc"
	}
	return kind + " " + ver
}

var (
	findOnce sync.Once
	found    *Compiler
	findErr  error
)

// Find returns the C compiler: $TEMPEST_CC if set, else the first of cc, gcc and clang on
// PATH that runs. The answer is kept for the process.
func Find() (*Compiler, error) {
	findOnce.Do(func() { found, findErr = find(os.Getenv(EnvCC)) })
	return found, findErr
}

func find(env string) (*Compiler, error) {
	env = strings.TrimSpace(env)
	if env == "none" || env == "off" || env == "0" {
		return nil, fmt.Errorf("%w: %s=%s turns compilation off", ErrNoCompiler, EnvCC, env)
	}
	names := []string{"cc", "gcc", "clang"}
	if env != "" {
		names = []string{env}
	}
	var tried []string
	for _, n := range names {
		path, err := exec.LookPath(n)
		if err != nil {
			tried = append(tried, n)
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		out, err := exec.CommandContext(ctx, path, "--version").Output()
		cancel()
		if err != nil {
			tried = append(tried, n+" (does not run: "+err.Error()+")")
			continue
		}
		line, _, _ := strings.Cut(string(out), "\n")
		return &Compiler{Path: path, Version: strings.TrimSpace(line)}, nil
	}
	if env != "" {
		return nil, fmt.Errorf("%w: %s=%s is not a compiler that runs (%s)", ErrNoCompiler, EnvCC, env, strings.Join(tried, ", "))
	}
	return nil, fmt.Errorf("%w: none of %s on PATH (install gcc or clang, or set %s)", ErrNoCompiler, strings.Join(tried, ", "), EnvCC)
}

// Library is a loaded module.
type Library struct {
	Path string
	h    uintptr
}

// Func is a kernel entry point of a module (kir.PrintC): void f(const int64_t* slots).
type Func uintptr

// Call runs f with its parameters packed into slots (kir.PrintC's layout). Pointers in slots
// must stay alive and unmoved until Call returns: Go's heap does not move objects, and the
// callers keep the arrays referenced.
func (f Func) Call(slots []int64) {
	purego.SyscallN(uintptr(f), uintptr(unsafe.Pointer(&slots[0])))
	runtime.KeepAlive(slots)
}

var (
	mu       sync.Mutex // guards loaded and inflight
	loaded   = map[string]*Library{}
	inflight = map[string]*flight{}
	// compileMu lets one compiler run at a time in a process: engines started in a row (a
	// test's references, a tuner's candidates) queue their builds instead of filling the
	// machine with compilers; compiling counts the builds running or queued.
	compileMu sync.Mutex
	compiling atomic.Int32
)

// flight is a build in progress that later callers for the same module wait for.
type flight struct {
	done chan struct{}
	lib  *Library
	err  error
}

// Compiling says whether this process is building a module or has builds waiting: a new
// engine then starts at once instead of waiting for its own build behind them.
func Compiling() bool { return compiling.Load() > 0 }

// Build compiles src (or finds it in the cache, keyed by the source, compiler, flags and
// processor) and loads it. A module is loaded once per process, and built once however many
// callers ask for it at the same time.
func (c *Compiler) Build(src string) (*Library, error) {
	h := sha256.New()
	for _, s := range append([]string{c.Path, c.Version, processor()}, Flags...) {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	h.Write([]byte(src))
	key := hex.EncodeToString(h.Sum(nil))[:32]
	mu.Lock()
	if l := loaded[key]; l != nil {
		mu.Unlock()
		return l, nil
	}
	if f := inflight[key]; f != nil {
		mu.Unlock()
		<-f.done
		return f.lib, f.err
	}
	f := &flight{done: make(chan struct{})}
	inflight[key] = f
	mu.Unlock()
	f.lib, f.err = c.build(src, key)
	mu.Lock()
	delete(inflight, key)
	if f.err == nil {
		loaded[key] = f.lib
	}
	mu.Unlock()
	close(f.done)
	return f.lib, f.err
}

// build loads the module of key from the cache, compiling it first if it is not there.
func (c *Compiler) build(src, key string) (*Library, error) {
	root, err := probe.CacheRoot()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(root, "native")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("native cache: %w", err)
	}
	so := filepath.Join(dir, key+".so")
	if _, err := os.Stat(so); err != nil {
		compiling.Add(1)
		compileMu.Lock()
		var cerr error
		if _, serr := os.Stat(so); serr != nil { // another process may have built it meanwhile
			cerr = c.compile(src, dir, so)
		}
		compileMu.Unlock()
		compiling.Add(-1)
		if cerr != nil {
			return nil, cerr
		}
	}
	hd, err := purego.Dlopen(so, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", so, err)
	}
	return &Library{Path: so, h: hd}, nil
}

// compile builds src into so through a temporary directory whose module the shell renames
// into place, so that processes sharing the cache never load a half-written module, and a build
// outlives a short run that ends first (the CPU engine's Go code runs meanwhile): the next run
// finds the module in the cache.
func (c *Compiler) compile(src, dir, so string) error {
	tmp, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return fmt.Errorf("native cache: %w", err)
	}
	cfile := filepath.Join(tmp, "module.c")
	if err := os.WriteFile(cfile, []byte(src), 0o644); err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("native cache: %w", err)
	}
	out := filepath.Join(tmp, "module.so")
	// The source stays beside the module, for whoever wants to read what runs.
	script := `"$@" 2>"$T/err" && mv -f "$T/module.c" "$C" && mv -f "$T/module.so" "$S" && rm -rf "$T"`
	args := append([]string{"-c", script, "sh", c.Path}, Flags...)
	args = append(args, cfile, "-o", out, "-lm")
	cmd := exec.Command("/bin/sh", args...)
	cmd.Env = append(os.Environ(), "T="+tmp, "C="+strings.TrimSuffix(so, ".so")+".c", "S="+so)
	if err := cmd.Run(); err != nil {
		msg, _ := os.ReadFile(filepath.Join(tmp, "err"))
		os.RemoveAll(tmp)
		text := strings.TrimSpace(string(msg))
		if len(text) > 2000 {
			text = text[:2000] + "..."
		}
		return fmt.Errorf("%s failed on generated C (%v): %s", c.Name(), err, text)
	}
	return nil
}

// Func looks up an entry point.
func (l *Library) Func(name string) (Func, error) {
	f, err := purego.Dlsym(l.h, name)
	if err != nil {
		return 0, fmt.Errorf("%s: no symbol %s: %w", l.Path, name, err)
	}
	return Func(f), nil
}

// processor identifies the host processor for the cache key (modules are built for it).
func processor() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.GOOS + "/" + runtime.GOARCH
	}
	var model, flags string
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "model name":
			if model == "" {
				model = strings.TrimSpace(v)
			}
		case "flags", "Features":
			if flags == "" {
				flags = strings.TrimSpace(v)
			}
		}
	}
	return runtime.GOARCH + "|" + model + "|" + flags
}
