// Step 13: the mma.sync TF32 kernel of step 11, fed by Hopper's Tensor Memory Accelerator (sm_90a).
//
// On an H100 at its 700 W cap, step 11 is limited by energy, not by the tensor cores: the clock drops
// to about 1.6 GHz, and most of the energy goes into moving tiles, not into the products. Here:
// - One thread issues the copies: a TMA box of A (BM rows x 32 floats) and BN / 32 boxes of B (32 x 32)
//   per BK = 32 step, instead of every thread computing addresses for cp.async. The boxes arrive with
//   the 128-byte swizzle (16-byte chunk c of row r lands at chunk c ^ (r % 8)), so the fragment reads
//   below are free of bank conflicts without padding; TMA zero-fills what lies outside the matrices.
// - The CLUSTER blocks of a cluster (stacked along M) need the same B tile: each loads 1/CLUSTER of
//   its boxes and multicasts them to all, so L2 hands out B once per cluster.
// - Each stage has two mbarriers: `full` counts the bytes landing (the copy engine signals it), `empty`
//   counts the warps of the whole cluster that are done reading it; the next copy into a stage waits
//   for `empty`. No block-wide barrier in the main loop.
// - C^T = B^T A^T with mma.sync m16n8k8: the mma's A operand is 16 columns of B, lane 4g + t holding
//   columns (2 slots) from one 64-bit load of row t and one of row t + 4; its B operand is 8 rows of A,
//   two such m8 tiles per ldmatrix.x4. Which column each slot holds is ours to choose: lane g takes
//   chunk CH[g] (+ 2 for the second n16 tile of a box) with CH = 0,0,4,4,1,1,5,5, so that the 16 lanes
//   of each half-warp, rows t = 0..3 swizzled by t, cover 32 different banks.
// - Blocks run in bands of 8 cluster-rows (the same few columns of B across a band) for L2 reuse.
// sgemm_tf32_mma_tma_parts takes the band and the empty barriers as switches (chapter 8c races them one by one).
#include "cp_async.cuh"
#include "tf32.cuh"
#include "tiles.cuh"
#include "tma.cuh"

__device__ __forceinline__ void ldmatrix_x4_at(unsigned (&r)[4], unsigned address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}

__device__ __forceinline__ void load_pair(unsigned& x, unsigned& y, unsigned address) {
  asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];\n" : "=r"(x), "=r"(y) : "r"(address));
}

