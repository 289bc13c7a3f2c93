// Step 11: tensor cores with mma.sync (Ampere and newer), TF32 and 3xTF32.
//
// `mma.sync.aligned.m16n8k8` multiplies a 16 x 8 tile of A by an 8 x 8 tile of B into a 16 x 8 tile
// of C, its operands spread over the 32 lanes of a warp in a fixed layout: lane 4g + t holds
// A[g][t], A[g + 8][t], A[g][t + 4], A[g + 8][t + 4], B[t][g], B[t + 4][g] and C[g][2t], C[g][2t + 1],
// C[g + 8][2t], C[g + 8][2t + 1]. Each warp owns a WM x WN warp tile: (WM / 16) x (WN / 8) such tiles.
// The block's BK-deep tiles of A and B arrive by cp.async, STAGES deep (chapter 6), into dynamic
// shared memory, both row-major as in global memory, rows padded to BK + 4 and BN + 8 floats:
// - A's four fragment registers come from one `ldmatrix.x4`: it reads four 8 x 4 blocks of 32-bit
//   values (eight 16-byte rows each, one row address per lane) and hands lane 4g + t element (g, t)
//   of each, exactly the fragment. With rows BK + 4 floats apart, the eight rows of a block fall on
//   eight different 16-byte bank groups.
// - B's two come from scalar loads: B[t][g] for the 32 lanes lies on banks 8t + g (rows BN + 8 apart).
// Each warp loads the next k8 slice of its fragments while the tensor cores work on the current one,
// and waits at the barrier only once per BK step, just before the first slice of the next tile.
// TF32 kernel: the tensor cores read the FP32 bits as TF32, which drops the 13 low mantissa bits
// (truncation); rounding each fragment first would cost a cvt per value.
// 3xTF32 kernel: each operand x = big + small, both rounded to nearest TF32, and each BK step adds
// big*small + small*big + big*big into a fresh accumulator that is then added to the running one with
// FP32 adds: the tensor cores' own accumulation does not round to nearest, and over long K that alone
// costs 3xTF32 its FP32-level accuracy.
#include "cp_async.cuh"
#include "tf32.cuh"
#include "tiles.cuh"

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const float* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_address(row)));
}

template <int BM, int BN, int BK>
struct MmaLayout {
  static constexpr int LDA = BK + 4, LDB = BN + 8;
  static constexpr int STAGE_FLOATS = BM * LDA + BK * LDB;
};

// One k8 slice of a warp tile's operands: A from ldmatrix, B from 32-bit loads.
template <int MT, int NT>
struct Fragments {
  unsigned a[MT][4], b[NT][2];

  // as: this lane's ldmatrix row of the first m16 tile; bs: B[t][g] of the first n8 tile.
  __device__ __forceinline__ void load(const float* as, const float* bs, int lda, int ldb) {
#pragma unroll
    for (int i = 0; i < MT; ++i) ldmatrix_x4(a[i], as + 16 * i * lda);
#pragma unroll
    for (int j = 0; j < NT; ++j) b[j][0] = __float_as_uint(bs[8 * j]), b[j][1] = __float_as_uint(bs[4 * ldb + 8 * j]);
  }
};

template <int MT, int NT, bool SPLIT>
__device__ __forceinline__ void mma_slice(float (&sum)[MT][NT][4], Fragments<MT, NT>& f) {
  if (SPLIT) {
    unsigned a_small[MT][4], b_small[NT][2];
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const Split x(__uint_as_float(f.a[i][q]));
        f.a[i][q] = x.big, a_small[i][q] = x.small;
      }
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int q = 0; q < 2; ++q) {
        const Split x(__uint_as_float(f.b[j][q]));
        f.b[j][q] = x.big, b_small[j][q] = x.small;
      }
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
      for (int j = 0; j < NT; ++j) {  // the small corrections first, so they are not lost against the big product
        mma_tf32(sum[i][j], f.a[i], b_small[j]);
        mma_tf32(sum[i][j], a_small[i], f.b[j]);
      }
  }
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j) mma_tf32(sum[i][j], f.a[i], f.b[j]);
}

