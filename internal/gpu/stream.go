package gpu

// sideStream is a non-blocking CUDA stream beside the legacy default stream (0), on which
// every kernel and copy of the device runs, with the two events that order the two: work
// posted on it after follow starts once stream 0's earlier work has finished, and stream 0's
// work after join waits for the side stream's work posted before end. Being non-blocking, it
// does not wait for stream 0 otherwise, so its work overlaps the kernels launched meanwhile
// (NCCL's halo transfers behind a sub-domain's interior). Its methods run on the executor.
type sideStream struct {
	d                  *cudaDevice
	stream, ready, fin uintptr
}

// newSideStream creates the stream and its events (on the executor). The stream takes the
// context's greatest priority where the driver has one: the kernels it runs (what an exchange
// sends, NCCL's transfers) are blocks the device's kernels on stream 0 wait for, so its blocks
// go first when both have some ready.
func (d *cudaDevice) newSideStream() (*sideStream, error) {
	a := d.api
	s := &sideStream{d: d}
	var least, greatest int32
	if a.cuStreamCreateWithPriority != nil && a.cuCtxGetStreamPriorityRange != nil && a.cuCtxGetStreamPriorityRange(&least, &greatest) == 0 {
		if err := a.check(a.cuStreamCreateWithPriority(&s.stream, cuStreamNonBlocking, greatest), "cuStreamCreateWithPriority(CU_STREAM_NON_BLOCKING, %d)", greatest); err != nil {
			return nil, err
		}
	} else if err := a.check(a.cuStreamCreate(&s.stream, cuStreamNonBlocking), "cuStreamCreate(CU_STREAM_NON_BLOCKING)"); err != nil {
		return nil, err
	}
	for _, ev := range []*uintptr{&s.ready, &s.fin} {
		if err := a.check(a.cuEventCreate(ev, cuEventDisableTiming), "cuEventCreate(CU_EVENT_DISABLE_TIMING)"); err != nil {
			s.destroy()
			return nil, err
		}
	}
	return s, nil
}

// follow makes the side stream's next work wait for the work stream 0 holds now.
func (s *sideStream) follow() error {
	a := s.d.api
	if err := a.check(a.cuEventRecord(s.ready, 0), "cuEventRecord(stream 0)"); err != nil {
		return err
	}
	return a.check(a.cuStreamWaitEvent(s.stream, s.ready, 0), "cuStreamWaitEvent(side stream after stream 0)")
}

// end marks the side stream's work so far for join.
func (s *sideStream) end() error {
	a := s.d.api
	return a.check(a.cuEventRecord(s.fin, s.stream), "cuEventRecord(side stream)")
}

// join makes stream 0's next work wait for the side stream's work up to the last end.
func (s *sideStream) join() error {
	a := s.d.api
	return a.check(a.cuStreamWaitEvent(0, s.fin, 0), "cuStreamWaitEvent(stream 0 after the side stream)")
}

// destroy frees the stream and its events; the device's pending work on it still completes.
func (s *sideStream) destroy() error {
	a := s.d.api
	var first error
	for _, ev := range []uintptr{s.ready, s.fin} {
		if ev != 0 {
			if err := a.check(a.cuEventDestroy(ev), "cuEventDestroy"); err != nil && first == nil {
				first = err
			}
		}
	}
	if s.stream != 0 {
		if err := a.check(a.cuStreamDestroy(s.stream), "cuStreamDestroy"); err != nil && first == nil {
			first = err
		}
	}
	s.stream, s.ready, s.fin = 0, 0, 0
	return first
}
