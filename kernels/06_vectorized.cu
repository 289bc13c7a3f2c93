// Step 6: 128-bit loads and stores, and A transposed in shared memory.
//
// Relative to 05_thread_tile_2d.cu: global loads of A and B and stores of C move four floats per
// instruction (float4), and the A tile is stored transposed (As[k][m]), so that for every kk a
// thread's TM values of A, like its TN values of B, are contiguous in shared memory and arrive in
// TM/4 + TN/4 vector loads instead of TM + TN scalar ones. A thread's TN columns are TN/4 groups
// of four spaced BN/(TN/4) apart, so the lanes of a warp that read Bs together read consecutive
// 16-byte words: each quarter-warp's float4 loads cover one contiguous 128-byte row segment.
// sgemm_vectorized_parts times the step's parts one at a time: TRANSPOSED_A = 0 keeps the A tile as
// chapter 3 lays it out (As[m][k], its float4s copied as they are, its fragments read one float at a
// time), and SPACED_B = 0 keeps each thread's TN columns contiguous, as in chapter 3.
// float4 global access needs 16-byte alignment: it is used when K % 4 == 0 (rows of A) and
// N % 4 == 0 (rows of B and C); other shapes take guarded scalar loads and stores, never a
// misaligned access. The launcher guarantees 16-byte aligned base pointers.
#include "tiles.cuh"

// How the A tile is laid out in shared memory: here plainly transposed, As[k][m]. Chapter 5
// (07_bank_conflicts.cu) reuses this kernel's body with padded and swizzled layouts instead.
struct TransposedA {
  static constexpr int PAD = 0;                                            // floats added to each row
  __device__ static __forceinline__ int col(int k, int m) { return m; }  // column of element (k, m)
};

// One block's BM x BN tile of C. SPACED_B false: a thread's TN columns are contiguous (float4 groups 4 apart);
// TRANSPOSED_A false: the A tile is stored as A's rows lie, As[m][k] (ALayout unused).
template <int BM, int BN, int BK, int TM, int TN, class ALayout, bool SPACED_B = true, bool TRANSPOSED_A = true>
__device__ __forceinline__ void vectorized_block(int M, int N, int K, float alpha, const float* __restrict__ A,
                                                 const float* __restrict__ B, float beta, float* __restrict__ C) {
  constexpr int THREADS = (BM / TM) * (BN / TN);
  // transposed: column kk of the A tile is row kk here
  __shared__ __align__(16) float As[TRANSPOSED_A ? BK : BM][TRANSPOSED_A ? BM + ALayout::PAD : BK];
  __shared__ __align__(16) float Bs[BK][BN];

  const bool vec_a = K % 4 == 0, vec_bc = N % 4 == 0;
  constexpr int GROUP_STRIDE = SPACED_B ? BN / (TN / 4) : 4;  // distance between a thread's float4 column groups
  const int tr = threadIdx.x / (BN / TN) * TM;                 // first of this thread's TM rows
  const int tc = threadIdx.x % (BN / TN) * (SPACED_B ? 4 : TN);  // first column of its first float4 group
  const int row0 = blockIdx.y * BM;
  const int col0 = blockIdx.x * BN;

  float acc[TM][TN] = {};
  float a[TM], b[TN];
  for (int k0 = 0; k0 < K; k0 += BK) {
    for (int i = threadIdx.x; i < BM * BK / 4; i += THREADS) {
      const int r = i / (BK / 4), c = i % (BK / 4) * 4;
      const float4 v = load4(A, row0 + r, k0 + c, M, K, vec_a);
      if constexpr (TRANSPOSED_A) {
        As[c + 0][ALayout::col(c + 0, r)] = v.x;  // the transposing store: four scalar writes
        As[c + 1][ALayout::col(c + 1, r)] = v.y;
        As[c + 2][ALayout::col(c + 2, r)] = v.z;
        As[c + 3][ALayout::col(c + 3, r)] = v.w;
      } else {
        *reinterpret_cast<float4*>(&As[r][c]) = v;  // as A's rows lie: one 128-bit write
      }
    }
    for (int i = threadIdx.x; i < BK * BN / 4; i += THREADS) {
      const int r = i / (BN / 4), c = i % (BN / 4) * 4;
      *reinterpret_cast<float4*>(&Bs[r][c]) = load4(B, k0 + r, col0 + c, K, N, vec_bc);
    }
    __syncthreads();

#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      if constexpr (TRANSPOSED_A) {
#pragma unroll
        for (int i = 0; i < TM; i += 4) {
          const float4 v = *reinterpret_cast<const float4*>(&As[kk][ALayout::col(kk, tr + i)]);
          a[i] = v.x, a[i + 1] = v.y, a[i + 2] = v.z, a[i + 3] = v.w;
        }
      } else {
#pragma unroll
        for (int i = 0; i < TM; ++i) a[i] = As[tr + i][kk];  // a column of the tile: TM rows BK floats apart
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

template <int BM, int BN, int BK, int TM, int TN>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
sgemm_vectorized(int M, int N, int K, float alpha, const float* __restrict__ A,
                 const float* __restrict__ B, float beta, float* __restrict__ C) {
  vectorized_block<BM, BN, BK, TM, TN, TransposedA>(M, N, K, alpha, A, B, beta, C);
}

// The step's parts alone: float4 global loads and stores; with A transposed (TRANSPOSED_A 1) or not (0); with B's
// fragment reads spaced (SPACED_B 1) or contiguous (0: a thread's TN columns side by side, as in chapter 3).
// TRANSPOSED_A 1 and SPACED_B 1 is sgemm_vectorized's code.
template <int BM, int BN, int BK, int TM, int TN, int SPACED_B, int TRANSPOSED_A>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
sgemm_vectorized_parts(int M, int N, int K, float alpha, const float* __restrict__ A,
                       const float* __restrict__ B, float beta, float* __restrict__ C) {
  vectorized_block<BM, BN, BK, TM, TN, TransposedA, SPACED_B != 0, TRANSPOSED_A != 0>(M, N, K, alpha, A, B, beta, C);
}
