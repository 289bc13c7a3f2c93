"""SGEMM by the Ozaki scheme II on INT8 tensor cores (kernels/16_ozaki.cu): the moduli, the constants of the Chinese
remainder theorem, and a launch of the whole pipeline (scale, split into residues, INT8 products, reconstruct).

The scheme (Ozaki, Uchino and Imamura, "Ozaki Scheme II: A GEMM-oriented emulation of floating-point matrix
multiplication using an integer modular technique", 2025) turns A and B into integers by scaling each row of A and
each column of B by a power of two, multiplies their residues modulo a few small coprime moduli exactly with INT8
GEMMs, and rebuilds each integer product sum from its residues. `residues` and `reconstruct` do the same on the CPU,
in NumPy, so that the arithmetic can be checked without a GPU.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

from . import compile, tma
from .catalog import COL_NORM_ROWS, Instance

# Pairwise coprime and at most 256, so that a residue in [-p/2, p/2) is an int8; the largest first, for the most bits
# per INT8 product (the kernel takes the first MODULI).
MODULI = (256, 255, 253, 251, 247, 241, 239, 233, 229)
K_ALIGN = 16  # residue rows are padded to whole 16 bytes: TMA's row stride
N_ALIGN = 4  # rows of the products' residues of C are padded to 4 bytes: one 32-bit load per 4 columns

Moduli = int | Sequence[int]  # the first that many of MODULI (as the kernels take them), or moduli of your own


def chosen(moduli: Moduli) -> tuple[int, ...]:
    """The moduli themselves: the first `moduli` of MODULI, or the given ones, checked pairwise coprime."""
    mods = tuple(MODULI[:moduli]) if isinstance(moduli, int) else tuple(int(p) for p in moduli)
    if isinstance(moduli, int) and not 1 <= moduli <= len(MODULI):
        raise ValueError(f"{moduli} moduli: between 1 and {len(MODULI)} of MODULI")
    if not mods or min(mods) < 2:
        raise ValueError(f"moduli {mods}: at least one, each at least 2")
    shared = [(p, q) for i, p in enumerate(mods) for q in mods[i + 1:] if math.gcd(p, q) > 1]
    if shared:
        raise ValueError(f"moduli {mods} are not pairwise coprime: {shared} share a factor, so their residues repeat "
                         "information and P is not the range they pin down")
    return mods


def product(moduli: Moduli) -> int:
    """P: the product of the moduli, the range an integer is known within from its residues."""
    return math.prod(chosen(moduli))


def weights(moduli: Moduli) -> list[int]:
    """The CRT weights W_l = (P / p_l) ((P / p_l)^-1 mod p_l): x = sum_l (x mod p_l) W_l modulo P."""
    mods = chosen(moduli)
    big = math.prod(mods)
    return [big // p * pow(big // p, -1, p) % big for p in mods]


def crt(residues: Sequence[int], moduli: Moduli) -> int:
    """The integer x with |x| <= P / 2 whose residues modulo the moduli are `residues` (the Chinese remainder
    theorem, by the weights: the representative nearest zero, as the reconstruction takes it)."""
    mods = chosen(moduli)
    if len(residues) != len(mods):
        raise ValueError(f"{len(residues)} residues for {len(mods)} moduli {mods}")
    big = math.prod(mods)
    x = sum(int(r) * w for r, w in zip(residues, weights(mods))) % big
    return x - big if x > big // 2 else x


def bits(moduli: Moduli, k: int) -> dict[str, float]:
    """What the moduli buy at depth k: log2 P, G (log2 of the scaled rows' and columns' norm bound) and the bits
    an element of a row of k elements of like size keeps as an integer (G - log2 sqrt(k); FP32 keeps 24)."""
    g = norm_bound(moduli, k)
    return {"log2_P": math.log2(product(moduli)), "G": g, "element_bits": g - math.log2(math.sqrt(k))}


def traffic(moduli: int, m: int, n: int, k: int) -> dict[str, tuple[int, int]]:
    """Bytes each stage of the kernels' pipeline (`STAGES`) must read and write at least, A (m x k) and B (k x n)
    float32: (read, written). Residue rows are padded to Kp and Np bytes as the kernels pad them; C is written
    once (beta = 0); the products read each residue plane once, as if L2 served every re-read."""
    kp, np_ = -(-k // K_ALIGN) * K_ALIGN, -(-n // N_ALIGN) * N_ALIGN
    operands, exps = 4 * (m * k + k * n), 4 * (m + n)
    planes = moduli * (m + n) * kp
    products = moduli * m * np_
    return {"scale": (operands, exps + 8 * n), "split": (operands + exps + 8 * n, planes),
            "products": (planes, products), "reconstruct": (products + exps, 4 * m * n)}


def norm_bound(moduli: Moduli, k: int) -> float:
    """G: rows of A and columns of B are scaled to Euclidean norms of at most 2^G. Rounded to integers their norms grow
    by at most sqrt(k) / 2, and (2^G + sqrt(k) / 2)^2 <= P / 4 bounds every product sum by Cauchy-Schwarz, so the
    reconstruction's representative nearest zero is the sum, with room to spare for rounding in double."""
    room = math.sqrt(product(moduli)) / 2 - math.sqrt(k) / 2
    if room < 1:
        raise ValueError(f"moduli {chosen(moduli)}: P = {product(moduli)} leaves rows of {k} elements no bits at all "
                         f"(P must exceed (sqrt(k) + 2)^2 = {(math.sqrt(k) + 2) ** 2:,.0f})")
    return math.log2(room)


