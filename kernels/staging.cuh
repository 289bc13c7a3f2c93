// Register staging of the double-buffered kernels (08 and 10): the next BK-deep tiles of A and B
// travel from global memory into registers while the current ones are multiplied, and are written to
// shared memory afterwards, A transposed so that a column of the A tile is a contiguous row.
#include "tiles.cuh"

// This thread's share of one step's A (BM x BK) and B (BK x BN) tiles, held in registers between the
// global load and the shared store. Consecutive threads read consecutive float4s of a row.
template <int BM, int BN, int BK, int THREADS>
struct Staging {
  static constexpr int A_VECS = BM * BK / 4, B_VECS = BK * BN / 4;
  static constexpr int A_LOADS = (A_VECS + THREADS - 1) / THREADS, B_LOADS = (B_VECS + THREADS - 1) / THREADS;
  float4 a[A_LOADS], b[B_LOADS];

  // CHECKED = false: the caller guarantees that both tiles lie inside the matrices and that K and N are
  // multiples of 4 (aligned float4s), so the loads need no guards (a block in the interior of C).
  template <bool CHECKED = true>
  __device__ __forceinline__ void load(const float* __restrict__ A, const float* __restrict__ B, int row0,
                                       int col0, int k0, int M, int N, int K, bool vec_a, bool vec_bc) {
#pragma unroll
    for (int l = 0; l < A_LOADS; ++l) {
      const int i = threadIdx.x + l * THREADS, r = row0 + i / (BK / 4), c = k0 + i % (BK / 4) * 4;
      if (A_VECS % THREADS == 0 || i < A_VECS)
        a[l] = CHECKED ? load4(A, r, c, M, K, vec_a) : *reinterpret_cast<const float4*>(A + r * K + c);
    }
#pragma unroll
    for (int l = 0; l < B_LOADS; ++l) {
      const int i = threadIdx.x + l * THREADS, r = k0 + i / (BN / 4), c = col0 + i % (BN / 4) * 4;
      if (B_VECS % THREADS == 0 || i < B_VECS)
        b[l] = CHECKED ? load4(B, r, c, K, N, vec_bc) : *reinterpret_cast<const float4*>(B + r * N + c);
    }
  }

  // LDA >= BM: the row length of the transposed A tile (padded by the caller where that avoids conflicts).
  template <int LDA>
  __device__ __forceinline__ void store(float (&As)[BK][LDA], float (&Bs)[BK][BN]) const {
#pragma unroll
    for (int l = 0; l < A_LOADS; ++l) {
      const int i = threadIdx.x + l * THREADS, r = i / (BK / 4), c = i % (BK / 4) * 4;
      if (A_VECS % THREADS == 0 || i < A_VECS) {
        As[c][r] = a[l].x, As[c + 1][r] = a[l].y, As[c + 2][r] = a[l].z, As[c + 3][r] = a[l].w;  // transposed
      }
    }
#pragma unroll
    for (int l = 0; l < B_LOADS; ++l) {
      const int i = threadIdx.x + l * THREADS;
      if (B_VECS % THREADS == 0 || i < B_VECS) *reinterpret_cast<float4*>(&Bs[i / (BN / 4)][i % (BN / 4) * 4]) = b[l];
    }
  }
};
