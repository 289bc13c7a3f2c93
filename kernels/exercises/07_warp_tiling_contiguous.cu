// Chapter 7's exercise: warp tiling with each lane's thread tile in one piece. The block, warp and lane grids
// are chapter 7's (lanes numbered the same way), but a lane owns TM consecutive rows and TN consecutive columns
// of its warp tile, as the threads of chapters 3 to 6 own theirs, instead of groups of four spaced apart.
// Row-major A, B and C, the book's contract. gl.submit(source, "warp_tiling_contiguous") checks it.
#include "staging.cuh"

// Row length of the transposed A tile: 4 floats of padding put the transposed stores of its four columns
// on distinct banks.
template <int BM>
constexpr int LDA = BM + 4;

template <int BM, int BN, int BK, int WM, int WN, int TM, int TN, bool CHECKED>
__device__ __forceinline__ void contiguous_block(float (&As)[2][BK][LDA<BM>], float (&Bs)[2][BK][BN], int M, int N,
                                                 int K, float alpha, const float* __restrict__ A,
                                                 const float* __restrict__ B, float beta, float* __restrict__ C) {
  constexpr int THREADS = (BM / WM) * (BN / WN) * 32;
  constexpr int LANES_M = WM / TM;  // the lane grid is LANES_M x (32 / LANES_M): 8 x 4 or 4 x 8

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int along = lane % 8, diagonal = (lane / 8 + lane % 8) % 4;  // each quarter-warp: all 8 x all 4
  const int lane_m = LANES_M == 8 ? along : diagonal, lane_n = LANES_M == 8 ? diagonal : along;
  const int row = warp / (BN / WN) * WM + lane_m * TM, col = warp % (BN / WN) * WN + lane_n * TN;  // its tile, whole
  const bool vec_a = K % 4 == 0, vec_bc = N % 4 == 0;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  const int steps = (K + BK - 1) / BK;

  float acc[TM][TN] = {};
  float a[2][TM], b[2][TN];  // fragments of k and k + 1
  auto fragments = [&](int f, int buf, int kk) {
#pragma unroll
    for (int g = 0; g < TM / 4; ++g) {
      const float4 v = *reinterpret_cast<const float4*>(&As[buf][kk][row + 4 * g]);  // rows row .. row + TM - 1
      a[f][4 * g] = v.x, a[f][4 * g + 1] = v.y, a[f][4 * g + 2] = v.z, a[f][4 * g + 3] = v.w;
    }
#pragma unroll
    for (int h = 0; h < TN / 4; ++h) {
      const float4 v = *reinterpret_cast<const float4*>(&Bs[buf][kk][col + 4 * h]);  // columns col .. col + TN - 1
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
      store4(C, row0 + row + i, col0 + col + j, M, N, alpha, beta,
             make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]), vec_bc);
}

template <int BM, int BN, int BK, int WM, int WN, int TM, int TN>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32, 1)
sgemm_warp_tiling_contiguous(int M, int N, int K, float alpha, const float* __restrict__ A,
                             const float* __restrict__ B, float beta, float* __restrict__ C) {
  __shared__ __align__(16) float As[2][BK][LDA<BM>];  // transposed: As[.][kk] is column kk of the A tile
  __shared__ __align__(16) float Bs[2][BK][BN];
  const bool interior = (blockIdx.y + 1) * BM <= M && (blockIdx.x + 1) * BN <= N && K % BK == 0 && N % 4 == 0;
  if (interior) {
    contiguous_block<BM, BN, BK, WM, WN, TM, TN, false>(As, Bs, M, N, K, alpha, A, B, beta, C);
  } else {
    contiguous_block<BM, BN, BK, WM, WN, TM, TN, true>(As, Bs, M, N, K, alpha, A, B, beta, C);
  }
}
