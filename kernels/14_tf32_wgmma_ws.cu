// Step 14: Hopper's own pipeline for the wgmma kernels of step 12 (sm_90a): warp specialisation, TMA and
// mbarrier rings, a persistent grid, clusters and a grouped tile order.
//
// Step 12 has every thread copy with cp.async and the whole block meet at a barrier every step; here each
// warpgroup has one job:
// - The producer (warpgroup 0) gives most of its registers away (setmaxnreg) and one of its threads issues
//   the TMA copies: per 32-deep step one box of A (BM rows x 32 floats) and BN / 32 boxes of B (32 x 32),
//   into a ring of STAGES stages. Each stage has a `full` mbarrier (the copy engine counts the bytes in) and
//   an `empty` one (each consumer warp of the cluster arrives when its wgmmas no longer read the stage).
//   Nobody waits at a block-wide barrier.
// - CONSUMERS warpgroups multiply, each 64 columns of C: as in step 12 they compute C^T = B^T A^T with A's
//   tile (K-major, swizzled by TMA) as wgmma's shared-memory operand and B^T in registers. A lane holds two
//   adjacent columns n, n + 1 of B per k (rows g and g + 8 of wgmma's 64), read with one 64-bit load from
//   the swizzled box; which columns a lane takes is ours to choose, so lane g takes 16-byte chunk
//   CH[g] = 0,0,4,4,1,1,5,5 (+2 for the odd warps) of a box: each half-warp covers 32 banks once.
// - PERSIST: one block per SM walks the tiles (each cluster takes every G-th), so a tile's epilogue
//   overlaps the copies of the next; else one block per tile. The device code is the same either way (its tile loop
//   takes every G-th tile of whatever grid it gets): the host reads PERSIST to size the grid (`spec.persistent`),
//   and it stays a template parameter so that the two launches are two instances, recorded apart.
// - CLUSTER = 2: two blocks stacked along M share B's tile: each copies half the boxes and TMA multicasts
//   them into both, so L2 hands out B once per pair. CLUSTER = -2: two blocks side by side along N share A's
//   tile instead: each copies half of its rows (a box of BM / 2 rows) and multicasts it. A's tile is the larger
//   (BM = 256 rows against 128 columns of B), so the pair reads fewer bytes from L2.
// - GROUP: tiles are taken in bands of GROUP cluster-rows, column by column, so the tiles in flight share
//   rows of A and columns of B in L2.
// 3xTF32 (SPLIT): the producer's three idle warps split each A tile into big and small TF32 parts as it
// lands (a third mbarrier, `ready`, tells the consumers); the consumers split their B fragments in registers
// and, as in step 12, sum the three products of SUM steps in a fresh accumulator that is added to the running one
// in FP32 (the tensor cores' own accumulation truncates; fewer, longer sums wait less often for the wgmmas).
// SPLITTER = 1 moves that split to the consumers instead: each splits its share of the tile once it lands, and
// they meet at a barrier of their own before the wgmmas read it (step 12's way, on this pipeline).
// BSMEM (TF32): the producer's idle warps also transpose each B box into a K-major, swizzled B^T tile, so both
// wgmma operands come from shared memory and the consumers load no fragments.
// STORE = 1: the epilogue goes through shared memory, 32 rows of C at a time in two alternating buffers per
// consumer, and one thread hands each to a TMA store; else every thread stores its pairs of C itself.
#include "cp_async.cuh"
#include "tf32.cuh"
#include "tiles.cuh"
#include "tma.cuh"
#include "wgmma.cuh"
#include "wgmma_ss.cuh"

template <int CONSUMERS>
struct WarpRoles {
  static constexpr int PRODUCER_REGS = 40;  // setmaxnreg counts are multiples of 8 in 24..256
  // the rest of the 64 K registers of the SM go to the consumers (one block per SM)
  static constexpr int FREE = (65536 / 128 - PRODUCER_REGS) / CONSUMERS / 8 * 8;
  static constexpr int CONSUMER_REGS = FREE < 240 ? FREE : 240;
};

