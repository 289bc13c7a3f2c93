"""SGEMM by the Ozaki scheme II on INT8 tensor cores (kernels/16_ozaki.cu): the moduli, the constants of the Chinese
remainder theorem, the equilibration along K, the per-call estimate that chooses how many moduli a product needs, and
the launch of the whole pipeline (scale, equilibrate, estimate, split into residues, INT8 products, reconstruct).

The scheme (Ozaki, Uchino and Imamura, "Ozaki Scheme II: A GEMM-oriented emulation of floating-point matrix
multiplication using an integer modular technique", 2025) turns A and B into integers by scaling each row of A and
each column of B by a power of two, multiplies their residues modulo a few small coprime moduli exactly with INT8
GEMMs, and rebuilds each integer product sum from its residues. `residues` and `reconstruct` do the same on the CPU,
in NumPy, so that the arithmetic can be checked without a GPU; `sample_errors` and `choose` are the estimate's model
and rule, in NumPy too.

**The accuracy contract.** Rounding the scaled rows and columns to integers is the scheme's only error (the integer
products and the reconstruction are exact). Before the products, the estimate compares it with SGEMM's own on a sample
of 64 x 32 elements of C: for each number of moduli, the error each element gets from the integers' actual rounding
(its standard deviation, as the roundings add up), and the error SGEMM makes there (each FP32 addition along K off by
at most half an ulp of its partial sum, uniformly, and never by more than the term it adds: the standard probabilistic
model of rounding errors, applied to the exact partial sums in SGEMM's order). Both are componentwise and both are
of the same kind, a standard deviation, so neither side is given a worst case the other is spared. A number of moduli
qualifies when, on the sample, its median relative error and its largest error are no larger than SGEMM's (the sample
always holds the element of the largest-norm row and column, where the scheme's error is largest). `MODULI = 0`
(auto, the default) takes the fewest that qualify; past 9 the call falls back to cuBLAS SGEMM and warns (`Fallback`);
a pinned number that does not qualify warns (`AccuracyWarning`). SGEMM's partial sums are modelled as restarting every
`split_k` terms, as cuBLAS's split of K would have them where C has too few tiles to fill the GPU, so that SGEMM is
never assumed less accurate than it may be.

**Rows and columns.** The sample does not see a row of C far smaller than the largest, in columns whose scale a few
large entries of B set (or a column, transposed), yet such a row loses the bits the scale takes. So, after the
products, a check covers every row and column (kernels/ozaki_check.cu, `lines`): the scheme's error in C[i][j] is
set by the scales of row i and column j alone, so the worst row's modelled relative error, max_j of it over
max_j |C_ij|, costs a pass over C, and it is compared with SGEMM's on the sample over the same maxima (a lower
estimate of SGEMM's worst row: the check errs on the safe side). Where the worst row or column is more than
ROW_SLACK times SGEMM's, the default runs the fewest moduli the check expects to hold, or, past 9, falls back; a
pinned number warns. A call launched launch by launch waits once for the check's few numbers; a replayed default call
does not wait, and where its verdict or check fails, the GPU computes C as SGEMM (`ozaki_pipeline`'s escape).
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..spec import as_integer, ceil_div, round_up, shape_of

# Pairwise coprime and at most 256, so that a residue in [-p/2, p/2) is an int8; the largest first, for the most bits
# per INT8 product (the kernel takes the first MODULI).
MODULI = (256, 255, 253, 251, 247, 241, 239, 233, 229)
AUTO = 0  # MODULI = 0: the fewest moduli the per-call estimate finds as accurate as SGEMM
CANDIDATES = (6, 7, 8, 9)  # what the estimate weighs (kernels/16_ozaki.cu's CANDIDATES, from 6)
SAMPLE_ROWS, SAMPLE_COLS = 64, 32  # the estimate's sample of C: rows x columns (the kernel's)
SAMPLE_FIELDS = 8  # doubles per sampled element: |c|, SGEMM's variance, the scheme's error per candidate, row, column
SPLIT_K = 2048  # the longest stretch of K SGEMM's partial sums are modelled over (`split_k`)


def split_k(m: int, n: int, k: int, sms: int) -> int:
    """How many terms SGEMM's partial sums are modelled over before they restart on a GPU of `sms` multiprocessors:
    SPLIT_K, less where C has fewer 128 x 128 tiles than twice the SMs (cuBLAS then splits K so that every SM has work,
    which makes it more accurate), a multiple of 32 from 32 up."""
    m, n, k = shape_of((m, n, k))
    sms = _at_least_one("sms", sms, "the GPU's multiprocessor count")
    tiles = ceil_div(m, 128) * ceil_div(n, 128)
    return max(32, min(SPLIT_K, round_up(ceil_div(k * tiles, 2 * sms), 32)))


K_ALIGN = 16  # residue rows are padded to whole 16 bytes: TMA's row stride
N_ALIGN = 16  # rows of the products' residues of C are padded to 16 bytes: the products store 16 bytes a lane
# An int32 sum of int8 residue products (|r| <= 128) is exact for up to 2^17 - 1 terms: longer K is cut into chunks of
# this many (a multiple of the products' 128-deep steps), whose residues add up modulo each modulus.
K_CHUNK = 2**17 - 128
UNIT_ROUNDOFF = 2.0**-24
C_ROUNDING = UNIT_ROUNDOFF / math.sqrt(12)  # the least error SGEMM is taken to make, relative: rounding C itself
VERDICT = 15  # the doubles of ozaki_decide's result that the host reads (the last of its 16 is never written)
EQUILIBRATED = 11  # ozaki_decide's result: where the flag "A and B were equilibrated" (flags[1]) is copied
ROW_SLACK = 2.0  # the worst row (column) may err this many times SGEMM's worst row (column): the contract's margin
LINES = 2 * len(CANDIDATES) + 2  # doubles of ozaki_lines' result: worst rows, worst columns, SGEMM's row and column



Moduli = int | Sequence[int]  # the first that many of MODULI (as the kernels take them), or moduli of your own
MODULI_ARE = (f"an int between 1 and {len(MODULI)}, the first that many of MODULI, or a sequence of pairwise coprime "
              "ints >= 2")  # what `moduli` may be, as errors say it


class AccuracyWarning(UserWarning):
    """A pinned number of moduli that the estimate finds less accurate than SGEMM on these inputs."""


class Fallback(UserWarning):
    """No number of moduli the kernels carry is as accurate as SGEMM on these inputs: cuBLAS SGEMM ran instead."""


def _at_least_one(name: str, value: object, what: str) -> int:
    """`value` as an int of at least 1 for `name` (a depth, a size, a count): below 1 the formulas give negative bytes,
    -1 indices or no bits rather than an error."""
    count = as_integer(f"{name}, {what},", value)
    if count < 1:
        raise ValueError(f"{name}={value!r}: {what} must be at least 1")
    return count


def _is_sequence(values: object) -> bool:
    """Whether `values` iterates into its elements: a string iterates into characters, a 0-d array not at all."""
    return isinstance(values, Iterable) and not isinstance(values, (str, bytes)) and getattr(values, "ndim", 1) != 0


def chosen(moduli: Moduli) -> tuple[int, ...]:
    """The moduli themselves: the first `moduli` of MODULI, or the given ones, checked pairwise coprime. Integers
    only (NumPy's too): a bool, a fraction or a string is refused, where int() or iterating would make other moduli
    of it."""
    if isinstance(moduli, numbers.Real):
        count = as_integer(f"moduli ({MODULI_ARE})", moduli)
        if not 1 <= count <= len(MODULI):
            raise ValueError(f"moduli={moduli!r}: {MODULI_ARE}")
        mods = MODULI[:count]
    elif _is_sequence(moduli):
        mods = tuple(as_integer(f"each of moduli={moduli!r} (pairwise coprime ints >= 2)", p) for p in moduli)
    else:
        raise TypeError(f"moduli={moduli!r}: {MODULI_ARE}")
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
    if not _is_sequence(residues):
        raise TypeError(f"residues={residues!r}: a sequence of ints, one per modulus of {mods}")
    rs = [as_integer(f"each of residues={residues!r} (ints, one per modulus)", r) for r in residues]
    if len(rs) != len(mods):
        raise ValueError(f"{len(rs)} residues for {len(mods)} moduli {mods}")
    big = math.prod(mods)
    x = sum(r * w for r, w in zip(rs, weights(mods))) % big
    return x - big if x > big // 2 else x


def bits(moduli: Moduli, k: int) -> dict[str, float]:
    """What the moduli buy at depth k: log2 P, G (log2 of the scaled rows' and columns' norm bound) and the bits
    an element of a row of k elements of like size keeps as an integer (G - log2 sqrt(k); FP32 keeps 24)."""
    g = norm_bound(moduli, k)
    return {"log2_P": math.log2(product(moduli)), "G": g, "element_bits": g - math.log2(math.sqrt(k))}


def traffic(moduli: Moduli, m: int, n: int, k: int) -> dict[str, tuple[int, int]]:
    """Bytes each stage of the kernels' pipeline (`STAGES`) must read and write at least with these moduli (as `chosen`
    takes them), A (m x k) and B (k x n) float32, when no column needs equilibrating: (read, written). Residue rows
    are padded to Kp and Np bytes as the kernels pad them; C is written once (beta = 0); the products read each
    residue plane once, as if L2 served every re-read; the estimate reads its sample's rows of A and columns of B."""
    count, (m, n, k) = len(chosen(moduli)), shape_of((m, n, k))
    kp, np_ = round_up(k, K_ALIGN), round_up(n, N_ALIGN)
    operands, norms, stats = 4 * (m * k + k * n), 8 * (m + n), 8 * k
    planes = count * (m + n) * kp
    products = count * m * np_
    sample = 4 * (SAMPLE_ROWS + SAMPLE_COLS) * k
    return {"scale": (operands, norms + stats), "equilibrate": (stats, 4 * k),
            "estimate": (norms + sample, SAMPLE_ROWS * SAMPLE_COLS * SAMPLE_FIELDS * 8),
            "split": (operands + norms + 4 * (m + n), planes),
            "products": (planes, products), "reconstruct": (products + 4 * (m + n), 4 * m * n)}


