// Step 16: SGEMM on the INT8 tensor cores by the Ozaki scheme II (Ozaki, Uchino and Imamura, 2025): FP32's accuracy
// from MODULI exact INT8 products, one per modulus, and the Chinese remainder theorem; the number of moduli chosen per
// call by an estimate of the error against SGEMM's on the same inputs.
// 1. Scale. Column h of A and row h of B are first equilibrated: multiplied by 2^s_h and 2^-s_h, s_h balancing the
//    mean binary exponent of the column's and the row's nonzero entries, which changes no product (powers of two are
//    exact). Row i of A is then scaled by 2^e_i and column j of B by 2^f_j, the powers chosen from their Euclidean
//    norms so that each scaled row and column has a norm of at most 2^G. Rounded to integers a' and b', every sum
//    c'_ij = sum_h a'_ih b'_hj is then at most P / 4 in magnitude (Cauchy-Schwarz), P the product of the moduli.
//    Infinities and NaNs count as zeros here; `ozaki_nonfinite` gives their elements of C SGEMM's inf/NaN afterwards.
// 2. Estimate. On a sample of 64 x 32 elements of C, the rounding of a' and b' is applied exactly and its error's
//    variance summed for each number of moduli, beside the exact sum and the variance of SGEMM's rounding errors in
//    its order along K (each addition off by at most half an ulp of the partial sum, and never by more than the term
//    added). `ozaki_decide` then takes, on the GPU, the fewest moduli whose error is no larger than SGEMM's; the host
//    reads that verdict back after queueing the work it expects (see below).
// 3. Residues. a' and b' modulo each modulus p_l (pairwise coprime, at most 256) are int8 in [-p/2, p/2): A's planes
//    (l, i, k) as A is laid out, B's transposed (l, j, k), so both are K-major, rows padded to Kp bytes with zeros.
//    With at most 9 moduli, G < 35 and every a' and b' is an integer below 2^35 that a float holds exactly.
// 4. Products. Kernel 15's pipeline runs the MODULI products in one launch; each int32 sum is exact, and only its
//    residue modulo p_l (one byte, rows of Np bytes) is kept. An int32 sum of int8 products stays exact for up to
//    2^17 - 1 terms: longer K is cut into chunks whose residues add up modulo p_l.
// 5. Reconstruction. c' = sum_l r_l W_l modulo P (W_l the CRT weights), the nearest multiple of P taken off, in double:
//    right to far better than FP32's rounding. C = alpha c' 2^-(e_i + f_j) + beta C, and each row's and column's max |C|.
// consts, doubles written by gemm_lab/precision/ozaki.py: p_0 .. p_{MODULI-1}, W_0 .. W_{MODULI-1}, P, 1 / P, G, then each
// modulus's 1 / p as a float and 2^20 mod p (for Prime).
#include "int8_wgmma.cuh"

constexpr int STATS_ROWS = 64;  // rows of A or B that one block of the statistics kernels reads
constexpr int SAMPLE_ROWS = 64, SAMPLE_COLS = 32;  // the estimate's sample of C: rows x columns
constexpr int SAMPLE_FIELDS = 8;  // doubles per sampled element (ozaki_sample)
constexpr int AHEAD = 6;  // ozaki_sample's loads: steps of 32 k issued ahead of their use
constexpr int CANDIDATES = 4;   // numbers of moduli the estimate weighs: 6, 7, 8 and 9

// The power of two that brings a vector of squared norm `norm2` to a norm of at most 2^G (a zero vector: 1).
__device__ __forceinline__ int scale_exponent(double norm2, double G) {
  return norm2 == 0.0 ? 0 : int(floor(G - 0.5 * log2(norm2)));
}

// 2^e as a float, for e in a normal float's range [-126, 127], from its bits.
__device__ __forceinline__ float exp2i(int e) { return __int_as_float((e + 127) << 23); }

// 2^e as a double, for e in [-1022, 1023].
__device__ __forceinline__ double exp2d(int e) { return __longlong_as_double((long long)(e + 1023) << 52); }

// Byte `which` of a word as a double, exactly: the byte in the low bits of 2^52's, then 2^52 taken off. An add on the
// FP64 pipe, where a conversion instruction would run at a quarter of its rate.
__device__ __forceinline__ double byte_as_double(unsigned word, int which) {
  return __hiloint2double(0x43300000, __byte_perm(word, 0u, 0x4440 + which)) - 0x1p52;
}

// The integer nearest x (ties to even, as rint), for |x| < 2^51: by adding and subtracting 1.5 * 2^52.
__device__ __forceinline__ double round_double(double x) { return (x + 0x1.8p52) - 0x1.8p52; }

// 2^e as two float factors (e may lie beyond a float's exponent range): scaling by both is exact wherever the result
// is a normal float, and a result that is not rounds to zero anyway (the clamp only cuts exponents whose result is 0
// or which no float reaches).
struct PowerOfTwo {
  float lo, hi;
  __device__ __forceinline__ explicit PowerOfTwo(int e) {
    e = max(-252, min(252, e));
    lo = exp2i(e / 2), hi = exp2i(e - e / 2);
  }
  __device__ __forceinline__ float operator()(float x) const { return x * lo * hi; }
};

// Infinities and NaNs count as zeros in the scaling and the residues (ozaki_nonfinite puts them back).
__device__ __forceinline__ float finite_or_zero(float x) { return isfinite(x) ? x : 0.0f; }

// ilogbf(x) for a finite nonzero x, denormals too, without its branches: a denormal is first scaled by 2^64 (exactly).
__device__ __forceinline__ int binary_exponent(float x) {
  const bool tiny = fabsf(x) < 0x1p-126f;
  return int(__float_as_uint(tiny ? x * 0x1p64f : x) << 1 >> 24) - (tiny ? 191 : 127);
}

// A binary exponent and a nonzero count packed into one int, so that a block adds both with one sum: the exponent
// plus 160 (>= 11 for a float's smallest denormal), times 512, plus 1 (a block's 256 counts never carry); 0 for a
// zero, by a mask rather than a branch.
constexpr int PACK = 512;
__device__ __forceinline__ int exponent_and_count(float x) {
  return ((binary_exponent(x) + 160) * PACK + 1) & -int(x != 0.0f);
}

// Rounding to an integer by adding and subtracting 1.5 * 2^23 (|v| < 2^22): FP32 adds instead of a conversion.
constexpr float ROUNDER = 0x1.8p23f;