template <int BM, int BN, int BK, int WM, int WN, int STAGES, bool SPLIT, bool VEC>
__device__ __forceinline__ void tf32_mma_block(int M, int N, int K, float alpha, const float* __restrict__ A,
                                               const float* __restrict__ B, float beta, float* __restrict__ C) {
  using L = MmaLayout<BM, BN, BK>;
  constexpr int THREADS = (BM / WM) * (BN / WN) * 32;
  constexpr int MT = WM / 16, NT = WN / 8, KK = BK / 8;  // mma tiles per warp, k8 slices per tile
  constexpr int LDA = L::LDA, LDB = L::LDB;
  extern __shared__ __align__(16) float smem[];

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int wm0 = warp / (BN / WN) * WM, wn0 = warp % (BN / WN) * WN;
  const int lm_row = lane % 8 + 8 * (lane / 8 % 2), lm_col = 4 * (lane / 16);  // this lane's ldmatrix row
  const int a_frag = (wm0 + lm_row) * LDA + lm_col, b_frag = BM * LDA + t * LDB + wn0 + g;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  const int steps = (K + BK - 1) / BK;
  float acc[MT][NT][4] = {};

  TileStream<BM, BK, THREADS, false, VEC> a_tiles(A, M, K, row0, 0);
  TileStream<BK, BN, THREADS, true, VEC> b_tiles(B, K, N, 0, col0);
  auto issue = [&](int step) {  // start copying step's tiles into buffer step % STAGES (steps come in order)
    float* const a = smem + step % STAGES * L::STAGE_FLOATS;
    float* const b = a + BM * LDA;
    a_tiles.issue([&](int r, int c) { return a + r * LDA + c; });
    b_tiles.issue([&](int r, int c) { return b + r * LDB + c; });
  };
  auto load = [&](Fragments<MT, NT>& f, int step, int k8) {
    const float* tile = smem + step % STAGES * L::STAGE_FLOATS;
    f.load(tile + a_frag + k8, tile + b_frag + k8 * LDB, LDA, LDB);
  };

#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < steps) issue(s);
    commit_copies();  // one group per step, empty past the end, so wait_group counts stay uniform
  }
  wait_copies<STAGES - 2>();
  __syncthreads();
  Fragments<MT, NT> frag[2];  // the slice being multiplied and the next one, loaded meanwhile
  load(frag[0], 0, 0);
  for (int step = 0; step < steps; ++step) {
    float part[MT][NT][4] = {};  // 3xTF32: this step's sum, added to acc with FP32 adds
    auto& sum = *(SPLIT ? &part : &acc);
#pragma unroll
    for (int kk = 0; kk < KK; ++kk) {
      if (kk == 0) {  // refill the buffer every warp finished reading before the last barrier
        if (step + STAGES - 1 < steps) issue(step + STAGES - 1);
        commit_copies();
      }
      if (kk < KK - 1) {
        load(frag[(kk + 1) % 2], step, 8 * (kk + 1));
      } else if (step + 1 < steps) {
        wait_copies<STAGES - 2>();
        __syncthreads();  // the next tile has arrived, and every warp is done with the one refilled next
        load(frag[(kk + 1) % 2], step + 1, 0);
      }
      mma_slice<MT, NT, SPLIT>(sum, frag[kk % 2]);
    }
    if (SPLIT)
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
          for (int q = 0; q < 4; ++q) acc[i][j][q] += part[i][j][q];
  }
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      const int r = row0 + wm0 + i * 16 + g, c = col0 + wn0 + j * 8 + 2 * t;
      store_c(C, r, c, M, N, alpha, beta, acc[i][j][0]);
      store_c(C, r, c + 1, M, N, alpha, beta, acc[i][j][1]);
      store_c(C, r + 8, c, M, N, alpha, beta, acc[i][j][2]);
      store_c(C, r + 8, c + 1, M, N, alpha, beta, acc[i][j][3]);
    }
}

template <int BM, int BN, int BK, int WM, int WN, int STAGES>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32)
sgemm_tf32_mma(int M, int N, int K, float alpha, const float* __restrict__ A, const float* __restrict__ B,
               float beta, float* __restrict__ C) {
  if (K % 4 == 0 && N % 4 == 0)  // rows of A and B are whole float4s
    tf32_mma_block<BM, BN, BK, WM, WN, STAGES, false, true>(M, N, K, alpha, A, B, beta, C);
  else
    tf32_mma_block<BM, BN, BK, WM, WN, STAGES, false, false>(M, N, K, alpha, A, B, beta, C);
}

template <int BM, int BN, int BK, int WM, int WN, int STAGES>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32)
sgemm_3xtf32_mma(int M, int N, int K, float alpha, const float* __restrict__ A, const float* __restrict__ B,
                 float beta, float* __restrict__ C) {
  if (K % 4 == 0 && N % 4 == 0)  // rows of A and B are whole float4s
    tf32_mma_block<BM, BN, BK, WM, WN, STAGES, true, true>(M, N, K, alpha, A, B, beta, C);
  else
    tf32_mma_block<BM, BN, BK, WM, WN, STAGES, true, false>(M, N, K, alpha, A, B, beta, C);
}
