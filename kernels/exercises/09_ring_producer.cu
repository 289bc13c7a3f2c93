// Chapter 9's exercise: kernel 14's pipeline (TF32, B^T in registers, every thread storing its own outputs) with
// its producer keeping its place in the ring as a stage and the parity of its trip round the ring, advanced after
// each step, as CUTLASS's pipelines do, instead of working both out from a count of steps. The consumers still count
// their steps (`it`), as in kernel 14: the two must agree on every step's stage and trip.
// Row-major A, B and C, the book's contract, then A's and B's tensor maps.
// gl.submit(source, "ring_producer") checks it.
// Kernel 14's file, for its helpers: its own kernels are templates that nothing here instantiates.
#include "14_tf32_wgmma_ws.cu"

template <int BM, int CONSUMERS, int STAGES, int CLUSTER, int PERSIST, int GROUP>
__global__ void __launch_bounds__(128 * (CONSUMERS + 1), 1) __cluster_dims__(1, CLUSTER, 1)
sgemm_ring_producer(int M, int N, int K, float alpha, const float* __restrict__ A, const float* __restrict__ B,
                    float beta, float* __restrict__ C, const void* __restrict__ map_a, const void* __restrict__ map_b) {
  constexpr int BN = 64 * CONSUMERS, BK = 32, KK = BK / 8, NACC = BM / 2, BOXES = BN / 32;
  constexpr unsigned A_BYTES = BM * BK * 4, BOX_BYTES = BK * 32 * 4, STAGE_BYTES = A_BYTES + BOXES * BOX_BYTES;
  using Roles = WarpRoles<CONSUMERS>;
  extern __shared__ unsigned char smem_raw[];

  const unsigned base = (smem_address(smem_raw) + 1023) & ~1023u;  // the swizzle repeats every 1024 bytes
  const unsigned full0 = base + STAGES * STAGE_BYTES, empty0 = full0 + 8 * STAGES;
  const unsigned rank = CLUSTER > 1 ? cluster_rank() : 0;
  const int wg = threadIdx.x / 128, warp = threadIdx.x / 32 % 4, lane = threadIdx.x % 32;

  const int rows = ((M + BM - 1) / BM + CLUSTER - 1) / CLUSTER, cols = (N + BN - 1) / BN, tiles = rows * cols;
  const int first_tile = blockIdx.x + gridDim.x * (blockIdx.y / CLUSTER), tile_step = gridDim.x * (gridDim.y / CLUSTER);
  const int steps = (K + BK - 1) / BK;

  if (threadIdx.x == 0) {
    tensormap_acquire(map_a), tensormap_acquire(map_b);
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(full0 + 8 * s, 1);  // the producer's arrival; the copy engine counts the bytes
      mbar_init(empty0 + 8 * s, CONSUMERS * 4 * CLUSTER);  // every consumer warp of the cluster, when done with it
    }
    mbar_init_fence();
  }
  if (CLUSTER > 1) cluster_sync(); else __syncthreads();  // partners' barriers exist before any multicast

  if (wg == 0) {  // the producer warpgroup
    set_max_registers_dec<Roles::PRODUCER_REGS>();
    if (warp == 0 && lane == 0) {  // copies
      int stage = 0, phase = 0;  // where the next step's copies go, and the parity of this trip round the ring
      for (int t = first_tile; t < tiles; t += tile_step) {
        const int2 at = tile_at<GROUP>(t, rows, cols);
        const int row0 = (at.x * CLUSTER + rank) * BM, col0 = at.y * BN;
        for (int step = 0; step < steps; ++step) {
          const unsigned full = full0 + 8 * stage, a = base + stage * STAGE_BYTES, b = a + A_BYTES;
          mbar_wait(empty0 + 8 * stage, phase ^ 1);  // the trip before was released (a fresh barrier: at once)
          mbar_arrive_expect(full, STAGE_BYTES);  // A, and every box of B: the partner multicasts its half here too
          tma_load(a, map_a, step * BK, row0, full);
#pragma unroll
          for (int box = rank; box < BOXES; box += CLUSTER)
            if (CLUSTER > 1)
              tma_load_multicast(b + box * BOX_BYTES, map_b, col0 + 32 * box, step * BK, full, (1 << CLUSTER) - 1);
            else tma_load(b + box * BOX_BYTES, map_b, col0 + 32 * box, step * BK, full);
          if (++stage == STAGES) stage = 0, phase ^= 1;  // past the last stage: the next trip, the other parity
        }
      }
    }
  } else {  // a consumer warpgroup: 64 columns of the block's C tile, as in kernel 14
    set_max_registers_inc<Roles::CONSUMER_REGS>();
    const int g = lane / 4, t = lane % 4, c = wg - 1;
    const int chunk = g / 2 % 2 * 4 + g / 4 + 2 * (warp % 2), box = 2 * c + warp / 2;
    const int n_of_lane = 32 * box + 4 * chunk + 2 * (g % 2);
    auto b_at = [&](int k) { return A_BYTES + box * BOX_BYTES + k * 128 + ((chunk ^ k) & 7) * 16 + g % 2 * 8; };
    const unsigned b_lo = b_at(t), b_hi = b_at(t + 4);  // rows t and t + 4 of the box; k8 slice kk adds 8 kk rows
    auto release = [&](int it) {  // this warp's wgmmas no longer read stage it % STAGES: tell every producer
      __syncwarp();
      if (lane < CLUSTER) mbar_arrive_remote(empty0 + 8 * (it % STAGES), lane);
    };

    float acc[NACC];
    int it = 0;
    for (int tile = first_tile; tile < tiles; tile += tile_step) {
      const int2 at = tile_at<GROUP>(tile, rows, cols);
      const int row0 = (at.x * CLUSTER + rank) * BM, col0 = at.y * BN;
      auto run_step = [&](int step, unsigned (&frag)[KK][4]) {
        const unsigned s = it % STAGES, stage = base + s * STAGE_BYTES;
        mbar_wait(full0 + 8 * s, (it / STAGES) & 1);
#pragma unroll
        for (int kk = 0; kk < KK; ++kk) {
          lds_pair(frag[kk][0], frag[kk][1], stage + b_lo + kk * 8 * 128);
          lds_pair(frag[kk][2], frag[kk][3], stage + b_hi + kk * 8 * 128);
        }
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < KK; ++kk)
          Wgmma<BM>::rs(acc, frag[kk], k_major_desc(stage + 32 * kk), step > 0 || kk > 0);
        wgmma_commit();
        wgmma_wait<1>();  // the step before is done: its stage can be refilled
        if (step > 0) release(it - 1);
        ++it;
      };
      unsigned frag0[KK][4], frag1[KK][4];
      int step = 0;
      for (; step + 1 < steps; step += 2) {  // pairs, so that each fragment set is written only after its wgmmas ended
        run_step(step, frag0);
        run_step(step + 1, frag1);
      }
      if (step < steps) run_step(step, frag0);
      wgmma_wait<0>();
      pin(acc);
      release(it - 1);
      const int n = col0 + n_of_lane;
#pragma unroll
      for (int j = 0; j < NACC / 4; ++j) {
        const int m = row0 + 8 * j + 2 * t;
        store_pair(C, m, n, M, N, alpha, beta, acc[4 * j], acc[4 * j + 2]);
        store_pair(C, m + 1, n, M, N, alpha, beta, acc[4 * j + 1], acc[4 * j + 3]);
      }
    }
  }
  if (CLUSTER > 1) cluster_sync();  // no block leaves while a partner may still arrive on its barriers
}
