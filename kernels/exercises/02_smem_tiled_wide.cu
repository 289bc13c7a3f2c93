// Chapter 2's exercise: shared-memory tiling with a tile twice as wide as the block. A block of BM*BN threads
// owns a BM x 2BN tile of C, two outputs of a row per thread, so every value of A a thread reads from shared
// memory feeds two multiply-adds. Row-major A, B and C, the book's contract. gl.submit(source, "smem_tiled_wide")
// checks it.
#include "tiles.cuh"

template <int BM, int BN, int BK>
__global__ void __launch_bounds__(BM * BN)
sgemm_smem_tiled_wide(int M, int N, int K, float alpha, const float* __restrict__ A,
                      const float* __restrict__ B, float beta, float* __restrict__ C) {
  __shared__ float As[BM][BK];
  __shared__ float Bs[BK][2 * BN];  // the B tile is as wide as the C tile

  const int tr = threadIdx.x / BN;  // BN threads share a row of the C tile: this thread's row,
  const int tc = threadIdx.x % BN;  // and its place among them (consecutive threads, consecutive tc)
  const int row0 = blockIdx.y * BM;
  const int col0 = blockIdx.x * 2 * BN;  // blockIdx.x counts tiles 2 * BN wide

  float acc0 = 0.0f, acc1 = 0.0f;  // outputs (tr, tc) and (tr, tc + BN): neighbouring lanes, neighbouring floats
  for (int k0 = 0; k0 < K; k0 += BK) {
    load_tile<BM, BK, BM * BN>(As, A, row0, k0, M, K);
    load_tile<BK, 2 * BN, BM * BN>(Bs, B, k0, col0, K, N);  // the copy strides by the block's threads
    __syncthreads();  // the tiles are complete before anyone reads them

#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      const float a = As[tr][kk];  // one shared load of A, two multiply-adds
      acc0 += a * Bs[kk][tc];
      acc1 += a * Bs[kk][tc + BN];
    }
    __syncthreads();  // everyone is done reading before the next copy overwrites them
  }
  store_c(C, row0 + tr, col0 + tc, M, N, alpha, beta, acc0);
  store_c(C, row0 + tr, col0 + tc + BN, M, N, alpha, beta, acc1);
}
