package gpu

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"unsafe"
)

// OpenCL events come in two flavours, chosen once per device:
//
//   - marker timing (the default): Record enqueues a marker
//     (clEnqueueMarkerWithWaitList, which completes after every command
//     enqueued before it) and ElapsedMs subtracts the markers'
//     CL_PROFILING_COMMAND_END times.
//   - launch timing, for implementations whose markers carry no timestamps
//     (some return 0 or CL_PROFILING_INFO_NOT_AVAILABLE): every launch keeps
//     its cl_event; Record remembers the last launch before it and, once it
//     happens, the first launch after it. ElapsedMs is END(last launch before
//     this event) - START(first launch after since).
//
// TEMPEST_OPENCL_TIMING=marker or =launch forces a mode.

type clEvent struct {
	d     *clDevice
	freed bool
	// marker timing
	marker uintptr
	// launch timing
	recorded bool
	prev     uintptr // last launch before Record (retained), 0 if none
	next     uintptr // first launch after Record (retained), 0 until one happens
}

// chooseTiming probes whether markers carry timestamps.
func (d *clDevice) chooseTiming() error {
	switch strings.ToLower(os.Getenv("TEMPEST_OPENCL_TIMING")) {
	case "marker":
		return nil
	case "launch":
		d.launchTiming = true
		return nil
	}
	var m [2]uintptr
	for i := range m {
		if err := d.enqueueMarker(&m[i]); err != nil {
			d.launchTiming = true
			return nil
		}
	}
	defer d.api.clReleaseEvent(m[0])
	defer d.api.clReleaseEvent(m[1])
	if err := clCheck(d.api.clFinish(d.queue), "clFinish"); err != nil {
		return err
	}
	for _, ev := range m {
		t, err := d.profile(ev, clProfilingCommandEnd)
		if err != nil || t == 0 {
			d.launchTiming = true
			return nil
		}
	}
	return nil
}

func (d *clDevice) enqueueMarker(ev *uintptr) error {
	a := d.api
	if a.clEnqueueMarkerWithWaitList != nil && d.version >= 120 {
		// With no wait list the marker completes after everything enqueued before it.
		return clCheck(a.clEnqueueMarkerWithWaitList(d.queue, 0, nil, ev), "clEnqueueMarkerWithWaitList")
	}
	return clCheck(a.clEnqueueMarker(d.queue, ev), "clEnqueueMarker")
}

func (d *clDevice) profile(ev uintptr, param uint32) (uint64, error) {
	var t uint64
	code := d.api.clGetEventProfilingInfo(ev, param, 8, unsafe.Pointer(&t), nil)
	return t, clCheck(code, "clGetEventProfilingInfo(0x%x)", param)
}

// noteLaunch takes ownership of a launch's event (launch timing).
func (d *clDevice) noteLaunch(ev uintptr) {
	d.evMu.Lock()
	defer d.evMu.Unlock()
	for _, e := range d.pending {
		d.api.clRetainEvent(ev)
		e.next = ev
	}
	d.pending = d.pending[:0]
	if d.lastLaunch != 0 {
		d.api.clReleaseEvent(d.lastLaunch)
	}
	d.lastLaunch = ev
}

func (d *clDevice) NewEvent() (Event, error) {
	if d.isClosed() {
		return nil, ErrClosed
	}
	return &clEvent{d: d}, nil
}

// clearLocked drops the event's references; d.evMu is held.
func (e *clEvent) clearLocked() {
	a := e.d.api
	for _, h := range []*uintptr{&e.marker, &e.prev, &e.next} {
		if *h != 0 {
			a.clReleaseEvent(*h)
			*h = 0
		}
	}
	e.d.pending = slices.DeleteFunc(e.d.pending, func(x *clEvent) bool { return x == e })
	e.recorded = false
}

func (e *clEvent) Record() error {
	d := e.d
	if d.isClosed() {
		return ErrClosed
	}
	d.evMu.Lock()
	defer d.evMu.Unlock()
	if e.freed {
		return ErrClosed
	}
	if !d.launchTiming {
		var ev uintptr
		if err := d.enqueueMarker(&ev); err != nil {
			return err
		}
		e.clearLocked()
		e.marker = ev
		e.recorded = true
		return nil
	}
	e.clearLocked()
	if d.lastLaunch != 0 {
		d.api.clRetainEvent(d.lastLaunch)
		e.prev = d.lastLaunch
	}
	d.pending = append(d.pending, e)
	e.recorded = true
	return nil
}

func (e *clEvent) checkRecorded() error {
	e.d.evMu.Lock()
	defer e.d.evMu.Unlock()
	if e.freed {
		return ErrClosed
	}
	if !e.recorded {
		return fmt.Errorf("opencl: event was never recorded")
	}
	return nil
}

// Synchronize waits for the work enqueued before Record.
func (e *clEvent) Synchronize() error {
	if err := e.checkRecorded(); err != nil {
		return err
	}
	// clFinish waits for everything: at least as much as the event covers,
	// and it also flushes, which a bare wait on a marker may not.
	return clCheck(e.d.api.clFinish(e.d.queue), "clFinish")
}

func (e *clEvent) ElapsedMs(since Event) (float64, error) {
	s, ok := since.(*clEvent)
	if !ok {
		return 0, fmt.Errorf("opencl: ElapsedMs since a %T", since)
	}
	if err := s.checkRecorded(); err != nil {
		return 0, err
	}
	if err := e.Synchronize(); err != nil {
		return 0, err
	}
	d := e.d
	d.evMu.Lock()
	defer d.evMu.Unlock()
	if e.freed || s.freed {
		return 0, ErrClosed
	}
	if !d.launchTiming {
		t0, err := d.profile(s.marker, clProfilingCommandEnd)
		if err != nil {
			return 0, err
		}
		t1, err := d.profile(e.marker, clProfilingCommandEnd)
		if err != nil {
			return 0, err
		}
		if t0 == 0 || t1 == 0 {
			return 0, fmt.Errorf("opencl: markers carry no timestamps on this platform (set TEMPEST_OPENCL_TIMING=launch)")
		}
		return (float64(t1) - float64(t0)) / 1e6, nil
	}
	if e.prev == 0 || e.prev == s.prev {
		return 0, nil // no kernel ran between the two events
	}
	t1, err := d.profile(e.prev, clProfilingCommandEnd)
	if err != nil {
		return 0, err
	}
	var t0 uint64
	if s.next != 0 {
		t0, err = d.profile(s.next, clProfilingCommandStart)
	} else if s.prev != 0 {
		t0, err = d.profile(s.prev, clProfilingCommandEnd)
	} else {
		return 0, fmt.Errorf("opencl: no kernel launch after the start event")
	}
	if err != nil {
		return 0, err
	}
	return (float64(t1) - float64(t0)) / 1e6, nil
}

func (e *clEvent) Free() error {
	e.d.evMu.Lock()
	defer e.d.evMu.Unlock()
	if e.freed {
		return nil
	}
	e.freed = true
	e.clearLocked()
	return nil
}
