// Step 10: warp tiling.
//
// Three levels of tiles: the block computes BM x BN outputs, each of its warps a WM x WN warp tile, and
// each lane a TM x TN thread tile. Inside the warp tile the 32 lanes form an 8 x 4 (or 4 x 8) grid, and
// a lane's TM rows are TM/4 groups of four rows spaced WM/(TM/4) apart (its TN columns likewise): at
// every k, the lanes of one row of the lane grid read the same four A values, so a warp reads only 8
// (or 4) distinct float4s of A and 4 (or 8) of B. The lanes are numbered diagonally along the shorter
// side of the lane grid, so that each quarter-warp asks for the same float4s, without bank conflicts
// (on the H100 still four wavefronts per 128-bit load, one per quarter-warp: see chapter 7). A thread
// does TM * TN FFMAs per (TM + TN) / 4 loads. Big thread tiles need many registers (16 x 8 accumulators
// alone are 128), so the usual configuration runs one block of 256 threads per SM, and the latency is
// hidden inside the thread: the next tiles are staged in registers during the math (as in 08_prefetch.cu),
// and the fragments of the next k (across the step boundary too) are loaded while the current FFMAs run.
// Blocks wholly inside C, with K a multiple of BK and aligned rows, run a copy of the main loop without
// bounds checks: at 4096 that is every block, and the loop is then FFMAs but for a few percent.
#include "staging.cuh"

// Row length of the transposed A tile: 4 floats of padding put the transposed stores of its four columns
// on distinct banks.
template <int BM>
constexpr int LDA = BM + 4;

template <int BM, int BN, int BK, int WM, int WN, int TM, int TN, bool CHECKED>
__device__ __forceinline__ void warp_tiled_block(float (&As)[2][BK][LDA<BM>], float (&Bs)[2][BK][BN], int M, int N,
                                                 int K, float alpha, const float* __restrict__ A,
                                                 const float* __restrict__ B, float beta, float* __restrict__ C) {
  constexpr int THREADS = (BM / WM) * (BN / WN) * 32;
  constexpr int LANES_M = WM / TM;  // the lane grid is LANES_M x (32 / LANES_M): 8 x 4 or 4 x 8
  constexpr int STRIDE_M = WM / (TM / 4), STRIDE_N = WN / (TN / 4);  // between a lane's groups of four

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int along = lane % 8, diagonal = (lane / 8 + lane % 8) % 4;  // each quarter-warp: all 8 x all 4
  const int lane_m = LANES_M == 8 ? along : diagonal, lane_n = LANES_M == 8 ? diagonal : along;
  const int row = warp / (BN / WN) * WM + lane_m * 4, col = warp % (BN / WN) * WN + lane_n * 4;
  const bool vec_a = K % 4 == 0, vec_bc = N % 4 == 0;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  const int steps = (K + BK - 1) / BK;

  float acc[TM][TN] = {};
  float a[2][TM], b[2][TN];  // fragments of k and k + 1
  auto fragments = [&](int f, int buf, int kk) {
#pragma unroll
    for (int g = 0; g < TM / 4; ++g) {
      const float4 v = *reinterpret_cast<const float4*>(&As[buf][kk][row + g * STRIDE_M]);
      a[f][4 * g] = v.x, a[f][4 * g + 1] = v.y, a[f][4 * g + 2] = v.z, a[f][4 * g + 3] = v.w;
    }
#pragma unroll
    for (int h = 0; h < TN / 4; ++h) {
      const float4 v = *reinterpret_cast<const float4*>(&Bs[buf][kk][col + h * STRIDE_N]);
      b[f][4 * h] = v.x, b[f][4 * h + 1] = v.y, b[f][4 * h + 2] = v.z, b[f][4 * h + 3] = v.w;
    }
  };

  Staging<BM, BN, BK, THREADS> staged;
  staged.template load<CHECKED>(A, B, row0, col0, 0, M, N, K, vec_a, vec_bc);
  staged.store(As[0], Bs[0]);
  __syncthreads();
  fragments(0, 0, 0);
  // One main-loop step on buffer `cur`; called in pairs with 0 and 1, so both buffers' addresses are constants.
  // The last step loads and stores a tile nobody reads (its own again): without branches around them, the
  // compiler cannot sink the global loads down to their only use, the shared stores, which would leave
  // them waiting on memory instead of in flight during the math.
  auto step = [&](int t, int cur) {
    const int next = t + 1 < steps ? t + 1 : t;
    staged.template load<CHECKED>(A, B, row0, col0, next * BK, M, N, K, vec_a, vec_bc);
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      if (kk + 1 < BK) {
        fragments((kk + 1) % 2, cur, kk + 1);
      } else {  // the other buffer was last read a step ago: fill it, then read its first row
        staged.store(As[1 - cur], Bs[1 - cur]);
        __syncthreads();
        fragments((kk + 1) % 2, 1 - cur, 0);
      }
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[kk % 2][i], b[kk % 2][j], acc[i][j]);
    }
  };
  for (int t = 0; t < steps; t += 2) {
    step(t, 0);
    if (t + 1 < steps) step(t + 1, 1);
  }
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; j += 4)
      store4(C, row0 + row + i / 4 * STRIDE_M + i % 4, col0 + col + j / 4 * STRIDE_N, M, N, alpha, beta,
             make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]), vec_bc);
}

template <int BM, int BN, int BK, int WM, int WN, int TM, int TN>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32, 1)
sgemm_warp_tiling(int M, int N, int K, float alpha, const float* __restrict__ A, const float* __restrict__ B,
                  float beta, float* __restrict__ C) {
  __shared__ __align__(16) float As[2][BK][LDA<BM>];  // transposed: As[.][kk] is column kk of the A tile
  __shared__ __align__(16) float Bs[2][BK][BN];
  const bool interior = (blockIdx.y + 1) * BM <= M && (blockIdx.x + 1) * BN <= N && K % BK == 0 && N % 4 == 0;
  if (interior) {
    warp_tiled_block<BM, BN, BK, WM, WN, TM, TN, false>(As, Bs, M, N, K, alpha, A, B, beta, C);
  } else {
    warp_tiled_block<BM, BN, BK, WM, WN, TM, TN, true>(As, Bs, M, N, K, alpha, A, B, beta, C);
  }
}

// Chapter 7's warp level in parts: LEAN 0 runs the checked loop on every block, LEAN 1 the loop without bounds checks
// where the block lies inside C (as above); BLOCKS is the resident blocks per SM asked of ptxas (above: 1).
template <int BM, int BN, int BK, int WM, int WN, int TM, int TN, int LEAN, int BLOCKS>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32, BLOCKS)
sgemm_warp_tiling_parts(int M, int N, int K, float alpha, const float* __restrict__ A, const float* __restrict__ B,
                        float beta, float* __restrict__ C) {
  __shared__ __align__(16) float As[2][BK][LDA<BM>];
  __shared__ __align__(16) float Bs[2][BK][BN];
  const bool interior = (blockIdx.y + 1) * BM <= M && (blockIdx.x + 1) * BN <= N && K % BK == 0 && N % 4 == 0;
  if (LEAN && interior) {
    warp_tiled_block<BM, BN, BK, WM, WN, TM, TN, false>(As, Bs, M, N, K, alpha, A, B, beta, C);
  } else {
    warp_tiled_block<BM, BN, BK, WM, WN, TM, TN, true>(As, Bs, M, N, K, alpha, A, B, beta, C);
  }
}
