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

// The successive ROWS x COLS tiles of a row-major matrix that a block walks through along K: A's
// tiles step right by COLS columns (ALONG_ROWS false), B's step down by ROWS rows (ALONG_ROWS true).
// Each thread copies the same float4 slots of every tile, rows ROW_STEP apart, so it keeps one pointer
// and how far the matrix reaches past it; a copy then costs an offset, a compare and the cp.async,
// with zeros copied in outside the matrix (src-size 0 reads nothing, so the pointer may lie past it).
// VEC: the matrix's rows are whole float4s (cols % 4 == 0, 16-byte aligned base), copied 16 bytes at
// a time; otherwise 4 bytes at a time. A template parameter, so the copies of the common case are
// straight-line code with no per-copy test.
template <int ROWS, int COLS, int THREADS, bool ALONG_ROWS, bool VEC>
class TileStream {
  static constexpr int PER_ROW = COLS / 4, ROW_STEP = THREADS / PER_ROW;
  static_assert(THREADS % PER_ROW == 0, "each thread keeps one column slot in every tile");
  const float* p_;        // this thread's first float4 of the next tile
  int r_, c_, ld_;        // its row and column in the tile; the matrix's row length
  int rows_, cols_;       // rows and columns of the matrix from p_ on (<= 0: outside)

 public:
  __device__ __forceinline__ TileStream(const float* __restrict__ m, int rows, int cols, int row0, int col0)
      : r_(threadIdx.x / PER_ROW), c_(threadIdx.x % PER_ROW * 4), ld_(cols) {
    p_ = m + static_cast<long long>(row0 + r_) * cols + col0 + c_;
    rows_ = rows - row0 - r_, cols_ = cols - col0 - c_;
  }

  // Start copying the next tile; dst(r, c) is where its element (r, c) goes in shared memory.
  template <class Dst>
  __device__ __forceinline__ void issue(Dst dst) {
    copy(dst);
    if (ALONG_ROWS)
      p_ += static_cast<long long>(ROWS) * ld_, rows_ -= ROWS;
    else
      p_ += COLS, cols_ -= COLS;
  }

 private:
  template <class Dst>
  __device__ __forceinline__ void copy(Dst dst) {
#pragma unroll
    for (int it = 0; it * ROW_STEP < ROWS; ++it) {
      const int dr = it * ROW_STEP;
      if (ROWS % ROW_STEP != 0 && r_ + dr >= ROWS) break;
      const float* src = p_ + static_cast<long long>(dr) * ld_;
      float* to = dst(r_ + dr, c_);
      const bool row_in = dr < rows_;
      if (VEC) {
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_address(to)), "l"(src),
                     "r"(row_in && cols_ > 0 ? 16 : 0));
      } else {
#pragma unroll
        for (int q = 0; q < 4; ++q)
          asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_address(to + q)), "l"(src + q),
                       "r"(row_in && q < cols_ ? 4 : 0));
      }
    }
  }
};

__device__ __forceinline__ void commit_copies() { asm volatile("cp.async.commit_group;\n" ::); }

template <int PENDING>
__device__ __forceinline__ void wait_copies() { asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING)); }
