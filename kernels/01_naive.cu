// Step 1: naive SGEMM, one thread per element of C.
//
// Contract shared by every kernel of the book (row-major, like NumPy):
//   C[M x N] = alpha * A[M x K] @ B[K x N] + beta * C, with C not read when beta == 0
//   (BLAS semantics, so an uninitialised or NaN-poisoned C is never used).
// A block is BLOCK*BLOCK threads covering a BLOCK x BLOCK tile of C.
// Neighbouring threads of a warp take neighbouring *rows* of C: their loads of A
// and their stores to C are K and N floats apart, so every access of a warp is
// split into up to 32 separate memory transactions. Chapter 1 measures the cost.
template <int BLOCK>
__global__ void __launch_bounds__(BLOCK * BLOCK)
sgemm_naive(int M, int N, int K, float alpha, const float* __restrict__ A,
            const float* __restrict__ B, float beta, float* __restrict__ C) {
  const int row = blockIdx.y * BLOCK + threadIdx.x % BLOCK;  // fast-moving index -> row
  const int col = blockIdx.x * BLOCK + threadIdx.x / BLOCK;
  if (row >= M || col >= N) return;  // tail of a matrix that is not a multiple of BLOCK

  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];

  float* c = &C[row * N + col];
  *c = beta == 0.0f ? alpha * acc : alpha * acc + beta * *c;
}
