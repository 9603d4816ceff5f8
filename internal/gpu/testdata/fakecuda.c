// A fake CUDA driver + NVRTC in one shared library, for testing the Go side
// of the CUDA backend (symbol lookup, argument marshalling through purego,
// the one-thread executor, the >48 KB shared-memory opt-in) on machines
// without a GPU. "Kernels" are the test kernels of gpu_test.go written in C.
//
//   cc -shared -fPIC -O1 -o libfakecuda.so fakecuda.c            (CUDA 12 style symbols)
//   cc -shared -fPIC -O1 -DCUDA13 -o libfakecuda13.so fakecuda.c (CUDA 13: *_v2 only)
//
// Every context-bound call checks that the primary context is current on the
// calling OS thread, as the real driver requires.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
#define OK 0
#define ERR_INVALID_VALUE 1
#define ERR_NOT_INITIALIZED 3
#define ERR_INVALID_CONTEXT 201
#define ERR_INVALID_HANDLE 400
#define ERR_NOT_FOUND 500

static int initialized;
static int primary; // the primary context object; its address is the handle
static int retained;
static __thread void *current;
static int launches;
static int chained; // launches through cuLaunchKernelEx with programmatic stream serialization

#define NEED_CTX()                                   \
	do {                                             \
		if (!initialized) return ERR_NOT_INITIALIZED; \
		if (current != &primary) return ERR_INVALID_CONTEXT; \
	} while (0)

CUresult cuInit(unsigned flags) { initialized = 1; return flags == 0 ? OK : ERR_INVALID_VALUE; }
CUresult cuDriverGetVersion(int *v) { *v = 13000; return OK; }
CUresult cuDeviceGetCount(int *n) { *n = 1; return OK; }
CUresult cuDeviceGet(CUdevice *d, int ordinal) { if (ordinal != 0) return ERR_INVALID_VALUE; *d = 0; return OK; }
CUresult cuDeviceGetName(char *name, int len, CUdevice d) { snprintf(name, len, "Fake H100"); return OK; }
CUresult cuDeviceTotalMem_v2(size_t *b, CUdevice d) { *b = (size_t)80 << 30; return OK; }
CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d) {
	switch (attr) {
	case 1: *v = 1024; break;
	case 8: *v = 49152; break;
	case 10: *v = 32; break;
	case 12: *v = 65536; break;
	case 13: *v = 1755000; break;
	case 16: *v = 132; break;
	case 36: *v = 2619000; break;
	case 37: *v = 5120; break;
	case 38: *v = 52428800; break;
	case 39: *v = 2048; break;
	case 75: *v = 9; break;
	case 76: *v = 0; break;
	case 81: *v = 233472; break;
	case 82: *v = 65536; break;
	case 97: *v = 232448; break;
	default: return ERR_INVALID_VALUE;
	}
	return OK;
}
CUresult cuDevicePrimaryCtxRetain(void **ctx, CUdevice d) { retained++; *ctx = &primary; return OK; }
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) { if (retained <= 0) return ERR_INVALID_CONTEXT; retained--; return OK; }
CUresult cuCtxSetCurrent(void *ctx) { if (ctx != &primary) return ERR_INVALID_CONTEXT; current = ctx; return OK; }
#ifdef CUDA13
CUresult cuCtxSynchronize_v2(void *ctx) { if (ctx != NULL && ctx != &primary) return ERR_INVALID_CONTEXT; NEED_CTX(); return OK; }
#else
CUresult cuCtxSynchronize(void) { NEED_CTX(); return OK; }
#endif

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) { NEED_CTX(); if (n == 0) return ERR_INVALID_VALUE; *p = (CUdeviceptr)(uintptr_t)malloc(n); return OK; }
CUresult cuMemFree_v2(CUdeviceptr p) { NEED_CTX(); free((void *)(uintptr_t)p); return OK; }
CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) { NEED_CTX(); memcpy((void *)(uintptr_t)dst, src, n); return OK; }
CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) { NEED_CTX(); memcpy(dst, (const void *)(uintptr_t)src, n); return OK; }
CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n) { NEED_CTX(); memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n); return OK; }
// CUDA_MEMCPY2D, the _v2 layout; host and device memory alike are host memory here.
typedef struct {
	size_t srcXInBytes, srcY; int srcMemoryType; const void *srcHost; CUdeviceptr srcDevice; void *srcArray; size_t srcPitch;
	size_t dstXInBytes, dstY; int dstMemoryType; void *dstHost; CUdeviceptr dstDevice; void *dstArray; size_t dstPitch;
	size_t WidthInBytes, Height;
} CUDA_MEMCPY2D;
CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D *p) {
	NEED_CTX();
	if (sizeof(CUDA_MEMCPY2D) != 128 || p->srcMemoryType < 1 || p->srcMemoryType > 2 || p->dstMemoryType < 1 || p->dstMemoryType > 2) return ERR_INVALID_VALUE;
	if (p->Height > 1 && (p->srcPitch < p->WidthInBytes || p->dstPitch < p->WidthInBytes)) return ERR_INVALID_VALUE;
	const char *src = p->srcMemoryType == 1 ? (const char *)p->srcHost : (const char *)(uintptr_t)p->srcDevice;
	char *dst = p->dstMemoryType == 1 ? (char *)p->dstHost : (char *)(uintptr_t)p->dstDevice;
	src += p->srcY * p->srcPitch + p->srcXInBytes;
	dst += p->dstY * p->dstPitch + p->dstXInBytes;
	for (size_t r = 0; r < p->Height; r++) memmove(dst + r * p->dstPitch, src + r * p->srcPitch, p->WidthInBytes);
	return OK;
}

