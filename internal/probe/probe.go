// Package probe measures what a device can do: DRAM bandwidth (copy and triad), L2 bandwidth,
// shared-memory bandwidth (float and double), FMA throughput (float and double) and the cost
// of a kernel launch with and without synchronisation. The result is a Profile, saved as JSON
// in the user's cache directory and read by the performance models (internal/model).
//
// Every number is the median of several timed repetitions after a warm-up, timed with device
// events (launch latency with the host clock). Sizes follow the device: DRAM arrays are several
// times the L2 cache, the L2 working set half of it, the compute grids a few waves of resident
// threads. Quick mode (automatic for CPU OpenCL devices such as PoCL) uses small sizes so that
// it finishes in a few seconds.
package probe

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"tempest/internal/gpu"
	"tempest/internal/gridio"
)

// Profile is a device's properties and measured throughputs.
type Profile struct {
	Key       string    `json:"key"`
	Device    gpu.Props `json:"device"`
	Created   time.Time `json:"created"`
	Quick     bool      `json:"quick"`
	Estimated bool      `json:"estimated"` // nominal values derived from the properties, nothing measured
	Reps      int       `json:"reps"`

	DRAMCopyGBs  float64 `json:"dramCopyGBs"`  // copy: bytes read + written per second
	DRAMTriadGBs float64 `json:"dramTriadGBs"` // triad: 2 reads + 1 write
	L2GBs        float64 `json:"l2GBs"`        // reads from a working set that fits L2
	SharedF32GBs float64 `json:"sharedF32GBs"` // shared-memory loads, 4-byte words
	SharedF64GBs float64 `json:"sharedF64GBs"` // shared-memory loads, 8-byte words
	FMAF32GFLOPs float64 `json:"fmaF32GFLOPs"` // 2 FLOPs per FMA
	FMAF64GFLOPs float64 `json:"fmaF64GFLOPs"`
	LaunchUs     float64 `json:"launchUs"`     // interval between back-to-back launches of an empty kernel
	LaunchSyncUs float64 `json:"launchSyncUs"` // launch + synchronise round trip (host clock)

	Sizes map[string]string `json:"sizes,omitempty"` // what each benchmark moved
	Notes []string          `json:"notes,omitempty"` // benchmarks that could not run, and why
}

// Options control a probe run.
type Options struct {
	// Quick uses small sizes. It is switched on automatically for devices that look like CPUs
	// (OpenCL without a warp size, or a device name that says CPU/pthread).
	Quick bool
	// Reps is the number of timed repetitions per benchmark (default 7, quick 5).
	Reps int
	// Log receives one line per benchmark as it finishes (nil: silent).
	Log io.Writer
}

// LooksLikeCPU reports whether an OpenCL device is probably a CPU implementation.
func LooksLikeCPU(p gpu.Props) bool {
	if p.Backend != "opencl" {
		return false
	}
	n := strings.ToLower(p.Name + " " + p.Platform)
	return p.WarpSize <= 1 || strings.Contains(n, "cpu") || strings.Contains(n, "pthread") || strings.Contains(n, "portable computing language")
}

// sizes are the problem sizes of one probe run.
type sizes struct {
	tb                  int // threads per block
	n                   int // DRAM elements per array (floats)
	l2n                 int // L2 working set in floats (power of two)
	l2threads, l2iters  int
	smemBlocks, smIters int
	fmaBlocks, fmaIters int
	launches            int // back-to-back launches per timed repetition
}

func pow2Floor(n int) int {
	if n < 1 {
		return 1
	}
	p := 1
	for p*2 <= n {
		p *= 2
	}
	return p
}

func pow2Ceil(n int) int {
	p := 1
	for p < n {
		p *= 2
	}
	return p
}

func chooseSizes(p gpu.Props, quick bool) sizes {
	var z sizes
	z.tb = pow2Floor(min(256, max(1, p.MaxThreadsPerBlock)))
	perSM := max(p.MaxThreadsPerSM, z.tb)
	sms := max(p.SMs, 1)
	resident := sms * perSM
	l2 := p.L2Bytes
	if l2 <= 0 {
		l2 = 1 << 20
	}
	if quick {
		z.n = 1 << 21 // 8 MiB per array
		z.l2n = max(1024, pow2Floor(min(l2, 4<<20)/2/4))
		z.l2threads = min(z.l2n, pow2Floor(sms*z.tb))
		z.l2iters = 2048
		z.smemBlocks, z.smIters = sms*2, 512
		z.fmaBlocks, z.fmaIters = sms*2, 2048
		z.launches = 20
	} else {
		z.n = pow2Ceil(max(8*l2, 256<<20) / 4)
		for z.n > 1<<20 && p.GlobalMem > 0 && int64(z.n)*12 > p.GlobalMem/4 {
			z.n /= 2
		}
		z.l2n = max(1024, pow2Floor(l2/2/4))
		z.l2threads = min(z.l2n, pow2Floor(resident))
		z.l2iters = max(16, min(4096, 256*z.l2n/z.l2threads))
		z.l2iters -= z.l2iters % 4
		z.smemBlocks, z.smIters = sms*max(1, perSM/z.tb)*4, 2048
		z.fmaBlocks, z.fmaIters = sms*max(1, perSM/z.tb)*4, 4096
		z.launches = 100
	}
	return z
}

