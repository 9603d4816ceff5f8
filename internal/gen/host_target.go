package gen

// hostTarget is what the CUDA and the OpenCL host code differ in: the device API, as C text.
// host.go writes the host file's structure once for both targets (context, errors, create and
// destroy, copies, launches, the timed schedule) and asks the target for these pieces only, so
// that a change to that structure cannot reach one target and miss the other. cudaHost
// (host_cuda.go) and openclHost (host_opencl.go) are its two kinds.
type hostTarget interface {
	// head is the file's comment and the includes only this target needs (the common ones
	// follow it).
	head(x *w)
	// kernels puts the kernels into the host file: CUDA source, or OpenCL source embedded as
	// a string with its build options.
	kernels(x *w)
	// slotTypedef declares slot_t, the C type of one device buffer.
	slotTypedef() string
	// ctxFields are the context's device handles (after the buffers).
	ctxFields(x *w)
	// errors is how device errors read and map to error codes (CHECK and _error).
	errors() deviceErrors
	// errorHelpers are C functions CHECK needs, written before it.
	errorHelpers(x *w)
	// deviceHelpers are C functions create needs, written before it.
	deviceHelpers(x *w)
	// createDecls are create's declarations, ending with rc set by setup.
	createDecls(x *w)
	// openDevice makes the device ready for buffers and launches (after setup succeeded).
	openDevice(x *w)
	// allocSlot is the statements that allocate c->slot[g][s] of the given bytes.
	allocSlot(bytes string) []string
	// afterAlloc is what create does after the buffers (CUDA: the timing events).
	afterAlloc(x *w)
	// drain is what destroy does before it frees anything.
	drain(x *w)
	// freeSlot is the call that frees a non-null buffer b.
	freeSlot(b string) string
	// release frees the device handles after the buffers.
	release(x *w)
	// writeSlot and readSlot are the CHECKed blocking copies of the given bytes between the
	// host pointer (src or dst) and c->slot[g][s].
	writeSlot(bytes string) string
	readSlot(bytes string) string
	// launchDecls are a launch function's declarations beyond grid and block.
	launchDecls(x *w, li launchInfo)
	// launch binds the arguments (C expressions, one per kernel parameter) and launches on
	// grid[] blocks of block[] threads.
	launch(x *w, li launchInfo, vals []string)
	// timerDecl, timerStart and timerStop time advance's launches into *ms.
	timerDecl(x *w)
	timerStart(x *w)
	timerStop(x *w)
}

// deviceErrors is a device API's error type and how its errors map to the program's error
// codes: ERR_DEVICE + e (CUDA's errors are positive) or ERR_DEVICE - e (OpenCL's are negative).
// CHECK encodes and _error decodes with the same sign.
type deviceErrors struct {
	api      string // "CUDA", "OpenCL": in error texts
	typ      string // the error type
	success  string // the value of no error
	negative bool   // errors are negative: the code is ERR_DEVICE - e
	text     string // the function naming an error
	// detailFmt and detailArg are what CHECK's message adds in parentheses, of e_.
	detailFmt, detailArg string
}

// newHostTarget is the host target of the generator's target.
func (g *gen) newHostTarget() hostTarget {
	if g.cuda() {
		return cudaHost{g}
	}
	return openclHost{g}
}