// The residues of one integer x that a float holds exactly (|x| < 2^35): x = hi 2^20 + lo with |lo| <= 2^19, so
// x = hi (2^20 mod p) + lo modulo p, a sum below 2^23 that a float holds exactly; the nearest multiple of p comes off.
struct Split20 {
  float hi, lo;
  __device__ __forceinline__ explicit Split20(float x) : hi((x * 0x1p-20f + ROUNDER) - ROUNDER), lo(fmaf(-hi, 0x1p20f, x)) {}
};

// A modulus and what its residues need: p, 1 / p and 2^20 mod p, as floats.
// (Read from consts, where the host put them: a division per modulus per thread would cost more than the residues.)
template <int MODULI>
struct Prime {
  float p, inv_p, c20;
  __device__ __forceinline__ Prime(const double* consts, int l)
      : p(float(consts[l])), inv_p(float(consts[2 * MODULI + 3 + l])), c20(float(consts[3 * MODULI + 3 + l])) {}
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

// The statistics kernels' blocks: STATS_ROWS rows x 256 columns, 64 threads across (four consecutive columns each, one
// 16-byte load) and 4 rows at a time, so that a modest matrix still gives every SM several blocks.
constexpr int STATS_ACROSS = 64, STATS_LANES = 4;
constexpr int STATS_AHEAD = 4;  // rows a thread loads before it uses the first: 64 bytes in flight
static_assert(STATS_ACROSS * STATS_LANES == 256 && STATS_LANES == 4,
              "256 threads, and each sums one of the block's 4 * STATS_ACROSS columns at the end");

// A row's four floats at columns c0 .. c0 + 3 (zeros past `cols`), one 16-byte load where rows start on 16 bytes.
__device__ __forceinline__ void load_four(const float* row, int c0, int cols, float (&x)[4]) {
  if (cols % 4 == 0 && c0 < cols) {
    const float4 v = *reinterpret_cast<const float4*>(row + c0);
    x[0] = v.x, x[1] = v.y, x[2] = v.z, x[3] = v.w;
  } else {
#pragma unroll
    for (int q = 0; q < 4; ++q) x[q] = c0 + q < cols ? row[c0 + q] : 0.0f;
  }
}

// The statistics of A (M x K) the scaling needs, from one read: each row's sum of squares (double, added into
// row_norm2, zeroed before), each column's sum of binary exponents and count of nonzero entries (added into col_exp and
// col_count), and whether a row holds an infinity or a NaN (row_bad and flags[0]).
__global__ void __launch_bounds__(256) ozaki_stats_a(int M, int K, const float* __restrict__ A,
                                                     double* __restrict__ row_norm2, int* __restrict__ col_exp,
                                                     int* __restrict__ col_count, int* __restrict__ row_bad,
                                                     int* __restrict__ flags) {
  __shared__ double part[STATS_ACROSS / 32][STATS_ROWS];
  __shared__ int4 esums[STATS_LANES][STATS_ACROSS], counts[STATS_LANES][STATS_ACROSS];
  const int tx = threadIdx.x % STATS_ACROSS, ty = threadIdx.x / STATS_ACROSS, lane = threadIdx.x % 32;
  const int c0 = (blockIdx.x * STATS_ACROSS + tx) * 4, r0 = blockIdx.y * STATS_ROWS;
  int esum[4] = {0, 0, 0, 0}, count[4] = {0, 0, 0, 0};
  for (int n0 = 0; n0 < STATS_ROWS / STATS_LANES; n0 += STATS_AHEAD) {  // counts alike in every lane of a warp
    float x[STATS_AHEAD][4];
#pragma unroll
    for (int u = 0; u < STATS_AHEAD; ++u) {
      const int row = r0 + ty + STATS_LANES * (n0 + u);
      x[u][0] = x[u][1] = x[u][2] = x[u][3] = 0.0f;
      if (row < M) load_four(A + size_t(row) * K, c0, K, x[u]);
    }
    double s[STATS_AHEAD];  // each row's sum of squares over this thread's four columns
#pragma unroll
    for (int u = 0; u < STATS_AHEAD; ++u) {
      const int row = r0 + ty + STATS_LANES * (n0 + u);
      bool bad = false;
      s[u] = 0.0;
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        bad |= !isfinite(x[u][q]);
        const float y = finite_or_zero(x[u][q]);
        const bool nonzero = y != 0.0f;
        esum[q] += binary_exponent(y) & -int(nonzero), count[q] += nonzero;
        s[u] = fma(double(y), double(y), s[u]);
      }
      if (__any_sync(0xffffffff, bad) && lane == 0) row_bad[row] = 1, flags[0] = 1;
    }
    // The four rows' sums over the warp at once: the lanes 16 apart trade two rows each way, then the lanes 8 apart one,
    // so that 12 shuffles do what 40 would row by row (the same additions, in the same tree). Lane 8u keeps row u's.
    static_assert(STATS_AHEAD == 4, "the exchange below halves four rows twice");
    const bool upper = lane & 16, odd = lane & 8;
    const double keep0 = upper ? s[2] : s[0], keep1 = upper ? s[3] : s[1];
    const double t0 = keep0 + __shfl_xor_sync(0xffffffff, upper ? s[0] : s[2], 16);
    const double t1 = keep1 + __shfl_xor_sync(0xffffffff, upper ? s[1] : s[3], 16);
    double v = (odd ? t1 : t0) + __shfl_xor_sync(0xffffffff, odd ? t0 : t1, 8);
    for (int d = 4; d > 0; d /= 2) v += __shfl_xor_sync(0xffffffff, v, d);
    if (lane % 8 == 0) part[tx / 32][ty + STATS_LANES * (n0 + lane / 8)] = v;
  }
  esums[ty][tx] = make_int4(esum[0], esum[1], esum[2], esum[3]);
  counts[ty][tx] = make_int4(count[0], count[1], count[2], count[3]);
  __syncthreads();
  if (threadIdx.x < STATS_ROWS && r0 + threadIdx.x < M) {
    double s = 0.0;
#pragma unroll
    for (int w = 0; w < STATS_ACROSS / 32; ++w) s += part[w][threadIdx.x];
    atomicAdd(row_norm2 + r0 + threadIdx.x, s);
  }
  // each thread one of the block's 256 columns, over the 4 row lanes
  const int c = blockIdx.x * STATS_ACROSS * 4 + threadIdx.x;
  int e = 0, n = 0;
#pragma unroll
  for (int t = 0; t < STATS_LANES; ++t) {
    e += reinterpret_cast<const int*>(esums[t])[threadIdx.x], n += reinterpret_cast<const int*>(counts[t])[threadIdx.x];
  }
  if (n && c < K) atomicAdd(col_exp + c, e), atomicAdd(col_count + c, n);
}

