// Step 7: the vectorized kernel of step 6 with the A tile's shared-memory layout as a parameter.
//
// Writing A transposed (As[k][m]) makes the eight lanes that copy one row of the A tile write the
// same bank: their addresses differ by multiples of BM floats, and BM is a multiple of 32.
//   LAYOUT 0  As[k][m]                       as in step 6: the store conflicts 8 ways
//   LAYOUT 1  As[k][m], rows padded by 4     float4 reads stay aligned; conflicts drop to 4 ways
//   LAYOUT 2  As[k][m ^ swizzle(k)]          XOR of m with a multiple of 4 chosen by k: every
//                                            lane of the store hits its own bank, and a float4 of
//                                            four consecutive m stays contiguous and aligned
// The rest is step 6 unchanged: float4 global loads and C stores, float4 fragments.
#include "tiles.cuh"

template <int BM, int LAYOUT>
struct ATile {
  static constexpr int PAD = LAYOUT == 1 ? 4 : 0;
  // Column of element (k, m) in the row k of the stored tile.
  __device__ static __forceinline__ int col(int k, int m) { return LAYOUT == 2 ? m ^ ((k / 4) % 8 * 4) : m; }
};

template <int BM, int BN, int BK, int TM, int TN, int LAYOUT>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
sgemm_bank_conflicts(int M, int N, int K, float alpha, const float* __restrict__ A,
                     const float* __restrict__ B, float beta, float* __restrict__ C) {
  using Layout = ATile<BM, LAYOUT>;
  constexpr int THREADS = (BM / TM) * (BN / TN);
  constexpr int GROUP_STRIDE = BN / (TN / 4);
  __shared__ __align__(16) float As[BK][BM + Layout::PAD];
  __shared__ __align__(16) float Bs[BK][BN];

  const bool vec_a = K % 4 == 0, vec_bc = N % 4 == 0;
  const int tr = threadIdx.x / (BN / TN) * TM;
  const int tc = threadIdx.x % (BN / TN) * 4;
  const int row0 = blockIdx.y * BM;
  const int col0 = blockIdx.x * BN;

  float acc[TM][TN] = {};
  float a[TM], b[TN];
  for (int k0 = 0; k0 < K; k0 += BK) {
    for (int i = threadIdx.x; i < BM * BK / 4; i += THREADS) {
      const int r = i / (BK / 4), c = i % (BK / 4) * 4;
      const float4 v = load4(A, row0 + r, k0 + c, M, K, vec_a);
      As[c + 0][Layout::col(c + 0, r)] = v.x;
      As[c + 1][Layout::col(c + 1, r)] = v.y;
      As[c + 2][Layout::col(c + 2, r)] = v.z;
      As[c + 3][Layout::col(c + 3, r)] = v.w;
    }
    for (int i = threadIdx.x; i < BK * BN / 4; i += THREADS) {
      const int r = i / (BN / 4), c = i % (BN / 4) * 4;
      *reinterpret_cast<float4*>(&Bs[r][c]) = load4(B, k0 + r, col0 + c, K, N, vec_bc);
    }
    __syncthreads();

#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
#pragma unroll
      for (int i = 0; i < TM; i += 4) {
        const float4 v = *reinterpret_cast<const float4*>(&As[kk][Layout::col(kk, tr + i)]);
        a[i] = v.x, a[i + 1] = v.y, a[i + 2] = v.z, a[i + 3] = v.w;
      }
#pragma unroll
      for (int j = 0; j < TN; j += 4) {
        const float4 v = *reinterpret_cast<const float4*>(&Bs[kk][tc + j / 4 * GROUP_STRIDE]);
        b[j] = v.x, b[j + 1] = v.y, b[j + 2] = v.z, b[j + 3] = v.w;
      }
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; j += 4)
      store4(C, row0 + tr + i, col0 + tc + j / 4 * GROUP_STRIDE, M, N, alpha, beta,
             make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]), vec_bc);
}
