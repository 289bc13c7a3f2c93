"""TF32: what the tensor cores do to an FP32 operand, bit for bit, in NumPy (or CuPy, for operands on the GPU).

TF32 keeps FP32's sign and 8-bit exponent and the top 10 of its 23 mantissa bits. The tensor cores
read the 32-bit pattern and ignore the 13 low bits (truncation); `cvt.rna.tf32.f32` rounds to the
nearest TF32 value instead (ties away from zero). 3xTF32 writes x = big + small with both TF32.
"""
from __future__ import annotations

import numpy as np

from ..run import array_module

LOW_BITS = 13  # FP32 mantissa bits that TF32 drops
_KEEP = np.uint32((0xFFFFFFFF << LOW_BITS) & 0xFFFFFFFF)


def to_tf32(x: np.ndarray, rounding: str = "nearest") -> np.ndarray:
    """x (float32) as TF32 values: "nearest" like cvt.rna.tf32.f32, "even" (to nearest, ties to even) like TMA's
    copies through a tensor map of data type TF32 (`tma.tensor_map`), "truncate" like the tensor cores' read."""
    xp = array_module(x)
    bits = xp.ascontiguousarray(x, dtype=xp.float32).view(xp.uint32)
    if rounding in ("nearest", "even"):  # add half of the last kept bit (less one where a tie goes to even), drop
        half = xp.uint32(1 << (LOW_BITS - 1))
        if rounding == "even":
            half = half - xp.uint32(1) + ((bits >> xp.uint32(LOW_BITS)) & xp.uint32(1))
        bits = xp.where(xp.isfinite(x), bits + half, bits)
    elif rounding != "truncate":
        raise ValueError(f"rounding must be 'nearest', 'even' or 'truncate', not {rounding!r}")
    return (bits & xp.uint32(_KEEP)).view(xp.float32)


def split(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """3xTF32's operands: big = tf32(x) and small = tf32(x - big), both rounded to nearest."""
    x = np.asarray(x, dtype=np.float32)
    big = to_tf32(x)
    return big, to_tf32(x - big)