// The same for B (K x N), across: each column's sum of squares (into col_norm2), each row's sum of binary exponents
// and count of nonzero entries (into row_exp, row_count), and whether a column holds an infinity or a NaN (col_bad,
// flags[0]).
__global__ void __launch_bounds__(256) ozaki_stats_b(int K, int N, const float* __restrict__ B,
                                                     double* __restrict__ col_norm2, int* __restrict__ row_exp,
                                                     int* __restrict__ row_count, int* __restrict__ col_bad,
                                                     int* __restrict__ flags) {
  __shared__ int part[STATS_ACROSS / 32][STATS_ROWS];
  __shared__ double sums[STATS_LANES][4 * STATS_ACROSS];
  const int tx = threadIdx.x % STATS_ACROSS, ty = threadIdx.x / STATS_ACROSS, lane = threadIdx.x % 32;
  const int j0 = (blockIdx.x * STATS_ACROSS + tx) * 4, h0 = blockIdx.y * STATS_ROWS;
  double s[4] = {0.0, 0.0, 0.0, 0.0};
  bool bad[4] = {false, false, false, false};
  for (int n0 = 0; n0 < STATS_ROWS / STATS_LANES; n0 += STATS_AHEAD) {
    float x[STATS_AHEAD][4];
#pragma unroll
    for (int u = 0; u < STATS_AHEAD; ++u) {
      const int h = h0 + ty + STATS_LANES * (n0 + u);
      x[u][0] = x[u][1] = x[u][2] = x[u][3] = 0.0f;
      if (h < K) load_four(B + size_t(h) * N, j0, N, x[u]);
    }
#pragma unroll
    for (int u = 0; u < STATS_AHEAD; ++u) {
      int packed = 0;
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        bad[q] |= !isfinite(x[u][q]);
        const float y = finite_or_zero(x[u][q]);
        s[q] = fma(double(y), double(y), s[q]);
        packed += exponent_and_count(y);
      }
      packed = __reduce_add_sync(0xffffffff, packed);
      if (lane == 0) part[tx / 32][ty + STATS_LANES * (n0 + u)] = packed;
    }
  }
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    sums[ty][4 * tx + q] = s[q];
    if (bad[q] && j0 + q < N) col_bad[j0 + q] = 1, flags[0] = 1;
  }
  __syncthreads();
  if (threadIdx.x < STATS_ROWS && h0 + threadIdx.x < K) {
    int packed = 0;
#pragma unroll
    for (int w = 0; w < STATS_ACROSS / 32; ++w) packed += part[w][threadIdx.x];
    const int count = packed % PACK, esum = packed / PACK - 160 * count;
    if (count) atomicAdd(row_exp + h0 + threadIdx.x, esum), atomicAdd(row_count + h0 + threadIdx.x, count);
  }
  // each thread one of the block's 256 columns, over the 4 row lanes
  const int j = blockIdx.x * STATS_ACROSS * 4 + threadIdx.x;
  double t = 0.0;
#pragma unroll
  for (int u = 0; u < STATS_LANES; ++u) t += sums[u][threadIdx.x];
  if (j < N) atomicAdd(col_norm2 + j, t);
}

// Equilibration along K: s_h = the nearest integer to half the difference of the mean binary exponents of row h of B
// and column h of A (nonzero entries only; 0 where either has none). A 2^s_h and 2^-s_h B change no product. flags[1]:
// some s_h is not 0; flags[2]: how many; flags[3]: the largest |s_h|.
__global__ void ozaki_equilibrate(int K, const int* __restrict__ col_exp, const int* __restrict__ col_count,
                                  const int* __restrict__ row_exp, const int* __restrict__ row_count,
                                  int* __restrict__ shift, int* __restrict__ flags) {
  const int h = blockIdx.x * blockDim.x + threadIdx.x;
  if (h >= K) return;
  int s = 0;
  if (col_count[h] && row_count[h])
    s = __double2int_rn(0.5 * (double(row_exp[h]) / row_count[h] - double(col_exp[h]) / col_count[h]));
  shift[h] = s;
  if (s) atomicOr(flags + 1, 1), atomicAdd(flags + 2, 1), atomicMax(flags + 3, abs(s));
}

// With equilibration (flags[1]), each row's sum of squares of A 2^s again: one warp per row, written over row_norm2.
__global__ void ozaki_rescale_a(int M, int K, const float* __restrict__ A, const int* __restrict__ shift,
                                const int* __restrict__ flags, double* __restrict__ row_norm2) {
  const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (!flags[1] || row >= M) return;
  const float* a = A + size_t(row) * K;
  double s = 0.0;
  for (int k = lane; k < K; k += 32) {
    const double y = double(finite_or_zero(a[k])) * exp2d(shift[k]);
    s = fma(y, y, s);
  }
  for (int d = 16; d > 0; d /= 2) s += __shfl_xor_sync(0xffffffff, s, d);
  if (lane == 0) row_norm2[row] = s;
}

// With equilibration (flags[1]), each column's sum of squares of 2^-s B, added into col_norm2 (zeroed before).
__global__ void __launch_bounds__(256) ozaki_rescale_b(int K, int N, const float* __restrict__ B,
                                                       const int* __restrict__ shift, const int* __restrict__ flags,
                                                       double* __restrict__ col_norm2) {
  const int j = blockIdx.x * 256 + threadIdx.x, h0 = blockIdx.y * STATS_ROWS;
  if (!flags[1] || j >= N) return;
  double s = 0.0;
  for (int h = h0; h < min(K, h0 + STATS_ROWS); ++h) {
    const double y = double(finite_or_zero(B[size_t(h) * N + j])) * exp2d(-shift[h]);
    s = fma(y, y, s);
  }
  atomicAdd(col_norm2 + j, s);
}

// The row of A and the column of B with the largest norms (after equilibration), packed as (float norm^2 bits, index)
// into best[0] and best[1] (zeroed before): the estimate's sample always holds their element, where the scheme's
// error is largest.
__global__ void ozaki_extremes(int M, int N, const double* __restrict__ row_norm2, const double* __restrict__ col_plain,
                               const double* __restrict__ col_equilibrated, const int* __restrict__ flags,
                               unsigned long long* __restrict__ best) {
  const double* col_norm2 = flags[1] ? col_equilibrated : col_plain;
  unsigned long long rows = 0, cols = 0;  // this thread's largest row and column; then the warp's, one atomic each
  for (int u = blockIdx.x * blockDim.x + threadIdx.x; u < M + N; u += gridDim.x * blockDim.x) {
    const bool row = u < M;
    const int index = row ? u : u - M;
    const float norm2 = float(row ? row_norm2[index] : col_norm2[index]);
    const unsigned long long packed = (unsigned long long)__float_as_uint(norm2) << 32 | unsigned(index);
    if (row) rows = max(rows, packed);
    else cols = max(cols, packed);
  }
  for (int d = 16; d > 0; d /= 2) {
    rows = max(rows, __shfl_xor_sync(0xffffffff, rows, d));
    cols = max(cols, __shfl_xor_sync(0xffffffff, cols, d));
  }
  if (threadIdx.x % 32 == 0) atomicMax(best, rows), atomicMax(best + 1, cols);
}

