// Step 7: the vectorized kernel of step 6 with the A tile's shared-memory layout as a parameter.
//
// Writing A transposed (As[k][m]) makes the eight lanes that copy one row of the A tile write the
// same bank: their addresses differ by multiples of BM floats, and BM is a multiple of 32.
//   LAYOUT 0  As[k][m]                       as in step 6: the store conflicts 8 ways
//   LAYOUT 1  As[k][m], rows padded by 4     float4 reads stay aligned; conflicts drop to 4 ways
//   LAYOUT 2  As[k][m ^ swizzle(k)]          XOR of m with a multiple of 4 chosen by k: every
//                                            lane of the store hits its own bank, and a float4 of
//                                            four consecutive m stays contiguous and aligned
// The rest is step 6 unchanged (its block body, vectorized_block, takes the layout as a parameter):
// float4 global loads and C stores, float4 fragments.
#include "06_vectorized.cu"

template <int BM, int LAYOUT>
struct ATile {  // the interface of TransposedA in 06_vectorized.cu
  static constexpr int PAD = LAYOUT == 1 ? 4 : 0;
  // Column of element (k, m) in the row k of the stored tile.
  __device__ static __forceinline__ int col(int k, int m) { return LAYOUT == 2 ? m ^ ((k / 4) % 8 * 4) : m; }
};

template <int BM, int BN, int BK, int TM, int TN, int LAYOUT>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
sgemm_bank_conflicts(int M, int N, int K, float alpha, const float* __restrict__ A,
                     const float* __restrict__ B, float beta, float* __restrict__ C) {
  vectorized_block<BM, BN, BK, TM, TN, ATile<BM, LAYOUT>>(M, N, K, alpha, A, B, beta, C);
}
