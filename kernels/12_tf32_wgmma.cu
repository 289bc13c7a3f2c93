// Step 12: Hopper's warpgroup MMA (wgmma, sm_90a), TF32 and 3xTF32.
//
// TF32 wgmma wants both operands K-major (K contiguous); our B is N-major. So each warpgroup
// computes a tile of C^T = B^T A^T: the register operand is B^T (64 columns of C per warpgroup,
// loaded from shared memory as mma.sync fragments) and the shared-memory operand is the A tile,
// which is K-major as it comes, stored with the 128-byte swizzle. One wgmma multiplies
// 64 (n) x BM (m) x 8 (k). BK is 32 floats: one 128-byte swizzle row of A per tile row.
// Tiles arrive by cp.async, STAGES deep; a step waits for the wgmmas of the step before it only,
// so the tensor cores work while the next fragments load.
// TF32 kernel: the FP32 bits go to the tensor cores as they are, which read them as TF32 by
// dropping the 13 low mantissa bits (truncation).
// 3xTF32 kernel: A's tile is split in shared memory into big and small TF32 parts once per
// step, B's fragments in registers, and each step's products are summed in a fresh accumulator that
// is added to the running one with FP32 adds (the tensor cores' own accumulation is not rounded to
// nearest, which costs 3xTF32 its accuracy over long K).
#include "cp_async.cuh"
#include "tf32.cuh"
#include "tiles.cuh"
#include "wgmma.cuh"

template <int BM, int BN, bool SPLIT>
struct WgmmaLayout {
  static constexpr int BK = 32, LDB = BN + 8;
  static constexpr int A_BYTES = BM * BK * 4;                          // a multiple of 1024
  static constexpr int B_BYTES = (BK * LDB * 4 + 1023) / 1024 * 1024;  // keep every A tile 1024-aligned
  static constexpr int STAGE_BYTES = (SPLIT ? 2 : 1) * A_BYTES + B_BYTES;
};

template <int BM, int BN, int STAGES, bool SPLIT, bool VEC>
__device__ __forceinline__ void tf32_wgmma_block(int M, int N, int K, float alpha, const float* __restrict__ A,
                                                 const float* __restrict__ B, float beta, float* __restrict__ C) {
  using L = WgmmaLayout<BM, BN, SPLIT>;
  constexpr int BK = L::BK, LDB = L::LDB, THREADS = BN / 64 * 128, NACC = BM / 2;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const unsigned raw = smem_address(smem_raw), base = (raw + 1023) & ~1023u;  // the swizzle needs 1024
  unsigned char* smem = smem_raw + (base - raw);
  auto a_big = [&](int s) { return smem + s * L::STAGE_BYTES; };
  auto a_small = [&](int s) { return smem + s * L::STAGE_BYTES + L::A_BYTES; };
  auto b_tile = [&](int s) { return reinterpret_cast<float*>(smem + s * L::STAGE_BYTES + (SPLIT ? 2 : 1) * L::A_BYTES); };

  const int wg = threadIdx.x / 128, warp = threadIdx.x / 32 % 4, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  const int n0 = wg * 64 + warp * 16 + g;  // the first of this thread's two columns of the block's C tile
  const int steps = (K + BK - 1) / BK;

  TileStream<BM, BK, THREADS, false, VEC> a_tiles(A, M, K, row0, 0);
  TileStream<BK, BN, THREADS, true, VEC> b_tiles(B, K, N, 0, col0);
  auto issue = [&](int step) {  // start copying step's tiles into buffer step % STAGES (steps come in order)
    unsigned char* const a = a_big(step % STAGES);
    float* const bt = b_tile(step % STAGES);
    a_tiles.issue([&](int r, int c) { return reinterpret_cast<float*>(a + swizzled(r, c)); });
    b_tiles.issue([&](int r, int c) { return bt + r * LDB + c; });
  };

  float acc[NACC], part[NACC];
#pragma unroll
  for (int i = 0; i < NACC; ++i) acc[i] = part[i] = 0.0f;

  // One step: tile `step` is multiplied with fragments in `frag` (two sets alternate, so a step can
  // load its fragments while the wgmmas of the step before still read the other set).
  auto run_step = [&](int step, unsigned (&frag)[BK / 8][4], unsigned (&small)[BK / 8][4]) {
    wait_copies<STAGES - 3>();
    fence_async_shared();
    __syncthreads();  // tile `step` has arrived; every warpgroup is done with tile step - 2's buffer
    const int s = step % STAGES;
    if (SPLIT) {  // split A's tile into big and small TF32 parts, in place and beside it
      for (int i = threadIdx.x; i < BM * BK / 4; i += THREADS) {
        float4* p = reinterpret_cast<float4*>(a_big(s)) + i;
        const float4 x = *p;
        const Split sx(x.x), sy(x.y), sz(x.z), sw(x.w);
        *p = make_float4(__uint_as_float(sx.big), __uint_as_float(sy.big), __uint_as_float(sz.big), __uint_as_float(sw.big));
        reinterpret_cast<float4*>(a_small(s))[i] =
            make_float4(__uint_as_float(sx.small), __uint_as_float(sy.small), __uint_as_float(sz.small), __uint_as_float(sw.small));
      }
      fence_async_shared();
      __syncthreads();
    }
    if (step + STAGES - 2 < steps) issue(step + STAGES - 2);
    commit_copies();
    const float* bt = b_tile(s);
#pragma unroll
    for (int kk = 0; kk < BK / 8; ++kk) {
      const float v[4] = {bt[(8 * kk + t) * LDB + n0], bt[(8 * kk + t) * LDB + n0 + 8], bt[(8 * kk + t + 4) * LDB + n0],
                          bt[(8 * kk + t + 4) * LDB + n0 + 8]};
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        if (SPLIT) {
          const Split x(v[q]);
          frag[kk][q] = x.big, small[kk][q] = x.small;
        } else {
          frag[kk][q] = __float_as_uint(v[q]);  // read as TF32: the 13 low mantissa bits are dropped
        }
      }
    }
    wgmma_fence();
    const unsigned a_addr = base + s * L::STAGE_BYTES;
#pragma unroll
    for (int kk = 0; kk < BK / 8; ++kk) {
      const unsigned long long big_desc = k_major_desc(a_addr + 32 * kk);
      if (SPLIT) {  // the small corrections first, then the big product, into this step's own sum
        Wgmma<BM>::rs(part, frag[kk], k_major_desc(a_addr + L::A_BYTES + 32 * kk), kk > 0);
        Wgmma<BM>::rs(part, small[kk], big_desc, 1);
        Wgmma<BM>::rs(part, frag[kk], big_desc, 1);
      } else {
        Wgmma<BM>::rs(acc, frag[kk], big_desc, 1);
      }
    }
    wgmma_commit();
    if (SPLIT) {
      wgmma_wait<0>();
      pin(part);
#pragma unroll
      for (int i = 0; i < NACC; ++i) acc[i] += part[i];
    } else {
      wgmma_wait<1>();
    }
  };