// The sample's row or column `slot`: the largest-norm one in slot 0, the host's spread choice elsewhere.
__device__ __forceinline__ int sampled(const int* picks, const unsigned long long* best, int which, int slot) {
  return slot == 0 ? int(best[which] & 0xffffffffu) : picks[slot];
}

// The sampled columns of B, transposed into bt (SAMPLE_COLS x K), so that a warp reads each along K.
__global__ void ozaki_gather_b(int K, int N, const float* __restrict__ B, const int* __restrict__ cols,
                               const unsigned long long* __restrict__ best, float* __restrict__ bt) {
  const int h = blockIdx.x * blockDim.x + threadIdx.x, t = blockIdx.y;
  if (h < K) bt[size_t(t) * K + h] = B[size_t(h) * N + sampled(cols, best, 1, t)];
}

// ozaki_sample's steps of 32 k along K, specialised on equilibration (alike in every thread), so that the plain loop
// keeps its scales in registers: adds each lane's products into total, the model of SGEMM's error into sgemm and the
// scheme's per candidate into ozaki.
template <bool EQUILIBRATED>
__device__ __forceinline__ void sample_steps(int K, int split, int lane, const float* __restrict__ a,
                                             const float* __restrict__ b, const int* __restrict__ shift,
                                             const int (&e)[CANDIDATES], const int (&f)[CANDIDATES],
                                             const PowerOfTwo (&ea)[CANDIDATES], const PowerOfTwo (&fb)[CANDIDATES],
                                             double& total, double& sgemm, float (&ozaki)[CANDIDATES]) {
  double carry = 0.0;
  int left = 0;  // steps until the next piece of `split` terms starts (a count, not a division per step)
  float xr[AHEAD], yr[AHEAD];  // AHEAD steps of 32 k in flight: a load's latency outlasts several steps' work
#pragma unroll
  for (int r = 0, h = lane; r < AHEAD; ++r, h += 32) xr[r] = h < K ? a[h] : 0.0f, yr[r] = h < K ? b[h] : 0.0f;
  for (int group = 0; group < K; group += 32 * AHEAD)  // steps past K add zeros
#pragma unroll
  for (int r = 0; r < AHEAD; ++r) {  // ring slot r: step group / 32 + r, then the step AHEAD later
    const int h = group + 32 * r + lane, later = h + 32 * AHEAD;
    const float x = finite_or_zero(xr[r]), y = finite_or_zero(yr[r]);
    xr[r] = later < K ? a[later] : 0.0f, yr[r] = later < K ? b[later] : 0.0f;
    const double p = double(x) * double(y);
    total += p;
    double s = p;  // the partial sum after p, from the piece's start: a scan across the warp
    for (int d = 1; d < 32; d *= 2) {
      const double u = __shfl_up_sync(0xffffffff, s, d);
      if (lane >= d) s += u;
    }
    if (left == 0) carry = 0.0, left = split / 32;
    --left;
    s += carry;
    carry = __shfl_sync(0xffffffff, s, 31);
    const int biased = (__float_as_uint(float(s)) >> 23) & 0xff;  // of the FP32 partial sum (255: past FP32's range)
    const double ulp = exp2d(max(biased, 1) - 150);
    sgemm += fmin(p * p, ulp * ulp * (1.0 / 12.0));
    const int sh = EQUILIBRATED && h < K ? shift[h] : 0;
#pragma unroll
    for (int q = 0; q < CANDIDATES; ++q) {
      const float xs = EQUILIBRATED ? PowerOfTwo(e[q] + sh)(x) : ea[q](x);
      const float ys = EQUILIBRATED ? PowerOfTwo(f[q] - sh)(y) : fb[q](y);
      const float alpha = xs - rintf(xs), beta = ys - rintf(ys);
      ozaki[q] = fmaf(alpha * alpha, ys * ys, fmaf(xs * xs, beta * beta, ozaki[q]));
    }
  }
}

// The estimate on SAMPLE_ROWS x SAMPLE_COLS elements of C, one warp each, the lanes taking every 32nd k (so that each load is
// coalesced) and adding the products up in k's order with a scan across the warp:
//   out[0] |c|, the exact sum (in double);
//   out[1] the variance of SGEMM's error: sum over k of min(p_k^2, ulp(s_k)^2 / 12), s_k the partial sum after the
//          product p_k (an FP32 addition is off by at most half an ulp of its result, uniformly, and never by more
//          than the term it adds), the partial sums restarting every `split` terms (a multiple of 32), as cuBLAS's split
//          of K would have them: SGEMM is never assumed less accurate than it may be;
//   out[2 + q] the scheme's error with 6 + q moduli: sqrt(sum_k alpha_k^2 b~_k^2 + a~_k^2 beta_k^2) 2^-(e + f), a~ and
//          b~ the scaled operands before rounding and alpha, beta their actual rounding errors;
//   out[6], out[7] the element's row and column.
// (At most 85 registers, 6 blocks an SM: the sample's blocks leave room on the SMs for the split that runs beside it.)
__global__ void __launch_bounds__(128, 6) ozaki_sample(int M, int N, int K, int split, const float* __restrict__ A,
    const float* __restrict__ bt, const int* __restrict__ rows, const int* __restrict__ cols,
    const unsigned long long* __restrict__ best, const int* __restrict__ shift, const int* __restrict__ flags,
    const double* __restrict__ row_norm2, const double* __restrict__ col_plain,
    const double* __restrict__ col_equilibrated, const double* __restrict__ gs, double* __restrict__ out) {
  const int pair = blockIdx.x * 4 + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (pair >= SAMPLE_ROWS * SAMPLE_COLS) return;
  const int t = pair % SAMPLE_COLS, i = sampled(rows, best, 0, pair / SAMPLE_COLS), j = sampled(cols, best, 1, t);
  const bool equilibrated = flags[1];
  const double col_norm2 = (equilibrated ? col_equilibrated : col_plain)[j];
  int e[CANDIDATES], f[CANDIDATES];
  PowerOfTwo ea[CANDIDATES] = {PowerOfTwo(0), PowerOfTwo(0), PowerOfTwo(0), PowerOfTwo(0)};
  PowerOfTwo fb[CANDIDATES] = {PowerOfTwo(0), PowerOfTwo(0), PowerOfTwo(0), PowerOfTwo(0)};
#pragma unroll
  for (int q = 0; q < CANDIDATES; ++q) {
    e[q] = scale_exponent(row_norm2[i], gs[q]), f[q] = scale_exponent(col_norm2, gs[q]);
    ea[q] = PowerOfTwo(e[q]), fb[q] = PowerOfTwo(f[q]);
  }
  const float *a = A + size_t(i) * K, *b = bt + size_t(t) * K;
  double total = 0.0, sgemm = 0.0;
  float ozaki[CANDIDATES] = {0.0f, 0.0f, 0.0f, 0.0f};
  if (equilibrated) sample_steps<true>(K, split, lane, a, b, shift, e, f, ea, fb, total, sgemm, ozaki);
  else sample_steps<false>(K, split, lane, a, b, shift, e, f, ea, fb, total, sgemm, ozaki);
  for (int d = 16; d > 0; d /= 2) {
    total += __shfl_xor_sync(0xffffffff, total, d);
    sgemm += __shfl_xor_sync(0xffffffff, sgemm, d);
#pragma unroll
    for (int q = 0; q < CANDIDATES; ++q) ozaki[q] += __shfl_xor_sync(0xffffffff, ozaki[q], d);
  }
  if (lane == 0) {
    double* o = out + size_t(pair) * SAMPLE_FIELDS;
    o[0] = fabs(total), o[1] = sgemm, o[6] = i, o[7] = j;
#pragma unroll
    for (int q = 0; q < CANDIDATES; ++q) o[2 + q] = sqrt(double(ozaki[q])) * exp2d(-(e[q] + f[q]));
  }
}