// ---- NVRTC ----
typedef struct { char *src, *name, *log, *cubin; size_t cubinSize; } prog;
int nvrtcVersion(int *maj, int *min) { *maj = 13; *min = 0; return 0; }
const char *nvrtcGetErrorString(int r) { return r == 6 ? "NVRTC_ERROR_COMPILATION" : "NVRTC_ERROR"; }
int nvrtcCreateProgram(prog **p, const char *src, const char *name, int nh, const char *const *h, const char *const *in) {
	prog *q = calloc(1, sizeof *q);
	q->src = strdup(src);
	q->name = strdup(name);
	q->log = strdup("");
	*p = q;
	return 0;
}
int nvrtcDestroyProgram(prog **p) { free((*p)->src); free((*p)->name); free((*p)->log); free((*p)->cubin); free(*p); *p = NULL; return 0; }
int nvrtcCompileProgram(prog *p, int n, const char *const *opts) {
	const char *scale = "0";
	int arch = 0;
	for (int i = 0; i < n; i++) {
		const char *o = opts[i];
		if (!strncmp(o, "--gpu-architecture=sm_", 22)) arch = 1;
		else if (!strncmp(o, "-DSCALE=", 8)) scale = o + 8;
		else if (!strcmp(o, "-default-device") || !strcmp(o, "-std=c++17") || !strcmp(o, "-use_fast_math") || !strcmp(o, "--fmad=false") ||
		         !strncmp(o, "--maxrregcount=", 15) || !strncmp(o, "-D", 2)) {
		} else {
			free(p->log);
			p->log = malloc(strlen(o) + 64);
			sprintf(p->log, "nvrtc: error: unrecognized option %s", o);
			return 5; // NVRTC_ERROR_INVALID_OPTION
		}
	}
	if (!arch) return 5;
	const char *bad = strstr(p->src, "undefined_thing_42");
	if (bad) {
		int line = 1;
		for (const char *c = p->src; c < bad; c++) line += *c == '\n';
		free(p->log);
		p->log = malloc(strlen(p->name) + 200);
		sprintf(p->log, "%s(%d): error: identifier \"undefined_thing_42\" is undefined\n\n1 error detected in the compilation of \"%s\".\n", p->name, line, p->name);
		return 6;
	}
	p->cubinSize = strlen(p->src) + 64;
	p->cubin = malloc(p->cubinSize);
	snprintf(p->cubin, p->cubinSize, "FAKECUBIN %s\n%s", scale, p->src);
	p->cubinSize = strlen(p->cubin) + 1;
	return 0;
}
int nvrtcGetProgramLogSize(prog *p, size_t *n) { *n = strlen(p->log) + 1; return 0; }
int nvrtcGetProgramLog(prog *p, char *log) { strcpy(log, p->log); return 0; }
int nvrtcGetCUBINSize(prog *p, size_t *n) { *n = p->cubinSize; return 0; }
int nvrtcGetCUBIN(prog *p, char *out) { memcpy(out, p->cubin, p->cubinSize); return 0; }
int nvrtcGetPTXSize(prog *p, size_t *n) { *n = p->cubinSize; return 0; }
int nvrtcGetPTX(prog *p, char *out) { memcpy(out, p->cubin, p->cubinSize); return 0; }

// ---- modules, functions, launches ----
typedef struct { double scale; char *src; } module;
typedef struct { module *m; int kind; int maxDyn; } function;
enum { SAXPY = 1, REVERSE, SCALARS, BIG };