// BAND: cluster-rows per band of the tile order (1: row by row). EMPTY: the warps hand a stage back through its
// `empty` mbarrier (1), or all threads meet at __syncthreads before thread 0 refills it (0: CLUSTER 1 only).
template <int BM, int BN, int WM, int WN, int STAGES, int CLUSTER, int BAND, bool EMPTY>
__device__ __forceinline__ void mma_tma_block(int M, int N, int K, float alpha, const float* __restrict__ A,
                                              const float* __restrict__ B, float beta, float* __restrict__ C,
                                              const void* __restrict__ map_a, const void* __restrict__ map_b) {
  static_assert(EMPTY || CLUSTER == 1, "a block barrier cannot hand a stage back to a cluster's other blocks");
  constexpr int BK = 32, KK = BK / 8;  // a row of a box is 32 floats = 128 bytes, the swizzle's span
  constexpr int WARPS = (BM / WM) * (BN / WN), M8 = WM / 8, N16 = WN / 16;
  constexpr unsigned A_BYTES = BM * BK * 4, BOX_BYTES = BK * 32 * 4, STAGE_BYTES = (BM + BN) * BK * 4;
  extern __shared__ unsigned char smem_raw[];

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int wm0 = warp / (BN / WN) * WM, wn0 = warp % (BN / WN) * WN;
  const unsigned base = (smem_address(smem_raw) + 1023) & ~1023u;  // the swizzle repeats every 1024 bytes
  const unsigned full0 = base + STAGES * STAGE_BYTES, empty0 = full0 + 8 * STAGES;
  const unsigned rank = CLUSTER > 1 ? cluster_rank() : 0;

  // Bands of BAND cluster-rows: consecutive clusters walk down a band before moving right.
  const int rows_of_clusters = gridDim.y / CLUSTER, id = blockIdx.y / CLUSTER * gridDim.x + blockIdx.x;
  const int first = id / (BAND * gridDim.x) * BAND, band = min(BAND, rows_of_clusters - first);
  const int row0 = ((first + id % (BAND * gridDim.x) % band) * CLUSTER + rank) * BM;
  const int col0 = id % (BAND * gridDim.x) / band * BN;
  const int steps = (K + BK - 1) / BK;

  if (threadIdx.x == 0) {
    tensormap_acquire(map_a), tensormap_acquire(map_b);
    for (int s = 0; s < STAGES; ++s) mbar_init(full0 + 8 * s, 1), mbar_init(empty0 + 8 * s, WARPS * CLUSTER);
    mbar_init_fence();
  }
  if (CLUSTER > 1) cluster_sync(); else __syncthreads();  // partners' barriers exist before any multicast

  auto issue = [&](int step) {  // thread 0: step's tiles into stage step % STAGES
    const unsigned s = step % STAGES, full = full0 + 8 * s, a = base + s * STAGE_BYTES, b = a + A_BYTES;
    mbar_arrive_expect(full, STAGE_BYTES);  // A, and B's boxes from every block of the cluster
    tma_load(a, map_a, step * BK, row0, full);
#pragma unroll
    for (int box = rank; box < BN / 32; box += CLUSTER)
      if (CLUSTER > 1) tma_load_multicast(b + box * BOX_BYTES, map_b, col0 + 32 * box, step * BK, full, (1 << CLUSTER) - 1);
      else tma_load(b + box * BOX_BYTES, map_b, col0 + 32 * box, step * BK, full);
  };
  auto release = [&](int step) {  // this warp has used every value it read from step's stage
    __syncwarp();
    if (lane < CLUSTER) mbar_arrive_remote(empty0 + 8 * (step % STAGES), lane);
  };

  // Byte offsets within a stage. A (ldmatrix): row wm0 + l % 8 + 8 (l / 16), chunk 2 kk + (l / 8) % 2.
  const unsigned a_row = (wm0 + lane % 8 + 8 * (lane / 16)) * 128, a_swz = (lane / 8 % 2) ^ (lane % 8);
  // B (64-bit loads): rows t and t + 4 of box wn0 / 32 + j / 2, chunk CH[g] + 2 (j % 2), 8 bytes in if g is odd.
  const int ch = g / 2 % 2 * 4 + g / 4;
  auto b_at = [&](int row, int chunk) { return A_BYTES + wn0 / 32 * BOX_BYTES + row * 128 + (chunk ^ row) * 16 + g % 2 * 8; };
  const unsigned b_lo[2] = {b_at(t, ch), b_at(t, ch + 2)}, b_hi[2] = {b_at(t + 4, ch), b_at(t + 4, ch + 2)};

  unsigned x[2][M8][2], y[2][N16][4];  // fragments of two k8 slices: x from A (mma B operand), y from B
  auto load = [&](int buf, int step, int kk) {
    const unsigned stage = base + step % STAGES * STAGE_BYTES;
    const unsigned a = stage + a_row + ((2 * kk) ^ a_swz) * 16;
#pragma unroll
    for (int i = 0; i < M8 / 2; ++i) {
      unsigned r[4];
      ldmatrix_x4_at(r, a + i * 16 * 128);
      x[buf][2 * i][0] = r[0], x[buf][2 * i][1] = r[1], x[buf][2 * i + 1][0] = r[2], x[buf][2 * i + 1][1] = r[3];
    }
#pragma unroll
    for (int j = 0; j < N16; ++j) {
      const unsigned b = stage + kk * 8 * 128 + j / 2 * BOX_BYTES;
      load_pair(y[buf][j][0], y[buf][j][1], b + b_lo[j % 2]);
      load_pair(y[buf][j][2], y[buf][j][3], b + b_hi[j % 2]);
    }
  };

  if (threadIdx.x == 0)
    for (int s = 0; s < STAGES - 1 && s < steps; ++s) issue(s);
  float acc[M8 * N16][4] = {};
  mbar_wait(full0, 0);
  load(0, 0, 0);
  for (int step = 0; step < steps; ++step) {
#pragma unroll
    for (int kk = 0; kk < KK; ++kk) {
      if (EMPTY && kk == 0 && step > 0) release(step - 1);  // step - 1's last slice went into the mmas just issued
      if (!EMPTY && kk == 1) __syncthreads();  // every warp has issued its mmas on step - 1's last slice
      if (kk == 1 && threadIdx.x == 0 && step + STAGES - 1 < steps) {
        const int next = step + STAGES - 1;  // into the stage of step - 1, once the whole cluster has left it
        if (EMPTY && next >= STAGES) mbar_wait(empty0 + 8 * (next % STAGES), (next / STAGES - 1) & 1);
        issue(next);
      }
      if (kk < KK - 1) {
        load((kk + 1) % 2, step, kk + 1);
      } else if (step + 1 < steps) {
        mbar_wait(full0 + 8 * ((step + 1) % STAGES), ((step + 1) / STAGES) & 1);
        load((kk + 1) % 2, step + 1, 0);
      }
#pragma unroll
      for (int j = 0; j < N16; ++j)  // y[j] stays in the operand reuse cache across the M8 mmas
#pragma unroll
        for (int i = 0; i < M8; ++i) mma_tf32(acc[i * N16 + j], y[kk % 2][j], x[kk % 2][i]);
    }
  }
  // Lane (g, t) holds rows 8i + 2t, + 1 and columns c, c + 1 of each 8 x 16 tile (mma's C^T layout).
#pragma unroll
  for (int i = 0; i < M8; ++i)
#pragma unroll
    for (int j = 0; j < N16; ++j) {
      const float* d = acc[i * N16 + j];
      const int r = row0 + wm0 + 8 * i + 2 * t, c = col0 + wn0 + 32 * (j / 2) + 4 * (ch + 2 * (j % 2)) + 2 * (g % 2);
      store_c(C, r, c, M, N, alpha, beta, d[0]);
      store_c(C, r + 1, c, M, N, alpha, beta, d[1]);
      store_c(C, r, c + 1, M, N, alpha, beta, d[2]);
      store_c(C, r + 1, c + 1, M, N, alpha, beta, d[3]);
    }
  if (CLUSTER > 1) cluster_sync();  // no block leaves while a partner may still arrive on its barriers
}