// The estimate's verdict, from the sample (one block): relative errors binned by their logarithm (BINS_PER_BIT bins a
// binary order of magnitude) give the medians; the largest errors compare as they are. result: [0] the moduli chosen
// (the pinned number, or the fewest of CANDIDATES that qualify: median and largest error no larger than SGEMM's; 0 if
// none does), [1] SGEMM's median relative error, [2 + q] the scheme's with 6 + q moduli, [6 + q] its largest error
// over SGEMM's (SGEMM's at least the rounding of C itself), [10..13] flags, [14] the sampled elements that are not 0.
constexpr int BINS_PER_BIT = 16, LOWEST_BIT = -96, BINS = 112 * BINS_PER_BIT;
__device__ __forceinline__ int error_bin(double x) {
  return x > 0.0 ? max(0, min(BINS - 1, int(floorf((__log2f(float(x)) - LOWEST_BIT) * BINS_PER_BIT)))) : 0;
}
__global__ void __launch_bounds__(1024) ozaki_decide(int pinned, const double* __restrict__ sample,
                                                     const int* __restrict__ flags, double* __restrict__ result) {
  __shared__ int hist[CANDIDATES + 1][BINS];
  __shared__ double top[CANDIDATES + 2], median[CANDIDATES + 1];
  __shared__ int valid;
  for (int u = threadIdx.x; u < (CANDIDATES + 1) * BINS; u += blockDim.x) hist[u / BINS][u % BINS] = 0;
  if (threadIdx.x < CANDIDATES + 2) top[threadIdx.x] = 0.0;
  if (threadIdx.x == 0) valid = 0;
  __syncthreads();
  double most[CANDIDATES + 2] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0};  // |c|, SGEMM's sigma, the scheme's per candidate
  int mine = 0;
  for (int u = threadIdx.x; u < SAMPLE_ROWS * SAMPLE_COLS; u += blockDim.x) {
    const double* o = sample + size_t(u) * SAMPLE_FIELDS;
    const double c = o[0], sgemm = sqrt(o[1]);
    most[0] = fmax(most[0], c), most[1] = fmax(most[1], sgemm);
#pragma unroll
    for (int q = 0; q < CANDIDATES; ++q) most[2 + q] = fmax(most[2 + q], o[2 + q]);
    if (c > 0.0) {
      mine += 1;
      atomicAdd(&hist[0][error_bin(sgemm / c)], 1);
#pragma unroll
      for (int q = 0; q < CANDIDATES; ++q) atomicAdd(&hist[1 + q][error_bin(o[2 + q] / c)], 1);
    }
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  mine = __reduce_add_sync(0xffffffff, mine);
  if (lane == 0) atomicAdd(&valid, mine);
#pragma unroll
  for (int v = 0; v < CANDIDATES + 2; ++v) {
    for (int d = 16; d > 0; d /= 2) most[v] = fmax(most[v], __shfl_xor_sync(0xffffffff, most[v], d));
    if (lane == 0) atomicMax(reinterpret_cast<unsigned long long*>(&top[v]), __double_as_longlong(most[v]));
  }
  __syncthreads();
  if (warp < CANDIDATES + 1) {  // a warp walks each histogram, 32 bins a step, to the bin holding the median
    int seen = 0, bin = BINS - 1;
    for (int base = 0; base < BINS; base += 32) {
      int upto = hist[warp][base + lane];
      for (int d = 1; d < 32; d *= 2) {
        const int x = __shfl_up_sync(0xffffffff, upto, d);
        if (lane >= d) upto += x;
      }
      const unsigned past = __ballot_sync(0xffffffff, 2 * (seen + upto) > valid);
      if (past) {
        bin = base + __ffs(past) - 1;
        break;
      }
      seen += __shfl_sync(0xffffffff, upto, 31);
    }
    if (lane == 0) median[warp] = valid ? exp2((bin + 0.5) / BINS_PER_BIT + LOWEST_BIT) : 0.0;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    const double sgemm_top = fmax(top[1], top[0] * 0x1p-24 / sqrt(12.0));  // at least the rounding of C
    int chosen = pinned;
    result[1] = median[0];
    for (int q = 0; q < CANDIDATES; ++q) {
      const double largest = sgemm_top > 0.0 ? top[2 + q] / sgemm_top : (top[2 + q] > 0.0 ? 1e300 : 0.0);
      result[2 + q] = median[1 + q], result[6 + q] = largest;
      if (!chosen && median[1 + q] <= median[0] && largest <= 1.0) chosen = 6 + q;
    }
    result[0] = chosen;
    for (int v = 0; v < 4; ++v) result[10 + v] = flags[v];
    result[14] = valid;
  }
}

