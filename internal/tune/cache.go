package tune

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"tempest/internal/gpu"
	"tempest/internal/ir"
	"tempest/internal/irprint"
	"tempest/internal/probe"
)

// Key identifies what a tuning result is valid for: the stencil (a hash of its canonical IR
// text), the element type, the size class (log2-rounded extents), the device and its driver
// and compiler, Tempest's version, and whether the plans were compiled with fast math (an
// exact search's key is what it was before fast math was part of the key).
type Key struct {
	Stencil   string `json:"stencil"`
	IRHash    string `json:"irHash"`
	Type      string `json:"type"`
	SizeClass string `json:"sizeClass"`
	Backend   string `json:"backend"`
	Device    string `json:"device"`
	Compute   string `json:"compute,omitempty"`
	Driver    string `json:"driver"`
	Compiler  string `json:"compiler"`
	Version   string `json:"version"`
	FastMath  bool   `json:"fastMath,omitempty"`
}

// KeyFor builds the key of a program, size, device and math mode.
func KeyFor(p *ir.Program, shape []int, props gpu.Props, version string, fast bool) Key {
	h := sha256.Sum256([]byte(irprint.Stencil(p)))
	k := Key{Stencil: p.Name, IRHash: hex.EncodeToString(h[:])[:16], Type: p.DefaultType.String(), SizeClass: SizeClass(shape),
		Backend: props.Backend, Device: props.Name, Driver: props.Driver, Compiler: props.Compiler, Version: version, FastMath: fast}
	if props.ComputeMajor > 0 {
		k.Compute = fmt.Sprintf("sm_%d%d", props.ComputeMajor, props.ComputeMinor)
	}
	if props.Backend == "opencl" && props.Platform != "" {
		k.Device = props.Name + " [" + props.Platform + "]"
	}
	return k
}

// SizeClass rounds every extent to the nearest power of two: "2^14x2^14". Sizes of one class
// share tuning results.
func SizeClass(shape []int) string {
	parts := make([]string, len(shape))
	for i, n := range shape {
		parts[i] = fmt.Sprintf("2^%d", int(math.Round(math.Log2(float64(max(n, 1))))))
	}
	return strings.Join(parts, "x")
}

// ID is a short stable hash of the whole key.
func (k Key) ID() string {
	b, _ := json.Marshal(k)
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])[:16]
}

// Record is one candidate's outcome.
type Record struct {
	Plan           string    `json:"plan"`
	Status         Status    `json:"status"` // measured or failed
	Reason         string    `json:"reason,omitempty"`
	SecondsPerStep float64   `json:"secondsPerStep,omitempty"` // median of the timed runs / steps
	SamplesMs      []float64 `json:"samplesMs,omitempty"`
	Steps          int       `json:"steps,omitempty"`
	Predicted      float64   `json:"predictedSecondsPerStep,omitempty"`
	Bottleneck     string    `json:"bottleneck,omitempty"`
	Regs           int       `json:"regs,omitempty"`
	Shape          []int     `json:"shape,omitempty"`
	When           time.Time `json:"when"`
}

// Entry is the cache file of one key.
type Entry struct {
	Key     Key       `json:"key"`
	Updated time.Time `json:"updated"`
	Records []Record  `json:"records"`
}

// Best is the fastest measured record (nil if none).
func (e *Entry) Best() *Record {
	var best *Record
	for i := range e.Records {
		r := &e.Records[i]
		if r.Status == Measured && r.SecondsPerStep > 0 && (best == nil || r.SecondsPerStep < best.SecondsPerStep) {
			best = r
		}
	}
	return best
}

// Lookup returns the record of a plan.
func (e *Entry) Lookup(plan string) *Record {
	for i := range e.Records {
		if e.Records[i].Plan == plan {
			return &e.Records[i]
		}
	}
	return nil
}

// Cache is a directory of entries, one JSON file per key.
type Cache struct {
	Dir string
	mu  sync.Mutex
}

// DefaultCacheDir is probe.CacheRoot()/tune ($TEMPEST_CACHE_DIR/tune when set).
func DefaultCacheDir() (string, error) {
	r, err := probe.CacheRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(r, "tune"), nil
}