#pragma unroll
  for (int s = 0; s < STAGES - 2; ++s) {
    if (s < steps) issue(s);
    commit_copies();
  }
  unsigned frag0[BK / 8][4], frag1[BK / 8][4], small[BK / 8][4];
  int step = 0;
  for (; step + 1 < steps; step += 2) {  // pairs, so that each fragment set is written only after its wgmmas ended
    run_step(step, frag0, small);
    run_step(step + 1, frag1, small);
  }
  if (step < steps) run_step(step, frag0, small);
  wgmma_wait<0>();
  pin(acc);
#pragma unroll
  for (int i = 0; i < NACC; ++i) {  // acc[i] is C^T's (row n, column m): C's (m, n)
    const int n = n0 + 8 * ((i >> 1) & 1), m = 8 * (i >> 2) + 2 * t + (i & 1);
    store_c(C, row0 + m, col0 + n, M, N, alpha, beta, acc[i]);
  }
}

template <int BM, int BN, int STAGES>
__global__ void __launch_bounds__(BN / 64 * 128, 1)
sgemm_tf32_wgmma(int M, int N, int K, float alpha, const float* __restrict__ A, const float* __restrict__ B,
                 float beta, float* __restrict__ C) {
  if (K % 4 == 0 && N % 4 == 0)  // rows of A and B are whole float4s
    tf32_wgmma_block<BM, BN, STAGES, false, true>(M, N, K, alpha, A, B, beta, C);
  else
    tf32_wgmma_block<BM, BN, STAGES, false, false>(M, N, K, alpha, A, B, beta, C);
}

template <int BM, int BN, int STAGES>
__global__ void __launch_bounds__(BN / 64 * 128, 1)
sgemm_3xtf32_wgmma(int M, int N, int K, float alpha, const float* __restrict__ A, const float* __restrict__ B,
                   float beta, float* __restrict__ C) {
  if (K % 4 == 0 && N % 4 == 0)  // rows of A and B are whole float4s
    tf32_wgmma_block<BM, BN, STAGES, true, true>(M, N, K, alpha, A, B, beta, C);
  else
    tf32_wgmma_block<BM, BN, STAGES, true, false>(M, N, K, alpha, A, B, beta, C);
}
