// wgmma on 8-bit integers (sm_90a): D (64 x N, int32, in registers) (+)= A (64 x 32, int8) * B (32 x N, int8), both
// operands in shared memory, K-major (rows of k, as `k_major_desc` in wgmma.cuh describes: 32 int8 are the 32 bytes
// that 8 TF32 values span, so the same descriptors step through a 128-byte row in four k32 slices). The products and
// their sums are exact in int32 as long as the sum does not overflow. D is laid out as wgmma.cuh's: thread 4g + t of
// warp w holds rows 16w + g (d[4j], d[4j + 1]) and 16w + g + 8 (d[4j + 2], d[4j + 3]), columns 8j + 2t and 8j + 2t + 1.
#define S8_D8(i) "+r"(d[i]), "+r"(d[i + 1]), "+r"(d[i + 2]), "+r"(d[i + 3]), "+r"(d[i + 4]), "+r"(d[i + 5]), \
                 "+r"(d[i + 6]), "+r"(d[i + 7])

template <int N>
struct WgmmaS8;

template <>
struct WgmmaS8<128> {
  __device__ __forceinline__ static void ss(int (&d)[64], unsigned long long a, unsigned long long b, int accumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
        "}, %64, %65, p;\n}\n"
        : S8_D8(0), S8_D8(8), S8_D8(16), S8_D8(24), S8_D8(32), S8_D8(40), S8_D8(48), S8_D8(56)
        : "l"(a), "l"(b), "r"(accumulate));
  }
};

template <>
struct WgmmaS8<256> {
  __device__ __forceinline__ static void ss(int (&d)[128], unsigned long long a, unsigned long long b, int accumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k32.s32.s8.s8 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
        "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
        "}, %128, %129, p;\n}\n"
        : S8_D8(0), S8_D8(8), S8_D8(16), S8_D8(24), S8_D8(32), S8_D8(40), S8_D8(48), S8_D8(56), S8_D8(64), S8_D8(72), S8_D8(80), S8_D8(88), S8_D8(96), S8_D8(104), S8_D8(112), S8_D8(120)
        : "l"(a), "l"(b), "r"(accumulate));
  }
};

// Keep the compiler from moving reads or writes of the int32 accumulators across a wgmma wait (wgmma.cuh's `pin`
// for floats).
template <int N>
__device__ __forceinline__ void pin(int (&x)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+r"(x[i])::"memory");
}
