// Step 16: SGEMM on the INT8 tensor cores by the Ozaki scheme II (Ozaki, Uchino and Imamura, 2025): FP32's accuracy
// from MODULI exact INT8 products, one per modulus, and the Chinese remainder theorem.
// 1. Scale. Row i of A is scaled by 2^e_i and column j of B by 2^f_j, the powers chosen from their Euclidean norms so
//    that each scaled row and column has a norm of at most 2^G. Rounded to integers a' and b', every sum
//    c'_ij = sum_h a'_ih b'_hj is then at most P / 4 in magnitude (Cauchy-Schwarz), P the product of the moduli.
// 2. Residues. a' and b' modulo each modulus p_l (pairwise coprime, at most 256) are int8 in [-p/2, p/2): A's planes
//    (l, i, k) as A is laid out, B's transposed (l, j, k), so both are K-major, rows padded to Kp bytes with zeros.
//    With at most 9 moduli, G < 35 and every a' and b' is an integer below 2^35 that a float holds exactly.
// 3. Products. Kernel 15's pipeline runs the MODULI products in one launch; each int32 sum is exact, and only its
//    residue modulo p_l (one byte, rows of Np bytes) is kept.
// 4. Reconstruction. c' = sum_l r_l W_l modulo P (W_l the CRT weights), the nearest multiple of P taken off, in
//    double: c' is then right to far better than FP32's rounding. C = alpha c' 2^-(e_i + f_j) + beta C.
// consts, doubles written by gemm_lab/ozaki.py: p_0 .. p_{MODULI-1}, W_0 .. W_{MODULI-1}, P, 1 / P, G.
#include "int8_wgmma.cuh"

constexpr int NONFINITE = -(1 << 30);  // the exponent of a row or column holding an Inf or a NaN: its outputs are NaN

// The power of two that brings a vector of squared norm `norm2` to a norm of at most 2^G.
__device__ __forceinline__ int scale_exponent(double norm2, double G) {
  if (norm2 == 0.0) return 0;
  if (!isfinite(norm2)) return NONFINITE;
  return int(floor(G - 0.5 * log2(norm2)));
}

// 2^e as two float factors, each a power of two a float holds (e may lie beyond a float's exponent range): scaling by
// both is exact wherever the result is a normal float, and a result that is not rounds to zero anyway.
struct PowerOfTwo {
  float lo, hi;
  __device__ __forceinline__ explicit PowerOfTwo(int e) : lo(exp2f(float(e / 2))), hi(exp2f(float(e - e / 2))) {}
  __device__ __forceinline__ float operator()(float x) const { return x * lo * hi; }
};

// Rounding to an integer by adding and subtracting 1.5 * 2^23 (|v| < 2^22): FP32 adds instead of a conversion.
constexpr float ROUNDER = 0x1.8p23f;

// The residues of one integer x that a float holds exactly (|x| < 2^35): x = hi 2^20 + lo with |lo| <= 2^19, so
// x = hi (2^20 mod p) + lo modulo p, a sum below 2^23 that a float holds exactly; the nearest multiple of p comes off.
struct Split20 {
  float hi, lo;
  __device__ __forceinline__ explicit Split20(float x) : hi((x * 0x1p-20f + ROUNDER) - ROUNDER), lo(fmaf(-hi, 0x1p20f, x)) {}
};

// A modulus and what its residues need: p, 1 / p and 2^20 mod p, as floats.
struct Prime {
  float p, inv_p, c20;
  __device__ __forceinline__ explicit Prime(double modulus)
      : p(float(modulus)), inv_p(1.0f / float(modulus)), c20(float((1u << 20) % unsigned(modulus))) {}
  // x mod p in [-p/2, p/2] (p/2 itself only for even p, where it is -p/2 as a byte), in the low byte of an int.
  __device__ __forceinline__ int operator()(const Split20& x) const {
    const float y = fmaf(x.hi, c20, x.lo);
    const float r = fmaf(-((y * inv_p + ROUNDER) - ROUNDER), p, y);
    return __float_as_int(r + ROUNDER);  // the integer r in the low mantissa bits
  }
};

// Four residues' low bytes packed into a word, first in the lowest byte (a char4 in memory).
__device__ __forceinline__ int pack(int x, int y, int z, int w) {
  return __byte_perm(__byte_perm(x, y, 0x40), __byte_perm(z, w, 0x40), 0x5410);
}

// The exponent of each row of A (M x K) from its squared Euclidean norm, summed in double: one warp per row.
template <int MODULI>
__global__ void ozaki_row_exponents(int M, int K, const float* __restrict__ A, const double* __restrict__ consts,
                                    int* __restrict__ exponents) {
  const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= M) return;
  const float* a = A + size_t(row) * K;
  double s = 0.0;
  if (K % 4 == 0) {  // rows start on 16 bytes
    for (int k = 4 * lane; k < K; k += 128) {
      const float4 x = *reinterpret_cast<const float4*>(a + k);
      s = fma(double(x.x), double(x.x), fma(double(x.y), double(x.y), fma(double(x.z), double(x.z), fma(double(x.w), double(x.w), s))));
    }
  } else {
    for (int k = lane; k < K; k += 32) s = fma(double(a[k]), double(a[k]), s);
  }
  for (int d = 16; d > 0; d /= 2) s += __shfl_xor_sync(0xffffffff, s, d);
  if (lane == 0) exponents[row] = scale_exponent(s, consts[2 * MODULI + 2]);
}

