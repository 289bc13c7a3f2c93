// Chapter 1's exercise: the coalesced kernel for column-major matrices, the layout of BLAS and cuBLAS.
//
// Column-major: element (i, j) of a matrix with R rows sits at index i + j * R, so a *column* is contiguous.
// Everything else is the book's contract: C[M x N] = alpha * A[M x K] @ B[K x N] + beta * C, C not read when
// beta == 0, and a block of BLOCK*BLOCK threads per BLOCK x BLOCK tile of C (blockIdx.y counts tiles along M,
// blockIdx.x along N). gl.submit(source, "colmajor_coalesced") checks it on column-major A, B and C.
template <int BLOCK>
__global__ void __launch_bounds__(BLOCK * BLOCK)
sgemm_colmajor_coalesced(int M, int N, int K, float alpha, const float* __restrict__ A,
                         const float* __restrict__ B, float beta, float* __restrict__ C) {
  const int row = blockIdx.y * BLOCK + threadIdx.x % BLOCK;  // fast-moving index -> row: a column is contiguous
  const int col = blockIdx.x * BLOCK + threadIdx.x / BLOCK;
  if (row >= M || col >= N) return;

  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += A[k * M + row] * B[col * K + k];  // A(row, k) and B(k, col)

  float* c = &C[col * M + row];  // C(row, col)
  *c = beta == 0.0f ? alpha * acc : alpha * acc + beta * *c;
}
