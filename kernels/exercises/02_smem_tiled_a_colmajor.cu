// Chapter 2's exercise: shared-memory tiling when A arrives column-major, as the transpose of a row-major
// matrix does: A is stored as the K x M row-major matrix A^T, element (m, k) at A[k * M + m]. B and C are
// row-major, as everywhere in the book. One output per thread; a block of BM*BN threads owns a BM x BN tile
// of C. gl.submit(source, "smem_tiled_a_colmajor") checks it on a column-major A.
#include "tiles.cuh"

template <int BM, int BN, int BK>
__global__ void __launch_bounds__(BM * BN)
sgemm_smem_tiled_a_colmajor(int M, int N, int K, float alpha, const float* __restrict__ A,
                            const float* __restrict__ B, float beta, float* __restrict__ C) {
  __shared__ float As[BK][BM];  // the A tile as A^T's tile: row kk holds column k0 + kk of A
  __shared__ float Bs[BK][BN];

  const int tr = threadIdx.x / BN;  // this thread's row and column inside the C tile
  const int tc = threadIdx.x % BN;
  const int row0 = blockIdx.y * BM;
  const int col0 = blockIdx.x * BN;

  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += BK) {
    load_tile<BK, BM, BM * BN>(As, A, k0, row0, K, M);  // A^T is row-major K x M: its tile is a plain copy
    load_tile<BK, BN, BM * BN>(Bs, B, k0, col0, K, N);
    __syncthreads();  // the tiles are complete before anyone reads them

#pragma unroll
    for (int kk = 0; kk < BK; ++kk) acc += As[kk][tr] * Bs[kk][tc];  // A(row0 + tr, k0 + kk)
    __syncthreads();  // everyone is done reading before the next copy overwrites them
  }
  store_c(C, row0 + tr, col0 + tc, M, N, alpha, beta, acc);
}
