"""Tensor maps for the TMA kernels (13_tf32_mma_tma.cu): the descriptors Hopper's copy engine reads a matrix
through, encoded by the CUDA driver on the host and copied to device memory for the kernel to point at."""
from __future__ import annotations

from typing import Any

BOX_COLS = 32  # floats per box row: 128 bytes, the span of the 128-byte swizzle the kernels read with
STEP = 32  # K per step of the TMA kernels: the depth of B's boxes (A's are BM rows)


def kernel_maps(spec: Any, params: dict[str, int], a: Any, b: Any, out: Any,
                round_copies: bool = False) -> tuple[Any, ...]:
    """The tensor maps a catalogued kernel takes after C: A's and B's for a `tma` spec (A in boxes of its tile's rows,
    or of a block's part of them where a cluster shares A: CLUSTER < 0), B in STEP-deep ones, TF32 if `round_copies`;
    then C's for a `tma_c` spec (boxes of 32 x 32, for TMA stores, FP32); none for the others."""
    rows = spec.tile(params)[0] // (spec.cluster(params) if params.get("CLUSTER", 1) < 0 else 1)
    maps = (tensor_map(a, rows, round_copies), tensor_map(b, STEP, round_copies)) if spec.tma else ()
    return maps + ((tensor_map(out, BOX_COLS),) if spec.tma_c else ())


def tensor_map(x: Any, box_rows: int, tf32: bool = False) -> Any:
    """A device copy of the tensor map of row-major matrix `x` of float32 (or int32: kernel 15's C), read in boxes of
    box_rows x 32 elements with the 128-byte swizzle; TMA fills what lies outside the matrix with zeros. With `tf32`
    its data type is TF32: TMA rounds each float to TF32 (to nearest, ties to even) as it copies it, zeroing the 13
    low bits the tensor cores drop anyway. The row stride must be a multiple of 16 bytes (`catalog` checks it)."""
    rows, cols = x.shape
    kind = {"float32": "TFLOAT32" if tf32 else "FLOAT32", "int32": "INT32"}[str(x.dtype)]
    return encode(kind, x.data.ptr, [cols, rows], [cols * 4], [BOX_COLS, box_rows], f"a {rows}x{cols} matrix")


def encode(kind: str, address: int, dims: list[int], strides: list[int], box: list[int], what: str) -> Any:
    """cuTensorMapEncodeTiled for data of type `kind` (CU_TENSOR_MAP_DATA_TYPE_<kind>) at `address`: `dims` from the
    contiguous one out, the byte `strides` of all but the first, boxes of `box`, the 128-byte swizzle, zeros past the
    ends; the map copied to device memory for a kernel to point at (`what` names the data in an error)."""
    import cupy
    import numpy as np
    from cuda.bindings import driver

    u32, u64 = driver.cuuint32_t, driver.cuuint64_t
    err, tmap = driver.cuTensorMapEncodeTiled(
        getattr(driver.CUtensorMapDataType, f"CU_TENSOR_MAP_DATA_TYPE_{kind}"), len(dims), address,
        [u64(d) for d in dims], [u64(s) for s in strides], [u32(b) for b in box], [u32(1)] * len(dims),
        driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        driver.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B,
        driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
    )
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"the CUDA driver could not encode a tensor map of {what}: {err}")
    return cupy.asarray(np.array(tmap.opaque, dtype=np.uint64))
