// Step 10b: warp tiling fed by a cp.async pipeline: no staging registers, no shared stores.
//
// Kernel 10 stages the next tiles in registers (3 float4s per thread at the default tiles) and stores them
// into shared memory, A transposed so that a column of the A tile is a row of floats. Both cost issue slots and
// registers. Here the tiles travel by cp.async, STAGES deep as in 09, straight into dynamic shared memory.
// A copy moves bytes unchanged, so the A tile takes one of two layouts (ALONG_K):
// - 0, transposed on the way: each cp.async moves one float, and a float may land anywhere, so A arrives
//   transposed as in kernel 10 (As[k][m], rows BM + 4 floats: the eight k-values a warp copies from four
//   rows fall on 32 distinct banks). Four times as many copies of A, each a single instruction.
// - 1, read along k: A keeps its row-major layout (rows BK + 4 floats, an odd number of float4s) and a
//   lane reads each of its TM rows as one float4, four k-steps of that row; its rows are LANES_M apart, so
//   a quarter-warp reads eight consecutive rows, whose float4s cover all 32 banks. The same number of
//   shared loads per k, but each float4 of A stays live for four k-steps: more registers.
// The thread tiles and fragment double buffering are kernel 10's. One barrier per BK step, at its last k;
// the steps come in unrolled rounds of STAGES, so every buffer offset is a constant.
// Lanes: a 128-bit shared load is served a quarter-warp at a time, but the two quarter-warps of a half-warp
// share one wavefront when each reads at most two distinct float4s (what Nsight Compute counts on the H100:
// kernel 10's lane grid, every quarter-warp reading all 8 x all 4, takes 4 wavefronts per load). Here a
// quarter-warp is 4 lanes along the wide side of the lane grid by 2 along the narrow side, so each load of the
// narrow side's operand takes 2 wavefronts and each of the wide side's 4: 16 per k instead of 24 for 8 x 16
// thread tiles. Both reads stay free of bank conflicts (contiguous float4s).
// Fragment loads are volatile: ptxas keeps them where the source puts them, a whole k ahead of their FFMAs,
// rather than moving them close to their first use, where two warps per scheduler cannot hide their latency.
// The catalog compiles this file with ptxas' --register-usage-level=10, which lets those fragments stay live.
// sgemm_pipelined_parts times chapter 7b's steps part by part: compiled without that ptxas option, with kernel 10b's
// lanes or kernel 10's (LANES 1 or 0) and volatile or plain fragment loads (VOLATILE 1 or 0); LANES = VOLATILE = 0 is
// step 1 alone, the cp.async pipeline with kernel 10's lanes.
// Tile order: consecutive tile indices walk down GROUP block rows before moving right, so the blocks in
// flight share rows of A and columns of B in L2.
// STREAM = 1 (stream-K): with one block per tile, the last wave of tiles leaves SMs idle (512 tiles of
// 128 x 256 at 4096 are 3.9 waves of 132 SMs: 3 % of the time lost). Instead the launcher starts one block
// per resident slot (G of them); the tiles left over after whole waves (tiles % G) are cut along K into G
// equal runs of k-steps, one per block, and then each block takes every G-th remaining whole tile. A piece
// that covers only part of a tile adds its share into C under a per-tile lock (end of `pipelined_block`).
// On the H100 it pays most at 1024, where the default's tiles are too few to fill the GPU; from 2048 up it gains or
// loses a few points against one block per tile, depending on the size (chapter 7b measures each).
#include "cp_async.cuh"
#include "tiles.cuh"

constexpr int GROUP = 8;           // block rows walked before moving one block column right
constexpr int MAX_BLOCKS = 4096;   // stream-K: blocks past this many do nothing (the launcher starts far fewer)
constexpr unsigned LOCKED = 1u << 31;
// Stream-K: per shared tile, the k-steps already added into C, with LOCKED set while a block adds its share. The
// block that completes a tile puts 0 back, so the next launch finds every word zero (launches of one instance on
// one stream run one after another; concurrent launches of the same instance would share these words).
__device__ unsigned shared_tile_progress[MAX_BLOCKS];

