package gpu

import (
	"fmt"
	"runtime"
	"sync"
	"syscall"
)

// executor runs closures on one goroutine locked to one OS thread. CUDA
// contexts are current per OS thread, so every CUDA call goes through it and
// callers on any goroutine are safe.
//
// A call made from the executor's own thread (inside Batch) runs at once: the thread is
// locked to the executor's goroutine, so its id says the caller is that goroutine. A batch of
// calls thus costs one hand-over (about 14 us on a 2-core host) instead of one per call.
type executor struct {
	mu     sync.RWMutex
	closed bool
	ch     chan func()
	tid    int // the locked thread's id
}

func newExecutor() *executor {
	e := &executor{ch: make(chan func())}
	started := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		// Never unlocked: the thread carries the CUDA context and exits with
		// the goroutine.
		e.tid = syscall.Gettid()
		close(started)
		for f := range e.ch {
			f()
		}
	}()
	<-started
	return e
}

// do runs f on the executor's thread and waits for it.
func (e *executor) do(f func() error) error {
	if syscall.Gettid() == e.tid {
		return f()
	}
	e.mu.RLock()
	if e.closed {
		e.mu.RUnlock()
		return ErrClosed
	}
	errc := make(chan error, 1)
	e.ch <- func() {
		defer func() {
			if r := recover(); r != nil {
				errc <- fmt.Errorf("gpu: panic in device call: %v", r)
			}
		}()
		errc <- f()
	}
	e.mu.RUnlock()
	return <-errc
}

// stop runs f (if any) as the last job and ends the goroutine.
func (e *executor) stop(f func() error) error {
	var err error
	if f != nil {
		err = e.do(f)
	}
	e.mu.Lock()
	if !e.closed {
		e.closed = true
		close(e.ch)
	}
	e.mu.Unlock()
	return err
}

// Batch runs f on dev's device thread, so that the device calls f makes (launches, copies,
// event records, NCCL posts) go without a hand-over each: a run of many short launches, or a
// period of a split run, is then posted at the speed of the driver calls themselves. Devices
// without such a thread run f on the caller's goroutine. f must not wait for another
// goroutine's work on the same device, which would wait for the batch to end.
func Batch(dev Device, f func() error) error {
	if d, ok := dev.(*cudaDevice); ok {
		return d.ex.do(f)
	}
	return f()
}