// The later kernels run for MODULI moduli only where the estimate chose that many (verdict[0], ozaki_decide's result):
// the host queues the number it expects behind the estimate, so the GPU never waits for the host's reading of it.
// verdict[11] says whether A and B were equilibrated.
__device__ __forceinline__ bool chosen(const double* verdict, int moduli) { return verdict[0] == double(moduli); }

// The exponents of MODULI moduli: e_i of each row of A, f_j of each column of B, from their (squared) norms and G.
template <int MODULI>
__global__ void ozaki_exponents(int M, int N, const double* __restrict__ row_norm2, const double* __restrict__ col_plain,
                                const double* __restrict__ col_equilibrated, double G,
                                const double* __restrict__ verdict, int* __restrict__ row_exponents,
                                int* __restrict__ col_exponents) {
  const int u = blockIdx.x * blockDim.x + threadIdx.x;
  if (!chosen(verdict, MODULI)) return;
  if (u < M) row_exponents[u] = scale_exponent(row_norm2[u], G);
  else if (u < M + N) col_exponents[u - M] = scale_exponent((verdict[11] ? col_equilibrated : col_plain)[u - M], G);
}

// A's residue planes: each thread RESIDUE_RUN consecutive k of one row (four 16-byte loads, then one 16-byte store per
// modulus), for every modulus; with equilibration, s_k adds to the row's exponent. Long runs keep many bytes in flight
// per thread, so the split holds its pace on the SMs it shares with the estimate's sample.
constexpr int RESIDUE_RUN = 16;  // Kp is a multiple of 16: a run never straddles two rows
static_assert(RESIDUE_RUN == 16, "a run's residues of one modulus are stored as one int4: four words of four bytes");

// The residues of a run of RESIDUE_RUN elements, k0 .. k0 + 15 along K, scaled by 2^(e + sign s_k) (shift: s_k, or
// null), each modulus's as one 16-byte store at out + l plane_bytes.
template <int MODULI>
__device__ __forceinline__ void split_run(const float (&x)[RESIDUE_RUN / 4][4], int e, int sign,
                                          const int* __restrict__ shift, int k0, int K,
                                          const double* __restrict__ consts, signed char* out, size_t plane_bytes) {
  int w[MODULI][RESIDUE_RUN / 4];  // each modulus's residues, four to a word
#pragma unroll
  for (int v = 0; v < RESIDUE_RUN / 4; ++v) {
    Split20 split[4] = {Split20(0.0f), Split20(0.0f), Split20(0.0f), Split20(0.0f)};
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const int k = k0 + 4 * v + q, s = shift && k < K ? shift[k] : 0;
      split[q] = Split20(rintf(PowerOfTwo(e + sign * s)(finite_or_zero(x[v][q]))));
    }
#pragma unroll
    for (int l = 0; l < MODULI; ++l) {
      const Prime<MODULI> mod(consts, l);
      w[l][v] = pack(mod(split[0]), mod(split[1]), mod(split[2]), mod(split[3]));
    }
  }
#pragma unroll
  for (int l = 0; l < MODULI; ++l)
    *reinterpret_cast<int4*>(out + l * plane_bytes) = make_int4(w[l][0], w[l][1], w[l][2], w[l][3]);
}
template <int MODULI>
__global__ void __launch_bounds__(256) ozaki_residues_a(int M, int K, int Kp, const float* __restrict__ A,
                                                        const int* __restrict__ exponents,
                                                        const int* __restrict__ shift,
                                                        const double* __restrict__ verdict,
                                                        const double* __restrict__ consts,
                                                        signed char* __restrict__ planes) {
  const long long u = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  const int row = int(u / (Kp / RESIDUE_RUN)), k0 = int(u % (Kp / RESIDUE_RUN)) * RESIDUE_RUN;
  if (row >= M || !chosen(verdict, MODULI)) return;
  if (!verdict[11]) shift = nullptr;
  const int e = exponents[row];
  float x[RESIDUE_RUN / 4][4];
#pragma unroll
  for (int v = 0; v < RESIDUE_RUN / 4; ++v) load_four(A + size_t(row) * K, k0 + 4 * v, K, x[v]);
  split_run<MODULI>(x, e, 1, shift, k0, K, consts, planes + size_t(row) * Kp + k0, size_t(M) * Kp);
}

// B's residue planes, transposed: each thread RESIDUE_RUN consecutive k of one column (sixteen 4-byte loads, lanes side
// by side in a row), for every modulus one 16-byte store into the column's plane row. A warp's lanes 16 apart share a
// column and take the next RESIDUE_RUN k, so that each store fills whole 32-byte sectors; a block's warps take the
// next 32 k each, so that it writes B_DEPTH bytes of each of its B_COLS rows. No shared memory and no barrier: no
// phase of the block waits for another, and its loads stay in flight. With equilibration, s_k comes off the column's
// exponent.
constexpr int B_COLS = 16;  // a block's columns of B
constexpr int B_DEPTH = 256;  // and its k
static_assert(B_DEPTH == 256 / B_COLS * RESIDUE_RUN, "256 threads: B_COLS columns x B_DEPTH / RESIDUE_RUN runs of k");
template <int MODULI>
__global__ void __launch_bounds__(256) ozaki_residues_b(int K, int N, int Kp, const float* __restrict__ B,
                                                        const int* __restrict__ exponents,
                                                        const int* __restrict__ shift,
                                                        const double* __restrict__ verdict,
                                                        const double* __restrict__ consts,
                                                        signed char* __restrict__ planes) {
  if (!chosen(verdict, MODULI)) return;
  if (!verdict[11]) shift = nullptr;
  const int j = blockIdx.x * B_COLS + threadIdx.x % B_COLS;
  if (j >= N) return;  // no barrier follows
  const int f = exponents[j];
  for (int k0 = blockIdx.y * B_DEPTH + threadIdx.x / B_COLS * RESIDUE_RUN; k0 < Kp; k0 += gridDim.y * B_DEPTH) {
    float x[RESIDUE_RUN / 4][4];  // Kp is a multiple of RESIDUE_RUN: a run lies in the row
#pragma unroll
    for (int t = 0; t < RESIDUE_RUN; ++t) x[t / 4][t % 4] = k0 + t < K ? B[size_t(k0 + t) * N + j] : 0.0f;
    split_run<MODULI>(x, f, -1, shift, k0, K, consts, planes + size_t(j) * Kp + k0, size_t(N) * Kp);
  }
}