// Squared norms of the columns of B (K x N), ROWS rows per block, added into norm2 (zeroed before).
template <int ROWS>
__global__ void ozaki_col_norms(int K, int N, const float* __restrict__ B, double* __restrict__ norm2) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x, h0 = blockIdx.y * ROWS;
  if (j >= N) return;
  double s = 0.0;
  for (int h = h0; h < min(K, h0 + ROWS); ++h) s = fma(double(B[size_t(h) * N + j]), double(B[size_t(h) * N + j]), s);
  atomicAdd(norm2 + j, s);
}

// A's residue planes: each thread four consecutive k of one row, for every modulus.
template <int MODULI>
__global__ void ozaki_residues_a(int M, int K, int Kp, const float* __restrict__ A, const int* __restrict__ exponents,
                                 const double* __restrict__ consts, signed char* __restrict__ planes) {
  const long long u = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  const int row = int(u / (Kp / 4)), k0 = int(u % (Kp / 4)) * 4;
  if (row >= M) return;
  const int e = exponents[row];
  const float* a = A + size_t(row) * K;
  float x[4];
  if (K % 4 == 0 && k0 < K) {
    const float4 v = *reinterpret_cast<const float4*>(a + k0);
    x[0] = v.x, x[1] = v.y, x[2] = v.z, x[3] = v.w;
  } else {
#pragma unroll
    for (int q = 0; q < 4; ++q) x[q] = k0 + q < K ? a[k0 + q] : 0.0f;
  }
  const PowerOfTwo scale(e == NONFINITE ? 0 : e);
  Split20 split[4] = {Split20(0.0f), Split20(0.0f), Split20(0.0f), Split20(0.0f)};
#pragma unroll
  for (int q = 0; q < 4; ++q) split[q] = Split20(e == NONFINITE ? 0.0f : rintf(scale(x[q])));
  signed char* out = planes + size_t(row) * Kp + k0;
#pragma unroll
  for (int l = 0; l < MODULI; ++l) {
    const Prime mod(consts[l]);
    *reinterpret_cast<int*>(out + size_t(l) * M * Kp) = pack(mod(split[0]), mod(split[1]), mod(split[2]), mod(split[3]));
  }
}

// B's residue planes, transposed: a block reads a 64 x 64 tile of B (rows k, columns j), keeps its residues in shared
// memory as [modulus][j][k] (each thread four consecutive k of one column, one word) and writes each j's 64 bytes of
// k. The columns' exponents come from their squared norms here (and are stored by the first tile row).
template <int MODULI>
__global__ void __launch_bounds__(256) ozaki_residues_b(int K, int N, int Kp, const float* __restrict__ B,
                                                       const double* __restrict__ norm2,
                                                       const double* __restrict__ consts, int* __restrict__ exponents,
                                                       signed char* __restrict__ planes) {
  __shared__ int tile[MODULI][64][17];  // rows of 17 words: a warp's 32 columns hit 32 banks
  __shared__ int column_exponent[64];
  const int j0 = blockIdx.x * 64, h0 = blockIdx.y * 64, tx = threadIdx.x % 64, ty = threadIdx.x / 64, j = j0 + tx;
  if (ty == 0) {
    const int f = j < N ? scale_exponent(norm2[j], consts[2 * MODULI + 2]) : 0;
    column_exponent[tx] = f;
    if (h0 == 0 && j < N) exponents[j] = f;
  }
  __syncthreads();
  const int f = column_exponent[tx];
  const PowerOfTwo scale(f == NONFINITE ? 0 : f);
#pragma unroll
  for (int q = ty; q < 16; q += 4) {  // rows 4q .. 4q + 3 of the tile
    Split20 split[4] = {Split20(0.0f), Split20(0.0f), Split20(0.0f), Split20(0.0f)};
#pragma unroll
    for (int t = 0; t < 4; ++t) {
      const int h = h0 + 4 * q + t;
      split[t] = Split20(h < K && j < N && f != NONFINITE ? rintf(scale(B[size_t(h) * N + j])) : 0.0f);
    }
#pragma unroll
    for (int l = 0; l < MODULI; ++l) {
      const Prime mod(consts[l]);
      tile[l][tx][q] = pack(mod(split[0]), mod(split[1]), mod(split[2]), mod(split[3]));
    }
  }
  __syncthreads();
  for (int u = threadIdx.x; u < MODULI * 64 * 16; u += 256) {
    const int l = u / (64 * 16), jj = u / 16 % 64, q = u % 16, h = h0 + 4 * q;
    if (j0 + jj < N && h < Kp) *reinterpret_cast<int*>(planes + (size_t(l) * N + j0 + jj) * Kp + h) = tile[l][jj][q];
  }
}

