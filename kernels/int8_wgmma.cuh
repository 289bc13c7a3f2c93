// The INT8 GEMM of kernels 15 and 16 (sm_90a): for each of `batches` pairs of int8 matrices, the int32 sums
// C = A B^T, with A (M x K) and B^T (N x K) both K-major (rows of k bytes), the pairs stored one after another and
// read through 3-D tensor maps (k, row, matrix). Kernel 14's pipeline, on integers:
// - the producer warpgroup gives its registers away; one of its threads copies, per 128-deep step, a box of A
//   (BM rows x 128 bytes) and one of B^T (BN rows x 128 bytes) with the 128-byte swizzle into a ring of STAGES
//   stages. `full` mbarriers count the bytes in; `empty` ones count the consumer warps (of every block of the
//   cluster) that no longer read a stage.
// - CONSUMERS warpgroups take 64 rows of the tile each and multiply with both operands in shared memory: four
//   wgmma m64nBNk32 per step, one step's group in flight while the next stage is awaited.
// - One block per SM walks the work items (matrix, tile) in bands of GROUP tile-rows, so one launch does every product
//   of a batch and their last wave is shared; CLUSTER = 2 stacks two blocks along M that copy half of B^T's box each
//   and multicast it into both.
// The int32 sums go to an epilogue, called by each consumer warpgroup for its 64 rows: `Epilogue::WARP_SMEM` bytes of
// shared memory per consumer warp, after the stages, are its own, and `drain` runs once each consumer thread is done.
#include "cp_async.cuh"
#include "wgmma.cuh"
#include "wgmma_s8.cuh"
#include "ws_pipeline.cuh"

constexpr int S8_BK = 128;  // k per step: one row of the 128-byte swizzle, four wgmmas of 32

template <int BN, int CONSUMERS, int STAGES>
struct S8Tiles {
  static constexpr int BM = 64 * CONSUMERS;
  static constexpr unsigned A_BYTES = BM * S8_BK, B_BYTES = BN * S8_BK, STAGE_BYTES = A_BYTES + B_BYTES;
  static constexpr unsigned SMEM = STAGES * (STAGE_BYTES + 16) + 1024;  // two mbarriers a stage, 1024 to align
};  // (plus the epilogue's)

template <int BN, int CONSUMERS, int STAGES, int CLUSTER, int GROUP, class Epilogue>
__device__ __forceinline__ void s8_products(int M, int N, int K, int batches, const void* __restrict__ map_a,
                                            const void* __restrict__ map_b, const Epilogue& epilogue) {
  using T = S8Tiles<BN, CONSUMERS, STAGES>;
  extern __shared__ unsigned char smem_raw[];
  const unsigned base = (smem_address(smem_raw) + 1023) & ~1023u;  // the swizzle repeats every 1024 bytes
  const unsigned out = base + STAGES * T::STAGE_BYTES, full0 = out + CONSUMERS * 4 * Epilogue::WARP_SMEM,
                 empty0 = full0 + 8 * STAGES;
  const unsigned rank = CLUSTER > 1 ? cluster_rank() : 0;
  const int wg = threadIdx.x / 128, warp = threadIdx.x / 32 % 4, lane = threadIdx.x % 32;
  const int rows = ((M + T::BM - 1) / T::BM + CLUSTER - 1) / CLUSTER, cols = (N + BN - 1) / BN;
  const int tiles = rows * cols, items = tiles * batches, steps = (K + S8_BK - 1) / S8_BK;
  const int first = blockIdx.x + gridDim.x * (blockIdx.y / CLUSTER), stride = gridDim.x * (gridDim.y / CLUSTER);

  if (threadIdx.x == 0) {
    tensormap_acquire(map_a), tensormap_acquire(map_b);
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(full0 + 8 * s, 1);
      mbar_init(empty0 + 8 * s, CONSUMERS * 4 * CLUSTER);
    }
    mbar_init_fence();
  }
  if (CLUSTER > 1) cluster_sync(); else __syncthreads();  // partners' barriers exist before any multicast

  if (wg == 0) {  // the producer
    registers_down<Roles<CONSUMERS>::PRODUCER>();
    if (warp == 0 && lane == 0) {
      int it = 0;
      for (int item = first; item < items; item += stride) {
        const int matrix = item / tiles;
        const int2 at = banded_tile<GROUP>(item % tiles, rows, cols);
        const int row0 = (at.x * CLUSTER + rank) * T::BM, col0 = at.y * BN;
        for (int step = 0; step < steps; ++step, ++it) {
          const unsigned s = it % STAGES, full = full0 + 8 * s, a = base + s * T::STAGE_BYTES, b = a + T::A_BYTES;
          mbar_wait(empty0 + 8 * s, ((it / STAGES) & 1) ^ 1);  // a fresh barrier passes parity 1 at once
          mbar_arrive_expect(full, T::STAGE_BYTES);
          tma_load_3d(a, map_a, step * S8_BK, row0, matrix, full);
          if (CLUSTER > 1)
            tma_load_3d_multicast(b + rank * (T::B_BYTES / CLUSTER), map_b, step * S8_BK, col0 + rank * (BN / CLUSTER),
                                  matrix, full, (1 << CLUSTER) - 1);
          else
            tma_load_3d(b, map_b, step * S8_BK, col0, matrix, full);
        }
      }
    }
  } else {  // a consumer: 64 rows of the tile
    registers_up<Roles<CONSUMERS>::CONSUMER>();
    const int c = wg - 1;
    auto release = [&](int it) {  // this warp's wgmmas no longer read stage it % STAGES: tell every producer
      __syncwarp();
      if (lane < CLUSTER) mbar_arrive_remote(empty0 + 8 * (it % STAGES), lane);
    };
    int acc[BN / 2];
    int it = 0;
    for (int item = first; item < items; item += stride) {
      const int matrix = item / tiles;
      const int2 at = banded_tile<GROUP>(item % tiles, rows, cols);
      const int row0 = (at.x * CLUSTER + rank) * T::BM, col0 = at.y * BN;
      for (int step = 0; step < steps; ++step, ++it) {
        const unsigned s = it % STAGES, a = base + s * T::STAGE_BYTES + c * 64 * S8_BK, b = base + s * T::STAGE_BYTES + T::A_BYTES;
        mbar_wait(full0 + 8 * s, (it / STAGES) & 1);
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < S8_BK / 32; ++kk)
          WgmmaS8<BN>::ss(acc, k_major_desc(a + 32 * kk), k_major_desc(b + 32 * kk), step > 0 || kk > 0);
        wgmma_commit();
        wgmma_wait<1>();  // the step before is done: its stage can be refilled
        if (step > 0) release(it - 1);
      }
      wgmma_wait<0>();
      pin(acc);
      release(it - 1);
      epilogue(acc, matrix, row0 + 64 * c, col0, warp, lane, out + (4 * c + warp) * Epilogue::WARP_SMEM);
    }
    epilogue.drain(lane);
  }
  if (CLUSTER > 1) cluster_sync();  // no block leaves while a partner may still arrive on its barriers
}
