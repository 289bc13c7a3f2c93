"""Kernel 15, the INT8 product that the Ozaki scheme runs once per modulus, on its own beside cuBLAS's INT8 GEMM:
int8 operands, int32 sums and results, both K-major (C = A B^T with A M x K and B^T N x K, row-major).

cuBLAS is called through CuPy's binding of cublasGemmEx (CUDA_R_8I operands, CUDA_R_32I results, CUBLAS_COMPUTE_32I),
in the same process as our kernel, the two taking turns as every benchmark of the book does. Both results are
checked exactly (integer sums are exact, or wrong). Kernel 15 is the ozaki spec's product: the same tile parameters
and rules, less MODULI.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import catalog, device, liverun, records, timing, tma, turns
from ..records import Measurement
from ..spec import ceil_div

PROBE = catalog.PROBES[catalog.INT8_PRODUCT]
EPILOGUE_SMEM = 4 * 4096  # bytes of shared memory per consumer warpgroup for the TMA stores of C
CUDA_R_8I, CUDA_R_32I = 3, 10  # cudaDataType_t values of int8 and int32 (CuPy's runtime module names only some)


def full_params(params: dict[str, int] | None = None) -> dict[str, int]:
    """Defaults filled in and validated by the ozaki spec's rules (MODULI aside)."""
    spec = catalog.get("ozaki")
    if params and params.get("MODULI", spec.defaults["MODULI"]) != spec.defaults["MODULI"]:  # the ozaki spec's dicts
        raise ValueError(f"{PROBE.name} (kernel 15) is one INT8 product: it has no MODULI; its parameters are "
                         f"{', '.join(PROBE.params)}")
    p = catalog.validate(spec, {**(params or {}), "MODULI": spec.defaults["MODULI"]})
    return {name: p[name] for name in PROBE.params}


def _validate_shape(m: int, n: int, k: int) -> None:
    if min(m, n, k) < 1:
        raise ValueError(f"shape M={m}, N={n}, K={k}: every dimension must be at least 1")
    if k % 16 or n % 4:
        raise ValueError(f"shape M={m}, N={n}, K={k}: K must be a multiple of 16 and N of 4 (TMA reads and writes rows "
                         "of whole 16 bytes)")
    if k > catalog.INT8_MAX_K:
        raise ValueError(f"shape M={m}, N={n}, K={k}: int32 sums of K products of int8 stay exact up to "
                         f"K = {catalog.INT8_MAX_K}")


@functools.cache
def _kernel(name: str, smem: int) -> Any:
    import cupy

    from ..compiler import NVRTC_OPTIONS

    module = cupy.RawModule(code=PROBE.source_text(), options=(*NVRTC_OPTIONS, f"-arch={PROBE.arch}"),
                            name_expressions=[name])
    fn = module.get_function(name)
    fn.max_dynamic_shared_size_bytes = smem
    return fn


