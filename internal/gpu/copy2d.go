package gpu

import (
	"fmt"
	"runtime"
	"unsafe"
)

// Rect is a strided region of a buffer (or of host memory): Height rows of Width bytes, the
// first at byte Off, each Pitch bytes after the one before. Halos of a domain split along an
// axis other than the slowest are such regions: a segment of every row.
type Rect struct {
	Off, Pitch, Width, Height int64
}

// Bytes is the size of the region packed contiguously.
func (r Rect) Bytes() int64 { return r.Width * r.Height }

// Packed is the contiguous region of r's size at off: how a rectangle lies in a staging
// buffer.
func Packed(off, width, height int64) Rect {
	return Rect{Off: off, Pitch: width, Width: width, Height: height}
}

// check says whether the region is well formed and lies in size bytes.
func (r Rect) check(op string, size int64) error {
	if r.Width < 0 || r.Height < 0 || r.Off < 0 || (r.Height > 1 && r.Pitch < r.Width) {
		return fmt.Errorf("gpu: %s of %d rows of %d bytes, pitch %d, at offset %d: not a region", op, r.Height, r.Width, r.Pitch, r.Off)
	}
	if r.Width == 0 || r.Height == 0 {
		return nil
	}
	if end := r.Off + (r.Height-1)*r.Pitch + r.Width; end > size {
		return fmt.Errorf("gpu: %s of %d rows of %d bytes, pitch %d, at offset %d ends at byte %d of a buffer of %d bytes", op, r.Height, r.Width, r.Pitch, r.Off, end, size)
	}
	return nil
}

// pitch is r's pitch, with single rows given their width (drivers want pitch >= width).
func (r Rect) pitch() int64 {
	if r.Height <= 1 {
		return max(r.Pitch, r.Width)
	}
	return r.Pitch
}

// RectBuffer is a Buffer that also copies strided regions: halos of a domain split over two
// axes. Both backends' buffers implement it; copies are ordered with the device's launches.
type RectBuffer interface {
	Buffer
	// ReadRect packs region r of the buffer into dst (r.Bytes() bytes; blocking).
	ReadRect(dst []byte, r Rect) error
	// WriteRect unpacks src (r.Bytes() bytes) into region r of the buffer (blocking).
	WriteRect(src []byte, r Rect) error
	// CopyRectFrom copies region sr of src to region dr of this buffer (equal widths and
	// heights); src must live on the same device (see SameDevice).
	CopyRectFrom(src Buffer, sr, dr Rect) error
}

// CopyRect copies region sr of src to region dr of dst: on the device when both buffers live
// on one device, else through host memory.
func CopyRect(dst Buffer, dr Rect, src Buffer, sr Rect) error {
	if sr.Width != dr.Width || sr.Height != dr.Height {
		return fmt.Errorf("gpu: region copy of %dx%d bytes into %dx%d", sr.Height, sr.Width, dr.Height, dr.Width)
	}
	if sr.Bytes() == 0 {
		return nil
	}
	if d, ok := dst.(RectBuffer); ok && SameDevice(dst, src) {
		return d.CopyRectFrom(src, sr, dr)
	}
	s, ok1 := src.(RectBuffer)
	d, ok2 := dst.(RectBuffer)
	if !ok1 || !ok2 {
		return fmt.Errorf("gpu: %T or %T cannot copy regions of itself", src, dst)
	}
	tmp := make([]byte, sr.Bytes())
	if err := s.ReadRect(tmp, sr); err != nil {
		return err
	}
	return d.WriteRect(tmp, dr)
}

// ---- CUDA ----

// CUmemorytype values.
const (
	cuMemoryTypeHost   = 1
	cuMemoryTypeDevice = 2
)

// cuMemcpy2DParams is CUDA_MEMCPY2D (cuda.h, the _v2 layout: size_t offsets, pitches and
// extents, 64-bit device pointers; 128 bytes on 64-bit hosts).
type cuMemcpy2DParams struct {
	srcXInBytes, srcY uintptr
	srcMemoryType     uint32
	_                 uint32
	srcHost           uintptr
	srcDevice         uint64
	srcArray          uintptr
	srcPitch          uintptr
	dstXInBytes, dstY uintptr
	dstMemoryType     uint32
	_                 uint32
	dstHost           uintptr
	dstDevice         uint64
	dstArray          uintptr
	dstPitch          uintptr
	widthInBytes      uintptr
	height            uintptr
}

