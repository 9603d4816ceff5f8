package probe

import "strings"

// The micro-benchmarks are plain source strings written once with a few macros; a prelude per
// dialect defines them (CUDA or OpenCL C). They follow Schafer and Fey (section 2) and the
// benchmarks AN5D used (BabelStream for DRAM, gpumembench for shared memory):
//
//	probe_copy     b[i] = a[i]                         DRAM copy (2 words per element)
//	probe_triad    a[i] = b[i] + s*c[i]                DRAM triad (3 words per element)
//	probe_l2       a sweep over a working set that fits the L2 cache, read only
//	probe_smem_*   8 independent shared-memory loads per iteration, conflict-free
//	probe_fma_*    8 independent FMA chains per thread
//	probe_empty    nothing: launch and synchronisation latency

const preludeCUDA = `#define KERNEL extern "C" __global__
#define GLOBAL
#define GID ((long)blockIdx.x * (long)blockDim.x + (long)threadIdx.x)
#define LID ((int)threadIdx.x)
#define LSIZE ((int)blockDim.x)
#define BARRIER __syncthreads()
#define SHARED __shared__
#define FMA_F(a, b, c) fmaf(a, b, c)
#define FMA_D(a, b, c) fma(a, b, c)
`

const preludeOpenCL = `#define KERNEL __kernel
#define GLOBAL __global
#define GID ((long)get_global_id(0))
#define LID ((int)get_local_id(0))
#define LSIZE ((int)get_local_size(0))
#define BARRIER barrier(CLK_LOCAL_MEM_FENCE)
#define SHARED __local
#define FMA_F(a, b, c) fma(a, b, c)
#define FMA_D(a, b, c) fma(a, b, c)
`

const floatKernels = `
KERNEL void probe_copy(GLOBAL const float* a, GLOBAL float* b) {
	long i = GID;
	b[i] = a[i];
}

KERNEL void probe_triad(GLOBAL float* a, GLOBAL const float* b, GLOBAL const float* c, float s) {
	long i = GID;
	a[i] = b[i] + s * c[i];
}

// Each thread reads words (i + r*stride) mod (mask+1), four at a time: every pass of the grid
// touches another part of the working set, so a multiprocessor's L1 does not hold what it
// reads next while the whole set stays in L2.
KERNEL void probe_l2(GLOBAL const float* a, GLOBAL float* out, unsigned int mask, unsigned int stride, int iters) {
	unsigned int i = (unsigned int)GID;
	float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
	for (int r = 0; r < iters; r += 4) {
		unsigned int base = i + (unsigned int)r * stride;
		s0 += a[base & mask];
		s1 += a[(base + stride) & mask];
		s2 += a[(base + 2u * stride) & mask];
		s3 += a[(base + 3u * stride) & mask];
	}
	out[GID] = s0 + s1 + s2 + s3;
}

KERNEL void probe_smem_f(GLOBAL float* out, int iters) {
	SHARED float s[SMEM_F];
	for (int k = LID; k < SMEM_F; k += LSIZE) s[k] = (float)k;
	BARRIER;
	float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f, a4 = 0.0f, a5 = 0.0f, a6 = 0.0f, a7 = 0.0f;
	int i = LID & (SMEM_F - 1);
	for (int r = 0; r < iters; r++) {
		a0 += s[i]; a1 += s[i ^ 32]; a2 += s[i ^ 64]; a3 += s[i ^ 96];
		a4 += s[i ^ 128]; a5 += s[i ^ 160]; a6 += s[i ^ 192]; a7 += s[i ^ 224];
		i = (i + 256) & (SMEM_F - 1);
	}
	out[GID] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
}

KERNEL void probe_fma_f(GLOBAL float* out, float b, float c, int iters) {
	float a0 = (float)LID * 1e-3f;
	float a1 = a0 + 1.0f, a2 = a0 + 2.0f, a3 = a0 + 3.0f, a4 = a0 + 4.0f, a5 = a0 + 5.0f, a6 = a0 + 6.0f, a7 = a0 + 7.0f;
	for (int r = 0; r < iters; r++) {
		a0 = FMA_F(a0, b, c); a1 = FMA_F(a1, b, c); a2 = FMA_F(a2, b, c); a3 = FMA_F(a3, b, c);
		a4 = FMA_F(a4, b, c); a5 = FMA_F(a5, b, c); a6 = FMA_F(a6, b, c); a7 = FMA_F(a7, b, c);
	}
	out[GID] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
}

KERNEL void probe_empty(GLOBAL float* out) {
	if (GID < 0) out[0] = 0.0f;
}
`

const doubleKernels = `
KERNEL void probe_smem_d(GLOBAL double* out, int iters) {
	SHARED double s[SMEM_D];
	for (int k = LID; k < SMEM_D; k += LSIZE) s[k] = (double)k;
	BARRIER;
	double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0, a4 = 0.0, a5 = 0.0, a6 = 0.0, a7 = 0.0;
	int i = LID & (SMEM_D - 1);
	for (int r = 0; r < iters; r++) {
		a0 += s[i]; a1 += s[i ^ 32]; a2 += s[i ^ 64]; a3 += s[i ^ 96];
		a4 += s[i ^ 128]; a5 += s[i ^ 160]; a6 += s[i ^ 192]; a7 += s[i ^ 224];
		i = (i + 256) & (SMEM_D - 1);
	}
	out[GID] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
}

KERNEL void probe_fma_d(GLOBAL double* out, double b, double c, int iters) {
	double a0 = (double)LID * 1e-3;
	double a1 = a0 + 1.0, a2 = a0 + 2.0, a3 = a0 + 3.0, a4 = a0 + 4.0, a5 = a0 + 5.0, a6 = a0 + 6.0, a7 = a0 + 7.0;
	for (int r = 0; r < iters; r++) {
		a0 = FMA_D(a0, b, c); a1 = FMA_D(a1, b, c); a2 = FMA_D(a2, b, c); a3 = FMA_D(a3, b, c);
		a4 = FMA_D(a4, b, c); a5 = FMA_D(a5, b, c); a6 = FMA_D(a6, b, c); a7 = FMA_D(a7, b, c);
	}
	out[GID] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
}
`

// source assembles one program for a backend ("cuda" or "opencl").
func source(backend string, double bool) string {
	var b strings.Builder
	if backend == "cuda" {
		b.WriteString(preludeCUDA)
	} else {
		if double {
			b.WriteString("#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n")
		}
		b.WriteString(preludeOpenCL)
	}
	b.WriteString("#define SMEM_F 2048\n#define SMEM_D 1024\n")
	if double {
		b.WriteString(doubleKernels)
	} else {
		b.WriteString(floatKernels)
	}
	return b.String()
}
