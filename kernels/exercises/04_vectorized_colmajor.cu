// Chapter 4's exercise: the vectorized kernel when A and B arrive column-major, as BLAS and cuBLAS store them:
// A as the K x M row-major matrix A^T (element (m, k) at A[k * M + m]) and B as the N x K row-major matrix B^T
// (element (k, n) at B[n * K + k]). C stays row-major. The shared tiles are chapter 4's, As[k][m] and Bs[k][n],
// and so is everything after the copies. gl.submit(source, "vectorized_colmajor") checks it on these layouts.
#include "tiles.cuh"

template <int BM, int BN, int BK, int TM, int TN>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
sgemm_vectorized_colmajor(int M, int N, int K, float alpha, const float* __restrict__ A,
                          const float* __restrict__ B, float beta, float* __restrict__ C) {
  constexpr int THREADS = (BM / TM) * (BN / TN);
  __shared__ __align__(16) float As[BK][BM];
  __shared__ __align__(16) float Bs[BK][BN];

  // float4 accesses need rows of whole float4s (and load4's guards): A^T's rows hold M floats, B^T's K, C's N
  const bool vec_a = M % 4 == 0, vec_b = K % 4 == 0, vec_c = N % 4 == 0;
  constexpr int GROUP_STRIDE = BN / (TN / 4);
  const int tr = threadIdx.x / (BN / TN) * TM;
  const int tc = threadIdx.x % (BN / TN) * 4;
  const int row0 = blockIdx.y * BM;
  const int col0 = blockIdx.x * BN;

  float acc[TM][TN] = {};
  float a[TM], b[TN];
  for (int k0 = 0; k0 < K; k0 += BK) {
    for (int i = threadIdx.x; i < BM * BK / 4; i += THREADS) {
      const int r = i / (BM / 4), c = i % (BM / 4) * 4;  // a float4 of row k0 + r of A^T: column k0 + r of A
      *reinterpret_cast<float4*>(&As[r][c]) = load4(A, k0 + r, row0 + c, K, M, vec_a);  // already As[k][m]
    }
    for (int i = threadIdx.x; i < BK * BN / 4; i += THREADS) {
      const int r = i / (BK / 4), c = i % (BK / 4) * 4;  // a float4 of row col0 + r of B^T: k0 + c .. k0 + c + 3
      const float4 v = load4(B, col0 + r, k0 + c, N, K, vec_b);
      Bs[c + 0][r] = v.x;  // the transposing store, now of B
      Bs[c + 1][r] = v.y;
      Bs[c + 2][r] = v.z;
      Bs[c + 3][r] = v.w;
    }
    __syncthreads();

#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
#pragma unroll
      for (int i = 0; i < TM; i += 4) {
        const float4 v = *reinterpret_cast<const float4*>(&As[kk][tr + i]);
        a[i] = v.x, a[i + 1] = v.y, a[i + 2] = v.z, a[i + 3] = v.w;
      }
#pragma unroll
      for (int j = 0; j < TN; j += 4) {
        const float4 v = *reinterpret_cast<const float4*>(&Bs[kk][tc + j / 4 * GROUP_STRIDE]);
        b[j] = v.x, b[j + 1] = v.y, b[j + 2] = v.z, b[j + 3] = v.w;
      }
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; j += 4)
      store4(C, row0 + tr + i, col0 + tc + j / 4 * GROUP_STRIDE, M, N, alpha, beta,
             make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]), vec_c);
}
