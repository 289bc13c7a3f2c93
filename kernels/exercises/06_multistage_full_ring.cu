// Chapter 6's exercise: the cp.async pipeline of 09_multistage.cu with every one of its STAGES buffers in flight.
//
// Kernel 09 starts the copy of step t + STAGES - 1 at the top of step t, into the buffer that step t - 1 read: one
// buffer is always the one being read, and STAGES - 1 tiles travel. Here a buffer is refilled, with the tiles of step
// t + STAGES, as soon as every thread has finished reading it, at the end of step t: STAGES tiles travel. Row-major
// A, B and C, the book's contract. gl.submit(source, "multistage_full_ring") checks it.
#include "cp_async.cuh"
#include "register_tile.cuh"

template <int BM, int BN, int BK, int TM, int TN, int STAGES>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
sgemm_multistage_full_ring(int M, int N, int K, float alpha, const float* __restrict__ A,
                           const float* __restrict__ B, float beta, float* __restrict__ C) {
  using Tile = RegisterTile<BM, BN, TM, TN>;
  constexpr int THREADS = Tile::THREADS;
  __shared__ __align__(16) float As[STAGES][BM][BK];  // row-major, as in global memory
  __shared__ __align__(16) float Bs[STAGES][BK][BN];

  const bool vec_a = K % 4 == 0, vec_bc = N % 4 == 0;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  const int steps = (K + BK - 1) / BK;
  Tile tile;

  auto issue = [&](int t) {  // start copying step t's tiles into buffer t % STAGES
    const int s = t % STAGES, k0 = t * BK;
    for (int i = threadIdx.x; i < BM * BK / 4; i += THREADS) {
      const int r = i / (BK / 4), c = i % (BK / 4) * 4;
      copy4_async(&As[s][r][c], A, row0 + r, k0 + c, M, K, vec_a);
    }
    for (int i = threadIdx.x; i < BK * BN / 4; i += THREADS) {
      const int r = i / (BN / 4), c = i % (BN / 4) * 4;
      copy4_async(&Bs[s][r][c], B, k0 + r, col0 + c, K, N, vec_bc);
    }
  };

#pragma unroll
  for (int t = 0; t < STAGES; ++t) {  // every buffer starts filling before the first step
    if (t < steps) issue(t);
    commit_copies();  // one group per step, empty past the end, so wait_group counts stay uniform
  }
  for (int t = 0; t < steps; ++t) {
    wait_copies<STAGES - 1>();  // groups 0 .. t + STAGES - 1 committed: step t's is done when STAGES - 1 remain
    __syncthreads();  // every thread's copies of step t have landed
    const int s = t % STAGES;
#pragma unroll
    for (int k4 = 0; k4 < BK; k4 += 4) {
      float4 a4[TM];
#pragma unroll
      for (int i = 0; i < TM; ++i) a4[i] = *reinterpret_cast<const float4*>(&As[s][tile.row + i][k4]);
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        float a[TM], b[TN];
#pragma unroll
        for (int i = 0; i < TM; ++i) a[i] = q == 0 ? a4[i].x : q == 1 ? a4[i].y : q == 2 ? a4[i].z : a4[i].w;
        tile.load_b(b, Bs[s][k4 + q]);
        tile.outer_product(a, b);
      }
    }
    __syncthreads();  // every thread is done reading buffer s: it may be refilled
    if (t + STAGES < steps) issue(t + STAGES);  // into buffer s, the one just read
    commit_copies();
  }
  tile.store(C, row0, col0, M, N, alpha, beta, vec_bc);
}
