package driver

import (
	"encoding/json"
	"fmt"
	"io"

	"tempest/internal/gpu"
	"tempest/internal/probe"
)

// ProbeOptions are the settings of `tempest probe`.
type ProbeOptions struct {
	Backend string // auto | cuda | opencl
	JSON    bool
	Quick   bool // small sizes (automatic on CPU OpenCL devices)
	Reps    int  // timed repetitions per benchmark (0: default)
	Quiet   bool // no progress lines
}

// Probe carries out `tempest probe`: micro-benchmarks of the device, saved as its profile in
// the cache directory and printed as a table (or JSON).
func Probe(o ProbeOptions, stdout, stderr io.Writer) error {
	if o.Backend == "cpu" {
		return probeHost(o, stdout, stderr)
	}
	dev, err := openGPUBackend(o.Backend)
	if err != nil {
		return err
	}
	defer dev.Close()
	var log io.Writer
	if !o.Quiet {
		log = stderr
		fmt.Fprintf(stderr, "probing %s (%s)...\n", dev.Props().Name, dev.Props().Backend)
	}
	pr, err := probe.Run(dev, probe.Options{Quick: o.Quick, Reps: o.Reps, Log: log})
	if err != nil {
		return err
	}
	return saveProfile(pr, o.JSON, "device", stdout)
}

// saveProfile saves a measured profile and prints it, as a table or as JSON.
func saveProfile(pr *probe.Profile, asJSON bool, what string, stdout io.Writer) error {
	path, err := probe.Save(pr, "")
	if err != nil {
		return fmt.Errorf("saving the %s profile: %w", what, err)
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(pr)
	}
	fmt.Fprint(stdout, pr.Table())
	fmt.Fprintf(stdout, "\nsaved %s\n", path)
	return nil
}

// openGPUBackend opens a GPU backend by name ("" or auto: CUDA, then OpenCL).
func openGPUBackend(backend string) (gpu.Device, error) {
	switch backend {
	case "", "auto":
		d, err := gpu.Open("auto")
		if err != nil {
			return nil, fmt.Errorf("no GPU or OpenCL device to use: %w", err)
		}
		return d, nil
	case "cuda", "opencl":
		d, err := gpu.Open(backend)
		if err != nil {
			return nil, fmt.Errorf("--backend %s: %w", backend, err)
		}
		return d, nil
	}
	return nil, fmt.Errorf("--backend %q: choose auto, cuda or opencl", backend)
}

// loadDeviceProfile is the saved profile of a device; without one it measures and saves one when
// measure is set (quick sizes on CPU devices), else it estimates one from the properties.
func loadDeviceProfile(dev gpu.Device, measure bool, log io.Writer) *probe.Profile {
	props := dev.Props()
	if pr, err := probe.Load(props, ""); err == nil {
		return pr
	}
	if measure {
		if log != nil {
			fmt.Fprintf(log, "no profile of %s yet: probing it (tempest probe)...\n", props.Name)
		}
		pr, err := probe.Run(dev, probe.Options{})
		if err == nil {
			if _, err := probe.Save(pr, ""); err != nil && log != nil {
				fmt.Fprintf(log, "note: could not save the device profile: %v\n", err)
			}
			return pr
		}
		if log != nil {
			fmt.Fprintf(log, "note: probing failed (%v); the models use estimates\n", err)
		}
	}
	return probe.Estimate(props)
}

// probeHost measures the host processor's memory for the CPU engine's profile.
func probeHost(o ProbeOptions, stdout, stderr io.Writer) error {
	var log io.Writer
	if !o.Quiet {
		log = stderr
		fmt.Fprintf(stderr, "probing %s (cpu)...\n", probe.HostProps().Name)
	}
	pr, err := probe.RunHost(probe.Options{Quick: o.Quick, Reps: o.Reps, Log: log})
	if err != nil {
		return err
	}
	return saveProfile(pr, o.JSON, "host", stdout)
}

// hostProfile is the host's saved profile, measured now when there is none (a few seconds;
// quick sizes would fit large last-level caches and overstate the memory).
func hostProfile(log io.Writer) *probe.Profile {
	if pr, err := probe.Load(probe.HostProps(), ""); err == nil && !pr.Quick {
		return pr
	}
	if log != nil {
		fmt.Fprintf(log, "no profile of this processor yet: measuring its memory (tempest probe --backend cpu)...\n")
	}
	pr, err := probe.RunHost(probe.Options{Reps: 3})
	if err != nil {
		return nil
	}
	if _, err := probe.Save(pr, ""); err != nil && log != nil {
		fmt.Fprintf(log, "note: could not save the host profile: %v\n", err)
	}
	return pr
}
