package probe

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"tempest/internal/gpu"
)

// HostProps describes the host processor as a device, for the CPU engine's profile: its key
// and the bandwidth roof that tempest bench --backend cpu takes its "% roof" of.
func HostProps() gpu.Props {
	name := "CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				name = strings.TrimSpace(v)
				break
			}
		}
	}
	return gpu.Props{Backend: "cpu", Name: name, CPU: true, SMs: runtime.GOMAXPROCS(0), Driver: runtime.GOOS + "/" + runtime.GOARCH}
}

// RunHost measures the host's memory: copy and triad bandwidth over arrays far larger than
// its caches, on every core (GOMAXPROCS goroutines, each on its own part, Go's copy and a Go
// loop), the median of Reps after a warm-up. What the CPU engine's steps are bound by when they are not blocked in
// time.
func RunHost(o Options) (*Profile, error) {
	reps := o.Reps
	if reps <= 0 {
		reps = 7
		if o.Quick {
			reps = 5
		}
	}
	n := 64 << 20 // float32 elements per array: 256 MB, past most last-level caches
	if o.Quick {
		n = 16 << 20 // may stay in a large last-level cache: a note says so
	}
	props := HostProps()
	pr := &Profile{Key: Key(props), Device: props, Created: time.Now().UTC().Truncate(time.Second), Quick: o.Quick, Reps: reps, Sizes: map[string]string{}}
	a := make([]float32, n)
	b := make([]float32, n)
	c := make([]float32, n)
	workers := runtime.GOMAXPROCS(0)
	parallel := func(f func(lo, hi int)) float64 {
		start := time.Now()
		var wg sync.WaitGroup
		for k := 0; k < workers; k++ {
			lo, hi := n*k/workers, n*(k+1)/workers
			wg.Add(1)
			go func() {
				defer wg.Done()
				f(lo, hi)
			}()
		}
		wg.Wait()
		return time.Since(start).Seconds()
	}
	// First touch by the workers, so that pages are mapped before timing.
	parallel(func(lo, hi int) {
		for i := lo; i < hi; i++ {
			a[i], b[i], c[i] = 1, 2, 0
		}
	})
	median := func(f func(lo, hi int)) float64 {
		parallel(f) // warm-up
		var ts []float64
		for r := 0; r < reps; r++ {
			ts = append(ts, parallel(f))
		}
		return Median(ts)
	}
	bytes := float64(4 * n)
	copyS := median(func(lo, hi int) { copy(b[lo:hi], a[lo:hi]) })
	pr.DRAMCopyGBs = 2 * bytes / copyS / 1e9
	pr.Sizes["copy"] = fmt.Sprintf("%s per array, %d threads", human(int64(4*n)), workers)
	pr.Sizes["triad"] = pr.Sizes["copy"]
	triadS := median(func(lo, hi int) {
		x, y, z := a[lo:hi], b[lo:hi], c[lo:hi]
		for i := range z {
			z[i] = x[i] + 3*y[i]
		}
	})
	pr.DRAMTriadGBs = 3 * bytes / triadS / 1e9
	if o.Log != nil {
		fmt.Fprintf(o.Log, "host memory: copy %.1f GB/s, triad %.1f GB/s (%s)\n", pr.DRAMCopyGBs, pr.DRAMTriadGBs, pr.Sizes["copy"])
	}
	pr.Notes = append(pr.Notes, "host profile: memory bandwidth only (the CPU engine's roof when its steps are not blocked in time)")
	if o.Quick {
		pr.Notes = append(pr.Notes, "quick sizes: the arrays may fit the last-level cache, which overstates the memory")
	}
	return pr, nil
}
