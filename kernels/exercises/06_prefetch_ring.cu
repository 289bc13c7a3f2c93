// Chapter 6's exercise: prefetching into a ring of BUFFERS shared-memory buffers instead of two. Step t
// multiplies the tiles in one buffer while the next tiles travel into registers (`Staging`), as in chapter 6;
// they are then written to the next buffer of the ring. BUFFERS = 2 is chapter 6's kernel with PREFETCH = 1.
// Row-major A, B and C, the book's contract. gl.submit(source, "prefetch_ring") checks it.
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

template <int BM, int BN, int BK, int TM, int TN, int BUFFERS>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
sgemm_prefetch_ring(int M, int N, int K, float alpha, const float* __restrict__ A, const float* __restrict__ B,
                    float beta, float* __restrict__ C) {
  using Tile = RegisterTile<BM, BN, TM, TN>;
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
    const int cur = t % BUFFERS, next = (t + 1) % BUFFERS;  // the ring: step t reads one buffer, fills the next
    const bool more = t + 1 < steps;
    if (more) staged.load(A, B, row0, col0, (t + 1) * BK, M, N, K, vec_a, vec_bc);  // in flight during the math
    load_a(a[0], As[cur][0], tile.row), tile.load_b(b[0], Bs[cur][0]);
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      const int now = kk % 2;
      if (kk + 1 < BK) load_a(a[1 - now], As[cur][kk + 1], tile.row), tile.load_b(b[1 - now], Bs[cur][kk + 1]);
      tile.outer_product(a[now], b[now]);
    }
    if (more) {
      staged.store(As[next], Bs[next]);  // last read BUFFERS - 1 steps ago
      __syncthreads();  // the tiles of step t + 1 are complete before anyone reads them
    }
  }
  tile.store(C, row0, col0, M, N, alpha, beta, vec_bc);
}
