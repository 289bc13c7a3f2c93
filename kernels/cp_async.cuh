// cp.async (compute capability 8.0 and newer): copies from global to shared memory that bypass the
// registers, grouped so that a thread can wait for the oldest group while later ones are in flight.
// Used by the tensor-core kernels 11 and 12 (09 keeps its own copy until its next full re-record).

__device__ __forceinline__ unsigned smem_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// Copy four consecutive floats of a rows x cols matrix at (row, col) into dst, zeros outside it.
__device__ __forceinline__ void copy4_async(float* dst, const float* __restrict__ src, int row, int col, int rows,
                                            int cols, bool vec) {
  if (vec) {  // cols % 4 == 0: the group lies wholly inside or outside the matrix
    const bool inside = row < rows && col < cols;
    const float* p = inside ? src + row * cols + col : src;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_address(dst)), "l"(p),
                 "r"(inside ? 16 : 0));
    return;
  }
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const bool inside = row < rows && col + q < cols;
    const float* p = inside ? src + row * cols + col + q : src;
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_address(dst + q)), "l"(p),
                 "r"(inside ? 4 : 0));
  }
}

__device__ __forceinline__ void commit_copies() { asm volatile("cp.async.commit_group;\n" ::); }

template <int PENDING>
__device__ __forceinline__ void wait_copies() { asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING)); }