CUresult cuModuleLoadData(module **m, const void *image) {
	NEED_CTX();
	const char *s = image;
	if (strncmp(s, "FAKECUBIN ", 10)) return ERR_INVALID_VALUE;
	module *q = calloc(1, sizeof *q);
	q->scale = atof(s + 10);
	q->src = strdup(s);
	*m = q;
	return OK;
}
CUresult cuModuleUnload(module *m) { NEED_CTX(); free(m->src); free(m); return OK; }
CUresult cuModuleGetFunction(function **f, module *m, const char *name) {
	NEED_CTX();
	char pat[256];
	snprintf(pat, sizeof pat, "void %s(", name);
	if (!strstr(m->src, pat)) return ERR_NOT_FOUND;
	int kind = !strcmp(name, "saxpy") ? SAXPY : !strcmp(name, "reverse_blocks") ? REVERSE : !strcmp(name, "scalars") ? SCALARS : !strcmp(name, "big") ? BIG : 0;
	function *q = calloc(1, sizeof *q);
	q->m = m;
	q->kind = kind;
	q->maxDyn = 49152;
	*f = q;
	return OK;
}
CUresult cuFuncGetAttribute(int *v, int attr, function *f) {
	NEED_CTX();
	switch (attr) {
	case 0: *v = 1024; break;
	case 1: *v = 0; break;
	case 3: *v = 0; break;
	case 4: *v = 16 + f->kind; break;
	case 8: *v = f->maxDyn; break;
	default: return ERR_INVALID_VALUE;
	}
	return OK;
}
CUresult cuFuncSetAttribute(function *f, int attr, int v) {
	NEED_CTX();
	if (attr != 8 || v < 0 || v > 232448) return ERR_INVALID_VALUE;
	f->maxDyn = v;
	return OK;
}
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, function *f, int bs, size_t dyn) {
	NEED_CTX();
	if (bs <= 0 || bs > 1024) return ERR_INVALID_VALUE;
	if ((int)dyn > f->maxDyn) { *n = 0; return OK; }
	int b = 2048 / bs;
	if (dyn > 0 && (int)(233472 / (dyn + 1024)) < b) b = 233472 / (dyn + 1024);
	if (b > 32) b = 32;
	*n = b;
	return OK;
}

#define ARG(T, i) (*(T *)params[i])
#define PTR(T, i) ((T *)(uintptr_t)(*(CUdeviceptr *)params[i]))

// launch_kernel is cuLaunchKernel, static so that cuLaunchKernelEx reaches this library's own
// (another fake driver loaded earlier in the process would otherwise interpose its export).
static CUresult launch_kernel(function *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                              unsigned shared, void *stream, void **params, void **extra) {
	NEED_CTX();
	if (!gx || !gy || !gz || !bx || !by || !bz || bx * by * bz > 1024 || extra != NULL || stream != NULL) return ERR_INVALID_VALUE;
	if ((int)shared > f->maxDyn) return ERR_INVALID_VALUE; // no opt-in for > 48 KB
	launches++;
	switch (f->kind) {
	case SAXPY: {
		int n = ARG(int, 0);
		float a = ARG(float, 1);
		const float *x = PTR(float, 2);
		float *y = PTR(float, 3);
		for (unsigned b = 0; b < gx; b++)
			for (unsigned t = 0; t < bx; t++) {
				int i = b * bx + t;
				if (i < n) y[i] = a * x[i] + y[i];
			}
		return OK;
	}
	case REVERSE: {
		int n = ARG(int, 0);
		const float *in = PTR(float, 1);
		float *out = PTR(float, 2);
		if (shared < bx * sizeof(float)) return 719; // CUDA_ERROR_LAUNCH_FAILED
		float *s = malloc(shared);
		for (unsigned b = 0; b < gx; b++) {
			for (unsigned t = 0; t < bx; t++) { int i = b * bx + t; s[t] = i < n ? in[i] : 0.0f; }
			for (unsigned t = 0; t < bx; t++) { int j = b * bx + (bx - 1 - t); if (j < n) out[j] = s[t]; }
		}
		free(s);
		return OK;
	}
	case SCALARS: {
		double *out = PTR(double, 4);
		out[0] = ARG(int, 0);
		out[1] = (double)ARG(long long, 1);
		out[2] = ARG(float, 2);
		out[3] = ARG(double, 3);
		out[4] = f->m->scale;
		return OK;
	}
	case BIG: {
		int words = ARG(int, 0);
		unsigned *out = PTR(unsigned, 1);
		if ((size_t)words * 4 > shared) return 719;
		for (unsigned b = 0; b < gx; b++) out[b] = words - 1;
		return OK;
	}
	}
	return ERR_INVALID_HANDLE;
}

