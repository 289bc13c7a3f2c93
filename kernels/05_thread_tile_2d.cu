// Step 5: shared -> register blocking in two dimensions: each thread computes a TM x TN tile of C.
//
// Relative to 04_thread_tile_1d.cu, a thread loads TM values of As and TN values of Bs into
// registers for every kk and multiplies them as an outer product: TM*TN FMAs for TM+TN shared
// loads. A block of (BM/TM)*(BN/TN) threads reads BM*BN*BK*(1/TM + 1/TN) words of shared memory
// per K step, against 2*BM*BN*BK with one output per thread.
#include "tiles.cuh"

template <int BM, int BN, int BK, int TM, int TN>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
sgemm_thread_tile_2d(int M, int N, int K, float alpha, const float* __restrict__ A,
                     const float* __restrict__ B, float beta, float* __restrict__ C) {
  constexpr int THREADS = (BM / TM) * (BN / TN);
  __shared__ float As[BM][BK];
  __shared__ float Bs[BK][BN];

  const int tr = threadIdx.x / (BN / TN) * TM;  // this thread's TM x TN sub-tile of the C tile
  const int tc = threadIdx.x % (BN / TN) * TN;
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
      for (int i = 0; i < TM; ++i) a[i] = As[tr + i][kk];
#pragma unroll
      for (int j = 0; j < TN; ++j) b[j] = Bs[kk][tc + j];
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
    for (int j = 0; j < TN; ++j) store_c(C, row0 + tr + i, col0 + tc + j, M, N, alpha, beta, acc[i][j]);
}