def constants(moduli: int, k: int) -> np.ndarray:
    """The doubles kernels/16_ozaki.cu reads: p_0 .. p_{MODULI-1}, W_0 .. W_{MODULI-1}, P, 1 / P, G."""
    big = product(moduli)
    return np.array([*MODULI[:moduli], *map(float, weights(moduli)), float(big), 1 / big, norm_bound(moduli, k)],
                    dtype=np.float64)


def exponents(x: np.ndarray, axis: int, moduli: Moduli, k: int) -> np.ndarray:
    """The kernels' powers of two (as integers e, scale 2^e) of the rows (axis 1) or columns (axis 0) of x."""
    norm2 = (x.astype(np.float64) ** 2).sum(axis=axis)
    with np.errstate(divide="ignore"):
        e = np.floor(norm_bound(moduli, k) - 0.5 * np.log2(norm2))
    return np.where(norm2 == 0, 0, e).astype(np.int64)


def residues(a: np.ndarray, b: np.ndarray, moduli: Moduli) -> tuple[list[np.ndarray], list[np.ndarray], np.ndarray, np.ndarray]:
    """NumPy's version of the kernels' first two steps: A's and B's residues (symmetric, as int64) per modulus and the
    exponents of A's rows and B's columns. Moduli whose product is so large that the scaled integers would outgrow
    int64 are refused."""
    k = a.shape[1]
    if norm_bound(moduli, k) > 62:
        raise ValueError(f"moduli {chosen(moduli)}: P is too large for the scaled integers to fit int64")
    e, f = exponents(a, 1, moduli, k), exponents(b, 0, moduli, k)
    ai = np.rint(np.ldexp(a.astype(np.float64), e[:, None])).astype(np.int64)
    bi = np.rint(np.ldexp(b.astype(np.float64), f[None, :])).astype(np.int64)
    sym = [lambda x, p=p: (x + p // 2) % p - p // 2 for p in chosen(moduli)]
    return [s(ai) for s in sym], [s(bi) for s in sym], e, f


def reconstruct(products: list[np.ndarray], e: np.ndarray, f: np.ndarray, moduli: Moduli) -> np.ndarray:
    """NumPy's version of the last step, exact in Python integers: C from the products' residues and the exponents."""
    big, w = product(moduli), weights(moduli)
    r = [np.asarray(x % p, dtype=object) for x, p in zip(products, chosen(moduli))]
    x = sum(ri * wi for ri, wi in zip(r, w)) % big
    x = np.where(x > big // 2, x - big, x).astype(np.float64)
    return np.ldexp(x, -(e[:, None] + f[None, :]))


STAGES = ("scale", "split", "products", "reconstruct")  # the pipeline's parts, in order


def stages(inst: Instance, a: Any, b: Any, *, alpha: float, beta: float, out: Any,
           slots: int) -> list[tuple[str, Callable[[], None]]]:
    """The pipeline of a validated ozaki instance on its operands, as (stage of `STAGES`, a call launching that
    stage's kernels on the current stream). Allocates the residues and exponents and encodes the products' tensor
    maps once; `slots`: blocks of the persistent products the GPU holds at once."""
    import cupy

    spec, p, (m, n, k) = inst.spec, inst.params, inst.shape
    moduli, (bm, bn) = p["MODULI"], spec.tile(p)
    kp, np_ = -(-k // K_ALIGN) * K_ALIGN, -(-n // N_ALIGN) * N_ALIGN
    products, kernels = compile.load(inst), compile.companions(inst)
    consts = cupy.asarray(constants(moduli, k))
    norm_b = cupy.empty(n, cupy.float64)
    e_a, f_b = cupy.empty(m, cupy.int32), cupy.empty(n, cupy.int32)
    planes_a, planes_b = cupy.empty((moduli, m, kp), cupy.int8), cupy.empty((moduli, n, kp), cupy.int8)
    r = cupy.empty((moduli, m, np_), cupy.uint8)
    maps = (tma.planes_map(planes_a, bm), tma.planes_map(planes_b, bn // p["CLUSTER"]))
    i32, f32, threads = np.int32, np.float32, (256,)

    def scale() -> None:
        norm_b.fill(0)
        kernels[f"ozaki_row_exponents<{moduli}>"]((-(-m // 8),), threads, (i32(m), i32(k), a, consts, e_a))
        kernels[f"ozaki_col_norms<{COL_NORM_ROWS}>"]((-(-n // 256), -(-k // COL_NORM_ROWS)), threads,
                                                     (i32(k), i32(n), b, norm_b))

    def split() -> None:
        kernels[f"ozaki_residues_a<{moduli}>"]((-(-m * kp // 1024),), threads,
                                               (i32(m), i32(k), i32(kp), a, e_a, consts, planes_a))
        kernels[f"ozaki_residues_b<{moduli}>"]((-(-n // 64), -(-kp // 64)), threads,
                                               (i32(k), i32(n), i32(kp), b, norm_b, consts, f_b, planes_b))

    def multiply() -> None:
        products(spec.grid(p, m, n, slots), (spec.threads(p),), (i32(m), i32(n), i32(kp), i32(np_), consts, r, *maps),
                 shared_mem=spec.launch_smem(p))

    def rebuild() -> None:
        kernels[f"ozaki_reconstruct<{moduli}>"]((-(-m * -(-n // 4) // 256),), threads,
                                                (i32(m), i32(n), i32(np_), f32(alpha), f32(beta), out, r, e_a, f_b,
                                                 consts))

    return list(zip(STAGES, (scale, split, multiply, rebuild)))


def launcher(inst: Instance, a: Any, b: Any, *, alpha: float, beta: float, out: Any, slots: int) -> Callable[[], Any]:
    """`run.launcher` for the ozaki spec: a call that launches the whole pipeline (`stages`) and returns C."""
    parts = [launch for _, launch in stages(inst, a, b, alpha=alpha, beta=beta, out=out, slots=slots)]

    def launch() -> Any:
        for part in parts:
            part()
        return out

    return launch