// Run measures dev. Benchmarks that cannot run (no double precision, too little memory) are
// left at zero with a note; an error is returned only when nothing can be measured.
func Run(dev gpu.Device, o Options) (*Profile, error) {
	props := dev.Props()
	quick := o.Quick || LooksLikeCPU(props)
	reps := o.Reps
	if reps <= 0 {
		reps = 7
		if quick {
			reps = 5
		}
	}
	pr := &Profile{Key: Key(props), Device: props, Created: time.Now().UTC().Truncate(time.Second), Quick: quick, Reps: reps, Sizes: map[string]string{}}
	z := chooseSizes(props, quick)
	logf := func(format string, a ...any) {
		if o.Log != nil {
			fmt.Fprintf(o.Log, format+"\n", a...)
		}
	}
	note := func(format string, a ...any) {
		msg := fmt.Sprintf(format, a...)
		pr.Notes = append(pr.Notes, msg)
		logf("  %s", msg)
	}

	mod, err := dev.Compile("probe (float)", source(props.Backend, false), gpu.CompileOptions{})
	if err != nil {
		return nil, fmt.Errorf("probe: compiling the micro-benchmarks: %w", err)
	}
	defer mod.Close()
	kern := func(m gpu.Module, name string) gpu.Kernel {
		k, err := m.Kernel(name)
		if err != nil {
			note("%s: %v", name, err)
			return nil
		}
		return k
	}
	t := &timer{dev: dev, reps: reps}

	// Kernel launch latency first: it needs nothing but a one-word buffer.
	out1, err := dev.Alloc(4)
	if err != nil {
		return nil, fmt.Errorf("probe: %w", err)
	}
	defer out1.Free()
	if k := kern(mod, "probe_empty"); k != nil {
		ms, err := t.events(k, [3]int{1, 1, 1}, [3]int{1, 1, 1}, z.launches, out1)
		if err != nil {
			note("launch: %v", err)
		} else {
			pr.LaunchUs = ms * 1e3
		}
		us, err := t.wall(k, out1)
		if err != nil {
			note("launch + sync: %v", err)
		} else {
			pr.LaunchSyncUs = us
		}
		logf("  launch: %.2f us back to back, %.2f us with synchronisation", pr.LaunchUs, pr.LaunchSyncUs)
	}

	// DRAM: copy and triad over arrays several times the L2 cache.
	bufs := make([]gpu.Buffer, 0, 3)
	for len(bufs) < 3 {
		b, err := dev.Alloc(int64(z.n) * 4)
		if err != nil {
			if len(bufs) == 0 && z.n > 1<<16 {
				z.n /= 2 // try smaller arrays before giving up
				continue
			}
			break
		}
		bufs = append(bufs, b)
	}
	defer func() {
		for _, b := range bufs {
			b.Free()
		}
	}()
	blocks := z.n / z.tb
	grid := [3]int{blocks, 1, 1}
	block := [3]int{z.tb, 1, 1}
	if len(bufs) >= 2 {
		if err := fill(bufs, z.n); err != nil {
			note("initialising DRAM arrays: %v", err)
		}
		if k := kern(mod, "probe_copy"); k != nil {
			if ms, err := t.events(k, grid, block, 1, bufs[0], bufs[1]); err != nil {
				note("copy: %v", err)
			} else {
				pr.DRAMCopyGBs = 2 * float64(z.n) * 4 / (ms * 1e-3) / 1e9
			}
			pr.Sizes["copy"] = fmt.Sprintf("2 x %s", human(int64(z.n)*4))
			logf("  DRAM copy: %.1f GB/s (%s)", pr.DRAMCopyGBs, pr.Sizes["copy"])
		}
	} else {
		note("DRAM: could not allocate two arrays of %s", human(int64(z.n)*4))
	}
	if len(bufs) == 3 {
		if k := kern(mod, "probe_triad"); k != nil {
			if ms, err := t.events(k, grid, block, 1, bufs[0], bufs[1], bufs[2], float32(0.5)); err != nil {
				note("triad: %v", err)
			} else {
				pr.DRAMTriadGBs = 3 * float64(z.n) * 4 / (ms * 1e-3) / 1e9
			}
			pr.Sizes["triad"] = fmt.Sprintf("3 x %s", human(int64(z.n)*4))
			logf("  DRAM triad: %.1f GB/s (%s)", pr.DRAMTriadGBs, pr.Sizes["triad"])
		}
	}

	// L2: a read-only sweep over half the L2 cache. The first DRAM array holds it (or a
	// buffer of its own when DRAM arrays could not be allocated).
	if k := kern(mod, "probe_l2"); k != nil {
		src, own := gpu.Buffer(nil), false
		if len(bufs) > 0 && z.n >= z.l2n {
			src = bufs[0]
		} else if b, err := dev.Alloc(int64(z.l2n) * 4); err == nil {
			src, own = b, true
			fill([]gpu.Buffer{b}, z.l2n)
		}
		out, err := dev.Alloc(int64(z.l2threads) * 4)
		if src != nil && err == nil {
			g := [3]int{max(1, z.l2threads/z.tb), 1, 1}
			b := [3]int{min(z.tb, z.l2threads), 1, 1}
			ms, err := t.events(k, g, b, 1, src, out, uint32(z.l2n-1), uint32(z.l2threads), int32(z.l2iters))
			if err != nil {
				note("L2: %v", err)
			} else {
				pr.L2GBs = float64(z.l2threads) * float64(z.l2iters) * 4 / (ms * 1e-3) / 1e9
			}
			pr.Sizes["l2"] = fmt.Sprintf("%s working set, %d threads x %d reads", human(int64(z.l2n)*4), z.l2threads, z.l2iters)
			logf("  L2 read: %.1f GB/s (%s)", pr.L2GBs, pr.Sizes["l2"])
			out.Free()
		} else {
			note("L2: could not allocate the working set")
		}
		if own {
			src.Free()
		}
	}

	// Shared memory and FMA, float.
	maxBlocks := max(z.smemBlocks, z.fmaBlocks)
	out, err := dev.Alloc(int64(maxBlocks*z.tb) * 8)
	if err != nil {
		note("shared memory and FMA: %v", err)
		return finish(pr)
	}
	defer out.Free()
	smem := func(m gpu.Module, name string, word int) float64 {
		k := kern(m, name)
		if k == nil {
			return 0
		}
		ms, err := t.events(k, [3]int{z.smemBlocks, 1, 1}, block, 1, out, int32(z.smIters))
		if err != nil {
			note("%s: %v", name, err)
			return 0
		}
		return float64(z.smemBlocks) * float64(z.tb) * float64(z.smIters) * 8 * float64(word) / (ms * 1e-3) / 1e9
	}
	fma := func(m gpu.Module, name string, b, c any) float64 {
		k := kern(m, name)
		if k == nil {
			return 0
		}
		ms, err := t.events(k, [3]int{z.fmaBlocks, 1, 1}, block, 1, out, b, c, int32(z.fmaIters))
		if err != nil {
			note("%s: %v", name, err)
			return 0
		}
		return float64(z.fmaBlocks) * float64(z.tb) * float64(z.fmaIters) * 8 * 2 / (ms * 1e-3) / 1e9
	}
	pr.Sizes["shared"] = fmt.Sprintf("%d blocks x %d threads x %d iterations x 8 loads", z.smemBlocks, z.tb, z.smIters)
	pr.Sizes["fma"] = fmt.Sprintf("%d blocks x %d threads x %d iterations x 8 FMAs", z.fmaBlocks, z.tb, z.fmaIters)
	pr.SharedF32GBs = smem(mod, "probe_smem_f", 4)
	logf("  shared (float): %.1f GB/s", pr.SharedF32GBs)
	pr.FMAF32GFLOPs = fma(mod, "probe_fma_f", float32(0.999), float32(1e-3))
	logf("  FMA (float): %.1f GFLOP/s", pr.FMAF32GFLOPs)

	// Double precision in a program of its own: a device without it still gets a profile.
	dmod, err := dev.Compile("probe (double)", source(props.Backend, true), gpu.CompileOptions{})
	if err != nil {
		note("double precision benchmarks did not compile: %s", firstLine(err.Error()))
		return finish(pr)
	}
	defer dmod.Close()
	pr.SharedF64GBs = smem(dmod, "probe_smem_d", 8)
	logf("  shared (double): %.1f GB/s", pr.SharedF64GBs)
	pr.FMAF64GFLOPs = fma(dmod, "probe_fma_d", 0.999, 1e-3)
	logf("  FMA (double): %.1f GFLOP/s", pr.FMAF64GFLOPs)
	return finish(pr)
}

