// The Ozaki scheme's row and column check (gemm_lab/precision/ozaki.py, "The accuracy contract"), after the products:
// the estimate's sample does not see a row of C far smaller than the largest, in columns whose scale a few large
// entries of B set, yet such a row loses the bits that the scale takes. The scheme's error in C[i][j] is set by the
// scales of row i and column j alone: with the scaled integers' rounding errors of variance 1/12, its standard
// deviation is sigma_ij = sqrt((|a_i|^2 2^-2f_j + |b_j|^2 2^-2e_i) / 12), |a_i| and |b_j| the (equilibrated) norms of
// row i of A and column j of B, e_i and f_j their powers of two. Both terms are largest in the largest-norm column
// (row), so max_j sigma_ij needs one number of B (of A), and a row's relative error, max_j sigma_ij / max_j |C_ij|,
// needs the largest |C| of each row and column, which kernel 16's ozaki_reconstruct leaves as it writes C. ozaki_lines
// compares the worst row and column with SGEMM's error on the estimate's sample over the same maxima, a lower estimate
// of SGEMM's worst row and column.
// Kept out of kernels/16_ozaki.cu, whose build every recorded Ozaki measurement is tied to.

constexpr int CANDIDATES = 4;    // numbers of moduli weighed: 6, 7, 8 and 9 (kernels/16_ozaki.cu's)
constexpr int SAMPLE_FIELDS = 8;  // doubles per sampled element (kernels/16_ozaki.cu's ozaki_sample)

// kernels/16_ozaki.cu's: the power of two that brings a vector of squared norm `norm2` to a norm of at most 2^G.
__device__ __forceinline__ int scale_exponent(double norm2, double G) {
  return norm2 == 0.0 ? 0 : int(floor(G - 0.5 * log2(norm2)));
}

// The largest of a warp's non-negative x, into *at (zeroed before; non-negative doubles order as their bits).
__device__ __forceinline__ void largest(double x, double* at) {
  for (int d = 16; d > 0; d /= 2) x = fmax(x, __shfl_xor_sync(0xffffffff, x, d));
  if (threadIdx.x % 32 == 0 && x > 0.0)
    atomicMax(reinterpret_cast<unsigned long long*>(at), (unsigned long long)__double_as_longlong(x));
}

// result (zeroed before):
//   [q]     the worst row's relative error with 6 + q moduli: max_i |alpha| max_j sigma_ij / row_max_i;
//   [4 + q] the worst column's: max_j |alpha| max_i sigma_ij / col_max_j;
//   [8], [9] SGEMM's on the sample: max |alpha| sqrt(its variance) / row_max_i (col_max_j) over the sampled elements.
// Rows and columns that are zero in A or B, or in C, are left out (C's maxima are of alpha A B).
extern "C" __global__ void __launch_bounds__(256) ozaki_lines(int M, int N, double alpha,
                                                              const double* __restrict__ row_norm2,
                                                              const double* __restrict__ col_plain,
                                                              const double* __restrict__ col_equilibrated,
                                                              const int* __restrict__ flags,
                                                              const unsigned long long* __restrict__ best,
                                                              const double* __restrict__ gs,
                                                              const unsigned* __restrict__ row_max,
                                                              const unsigned* __restrict__ col_max,
                                                              const double* __restrict__ sample, int samples,
                                                              double* __restrict__ result) {
  const double* col_norm2 = flags[1] ? col_equilibrated : col_plain;
  const double widest_row = row_norm2[best[0] & 0xffffffffu], widest_col = col_norm2[best[1] & 0xffffffffu];
  const double scale = fabs(alpha) / sqrt(12.0);
  double rows[CANDIDATES] = {0.0, 0.0, 0.0, 0.0}, cols[CANDIDATES] = {0.0, 0.0, 0.0, 0.0};
  double sgemm_row = 0.0, sgemm_col = 0.0;
  for (int u = blockIdx.x * blockDim.x + threadIdx.x; u < M + N + samples; u += gridDim.x * blockDim.x) {
    if (u < M + N) {
      const bool row = u < M;
      const int index = row ? u : u - M;
      const double norm2 = row ? row_norm2[index] : col_norm2[index], other = row ? widest_col : widest_row;
      const float extent = __uint_as_float(row ? row_max[index] : col_max[index]);
      if (norm2 == 0.0 || extent == 0.0f) continue;
#pragma unroll
      for (int q = 0; q < CANDIDATES; ++q) {
        const int own = scale_exponent(norm2, gs[q]), far = scale_exponent(other, gs[q]);
        const double relative = scale * sqrt(norm2 * ldexp(1.0, -2 * far) + other * ldexp(1.0, -2 * own)) / extent;
        if (row) rows[q] = fmax(rows[q], relative);
        else cols[q] = fmax(cols[q], relative);
      }
    } else {
      const double* o = sample + size_t(u - M - N) * SAMPLE_FIELDS;
      const double sgemm = fabs(alpha) * sqrt(o[1]);
      const float in_row = __uint_as_float(row_max[int(o[6])]), in_col = __uint_as_float(col_max[int(o[7])]);
      if (in_row > 0.0f) sgemm_row = fmax(sgemm_row, sgemm / in_row);
      if (in_col > 0.0f) sgemm_col = fmax(sgemm_col, sgemm / in_col);
    }
  }
#pragma unroll
  for (int q = 0; q < CANDIDATES; ++q) largest(rows[q], result + q), largest(cols[q], result + CANDIDATES + q);
  largest(sgemm_row, result + 2 * CANDIDATES), largest(sgemm_col, result + 2 * CANDIDATES + 1);
}
