package gpu

import (
	"fmt"
	"runtime"
	"unsafe"
)

// RangeBuffer is a Buffer that also copies parts of itself: halo exchanges move slabs of a
// grid between buffers (on one device without a trip through the host) and to and from the
// host. Both backends' buffers implement it. Copies are ordered with the device's launches.
type RangeBuffer interface {
	Buffer
	// WriteAt copies src into the buffer from byte off on (blocking).
	WriteAt(src []byte, off int64) error
	// ReadAt fills dst from byte off of the buffer on (blocking).
	ReadAt(dst []byte, off int64) error
	// CopyFrom copies n bytes of src, from srcOff, to dstOff of this buffer; src must live
	// on the same device (see SameDevice).
	CopyFrom(src Buffer, srcOff, dstOff, n int64) error
}

// PointerBuffer is a buffer with a raw device address, which communication libraries
// (NCCL) take in place of a handle.
type PointerBuffer interface {
	Buffer
	// DevicePtr is the buffer's device address (CUdeviceptr).
	DevicePtr() (uint64, error)
}

// SameDevice reports whether two buffers live on the same device, so that CopyFrom may move
// data between them.
func SameDevice(a, b Buffer) bool {
	switch a := a.(type) {
	case *cudaBuffer:
		b, ok := b.(*cudaBuffer)
		return ok && a.d == b.d
	case *clBuffer:
		b, ok := b.(*clBuffer)
		return ok && a.d == b.d
	}
	return false
}

// CopyRange copies n bytes from src at srcOff to dst at dstOff: on the device when both
// buffers live on one device, else through host memory.
func CopyRange(dst Buffer, dstOff int64, src Buffer, srcOff, n int64) error {
	if n == 0 {
		return nil
	}
	if d, ok := dst.(RangeBuffer); ok && SameDevice(dst, src) {
		return d.CopyFrom(src, srcOff, dstOff, n)
	}
	s, ok1 := src.(RangeBuffer)
	d, ok2 := dst.(RangeBuffer)
	if !ok1 || !ok2 {
		return fmt.Errorf("gpu: %T or %T cannot copy parts of itself", src, dst)
	}
	tmp := make([]byte, n)
	if err := s.ReadAt(tmp, srcOff); err != nil {
		return err
	}
	return d.WriteAt(tmp, dstOff)
}

// OpenOrdinal opens device number ordinal of a backend ("cuda" or "opencl"): a CUDA device
// ordinal, or the index among OpenCL devices in Open's order (GPUs first). Several devices
// of one host are opened this way, one per sub-domain.
func OpenOrdinal(backend string, ordinal int) (Device, error) {
	if ordinal < 0 {
		return nil, fmt.Errorf("device number %d: numbers start at 0", ordinal)
	}
	switch backend {
	case "cuda":
		return openCUDAAt(ordinal)
	case "opencl", "cl":
		return openOpenCLAt(ordinal)
	}
	return nil, fmt.Errorf("unknown GPU backend %q (want cuda or opencl)", backend)
}

// OpenLocal opens the CUDA device of a process that is local rank local of its host: device
// local modulo the devices this process sees, so that the ranks a launcher starts on one host
// spread over its GPUs with no per-rank setting.
func OpenLocal(local int) (Device, error) {
	if local < 0 {
		return nil, fmt.Errorf("local rank %d: ranks start at 0", local)
	}
	return openCUDAWrapped(local, true)
}

func checkRange(op string, off, n, size int64) error {
	if off < 0 || n < 0 || off+n > size {
		return fmt.Errorf("gpu: %s of %d bytes at offset %d in a buffer of %d bytes", op, n, off, size)
	}
	return nil
}

// ---- CUDA ----

func (b *cudaBuffer) DevicePtr() (uint64, error) { return b.devPtr() }

func (b *cudaBuffer) WriteAt(src []byte, off int64) error {
	if err := checkRange("write", off, int64(len(src)), b.size); err != nil || len(src) == 0 {
		return err
	}
	p, err := b.devPtr()
	if err != nil {
		return err
	}
	return b.d.ex.do(func() error {
		return b.d.api.check(b.d.api.cuMemcpyHtoD(p+uint64(off), unsafe.Pointer(&src[0]), uintptr(len(src))), "cuMemcpyHtoD(%d bytes at %d)", len(src), off)
	})
}

