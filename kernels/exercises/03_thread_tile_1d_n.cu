// Chapter 3's exercise: a 1-D thread tile along N. Each thread computes TN consecutive outputs of one row of
// the block's BM x BN tile of C, so a block has BM*(BN/TN) threads. Row-major A, B and C, the book's contract.
// gl.submit(source, "thread_tile_1d_n") checks it.
#include "tiles.cuh"

template <int BM, int BN, int BK, int TN>
__global__ void __launch_bounds__(BM * (BN / TN))
sgemm_thread_tile_1d_n(int M, int N, int K, float alpha, const float* __restrict__ A,
                       const float* __restrict__ B, float beta, float* __restrict__ C) {
  constexpr int THREADS = BM * (BN / TN);
  __shared__ float As[BM][BK];
  __shared__ float Bs[BK][BN];

  const int tr = threadIdx.x / (BN / TN);       // this thread's row of the tile: BN / TN threads share it
  const int tc = threadIdx.x % (BN / TN) * TN;  // the first of its TN columns
  const int row0 = blockIdx.y * BM;
  const int col0 = blockIdx.x * BN;

  float acc[TN] = {};
  for (int k0 = 0; k0 < K; k0 += BK) {
    load_tile<BM, BK, THREADS>(As, A, row0, k0, M, K);
    load_tile<BK, BN, THREADS>(Bs, B, k0, col0, K, N);
    __syncthreads();

#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      const float a = As[tr][kk];  // one shared load, reused TN times
#pragma unroll
      for (int j = 0; j < TN; ++j) acc[j] += a * Bs[kk][tc + j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int j = 0; j < TN; ++j) store_c(C, row0 + tr, col0 + tc + j, M, N, alpha, beta, acc[j]);
}
