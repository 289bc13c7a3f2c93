"""The Ozaki scheme's arithmetic, checked on the CPU: the moduli and CRT constants, the bound that makes the
reconstruction exact, the kernels' residue and modulo formulas in FP32 and integer arithmetic (emulated in NumPy),
the whole scheme in NumPy against float64, the equilibration along K, the estimate's model and its rule on input
families (against SGEMM's own error, simulated in FP32), the row and column check on families built to hide from the
estimate's sample, and the catalog's rules. GPU runs are in test_ozaki_gpu."""
import math
import warnings
from dataclasses import replace

import numpy as np
import pytest

from gemm_lab import catalog
from gemm_lab.precision import emulation, ozaki, ozaki_pipeline

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
    assert c[17] == 1 / ozaki.product(8) and c[18] == ozaki.norm_bound(8, 4096) and len(c) == 35
    assert list(c[19:27]) == [float(np.float32(1) / np.float32(p)) for p in ozaki.MODULI[:8]]  # as FP32 divides
    assert list(c[27:35]) == [(1 << 20) % p for p in ozaki.MODULI[:8]]


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
    """Modulus of kernels/16_ozaki.cu in 32-bit unsigned arithmetic: every int32 folds to 0 < x < 2^24 + 2^17, and the
    quotient by a multiply-high is exact for every x in that range."""
    rng = np.random.default_rng(1)
    vs = np.concatenate([rng.integers(-(2**31), 2**31, 200_000), np.arange(-70_000, 70_000),
                         [-(2**31), 2**31 - 1]]).astype(np.int64)
    word = 2**32
    for p in ozaki.MODULI[:MAX_MODULI]:
        c16, offset, magic = (1 << 16) % p, p * ((1 << 23) // p + 1), -(-word // p)
        fold, minus_p = (c16 - (1 << 16)) % word, -p % word
        x = (vs + (vs >> 16) * fold + offset) % word
        assert (x == (vs >> 16) * c16 + (vs & 0xFFFF) + offset).all()
        r = (x + ((x * magic) >> 32) * minus_p) % word
        assert (r == vs % p).all()
        lowest, highest = -(2**15) * c16 + offset, (2**15 - 1) * c16 + 0xFFFF + offset  # the fold's extremes
        assert lowest > 0 and highest < 2**24 + 2**17 and magic < word
        xs = np.arange(lowest, highest + 1, dtype=np.uint64)
        assert (((xs * np.uint64(magic)) >> np.uint64(32)) == xs // np.uint64(p)).all()


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


def test_rules_refuse_too_few_or_too_many_moduli_and_take_any_k():
    for moduli in (5, 10):
        with pytest.raises(ValueError, match="MODULI must be 0 .auto.* or 6 to 9"):
            catalog.validate("ozaki", {"MODULI": moduli})
    assert catalog.get("ozaki").defaults["MODULI"] == ozaki.AUTO == 0
    catalog.instance("ozaki", None, (64, 64, 3 * ozaki.K_CHUNK + 5))  # long K is cut into chunks
    catalog.instance("ozaki", None, (2999, 4001, 3001))  # any shape: the conversion pads


def test_a_chunk_of_k_keeps_every_int32_sum_exact():
    assert ozaki.K_CHUNK % 128 == 0 and ozaki.K_CHUNK * 128 * 128 < 2**31  # whole 128-deep steps, |r| <= 128


@pytest.mark.parametrize("shape,split", [((8192, 8192, 8192), 2048), ((1024, 1024, 65536), 2048),
                                         ((256, 256, 140_000), 2048), ((181, 56, 402), 32), ((512, 512, 4096), 256)])
def test_sgemm_is_modelled_as_split_along_k_where_c_has_few_tiles(shape, split):
    assert ozaki.split_k(*shape, sms=132) == split and split % 32 == 0  # an H100 or H200


def test_a_tensor_map_of_a_stretch_of_k_is_checked_before_the_driver():
    from gemm_lab.precision import int8

    with pytest.raises(ValueError, match="k0 must be a multiple of 16"):
        int8.planes_map(np.zeros((2, 4, 64), np.int8), 4, 8, 32)


def test_every_instance_compiles_with_the_analysis_kernels():
    pytest.importorskip("cuda.bindings.nvrtc")  # the offline extra
    import re

    from gemm_lab import compiler

    auto = re.findall(rb"\.text\.(_Z\w+)", compiler.cubin("ozaki"))
    for name in catalog.OZAKI_ANALYSIS:
        assert any(name.encode() in s for s in auto), name
    seven = re.findall(rb"\.text\.(_Z\w+)", compiler.cubin("ozaki", {"MODULI": 7}))
    for name in ("ozaki_products", "ozaki_exponents", "ozaki_residues_a", "ozaki_residues_b", "ozaki_reconstruct"):
        assert any(name.encode() in s for s in seven), name
    for moduli in (0, 7):
        report = compiler.ptxas_report("ozaki", {"MODULI": moduli})
        assert report.spills == 0 and report.instance.startswith(f"ozaki_products<{moduli},")


# Input families the estimate must judge right (small, for the CPU; the GPU tests run them at scale).
def family(name: str, m: int, n: int, k: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
    if name == emulation.OUTLIER or name in emulation.HIDDEN:
        emulation.shape_family(a, b, name)
    elif name.startswith("phi"):  # Ozaki, Uchino and Imamura's (rand - 0.5) exp(phi randn)
        phi = float(name[3:])
        a = ((rng.random((m, k)) - 0.5) * np.exp(phi * rng.standard_normal((m, k)))).astype(np.float32)
        b = ((rng.random((k, n)) - 0.5) * np.exp(phi * rng.standard_normal((k, n)))).astype(np.float32)
    return a, b


def sgemm_sequential(a: np.ndarray, b: np.ndarray, split: int) -> np.ndarray:
    """SGEMM as a kernel accumulating along K computes it, one FMA (one rounding to FP32) per product, K split into
    pieces of `split` whose sums add up at the end (cuBLAS's split of K for small outputs)."""
    parts = []
    for h0 in range(0, a.shape[1], split):
        s = np.zeros((a.shape[0], b.shape[1]), np.float32)
        for h in range(h0, min(a.shape[1], h0 + split)):
            s = (s + np.outer(a[:, h].astype(np.float64), b[h].astype(np.float64))).astype(np.float32)
        parts.append(s)
    return np.sum(parts, axis=0, dtype=np.float32)


def scheme(a: np.ndarray, b: np.ndarray, moduli: int, shift: np.ndarray | None) -> np.ndarray:
    """The scheme's result in NumPy: the rounded scaled integers multiplied exactly (in Python integers) and scaled
    back, as the CRT gives it."""
    ra, rb, e, f = ozaki.residues(a, b, moduli, shift)
    return ozaki.reconstruct([x @ y for x, y in zip(ra, rb)], e, f, moduli)


def errors(c: np.ndarray, ref: np.ndarray) -> tuple[float, float]:
    """(normwise: max |C - ref| / max |ref|, the median element's |C - ref| / |ref|)."""
    d, seen = np.abs(c.astype(np.float64) - ref), ref != 0
    return float(d.max() / np.abs(ref).max()), float(np.median(d[seen] / np.abs(ref[seen])))


def test_equilibration_balances_an_outlier_channel_and_changes_no_product():
    a, b = family("outlier channel", 16, 12, 96)
    s = ozaki.shifts(a, b)
    assert abs(s[96 // 3] + 20) <= 1  # 1e6 is 2^19.9: half of 40 binary places
    assert np.abs(np.delete(s, 96 // 3)).max() <= 1  # 16 rows and 12 columns: their means wander by a place
    ae, be = np.ldexp(a.astype(np.float64), s[None, :]), np.ldexp(b.astype(np.float64), -s[:, None])
    assert (ae @ be == np.ldexp(a.astype(np.float64), s[None, :]) @ np.ldexp(b.astype(np.float64), -s[:, None])).all()
    assert np.allclose(ae @ be, a.astype(np.float64) @ b.astype(np.float64), rtol=0, atol=1e-9)
    normal = family("normal", 16, 12, 96)
    assert np.abs(ozaki.shifts(*normal)).max() <= 1
    assert not ozaki.shifts(*family("normal", 512, 512, 96)).any()  # longer columns and rows: no wandering


def test_without_equilibration_an_outlier_channel_costs_the_rows_their_bits():
    a, b = family("outlier channel", 24, 16, 256)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    plain, balanced = (errors(scheme(a, b, 8, shift), ref)[0] for shift in (None, ozaki.shifts(a, b)))
    assert plain > 100 * balanced and balanced < 1e-7


@pytest.mark.parametrize("name,chosen", [("normal", 7), ("outlier channel", 7), ("phi5", 0)])
def test_the_estimate_chooses_the_fewest_moduli_as_accurate_as_sgemm(name, chosen):
    """On a 48 x 32 x 1024 product, against SGEMM accumulating along all of K: standard normal inputs need 7 moduli, an
    outlier channel too once equilibrated, and inputs whose exponents spread as at phi = 5 more than 9 (the call falls
    back); each choice's real error, against SGEMM's real error in FP32, meets the contract (normwise and median
    within 2x)."""
    a, b = family(name, 48, 32, 1024, seed=3)
    shift = ozaki.shifts(a, b)
    shift = shift if shift.any() else None
    rows, cols = np.arange(0, 48, 3), np.arange(0, 32, 2)
    split = ozaki.SPLIT_K  # as SGEMM accumulates where C fills the GPU (small C: cuBLAS splits K, `split_k`)
    report = ozaki.choose(ozaki.sample_errors(a, b, rows, cols, shift, split), [0, int(shift is not None), 0, 0])
    assert report.moduli == chosen and not report.pinned
    ref = a.astype(np.float64) @ b.astype(np.float64)
    sgemm = errors(sgemm_sequential(a, b, split), ref)
    if chosen:
        mine = errors(scheme(a, b, chosen, shift), ref)
        assert mine[0] <= 2 * sgemm[0] and mine[1] <= 2 * sgemm[1]
        fewer = errors(scheme(a, b, chosen - 1, shift), ref)  # and one modulus less would not have done
        assert fewer[1] > sgemm[1] or fewer[0] > sgemm[0]
    else:
        assert not any(report.qualifies(m) for m in ozaki.CANDIDATES)


def test_a_pinned_number_stands_and_the_report_says_whether_it_qualifies():
    a, b = family("normal", 24, 16, 512, seed=4)
    sample = ozaki.sample_errors(a, b, np.arange(0, 24, 3), np.arange(0, 16, 2))
    six, nine = (ozaki.choose(sample, [0, 0, 0, 0], pinned) for pinned in (6, 9))
    assert (six.moduli, six.pinned, nine.moduli) == (6, True, 9)
    assert not six.qualifies(6) and six.ratio(6) > 1 and nine.qualifies(9)
    assert six.as_dict()["median"]["6"] == six.median[6]


def test_the_verdict_reads_as_the_kernel_writes_it():
    """ozaki_decide's result: moduli, SGEMM's median, the scheme's medians and largest ratios per candidate, flags."""
    result = [8, 1e-6, 5e-6, 3e-7, 2e-8, 1e-9, 3.0, 0.5, 0.1, 0.01, 1, 1, 3, 20, 4096, 0]
    report = ozaki.verdict(result, pinned=False)
    assert (report.moduli, report.equilibrated, report.largest_shift, report.nonfinite) == (8, 3, 20, True)
    assert report.median == {6: 5e-6, 7: 3e-7, 8: 2e-8, 9: 1e-9} and report.largest[7] == 0.5
    assert report.ratio(7) == pytest.approx(0.3) and report.qualifies(7) and not report.qualifies(6)


# The row and column check (kernels/ozaki_check.cu), on families built to hide from the estimate's sample.
def worst_lines(c: np.ndarray, ref: np.ndarray) -> tuple[float, float]:
    return emulation.worst_lines(np.abs(c.astype(np.float64) - ref), ref)


def default(a: np.ndarray, b: np.ndarray, split: int = ozaki.SPLIT_K
            ) -> tuple[ozaki.Estimate, dict[int, np.ndarray]]:
    """The default (MODULI = 0) in NumPy as the kernels run it: the estimate on their sample (the largest-norm row and
    column in slot 0), then the row and column check on the scheme's C with the number it chose, and more where it
    fails; returns the report and C per number of moduli computed."""
    m, k = a.shape
    shift = ozaki.shifts(a, b)
    shift = shift if shift.any() else None
    rn2, cn2 = ozaki.norms(a, b, shift)
    rows, cols = ozaki.sample_picks(m, b.shape[1])
    rows[0], cols[0] = np.argmax(rn2), np.argmax(cn2)
    sample = ozaki.sample_errors(a, b, rows, cols, shift, split)
    report = ozaki.choose(sample, [0, int(shift is not None), 0, 0])
    cs = {}

    def check(moduli: int) -> np.ndarray:
        cs[moduli] = scheme(a, b, moduli, shift).astype(np.float32)
        return ozaki.lines(rn2, cn2, *ozaki.extents(cs[moduli]), sample, k)

    return (ozaki.hold_lines(report, check) if report.moduli else report), cs


def test_the_check_kernels_compile_clean_offline():
    pytest.importorskip("cuda.bindings.nvrtc")  # the offline extra
    from gemm_lab import compiler

    for name in ozaki_pipeline.CHECK.functions:
        r = compiler.probe_report(ozaki_pipeline.CHECK, name, "sm_90")
        assert r.spills == 0 and r.stack_bytes == 0 and not r.performance_warnings, r


def test_the_check_shares_kernel_16s_scale_and_sample_layout():
    import re

    check, kernel16 = ((catalog.ROOT / "kernels" / f).read_text() for f in ("ozaki_check.cu", "16_ozaki.cu"))
    helper = re.compile(r"__device__ __forceinline__ int scale_exponent\(.*?\n}", re.S)
    assert helper.search(check).group() == helper.search(kernel16).group()
    for name, value in (("CANDIDATES", len(ozaki.CANDIDATES)), ("SAMPLE_FIELDS", ozaki.SAMPLE_FIELDS)):
        assert re.search(rf"constexpr int {name} = (\d+);", check).group(1) == str(value), name
    for name in ("REBUILD_ROWS", "RESIDUE_RUN", "B_COLS", "B_DEPTH"):
        assert re.search(rf"constexpr int {name} = (\d+);", kernel16).group(1) == str(getattr(ozaki_pipeline, name))
    assert re.search(r"constexpr int LINES = 2 \* CANDIDATES \+ 2;", check), "the check's LINES is ozaki.LINES"
    escape = dict(re.findall(r"(ESCAPE_\w+) = (\d+)", check))
    tiles = catalog.get("thread_tile_2d").full_params({})  # the escape's SGEMM is kernel 05 at its defaults
    assert int(escape["ESCAPE_TILE"]) == ozaki_pipeline.ESCAPE_TILE == tiles["BM"] == tiles["BN"]
    assert (int(escape["ESCAPE_T"]), int(escape["ESCAPE_BK"])) == (tiles["TM"], tiles["BK"])
    assert tiles["TM"] == tiles["TN"]


@pytest.mark.parametrize("name", ["normal", emulation.QUIET_ROWS, emulation.HEAVY_HALF])
def test_the_row_model_tracks_the_worst_rows_error(name):
    """The check's model of the worst row's error over SGEMM's follows the scheme's real one against SGEMM's real one
    (sequential FP32), from above by up to a few times (SGEMM's side is a lower estimate), wherever the scheme's
    error is more than C's own rounding."""
    a, b = family(name, 128, 96, 1024, seed=7)
    report, cs = default(a, b)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    sgemm = worst_lines(sgemm_sequential(a, b, ozaki.SPLIT_K), ref)[0]
    shift = ozaki.shifts(a, b)
    compared = 0
    for moduli in ozaki.CANDIDATES:
        c = cs[moduli] if moduli in cs else scheme(a, b, moduli, shift if shift.any() else None).astype(np.float32)
        real = worst_lines(c, ref)[0] / sgemm
        if real > 0.3:
            assert 0.5 < report.rows[moduli] / real < 5, (moduli, report.rows[moduli], real)
            compared += 1
    assert compared >= 1


def test_the_rule_raises_falls_back_or_lets_a_pinned_number_stand():
    def result(rows: list[float], sgemm: float = 1e-6) -> list[float]:  # ozaki_lines' layout, columns at 0.1
        return [r * sgemm for r in rows] + [0.1 * sgemm] * 4 + [sgemm, sgemm]

    estimate = ozaki.verdict([7, 1e-7, *[1e-7] * 4, *[0.1] * 4, 0, 0, 0, 0], pinned=False)
    asked = []

    def check(moduli: int, results: dict[int, list[float]]) -> list[float]:
        asked.append(moduli)
        return results[moduli]

    first = result([300, 20, 1.5, 0.1])
    raised = ozaki.hold_lines(estimate, lambda m: check(m, {7: first, 8: first}))  # C's maxima alike with 8
    assert (raised.moduli, raised.raised_from, raised.rows[8]) == (8, 7, pytest.approx(1.5)) and asked == [7, 8]
    assert raised.as_dict()["rows"]["8"] == raised.rows[8] and raised.as_dict()["raised_from"] == 7
    asked.clear()  # a row all error at 7: its max |C| hid how far 8 misses; the check on 8's C says so, 9 holds
    again = ozaki.hold_lines(estimate, lambda m: check(m, {7: first, 8: result([900, 60, 4, 0.3]),
                                                           9: result([900, 60, 4, 0.3])}))
    assert (again.moduli, again.raised_from, asked) == (9, 7, [7, 8, 9])
    fell = ozaki.hold_lines(estimate, lambda m: result([1e4, 800, 50, 3]))
    assert (fell.moduli, fell.raised_from) == (0, 7)
    pinned = ozaki.hold_lines(replace(estimate, pinned=True), lambda m: result([1e4, 800, 50, 3]))
    assert pinned.moduli == 7 and not pinned.lines_hold(7)
    assert ozaki.hold_lines(estimate, lambda m: result([30, 1.0, 0.1, 0.01])).raised_from == 0
    floor = ozaki.line_ratios([0.0] * ozaki.LINES)  # an all-zero C: nothing to compare, SGEMM's floor its rounding
    assert floor == (dict.fromkeys(ozaki.CANDIDATES, 0.0), dict.fromkeys(ozaki.CANDIDATES, 0.0))


# (family, what the default must do): "keep" the estimate's choice, "raise" it or "fall back" (the check trips)
DEFAULTS = [("normal", "keep"), ("outlier channel", "keep"), ("phi2", "keep"), ("phi3", "keep"),
            (emulation.QUIET_ROWS, "raise"), (emulation.QUIET_COLUMNS, "raise"), (emulation.SILENT_ROWS, "fall back")]


@pytest.mark.parametrize("name,does", DEFAULTS)
def test_the_default_keeps_every_row_and_column_within_twice_sgemms(name, does):
    """The default in NumPy on 128 x 128 x 1024: on inputs that pass today the check keeps the estimate's choice; on
    families that hide from the sample it raises the number of moduli, or falls back; whatever ran keeps the worst row
    and the worst column within twice SGEMM's (sequential FP32), normwise and median errors too."""
    a, b = family(name, 128, 128, 1024, seed=11)
    report, cs = default(a, b)
    assert {"keep": not report.raised_from, "raise": report.raised_from and report.moduli,
            "fall back": report.raised_from and not report.moduli}[does], report
    if report.moduli:
        ref = a.astype(np.float64) @ b.astype(np.float64)
        sgemm = sgemm_sequential(a, b, ozaki.SPLIT_K)
        mine, theirs = (*errors(cs[report.moduli], ref), *worst_lines(cs[report.moduli], ref)), \
            (*errors(sgemm, ref), *worst_lines(sgemm, ref))
        assert all(x <= 2 * y for x, y in zip(mine, theirs)), (mine, theirs)
    if report.raised_from:  # and the estimate's own choice would not have done
        ref = a.astype(np.float64) @ b.astype(np.float64)
        sgemm = worst_lines(sgemm_sequential(a, b, ozaki.SPLIT_K), ref)
        assert max(x / y for x, y in zip(worst_lines(cs[report.raised_from], ref), sgemm)) > 2


def test_the_families_are_built_alike_on_numpy_arrays():
    for name in emulation.HIDDEN:
        a, b = np.ones((82, 64), np.float32), np.ones((64, 50), np.float32)
        emulation.shape_family(a, b, name)
        assert a.dtype == b.dtype == np.float32
        quiet = (b[:, 5] if name == emulation.QUIET_COLUMNS else a[3 if name == emulation.HEAVY_HALF else 5]) == 0
        assert quiet.any() and (a.max() > 1 or b.max() > 1)
    with pytest.raises(ValueError, match="no family 'loud rows'"):
        emulation.shape_family(a, b, "loud rows")


def test_old_accuracy_rows_read_without_worst_lines():
    row = {"method": "cublas", "params": {}, "m": 8, "n": 8, "k": 8, "phi": None, "max_rel_err": 1e-7,
           "median_rel_err": 1e-8, "gpu": "x", "recorded_at": "2025-01-01"}
    e = emulation.Errors(**row)
    assert e.worst_row_rel_err is None and e.worst_col_rel_err is None and "worst_row_rel_err" in e.row()
    ref = np.array([[1.0, 2.0], [0.0, 0.0], [4.0, -8.0]])
    assert emulation.worst_lines(np.array([[0.2, 0.0], [0.0, 0.0], [0.0, 0.4]]), ref) == (0.1, 0.05)


# Bad input is refused with the reason, and a replayed record says what its live call said.
def test_a_replayed_pinned_record_warns_as_its_live_call_did(replay):
    import gemm_lab as gl

    with pytest.warns(ozaki.AccuracyWarning, match=r"^the recorded call's estimate \(.*\): 6 moduli: ") as seen:
        x = gl.bench("ozaki", 4096, {"MODULI": 6})
    verdict, lines = (str(w.message).split("): ", 1)[1] for w in seen if w.category is ozaki.AccuracyWarning)
    assert verdict.startswith("6 moduli: on a sample of these inputs the estimated error is 8.35 times SGEMM's")
    assert lines.startswith("6 moduli: the worst row of C is estimated to err 3.04 times SGEMM's worst row")
    assert verdict.endswith("7 moduli would be (MODULI=7), or MODULI=0 chooses per call")
    report = ozaki.Estimate.from_dict(x.details)
    assert report.pinned and not report.qualifies(6) and not report.lines_hold(6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gl.bench("ozaki", 4096, {"MODULI": 9})  # qualifies and holds: silent
        gl.bench("ozaki", 4096)  # the default acts on its estimate instead
        ozaki_pipeline.warn_recorded(replace(x, details={}))  # no report kept: nothing to say


def test_the_report_reads_back_as_written_and_names_what_a_pinned_number_falls_short_of():
    estimate = ozaki.verdict([6, 1e-7, *[1e-6, 1e-8, 1e-9, 1e-10], *[3.0, 0.5, 0.1, 0.01], 0, 0, 0, 0], pinned=True)
    checked = replace(estimate, rows={6: 5.0, 7: 3.0, 8: 1.0, 9: 0.1}, columns=dict.fromkeys(ozaki.CANDIDATES, 0.1))
    assert ozaki.Estimate.from_dict(checked.as_dict()) == checked
    both = ozaki.pinned_warnings(checked)
    assert len(both) == 2 and "estimated error is 10 times" in both[0] and "worst row of C" in both[1]
    assert all(text.endswith("8 moduli would be (MODULI=8), or MODULI=0 chooses per call") for text in both)
    assert ozaki.pinned_warnings(checked, estimate=False) == both[1:]  # live, the verdict's was said before the check
    unchecked, = ozaki.pinned_warnings(estimate)  # lines hold until checked: 7 moduli look enough
    assert unchecked.startswith(both[0].split(";")[0]) and "7 moduli would be" in unchecked
    assert ozaki.pinned_warnings(replace(checked, pinned=False)) == []


def test_reconstruct_refuses_a_product_count_other_than_the_moduli():
    a, b = family("normal", 8, 4, 64)
    ra, rb, e, f = ozaki.residues(a, b, 7)
    products = [x @ y for x, y in zip(ra, rb)]
    with pytest.raises(ValueError, match=r"7 products for 6 moduli \(256, 255, 253, 251, 247, 241\)"):
        ozaki.reconstruct(products, e, f, 6)
    with pytest.raises(ValueError, match=r"3 products for 7 moduli"):
        ozaki.reconstruct(products[:3], e, f, 7)


@pytest.mark.parametrize("operand,value", [("A", np.inf), ("A", np.nan), ("B", -np.inf)])
def test_the_numpy_model_refuses_infinities_and_nans(operand, value):
    a, b = family("normal", 8, 4, 64)
    (a if operand == "A" else b)[2, 3] = value
    with pytest.raises(ValueError, match=rf"{operand} holds infinities or NaNs \(1 of them\): the NumPy model takes "
                                         r"finite inputs .*gl.gemm\(\"ozaki\", \.\.\.\) gives their elements of C "
                                         r"SGEMM's infinities and NaNs"):
        ozaki.residues(a, b, 7)


def test_the_numpy_model_refuses_operands_that_do_not_multiply():
    with pytest.raises(ValueError, match=r"A of shape \(64, 128\) and B of shape \(100, 32\): .* as many columns of A "
                                         r"as rows of B"):
        ozaki.residues(np.ones((64, 128), np.float32), np.ones((100, 32), np.float32), 7)
    with pytest.raises(ValueError, match=r"A of shape \(5,\) and B of shape \(5,\): the NumPy model multiplies a 2-D"):
        ozaki.residues(np.ones(5), np.ones(5), 7)


def test_moduli_are_integers_or_sequences_of_them():
    assert ozaki.chosen(np.int64(7)) == ozaki.chosen(7.0) == ozaki.MODULI[:7]
    assert ozaki.chosen(np.array([3, 5, 7])) == ozaki.chosen([np.int32(3), 5, 7]) == (3, 5, 7)
    with pytest.raises(TypeError, match=r"moduli \(an int between 1 and 9, the first that many of MODULI, or a "
                                        r"sequence of pairwise coprime ints >= 2\) must be an integer, not True"):
        ozaki.chosen(True)
    with pytest.raises(ValueError, match=r"moduli \(an int between 1 and 9.* must be an integer, not 6.5"):
        ozaki.chosen(6.5)
    with pytest.raises(ValueError, match=r"each of moduli=\(3, 5.5\) \(pairwise coprime ints >= 2\) must be an "
                                         r"integer, not 5.5"):
        ozaki.chosen((3, 5.5))
    for text in ("357", b"357"):
        with pytest.raises(TypeError, match=r"moduli=b?'357': an int between 1 and 9"):
            ozaki.product(text)
    with pytest.raises(ValueError, match=r"moduli=0: an int between 1 and 9"):
        ozaki.weights(0)


@pytest.mark.parametrize("k", [0, -5])
def test_a_product_needs_a_depth_of_at_least_one(k):
    with pytest.raises(ValueError, match=rf"k={k}: the depth of the product .* must be at least 1"):
        ozaki.bits(7, k)
    with pytest.raises(ValueError, match=rf"k={k}: "):
        ozaki.norm_bound(7, k)


@pytest.mark.parametrize("a,b,operand,first", [(1e-200, 1.0, "A", "1e-200"), (1e160, 1e-160, "A", "1e\\+160"),
                                               (1.0, 1e-50, "B", "1e-50")])
def test_the_numpy_model_refuses_values_outside_fp32s_range(a, b, operand, first):
    """Outside FP32's range the squared norms underflow or overflow in double, and C came out 0 without a word."""
    with pytest.raises(ValueError, match=rf"{operand} holds values float32 cannot hold \(16 of them, the first "
                                         rf"{first}\): the NumPy model takes FP32 inputs, nonzero magnitudes from "
                                         r"1.4e-45 to 3.4e\+38"):
        ozaki.residues(np.full((4, 4), a), np.full((4, 4), b), 7)
    assert np.allclose(scheme(np.full((4, 4), 1e-40), np.ones((4, 4)), 7, None), 4e-40)  # FP32's subnormals are in


def test_reconstruct_refuses_products_that_are_not_integer_sums():
    ra, rb, e, f = ozaki.residues(np.ones((4, 4)), np.ones((4, 4)), 7)
    products = [x @ y for x, y in zip(ra, rb)]
    assert (ozaki.reconstruct([x.astype(np.float64) for x in products], e, f, 7) == 4.0).all()  # whole floats do
    with pytest.raises(ValueError, match=r"products\[0\] holds values that are not integers within int64 \(16 of them, "
                                         r"the first 0.4\): integers expected"):
        ozaki.reconstruct([x + 0.4 for x in products], e, f, 7)
    with pytest.raises(TypeError, match=r"products\[0\] of dtype complex128: integers expected"):
        ozaki.reconstruct([x + 0j for x in products], e, f, 7)
    with pytest.raises(TypeError, match=r"A of dtype complex128: the NumPy model takes real numbers"):
        ozaki.residues(np.ones((2, 2)) * 1j, np.ones((2, 2)), 7)


@pytest.mark.parametrize("call,error,message", [
    (lambda: ozaki.traffic(-3, 4096, 4096, 4096), ValueError, r"moduli=-3: an int between 1 and 9"),
    (lambda: ozaki.traffic(100, 4096, 4096, 4096), ValueError, r"moduli=100: an int between 1 and 9"),
    (lambda: ozaki.traffic(7.5, 4096, 4096, 4096), ValueError, r"moduli \(an int .* must be an integer, not 7.5"),
    (lambda: ozaki.traffic(7, 0, 0, 0), ValueError, r"shape M=0, N=0, K=0: every dimension must be at least 1"),
    (lambda: ozaki.traffic(7, 4096.5, 4096, 4096), ValueError, r"M must be an integer, not 4096.5"),
    (lambda: ozaki.split_k(-4096, 4096, 4096, 132), ValueError, r"shape M=-4096, N=4096, K=4096: every dimension"),
    (lambda: ozaki.split_k(4096, 4096, 4096, 0), ValueError, r"sms=0: the GPU's multiprocessor count must be at"),
    (lambda: ozaki.bits(7, True), TypeError, r"k, the depth of the product .* must be an integer, not True"),
    (lambda: ozaki.bits(7, math.nan), ValueError, r"k, the depth of the product .* must be an integer, not nan"),
    (lambda: ozaki.bits(7, 4096.5), ValueError, r"k, the depth of the product .* must be an integer, not 4096.5"),
    (lambda: ozaki.crt([1.5, 2, 3], 3), ValueError, r"each of residues=\[1.5, 2, 3\] \(ints, one per modulus\) must "
                                                    r"be an integer, not 1.5"),
    (lambda: ozaki.sample_picks(0, 0), ValueError, r"m=0: C's row count must be at least 1"),
    (lambda: ozaki.scale_exponents(np.array([4.0, -1.0]), 10), ValueError, r"norm2 holds values that are no squared "
                                                                           r"norm \(1 of them, the first -1\)"),
    (lambda: ozaki.scale_exponents(np.array([math.inf]), 10), ValueError, r"the first inf\): a squared norm is finite"),
])
def test_sizes_moduli_residues_and_norms_out_of_range_are_refused(call, error, message):
    """Each of these returned a number (negative bytes, 32, -1 indices, -2^63, a truncated residue)."""
    with pytest.raises(error, match=message):
        call()


def test_valid_sizes_moduli_and_norms_give_what_they_gave():
    assert ozaki.traffic(7.0, 4096, 4096, 4096) == ozaki.traffic(ozaki.MODULI[:7], 4096, 4096, 4096)
    assert ozaki.traffic(7, 4096, 4096, 4096)["products"] == (7 * 8192 * 4096, 7 * 4096 * 4096)
    assert ozaki.split_k(128, 128, 4096.0, 132) == 32 and ozaki.bits(7, 4096.0) == ozaki.bits(7, 4096)
    assert ozaki.crt(np.array([2, 3, 2]), (3, 5, 7)) == ozaki.crt((2.0, 3, 2), (3, 5, 7)) == 23
    assert list(ozaki.scale_exponents(np.array([0.0, 4.0]), 10)) == [0, 9]
    assert ozaki.constants(7.0, 4096).tolist() == ozaki.constants(7, 4096).tolist()


@pytest.mark.parametrize("call,error,message", [
    (lambda: ozaki.crt(5, 3), TypeError, r"residues=5: a sequence of ints, one per modulus of \(256, 255, 253\)"),
    (lambda: ozaki.crt(["a", 2, 3], 3), TypeError, r"each of residues=\['a', 2, 3\] .* must be an integer, not 'a'"),
    (lambda: ozaki.constants([256, 255], 4096), TypeError, r"moduli=\[256, 255\]: the kernels take a count of moduli, "
                                                           r"an int between 1 and 9"),
    (lambda: ozaki.chosen(np.array(7)), TypeError, r"moduli=array\(7\): an int between 1 and 9"),
    (lambda: ozaki.shifts(np.ones((4, 5)), np.ones((4, 4))), ValueError, r"A of shape \(4, 5\) and B of shape "
                                                                         r"\(4, 4\): the NumPy model multiplies"),
    (lambda: ozaki.residues(np.ones((4, 4)), np.ones((4, 4)), 7, np.zeros(3, np.int64)), ValueError,
     r"shift of shape \(3,\): one exponent per column of A, K = 4 of them"),
    (lambda: ozaki.choose(np.ones((8, 3)), [0, 0, 0, 0]), ValueError, r"sample of shape \(8, 3\): one row of "
                                                                      r"SAMPLE_FIELDS = 8 numbers"),
    (lambda: ozaki.choose(np.ones((8, 8)), [0, 0]), ValueError, r"flags=\[0, 0\]: four numbers"),
    (lambda: ozaki.choose(np.ones((8, 8)), [0, 0, 0, 0], 99), ValueError, r"pinned=99: 0 \(the fewest that qualify\) "
                                                                          r"or one of CANDIDATES \(6, 7, 8, 9\)"),
    (lambda: ozaki.verdict([1.0], False), ValueError, r"result of length 1: ozaki_decide's holds at least 14 numbers"),
])
def test_malformed_arguments_are_named_before_numpy_or_python_fails(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize("which", ["e", "f", "a product"])
def test_reconstruct_refuses_products_and_exponents_of_other_shapes(which):
    ra, rb, e, f = ozaki.residues(np.ones((4, 3)), np.ones((3, 5)), 7)
    products = [x @ y for x, y in zip(ra, rb)]
    e, f = (e[:3], f) if which == "e" else (e, f[:2]) if which == "f" else (e, f)
    if which == "a product":
        products[2] = products[2][:3]
    with pytest.raises(ValueError, match=r"products of shapes \[\(4, 5\), \(4, 5\), \(.*\)\], e of shape \(.*\) and f "
                                         r"of shape \(.*\): every product M x N, e M exponents and f N"):
        ozaki.reconstruct(products, e, f, 7)
