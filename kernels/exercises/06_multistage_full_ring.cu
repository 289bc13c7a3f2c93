// Chapter 6's exercise: the cp.async pipeline of 09_multistage.cu with every one of its STAGES buffers in flight.
//
// Kernel 09 keeps STAGES - 1 tiles travelling: one of its buffers is always the one being read. Here the prologue
// starts all STAGES buffers filling, and each buffer is refilled as soon as no thread needs it any more, so that
// all STAGES tiles travel. Row-major A, B and C, the book's contract. gl.submit(source, "multistage_full_ring")
// checks it.
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

  auto multiply = [&](int s) {  // one step's FFMAs, from buffer s: every thread reads all of its A and B tiles
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
  };

#pragma unroll
  for (int t = 0; t < STAGES; ++t) {  // every buffer starts filling before the first step
    if (t < steps) issue(t);
    commit_copies();  // one group per step, empty past the end, so wait_group counts stay uniform
  }
  for (int t = 0; t < steps; ++t) {
    wait_copies<STAGES - 1>();  // groups 0 .. t + STAGES - 1 committed: step t's has landed when STAGES - 1 remain
    __syncthreads();  // every thread's copies of step t have landed
    multiply(t % STAGES);
    __syncthreads();  // every thread is done reading buffer t % STAGES: it may be refilled
    if (t + STAGES < steps) issue(t + STAGES);  // the step buffer t % STAGES holds next
    commit_copies();  // this step's group, empty past the end
  }
  tile.store(C, row0, col0, M, N, alpha, beta, vec_bc);
}