// memcpy2D runs one cuMemcpy2D on the executor (the default stream, after the launches
// before it). host, when not nil, is kept alive until the copy has returned.
func (d *cudaDevice) memcpy2D(p *cuMemcpy2DParams, host []byte) error {
	if d.api.cuMemcpy2D == nil {
		return fmt.Errorf("cuda: the driver has no cuMemcpy2D_v2")
	}
	err := d.ex.do(func() error {
		return d.api.check(d.api.cuMemcpy2D(unsafe.Pointer(p)), "cuMemcpy2D(%d rows of %d bytes)", p.height, p.widthInBytes)
	})
	runtime.KeepAlive(host)
	runtime.KeepAlive(p)
	return err
}

func (b *cudaBuffer) ReadRect(dst []byte, r Rect) error {
	if err := r.check("region read", b.size); err != nil || r.Bytes() == 0 {
		return err
	}
	if int64(len(dst)) != r.Bytes() {
		return fmt.Errorf("gpu: region read of %d bytes into %d", r.Bytes(), len(dst))
	}
	p, err := b.devPtr()
	if err != nil {
		return err
	}
	return b.d.memcpy2D(&cuMemcpy2DParams{
		srcMemoryType: cuMemoryTypeDevice, srcDevice: p + uint64(r.Off), srcPitch: uintptr(r.pitch()),
		dstMemoryType: cuMemoryTypeHost, dstHost: uintptr(unsafe.Pointer(&dst[0])), dstPitch: uintptr(r.Width),
		widthInBytes: uintptr(r.Width), height: uintptr(r.Height),
	}, dst)
}

func (b *cudaBuffer) WriteRect(src []byte, r Rect) error {
	if err := r.check("region write", b.size); err != nil || r.Bytes() == 0 {
		return err
	}
	if int64(len(src)) != r.Bytes() {
		return fmt.Errorf("gpu: region write of %d bytes from %d", r.Bytes(), len(src))
	}
	p, err := b.devPtr()
	if err != nil {
		return err
	}
	return b.d.memcpy2D(&cuMemcpy2DParams{
		srcMemoryType: cuMemoryTypeHost, srcHost: uintptr(unsafe.Pointer(&src[0])), srcPitch: uintptr(r.Width),
		dstMemoryType: cuMemoryTypeDevice, dstDevice: p + uint64(r.Off), dstPitch: uintptr(r.pitch()),
		widthInBytes: uintptr(r.Width), height: uintptr(r.Height),
	}, src)
}