template <int REGS>
__device__ __forceinline__ void set_max_registers_dec() { asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(REGS)); }
template <int REGS>
__device__ __forceinline__ void set_max_registers_inc() { asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(REGS)); }

// Two consecutive 32-bit words of shared memory (kernel 13 has the same load; they fold into tma.cuh when 13 is
// next re-recorded).
__device__ __forceinline__ void lds_pair(unsigned& x, unsigned& y, unsigned address) {
  asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];\n" : "=r"(x), "=r"(y) : "r"(address));
}

__device__ __forceinline__ void mbar_arrive_local(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}

// The warpgroup's threads (128 of them, named barrier `id` > 0) meet; the rest of the block runs on.
__device__ __forceinline__ void warpgroup_sync(int id) { asm volatile("bar.sync %0, 128;\n" ::"r"(id) : "memory"); }

// TMA stores (tma.cuh has the loads; these fold into it when kernel 13 is next re-recorded): the box of `map` at
// (c0 innermost, c1) from this block's shared memory at `src`, clipped to the tensor; each thread's stores form
// bulk groups it commits and waits for.
__device__ __forceinline__ void tma_store(const void* map, int c0, int c1, unsigned src) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n"
               ::"l"(map), "r"(c0), "r"(c1), "r"(src) : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
// Until at most PENDING of this thread's groups still read their shared memory.
template <int PENDING>
__device__ __forceinline__ void bulk_wait_read() { asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(PENDING) : "memory"); }

// Outputs (row, col) and (row, col + 1) with alpha and beta applied; col is even and N a multiple of 4, so both or
// neither are in C. beta == 0 never reads C.
__device__ __forceinline__ float2 result_pair(const float* __restrict__ C, int row, int col, int M, int N, float alpha,
                                              float beta, float x, float y) {
  const float2 old = beta == 0.0f || row >= M || col >= N ? make_float2(0.0f, 0.0f)
                                                          : *reinterpret_cast<const float2*>(C + row * N + col);
  return make_float2(epilogue(alpha, x, beta, old.x), epilogue(alpha, y, beta, old.y));
}

__device__ __forceinline__ void store_pair(float* __restrict__ C, int row, int col, int M, int N, float alpha,
                                           float beta, float x, float y) {
  if (row < M && col < N) *reinterpret_cast<float2*>(C + row * N + col) = result_pair(C, row, col, M, N, alpha, beta, x, y);
}

// 3xTF32: float4s first, first + stride, ... of A's tile at `big` (A_BYTES) into big parts in place and small parts
// A_BYTES further on.
template <unsigned A_BYTES>
__device__ __forceinline__ void split_tile(float4* big, int first, int stride) {
  float4* small = big + A_BYTES / 16;
  for (int i = first; i < int(A_BYTES / 16); i += stride) {
    const float4 x = big[i];
    const Split sx(x.x), sy(x.y), sz(x.z), sw(x.w);
    big[i] = make_float4(__uint_as_float(sx.big), __uint_as_float(sy.big), __uint_as_float(sz.big),
                         __uint_as_float(sw.big));
    small[i] = make_float4(__uint_as_float(sx.small), __uint_as_float(sy.small), __uint_as_float(sz.small),
                           __uint_as_float(sw.small));
  }
}

// Consumer lanes take B's columns in an order that keeps their 64-bit loads free of bank conflicts: lane g of warp w
// of consumer c holds columns n, n + 1 of box 2c + w / 2, 16-byte chunk CH[g] + 2 (w % 2) with CH = 0,0,4,4,1,1,5,5,
// half g % 2, as wgmma rows 16 w + g and 16 w + g + 8. The row that holds the first column of chunk ch of box `box`
// (the next three: rows + 8, + 1, + 9), for B^T written to shared memory in the same order.
__device__ __forceinline__ int b_row(int box, int ch) {
  return 64 * (box / 2) + 16 * (2 * (box % 2) + ch / 2 % 2) + 4 * (ch % 2) + 2 * (ch / 4);
}

