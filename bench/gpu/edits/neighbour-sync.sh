#!/bin/sh
# Edit for bench/gpu/gen-ab.sh: replaces every block barrier of the generated CUDA kernels with
# a wait on the two neighbouring warps only (flags in shared memory, one per warp, counting the
# barriers passed). Right only where a warp's cells are read by the warps next to it alone (n5d
# with reach up to a warp's width: rows of 32 threads, or two rows of 16); the harness's check
# says whether it holds. Argument: the file that holds the kernels.
f=$1
sed -i '1i\
#define NB_SYNC() do { __syncwarp(); ++nbc; if (nbl == 0) { __threadfence_block(); nbf[nbw] = nbc; if (nbw > 0) { while (nbf[nbw - 1] < nbc) {} } if (nbw + 1 < nbn) { while (nbf[nbw + 1] < nbc) {} } __threadfence_block(); } __syncwarp(); } while (0)' "$f"
sed -i 's/__syncthreads();/NB_SYNC();/g' "$f"
sed -i 's/^\(  extern __shared__ float smem\[\];\)$/\1\
  __shared__ volatile int nbf[32];\
  int nbt = (int)(threadIdx.x + threadIdx.y * blockDim.x), nbl = nbt \& 31, nbw = nbt >> 5, nbn = (int)(blockDim.x * blockDim.y) >> 5, nbc = 0;\
  if (nbt < 32) nbf[nbt] = 0;\
  __syncthreads();/' "$f"