func finish(pr *Profile) (*Profile, error) {
	if pr.DRAMCopyGBs == 0 && pr.FMAF32GFLOPs == 0 && pr.SharedF32GBs == 0 {
		return pr, fmt.Errorf("probe: no benchmark could run: %s", strings.Join(pr.Notes, "; "))
	}
	return pr, nil
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// fill writes a ramp into the first n floats of every buffer (so that nothing reads garbage
// that could be a signalling NaN and so that pages are touched before timing).
func fill(bufs []gpu.Buffer, n int) error {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(i%1024) * 1e-3
	}
	for _, b := range bufs {
		if err := gpu.WriteSlice(b, v); err != nil {
			return err
		}
	}
	return nil
}

// timer runs the timed repetitions.
type timer struct {
	dev  gpu.Device
	reps int
}

// events launches k once as a warm-up, then reps times `inner` back-to-back launches between
// two events, and returns the median milliseconds per launch.
func (t *timer) events(k gpu.Kernel, grid, block [3]int, inner int, args ...any) (float64, error) {
	if err := k.Launch(grid, block, 0, args...); err != nil {
		return 0, err
	}
	if err := t.dev.Synchronize(); err != nil {
		return 0, err
	}
	start, err := t.dev.NewEvent()
	if err != nil {
		return 0, err
	}
	defer start.Free()
	end, err := t.dev.NewEvent()
	if err != nil {
		return 0, err
	}
	defer end.Free()
	var ms []float64
	for r := 0; r < t.reps; r++ {
		if err := start.Record(); err != nil {
			return 0, err
		}
		for i := 0; i < inner; i++ {
			if err := k.Launch(grid, block, 0, args...); err != nil {
				return 0, err
			}
		}
		if err := end.Record(); err != nil {
			return 0, err
		}
		if err := end.Synchronize(); err != nil {
			return 0, err
		}
		e, err := end.ElapsedMs(start)
		if err != nil {
			return 0, err
		}
		ms = append(ms, e/float64(inner))
	}
	m := Median(ms)
	if !(m > 0) {
		return 0, errors.New("the device timer measured no time")
	}
	return m, nil
}