// v mod p in [0, p), exactly, for any int32 v and 128 < p <= 256: v = hi 2^16 + lo folds to x = hi (2^16 mod p) + lo
// plus a multiple of p that makes it positive, 0 < x < 2^24 + 2^17, as v + hi (2^16 mod p - 2^16) + offset in 32-bit
// arithmetic; then x / p is the high word of x ceil(2^32 / p) (exact in that range: tests/test_ozaki.py checks every x).
struct Modulus {
  unsigned minus_p, fold, offset, magic;
  __device__ __forceinline__ explicit Modulus(unsigned p)
      : minus_p(0u - p), fold((1u << 16) % p - (1u << 16)), offset(p * ((1u << 23) / p + 1)),
        magic(unsigned(((1ull << 32) + p - 1) / p)) {}
  __device__ __forceinline__ unsigned operator()(int v) const {
    const unsigned x = unsigned(v) + unsigned(v >> 16) * fold + offset;
    return x + __umulhi(x, magic) * minus_p;
  }
};

// Np, the bytes of a row of the products' residues of C, is a multiple of this (ozaki.N_ALIGN): whole 16-byte stores.
constexpr int C_ROW_ALIGN = 16;

// A 4 x 4 transpose of 16-bit items across the four lanes of a quad (t = lane % 4): lane t gives X[t][0..3], packed
// two to a word (lo: items 0, 1; hi: 2, 3), and gets X[0..3][t], in that order, in two words. Two shuffles.
__device__ __forceinline__ uint2 quad_transpose(unsigned lo, unsigned hi, int t) {
  const bool a = t & 1, b = t & 2;
  const unsigned keep = b ? hi : lo, got = __shfl_xor_sync(0xffffffff, b ? lo : hi, 2);  // items 2b, 2b + 1 of t, t ^ 2
  const unsigned mine = __byte_perm(keep, got, a ? 0x7632 : 0x5410);  // item 2b + a of lanes t, t ^ 2
  const unsigned theirs = __shfl_xor_sync(0xffffffff, __byte_perm(keep, got, a ? 0x5410 : 0x7632), 1);  // of t ^ 1, t ^ 3
  const unsigned x = a ? theirs : mine, y = a ? mine : theirs;  // lanes (0 or 2, 2 or 0) and (1 or 3, 3 or 1)
  return make_uint2(__byte_perm(x, y, b ? 0x7632 : 0x5410), __byte_perm(x, y, b ? 0x5410 : 0x7632));
}

// The products' epilogue: each int32 sum modulo this product's modulus, a byte, into its plane (rows of Np bytes).
// A lane holds columns 8j + 2t and 8j + 2t + 1 of its two rows for every j; for each eight j, the quad trades them so
// that lane t stores the 16 bytes of j = 8J + 2t and 8J + 2t + 1, and the quad 64 consecutive bytes of the row.
struct StoreResidues {
  static constexpr unsigned WARP_SMEM = 0;
  unsigned char* __restrict__ R;
  int M, Np;
  const double* __restrict__ consts;

  template <int NACC>
  __device__ __forceinline__ void operator()(const int (&acc)[NACC], int matrix, int row0, int col0, int warp, int lane,
                                             unsigned) const {
    static_assert(NACC % 32 == 0, "groups of eight j");
    const Modulus mod{unsigned(consts[matrix])};
    unsigned char* plane = R + size_t(matrix) * M * Np;
    const int r = row0 + 16 * warp + lane / 4, t = lane % 4;
#pragma unroll
    for (int J = 0; J < NACC / 32; ++J)
#pragma unroll
      for (int h = 0; h < 2; ++h) {  // rows r and r + 8
        unsigned x[8];  // the two bytes of j = 8J + u, as 16 bits
#pragma unroll
        for (int u = 0; u < 8; ++u) {
          const int* v = acc + 4 * (8 * J + u) + 2 * h;
          x[u] = __byte_perm(mod(v[0]), mod(v[1]), 0x0040);
        }
        const uint2 even = quad_transpose(__byte_perm(x[0], x[2], 0x5410), __byte_perm(x[4], x[6], 0x5410), t);
        const uint2 odd = quad_transpose(__byte_perm(x[1], x[3], 0x5410), __byte_perm(x[5], x[7], 0x5410), t);
        const int row = r + 8 * h, col = col0 + 64 * J + 16 * t;  // col and Np are multiples of 16
        if (row < M && col < Np)
          *reinterpret_cast<uint4*>(plane + size_t(row) * Np + col) = make_uint4(even.x, even.y, odd.x, odd.y);
      }
  }
  __device__ __forceinline__ void drain(int) const {}
};

template <int MODULI, int BN, int CONSUMERS, int STAGES, int CLUSTER, int GROUP>
__global__ void __launch_bounds__(128 * (CONSUMERS + 1), 1) __cluster_dims__(1, CLUSTER, 1)
ozaki_products(int M, int N, int Kp, int Np, const double* __restrict__ consts, unsigned char* __restrict__ R,
               const void* __restrict__ map_a, const void* __restrict__ map_b, const double* __restrict__ verdict) {
  if (!chosen(verdict, MODULI)) return;  // every block alike, before any barrier
  if constexpr (MODULI > 0)  // MODULI = 0 (auto) launches no products of its own
    s8_products<BN, CONSUMERS, STAGES, CLUSTER, GROUP>(M, N, Kp, MODULI, map_a, map_b, StoreResidues{R, M, Np, consts});
}