// v mod p in [0, p), exactly, for |v| < 2^31 and 128 < p <= 256: v = hi 2^16 + lo folds to x = hi (2^16 mod p) + lo
// plus a multiple of p that makes it positive, x < 2^25; then a multiply-high by ceil(2^39 / p) gives x / p exactly.
struct Modulus {
  unsigned p, c16, offset, magic;
  __device__ __forceinline__ explicit Modulus(unsigned p_)
      : p(p_), c16((1u << 16) % p_), offset(p_ * ((1u << 23) / p_ + 1)), magic(unsigned((1ull << 39) / p_) + 1) {}
  __device__ __forceinline__ unsigned operator()(int v) const {
    const unsigned x = unsigned((v >> 16) * int(c16) + (v & 0xffff) + int(offset));
    return x - (__umulhi(x, magic) >> 7) * p;
  }
};

// The products' epilogue: each int32 sum modulo this product's modulus, a byte, into its plane (rows of Np bytes).
struct StoreResidues {
  static constexpr unsigned WARP_SMEM = 0;
  unsigned char* __restrict__ R;
  int M, Np;
  const double* __restrict__ consts;

  template <int NACC>
  __device__ __forceinline__ void operator()(const int (&acc)[NACC], int matrix, int row0, int col0, int warp, int lane,
                                             unsigned) const {
    const Modulus mod{unsigned(consts[matrix])};
    unsigned char* plane = R + size_t(matrix) * M * Np;
    const int r = row0 + 16 * warp + lane / 4, t = lane % 4;
#pragma unroll
    for (int j = 0; j < NACC / 4; ++j) {
      const int col = col0 + 8 * j + 2 * t;  // even, and Np is a multiple of 4: both bytes lie in the row or neither
      if (col >= Np) continue;
      if (r < M) *reinterpret_cast<uchar2*>(plane + size_t(r) * Np + col) = make_uchar2(mod(acc[4 * j]), mod(acc[4 * j + 1]));
      if (r + 8 < M)
        *reinterpret_cast<uchar2*>(plane + size_t(r + 8) * Np + col) = make_uchar2(mod(acc[4 * j + 2]), mod(acc[4 * j + 3]));
    }
  }
  __device__ __forceinline__ void drain(int) const {}
};

template <int MODULI, int BN, int CONSUMERS, int STAGES, int CLUSTER, int GROUP>
__global__ void __launch_bounds__(128 * (CONSUMERS + 1), 1) __cluster_dims__(1, CLUSTER, 1)
ozaki_products(int M, int N, int Kp, int Np, const double* __restrict__ consts, unsigned char* __restrict__ R,
               const void* __restrict__ map_a, const void* __restrict__ map_b) {
  s8_products<BN, CONSUMERS, STAGES, CLUSTER, GROUP>(M, N, Kp, MODULI, map_a, map_b, StoreResidues{R, M, Np, consts});
}

// C from the residues: each thread four consecutive columns of one row.
template <int MODULI>
__global__ void ozaki_reconstruct(int M, int N, int Np, float alpha, float beta, float* __restrict__ C,
                                  const unsigned char* __restrict__ R, const int* __restrict__ row_exponents,
                                  const int* __restrict__ col_exponents, const double* __restrict__ consts) {
  const long long u = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  const int quads = (N + 3) / 4, i = int(u / quads), j0 = int(u % quads) * 4;
  if (i >= M) return;
  const double P = consts[2 * MODULI], inv_P = consts[2 * MODULI + 1];
  double s[4] = {0.0, 0.0, 0.0, 0.0};
#pragma unroll
  for (int l = 0; l < MODULI; ++l) {
    const uchar4 r = *reinterpret_cast<const uchar4*>(R + (size_t(l) * M + i) * Np + j0);
    const double w = consts[MODULI + l];
    s[0] = fma(double(r.x), w, s[0]), s[1] = fma(double(r.y), w, s[1]);
    s[2] = fma(double(r.z), w, s[2]), s[3] = fma(double(r.w), w, s[3]);
  }
  const int e = row_exponents[i];
  float out[4];
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const int f = j0 + q < N ? col_exponents[j0 + q] : 0;
    const double c = fma(-rint(s[q] * inv_P), P, s[q]);  // the representative nearest zero: |c| <= P / 4
    out[q] = e == NONFINITE || f == NONFINITE ? __int_as_float(0x7fffffff) : float(alpha * ldexp(c, -(e + f)));
  }
  float* row = C + size_t(i) * N;
  if (N % 4 == 0) {
    float4 v = make_float4(out[0], out[1], out[2], out[3]);
    if (beta != 0.0f) {
      const float4 old = *reinterpret_cast<const float4*>(row + j0);
      v = make_float4(v.x + beta * old.x, v.y + beta * old.y, v.z + beta * old.z, v.w + beta * old.w);
    }
    *reinterpret_cast<float4*>(row + j0) = v;
  } else {
#pragma unroll
    for (int q = 0; q < 4; ++q)
      if (j0 + q < N) row[j0 + q] = beta == 0.0f ? out[q] : out[q] + beta * row[j0 + q];
  }
}