// ---- events ----
typedef struct { double t; int recorded, notiming; } event;
static double now_ms(void) { struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts); return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6; }
// ---- streams: work runs at once, so a stream only checks its handle and flags ----
#define STREAM_MAGIC 0x5eed
typedef struct { int magic, flags; } stream;
static int streams, waits;
static int bad_stream(void *s) { return s != NULL && ((stream *)s)->magic != STREAM_MAGIC; }
CUresult cuStreamCreate(stream **s, unsigned flags) {
	NEED_CTX();
	if (flags != 1) return ERR_INVALID_VALUE; // Tempest's side streams are non-blocking
	*s = calloc(1, sizeof **s);
	(*s)->magic = STREAM_MAGIC;
	(*s)->flags = flags;
	streams++;
	return OK;
}
static CUresult stream_destroy(stream *s) { NEED_CTX(); if (s == NULL || bad_stream(s)) return ERR_INVALID_HANDLE; s->magic = 0; free(s); streams--; return OK; }
CUresult cuStreamDestroy_v2(stream *s) { return stream_destroy(s); }
#ifndef CUDA13
CUresult cuStreamDestroy(stream *s) { return stream_destroy(s); }
#endif

CUresult cuEventCreate(event **e, unsigned flags) { NEED_CTX(); if (flags != 0 && flags != 2) return ERR_INVALID_VALUE; *e = calloc(1, sizeof **e); (*e)->notiming = flags == 2; return OK; }
CUresult cuEventDestroy_v2(event *e) { NEED_CTX(); free(e); return OK; }
CUresult cuEventRecord(event *e, void *stream) { NEED_CTX(); if (bad_stream(stream)) return ERR_INVALID_HANDLE; e->t = now_ms(); e->recorded = 1; return OK; }
CUresult cuStreamWaitEvent(void *stream, event *e, unsigned flags) {
	NEED_CTX();
	if (bad_stream(stream) || e == NULL) return ERR_INVALID_HANDLE;
	if (flags != 0) return ERR_INVALID_VALUE;
	waits++;
	return OK;
}
CUresult cuEventSynchronize(event *e) { NEED_CTX(); return OK; }
static CUresult elapsed(float *ms, event *a, event *b) {
	NEED_CTX();
	if (!a->recorded || !b->recorded || a->notiming || b->notiming) return ERR_INVALID_HANDLE;
	*ms = (float)(b->t - a->t);
	return OK;
}
#ifdef CUDA13
CUresult cuEventElapsedTime_v2(float *ms, event *a, event *b) { return elapsed(ms, a, b); }
#else
CUresult cuEventElapsedTime(float *ms, event *a, event *b) { return elapsed(ms, a, b); }
#endif

CUresult cuGetErrorName(CUresult r, const char **s) {
	switch (r) {
	case 1: *s = "CUDA_ERROR_INVALID_VALUE"; break;
	case 201: *s = "CUDA_ERROR_INVALID_CONTEXT"; break;
	case 500: *s = "CUDA_ERROR_NOT_FOUND"; break;
	default: *s = "CUDA_ERROR_UNKNOWN"; break;
	}
	return OK;
}
CUresult cuGetErrorString(CUresult r, const char **s) { *s = r == 201 ? "invalid device context" : "fake error"; return OK; }

CUresult cuLaunchKernel(function *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, void *stream, void **params, void **extra) {
	return launch_kernel(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra);
}

// cuLaunchKernelEx with the layouts of cuda.h: CUlaunchConfig (7 unsigned, the stream, the
// attributes, their count) and CUlaunchAttribute (an id padded to 8 bytes, a 64-byte union).
typedef struct { unsigned id; char pad[4]; union { char pad[64]; int programmaticStreamSerializationAllowed; } value; } CUlaunchAttribute;
typedef struct {
	unsigned gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes;
	void *hStream;
	CUlaunchAttribute *attrs;
	unsigned numAttrs;
} CUlaunchConfig;

CUresult cuLaunchKernelEx(const CUlaunchConfig *c, function *f, void **params, void **extra) {
	if (sizeof(CUlaunchAttribute) != 72 || sizeof(CUlaunchConfig) != 56) return ERR_INVALID_VALUE;
	if (c->numAttrs != 1 || c->attrs[0].id != 6 || c->attrs[0].value.programmaticStreamSerializationAllowed != 1) return ERR_INVALID_VALUE;
	CUresult r = launch_kernel(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY, c->blockDimZ,
	                            c->sharedMemBytes, c->hStream, params, extra);
	if (r == OK) chained++;
	return r;
}

// Introspection for the Go test.
int fakeLaunches(void) { return launches; }
int fakeChained(void) { return chained; }
int fakeRetained(void) { return retained; }
int fakeStreams(void) { return streams; }
int fakeStreamWaits(void) { return waits; }