// C from the residues, with what the row and column check needs of it (kernels/ozaki_check.cu's ozaki_lines): each
// row's and column's largest |C| over its finite elements, as float bits (non-negative floats order as their bits), into
// row_max and col_max (zeroed before). A block takes REBUILD_ROWS rows x 256 columns, 64 threads across (four consecutive
// columns each) and 4 rows at a time, so that a column's maximum is a block's before it is an atomic. With K cut into
// `chunks` (each product's int32 sums exact), each modulus's residues of the chunks, `chunk_stride` bytes apart, add up
// modulo it.
constexpr int REBUILD_ROWS = 64;
template <int MODULI>
__global__ void __launch_bounds__(256, 4) ozaki_reconstruct(int M, int N, int Np, int chunks, long long chunk_stride,
                                                            float alpha, float beta, float* __restrict__ C,
                                                            const unsigned char* __restrict__ R,
                                                            const int* __restrict__ row_exponents,
                                                            const int* __restrict__ col_exponents,
                                                            const double* __restrict__ verdict,
                                                            const double* __restrict__ consts,
                                                            unsigned* __restrict__ row_max,
                                                            unsigned* __restrict__ col_max) {
  __shared__ unsigned row_part[2][REBUILD_ROWS];
  __shared__ uint4 col_part[4][64];
  if (!chosen(verdict, MODULI)) return;  // every block alike, before any barrier
  const int tx = threadIdx.x % 64, ty = threadIdx.x / 64, lane = threadIdx.x % 32;
  const int j0 = (blockIdx.x * 64 + tx) * 4, j = blockIdx.x * 256 + threadIdx.x;
  const double P = consts[2 * MODULI], inv_P = consts[2 * MODULI + 1];
  int f[4];
#pragma unroll
  for (int q = 0; q < 4; ++q) f[q] = j0 + q < N ? col_exponents[j0 + q] : 0;
  double W[MODULI];  // the CRT weights
#pragma unroll
  for (int l = 0; l < MODULI; ++l) W[l] = consts[MODULI + l];
  unsigned column[4] = {0u, 0u, 0u, 0u};
  for (int r0 = blockIdx.y * REBUILD_ROWS; r0 < M; r0 += gridDim.y * REBUILD_ROWS) {  // y may be too short for M
    // each row's residues, four bytes a word (Np >= N is a multiple of 16: the four lie in the row), loaded a row ahead,
    // so that they are in flight while the row before is rebuilt
    unsigned next[MODULI];
    const auto load = [&](int i) {
#pragma unroll
      for (int l = 0; l < MODULI; ++l)
        next[l] = i < M && j0 < N ? *reinterpret_cast<const unsigned*>(R + (size_t(l) * M + i) * Np + j0) : 0u;
    };
    load(r0 + ty);
    for (int r = ty; r < REBUILD_ROWS; r += 4) {
      const int i = r0 + r;
      unsigned word[MODULI];
#pragma unroll
      for (int l = 0; l < MODULI; ++l) word[l] = next[l];
      if (r + 4 < REBUILD_ROWS) load(i + 4);
      unsigned row = 0u;
      if (i < M && j0 < N) {
        if (chunks > 1) {  // each modulus's residues of the other chunks of K, added modulo it
#pragma unroll
          for (int l = 0; l < MODULI; ++l) {
            const unsigned p = unsigned(consts[l]);
            const unsigned char* at = R + (size_t(l) * M + i) * Np + j0;
            unsigned x = word[l] & 0xff, y = word[l] >> 8 & 0xff, z = word[l] >> 16 & 0xff, w = word[l] >> 24;
            for (int c = 1; c < chunks; ++c) {
              const uchar4 v = *reinterpret_cast<const uchar4*>(at + c * chunk_stride);
              x = (x + v.x) % p, y = (y + v.y) % p, z = (z + v.z) % p, w = (w + v.w) % p;
            }
            word[l] = x | y << 8 | z << 16 | w << 24;
          }
        }
        double s[4] = {0.0, 0.0, 0.0, 0.0};
#pragma unroll
        for (int l = 0; l < MODULI; ++l)
#pragma unroll
          for (int q = 0; q < 4; ++q) s[q] = fma(byte_as_double(word[l], q), W[l], s[q]);
        const int e = row_exponents[i];
        const double scale = double(alpha);
        float out[4];
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          // c is an integer and |e + f| < 1000 for finite floats (e and f within [-600, 400]): c 2^-(e + f) is exact
          const double c = fma(-round_double(s[q] * inv_P), P, s[q]);  // the representative nearest zero: |c| <= P / 4
          out[q] = float(scale * (c * exp2d(-(e + f[q]))));
          const unsigned size = j0 + q < N && isfinite(out[q]) ? __float_as_uint(fabsf(out[q])) : 0u;
          column[q] = max(column[q], size), row = max(row, size);
        }
        float* at = C + size_t(i) * N;
        if (N % 4 == 0) {
          float4 v = make_float4(out[0], out[1], out[2], out[3]);
          if (beta != 0.0f) {
            const float4 old = *reinterpret_cast<const float4*>(at + j0);
            v = make_float4(v.x + beta * old.x, v.y + beta * old.y, v.z + beta * old.z, v.w + beta * old.w);
          }
          *reinterpret_cast<float4*>(at + j0) = v;
        } else {
#pragma unroll
          for (int q = 0; q < 4; ++q)
            if (j0 + q < N) at[j0 + q] = beta == 0.0f ? out[q] : out[q] + beta * at[j0 + q];
        }
      }
      row = __reduce_max_sync(0xffffffff, row);
      if (lane == 0) row_part[tx / 32][r] = row;
    }
    __syncthreads();
    if (threadIdx.x < REBUILD_ROWS && r0 + threadIdx.x < M) {
      const unsigned row = max(row_part[0][threadIdx.x], row_part[1][threadIdx.x]);
      if (row) atomicMax(row_max + r0 + threadIdx.x, row);
    }
    __syncthreads();  // row_part is rewritten next
  }
  col_part[ty][tx] = make_uint4(column[0], column[1], column[2], column[3]);
  __syncthreads();
  unsigned largest = 0u;  // each thread one of the block's 256 columns, over the 4 row lanes
#pragma unroll
  for (int t = 0; t < 4; ++t) largest = max(largest, reinterpret_cast<const unsigned*>(col_part[t])[threadIdx.x]);
  if (j < N && largest) atomicMax(col_max + j, largest);
}

// SGEMM's infinities and NaNs: an element of a row of A or a column of B that holds one gets what IEEE arithmetic
// makes of the sum (NaN from a NaN, an infinity times zero or infinities of both signs; else the infinity's sign),
// added to what the scheme computed from the finite entries (alpha = 0 reads neither A nor B, as in BLAS).
__global__ void ozaki_nonfinite(int M, int N, int K, float alpha, const float* __restrict__ A,
                                const float* __restrict__ B, const int* __restrict__ row_bad,
                                const int* __restrict__ col_bad, float* __restrict__ C) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x, i = blockIdx.y;
  if (j >= N || alpha == 0.0f || !(row_bad[i] || col_bad[j])) return;
  bool nan = false, plus = false, minus = false;
  for (int h = 0; h < K; ++h) {
    const float x = A[size_t(i) * K + h], y = B[size_t(h) * N + j];
    if (isnan(x) || isnan(y)) nan = true;
    else if (isinf(x) || isinf(y)) {
      if (x == 0.0f || y == 0.0f) nan = true;
      else if ((x < 0.0f) != (y < 0.0f)) minus = true;
      else plus = true;
    }
  }
  if (nan || plus || minus) {
    const float sum = nan || (plus && minus) ? __int_as_float(0x7fffffff) : __int_as_float(plus ? 0x7f800000 : 0xff800000);
    C[size_t(i) * N + j] += alpha * sum;
  }
}
