// TF32 operands for the tensor cores: FP32's 8-bit exponent with 10 of its 23 mantissa bits.

// Round to the nearest TF32 value (ties away from zero); the low 13 bits of the result are zero.
__device__ __forceinline__ unsigned to_tf32(float x) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
}

// x = big + small to within FP32's rounding, both TF32: 3xTF32 multiplies with three tensor-core
// products, big*big + big*small + small*big (small*small, at most 2^-22 of the product, is dropped).
struct Split {
  unsigned big, small;
  __device__ __forceinline__ explicit Split(float x) : big(to_tf32(x)), small(to_tf32(x - __uint_as_float(big))) {}
};

// C (16 x 8) += A (16 x 8) * B (8 x 8) on the tensor cores, one warp (compute capability 8.0 and newer);
// the fragment layout is described in 11_tf32_mma.cu.
__device__ __forceinline__ void mma_tf32(float (&c)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
