// Step 9: the same idea the Ampere way, a cp.async pipeline with STAGES shared-memory buffers.
//
// `cp.async` copies global memory straight into shared memory without passing through registers,
// and a thread can keep several such copies in flight. The kernel keeps STAGES - 1 future tiles in
// flight while it multiplies the current one: at the top of each step it waits until the oldest
// copy group has landed (cp.async.wait_group), synchronises once, starts the copy of the tile
// STAGES - 1 steps ahead into the buffer that the previous step has just finished with, and multiplies.
// A copy moves bytes unchanged, so the A tile cannot be transposed on the way as in 06 and 08: it
// stays row-major (As[m][k]) and a thread reads four k-values of one of its rows with one float4,
// then runs four k-steps from those registers.
// For K or N not multiples of 4 the copies fall back to 4-byte cp.async; outside the matrices they
// copy zero bytes and fill with zeros (the src-size operand), so tails never read out of bounds.
#include "register_tile.cuh"

__device__ __forceinline__ unsigned smem_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// Copy four consecutive floats of a rows x cols matrix at (row, col) into dst, zeros outside it.
__device__ __forceinline__ void copy4_async(float* dst, const float* __restrict__ src, int row, int col, int rows,
                                            int cols, bool vec) {
  if (vec) {  // cols % 4 == 0: the group lies wholly inside or outside the matrix
    const bool inside = row < rows && col < cols;
    const float* p = inside ? src + row * cols + col : src;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_address(dst)), "l"(p),
                 "r"(inside ? 16 : 0));
    return;
  }
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const bool inside = row < rows && col + q < cols;
    const float* p = inside ? src + row * cols + col + q : src;
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_address(dst + q)), "l"(p),
                 "r"(inside ? 4 : 0));
  }
}

__device__ __forceinline__ void commit_copies() { asm volatile("cp.async.commit_group;\n" ::); }

template <int PENDING>
__device__ __forceinline__ void wait_copies() { asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING)); }

template <int BM, int BN, int BK, int TM, int TN, int STAGES>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
sgemm_multistage(int M, int N, int K, float alpha, const float* __restrict__ A, const float* __restrict__ B,
                 float beta, float* __restrict__ C) {
  using Tile = RegisterTile<BM, BN, TM, TN>;
  constexpr int THREADS = Tile::THREADS;
  __shared__ __align__(16) float As[STAGES][BM][BK];  // row-major, as in global memory
  __shared__ __align__(16) float Bs[STAGES][BK][BN];

  const bool vec_a = K % 4 == 0, vec_bc = N % 4 == 0;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  const int steps = (K + BK - 1) / BK;
  Tile tile;

  auto issue = [&](int t) {  // start copying step t's tiles into buffer t % STAGES
    const int s = t % STAGES, k0 = t * BK;
    for (int i = threadIdx.x; i < BM * BK / 4; i += THREADS) {
      const int r = i / (BK / 4), c = i % (BK / 4) * 4;
      copy4_async(&As[s][r][c], A, row0 + r, k0 + c, M, K, vec_a);
    }
    for (int i = threadIdx.x; i < BK * BN / 4; i += THREADS) {
      const int r = i / (BN / 4), c = i % (BN / 4) * 4;
      copy4_async(&Bs[s][r][c], B, k0 + r, col0 + c, K, N, vec_bc);
    }
  };

#pragma unroll
  for (int t = 0; t < STAGES - 1; ++t) {
    if (t < steps) issue(t);
    commit_copies();  // one group per step, empty past the end, so wait_group counts stay uniform
  }
  for (int t = 0; t < steps; ++t) {
    wait_copies<STAGES - 2>();  // this thread's copies of step t have landed...
    __syncthreads();            // ...and everyone's; everyone has also finished step t - 1
    if (t + STAGES - 1 < steps) issue(t + STAGES - 1);
    commit_copies();
    const int s = t % STAGES;
#pragma unroll
    for (int k4 = 0; k4 < BK; k4 += 4) {
      float4 a4[TM];
#pragma unroll
      for (int i = 0; i < TM; ++i) a4[i] = *reinterpret_cast<const float4*>(&As[s][tile.row + i][k4]);
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        float a[TM], b[TN];
#pragma unroll
        for (int i = 0; i < TM; ++i) a[i] = q == 0 ? a4[i].x : q == 1 ? a4[i].y : q == 2 ? a4[i].z : a4[i].w;
        tile.load_b(b, Bs[s][k4 + q]);
        tile.outer_product(a, b);
      }
    }
  }
  tile.store(C, row0, col0, M, N, alpha, beta, vec_bc);
}