func (b *cudaBuffer) CopyRectFrom(src Buffer, sr, dr Rect) error {
	s, ok := src.(*cudaBuffer)
	if !ok || s.d != b.d {
		return fmt.Errorf("cuda: device region copy from a buffer of another device")
	}
	if sr.Width != dr.Width || sr.Height != dr.Height {
		return fmt.Errorf("cuda: region copy of %dx%d bytes into %dx%d", sr.Height, sr.Width, dr.Height, dr.Width)
	}
	if err := sr.check("region copy source", s.size); err != nil {
		return err
	}
	if err := dr.check("region copy", b.size); err != nil || dr.Bytes() == 0 {
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
	return b.d.memcpy2D(&cuMemcpy2DParams{
		srcMemoryType: cuMemoryTypeDevice, srcDevice: sp + uint64(sr.Off), srcPitch: uintptr(sr.pitch()),
		dstMemoryType: cuMemoryTypeDevice, dstDevice: dp + uint64(dr.Off), dstPitch: uintptr(dr.pitch()),
		widthInBytes: uintptr(dr.Width), height: uintptr(dr.Height),
	}, nil)
}

// ---- OpenCL ----

// clRectAPI holds the OpenCL 1.1 region copies, bound where the implementation has them.
type clRectAPI struct {
	clEnqueueReadBufferRect  func(q, mem uintptr, blocking uint32, bufOrigin, hostOrigin, region *uintptr, bufRowPitch, bufSlicePitch, hostRowPitch, hostSlicePitch uintptr, ptr unsafe.Pointer, nWait uint32, wait unsafe.Pointer, ev *uintptr) int32
	clEnqueueWriteBufferRect func(q, mem uintptr, blocking uint32, bufOrigin, hostOrigin, region *uintptr, bufRowPitch, bufSlicePitch, hostRowPitch, hostSlicePitch uintptr, ptr unsafe.Pointer, nWait uint32, wait unsafe.Pointer, ev *uintptr) int32
	clEnqueueCopyBufferRect  func(q, src, dst uintptr, srcOrigin, dstOrigin, region *uintptr, srcRowPitch, srcSlicePitch, dstRowPitch, dstSlicePitch uintptr, nWait uint32, wait unsafe.Pointer, ev *uintptr) int32
}

func (a *clRectAPI) bindRect(b *binder) {
	b.optional(&a.clEnqueueReadBufferRect, "clEnqueueReadBufferRect")
	b.optional(&a.clEnqueueWriteBufferRect, "clEnqueueWriteBufferRect")
	b.optional(&a.clEnqueueCopyBufferRect, "clEnqueueCopyBufferRect")
}

// clRect is a region's origin and extent as the *BufferRect calls take them (bytes, rows,
// slices): they address a region by byte and row, so its offset splits into the two.
func clRect(r Rect) (origin, region [3]uintptr) {
	p := max(r.pitch(), 1)
	return [3]uintptr{uintptr(r.Off % p), uintptr(r.Off / p), 0}, [3]uintptr{uintptr(r.Width), uintptr(r.Height), 1}
}

func (b *clBuffer) ReadRect(dst []byte, r Rect) error {
	if err := r.check("region read", b.size); err != nil || r.Bytes() == 0 {
		return err
	}
	if int64(len(dst)) != r.Bytes() {
		return fmt.Errorf("gpu: region read of %d bytes into %d", r.Bytes(), len(dst))
	}
	if b.d.api.clEnqueueReadBufferRect == nil {
		return fmt.Errorf("opencl: %s has no clEnqueueReadBufferRect (OpenCL 1.1)", b.d.api.lib.path)
	}
	m, err := b.handle()
	if err != nil {
		return err
	}
	if b.d.isClosed() {
		return ErrClosed
	}
	origin, region := clRect(r)
	host := [3]uintptr{}
	code := b.d.api.clEnqueueReadBufferRect(b.d.queue, m, clTrue, &origin[0], &host[0], &region[0], uintptr(r.pitch()), 0, uintptr(r.Width), 0, unsafe.Pointer(&dst[0]), 0, nil, nil)
	runtime.KeepAlive(dst)
	return clCheck(code, "clEnqueueReadBufferRect(%d rows of %d bytes)", r.Height, r.Width)
}

func (b *clBuffer) WriteRect(src []byte, r Rect) error {
	if err := r.check("region write", b.size); err != nil || r.Bytes() == 0 {
		return err
	}
	if int64(len(src)) != r.Bytes() {
		return fmt.Errorf("gpu: region write of %d bytes from %d", r.Bytes(), len(src))
	}
	if b.d.api.clEnqueueWriteBufferRect == nil {
		return fmt.Errorf("opencl: %s has no clEnqueueWriteBufferRect (OpenCL 1.1)", b.d.api.lib.path)
	}
	m, err := b.handle()
	if err != nil {
		return err
	}
	if b.d.isClosed() {
		return ErrClosed
	}
	origin, region := clRect(r)
	host := [3]uintptr{}
	code := b.d.api.clEnqueueWriteBufferRect(b.d.queue, m, clTrue, &origin[0], &host[0], &region[0], uintptr(r.pitch()), 0, uintptr(r.Width), 0, unsafe.Pointer(&src[0]), 0, nil, nil)
	runtime.KeepAlive(src)
	return clCheck(code, "clEnqueueWriteBufferRect(%d rows of %d bytes)", r.Height, r.Width)
}

func (b *clBuffer) CopyRectFrom(src Buffer, sr, dr Rect) error {
	s, ok := src.(*clBuffer)
	if !ok || s.d != b.d {
		return fmt.Errorf("opencl: device region copy from a buffer of another device")
	}
	if sr.Width != dr.Width || sr.Height != dr.Height {
		return fmt.Errorf("opencl: region copy of %dx%d bytes into %dx%d", sr.Height, sr.Width, dr.Height, dr.Width)
	}
	if err := sr.check("region copy source", s.size); err != nil {
		return err
	}
	if err := dr.check("region copy", b.size); err != nil || dr.Bytes() == 0 {
		return err
	}
	if b.d.api.clEnqueueCopyBufferRect == nil {
		return fmt.Errorf("opencl: %s has no clEnqueueCopyBufferRect (OpenCL 1.1)", b.d.api.lib.path)
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
	so, region := clRect(sr)
	do, _ := clRect(dr)
	code := b.d.api.clEnqueueCopyBufferRect(b.d.queue, sm, dm, &so[0], &do[0], &region[0], uintptr(sr.pitch()), 0, uintptr(dr.pitch()), 0, 0, nil, nil)
	return clCheck(code, "clEnqueueCopyBufferRect(%d rows of %d bytes)", dr.Height, dr.Width)
}
