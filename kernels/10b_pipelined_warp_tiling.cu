// Step 10b: warp tiling fed by a cp.async pipeline: no staging registers, no shared stores.
//
// Kernel 10 stages the next tiles in registers (a dozen float4s per thread) and stores them into shared
// memory, A transposed so that a column of the A tile is a row of floats. Both cost issue slots and
// registers. Here the tiles travel by cp.async, STAGES deep as in 09, straight into dynamic shared memory.
// A copy moves bytes unchanged, so the A tile takes one of two layouts (ALONG_K):
// - 0, transposed on the way: each cp.async moves one float, and a float may land anywhere, so A arrives
//   transposed as in kernel 10 (As[k][m], rows BM + 4 floats: the eight k-values a warp copies from four
//   rows fall on 32 distinct banks). Four times as many copies of A, each a single instruction.
// - 1, read along k: A keeps its row-major layout (rows BK + 4 floats, an odd number of float4s) and a
//   lane reads each of its TM rows as one float4, four k-steps of that row; its rows are LANES_M apart, so
//   a quarter-warp reads eight consecutive rows, whose float4s cover all 32 banks. The same number of
//   shared loads per k, but each float4 of A stays live for four k-steps: more registers.
// The lane grid, thread tiles and fragment double buffering are kernel 10's. One barrier per BK step, at
// its last k; the steps come in unrolled rounds of STAGES, so every buffer offset is a constant.
// Block order: blocks are scheduled in the order of their linear index, so consecutive indices walk down
// GROUP block rows before moving right, and the blocks in flight share rows of A and columns of B in L2.
// SPLIT > 1 (split-K, for grids too small to fill the GPU): blockIdx.z takes a 1 / SPLIT share of K's
// steps and adds alpha times its partial product into C with atomics; the launcher scales C by beta
// first (`catalog.KernelSpec.split_k`).
#include "cp_async.cuh"
#include "tiles.cuh"

constexpr int GROUP = 8;  // block rows walked before moving one block column right

template <bool IF, class Then, class Else>
struct Pick {
  using type = Then;
};
template <class Then, class Else>
struct Pick<false, Then, Else> {
  using type = Else;
};

// The BM x BK tiles of A copied one float per cp.async into As[k][m] (row length LDA): thread t copies
// column t % BK of rows t / BK, t / BK + THREADS / BK, ...; zeros outside the matrix.
template <int BM, int BK, int THREADS, int LDA>
class TransposingStream {
  static constexpr int ROW_STEP = THREADS / BK;
  static_assert(THREADS % BK == 0 && BM % ROW_STEP == 0, "the threads cover whole columns of the tile");
  const float* p_;
  int m_, k_, ld_, rows_, cols_;

 public:
  __device__ __forceinline__ TransposingStream(const float* __restrict__ a, int rows, int cols, int row0, int col0)
      : m_(threadIdx.x / BK), k_(threadIdx.x % BK), ld_(cols) {
    p_ = a + static_cast<long long>(row0 + m_) * cols + col0 + k_;
    rows_ = rows - row0 - m_, cols_ = cols - col0 - k_;
  }

  __device__ __forceinline__ void issue(float* as) {
#pragma unroll
    for (int dm = 0; dm < BM; dm += ROW_STEP)
      asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_address(as + k_ * LDA + m_ + dm)),
                   "l"(p_ + static_cast<long long>(dm) * ld_), "r"(dm < rows_ && cols_ > 0 ? 4 : 0));
    p_ += BK, cols_ -= BK;
  }
};