// wall is the median host time of a launch followed by a synchronisation, in microseconds.
func (t *timer) wall(k gpu.Kernel, args ...any) (float64, error) {
	one := [3]int{1, 1, 1}
	var us []float64
	for r := 0; r < 3+4*t.reps; r++ {
		t0 := time.Now()
		if err := k.Launch(one, one, 0, args...); err != nil {
			return 0, err
		}
		if err := t.dev.Synchronize(); err != nil {
			return 0, err
		}
		if r >= 3 { // the first three are the warm-up
			us = append(us, float64(time.Since(t0).Nanoseconds())/1e3)
		}
	}
	return Median(us), nil
}

// Median of xs (NaN for none); xs is not modified.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func human(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// Table renders the profile for people.
func (pr *Profile) Table() string {
	var b strings.Builder
	d := pr.Device
	fmt.Fprintf(&b, "device   %s (%s", d.Name, d.Backend)
	if d.ComputeMajor > 0 {
		fmt.Fprintf(&b, ", sm_%d%d", d.ComputeMajor, d.ComputeMinor)
	}
	if d.Backend == "opencl" && d.Platform != "" {
		fmt.Fprintf(&b, ", %s", d.Platform)
	}
	host := d.Backend == "cpu"
	if host {
		fmt.Fprintf(&b, "), %d threads\n", d.SMs)
		fmt.Fprintf(&b, "system   %s\n", d.Driver)
	} else {
		fmt.Fprintf(&b, "), %d SMs\n", d.SMs)
		fmt.Fprintf(&b, "driver   %s; compiler %s\n", d.Driver, d.Compiler)
	}
	what := "measured"
	switch {
	case pr.Estimated:
		what = "estimated from the device's properties (nothing measured)"
	case pr.Quick:
		what = fmt.Sprintf("measured, quick sizes, median of %d", pr.Reps)
	default:
		what = fmt.Sprintf("measured, median of %d after a warm-up", pr.Reps)
	}
	fmt.Fprintf(&b, "profile  %s (key %s)\n\n", what, pr.Key)
	row := func(name string, v float64, unit, size string) {
		if host && v == 0 {
			return // the host profile measures memory alone
		}
		val := "-"
		if v > 0 {
			val = fmt.Sprintf("%.1f %s", v, unit)
			if unit == "us" {
				val = fmt.Sprintf("%.2f %s", v, unit)
			}
		}
		fmt.Fprintf(&b, "  %-20s %16s   %s\n", name, val, size)
	}
	fmt.Fprintf(&b, "  %-20s %16s   %s\n", "benchmark", "result", "size")
	row("DRAM copy", pr.DRAMCopyGBs, "GB/s", pr.Sizes["copy"])
	row("DRAM triad", pr.DRAMTriadGBs, "GB/s", pr.Sizes["triad"])
	row("L2 read", pr.L2GBs, "GB/s", pr.Sizes["l2"])
	row("shared (float)", pr.SharedF32GBs, "GB/s", pr.Sizes["shared"])
	row("shared (double)", pr.SharedF64GBs, "GB/s", pr.Sizes["shared"])
	row("FMA (float)", pr.FMAF32GFLOPs, "GFLOP/s", pr.Sizes["fma"])
	row("FMA (double)", pr.FMAF64GFLOPs, "GFLOP/s", pr.Sizes["fma"])
	row("launch", pr.LaunchUs, "us", "back to back, empty kernel")
	row("launch + sync", pr.LaunchSyncUs, "us", "host clock")
	for _, n := range pr.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	return b.String()
}