def norm_bound(moduli: Moduli, k: int) -> float:
    """G: rows of A and columns of B are scaled to Euclidean norms of at most 2^G. Rounded to integers their norms grow
    by at most sqrt(k) / 2, and (2^G + sqrt(k) / 2)^2 <= P / 4 bounds every product sum by Cauchy-Schwarz, so the
    reconstruction's representative nearest zero is the sum, with room to spare for rounding in double."""
    k = _at_least_one("k", k, "the depth of the product (the elements of a row of A)")
    room = math.sqrt(product(moduli)) / 2 - math.sqrt(k) / 2
    if room < 1:
        raise ValueError(f"moduli {chosen(moduli)}: P = {product(moduli)} leaves rows of {k} elements no bits at all "
                         f"(P must exceed (sqrt(k) + 2)^2 = {(math.sqrt(k) + 2) ** 2:,.0f})")
    return math.log2(room)


def constants(moduli: int, k: int) -> np.ndarray:
    """The doubles kernels/16_ozaki.cu reads: p_0 .. p_{MODULI-1}, W_0 .. W_{MODULI-1}, P, 1 / P, G, then each
    modulus's 1 / p rounded to a float (as FP32 divides) and 2^20 mod p. A count only: the kernels take the first
    MODULI of MODULI."""
    if not isinstance(moduli, numbers.Real):
        raise TypeError(f"moduli={moduli!r}: the kernels take a count of moduli, an int between 1 and {len(MODULI)} "
                        "(the first that many of MODULI)")
    mods = chosen(moduli)
    big = math.prod(mods)
    return np.array([*mods, *map(float, weights(mods)), float(big), 1 / big, norm_bound(mods, k),
                     *(float(np.float32(1) / np.float32(p)) for p in mods), *((1 << 20) % p for p in mods)],
                    dtype=np.float64)


