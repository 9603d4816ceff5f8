package gpu

import (
	"runtime"
	"syscall"
)

// Background runs f on an OS thread of its own at a lower scheduling priority (nice 10). A
// tuner compiles candidates on every core while one thread launches and times the others;
// with the compilations at the same priority its searches' timed part grew from 0.15 to
// 0.21-0.27 s a plan (docs/performance.md, 2026-11-29). Call it as the whole body of a
// goroutine: the thread keeps its priority, so it is not handed back and ends with the
// goroutine.
func Background(f func()) {
	runtime.LockOSThread()
	tid := syscall.Gettid()
	// Linux's getpriority says 20 - nice. Only ever lower the priority (best effort).
	if p, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid); err == nil && 20-p < backgroundNice {
		_ = syscall.Setpriority(syscall.PRIO_PROCESS, tid, backgroundNice)
	}
	f()
}

// backgroundNice is the niceness of Background's threads.
const backgroundNice = 10