template <int BM, int BN, int WM, int WN, int STAGES, int CLUSTER>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32) __cluster_dims__(1, CLUSTER, 1)
sgemm_tf32_mma_tma(int M, int N, int K, float alpha, const float* __restrict__ A, const float* __restrict__ B,
                   float beta, float* __restrict__ C, const void* __restrict__ map_a, const void* __restrict__ map_b) {
  mma_tma_block<BM, BN, WM, WN, STAGES, CLUSTER, 8, true>(M, N, K, alpha, A, B, beta, C, map_a, map_b);
}

// Chapter 8c's change part by part: the same kernel with the tile order (BAND) and the stage hand-back (EMPTY) as
// switches; BAND 8 and EMPTY 1 is sgemm_tf32_mma_tma.
template <int BM, int BN, int WM, int WN, int STAGES, int CLUSTER, int BAND, int EMPTY>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32) __cluster_dims__(1, CLUSTER, 1)
sgemm_tf32_mma_tma_parts(int M, int N, int K, float alpha, const float* __restrict__ A, const float* __restrict__ B,
                         float beta, float* __restrict__ C, const void* __restrict__ map_a,
                         const void* __restrict__ map_b) {
  mma_tma_block<BM, BN, WM, WN, STAGES, CLUSTER, BAND, EMPTY>(M, N, K, alpha, A, B, beta, C, map_a, map_b);
}