def shifts(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Equilibration along K (the kernels' `ozaki_equilibrate`): s_h, the nearest integer to half the difference of
    the mean binary exponents of the nonzero entries of row h of B and of column h of A (0 where either has none), so
    that A 2^s and 2^-s B have balanced exponents along K and the same product. Infinities and NaNs count as zeros."""
    a, b = _matrices(a, b)

    def mean_exponent(x: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
        x = np.where(np.isfinite(x), x, 0)
        nonzero = x != 0
        e = np.where(nonzero, np.frexp(x.astype(np.float64))[1] - 1, 0).sum(axis=axis)
        count = nonzero.sum(axis=axis)
        return e / np.maximum(count, 1), count

    ea, ca = mean_exponent(a, 0)
    eb, cb = mean_exponent(b, 1)
    return np.where((ca > 0) & (cb > 0), np.rint(0.5 * (eb - ea)), 0).astype(np.int64)


def exponents(x: np.ndarray, axis: int, moduli: Moduli, k: int) -> np.ndarray:
    """The kernels' powers of two (as integers e, scale 2^e) of the rows (axis 1) or columns (axis 0) of x (already
    equilibrated, infinities and NaNs as zeros)."""
    return scale_exponents((np.where(np.isfinite(x), x, 0).astype(np.float64) ** 2).sum(axis=axis),
                           norm_bound(moduli, k))


def scale_exponents(norm2: np.ndarray, g: float) -> np.ndarray:
    """The kernels' `scale_exponent`: the powers of two that bring vectors of squared norms `norm2` to norms of at
    most 2^g (0 for a zero vector)."""
    norm2 = np.asarray(norm2, dtype=np.float64)
    if (bad := ~(np.isfinite(norm2) & (norm2 >= 0))).any():
        raise ValueError(f"norm2 holds values that are no squared norm ({bad.sum()} of them, the first "
                         f"{norm2[bad][0]:g}): a squared norm is finite and at least 0")
    with np.errstate(divide="ignore"):
        e = np.floor(g - 0.5 * np.log2(norm2))
    return np.where(norm2 == 0, 0, e).astype(np.int64)


def _equilibrated(a: np.ndarray, b: np.ndarray, shift: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    a64, b64 = (np.where(np.isfinite(x), x, 0).astype(np.float64) for x in (a, b))
    if shift is None:
        return a64, b64
    if np.shape(shift) != (a.shape[1],):
        raise ValueError(f"shift of shape {np.shape(shift)}: one exponent per column of A, K = {a.shape[1]} of them "
                         "(`shifts`)")
    return np.ldexp(a64, shift[None, :]), np.ldexp(b64, -shift[:, None])


def norms(a: np.ndarray, b: np.ndarray, shift: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The squared norms of A's rows and B's columns after equilibrating by `shift` (the kernels' rn2 and cn2, as
    the exponents and the row and column check read them)."""
    a64, b64 = _equilibrated(a, b, shift)
    return (a64**2).sum(axis=1), (b64**2).sum(axis=0)


def _matrices(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A (M x K) and B (K x N) as arrays of real numbers, checked here: NumPy would broadcast other shapes into an
    error about operands, or drop an imaginary part with a warning."""
    a, b = np.asarray(a), np.asarray(b)
    for name, x in (("A", a), ("B", b)):
        if x.dtype.kind not in "iuf":
            raise TypeError(f"{name} of dtype {x.dtype}: the NumPy model takes real numbers (floats or integers)")
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"A of shape {a.shape} and B of shape {b.shape}: the NumPy model multiplies a 2-D A (M x K) "
                         "by a 2-D B (K x N), as many columns of A as rows of B")
    return a, b


def _integers(what: str, x: object) -> np.ndarray:
    """`x` as an array of integers: whole floats become int64, exactly; a fraction or an imaginary part is refused,
    where the modular arithmetic would turn it into a wrong C without a word."""
    x = np.asarray(x)
    if x.dtype.kind in "iu":
        return x
    if x.dtype.kind != "f":
        raise TypeError(f"{what} of dtype {x.dtype}: integers expected (an int array, or whole floats)")
    if (bad := ~(np.isfinite(x) & (x == np.rint(x)) & (np.abs(x) < 2.0**63))).any():
        raise ValueError(f"{what} holds values that are not integers within int64 ({bad.sum()} of them, the "
                         f"first {x[bad][0]:g}): integers expected (an int array, or whole floats)")
    return x.astype(np.int64)


def residues(a: np.ndarray, b: np.ndarray, moduli: Moduli, shift: np.ndarray | None = None
             ) -> tuple[list[np.ndarray], list[np.ndarray], np.ndarray, np.ndarray]:
    """NumPy's version of the kernels' scaling and split: A's and B's residues (symmetric, in [-p/2, p/2), as int64)
    per modulus and the exponents of A's rows and B's columns, after equilibrating by `shift` (`shifts`; None: none).
    Moduli whose product is so large that the scaled integers would outgrow int64 are refused, and so are infinities
    and NaNs: the split counts them as zeros, as the kernels' does, but only the GPU pipeline puts them back into C.
    So are values FP32 cannot hold: the kernels never see them, and their squared norms underflow or overflow."""
    a, b = _matrices(a, b)
    for name, x in (("A", a), ("B", b)):
        if (bad := ~np.isfinite(x)).any():
            raise ValueError(f"{name} holds infinities or NaNs ({bad.sum()} of them): the NumPy model takes finite "
                             "inputs (it would count them as zeros); gl.gemm(\"ozaki\", ...) gives their elements of "
                             "C SGEMM's infinities and NaNs")
        with np.errstate(over="ignore"):
            x32 = x.astype(np.float32)
        if (bad := np.isinf(x32) | (x32 == 0) & (x != 0)).any():
            tiny, big = np.finfo(np.float32).smallest_subnormal, np.finfo(np.float32).max
            raise ValueError(f"{name} holds values float32 cannot hold ({bad.sum()} of them, the first "
                             f"{x[bad][0]:g}): the NumPy model takes FP32 inputs, nonzero magnitudes from {tiny:.1e} "
                             f"to {big:.1e} (FP32 makes these infinite or 0, and their squared norms overflow or "
                             "underflow)")
    k = a.shape[1]
    if norm_bound(moduli, k) > 62:
        raise ValueError(f"moduli {chosen(moduli)}: P is too large for the scaled integers to fit int64")
    a64, b64 = _equilibrated(a, b, shift)
    e, f = exponents(a64, 1, moduli, k), exponents(b64, 0, moduli, k)
    ai = np.rint(np.ldexp(a64, e[:, None])).astype(np.int64)
    bi = np.rint(np.ldexp(b64, f[None, :])).astype(np.int64)
    sym = [lambda x, p=p: (x + p // 2) % p - p // 2 for p in chosen(moduli)]
    return [s(ai) for s in sym], [s(bi) for s in sym], e, f


def reconstruct(products: list[np.ndarray], e: np.ndarray, f: np.ndarray, moduli: Moduli) -> np.ndarray:
    """NumPy's version of the last step, exact in Python integers: C from the products' residues (one product per
    modulus, in the moduli's order: M x N integer sums) and the exponents (M of A's rows, N of B's columns)."""
    mods = chosen(moduli)
    if len(products) != len(mods):
        raise ValueError(f"{len(products)} products for {len(mods)} moduli {mods}: one product of residues per modulus")
    products = [_integers(f"products[{q}]", x) for q, x in enumerate(products)]
    e, f = _integers("e", e), _integers("f", f)
    shape = products[0].shape
    if len(shape) != 2 or any(x.shape != shape for x in products) or e.shape != shape[:1] or f.shape != shape[1:]:
        raise ValueError(f"products of shapes {[x.shape for x in products]}, e of shape {e.shape} and f of shape "
                         f"{f.shape}: every product M x N, e M exponents and f N")
    big, w = product(mods), weights(mods)
    r = [np.asarray(x % p, dtype=object) for x, p in zip(products, mods)]
    x = sum(ri * wi for ri, wi in zip(r, w)) % big
    x = np.where(x > big // 2, x - big, x).astype(np.float64)
    return np.ldexp(x, -(e[:, None] + f[None, :]))


def sample_errors(a: np.ndarray, b: np.ndarray, rows: Sequence[int], cols: Sequence[int],
                  shift: np.ndarray | None = None, split: int = SPLIT_K) -> np.ndarray:
    """NumPy's version of the kernels' `ozaki_sample` on the elements rows x cols of C: per element |c|, the variance
    of SGEMM's error, the scheme's error (a standard deviation) with each of CANDIDATES moduli, row and column
    (SAMPLE_FIELDS columns)."""
    k = a.shape[1]
    x, y = (np.where(np.isfinite(v), v, 0).astype(np.float32) for v in (a, b))
    ae, be = _equilibrated(a, b, shift)
    out = []
    for i in rows:
        for j in cols:
            p = x[i].astype(np.float64) * y[:, j].astype(np.float64)
            s = np.concatenate([np.cumsum(p[h:h + split]) for h in range(0, k, split)]) if k else p
            biased = (np.abs(s.astype(np.float32)).view(np.uint32) >> 23) & 0xFF
            ulp = np.exp2(np.maximum(biased, 1).astype(np.float64) - 150)
            row = [abs(p.sum()), float(np.minimum(p * p, ulp * ulp / 12).sum())]
            for m in CANDIDATES:
                g = norm_bound(m, k)
                ei = 0 if not (ae[i] ** 2).sum() else math.floor(g - 0.5 * math.log2((ae[i] ** 2).sum()))
                fj = 0 if not (be[:, j] ** 2).sum() else math.floor(g - 0.5 * math.log2((be[:, j] ** 2).sum()))
                xs, ys = np.ldexp(ae[i], ei), np.ldexp(be[:, j], fj)
                var = ((xs - np.rint(xs)) ** 2 * ys**2 + xs**2 * (ys - np.rint(ys)) ** 2).sum()
                row.append(math.sqrt(var) * 2.0 ** -(ei + fj))
            out.append(row + [i, j])
    return np.array(out, dtype=np.float64)


@dataclass(frozen=True)
class Estimate:
    """What the estimate found on one call, and what the call did with it: the run-time report of `gemm("ozaki")`."""

    moduli: int  # the number of moduli that ran (0: none, the call fell back)
    pinned: bool  # the caller chose the number of moduli (MODULI != 0)
    sgemm_median: float  # SGEMM's median relative error on the sample (the model's standard deviation over |c|)
    median: dict[int, float]  # the scheme's, per number of moduli
    largest: dict[int, float]  # the scheme's largest error on the sample over SGEMM's (>= its output rounding)
    equilibrated: int  # columns of A (rows of B) the equilibration shifted
    largest_shift: int  # the largest |s_h|
    nonfinite: bool  # A or B held an infinity or a NaN
    fallback: str = ""  # the kernel that ran instead, if any
    # after the products (`hold_lines`): the worst row's and column's modelled error over SGEMM's, per number of moduli
    rows: dict[int, float] = field(default_factory=dict)
    columns: dict[int, float] = field(default_factory=dict)
    raised_from: int = 0  # the estimate's choice, where the row and column check ran more moduli than it

    def ratio(self, moduli: int) -> float:
        """The scheme's median relative error over SGEMM's, with that many moduli (on the sample)."""
        return (self.median[moduli] / self.sgemm_median if self.sgemm_median
                else 0.0 if not self.median[moduli] else math.inf)

    def qualifies(self, moduli: int) -> bool:
        """No larger an error than SGEMM's, in the median and at the largest, on the sample."""
        return self.ratio(moduli) <= 1.0 and self.largest[moduli] <= 1.0

    def lines_hold(self, moduli: int) -> bool:
        """The worst row and column within ROW_SLACK times SGEMM's with that many moduli (true where unchecked)."""
        return self.rows.get(moduli, 0.0) <= ROW_SLACK and self.columns.get(moduli, 0.0) <= ROW_SLACK

    def as_dict(self) -> dict[str, Any]:
        return {"moduli": self.moduli, "pinned": self.pinned, "sgemm_median": self.sgemm_median,
                "median": {str(m): v for m, v in self.median.items()},
                "largest": {str(m): v for m, v in self.largest.items()}, "equilibrated": self.equilibrated,
                "largest_shift": self.largest_shift, "nonfinite": self.nonfinite, "fallback": self.fallback,
                "rows": {str(m): v for m, v in self.rows.items()},
                "columns": {str(m): v for m, v in self.columns.items()}, "raised_from": self.raised_from}

    @classmethod
    def from_dict(cls, row: dict[str, Any]) -> Estimate:
        """The report `as_dict` wrote (a record's `details`), its numbers of moduli ints again."""
        per_moduli = ("median", "largest", "rows", "columns")
        return cls(**{name: {int(m): v for m, v in value.items()} if name in per_moduli else value
                      for name, value in row.items()})


def pinned_warnings(report: Estimate, estimate: bool = True) -> list[str]:
    """What a pinned number of moduli falls short of on the inputs `report` estimated, as the `AccuracyWarning`s of
    the call say it, live or replayed: the estimate's verdict (`estimate`: live, it is said when the verdict is read,
    before the check) and, once it ran, the row and column check's. None for the default, which acts on both."""
    if not report.pinned:
        return []
    m, out = report.moduli, []
    if estimate and not report.qualifies(m):
        out.append(f"{m} moduli: on a sample of these inputs the estimated error is {report.ratio(m):.3g} times "
                   f"SGEMM's in the median and {report.largest[m]:.3g} times at its largest; {_advice(report)}")
    if not report.lines_hold(m):
        out.append(f"{m} moduli: the worst row of C is estimated to err {report.rows[m]:.3g} times SGEMM's worst row, "
                   f"the worst column {report.columns[m]:.3g} times SGEMM's (more than {ROW_SLACK:g}); "
                   f"{_advice(report)}")
    return out


def _advice(report: Estimate) -> str:
    fit = next((m for m in CANDIDATES if report.qualifies(m) and report.lines_hold(m)), 0)
    return (f"{fit} moduli would be (MODULI={fit}), or MODULI=0 chooses per call" if fit else
            "no number of moduli up to 9 is: use MODULI=0, which falls back to cuBLAS SGEMM on such inputs")


def choose(sample: np.ndarray, flags: Sequence[int], pinned: int = AUTO) -> Estimate:
    """The estimate's rule (the kernels' `ozaki_decide`, which bins the relative errors for their medians) on a sample
    (`sample_errors`) and the kernels' flags (nonfinite, equilibrated, shifted columns, largest shift): `pinned`, or the
    fewest CANDIDATES that qualify; 0 if none does."""
    sample = np.asarray(sample, dtype=np.float64)
    if sample.ndim != 2 or sample.shape[1] != SAMPLE_FIELDS:
        raise ValueError(f"sample of shape {sample.shape}: one row of SAMPLE_FIELDS = {SAMPLE_FIELDS} numbers per "
                         "sampled element (`sample_errors`)")
    if len(flags) != 4:
        raise ValueError(f"flags={flags!r}: four numbers (nonfinite, equilibrated, shifted columns, largest shift)")
    pinned = as_integer("pinned", pinned)
    if pinned not in (AUTO, *CANDIDATES):
        raise ValueError(f"pinned={pinned!r}: {AUTO} (the fewest that qualify) or one of CANDIDATES {CANDIDATES}")
    c, sgemm = sample[:, 0], np.sqrt(sample[:, 1])
    seen = c > 0
    sgemm_median = float(np.median(sgemm[seen] / c[seen])) if seen.any() else 0.0
    sgemm_top = max(float(sgemm.max(initial=0.0)), float(c.max(initial=0.0)) * C_ROUNDING)
    median, largest = {}, {}
    for q, m in enumerate(CANDIDATES):
        mine = sample[:, 2 + q]
        median[m] = float(np.median(mine[seen] / c[seen])) if seen.any() else 0.0
        top = float(mine.max(initial=0.0))
        largest[m] = top / sgemm_top if sgemm_top else (math.inf if top else 0.0)
    draft = Estimate(pinned, bool(pinned), sgemm_median, median, largest, int(flags[2]), int(flags[3]), bool(flags[0]))
    return verdict([pinned or next((m for m in CANDIDATES if draft.qualifies(m)), 0), sgemm_median,
                    *median.values(), *largest.values(), *flags[:4]], bool(pinned))


def verdict(result: Sequence[float], pinned: bool) -> Estimate:
    """The `Estimate` of `ozaki_decide`'s result: the number of moduli it ran with (pinned, or chosen), SGEMM's median
    relative error, the scheme's per candidate, its largest error over SGEMM's per candidate, the four flags."""
    n = len(CANDIDATES)
    if len(result) < 6 + 2 * n:
        raise ValueError(f"result of length {len(result)}: ozaki_decide's holds at least {6 + 2 * n} numbers (the "
                         f"moduli, SGEMM's median, {n} medians, {n} largest errors, 4 flags)")
    median = dict(zip(CANDIDATES, map(float, result[2:2 + n])))
    largest = dict(zip(CANDIDATES, map(float, result[2 + n:2 + 2 * n])))
    flags = [int(x) for x in result[2 + 2 * n:6 + 2 * n]]
    return Estimate(int(result[0]), pinned, float(result[1]), median, largest, flags[2], flags[3], bool(flags[0]))


def extents(c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """NumPy's version of what kernels/16_ozaki.cu's `ozaki_reconstruct` leaves for the check: max |C| of each row and
    of each column, over the finite elements."""
    x = np.abs(np.where(np.isfinite(c), c, 0)).astype(np.float64)
    return x.max(axis=1, initial=0.0), x.max(axis=0, initial=0.0)


def lines(rn2: np.ndarray, cn2: np.ndarray, row_max: np.ndarray, col_max: np.ndarray, sample: np.ndarray, k: int,
          alpha: float = 1.0) -> np.ndarray:
    """NumPy's version of kernels/ozaki_check.cu's `ozaki_lines` (LINES doubles): per candidate the worst row's
    modelled relative error, then the worst column's, then SGEMM's on the sample (`sample_errors`) over its rows' and
    its columns' max |C|; rn2 and cn2 the squared norms of A's rows and B's columns (equilibrated), row_max and
    col_max C's (`extents`, of alpha A B)."""
    rn2, cn2 = np.asarray(rn2, np.float64), np.asarray(cn2, np.float64)
    widest_row, widest_col = rn2.max(initial=0.0), cn2.max(initial=0.0)
    scale = abs(alpha) / math.sqrt(12)

    def worst(norm2: np.ndarray, extent: np.ndarray, other: float, g: float) -> float:
        own, far = scale_exponents(norm2, g), int(scale_exponents(other, g))
        seen = (norm2 > 0) & (extent > 0)
        sigma = scale * np.sqrt(norm2 * np.ldexp(1.0, -2 * far) + other * np.ldexp(1.0, -2 * own))
        return float((sigma[seen] / extent[seen]).max(initial=0.0))

    gs = [norm_bound(m, k) for m in CANDIDATES]
    sgemm = abs(alpha) * np.sqrt(sample[:, 1])
    in_row, in_col = row_max[sample[:, 6].astype(int)], col_max[sample[:, 7].astype(int)]
    return np.array([*(worst(rn2, row_max, widest_col, g) for g in gs),
                     *(worst(cn2, col_max, widest_row, g) for g in gs),
                     (sgemm[in_row > 0] / in_row[in_row > 0]).max(initial=0.0),
                     (sgemm[in_col > 0] / in_col[in_col > 0]).max(initial=0.0)])


def line_ratios(result: Sequence[float]) -> tuple[dict[int, float], dict[int, float]]:
    """The worst row's and column's modelled error over SGEMM's, per candidate, from `ozaki_lines`' result; SGEMM's
    taken as at least the rounding of C itself."""
    n, floor = len(CANDIDATES), C_ROUNDING
    sgemm_row, sgemm_col = max(float(result[2 * n]), floor), max(float(result[2 * n + 1]), floor)
    return ({m: float(result[q]) / sgemm_row for q, m in enumerate(CANDIDATES)},
            {m: float(result[n + q]) / sgemm_col for q, m in enumerate(CANDIDATES)})


def hold_lines(report: Estimate, check: Callable[[int], Sequence[float]]) -> Estimate:
    """The row and column check's rule. `check(moduli)` computes C with that many moduli (where not yet done) and
    returns `ozaki_lines`' result on it. While the worst row or column errs more than ROW_SLACK times SGEMM's, run
    the fewest moduli the check expects to hold (C's maxima barely depend on the moduli, unless a row was all error:
    then the next check raises again), or none past 9 (moduli 0: fall back). A pinned number stands."""
    while True:
        rows, columns = line_ratios(check(report.moduli))
        report = replace(report, rows=rows, columns=columns)
        if report.pinned or report.lines_hold(report.moduli):
            return report
        more = next((m for m in CANDIDATES if m > report.moduli and report.lines_hold(m)), 0)
        report = replace(report, moduli=more, raised_from=report.raised_from or report.moduli)
        if not more:
            return report


def sample_picks(m: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The sample's rows and columns (slot 0 is the largest-norm one, chosen on the GPU): spread evenly with a fixed
    pseudo-random offset each, so any shape gets the same picks."""
    m, n = _at_least_one("m", m, "C's row count"), _at_least_one("n", n, "C's column count")

    def spread(size: int, count: int) -> np.ndarray:
        rng = np.random.default_rng(size)
        return ((np.arange(count) + rng.random(count)) * size / count).astype(np.int32).clip(0, size - 1)

    return spread(m, SAMPLE_ROWS), spread(n, SAMPLE_COLS)


STAGES = ("scale", "equilibrate", "estimate", "split", "products", "reconstruct")  # the pipeline's parts, in order
