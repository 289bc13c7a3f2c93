// Helpers shared by the tiled kernels (03 onward): copies from global to shared memory and the
// epilogue that writes C. Same contract everywhere: row-major A (M x K), B (K x N), C (M x N),
// C = alpha * A @ B + beta * C, and C is not read when beta == 0.

// Copy the ROWS x COLS tile whose top-left element is (row0, col0) of a rows x cols matrix into
// shared memory, with zeros outside the matrix. Consecutive threads take consecutive addresses.
template <int ROWS, int COLS, int THREADS>
__device__ __forceinline__ void load_tile(float (&dst)[ROWS][COLS], const float* __restrict__ src,
                                          int row0, int col0, int rows, int cols) {
  for (int i = threadIdx.x; i < ROWS * COLS; i += THREADS) {
    const int r = i / COLS, c = i % COLS;
    dst[r][c] = (row0 + r < rows && col0 + c < cols) ? src[(row0 + r) * cols + col0 + c] : 0.0f;
  }
}

__device__ __forceinline__ float epilogue(float alpha, float acc, float beta, float old) {
  return beta == 0.0f ? alpha * acc : alpha * acc + beta * old;
}

__device__ __forceinline__ void store_c(float* __restrict__ C, int row, int col, int M, int N,
                                        float alpha, float beta, float acc) {
  if (row < M && col < N) C[row * N + col] = epilogue(alpha, acc, beta, beta == 0.0f ? 0.0f : C[row * N + col]);
}

// Four consecutive floats of a rows x cols row-major matrix from (row, col), col a multiple of 4;
// zeros outside it. One 128-bit load when `vec`: the caller guarantees cols % 4 == 0 and a 16-byte
// aligned base, so every such group is aligned and lies wholly inside or outside the matrix.
// Otherwise four guarded scalar loads (any shape, never a misaligned access).
__device__ __forceinline__ float4 load4(const float* __restrict__ src, int row, int col, int rows,
                                        int cols, bool vec) {
  if (row >= rows) return make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  const float* p = src + row * cols + col;
  if (vec) return col < cols ? *reinterpret_cast<const float4*>(p) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  return make_float4(col < cols ? p[0] : 0.0f, col + 1 < cols ? p[1] : 0.0f,
                     col + 2 < cols ? p[2] : 0.0f, col + 3 < cols ? p[3] : 0.0f);
}

// Write four consecutive outputs of row `row` from column `col`: one 128-bit store when `vec`.
__device__ __forceinline__ void store4(float* __restrict__ C, int row, int col, int M, int N,
                                       float alpha, float beta, float4 acc, bool vec) {
  if (row >= M || col >= N) return;
  float* p = C + row * N + col;
  if (vec) {
    const float4 old = beta == 0.0f ? make_float4(0.0f, 0.0f, 0.0f, 0.0f) : *reinterpret_cast<const float4*>(p);
    *reinterpret_cast<float4*>(p) = make_float4(epilogue(alpha, acc.x, beta, old.x), epilogue(alpha, acc.y, beta, old.y),
                                                epilogue(alpha, acc.z, beta, old.z), epilogue(alpha, acc.w, beta, old.w));
    return;
  }
  const float v[4] = {acc.x, acc.y, acc.z, acc.w};
  for (int q = 0; q < 4 && col + q < N; ++q) p[q] = epilogue(alpha, v[q], beta, beta == 0.0f ? 0.0f : p[q]);
}
