// Chapter 3's exercise: the 2-D thread tile, with the TM rows and TN columns of the block's tile that each thread
// owns chosen so that, at the default tile (128 x 128, BK 8, 8 x 8), every 32-bit fragment read of a warp takes one
// shared-memory wavefront. Row-major A, B and C, the book's contract; gl.submit(source,
// "thread_tile_2d_conflict_free") checks it.
#include "tiles.cuh"

template <int BM, int BN, int BK, int TM, int TN>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
sgemm_thread_tile_2d_conflict_free(int M, int N, int K, float alpha, const float* __restrict__ A,
                                   const float* __restrict__ B, float beta, float* __restrict__ C) {
  constexpr int THREADS = (BM / TM) * (BN / TN);
  __shared__ float As[BM][BK];
  __shared__ float Bs[BK][BN];

  const int tr = threadIdx.x / (BN / TN);  // this thread's first row; its TM rows lie BM / TM apart
  const int tc = threadIdx.x % (BN / TN);  // its first column; its TN columns lie BN / TN apart
  const int row0 = blockIdx.y * BM;
  const int col0 = blockIdx.x * BN;

  float acc[TM][TN] = {};
  float a[TM], b[TN];
  for (int k0 = 0; k0 < K; k0 += BK) {
    load_tile<BM, BK, THREADS>(As, A, row0, k0, M, K);
    load_tile<BK, BN, THREADS>(Bs, B, k0, col0, K, N);
    __syncthreads();

#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
#pragma unroll
      for (int i = 0; i < TM; ++i) a[i] = As[tr + i * (BM / TM)][kk];  // a warp's rows: BK words apart
#pragma unroll
      for (int j = 0; j < TN; ++j) b[j] = Bs[kk][tc + j * (BN / TN)];  // a warp's columns: neighbouring words
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];  // the outer product
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j)
      store_c(C, row0 + tr + i * (BM / TM), col0 + tc + j * (BN / TN), M, N, alpha, beta, acc[i][j]);
}