func (b *cudaBuffer) ReadAt(dst []byte, off int64) error {
	if err := checkRange("read", off, int64(len(dst)), b.size); err != nil || len(dst) == 0 {
		return err
	}
	p, err := b.devPtr()
	if err != nil {
		return err
	}
	return b.d.ex.do(func() error {
		return b.d.api.check(b.d.api.cuMemcpyDtoH(unsafe.Pointer(&dst[0]), p+uint64(off), uintptr(len(dst))), "cuMemcpyDtoH(%d bytes at %d)", len(dst), off)
	})
}

func (b *cudaBuffer) CopyFrom(src Buffer, srcOff, dstOff, n int64) error {
	s, ok := src.(*cudaBuffer)
	if !ok || s.d != b.d {
		return fmt.Errorf("cuda: device copy from a buffer of another device")
	}
	if err := checkRange("copy source", srcOff, n, s.size); err != nil {
		return err
	}
	if err := checkRange("copy", dstOff, n, b.size); err != nil || n == 0 {
		return err
	}
	sp, err := s.devPtr()
	if err != nil {
		return err
	}
	dp, err := b.devPtr()
	if err != nil {
		return err
	}
	return b.d.ex.do(func() error {
		return b.d.api.check(b.d.api.cuMemcpyDtoD(dp+uint64(dstOff), sp+uint64(srcOff), uintptr(n)), "cuMemcpyDtoD(%d bytes)", n)
	})
}

// ---- OpenCL ----

func (b *clBuffer) WriteAt(src []byte, off int64) error {
	if err := checkRange("write", off, int64(len(src)), b.size); err != nil || len(src) == 0 {
		return err
	}
	m, err := b.handle()
	if err != nil {
		return err
	}
	if b.d.isClosed() {
		return ErrClosed
	}
	code := b.d.api.clEnqueueWriteBuffer(b.d.queue, m, clTrue, uintptr(off), uintptr(len(src)), unsafe.Pointer(&src[0]), 0, nil, nil)
	runtime.KeepAlive(src)
	return clCheck(code, "clEnqueueWriteBuffer(%d bytes at %d)", len(src), off)
}

func (b *clBuffer) ReadAt(dst []byte, off int64) error {
	if err := checkRange("read", off, int64(len(dst)), b.size); err != nil || len(dst) == 0 {
		return err
	}
	m, err := b.handle()
	if err != nil {
		return err
	}
	if b.d.isClosed() {
		return ErrClosed
	}
	code := b.d.api.clEnqueueReadBuffer(b.d.queue, m, clTrue, uintptr(off), uintptr(len(dst)), unsafe.Pointer(&dst[0]), 0, nil, nil)
	runtime.KeepAlive(dst)
	return clCheck(code, "clEnqueueReadBuffer(%d bytes at %d)", len(dst), off)
}

func (b *clBuffer) CopyFrom(src Buffer, srcOff, dstOff, n int64) error {
	s, ok := src.(*clBuffer)
	if !ok || s.d != b.d {
		return fmt.Errorf("opencl: device copy from a buffer of another device")
	}
	if err := checkRange("copy source", srcOff, n, s.size); err != nil {
		return err
	}
	if err := checkRange("copy", dstOff, n, b.size); err != nil || n == 0 {
		return err
	}
	sm, err := s.handle()
	if err != nil {
		return err
	}
	dm, err := b.handle()
	if err != nil {
		return err
	}
	if b.d.isClosed() {
		return ErrClosed
	}
	if s == b && srcOff < dstOff+n && dstOff < srcOff+n {
		return fmt.Errorf("opencl: overlapping copy within one buffer")
	}
	return clCheck(b.d.api.clEnqueueCopyBuffer(b.d.queue, sm, dm, uintptr(srcOff), uintptr(dstOff), uintptr(n), 0, nil, nil), "clEnqueueCopyBuffer(%d bytes)", n)
}