// Cluster tile t (of rows x cols) in bands of GROUP cluster-rows walked column by column: its cluster-row and column.
template <int GROUP>
__device__ __forceinline__ int2 tile_at(int t, int rows, int cols) {
  const int first = t / (GROUP * cols) * GROUP, band = min(GROUP, rows - first), within = t % (GROUP * cols);
  return make_int2(first + within % band, within / band);
}

template <int BM, int CONSUMERS, int STAGES, int CLUSTER, int PERSIST, int GROUP, bool SPLIT, int SUM, int SPLITTER,
          int BSMEM, int STORE, int PRODUCER = 1>
__device__ __forceinline__ void ws_block(int M, int N, int K, float alpha, float beta, float* __restrict__ C,
                                         const void* __restrict__ map_a, const void* __restrict__ map_b,
                                         const void* __restrict__ map_c) {
  constexpr int BN = 64 * CONSUMERS, BK = 32, KK = BK / 8, NACC = BM / 2, BOXES = BN / 32;
  constexpr unsigned A_BYTES = BM * BK * 4, BOX_BYTES = BK * 32 * 4;
  constexpr unsigned B_OFFSET = (SPLIT ? 2 : 1) * A_BYTES, BT_OFFSET = B_OFFSET + BOXES * BOX_BYTES;
  constexpr unsigned STAGE_BYTES = BT_OFFSET + (BSMEM ? BN * BK * 4 : 0);
  constexpr unsigned TX_BYTES = A_BYTES + BOXES * BOX_BYTES;  // what lands per stage: A and every box of B
  constexpr unsigned OUT_CHUNK = 32 * 64 * 4;                  // 32 rows of a consumer's 64 columns of C
  constexpr unsigned OUT_BYTES = STORE ? CONSUMERS * 2 * OUT_CHUNK : 0;
  constexpr bool HELPERS = (SPLIT && SPLITTER == 0) || BSMEM;  // the producer's warps 1-3 prepare each stage
  constexpr int SPLIT_BAR = 4;                                 // the consumers' barrier (1-3: one per consumer)
  using Roles = WarpRoles<CONSUMERS>;
  extern __shared__ unsigned char smem_raw[];

  const unsigned base = (smem_address(smem_raw) + 1023) & ~1023u;  // the swizzle repeats every 1024 bytes
  const unsigned full0 = base + STAGES * STAGE_BYTES + OUT_BYTES, empty0 = full0 + 8 * STAGES,
                 ready0 = empty0 + 8 * STAGES;
  auto generic = [&](unsigned address) { return smem_raw + (address - smem_address(smem_raw)); };
  constexpr int BLOCKS = CLUSTER < 0 ? -CLUSTER : CLUSTER;  // blocks per cluster
  constexpr bool SHARE_A = CLUSTER < -1;                      // side by side along N, sharing A (else along M, B)
  constexpr int ALONG_M = SHARE_A ? 1 : BLOCKS, ALONG_N = SHARE_A ? BLOCKS : 1;  // a cluster tile's blocks on M, N
  const unsigned rank = BLOCKS > 1 ? cluster_rank() : 0, rank_m = SHARE_A ? 0 : rank, rank_n = SHARE_A ? rank : 0;
  const int wg = threadIdx.x / 128, warp = threadIdx.x / 32 % 4, lane = threadIdx.x % 32;

  const int rows = ((M + BM - 1) / BM + ALONG_M - 1) / ALONG_M, cols = ((N + BN - 1) / BN + ALONG_N - 1) / ALONG_N,
            tiles = rows * cols;
  const int first_tile = blockIdx.x + gridDim.x * (blockIdx.y / BLOCKS), tile_step = gridDim.x * (gridDim.y / BLOCKS);
  const int steps = (K + BK - 1) / BK;

  if (threadIdx.x == 0) {
    tensormap_acquire(map_a), tensormap_acquire(map_b);
    if (STORE) tensormap_acquire(map_c);
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(full0 + 8 * s, 1);
      mbar_init(empty0 + 8 * s, CONSUMERS * 4 * BLOCKS);
      mbar_init(ready0 + 8 * s, 3);  // the helper warps
    }
    mbar_init_fence();
  }
  if (BLOCKS > 1) cluster_sync(); else __syncthreads();  // partners' barriers exist before any multicast

  if (PRODUCER && wg == 0) {  // the producer warpgroup
    set_max_registers_dec<Roles::PRODUCER_REGS>();
    if (warp == 0 && lane == 0) {  // copies
      int it = 0;
      for (int t = first_tile; t < tiles; t += tile_step) {
        const int2 at = tile_at<GROUP>(t, rows, cols);
        const int row0 = (at.x * ALONG_M + rank_m) * BM,
                  col0 = (at.y * ALONG_N + rank_n) * BN;
        for (int step = 0; step < steps; ++step, ++it) {
          const unsigned s = it % STAGES, full = full0 + 8 * s, a = base + s * STAGE_BYTES, b = a + B_OFFSET;
          mbar_wait(empty0 + 8 * s, ((it / STAGES) & 1) ^ 1);  // a fresh barrier passes parity 1 at once
          mbar_arrive_expect(full, TX_BYTES);
          if constexpr (SHARE_A) {  // this block's rows of A (a box of BM / BLOCKS rows) into every block's stage
            tma_load_multicast(a + rank * (A_BYTES / BLOCKS), map_a, step * BK, row0 + rank * (BM / BLOCKS), full,
                               (1 << BLOCKS) - 1);
#pragma unroll
            for (int box = 0; box < BOXES; ++box) tma_load(b + box * BOX_BYTES, map_b, col0 + 32 * box, step * BK, full);
          } else {
            tma_load(a, map_a, step * BK, row0, full);
#pragma unroll
            for (int box = rank; box < BOXES; box += BLOCKS)
              if (BLOCKS > 1) tma_load_multicast(b + box * BOX_BYTES, map_b, col0 + 32 * box, step * BK, full, (1 << BLOCKS) - 1);
              else tma_load(b + box * BOX_BYTES, map_b, col0 + 32 * box, step * BK, full);
          }
        }
      }
    } else if (HELPERS && warp > 0) {  // as each stage lands: split A (3xTF32) or transpose B (BSMEM)
      int it = 0;
      for (int t = first_tile; t < tiles; t += tile_step)
        for (int step = 0; step < steps; ++step, ++it) {
          const unsigned s = it % STAGES, stage = base + s * STAGE_BYTES;
          mbar_wait(full0 + 8 * s, (it / STAGES) & 1);
          if constexpr (SPLIT) {
            split_tile<A_BYTES>(reinterpret_cast<float4*>(generic(stage)), threadIdx.x - 32, 96);
          } else {
            // Lane k reads the 4 columns of 16-byte chunk ch of row k of a B box (swizzled) and writes them to column
            // k of the K-major B^T tile, in the rows the register path's lanes would hold them (so the epilogue is
            // the same): the 32 lanes of a warp hit 32 banks either way.
            for (int u = warp - 1; u < BOXES * 8; u += 3) {
              const int box = u / 8, ch = u % 8;
              const float4 x = *reinterpret_cast<const float4*>(generic(stage + B_OFFSET + box * BOX_BYTES) +
                                                                swizzled(lane, 4 * ch));
              const int row = b_row(box, ch);
              unsigned char* bt = generic(stage + BT_OFFSET);
              *reinterpret_cast<float*>(bt + swizzled(row, lane)) = x.x;
              *reinterpret_cast<float*>(bt + swizzled(row + 8, lane)) = x.y;
              *reinterpret_cast<float*>(bt + swizzled(row + 1, lane)) = x.z;
              *reinterpret_cast<float*>(bt + swizzled(row + 9, lane)) = x.w;
            }
          }
          fence_async_shared();  // the wgmmas read through the async proxy
          __syncwarp();
          if (lane == 0) mbar_arrive_local(ready0 + 8 * s);
        }
    }
  } else {  // a consumer warpgroup: 64 columns of the block's C tile
    if constexpr (PRODUCER) set_max_registers_inc<Roles::CONSUMER_REGS>();
    const int g = lane / 4, t = lane % 4, c = wg - PRODUCER;
    // This lane's B columns n, n + 1 of the block's tile (see b_row).
    const int chunk = g / 2 % 2 * 4 + g / 4 + 2 * (warp % 2), box = 2 * c + warp / 2;
    const int n_of_lane = 32 * box + 4 * chunk + 2 * (g % 2);
    auto b_at = [&](int k) { return B_OFFSET + box * BOX_BYTES + k * 128 + ((chunk ^ k) & 7) * 16 + g % 2 * 8; };
    const unsigned b_lo = b_at(t), b_hi = b_at(t + 4);  // rows t and t + 4 of the box; k8 slice kk adds 8 kk rows
    auto release = [&](int it) {  // this warp's wgmmas no longer read stage it % STAGES: tell every producer
      __syncwarp();
      if (lane < BLOCKS) mbar_arrive_remote(empty0 + 8 * (it % STAGES), lane);
    };
    // PRODUCER = 0 (chapter 9's step 1 in parts): no producer warpgroup; thread 0 issues the copies of fill `f` of the
    // ring (stage f % STAGES, once every warp released its last use) for step `step` of the tile at (row0, col0).
    auto fill = [&](int f, int row0, int col0, int step) {
      const unsigned s = f % STAGES, full = full0 + 8 * s, a = base + s * STAGE_BYTES, b = a + B_OFFSET;
      mbar_wait(empty0 + 8 * s, ((f / STAGES) & 1) ^ 1);  // a fresh barrier passes parity 1 at once
      mbar_arrive_expect(full, TX_BYTES);
      tma_load(a, map_a, step * BK, row0, full);
#pragma unroll
      for (int box = 0; box < BOXES; ++box) tma_load(b + box * BOX_BYTES, map_b, col0 + 32 * box, step * BK, full);
    };

    float acc[NACC], part[SPLIT ? NACC : 1];
    int it = 0, chunks = 0;
    for (int tile = first_tile; tile < tiles; tile += tile_step) {
      const int2 at = tile_at<GROUP>(tile, rows, cols);
      const int row0 = (at.x * ALONG_M + rank_m) * BM,
                  col0 = (at.y * ALONG_N + rank_n) * BN;
      // One step: wait for the stage, read B^T's fragments of its four k8 slices into `frag` (two sets alternate
      // between steps, so a step loads while the step before still multiplies with the other set).
      auto run_step = [&](int step, unsigned (&frag)[KK][4], unsigned (&small)[KK][4]) {
        const unsigned s = it % STAGES, stage = base + s * STAGE_BYTES;
        mbar_wait((HELPERS ? ready0 : full0) + 8 * s, (it / STAGES) & 1);
#pragma unroll
        for (int kk = 0; kk < (BSMEM ? 0 : KK); ++kk) {
          unsigned v[4];
          lds_pair(v[0], v[1], stage + b_lo + kk * 8 * 128);
          lds_pair(v[2], v[3], stage + b_hi + kk * 8 * 128);
#pragma unroll
          for (int q = 0; q < 4; ++q) {
            if constexpr (SPLIT) {
              const Split x(__uint_as_float(v[q]));
              frag[kk][q] = x.big, small[kk][q] = x.small;
            } else {
              frag[kk][q] = v[q];  // read as TF32: the 13 low mantissa bits are dropped
            }
          }
        }
        if constexpr (SPLIT && SPLITTER == 1) {  // this consumer's share of A's split, then every consumer's
          split_tile<A_BYTES>(reinterpret_cast<float4*>(generic(stage)), threadIdx.x - 128, CONSUMERS * 128);
          fence_async_shared();
          asm volatile("bar.sync %0, %1;\n" ::"n"(SPLIT_BAR), "n"(CONSUMERS * 128) : "memory");
        }
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < KK; ++kk) {
          const unsigned long long big_desc = k_major_desc(stage + 32 * kk);
          if constexpr (SPLIT) {  // the small corrections first, then the big product, into this step's own sum
            Wgmma<BM>::rs(part, frag[kk], k_major_desc(stage + A_BYTES + 32 * kk), step % SUM > 0 || kk > 0);
            Wgmma<BM>::rs(part, small[kk], big_desc, 1);
            Wgmma<BM>::rs(part, frag[kk], big_desc, 1);
          } else if constexpr (BSMEM) {  // this consumer's 64 rows of B^T, K-major
            WgmmaSS<BM>::ss(acc, k_major_desc(stage + BT_OFFSET + c * 64 * 128 + 32 * kk), big_desc, step > 0 || kk > 0);
          } else {
            Wgmma<BM>::rs(acc, frag[kk], big_desc, step > 0 || kk > 0);
          }
        }
        wgmma_commit();
        if constexpr (SPLIT) {
          if (step % SUM == SUM - 1 || step == steps - 1) {  // the sum is complete: into the running one
            wgmma_wait<0>();
            pin(part);
#pragma unroll
            for (int i = 0; i < NACC; ++i) acc[i] = step < SUM ? part[i] : acc[i] + part[i];
            if (step % SUM > 0) release(it - 1);
            release(it);
          } else {
            wgmma_wait<1>();
            if (step % SUM > 0) release(it - 1);
          }
        } else {
          wgmma_wait<1>();  // the step before is done: its stage can be refilled
          if (step > 0) release(it - 1);
          if constexpr (!PRODUCER) {  // refill it for STAGES steps on
            if (threadIdx.x == 0 && step > 0 && step - 1 + STAGES < steps) fill(it - 1 + STAGES, row0, col0, step - 1 + STAGES);
            __syncwarp();
          }
        }
        ++it;
      };
      if constexpr (!PRODUCER) {  // the tile's first STAGES steps
        if (threadIdx.x == 0)
          for (int f = 0; f < STAGES && f < steps; ++f) fill(it + f, row0, col0, f);
        __syncwarp();
      }
      unsigned frag0[KK][4], frag1[KK][4], small0[KK][4], small1[KK][4];
      int step = 0;
      for (; step + 1 < steps; step += 2) {  // pairs, so that each fragment set is written only after its wgmmas ended
        run_step(step, frag0, small0);
        run_step(step + 1, frag1, small1);
      }
      if (step < steps) run_step(step, frag0, small0);
      if (!SPLIT) {
        wgmma_wait<0>();
        pin(acc);
        release(it - 1);
      }
      // acc[4j + q]: wgmma row 16 warp + g (+ 8 for q >= 2) is column n (+ 1) of C, its column 8j + 2t (+ 1 for odd q)
      // is row m (+ 1): two float2 results per j.
      const int n = col0 + n_of_lane;
      if constexpr (STORE) {
        // 32 rows at a time into this consumer's two buffers, each two 32 x 32 boxes with the 128-byte swizzle
        // (the lane's two columns are in box warp / 2), one TMA store per box; a buffer is written again only once
        // the store from it two chunks ago has read it.
        const unsigned out0 = base + STAGES * STAGE_BYTES + c * 2 * OUT_CHUNK;
        const int col = n_of_lane % 32;
#pragma unroll
        for (int q = 0; q < BM / 32; ++q, ++chunks) {
          const unsigned out = out0 + (chunks & 1) * OUT_CHUNK;
          if (threadIdx.x % 128 == 0) bulk_wait_read<1>();
          warpgroup_sync(1 + c);
#pragma unroll
          for (int jj = 0; jj < 4; ++jj) {
            const int j = 4 * q + jj, r = 8 * jj + 2 * t, m = row0 + 8 * j + 2 * t;
            const float2 lo = result_pair(C, m, n, M, N, alpha, beta, acc[4 * j], acc[4 * j + 2]);
            const float2 hi = result_pair(C, m + 1, n, M, N, alpha, beta, acc[4 * j + 1], acc[4 * j + 3]);
            *reinterpret_cast<float2*>(generic(out + warp / 2 * 4096 + swizzled(r, col))) = lo;
            *reinterpret_cast<float2*>(generic(out + warp / 2 * 4096 + swizzled(r + 1, col))) = hi;
          }
          fence_async_shared();  // the TMA store reads through the async proxy
          warpgroup_sync(1 + c);
          if (threadIdx.x % 128 == 0) {
            tma_store(map_c, col0 + 64 * c, row0 + 32 * q, out);
            tma_store(map_c, col0 + 64 * c + 32, row0 + 32 * q, out + 4096);
            bulk_commit();
          }
        }
      } else {
#pragma unroll
        for (int j = 0; j < NACC / 4; ++j) {
          const int m = row0 + 8 * j + 2 * t;
          store_pair(C, m, n, M, N, alpha, beta, acc[4 * j], acc[4 * j + 2]);
          store_pair(C, m + 1, n, M, N, alpha, beta, acc[4 * j + 1], acc[4 * j + 3]);
        }
      }
    }
    if (STORE && threadIdx.x % 128 == 0) bulk_wait_read<0>();  // shared memory stays until the last store read it
  }
  if (BLOCKS > 1) cluster_sync();  // no block leaves while a partner may still arrive on its barriers
}

