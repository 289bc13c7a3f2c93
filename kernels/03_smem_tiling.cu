// Step 3: global -> shared memory tiling, one output per thread.
//
// A block of BM*BN threads owns a BM x BN tile of C. It walks K in steps of BK:
// the block copies a BM x BK tile of A and a BK x BN tile of B into shared memory
// once, then every thread reads its row of As and its column of Bs from there.
// Each element loaded from global memory is reused BN times (A) or BM times (B),
// so global traffic drops from 2*M*N*K to M*N*K*(1/BM + 1/BN) floats.
// Tiles past the edge of A or B are filled with zeros, so any M, N, K works.
#include "tiles.cuh"

template <int BM, int BN, int BK>
__global__ void __launch_bounds__(BM * BN)
sgemm_smem_tiled(int M, int N, int K, float alpha, const float* __restrict__ A,
                 const float* __restrict__ B, float beta, float* __restrict__ C) {
  __shared__ float As[BM][BK];
  __shared__ float Bs[BK][BN];

  const int tr = threadIdx.x / BN;  // this thread's row and column inside the C tile;
  const int tc = threadIdx.x % BN;  // tc moves fastest, so a warp reads Bs rows contiguously
  const int row0 = blockIdx.y * BM;
  const int col0 = blockIdx.x * BN;

  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += BK) {
    load_tile<BM, BK, BM * BN>(As, A, row0, k0, M, K);
    load_tile<BK, BN, BM * BN>(Bs, B, k0, col0, K, N);
    __syncthreads();  // the tiles are complete before anyone reads them

#pragma unroll
    for (int kk = 0; kk < BK; ++kk) acc += As[tr][kk] * Bs[kk][tc];
    __syncthreads();  // everyone is done reading before the next copy overwrites them
  }
  store_c(C, row0 + tr, col0 + tc, M, N, alpha, beta, acc);
}
