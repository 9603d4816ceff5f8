package gpu

import (
	"fmt"
	"runtime"
	"sync"
)

// executor runs closures on one goroutine locked to one OS thread. CUDA
// contexts are current per OS thread, so every CUDA call goes through it and
// callers on any goroutine are safe.
type executor struct {
	mu     sync.RWMutex
	closed bool
	ch     chan func()
}

func newExecutor() *executor {
	e := &executor{ch: make(chan func())}
	started := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		// Never unlocked: the thread carries the CUDA context and exits with
		// the goroutine.
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
