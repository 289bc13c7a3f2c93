// How fast the tensor cores multiply TF32 when nothing else is in the way: no memory traffic, only
// independent tensor-core instructions back to back. Gives the ceilings that chapter 8 measures its
// kernels against: mma.sync (one warp, Ampere and newer) and wgmma (one warpgroup, Hopper's sm_90a).
#include "cp_async.cuh"
#include "tf32.cuh"
#include "wgmma.cuh"

// Each warp: `iters` rounds of CHAINS independent mma.sync (no instruction waits for the one before).
template <int CHAINS>
__global__ void mma_peak(int iters, float* sink) {
  float c[CHAINS][4] = {};
  const unsigned x = __float_as_uint(1e-3f * threadIdx.x);
  const unsigned a[4] = {x, x, x, x}, b[2] = {x, x};
  for (int i = 0; i < iters; ++i)
#pragma unroll
    for (int j = 0; j < CHAINS; ++j) mma_tf32(c[j], a, b);
  float s = 0.0f;
#pragma unroll
  for (int j = 0; j < CHAINS; ++j) s += c[j][0] + c[j][1] + c[j][2] + c[j][3];
  if (s == 12345.0f) sink[0] = s;  // never true: keeps the products from being optimised away
}

// Each warpgroup: `iters` rounds of four 64 x N x 8 wgmmas on a zeroed shared tile, with one group
// always in flight. Dynamic shared memory: N * 128 + 1024 bytes.
template <int N>
__global__ void wgmma_peak(int iters, float* sink) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const unsigned raw = smem_address(smem_raw), base = (raw + 1023) & ~1023u;
  for (int i = threadIdx.x; i < N * 32; i += blockDim.x) reinterpret_cast<float*>(smem_raw + (base - raw))[i] = 0.0f;
  fence_async_shared();
  __syncthreads();
  float d[N / 2];
#pragma unroll
  for (int i = 0; i < N / 2; ++i) d[i] = 0.0f;
  const unsigned x = __float_as_uint(1e-3f * threadIdx.x);
  const unsigned a[4] = {x, x, x, x};
  for (int i = 0; i < iters; ++i) {
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) Wgmma<N>::rs(d, a, k_major_desc(base + 32 * kk), 1);
    wgmma_commit();
    wgmma_wait<1>();
  }
  wgmma_wait<0>();
  pin(d);
  float s = 0.0f;
#pragma unroll
  for (int i = 0; i < N / 2; ++i) s += d[i];
  if (s == 12345.0f) sink[0] = s;
}
