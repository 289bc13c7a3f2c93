// Chapter 4's exercise: kernel 06 with a transposing store of A that is vectorized too. Kernel 06 loads a float4
// from a row of A and writes it down a column of As[k][m], four scalar stores. Here each index i of the copy takes
// a 4 x 4 block of the A tile: four float4 loads (its rows), a transpose in registers, and four float4 stores (its
// columns, now rows of As). Everything else is kernel 06's. gl.submit(source, "vectorized_4x4_transpose") checks it.
#include "tiles.cuh"

template <int BM, int BN, int BK, int TM, int TN>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
sgemm_vectorized_4x4_transpose(int M, int N, int K, float alpha, const float* __restrict__ A,
                               const float* __restrict__ B, float beta, float* __restrict__ C) {
  constexpr int THREADS = (BM / TM) * (BN / TN);
  __shared__ __align__(16) float As[BK][BM];  // transposed: column kk of the A tile is row kk here
  __shared__ __align__(16) float Bs[BK][BN];

  const bool vec_a = K % 4 == 0, vec_bc = N % 4 == 0;
  constexpr int GROUP_STRIDE = BN / (TN / 4);   // distance between a thread's float4 column groups
  const int tr = threadIdx.x / (BN / TN) * TM;  // first of this thread's TM rows
  const int tc = threadIdx.x % (BN / TN) * 4;   // first column of its first float4 group
  const int row0 = blockIdx.y * BM;
  const int col0 = blockIdx.x * BN;

  float acc[TM][TN] = {};
  float a[TM], b[TN];
  for (int k0 = 0; k0 < K; k0 += BK) {
    for (int i = threadIdx.x; i < BM * BK / 16; i += THREADS) {  // the tile's 4 x 4 blocks
      const int r = i / (BK / 4) * 4, c = i % (BK / 4) * 4;  // block (r, c); i + 1: the next four k-values
      const float4 v0 = load4(A, row0 + r + 0, k0 + c, M, K, vec_a);  // vq: row q of the block, four k-values
      const float4 v1 = load4(A, row0 + r + 1, k0 + c, M, K, vec_a);
      const float4 v2 = load4(A, row0 + r + 2, k0 + c, M, K, vec_a);
      const float4 v3 = load4(A, row0 + r + 3, k0 + c, M, K, vec_a);
      *reinterpret_cast<float4*>(&As[c + 0][r]) = make_float4(v0.x, v1.x, v2.x, v3.x);  // the block's k = c: four m
      *reinterpret_cast<float4*>(&As[c + 1][r]) = make_float4(v0.y, v1.y, v2.y, v3.y);
      *reinterpret_cast<float4*>(&As[c + 2][r]) = make_float4(v0.z, v1.z, v2.z, v3.z);
      *reinterpret_cast<float4*>(&As[c + 3][r]) = make_float4(v0.w, v1.w, v2.w, v3.w);
    }
    for (int i = threadIdx.x; i < BK * BN / 4; i += THREADS) {
      const int r = i / (BN / 4), c = i % (BN / 4) * 4;
      *reinterpret_cast<float4*>(&Bs[r][c]) = load4(B, k0 + r, col0 + c, K, N, vec_bc);
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
             make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]), vec_bc);
}
