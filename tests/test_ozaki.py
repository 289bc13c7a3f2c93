"""The Ozaki scheme's arithmetic, checked on the CPU: the moduli and CRT constants, the bound that makes the
reconstruction exact, the kernels' residue and modulo formulas in FP32 and integer arithmetic (emulated in NumPy),
the whole scheme in NumPy against float64, and the catalog's rules. GPU runs are in test_gpu_kernels and test_fuzz."""
import math

import numpy as np
import pytest

from gemm_lab import catalog, ozaki

MAX_MODULI = 9


def test_moduli_are_pairwise_coprime_and_fit_int8():
    mods = ozaki.MODULI[:MAX_MODULI]
    assert len(mods) == MAX_MODULI and all(2 < p <= 256 for p in mods)
    assert all(math.gcd(p, q) == 1 for i, p in enumerate(mods) for q in mods[i + 1:])


@pytest.mark.parametrize("moduli", range(6, MAX_MODULI + 1))
def test_crt_weights_pick_out_one_residue_each(moduli):
    big, w = ozaki.product(moduli), ozaki.weights(moduli)
    for i, p in enumerate(ozaki.MODULI[:moduli]):
        assert all(w[i] % q == (1 if q == p else 0) for q in ozaki.MODULI[:moduli])
    x = 123456789012345 % big
    assert sum((x % p) * wi for p, wi in zip(ozaki.MODULI, w)) % big == x


@pytest.mark.parametrize("moduli,k", [(6, 64), (7, 8192), (8, 8192), (9, 65536)])
def test_the_norm_bound_keeps_every_sum_within_a_quarter_of_p(moduli, k):
    bound = (2 ** ozaki.norm_bound(moduli, k) + math.sqrt(k) / 2) ** 2
    assert bound <= ozaki.product(moduli) / 4 * (1 + 1e-12)
    assert ozaki.norm_bound(moduli, k) < 35  # the residue kernels split integers below 2^35 exactly


def test_constants_are_laid_out_as_the_kernels_read_them():
    c = ozaki.constants(8, 4096)
    assert list(c[:8]) == list(ozaki.MODULI[:8]) and c[16] == float(ozaki.product(8))
    assert c[17] == 1 / ozaki.product(8) and c[18] == ozaki.norm_bound(8, 4096) and len(c) == 19


def _f32(x):
    return np.float64(np.float32(x))


def test_the_fp32_residue_of_kernel_16_is_exact():
    """Split20 and Prime of kernels/16_ozaki.cu, one FP32 rounding per operation (with or without FMA contraction),
    on integers a float holds below 2^35: the residue always equals the symmetric one."""
    rng = np.random.default_rng(0)
    xs = rng.integers(-(2**24) + 1, 2**24, 200_000).astype(np.float64) * 2.0 ** rng.integers(0, 11, 200_000)
    xs = np.concatenate([xs[np.abs(xs) < 2**35], np.arange(-1000, 1000.0)])
    rounder = 1.5 * 2**23
    hi = np.array([_f32(v) for v in (np.float32(xs * 2.0**-20) + np.float32(rounder))]) - rounder
    lo = xs - hi * 2**20
    for p in ozaki.MODULI[:MAX_MODULI]:
        inv = _f32(np.float32(1) / np.float32(p))
        y = hi * ((2**20) % p) + lo
        assert np.abs(y).max() < 2**24
        for t in (y * inv + rounder, _f32(np.float32(y * inv)) + rounder):  # contracted to an FMA, or not
            r = y - (np.float32(t).astype(np.float64) - rounder) * p
            assert np.abs(r).max() <= p / 2
            assert (np.mod(r, p) == np.mod(xs, p)).all()


def test_the_modulo_of_the_products_epilogue_is_exact():
    """Modulus of kernels/16_ozaki.cu in 32-bit unsigned arithmetic: every int32 sum below 2^31 in magnitude."""
    rng = np.random.default_rng(1)
    vs = np.concatenate([rng.integers(-(2**31) + 1, 2**31, 200_000), np.arange(-70_000, 70_000)]).astype(np.int64)
    for p in ozaki.MODULI[:MAX_MODULI]:
        c16, offset, magic = (1 << 16) % p, p * ((1 << 23) // p + 1), (1 << 39) // p + 1
        x = ((vs >> 16) * c16 + (vs & 0xFFFF) + offset).astype(np.uint64)
        assert x.max() < 2**32 and magic < 2**32
        q = ((x * np.uint64(magic)) >> np.uint64(32)) >> np.uint64(7)
        assert ((x - q * np.uint64(p)).astype(np.int64) == vs % p).all()


@pytest.mark.parametrize("moduli", range(6, MAX_MODULI + 1))
def test_the_scheme_in_numpy_is_as_accurate_as_its_bound(moduli):
    rng = np.random.default_rng(moduli)
    a = rng.standard_normal((40, 300)).astype(np.float32)
    b = rng.standard_normal((300, 24)).astype(np.float32)
    ra, rb, e, f = ozaki.residues(a, b, moduli)
    assert all(np.abs(x).max() <= p // 2 for x, p in zip(ra, ozaki.MODULI))
    c = ozaki.reconstruct([x @ y for x, y in zip(ra, rb)], e, f, moduli)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    # the integers carry about G - log2(sqrt(k)) bits: their rounding is the only error
    bits = ozaki.norm_bound(moduli, 300) - math.log2(math.sqrt(300))
    assert np.abs(c - ref).max() / np.abs(ref).max() < 2.0 ** (5 - bits)


def test_rules_refuse_too_few_or_too_many_moduli_and_too_deep_a_k():
    with pytest.raises(ValueError, match="MODULI must be 6 to 9"):
        catalog.validate("ozaki", {"MODULI": 10})
    with pytest.raises(ValueError, match="exact only up to K"):
        catalog.instance("ozaki", None, (64, 64, catalog.OZAKI_MAX_K + 1))
    catalog.instance("ozaki", None, (2999, 4001, 3001))  # any shape: the conversion pads


def test_the_products_compile_with_every_companion():
    pytest.importorskip("cuda.bindings.nvrtc")  # the offline extra
    import re

    from gemm_lab import compile

    sections = re.findall(rb"\.text\.(_Z\w+)", compile.cubin("ozaki"))
    for name in ("ozaki_products", "ozaki_row_exponents", "ozaki_col_norms", "ozaki_residues_a", "ozaki_residues_b",
                 "ozaki_reconstruct"):
        assert any(name.encode() in s for s in sections), name
    report = compile.ptxas_report("ozaki")
    assert report.spills == 0 and report.instance.startswith("ozaki_products<")