// CacheRoot is Tempest's cache directory: $TEMPEST_CACHE_DIR, else os.UserCacheDir()/tempest.
func CacheRoot() (string, error) {
	if d := os.Getenv("TEMPEST_CACHE_DIR"); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory (set TEMPEST_CACHE_DIR): %w", err)
	}
	return filepath.Join(d, "tempest"), nil
}

// Dir is where profiles are kept: CacheRoot()/profiles.
func Dir() (string, error) {
	r, err := CacheRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(r, "profiles"), nil
}

// Key names a device's profile: backend, name, compute capability and driver, made safe as a
// file name, with a short hash of the full text so that distinct devices never collide.
func Key(p gpu.Props) string {
	text := fmt.Sprintf("%s|%s|%s|%d.%d|%s", p.Backend, p.Platform, p.Name, p.ComputeMajor, p.ComputeMinor, p.Driver)
	var b strings.Builder
	for _, r := range strings.ToLower(p.Backend + "-" + p.Name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '.', r == '_':
			b.WriteRune(r)
		default:
			if s := b.String(); !strings.HasSuffix(s, "-") {
				b.WriteByte('-')
			}
		}
	}
	name := strings.Trim(b.String(), "-")
	if len(name) > 60 {
		name = name[:60]
	}
	if p.ComputeMajor > 0 {
		name += fmt.Sprintf("-sm%d%d", p.ComputeMajor, p.ComputeMinor)
	}
	return fmt.Sprintf("%s-%s", name, shortHash(text))
}

// Save writes the profile as dir/<key>.json (dir "" is Dir()) and returns the path.
func Save(pr *Profile, dir string) (string, error) {
	if dir == "" {
		d, err := Dir()
		if err != nil {
			return "", err
		}
		dir = d
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	data, err := json.MarshalIndent(pr, "", "  ")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, pr.Key+".json")
	return path, writeAtomic(path, append(data, '\n'))
}

// Load reads the saved profile of a device (dir "" is Dir()); os.ErrNotExist when there is none.
func Load(p gpu.Props, dir string) (*Profile, error) {
	if dir == "" {
		d, err := Dir()
		if err != nil {
			return nil, err
		}
		dir = d
	}
	data, err := os.ReadFile(filepath.Join(dir, Key(p)+".json"))
	if err != nil {
		return nil, err
	}
	var pr Profile
	if err := json.Unmarshal(data, &pr); err != nil {
		return nil, fmt.Errorf("device profile %s: %w", filepath.Join(dir, Key(p)+".json"), err)
	}
	return &pr, nil
}

// writeAtomic writes a file so that readers never see half of it and concurrent writers leave
// one whole version (gridio.WriteAtomic).
func writeAtomic(path string, data []byte) error { return gridio.WriteFileAtomic(path, data) }

// WriteFileAtomic is writeAtomic for other packages of Tempest's cache.
func WriteFileAtomic(path string, data []byte) error { return writeAtomic(path, data) }