// A float4 of shared memory, read where the source reads it (see the top of the file); plain: where ptxas puts it.
template <bool VOLATILE = true>
__device__ __forceinline__ float4 load_shared4(const float* p) {
  if constexpr (VOLATILE) {
    float4 v;
    asm volatile("ld.volatile.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                 : "r"(smem_address(p)));
    return v;
  } else {
    return *reinterpret_cast<const float4*>(p);
  }
}

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

// C[r, c..c+3] += alpha * v, read and written in L2, where the other blocks sharing the tile add theirs.
__device__ __forceinline__ void add4(float* __restrict__ C, int r, int c, int M, int N, float alpha, float4 v,
                                     bool vec) {
  if (r >= M || c >= N) return;
  float* p = C + static_cast<long long>(r) * N + c;
  if (vec) {
    const float4 old = __ldcg(reinterpret_cast<const float4*>(p));
    __stcg(reinterpret_cast<float4*>(p), make_float4(old.x + alpha * v.x, old.y + alpha * v.y, old.z + alpha * v.z,
                                                     old.w + alpha * v.w));
    return;
  }
  const float w[4] = {v.x, v.y, v.z, v.w};
  for (int q = 0; q < 4 && c + q < N; ++q) __stcg(p + q, __ldcg(p + q) + alpha * w[q]);
}

// C = alpha * (the product of tile `id` over k-steps [first, first + steps)) + beta * C over the tile, through the
// cp.async pipeline. With STREAM, a share of a tile (fewer than all steps) is added into C under the tile's lock.
// PARTS: step 2's parts it takes (see the top of the file), 1 kernel 10b's lanes and 2 volatile fragment loads; 3 is
// kernel 10b, 0 kernel 10's lanes and plain loads.
template <int BM, int BN, int BK, int WM, int WN, int TM, int TN, int STAGES, int ALONG_K, int STREAM, bool VEC,
          int PARTS = 3>
__device__ __forceinline__ void pipelined_block(int M, int N, int K, float alpha, const float* __restrict__ A,
                                                const float* __restrict__ B, float beta, float* __restrict__ C,
                                                int id, int first, int steps) {
  constexpr int THREADS = (BM / WM) * (BN / WN) * 32;
  constexpr int LDA = ALONG_K ? BK + 4 : BM + 4;  // see the top of the file
  constexpr int A_STAGE = ALONG_K ? BM * LDA : BK * LDA, B_STAGE = BK * BN;
  constexpr int LANES_M = WM / TM;  // the lane grid is LANES_M x (32 / LANES_M): 8 x 4 or 4 x 8
  constexpr int STRIDE_M = WM / (TM / 4), STRIDE_N = WN / (TN / 4);  // between a lane's groups of four
  constexpr bool LANES = PARTS & 1, VOLATILE = (PARTS & 2) != 0;
  extern __shared__ __align__(16) float smem[];
  float* const As = smem;
  float* const Bs = smem + STAGES * A_STAGE;

  // Grouped tile order (see the top of the file); one block per tile: the grid is the tiles
  const int tiles_m = STREAM ? (M + BM - 1) / BM : gridDim.y, per_group = GROUP * (STREAM ? (N + BN - 1) / BN : gridDim.x);
  const int first_row = id / per_group * GROUP, rows_here = min(tiles_m - first_row, GROUP);
  const int row0 = (first_row + id % per_group % rows_here) * BM, col0 = id % per_group / rows_here * BN;

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  // see the top of the file; without LANES kernel 10's lanes, every quarter-warp reading all 8 x all 4
  const int wide = LANES ? lane / 8 % 2 * 4 + lane % 4 : lane % 8;
  const int narrow = LANES ? lane / 16 * 2 + lane / 4 % 2 : (lane / 8 + lane % 8) % 4;
  const int lane_m = LANES_M == 8 ? wide : narrow, lane_n = LANES_M == 8 ? narrow : wide;
  // this lane's first row: its TM rows are LANES_M apart along k, in groups of four STRIDE_M apart transposed
  const int row = warp / (BN / WN) * WM + (ALONG_K ? lane_m : lane_m * 4);
  const int col = warp % (BN / WN) * WN + lane_n * 4;
  auto row_of = [&](int i) { return row + (ALONG_K ? i * LANES_M : i / 4 * STRIDE_M + i % 4); };

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
    a4[i] = load_shared4<VOLATILE>(as + row_of(i) * LDA + k4);
  };
  auto load_column = [&](float (&to)[TM], const float* as_row) {
#pragma unroll
    for (int g = 0; g < TM / 4; ++g) {
      const float4 v = load_shared4<VOLATILE>(as_row + row + g * STRIDE_M);
      to[4 * g] = v.x, to[4 * g + 1] = v.y, to[4 * g + 2] = v.z, to[4 * g + 3] = v.w;
    }
  };
  auto load_b = [&](float (&to)[TN], const float* bs_row) {
#pragma unroll
    for (int h = 0; h < TN / 4; ++h) {
      const float4 v = load_shared4<VOLATILE>(bs_row + col + h * STRIDE_N);
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

  // A share of a tile: wait for its lock; the first share applies beta (C is read only when beta != 0 or another
  // share is already there), the last puts the lock word back to 0.
  const bool share = STREAM && steps != (K + BK - 1) / BK;
  __shared__ unsigned added_before;
  if (share) {
    if (threadIdx.x == 0) {
      unsigned before;
      while ((before = atomicOr(&shared_tile_progress[id], LOCKED)) & LOCKED) {
      }
      __threadfence();  // acquire: the shares added before are visible
      added_before = before;
    }
    __syncthreads();
  }
  const unsigned before = share ? added_before : 0u;
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; j += 4) {
      const int r = row0 + row_of(i), c = col0 + col + j / 4 * STRIDE_N;
      const float4 v = make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
      if (before != 0)
        add4(C, r, c, M, N, alpha, v, VEC);
      else
        store4(C, r, c, M, N, alpha, beta, v, VEC);
    }
  if (share) {
    __threadfence();  // release: this share is visible before the lock opens
    __syncthreads();
    const unsigned all = (K + BK - 1) / BK;
    if (threadIdx.x == 0) atomicExch(&shared_tile_progress[id], before + steps == all ? 0u : before + steps);
  }
}

// Stream-K (see the top of the file): this block's run of k-steps over the shared tiles, a piece per tile, then
// every G-th whole tile after them. Thread 0 works out each piece from the launch's constants into shared memory,
// so that the schedule keeps no registers live across the main loop.
template <int BM, int BN, int BK, int WM, int WN, int TM, int TN, int STAGES, int ALONG_K, bool VEC, int PARTS>
__device__ __forceinline__ void stream_k(int M, int N, int K, float alpha, const float* __restrict__ A,
                                         const float* __restrict__ B, float beta, float* __restrict__ C) {
  __shared__ long long next_unit;  // this block's next k-step in the run over the shared tiles
  __shared__ int next_whole;       // its next whole tile
  __shared__ int piece[3];         // tile, first k-step and k-steps of its next piece; -1 k-steps: none left
  for (bool start = true;; start = false) {
    if (threadIdx.x == 0) {
      const int blocks = min(static_cast<int>(gridDim.x), MAX_BLOCKS);
      const int tiles = ((M + BM - 1) / BM) * ((N + BN - 1) / BN), all_steps = (K + BK - 1) / BK;
      const int shared_tiles = all_steps == 0 ? 0 : tiles % blocks;  // K == 0: only whole tiles (C = beta * C)
      const long long units = static_cast<long long>(shared_tiles) * all_steps;
      const long long end = units * (blockIdx.x + 1) / blocks;
      if (start) next_unit = units * blockIdx.x / blocks, next_whole = shared_tiles + blockIdx.x;
      if (static_cast<int>(blockIdx.x) >= blocks) {
        piece[2] = -1;
      } else if (next_unit < end) {
        const long long u = next_unit;
        piece[0] = static_cast<int>(u / all_steps), piece[1] = static_cast<int>(u % all_steps);
        piece[2] = static_cast<int>(min(static_cast<long long>(all_steps - piece[1]), end - u));
        next_unit = u + piece[2];
      } else if (next_whole < tiles) {
        piece[0] = next_whole, piece[1] = 0, piece[2] = all_steps;
        next_whole += blocks;
      } else {
        piece[2] = -1;
      }
    }
    __syncthreads();
    const int id = piece[0], first = piece[1], steps = piece[2];
    if (steps < 0) return;
    pipelined_block<BM, BN, BK, WM, WN, TM, TN, STAGES, ALONG_K, 1, VEC, PARTS>(M, N, K, alpha, A, B, beta, C, id,
                                                                               first, steps);
    __syncthreads();  // every warp is done with the pipeline's buffers and with piece[] before they change
  }
}

template <int BM, int BN, int BK, int WM, int WN, int TM, int TN, int STAGES, int ALONG_K, bool VEC, int PARTS>
__device__ __forceinline__ void pipelined_gemm(int M, int N, int K, float alpha, const float* __restrict__ A,
                                               const float* __restrict__ B, float beta, float* __restrict__ C,
                                               bool stream) {
  if (stream)
    stream_k<BM, BN, BK, WM, WN, TM, TN, STAGES, ALONG_K, VEC, PARTS>(M, N, K, alpha, A, B, beta, C);
  else  // one block per tile
    pipelined_block<BM, BN, BK, WM, WN, TM, TN, STAGES, ALONG_K, 0, VEC, PARTS>(
        M, N, K, alpha, A, B, beta, C, blockIdx.y * gridDim.x + blockIdx.x, 0, (K + BK - 1) / BK);
}

template <int BM, int BN, int BK, int WM, int WN, int TM, int TN, int STAGES, int ALONG_K, int STREAM, int PARTS>
__device__ __forceinline__ void pipelined_entry(int M, int N, int K, float alpha, const float* __restrict__ A,
                                                const float* __restrict__ B, float beta, float* __restrict__ C) {
  if (K % 4 == 0 && N % 4 == 0)  // rows of A and B are whole float4s
    pipelined_gemm<BM, BN, BK, WM, WN, TM, TN, STAGES, ALONG_K, true, PARTS>(M, N, K, alpha, A, B, beta, C, STREAM);
  else
    pipelined_gemm<BM, BN, BK, WM, WN, TM, TN, STAGES, ALONG_K, false, PARTS>(M, N, K, alpha, A, B, beta, C, STREAM);
}

template <int BM, int BN, int BK, int WM, int WN, int TM, int TN, int STAGES, int ALONG_K, int STREAM>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32, 1)
sgemm_pipelined_warp_tiling(int M, int N, int K, float alpha, const float* __restrict__ A,
                            const float* __restrict__ B, float beta, float* __restrict__ C) {
  pipelined_entry<BM, BN, BK, WM, WN, TM, TN, STAGES, ALONG_K, STREAM, 3>(M, N, K, alpha, A, B, beta, C);
}

template <int BM, int BN, int BK, int WM, int WN, int TM, int TN, int STAGES, int ALONG_K, int STREAM, int LANES,
          int VOLATILE>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32, 1)
sgemm_pipelined_parts(int M, int N, int K, float alpha, const float* __restrict__ A, const float* __restrict__ B,
                      float beta, float* __restrict__ C) {
  pipelined_entry<BM, BN, BK, WM, WN, TM, TN, STAGES, ALONG_K, STREAM, LANES + 2 * VOLATILE>(M, N, K, alpha, A, B,
                                                                                             beta, C);
}