template <int BM, int CONSUMERS, int STAGES, int CLUSTER, int PERSIST, int GROUP, int BSMEM, int STORE>
__global__ void __launch_bounds__(128 * (CONSUMERS + 1), 1) __cluster_dims__(1, CLUSTER < 0 ? -CLUSTER : CLUSTER, 1)
sgemm_tf32_wgmma_ws(int M, int N, int K, float alpha, const float* __restrict__ A, const float* __restrict__ B,
                    float beta, float* __restrict__ C, const void* __restrict__ map_a, const void* __restrict__ map_b,
                    const void* __restrict__ map_c) {
  ws_block<BM, CONSUMERS, STAGES, CLUSTER, PERSIST, GROUP, false, 1, 0, BSMEM, STORE>(M, N, K, alpha, beta, C, map_a,
                                                                                     map_b, map_c);
}

template <int BM, int CONSUMERS, int STAGES, int CLUSTER, int PERSIST, int GROUP, int SUM, int SPLITTER, int STORE>
__global__ void __launch_bounds__(128 * (CONSUMERS + 1), 1) __cluster_dims__(1, CLUSTER < 0 ? -CLUSTER : CLUSTER, 1)
sgemm_3xtf32_wgmma_ws(int M, int N, int K, float alpha, const float* __restrict__ A, const float* __restrict__ B,
                      float beta, float* __restrict__ C, const void* __restrict__ map_a, const void* __restrict__ map_b,
                      const void* __restrict__ map_c) {
  ws_block<BM, CONSUMERS, STAGES, CLUSTER, PERSIST, GROUP, true, SUM, SPLITTER, 0, STORE>(M, N, K, alpha, beta, C,
                                                                                         map_a, map_b, map_c);
}

