// Chapter 7's exercise: warp tiling with the A tile kept row-major in shared memory, read along k.
//
// Kernel 10 stores its A tile transposed (As[k][m]): four scalar stores per staged float4. Here the staged float4
// of A goes to shared memory as it is, in one store, into rows of BK + 4 floats (As[m][k]), and a lane reads four
// k-values of one of its rows with one float4 load, which serves four k-steps. The block, warp and lane grids, the
// lanes' numbering and everything about B are kernel 10's. Row-major A, B and C, the book's contract.
// gl.submit(source, "warp_tiling_along_k") checks it.
#include "staging.cuh"

template <int BK>
constexpr int ROW = BK + 4;  // floats per row of the A tile: an odd number of float4s (BK a multiple of 8)

// The staged tiles into shared memory: A row-major, B as kernel 10 stores it.
template <int BM, int BN, int BK, int THREADS>
__device__ __forceinline__ void store_tiles(const Staging<BM, BN, BK, THREADS>& staged, float (&As)[BM][ROW<BK>],
                                            float (&Bs)[BK][BN]) {
  using S = Staging<BM, BN, BK, THREADS>;
#pragma unroll
  for (int l = 0; l < S::A_LOADS; ++l) {
    const int i = threadIdx.x + l * THREADS;
    if (S::A_VECS % THREADS == 0 || i < S::A_VECS)
      *reinterpret_cast<float4*>(&As[i / (BK / 4)][i % (BK / 4) * 4]) = staged.a[l];  // row i / (BK / 4), as loaded
  }
#pragma unroll
  for (int l = 0; l < S::B_LOADS; ++l) {
    const int i = threadIdx.x + l * THREADS;
    if (S::B_VECS % THREADS == 0 || i < S::B_VECS)
      *reinterpret_cast<float4*>(&Bs[i / (BN / 4)][i % (BN / 4) * 4]) = staged.b[l];
  }
}

__device__ __forceinline__ float component(const float4& v, int q) {
  return q == 0 ? v.x : q == 1 ? v.y : q == 2 ? v.z : v.w;
}

template <int BM, int BN, int BK, int WM, int WN, int TM, int TN, bool CHECKED>
__device__ __forceinline__ void along_k_block(float (&As)[2][BM][ROW<BK>], float (&Bs)[2][BK][BN], int M, int N,
                                              int K, float alpha, const float* __restrict__ A,
                                              const float* __restrict__ B, float beta, float* __restrict__ C) {
  constexpr int THREADS = (BM / WM) * (BN / WN) * 32;
  constexpr int LANES_M = WM / TM;  // the lane grid is LANES_M x (32 / LANES_M): 8 x 4 or 4 x 8
  constexpr int STRIDE_N = WN / (TN / 4);  // between a lane's groups of four columns, as in kernel 10

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int along = lane % 8, diagonal = (lane / 8 + lane % 8) % 4;  // each quarter-warp: all 8 x all 4
  const int lane_m = LANES_M == 8 ? along : diagonal, lane_n = LANES_M == 8 ? diagonal : along;
  const int row = warp / (BN / WN) * WM + lane_m, col = warp % (BN / WN) * WN + lane_n * 4;  // rows LANES_M apart
  const bool vec_a = K % 4 == 0, vec_bc = N % 4 == 0;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  const int steps = (K + BK - 1) / BK;

  float acc[TM][TN] = {};
  float4 a4[TM];  // four k-values of each of this lane's rows, from kk / 4 * 4 on
  float a[2][TM], b[2][TN];  // fragments of k and k + 1
  auto fragments = [&](int f, int buf, int kk) {
    if (kk % 4 == 0) {
#pragma unroll
      for (int i = 0; i < TM; ++i) a4[i] = *reinterpret_cast<const float4*>(&As[buf][row + i * LANES_M][kk]);
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) a[f][i] = component(a4[i], kk % 4);
#pragma unroll
    for (int h = 0; h < TN / 4; ++h) {
      const float4 v = *reinterpret_cast<const float4*>(&Bs[buf][kk][col + h * STRIDE_N]);
      b[f][4 * h] = v.x, b[f][4 * h + 1] = v.y, b[f][4 * h + 2] = v.z, b[f][4 * h + 3] = v.w;
    }
  };

  Staging<BM, BN, BK, THREADS> staged;
  staged.template load<CHECKED>(A, B, row0, col0, 0, M, N, K, vec_a, vec_bc);
  store_tiles(staged, As[0], Bs[0]);
  __syncthreads();
  fragments(0, 0, 0);
  // Kernel 10's steps: in pairs on buffers 0 and 1, the next tiles staged during the math, the last step loading its
  // own tile again (see 10_warp_tiling.cu).
  auto step = [&](int t, int cur) {
    const int next = t + 1 < steps ? t + 1 : t;
    staged.template load<CHECKED>(A, B, row0, col0, next * BK, M, N, K, vec_a, vec_bc);
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      if (kk + 1 < BK) {
        fragments((kk + 1) % 2, cur, kk + 1);
      } else {  // the other buffer was last read a step ago: fill it, then read its first row
        store_tiles(staged, As[1 - cur], Bs[1 - cur]);
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
      store4(C, row0 + row + i * LANES_M, col0 + col + j / 4 * STRIDE_N, M, N, alpha, beta,
             make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]), vec_bc);
}

template <int BM, int BN, int BK, int WM, int WN, int TM, int TN>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32, 1)
sgemm_warp_tiling_along_k(int M, int N, int K, float alpha, const float* __restrict__ A,
                          const float* __restrict__ B, float beta, float* __restrict__ C) {
  __shared__ __align__(16) float As[2][BM][ROW<BK>];  // row-major: As[.][m] is row m of the A tile
  __shared__ __align__(16) float Bs[2][BK][BN];
  const bool interior = (blockIdx.y + 1) * BM <= M && (blockIdx.x + 1) * BN <= N && K % BK == 0 && N % 4 == 0;
  if (interior) {
    along_k_block<BM, BN, BK, WM, WN, TM, TN, false>(As, Bs, M, N, K, alpha, A, B, beta, C);
  } else {
    along_k_block<BM, BN, BK, WM, WN, TM, TN, true>(As, Bs, M, N, K, alpha, A, B, beta, C);
  }
}
