// The register tile of chapters 6 and 7: a thread owns TM rows and TN columns of the block's C tile.
// Its TM rows are consecutive; its TN columns are TN/4 groups of four spaced GROUP_STRIDE apart, so
// the lanes of a warp that read a row of the B tile together read consecutive 16-byte words.
#include "tiles.cuh"

template <int BM, int BN, int TM, int TN>
struct RegisterTile {
  static constexpr int THREADS = (BM / TM) * (BN / TN);
  static constexpr int GROUP_STRIDE = BN / (TN / 4);
  int row, col;  // this thread's first row and first column inside the block tile
  float acc[TM][TN];

  __device__ __forceinline__ RegisterTile() : row(threadIdx.x / (BN / TN) * TM), col(threadIdx.x % (BN / TN) * 4) {
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
      for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
  }

  // TN values of row kk of a BK x BN shared tile: TN/4 vector loads.
  __device__ __forceinline__ void load_b(float (&b)[TN], const float* Bs_row) const {
#pragma unroll
    for (int j = 0; j < TN; j += 4) {
      const float4 v = *reinterpret_cast<const float4*>(Bs_row + col + j / 4 * GROUP_STRIDE);
      b[j] = v.x, b[j + 1] = v.y, b[j + 2] = v.z, b[j + 3] = v.w;
    }
  }

  // acc += a (column) x b (row): TM * TN FFMAs.
  __device__ __forceinline__ void outer_product(const float (&a)[TM], const float (&b)[TN]) {
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
      for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
  }

  // C = alpha * acc + beta * C for this thread's outputs; float4 stores when `vec` (N % 4 == 0).
  __device__ __forceinline__ void store(float* __restrict__ C, int row0, int col0, int M, int N, float alpha,
                                        float beta, bool vec) const {
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
      for (int j = 0; j < TN; j += 4)
        store4(C, row0 + row + i, col0 + col + j / 4 * GROUP_STRIDE, M, N, alpha, beta,
               make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]), vec);
  }
};
