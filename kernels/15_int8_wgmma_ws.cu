// Step 15: an INT8 GEMM on Hopper's tensor cores (sm_90a), C (int32, M x N) = A (int8, M x K) B^T (int8, N x K),
// both operands K-major: kernel 14's warp-specialised pipeline (int8_wgmma.cuh) with wgmma on 8-bit integers, both
// operands read from shared memory. Chapter 10 times it on its own beside cuBLAS's INT8 GEMM; kernel 16 runs it once
// per modulus of the Ozaki scheme.
#include "int8_wgmma.cuh"

// The epilogue: each warp writes 8 of its rows by 128 columns at a time into its own 4 KiB of shared memory, four boxes of
// 8 x 32 with the 128-byte swizzle (a warp's 8-byte writes then take two wavefronts, the least), and hands them to TMA
// stores; the next 8 x 128 waits only until TMA has read the last ones. The consumers are back at their wgmmas while
// C drains to memory (N a multiple of 4: TMA's rows are whole 16 bytes). Storing from registers instead, each thread
// its pairs of columns, held the wgmmas up while C went out: 86-89 % of cuBLAS at 4096 against 90-93 % (chapter 10).
struct StoreInt32 {
  static constexpr unsigned WARP_SMEM = 4096;
  const void* map_c;

  template <int NACC>
  __device__ __forceinline__ void operator()(const int (&acc)[NACC], int, int row0, int col0, int warp, int lane,
                                             unsigned buffer) const {
    const int g = lane / 4, t = lane % 4;
#pragma unroll
    for (int half = 0; half < 2; ++half)
#pragma unroll
      for (int cols = 0; cols < NACC / 64; ++cols) {
        if (lane == 0) bulk_wait_read<0>();
        __syncwarp();
#pragma unroll
        for (int jj = 0; jj < 16; ++jj) {
          const int j = 16 * cols + jj;
          asm volatile("st.shared.v2.b32 [%0], {%1, %2};\n" ::"r"(buffer + jj / 4 * 1024 + swizzled(g, 8 * (jj % 4) + 2 * t)),
                       "r"(acc[4 * j + 2 * half]), "r"(acc[4 * j + 2 * half + 1]) : "memory");
        }
        fence_async_shared();  // TMA reads through the async proxy
        __syncwarp();
        if (lane == 0) {
#pragma unroll
          for (int box = 0; box < 4; ++box)
            tma_store_2d(map_c, col0 + 128 * cols + 32 * box, row0 + 16 * warp + 8 * half, buffer + box * 1024);
          bulk_commit();
        }
      }
  }
  __device__ __forceinline__ void drain(int lane) const {  // shared memory stays until the last store has read it
    if (lane == 0) bulk_wait_read<0>();
    __syncwarp();
  }
};

// C (int32, M x N) is written through its tensor map only.
template <int BN, int CONSUMERS, int STAGES, int CLUSTER, int GROUP>
__global__ void __launch_bounds__(128 * (CONSUMERS + 1), 1) __cluster_dims__(1, CLUSTER, 1)
igemm_s8_wgmma_ws(int M, int N, int K, const void* __restrict__ map_a, const void* __restrict__ map_b,
                  const void* __restrict__ map_c) {
  if (threadIdx.x == 0) tensormap_acquire(map_c);
  s8_products<BN, CONSUMERS, STAGES, CLUSTER, GROUP>(M, N, K, 1, map_a, map_b, StoreInt32{map_c});
}
