// Step 8: prefetching, or double buffering.
//
// Relative to 06_vectorized.cu (same tiles: A transposed in shared memory, float4 accesses), the
// main loop no longer waits for memory. With PREFETCH = 1 there are two shared-memory buffers: while
// the threads multiply the tile in one, the next BK-deep tiles of A and B travel from global memory
// into registers (`Staging`), and only after the math are they written to the other buffer. One
// __syncthreads() per step suffices, because the buffer being written was last read a whole step
// earlier. Inside a step, the fragments of row kk + 1 are read from shared memory into a second set
// of registers while the FFMAs of row kk run. With PREFETCH = 0 the same code runs with one buffer:
// load, sync, multiply, sync, so the gain of prefetching can be measured on identical tiles.
#include "register_tile.cuh"
#include "staging.cuh"

template <int TM>
__device__ __forceinline__ void load_a(float (&a)[TM], const float* As_row, int row) {
#pragma unroll
  for (int i = 0; i < TM; i += 4) {
    const float4 v = *reinterpret_cast<const float4*>(As_row + row + i);
    a[i] = v.x, a[i + 1] = v.y, a[i + 2] = v.z, a[i + 3] = v.w;
  }
}

template <int BM, int BN, int BK, int TM, int TN, int PREFETCH>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
sgemm_prefetch(int M, int N, int K, float alpha, const float* __restrict__ A, const float* __restrict__ B,
               float beta, float* __restrict__ C) {
  using Tile = RegisterTile<BM, BN, TM, TN>;
  constexpr int BUFFERS = PREFETCH ? 2 : 1;
  __shared__ __align__(16) float As[BUFFERS][BK][BM];  // transposed: As[.][kk] is column kk of the A tile
  __shared__ __align__(16) float Bs[BUFFERS][BK][BN];

  const bool vec_a = K % 4 == 0, vec_bc = N % 4 == 0;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  const int steps = (K + BK - 1) / BK;
  Tile tile;
  Staging<BM, BN, BK, Tile::THREADS> staged;
  float a[2][TM], b[2][TN];  // fragments of rows kk and kk + 1

  staged.load(A, B, row0, col0, 0, M, N, K, vec_a, vec_bc);
  staged.store(As[0], Bs[0]);
  __syncthreads();
  for (int t = 0; t < steps; ++t) {
    const int cur = PREFETCH ? t % 2 : 0;
    const bool more = t + 1 < steps;
    if (PREFETCH && more) staged.load(A, B, row0, col0, (t + 1) * BK, M, N, K, vec_a, vec_bc);  // in flight during the math
    if (PREFETCH) load_a(a[0], As[cur][0], tile.row), tile.load_b(b[0], Bs[cur][0]);
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      const int now = PREFETCH ? kk % 2 : 0;
      if (!PREFETCH) {
        load_a(a[0], As[cur][kk], tile.row), tile.load_b(b[0], Bs[cur][kk]);
      } else if (kk + 1 < BK) {
        load_a(a[1 - now], As[cur][kk + 1], tile.row), tile.load_b(b[1 - now], Bs[cur][kk + 1]);
      }
      tile.outer_product(a[now], b[now]);
    }
    if (more) {
      if (!PREFETCH) {
        __syncthreads();  // everyone is done reading the only buffer
        staged.load(A, B, row0, col0, (t + 1) * BK, M, N, K, vec_a, vec_bc);
      }
      staged.store(As[PREFETCH ? 1 - cur : 0], Bs[PREFETCH ? 1 - cur : 0]);
      __syncthreads();
    }
  }
  tile.store(C, row0, col0, M, N, alpha, beta, vec_bc);
}
