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
#include "tiles.cuh"

constexpr int CANDIDATES = 4;    // numbers of moduli weighed: 6, 7, 8 and 9 (kernels/16_ozaki.cu's)
constexpr int SAMPLE_FIELDS = 8;  // doubles per sampled element (kernels/16_ozaki.cu's ozaki_sample)
constexpr int LINES = 2 * CANDIDATES + 2;  // doubles of ozaki_lines' result

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

// A steady call replays its captured graph and returns at once (gemm_lab/precision/ozaki_pipeline.py's
// `Pipeline.queue_escape`), so nothing on the host can act on its verdict or its check. This kernel, last in the graph,
// acts for it: where the estimate chose another number of moduli than the graph's, A or B held an infinity or a NaN,
// or the worst row or column errs more than `slack` times SGEMM's (ozaki.py's `hold_lines` rule on ozaki_lines'
// result), it escapes: C = alpha A B + beta C with chapter 5's register tiles, an FP32 product as accurate as SGEMM by
// construction (kernels/05_thread_tile_2d.cu at its default tiles, bit for bit, walking the tiles as a persistent grid).
// Otherwise it adds beta C to the products (`products`, when they were written apart from C) and is done.
// state[0] = whether this call escaped, state[1] counts the escapes. Block 0 also copies both, and the check's result,
// into pinned host memory (`host_state`, `host_lines`: with unified addressing a kernel writes it as device memory), so
// that the graph ends here: copies queued after it would cost the call more than they move.
constexpr int ESCAPE_TILE = 128, ESCAPE_BK = 8, ESCAPE_T = 8, ESCAPE_THREADS = 256;  // kernel 05's defaults
static_assert((ESCAPE_TILE / ESCAPE_T) * (ESCAPE_TILE / ESCAPE_T) == ESCAPE_THREADS, "a thread per 8 x 8 outputs");

extern "C" __global__ void __launch_bounds__(256) ozaki_escape(
    int M, int N, int K, float alpha, float beta, const float* __restrict__ A, const float* __restrict__ B,
    const float* products, float* C, const double* __restrict__ verdict, const int* __restrict__ flags,
    const double* __restrict__ lines, int expected, int q, double slack, double floor, long long* state,
    double* host_lines, long long* host_state) {
  const double row = lines[q] / fmax(lines[2 * CANDIDATES], floor);
  const double col = lines[CANDIDATES + q] / fmax(lines[2 * CANDIDATES + 1], floor);
  const bool escape = int(verdict[0]) != expected || flags[0] != 0 || !(row <= slack) || !(col <= slack);
  if (blockIdx.x == 0) {
    if (threadIdx.x < LINES) host_lines[threadIdx.x] = lines[threadIdx.x];
    if (threadIdx.x == 0) state[0] = escape, state[1] += escape, host_state[0] = state[0], host_state[1] = state[1];
    __threadfence_system();
  }
  if (!escape) {
    if (products != C)  // beta C, added as the host's two steps would: a product, then a sum, each rounded
      for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (long long)M * N;
           i += (long long)gridDim.x * blockDim.x)
        C[i] = __fadd_rn(__fmul_rn(beta, C[i]), products[i]);
    return;
  }
  __shared__ float As[ESCAPE_TILE][ESCAPE_BK];
  __shared__ float Bs[ESCAPE_BK][ESCAPE_TILE];
  const int tr = threadIdx.x / (ESCAPE_TILE / ESCAPE_T) * ESCAPE_T, tc = threadIdx.x % (ESCAPE_TILE / ESCAPE_T) * ESCAPE_T;
  const int across = (N + ESCAPE_TILE - 1) / ESCAPE_TILE, tiles = across * ((M + ESCAPE_TILE - 1) / ESCAPE_TILE);
  for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const int row0 = tile / across * ESCAPE_TILE, col0 = tile % across * ESCAPE_TILE;
    float acc[ESCAPE_T][ESCAPE_T] = {};
    for (int k0 = 0; k0 < K; k0 += ESCAPE_BK) {
      load_tile<ESCAPE_TILE, ESCAPE_BK, ESCAPE_THREADS>(As, A, row0, k0, M, K);
      load_tile<ESCAPE_BK, ESCAPE_TILE, ESCAPE_THREADS>(Bs, B, k0, col0, K, N);
      __syncthreads();
#pragma unroll
      for (int kk = 0; kk < ESCAPE_BK; ++kk)
#pragma unroll
        for (int i = 0; i < ESCAPE_T; ++i)
#pragma unroll
          for (int j = 0; j < ESCAPE_T; ++j) acc[i][j] = fmaf(As[tr + i][kk], Bs[kk][tc + j], acc[i][j]);
      __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < ESCAPE_T; ++i)
#pragma unroll
      for (int j = 0; j < ESCAPE_T; ++j) store_c(C, row0 + tr + i, col0 + tc + j, M, N, alpha, beta, acc[i][j]);
  }
}