// Chapter 9's step 1 in parts: kernel 14 at that step's options (one block per tile, no cluster, row by row, threads
// store C), with (PRODUCER = 1) or without its producer warpgroup. Without one, the block is its consumers alone, at
// the registers ptxas gives them, and thread 0 issues the TMA copies into the same mbarrier ring between its own
// steps: TMA and the rings, without the specialisation.
template <int BM, int CONSUMERS, int STAGES, int CLUSTER, int PERSIST, int GROUP, int BSMEM, int STORE, int PRODUCER>
__global__ void __launch_bounds__(128 * (CONSUMERS + PRODUCER), 1)
sgemm_tf32_wgmma_ws_parts(int M, int N, int K, float alpha, const float* __restrict__ A, const float* __restrict__ B,
                          float beta, float* __restrict__ C, const void* __restrict__ map_a,
                          const void* __restrict__ map_b, const void* __restrict__ map_c) {
  static_assert(CLUSTER == 1 && PERSIST == 0 && BSMEM == 0 && STORE == 0, "step 1's options");
  ws_block<BM, CONSUMERS, STAGES, CLUSTER, PERSIST, GROUP, false, 1, 0, BSMEM, STORE, PRODUCER>(M, N, K, alpha, beta, C,
                                                                                                map_a, map_b, map_c);
}
