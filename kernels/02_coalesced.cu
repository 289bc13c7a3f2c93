// Step 2: coalesced SGEMM. Same arithmetic as step 1; only the thread-to-element
// mapping changes.
//
// Neighbouring threads of a warp now take neighbouring *columns* of C. In every
// iteration the warp reads one element of A (the same address for all lanes: a
// broadcast), 32 consecutive floats of B (one 128-byte line) and finally writes
// 32 consecutive floats of C. Nothing else differs from 01_naive.cu.
template <int BLOCK>
__global__ void __launch_bounds__(BLOCK * BLOCK)
sgemm_coalesced(int M, int N, int K, float alpha, const float* __restrict__ A,
                const float* __restrict__ B, float beta, float* __restrict__ C) {
  const int row = blockIdx.y * BLOCK + threadIdx.x / BLOCK;
  const int col = blockIdx.x * BLOCK + threadIdx.x % BLOCK;  // fast-moving index -> column
  if (row >= M || col >= N) return;

  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];

  float* c = &C[row * N + col];
  *c = beta == 0.0f ? alpha * acc : alpha * acc + beta * *c;
}
