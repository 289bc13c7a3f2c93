// Step 4: shared -> register blocking in one dimension: each thread computes TM outputs of a column.
//
// Relative to 03_smem_tiling.cu, a block of (BM/TM)*BN threads still owns a BM x BN tile of C, but
// each thread now keeps TM accumulators in registers. For every kk it reads one value of Bs into a
// register and reuses it for TM multiply-adds, so shared-memory reads per FMA fall from 2 to
// (1 + 1/TM). The block also has TM times fewer threads to share the copy into shared memory.
#include "tiles.cuh"

template <int BM, int BN, int BK, int TM>
__global__ void __launch_bounds__((BM / TM) * BN)
sgemm_thread_tile_1d(int M, int N, int K, float alpha, const float* __restrict__ A,
                     const float* __restrict__ B, float beta, float* __restrict__ C) {
  constexpr int THREADS = (BM / TM) * BN;
  __shared__ float As[BM][BK];
  __shared__ float Bs[BK][BN];

  const int tc = threadIdx.x % BN;       // column of C inside the tile (fastest: a warp reads Bs rows)
  const int tr = threadIdx.x / BN * TM;  // first of this thread's TM rows
  const int row0 = blockIdx.y * BM;
  const int col0 = blockIdx.x * BN;

  float acc[TM] = {};
  for (int k0 = 0; k0 < K; k0 += BK) {
    load_tile<BM, BK, THREADS>(As, A, row0, k0, M, K);
    load_tile<BK, BN, THREADS>(Bs, B, k0, col0, K, N);
    __syncthreads();

#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      const float b = Bs[kk][tc];  // one shared load, reused TM times
#pragma unroll
      for (int i = 0; i < TM; ++i) acc[i] += As[tr + i][kk] * b;
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TM; ++i) store_c(C, row0 + tr + i, col0 + tc, M, N, alpha, beta, acc[i]);
}
