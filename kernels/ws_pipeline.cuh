// Warp-specialised, persistent pipelines on Hopper (sm_90a) for kernels 15 and 16: a producer warpgroup hands its
// registers to the consumers, tiles are walked in bands, and TMA copies boxes of a batch of matrices (3-D tensor
// maps: k innermost, then rows, then which matrix) into shared memory, counting the bytes onto an mbarrier.
// Kernel 14 keeps its own copies of the first helpers until it is next re-recorded.
#include "tma.cuh"

// setmaxnreg: the counts are multiples of 8 in 24..256, and every warp of a warpgroup must execute it.
template <int REGS>
__device__ __forceinline__ void registers_down() { asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(REGS)); }
template <int REGS>
__device__ __forceinline__ void registers_up() { asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(REGS)); }

// Registers per thread of a producer warpgroup and CONSUMERS consumer warpgroups sharing one SM's 64 K.
template <int CONSUMERS>
struct Roles {
  static constexpr int PRODUCER = 40;
  static constexpr int FREE = (65536 / 128 - PRODUCER) / CONSUMERS / 8 * 8;
  static constexpr int CONSUMER = FREE < 240 ? FREE : 240;
};

// Tile t of a rows x cols grid of (cluster) tiles, taken in bands of GROUP rows walked column by column, so that the
// tiles in flight at once share rows of A and columns of B in L2: its (row, column).
template <int GROUP>
__device__ __forceinline__ int2 banded_tile(int t, int rows, int cols) {
  const int first = t / (GROUP * cols) * GROUP, band = min(GROUP, rows - first), within = t % (GROUP * cols);
  return make_int2(first + within % band, within / band);
}

// The box of `map` at (c0 innermost, c1, c2) into this block's shared memory at `dst`.
__device__ __forceinline__ void tma_load_3d(unsigned dst, const void* map, int c0, int c1, int c2, unsigned bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\n"
      ::"r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(bar) : "memory");
}

// The same box into offset `dst` of every block of the cluster in `mask`, each block's barrier at `bar` counting.
__device__ __forceinline__ void tma_load_3d_multicast(unsigned dst, const void* map, int c0, int c1, int c2,
                                                      unsigned bar, unsigned short mask) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%2, %3, %4}], [%5], %6;\n"
      ::"r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(bar), "h"(mask) : "memory");
}

// TMA stores: the box of `map` at (c0 innermost, c1) from this block's shared memory at `src`, clipped to the
// tensor; each thread's stores form bulk groups that it commits and waits for.
__device__ __forceinline__ void tma_store_2d(const void* map, int c0, int c1, unsigned src) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n"
               ::"l"(map), "r"(c0), "r"(c1), "r"(src) : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
// Until at most PENDING of this thread's groups still read their shared memory.
template <int PENDING>
__device__ __forceinline__ void bulk_wait_read() { asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(PENDING) : "memory"); }
