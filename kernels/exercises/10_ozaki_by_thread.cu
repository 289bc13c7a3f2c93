// Chapter 10's exercise: the Ozaki scheme in one thread per element of C, with eight moduli.
//
// The thread scales its row of A and its column of B to integers by powers of two, multiplies their residues modulo
// each modulus as int8 values into an exact int32 sum (what one INT8 GEMM per modulus does for every element at once),
// rebuilds the integer sum from its residues by the Chinese remainder theorem and undoes the powers of two. Every
// thread splits a whole row and a whole column, so it is slow: kernel 16's pipeline splits each once. The book's
// contract, one thread per element of a BLOCK x BLOCK tile as in chapter 1's coalesced kernel.
// gl.submit(source, "ozaki_by_thread") checks it.
constexpr int MODULI = 8;
__constant__ int MODULUS[MODULI] = {256, 255, 253, 251, 247, 241, 239, 233};  // pairwise coprime, at most 256
// Their CRT weights (gemm_lab.precision.ozaki.weights(8)) and their product P, rounded to doubles.
__constant__ double WEIGHT[MODULI] = {1.2077714492250747e+19, 4.472806580066995e+18, 9.776742798470169e+18,
                                      8.650188504339233e+18, 3.783155265516887e+18, 7.526604483580216e+18,
                                      1.8973971553795315e+18, 6.782411342906285e+18};
constexpr double P = 1.3741755155627516e+19;

// x (an integer) modulo p, as the int8 a tensor core multiplies.
__device__ __forceinline__ int residue(double x, int p) {
  const double r = x - rint(x / p) * p;  // the residue nearest zero, in [-p/2, p/2]
  return static_cast<signed char>(static_cast<int>(r));  // an int8: p / 2 = 128 becomes -128, the same modulo 256
}

// The power of two that brings a vector of squared norm `norm2` to a norm of at most 2^G (a zero vector: 1).
__device__ __forceinline__ int scale_exponent(double norm2, double G) {
  return norm2 == 0.0 ? 0 : int(floor(G - 0.5 * log2(norm2)));
}

template <int BLOCK>
__global__ void __launch_bounds__(BLOCK * BLOCK)
sgemm_ozaki_by_thread(int M, int N, int K, float alpha, const float* __restrict__ A, const float* __restrict__ B,
                      float beta, float* __restrict__ C) {
  const int row = blockIdx.y * BLOCK + threadIdx.x / BLOCK;
  const int col = blockIdx.x * BLOCK + threadIdx.x % BLOCK;  // fast-moving index -> column
  if (row >= M || col >= N) return;

  // Scale: the row of A and the column of B to norms of at most 2^G, so that every integer dot product is below
  // P / 4 (Cauchy-Schwarz, with room for the rounding to integers: ozaki.norm_bound).
  double row_norm2 = 0.0, col_norm2 = 0.0;
  for (int k = 0; k < K; ++k) {
    const double a = A[row * K + k], b = B[k * N + col];
    row_norm2 += a * a, col_norm2 += b * b;
  }
  const double G = log2(sqrt(P) / 2 - sqrt(double(K)) / 2);
  const int e = scale_exponent(row_norm2, G), f = scale_exponent(col_norm2, G);

  // Multiply: per modulus, the int32 sum of the int8 products of the residues, exact (K < 2^17).
  int sums[MODULI] = {};
  for (int k = 0; k < K; ++k) {
    const double x = rint(ldexp(double(A[row * K + k]), e)), y = rint(ldexp(double(B[k * N + col]), f));
#pragma unroll
    for (int l = 0; l < MODULI; ++l) sums[l] += residue(x, MODULUS[l]) * residue(y, MODULUS[l]);
  }

  // Rebuild: each sum's residue in [0, p) times its weight, added up; the integer is the representative of that sum
  // modulo P nearest zero; then the powers of two come off.
  double s = 0.0;
#pragma unroll
  for (int l = 0; l < MODULI; ++l) s += double((sums[l] % MODULUS[l] + MODULUS[l]) % MODULUS[l]) * WEIGHT[l];
  const double c = s - rint(s / P) * P;  // |c| <= P / 4
  const float result = float(alpha * ldexp(c, -(e + f)));
  float* out = &C[row * N + col];
  *out = beta == 0.0f ? result : result + beta * *out;
}
