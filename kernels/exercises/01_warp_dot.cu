// Chapter 1's exercise: one warp per output of C, for a B stored column-major (as its transpose).
//
// B(k, col) sits at B[col * K + k]: a column of B is contiguous, like a row of A (A and C are row-major). One thread
// per output cannot read both operands coalesced, so here the 32 lanes of a warp share one output: each adds a part of
// its dot product, and warp shuffles bring the parts together. A block of 32 * WARPS threads computes WARPS
// consecutive outputs of one row of C: the grid has one row of blocks per row of C (blockIdx.y), and blockIdx.x counts
// groups of WARPS columns. gl.submit(source, "warp_dot") checks it with B column-major.
template <int WARPS>
__global__ void __launch_bounds__(32 * WARPS)
sgemm_warp_dot(int M, int N, int K, float alpha, const float* __restrict__ A,
               const float* __restrict__ B, float beta, float* __restrict__ C) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int row = blockIdx.y, col = blockIdx.x * WARPS + warp;  // the output of this thread's warp
  if (col >= N) return;  // the whole warp (its lanes share col), so the shuffles below still have all 32 lanes

  float acc = 0.0f;
  for (int k = lane; k < K; k += 32) acc += A[row * K + k] * B[col * K + k];  // lanes on consecutive k: coalesced
  for (int offset = 16; offset > 0; offset /= 2) acc += __shfl_down_sync(0xffffffff, acc, offset);

  float* c = &C[row * N + col];
  if (lane == 0) *c = beta == 0.0f ? alpha * acc : alpha * acc + beta * *c;  // only lane 0 holds the whole sum
}