template <int BM, int BN, int BK, int WM, int WN, int TM, int TN, int STAGES, int ALONG_K, int SPLIT, bool VEC>
__device__ __forceinline__ void pipelined_block(int M, int N, int K, float alpha, const float* __restrict__ A,
                                                const float* __restrict__ B, float beta, float* __restrict__ C) {
  constexpr int THREADS = (BM / WM) * (BN / WN) * 32;
  constexpr int LDA = ALONG_K ? BK + 4 : BM + 4;  // see the top of the file
  constexpr int A_STAGE = ALONG_K ? BM * LDA : BK * LDA, B_STAGE = BK * BN;
  constexpr int LANES_M = WM / TM;  // the lane grid is LANES_M x (32 / LANES_M): 8 x 4 or 4 x 8
  constexpr int STRIDE_M = WM / (TM / 4), STRIDE_N = WN / (TN / 4);  // between a lane's groups of four
  extern __shared__ __align__(16) float smem[];
  float* const As = smem;
  float* const Bs = smem + STAGES * A_STAGE;

  // Grouped block order (see the top of the file).
  const int id = blockIdx.y * gridDim.x + blockIdx.x, per_group = GROUP * gridDim.x;
  const int first_row = id / per_group * GROUP, rows_here = min(static_cast<int>(gridDim.y) - first_row, GROUP);
  const int row0 = (first_row + id % per_group % rows_here) * BM, col0 = id % per_group / rows_here * BN;

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int along = lane % 8, diagonal = (lane / 8 + lane % 8) % 4;  // each quarter-warp: all 8 x all 4
  const int lane_m = LANES_M == 8 ? along : diagonal, lane_n = LANES_M == 8 ? diagonal : along;
  // this lane's first row: its TM rows are LANES_M apart along k, in groups of four STRIDE_M apart transposed
  const int row = warp / (BN / WN) * WM + (ALONG_K ? lane_m : lane_m * 4);
  const int col = warp % (BN / WN) * WN + lane_n * 4;
  auto row_of = [&](int i) { return row + (ALONG_K ? i * LANES_M : i / 4 * STRIDE_M + i % 4); };

  // This slice's steps along K (all of them when SPLIT == 1).
  const int all_steps = (K + BK - 1) / BK, per_slice = (all_steps + SPLIT - 1) / SPLIT;
  const int first = SPLIT == 1 ? 0 : blockIdx.z * per_slice;
  const int steps = SPLIT == 1 ? all_steps : max(0, min(per_slice, all_steps - first));

  using AlongK = TileStream<BM, BK, THREADS, false, VEC>;
  using Transposed = TransposingStream<BM, BK, THREADS, LDA>;
  typename Pick<ALONG_K != 0, AlongK, Transposed>::type a_tiles(A, M, K, row0, first * BK);
  TileStream<BK, BN, THREADS, true, VEC> b_tiles(B, K, N, first * BK, col0);
  auto issue = [&](int buffer) {
    float* const a = As + buffer * A_STAGE;
    float* const b = Bs + buffer * B_STAGE;
    if constexpr (ALONG_K)
      a_tiles.issue([&](int r, int c) { return a + r * LDA + c; });
    else
      a_tiles.issue(a);
    b_tiles.issue([&](int r, int c) { return b + r * BN + c; });
  };
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < steps) issue(s);
    commit_copies();  // one group per step, empty past the end, so wait_group counts stay uniform
  }

  float acc[TM][TN] = {};
  // ALONG_K: four k-values of each of this lane's rows; transposed: column kk and kk + 1 at its rows
  float4 a4[ALONG_K ? TM : 1];
  float a[2][TM];
  float b[2][TN];  // row kk of the B tile at this lane's columns, and row kk + 1
  auto load_a4 = [&](int i, const float* as, int k4) {
    a4[i] = *reinterpret_cast<const float4*>(as + row_of(i) * LDA + k4);
  };
  auto load_column = [&](float (&to)[TM], const float* as_row) {
#pragma unroll
    for (int g = 0; g < TM / 4; ++g) {
      const float4 v = *reinterpret_cast<const float4*>(as_row + row + g * STRIDE_M);
      to[4 * g] = v.x, to[4 * g + 1] = v.y, to[4 * g + 2] = v.z, to[4 * g + 3] = v.w;
    }
  };
  auto load_b = [&](float (&to)[TN], const float* bs_row) {
#pragma unroll
    for (int h = 0; h < TN / 4; ++h) {
      const float4 v = *reinterpret_cast<const float4*>(bs_row + col + h * STRIDE_N);
      to[4 * h] = v.x, to[4 * h + 1] = v.y, to[4 * h + 2] = v.z, to[4 * h + 3] = v.w;
    }
  };

  wait_copies<STAGES - 2>();
  __syncthreads();
  if constexpr (ALONG_K) {
#pragma unroll
    for (int i = 0; i < TM; ++i) load_a4(i, As, 0);
  } else {
    load_column(a[0], As);
  }
  load_b(b[0], Bs);
  // The steps come in rounds of STAGES, unrolled, so that each step's buffers are constants: step s of a round
  // multiplies buffer s, refills buffer s - 1 (every warp finished reading it before the last barrier) and reads
  // the first fragments of buffer s + 1.
  for (int t0 = 0; t0 < steps; t0 += STAGES) {
#pragma unroll
    for (int s = 0; s < STAGES; ++s) {
      const int t = t0 + s;
      if (t >= steps) break;
      if (t + STAGES - 1 < steps) issue((s + STAGES - 1) % STAGES);
      commit_copies();
      const float* as = As + s * A_STAGE;
      const float* bs = Bs + s * B_STAGE;
#pragma unroll
      for (int kk = 0; kk < BK; ++kk) {
        if (kk == BK - 1) {  // the next tile has arrived, and every warp is done with the one refilled next
          wait_copies<STAGES - 2>();
          __syncthreads();
          as = As + (s + 1) % STAGES * A_STAGE, bs = Bs + (s + 1) % STAGES * B_STAGE;
        }
        const int next = (kk + 1) % BK;  // the k whose fragments load now (row 0 of the next buffer at the end)
        load_b(b[(kk + 1) % 2], bs + next * BN);
        if constexpr (!ALONG_K) load_column(a[(kk + 1) % 2], as + next * LDA);
#pragma unroll
        for (int i = 0; i < TM; ++i) {
          const int q = kk % 4;
          const float x = !ALONG_K ? a[kk % 2][i] : q == 0 ? a4[i].x : q == 1 ? a4[i].y : q == 2 ? a4[i].z : a4[i].w;
#pragma unroll
          for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(x, b[kk % 2][j], acc[i][j]);
          if (ALONG_K && q == 3) load_a4(i, as, next);  // row i's float4 is used up: its next four k-steps
        }
      }
    }
  }

#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; j += 4) {
      const int r = row0 + row_of(i), c = col0 + col + j / 4 * STRIDE_N;
      if (SPLIT == 1) {
        store4(C, r, c, M, N, alpha, beta, make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]),
               VEC);
      } else if (r < M) {
#pragma unroll
        for (int q = 0; q < 4; ++q)
          if (c + q < N) atomicAdd(C + static_cast<long long>(r) * N + c + q, alpha * acc[i][j + q]);
      }
    }
}

template <int BM, int BN, int BK, int WM, int WN, int TM, int TN, int STAGES, int ALONG_K, int SPLIT>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32, 1)
sgemm_pipelined_warp_tiling(int M, int N, int K, float alpha, const float* __restrict__ A,
                            const float* __restrict__ B, float beta, float* __restrict__ C) {
  if (K % 4 == 0 && N % 4 == 0)  // rows of A and B are whole float4s
    pipelined_block<BM, BN, BK, WM, WN, TM, TN, STAGES, ALONG_K, SPLIT, true>(M, N, K, alpha, A, B, beta, C);
  else
    pipelined_block<BM, BN, BK, WM, WN, TM, TN, STAGES, ALONG_K, SPLIT, false>(M, N, K, alpha, A, B, beta, C);
}