def launcher(params: dict[str, int], a: Any, bt: Any, c: Any) -> Callable[[], Any]:
    """A call that launches kernel 15 on int8 A (M x K), B^T (N x K) into int32 C (M x N), all C-contiguous."""
    spec, p = catalog.get("ozaki"), full_params(params)
    (m, k), (n, _) = a.shape, bt.shape
    full = {**p, "MODULI": spec.defaults["MODULI"]}
    smem = spec.smem_bytes(full) + p["CONSUMERS"] * EPILOGUE_SMEM
    fn = _kernel(PROBE.name_expression(p), smem)
    bm, bn = spec.tile(full)
    maps = (planes_map(a.reshape(1, m, k), bm), planes_map(bt.reshape(1, n, k), bn // p["CLUSTER"]),
            tma.tensor_map(c, 8))
    grid = spec.grid(full, m, n, slots=device.gpu().sms)  # one block per SM, whole clusters
    args = (np.int32(m), np.int32(n), np.int32(k), *maps)

    def launch() -> Any:
        fn(grid, (spec.threads(full),), args, shared_mem=smem)
        return c

    return launch


def cublas_launcher(a: Any, bt: Any, c: Any) -> Callable[[], Any]:
    """cuBLAS's INT8 GEMM on the same operands. cuBLAS is column-major: our row-major C is its N x M matrix C^T, our B^T
    its K x N matrix X (ld K) and our A its K x M matrix Y = A^T (ld K), so C^T = X^T Y, both operands K-major, the
    layout cuBLAS's INT8 kernels want."""
    import cupy
    from cupy.cuda import cublas

    (m, k), (n, _) = a.shape, bt.shape
    one, zero = np.array(1, dtype=np.int32), np.array(0, dtype=np.int32)
    handle = cupy.cuda.device.get_cublas_handle()

    def launch() -> Any:
        cublas.gemmEx(handle, cublas.CUBLAS_OP_T, cublas.CUBLAS_OP_N, n, m, k, one.ctypes.data, bt.data.ptr, CUDA_R_8I,
                      k, a.data.ptr, CUDA_R_8I, k, zero.ctypes.data, c.data.ptr, CUDA_R_32I, n,
                      cublas.CUBLAS_COMPUTE_32I, cublas.CUBLAS_GEMM_DEFAULT)
        return c

    return launch


def operands(m: int, n: int, k: int, seed: int | None = None) -> tuple[Any, Any]:
    """Uniformly random int8 A (M x K) and B^T (N x K) on the GPU, every value of -128..127 equally likely."""
    import cupy

    rng = cupy.random.default_rng(seed)
    return (rng.integers(-128, 128, (m, k), dtype=cupy.int32).astype(cupy.int8),
            rng.integers(-128, 128, (n, k), dtype=cupy.int32).astype(cupy.int8))


def exact(launch: Callable[[], Any], a: Any, bt: Any, c: Any) -> bool:
    """Whether a launch's int32 C equals A B^T, computed in float64 (exact: the sums are below 2^53)."""
    import cupy

    c.fill(-1)
    launch()
    return bool((c.astype(cupy.float64) == a.astype(cupy.float64) @ bt.astype(cupy.float64).T).all())


def bench(size: int | Sequence[int], params: dict[str, int] | None = None, *, runs: int = 0,
          method: turns.Method | None = None) -> Measurement:
    """Kernel 15 beside cuBLAS's INT8 GEMM on one shape, both checked exactly first, in a race of `method`; `gflops`
    counts 2 M N K integer operations (replay: the recorded result)."""
    m, n, k = timing.shape_of(size)
    p = full_params(params)
    _validate_shape(m, n, k)
    method = method or timing.default_method(PROBE.name, p, (m, n, k))
    label = f"{PROBE.name} {p} at {m}x{n}x{k}, {method.name}"
    with liverun.work("races", label, timing.race_seconds(PROBE.name, p, (m, n, k), method)) as task:
        if not task.live or catalog.unsupported(PROBE, device.gpu().cc):
            return records.lookup(PROBE.name, p, m, n, k)
        task.result = task.result or _bench(p, (m, n, k), runs, method)
        return task.result


def _bench(p: dict[str, int], shape: tuple[int, int, int], runs: int, method: turns.Method) -> Measurement:
    """`bench` live: both sides checked exactly, then raced."""
    import cupy

    m, n, k = shape
    a, bt = operands(m, n, k, seed=0)
    c = cupy.empty((m, n), cupy.int32)
    ours, theirs = launcher(p, a, bt, c), cublas_launcher(a, bt, c)
    if not (exact(ours, a, bt, c) and exact(theirs, a, bt, c)):
        raise timing.VerificationError(f"kernel 15 {p} or cuBLAS at M={m}, N={n}, K={k}: not the exact int32 product")
    sets = [(a, bt, c)] + [(*operands(m, n, k), cupy.empty((m, n), cupy.int32)) for _ in range(_extra_sets(m, n, k))]
    mine, cublas_side = turns.race([[launcher(p, *s) for s in sets], [cublas_launcher(*s) for s in sets]], runs,
                                     method)
    return timing.measurement(PROBE, PROBE.precision, p, (m, n, k), mine, cublas_side, 0.0, method)


def _extra_sets(m: int, n: int, k: int) -> int:
    """More operand sets beyond the first, so that cycling through them moves more than twice the L2."""
    return max(0, ceil_div(2 * device.gpu().l2_bytes, m * k + n * k + 4 * m * n) - 1)


def planes_map(x: Any, box_rows: int, k0: int = 0, k1: int | None = None) -> Any:
    """A device copy of the tensor map of a batch of int8 matrices `x` (planes, rows, row bytes: K-major, each row a
    multiple of 16 bytes), or of their bytes k0 to k1 of each row (k0 a multiple of 16), read in boxes of box_rows x 128
    bytes of one plane with the 128-byte swizzle; rows past a plane's end, and bytes past k1, read as zeros (kernels
    15 and 16: the residue planes of the Ozaki scheme too)."""
    planes, rows, cols = x.shape
    k1 = cols if k1 is None else k1
    if k0 % 16 or not 0 <= k0 < k1 <= cols:
        raise ValueError(f"bytes {k0} to {k1} of rows of {cols}: k0 must be a multiple of 16 below k1 <= {cols}")
    return tma.encode("UINT8", x.data.ptr + k0, [k1 - k0, rows, planes], [cols, rows * cols], [128, box_rows, 1],
                      f"{planes} int8 matrices of {rows}x{cols}")
