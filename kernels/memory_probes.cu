// The GPU primer's microbenchmarks (gemm_lab/models/memory.py runs them): how long one load waits at each level of the
// memory hierarchy, and how many bytes per second a copy moves when its data sit in L2 or in DRAM.

// The SM's cycle counter and the GPU's nanosecond timer, read together.
__device__ __forceinline__ void now(long long& cycles, unsigned long long& ns) {
  cycles = clock64();
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
}

using Link = unsigned long long;  // a word of the chase's chain: the address of the next word to load

// One load, cached in L1 (ld.global.ca), that returns the next address.
__device__ __forceinline__ const Link* next(const Link* p) {
  return reinterpret_cast<const Link*>(__ldca(p));
}

// One thread follows a chain of addresses: each load reads the address of
// the next, so no two loads overlap and each step takes the latency of the
// level that holds the chain. `warm` untimed steps first bring the chain
// into this SM's caches, then `steps` are timed. out[0]: SM cycles,
// out[1]: nanoseconds, out[2]: where the chain ended (so that the loads are
// not optimised away). The clocks need not wait for the last load: one
// step in thousands.
extern "C" __global__ void chase_global(const Link* start, int warm,
                                        int steps, Link* out) {
  long long c0, c1;
  unsigned long long t0, t1;
  const Link* p = start;
  for (int i = 0; i < warm; ++i) p = next(p);
  now(c0, t0);
  for (int i = 0; i < steps; ++i) p = next(p);
  now(c1, t1);
  out[0] = c1 - c0;
  out[1] = t1 - t0;
  out[2] = reinterpret_cast<Link>(p);
}

constexpr int SHARED_CHAIN = 1024;  // words of the shared-memory chain (4 KiB)

// The same chase in shared memory: the block writes a ring of byte offsets, word i pointing `stride` words on,
// then thread 0 follows it.
extern "C" __global__ void chase_shared(int stride, int steps, unsigned long long* out) {
  __shared__ unsigned s[SHARED_CHAIN];
  for (int i = threadIdx.x; i < SHARED_CHAIN; i += blockDim.x) s[i] = (i + stride) % SHARED_CHAIN * sizeof(unsigned);
  __syncthreads();
  if (threadIdx.x != 0) return;
  long long c0, c1;
  unsigned long long t0, t1;
  unsigned offset = 0;
  const char* base = reinterpret_cast<const char*>(s);
  now(c0, t0);
  for (int i = 0; i < steps; ++i) offset = *reinterpret_cast<const unsigned*>(base + offset);
  now(c1, t1);
  out[0] = c1 - c0;
  out[1] = t1 - t0;
  out[2] = offset;
}

constexpr int UNROLL = 4;  // float4 loads each thread has in flight before its first store

// src -> dst, one float4 per thread and step of a grid-wide stride, loads and stores cached in L2 only (.cg): the
// bytes come from whichever of L2 and DRAM holds the data.
__device__ __forceinline__ void copy_once(const float4* __restrict__ src, float4* __restrict__ dst, long long n) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + (UNROLL - 1) * stride < n; i += UNROLL * stride) {
    float4 v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) v[u] = __ldcg(src + i + u * stride);
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) __stcg(dst + i + u * stride, v[u]);
  }
  for (; i < n; i += stride) __stcg(dst + i, __ldcg(src + i));
}

// `reps` copies of n float4s, a -> b, then b -> a, and so on: a working set small enough for L2 is read from L2
// every time after the first. Each thread copies the same elements in every round, so no thread reads what
// another wrote.
extern "C" __global__ void copy_cg(float4* a, float4* b, long long n, int reps) {
  for (int r = 0; r < reps; ++r) copy_once(r % 2 ? b : a, r % 2 ? a : b, n);
}