// OpenCache opens a cache directory ("" is DefaultCacheDir()); it is created on first write.
func OpenCache(dir string) (*Cache, error) {
	if dir == "" {
		d, err := DefaultCacheDir()
		if err != nil {
			return nil, err
		}
		dir = d
	}
	return &Cache{Dir: dir}, nil
}

func (c *Cache) path(k Key) string {
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, k.Stencil)
	if len(name) > 40 {
		name = name[:40]
	}
	return filepath.Join(c.Dir, name+"-"+k.ID()+".json")
}

// Load reads the entry of a key: an empty entry when there is none.
func (c *Cache) Load(k Key) (*Entry, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.load(k)
}

func (c *Cache) load(k Key) (*Entry, error) {
	data, err := os.ReadFile(c.path(k))
	if errors.Is(err, os.ErrNotExist) {
		return &Entry{Key: k}, nil
	}
	if err != nil {
		return nil, err
	}
	var e Entry
	if err := json.Unmarshal(data, &e); err != nil {
		return nil, fmt.Errorf("tuning cache %s: %w (delete the file to start over)", c.path(k), err)
	}
	if e.Key != k {
		return &Entry{Key: k}, nil // a hash collision: start afresh
	}
	return &e, nil
}

// Put adds or replaces records of a key's entry and writes the file (read, merge, write, so
// that several tuners of one key lose nothing of each other's records within a process).
func (c *Cache) Put(k Key, recs ...Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, err := c.load(k)
	if err != nil {
		return err
	}
	for _, r := range recs {
		if old := e.Lookup(r.Plan); old != nil {
			*old = r
		} else {
			e.Records = append(e.Records, r)
		}
	}
	e.Updated = time.Now().UTC().Truncate(time.Second)
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return err
	}
	return probe.WriteFileAtomic(c.path(k), append(data, '\n'))
}

// List reads every entry, sorted by stencil, size class and device.
func (c *Cache) List() ([]*Entry, error) {
	files, err := filepath.Glob(filepath.Join(c.Dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var out []*Entry
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var e Entry
		if json.Unmarshal(data, &e) == nil && e.Key.Stencil != "" {
			out = append(out, &e)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].Key, out[j].Key
		if a.Stencil != b.Stencil {
			return a.Stencil < b.Stencil
		}
		if a.SizeClass != b.SizeClass {
			return a.SizeClass < b.SizeClass
		}
		if a.Type != b.Type {
			return a.Type < b.Type
		}
		if a.Device != b.Device {
			return a.Device < b.Device
		}
		return !a.FastMath && b.FastMath
	})
	return out, nil
}

// ListText renders entries for `tempest tune --list`.
func ListText(es []*Entry, dir string) string {
	var b strings.Builder
	if len(es) == 0 {
		fmt.Fprintf(&b, "no tuning results in %s\n", dir)
		return b.String()
	}
	fmt.Fprintf(&b, "tuning results in %s\n\n", dir)
	fmt.Fprintf(&b, "%-14s %-5s %-5s %-18s %-30s %-44s %12s %9s %s\n", "stencil", "type", "math", "size class", "device", "best plan", "ms/step", "measured", "updated")
	for _, e := range es {
		best := e.Best()
		plan, ms := "-", "-"
		if best != nil {
			plan, ms = best.Plan, fmt.Sprintf("%.4f", best.SecondsPerStep*1e3)
		}
		n, failed := 0, 0
		for _, r := range e.Records {
			switch r.Status {
			case Measured:
				n++
			case Failed:
				failed++
			}
		}
		count := fmt.Sprintf("%d", n)
		if failed > 0 {
			count += fmt.Sprintf("+%dF", failed)
		}
		dev := e.Key.Device
		if len(dev) > 30 {
			dev = dev[:27] + "..."
		}
		mathMode := "exact"
		if e.Key.FastMath {
			mathMode = "fast"
		}
		fmt.Fprintf(&b, "%-14s %-5s %-5s %-18s %-30s %-44s %12s %9s %s\n", e.Key.Stencil, e.Key.Type, mathMode, e.Key.SizeClass, dev, plan, ms, count, e.Updated.Format("2006-01-02 15:04"))
	}
	fmt.Fprintf(&b, "\n(math: fast for searches run with --fastmath; measured: candidates timed; +NF: candidates that failed to compile or launch)\n")
	return b.String()
}
