"""cuBLAS as the book's yardstick: which math `cupy.matmul` computes in, and which cuBLAS each precision races.

Its own module because both the timing and the Ozaki pipeline (whose fallback is cuBLAS SGEMM) call cuBLAS in a
chosen math, and the pipeline sits below the timing.
"""
from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from . import records

# the cuBLAS each precision races: a kernel computes as it promises to, so TF32 kernels race cuBLAS on TF32 tensor
# cores, and FP32, 3xTF32 and the Ozaki scheme (all FP32-accurate) race SGEMM
BASELINE = {"fp32": "fp32", "tf32": "tf32", "3xtf32": "fp32", "ozaki": "fp32"}
_COMPUTE_TYPES = {"fp32": "COMPUTE_TYPE_DEFAULT", "tf32": "COMPUTE_TYPE_TF32"}  # cupy.matmul's, per cuBLAS math


@contextlib.contextmanager
def cublas_math(precision: str) -> Iterator[None]:
    """`cupy.matmul` on float32 computes in `precision`'s math inside the block: "fp32" is FP32 SGEMM (TF32 off),
    "tf32" lets cuBLAS use TF32 tensor cores. CuPy's setting is per process, so the previous one is always restored."""
    import numpy
    from cupy._core import _routines_linalg as linalg

    kernel_name(precision)
    if precision == "fp32":
        require_fp32()
    previous = linalg.get_compute_type(numpy.float32)
    linalg.set_compute_type(numpy.float32, getattr(linalg, _COMPUTE_TYPES[precision]))
    try:
        yield
    finally:
        linalg.set_compute_type(numpy.float32, previous)


def kernel_name(precision: str) -> str:
    """The pseudo-kernel of cuBLAS in `precision`'s math; a ValueError names the maths cuBLAS has."""
    if precision not in records.CUBLAS_KERNELS:
        hint = f"; {precision} kernels race cuBLAS in {BASELINE[precision]}" if precision in BASELINE else ""
        raise ValueError(f"cuBLAS computes in {' or '.join(records.CUBLAS_KERNELS)}, not {precision!r}{hint}")
    return records.CUBLAS_KERNELS[precision]


def require_fp32() -> None:
    """Refuse to time cuBLAS when CuPy is told to let it use TF32 tensor cores: not an FP32 baseline."""
    if os.environ.get("CUPY_TF32", "0") != "0":
        raise RuntimeError("CUPY_TF32 is set: cuBLAS would use TF32 tensor cores, not an FP32 baseline")
