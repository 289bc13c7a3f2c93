"""Facts written on both sides, in Python and in the CUDA of kernels/, agree: each test reads the kernel's source text
(as test_ch07 does for kernel 10b's GROUP) and compares it with the Python that launches, mirrors or models it.
A kernel's `constexpr` chain is evaluated at the Python's parameters (`constants`); where a fact is written only in
CUDA and the Python re-derives it (a launch grid, a TMA box, a buffer's layout), the derivation is checked. The
Python's launches are recorded through stand-ins for CuPy and the CUDA driver, so nothing here needs a GPU.
Every assertion message names the two places that disagree.
"""
from __future__ import annotations

import functools
import math
import re
import sys
import types
from typing import Any

import numpy as np
import pytest

from gemm_lab import catalog, compiler, device, run, tma
from gemm_lab.models import gpus, memory, model
from gemm_lab.pages import diagrams
from gemm_lab.precision import int8, ozaki, ozaki_pipeline
from gemm_lab.spec import ceil_div

KERNELS = catalog.ROOT / "kernels"


def source(name: str) -> str:
    return (KERNELS / name).read_text()


def block(text: str, start: str) -> str:
    """From the first match of regex `start` to the end of its definition (the next `}` at the start of a line)."""
    match = re.search(start, text)
    assert match, f"no {start!r} in the kernel's source: the test's anchor is stale"
    return text[match.start():re.compile(r"^}", re.M).search(text, match.end()).end()]


def found(pattern: str, text: str, where: str) -> tuple[int, ...]:
    """The integers a regex captures in a kernel's text; the test fails, naming the line it expected, if it is gone."""
    match = re.search(pattern, text)
    assert match, f"{where} no longer reads {pattern!r}: compare it with the Python again and update this test"
    return tuple(int(g) for g in match.groups())


def _split(text: str, sep: str = ",") -> list[str]:
    """`text` split at `sep` outside parentheses."""
    parts, depth, part = [], 0, ""
    for ch in text:
        depth += (ch == "(") - (ch == ")")
        if ch == sep and depth == 0:
            parts.append(part.strip())
            part = ""
        else:
            part += ch
    return parts + [part.strip()]


def call_args(text: str, name: str) -> list[str]:
    """The arguments of the first `name(...)` in text."""
    start = text.index(name + "(") + len(name) + 1
    depth, end = 1, start
    while depth:
        depth += (text[end] == "(") - (text[end] == ")")
        end += 1
    return _split(text[start:end - 1])


@functools.cache
def _python(expr: str) -> Any:
    """A C++ integer expression of the kernels (arithmetic, comparisons, logic, ?:) as compiled Python."""
    expr = re.sub(r"\b(\d+)[uU]\b", r"\1", expr).replace("&&", " and ").replace("||", " or ").replace("/", "//")
    expr = re.sub(r"!(?!=)", " not ", expr)

    def ternary(s: str) -> str:
        if "?" not in s:
            return s
        condition, rest = s.split("?", 1)
        then, otherwise = rest.split(":", 1)
        return f"({ternary(then)} if {ternary(condition)} else {ternary(otherwise)})"

    groups: list[str] = []
    while match := re.search(r"\(([^()]*)\)", expr):  # innermost parentheses first, each ?: inside its own
        groups.append(ternary(match[1]))
        expr = f"{expr[:match.start()]}@{len(groups) - 1}@{expr[match.end():]}"
    expr = ternary(expr)
    while match := re.search(r"@(\d+)@", expr):
        expr = f"{expr[:match.start()]}({groups[int(match[1])]}){expr[match.end():]}"
    return compile(expr, "<kernel>", "eval")


def cxx(expr: str, **names: Any) -> Any:
    return eval(_python(expr), {"__builtins__": {}}, names)


def declarations(text: str) -> list[tuple[str, str]]:
    """(name, C++ expression) of every integer `constexpr` of text, in order (one declaration may name several)."""
    return [tuple(side.strip() for side in part.split("=", 1))
            for declaration in re.findall(r"constexpr (?:int|unsigned|bool) ([^;]+);", text)
            for part in _split(declaration)]


def constants(text: str, **names: Any) -> dict[str, Any]:
    """Every `constexpr` of `text` that `names` (template parameters) determine, evaluated in order."""
    scope = dict(names)
    for name, expr in declarations(text):
        try:
            scope[name] = cxx(expr, **scope)
        except (NameError, SyntaxError, TypeError):  # another scope's names, or not an integer expression
            continue
    return scope


def s8_bk() -> int:
    return found(r"constexpr int S8_BK = (\d+);", source("int8_wgmma.cuh"), "kernels/int8_wgmma.cuh")[0]


def kernel_declaration(text: str, function: str) -> str:
    match = re.search(rf"__global__ void ([^;{{]*?)\b{function}\(", text)
    assert match, f"no __global__ {function} in the kernel's source"
    return match[1]


def parameters(spec: catalog.KernelSpec, p: dict[str, int]) -> dict[str, Any]:
    """A spec's template parameters, and the flags its .cu file's wrappers pass to the shared block functions."""
    return {**p, "SPLIT": spec.precision == "3xtf32", "SUM": p.get("SUM", 1), "SPLITTER": p.get("SPLITTER", 0),
            "BSMEM": p.get("BSMEM", 0)}


class Recorder:
    """A kernel that records each launch's arguments instead of running."""

    def __init__(self, calls: list, name: str):
        self.calls, self.name = calls, name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls.append((self.name, args, kwargs))


class FakeArray(np.ndarray):
    """A host array standing in for a CuPy one: `get` copies into `out`, `data.ptr` is 0."""

    def get(self, out: np.ndarray, **_: Any) -> np.ndarray:
        out[...] = self
        return out


@pytest.fixture
def fake_cuda(monkeypatch):
    """CuPy and the CUDA driver replaced by NumPy and recorders: returns the list of recorded tensor-map encodings."""
    encoded: list = []
    cupy = types.ModuleType("cupy")
    cupy.__dict__.update({t: getattr(np, t) for t in ("uint8", "int8", "int32", "float32", "float64", "uint64")})
    cupy.empty = lambda shape, dtype: np.empty(shape, dtype).view(FakeArray)
    cupy.asarray = lambda x, dtype=None: np.asarray(x, dtype).view(FakeArray)
    cupy.zeros = lambda shape, dtype: np.zeros(shape, dtype).view(FakeArray)
    class Stream(types.SimpleNamespace):  # made current by `with`, as CuPy's are
        def __enter__(self) -> Stream:
            return self

        def __exit__(self, *_: Any) -> None:
            pass

    stream = Stream(wait_event=lambda event: None)
    cupy.cuda = types.SimpleNamespace(alloc_pinned_memory=bytearray, get_current_stream=lambda: stream,
                                      Stream=lambda **_: stream,
                                      Event=lambda **_: types.SimpleNamespace(record=lambda *_: None, done=True))

    class Names:  # the driver's enums: each member is its own name
        def __getattr__(self, name: str) -> str:
            return name

    def encode(*args: Any) -> tuple[int, Any]:
        encoded.append(args)
        return 0, types.SimpleNamespace(opaque=[0] * 16)

    driver = types.SimpleNamespace(cuuint32_t=int, cuuint64_t=int, CUtensorMapDataType=Names(),
                                   CUtensorMapInterleave=Names(), CUtensorMapSwizzle=Names(),
                                   CUtensorMapL2promotion=Names(), CUtensorMapFloatOOBfill=Names(),
                                   CUresult=types.SimpleNamespace(CUDA_SUCCESS=0), cuTensorMapEncodeTiled=encode)
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setitem(sys.modules, "cuda.bindings", types.SimpleNamespace(driver=driver))
    return encoded


def matrix(*shape: int, dtype: str = "float32") -> Any:
    """What tma.py reads of a matrix: its shape, dtype and device pointer."""
    return types.SimpleNamespace(shape=shape, dtype=dtype, data=types.SimpleNamespace(ptr=0),
                                 reshape=lambda *s: matrix(*s, dtype=dtype))


def box(encoding: tuple) -> tuple[list[int], int, str]:
    """(box dimensions, bytes per element, swizzle) of a recorded cuTensorMapEncodeTiled."""
    kind, *_, box_dims, _, _, swizzle, _, _ = encoding
    return box_dims, 1 if kind.endswith("UINT8") else 4, swizzle


# --- the Ozaki scheme: kernels/16_ozaki.cu and gemm_lab/precision/ozaki.py -----------------------------------------

OZAKI = source("16_ozaki.cu")
OZAKI_AT = "kernels/16_ozaki.cu"
CHECK = source("ozaki_check.cu")  # the row and column check, after the products


def test_ozaki_sample_and_statistics_sizes():
    c = constants(OZAKI)
    for module, name in ((ozaki, "SAMPLE_ROWS"), (ozaki, "SAMPLE_COLS"), (ozaki, "SAMPLE_FIELDS"),
                         (ozaki_pipeline, "STATS_ROWS")):
        mine = getattr(module, name)
        assert mine == c[name], f"{module.__name__}.{name} = {mine}, {OZAKI_AT}'s {c[name]}"
    assert len(ozaki.CANDIDATES) == c["CANDIDATES"], \
        f"ozaki.CANDIDATES {ozaki.CANDIDATES}: {OZAKI_AT} weighs {c['CANDIDATES']} numbers of moduli"


def test_ozaki_candidates_are_the_numbers_the_kernel_weighs():
    (first,) = found(r"chosen = (\d+) \+ q;", OZAKI, OZAKI_AT)  # ozaki_decide: candidate q is 6 + q moduli
    assert tuple(range(first, first + len(ozaki.CANDIDATES))) == ozaki.CANDIDATES, \
        f"ozaki.CANDIDATES {ozaki.CANDIDATES}: {OZAKI_AT}'s ozaki_decide weighs {first} + q moduli"
    most = max(catalog.get("ozaki").choices["MODULI"])
    assert ozaki.CANDIDATES[-1] == len(ozaki.MODULI) == most, \
        f"ozaki.CANDIDATES ends at {ozaki.CANDIDATES[-1]}, ozaki.MODULI has {len(ozaki.MODULI)}, the catalog's " \
        f"MODULI choices reach {most}: the estimate, the moduli and the kernels instantiated must agree"


def test_ozaki_sample_row_layout():
    """ozaki_sample writes |c|, SGEMM's variance, the scheme's error per candidate, row and column: sample_errors
    (NumPy's version) and ozaki_decide read them in that order."""
    (first,) = found(r"o\[(\d+) \+ q\] = sqrt\(double\(ozaki\[q\]\)\)", OZAKI, OZAKI_AT)
    row, col = found(r"o\[(\d+)\] = i, o\[(\d+)\] = j;", OZAKI, OZAKI_AT)
    n = len(ozaki.CANDIDATES)
    assert (first, row, col) == (2, 2 + n, 3 + n) and col + 1 == ozaki.SAMPLE_FIELDS, \
        f"{OZAKI_AT}'s sample row (candidates from {first}, row at {row}, column at {col}) against ozaki's " \
        f"{ozaki.SAMPLE_FIELDS} fields and {n} candidates"
    rng = np.random.default_rng(0)
    sample = ozaki.sample_errors(rng.standard_normal((5, 40)), rng.standard_normal((40, 6)), [1, 4], [0, 5])
    assert sample.shape == (4, ozaki.SAMPLE_FIELDS), f"ozaki.sample_errors' rows against {OZAKI_AT}'s SAMPLE_FIELDS"
    assert sample[:, row].tolist() == [1, 1, 4, 4] and sample[:, col].tolist() == [0, 5, 0, 5], \
        f"ozaki.sample_errors puts row and column elsewhere than {OZAKI_AT}'s ozaki_sample ({row}, {col})"


def test_ozaki_verdict_layout():
    """The host reads ozaki_decide's result by position (`ozaki.verdict`), and the later kernels read its flags."""
    n = len(ozaki.CANDIDATES)
    (median,) = found(r"result\[(\d+) \+ q\] = median\[1 \+ q\]", OZAKI, OZAKI_AT)
    (largest,) = found(r"result\[(\d+) \+ q\] = largest;", OZAKI, OZAKI_AT)
    (flags,) = found(r"result\[(\d+) \+ v\] = flags\[v\]", OZAKI, OZAKI_AT)
    (valid,) = found(r"result\[(\d+)\] = valid;", OZAKI, OZAKI_AT)
    (equilibrated,) = found(r"atomicOr\(flags \+ (\d+), 1\)", OZAKI, OZAKI_AT)
    (shifted,) = found(r"atomicAdd\(flags \+ (\d+), 1\)", OZAKI, OZAKI_AT)
    (largest_shift,) = found(r"atomicMax\(flags \+ (\d+), abs\(s\)\)", OZAKI, OZAKI_AT)
    (nonfinite,) = found(r"row_bad\[row\] = 1, flags\[(\d+)\] = 1", OZAKI, OZAKI_AT)
    result = np.arange(100.0, 100.0 + ozaki.VERDICT)
    result[0], result[flags + nonfinite] = 7, 1
    got = ozaki.verdict(result, pinned=False)
    where = f"ozaki.verdict against {OZAKI_AT}'s ozaki_decide"
    assert got.moduli == 7 and got.sgemm_median == result[1], where
    assert list(got.median.values()) == result[median:median + n].tolist(), f"{where}: the medians"
    assert list(got.largest.values()) == result[largest:largest + n].tolist(), f"{where}: the largest errors"
    assert (got.equilibrated, got.largest_shift, got.nonfinite) == (result[flags + shifted],
                                                                   result[flags + largest_shift], True), \
        f"{where}: the flags (equilibrated columns, largest shift, nonfinite)"
    assert ozaki.VERDICT == valid + 1 < 16, f"ozaki.VERDICT = {ozaki.VERDICT}: {OZAKI_AT} writes result[0..{valid}]"
    reads = set(re.findall(r"verdict\[(\d+)\] \?", OZAKI)) | set(re.findall(r"!verdict\[(\d+)\]", OZAKI))
    assert reads, f"{OZAKI_AT}'s later kernels no longer read the 'equilibrated' flag as this test expects"
    assert flags + equilibrated == ozaki.EQUILIBRATED, \
        f"ozaki.EQUILIBRATED = {ozaki.EQUILIBRATED}: ozaki_decide copies the flag to {flags + equilibrated}"
    for read in reads:
        assert int(read) == flags + equilibrated, \
            f"{OZAKI_AT} reads verdict[{read}] as 'equilibrated', ozaki_decide puts that flag at {flags + equilibrated}"


def test_ozaki_constants_are_where_the_kernels_read_them():
    prime = block(OZAKI, r"struct Prime \{")
    rebuild = block(OZAKI, r"void __launch_bounds__\(256, 4\) ozaki_reconstruct\(")
    (split,) = found(r"x \* 0x1p-(\d+)f", OZAKI, OZAKI_AT)  # Split20: x = hi 2^20 + lo
    for moduli in (6, 7, 9):
        consts, mods = ozaki.constants(moduli, 4096), ozaki.MODULI[:moduli]

        def at(text: str, pattern: str, moduli: int = moduli) -> int:
            """The index into consts that the kernel reads where `pattern` matches `text`."""
            return cxx(re.search(pattern, text)[1], MODULI=moduli, l=0)

        inv_p, c20 = at(prime, r"inv_p\(float\(consts\[(.+?)\]\)\)"), at(prime, r"c20\(float\(consts\[(.+?)\]\)\)")
        big, inv_big = at(rebuild, r"double P = consts\[(.+?)\],"), at(rebuild, r"inv_P = consts\[(.+?)\];")
        weight = at(rebuild, r"W\[l\] = consts\[(.+?)\];")
        where = f"ozaki.constants({moduli}, k) against where {OZAKI_AT} reads them"
        assert consts[at(rebuild, r"p = unsigned\(consts\[(.+?)\]\)"):][:moduli].tolist() == list(mods), \
            f"{where}: the moduli"
        assert consts[weight:weight + moduli].tolist() == list(map(float, ozaki.weights(moduli))), f"{where}: W_l"
        assert (consts[big], consts[inv_big]) == (ozaki.product(moduli), 1 / ozaki.product(moduli)), f"{where}: P"
        assert consts[inv_p:inv_p + moduli].tolist() == [float(np.float32(1) / np.float32(p)) for p in mods], \
            f"{where}: 1 / p"
        assert consts[c20:c20 + moduli].tolist() == [2**split % p for p in mods], f"{where}: 2^{split} mod p"


def test_ozaki_moduli_fit_the_kernels_arithmetic():
    low, high = found(r"for any int32 v and (\d+) < p <= (\d+)", OZAKI, OZAKI_AT)  # the products' Modulus
    assert all(low < p <= high for p in ozaki.MODULI), \
        f"ozaki.MODULI {ozaki.MODULI}: {OZAKI_AT}'s Modulus reduces exactly only for {low} < p <= {high}"
    (bits,) = found(r"that a float holds exactly \(\|x\| < 2\^(\d+)\)", OZAKI, OZAKI_AT)  # Split20's range
    g = ozaki.norm_bound(len(ozaki.MODULI), 1)  # the largest G: all the moduli, at K = 1
    assert 2**g + 0.5 < 2**bits, \
        f"ozaki.norm_bound gives G = {g:.2f} with every modulus: scaled integers past {OZAKI_AT}'s 2^{bits}"


def test_ozaki_k_chunks_keep_the_int32_sums_exact():
    bk = s8_bk()
    assert ozaki.K_CHUNK % bk == 0 and ozaki.K_CHUNK % ozaki.K_ALIGN == 0, \
        f"ozaki.K_CHUNK = {ozaki.K_CHUNK}: not whole {bk}-deep steps of kernels/int8_wgmma.cuh (S8_BK) or whole " \
        f"{ozaki.K_ALIGN}-byte TMA rows"
    assert ozaki.K_CHUNK <= catalog.INT8_MAX_K and catalog.INT8_MAX_K * 128**2 <= 2**31 - 1 < \
        (catalog.INT8_MAX_K + 1) * 128**2, f"catalog.INT8_MAX_K = {catalog.INT8_MAX_K} and ozaki.K_CHUNK = " \
        f"{ozaki.K_CHUNK}: int32 sums of int8 products (|r| <= 128) are exact up to 2^17 - 1 terms"


def test_ozaki_residue_rows_are_whole_words():
    (quad,) = found(r"j0 = \(blockIdx\.x \* 64 \+ tx\) \* (\d+), j = ", OZAKI, OZAKI_AT)  # ozaki_reconstruct's uchar4s
    assert constants(OZAKI)["C_ROW_ALIGN"] == ozaki.N_ALIGN and ozaki.N_ALIGN % quad == 0, \
        f"ozaki.N_ALIGN = {ozaki.N_ALIGN}: {OZAKI_AT}'s products store 16 bytes, the reconstruction reads {quad}"
    assert ozaki.K_ALIGN % 4 == 0, f"ozaki.K_ALIGN: {OZAKI_AT}'s residue kernels write words of 4 k"


# Each companion's index math (a regex over its body, its captured numbers) and what a launch must then cover.
STATS = ozaki_pipeline.STATS_ROWS
ACROSS, LANES = (constants(OZAKI)[name] for name in ("STATS_ACROSS", "STATS_LANES"))  # a stats block's threads
RUN, B_COLS, B_DEPTH = (constants(OZAKI)[name] for name in ("RESIDUE_RUN", "B_COLS", "B_DEPTH"))  # the residues'
COVERS = {
    "ozaki_stats_a": (r"c0 = \(blockIdx\.x \* STATS_ACROSS \+ tx\) \* (\d+), r0 = blockIdx\.y \* STATS_ROWS",
                      lambda g, b, s, v: b == ACROSS * LANES and g[0] * ACROSS * v >= s.k and g[1] * STATS >= s.m),
    "ozaki_stats_b": (r"j0 = \(blockIdx\.x \* STATS_ACROSS \+ tx\) \* (\d+), h0 = blockIdx\.y \* STATS_ROWS",
                      lambda g, b, s, v: b == ACROSS * LANES and g[0] * ACROSS * v >= s.n and g[1] * STATS >= s.k),
    "ozaki_rescale_b": (r"j = blockIdx\.x \* (\d+) \+ threadIdx\.x, h0 = blockIdx\.y \* STATS_ROWS",
                        lambda g, b, s, t: b == t and g[0] * t >= s.n and g[1] * STATS >= s.k),
    "ozaki_equilibrate": (r"h = blockIdx\.x \* blockDim\.x \+ threadIdx\.x;", lambda g, b, s: g[0] * b >= s.k),
    "ozaki_rescale_a": (r"row = blockIdx\.x \* \(blockDim\.x / 32\) \+ threadIdx\.x / 32",
                        lambda g, b, s: g[0] * b // 32 >= s.m),
    "ozaki_extremes": (r"u < M \+ N; u \+= gridDim\.x \* blockDim\.x", lambda g, b, s: True),
    "ozaki_gather_b": (r"h = blockIdx\.x \* blockDim\.x \+ threadIdx\.x, t = blockIdx\.y",
                       lambda g, b, s: g[0] * b >= s.k and g[1] == ozaki.SAMPLE_COLS),
    "ozaki_sample": (r"pair = blockIdx\.x \* (\d+) \+ threadIdx\.x / 32",
                     lambda g, b, s, w: b == 32 * w and g[0] * w >= ozaki.SAMPLE_ROWS * ozaki.SAMPLE_COLS),
    "ozaki_decide": (r"if \(warp < CANDIDATES \+ 1\)",  # a warp per histogram
                     lambda g, b, s: g == (1,) and b >= 32 * (len(ozaki.CANDIDATES) + 1)),
    "ozaki_exponents": (r"if \(u < M\) .*\n.*else if \(u < M \+ N\)", lambda g, b, s: g[0] * b >= s.m + s.n),
    "ozaki_residues_a": (r"row = int\(u / \(Kp / RESIDUE_RUN\)\), k0 = int\(u % \(Kp / RESIDUE_RUN\)\) \* RESIDUE_RUN",
                         lambda g, b, s: g[0] * b * RUN >= s.m * s.kp and s.kp % RUN == 0),
    "ozaki_residues_b": (r"j = blockIdx\.x \* B_COLS \+ threadIdx\.x % B_COLS;[\s\S]*"
                         r"for \(int k0 = blockIdx\.y \* B_DEPTH \+ threadIdx\.x / B_COLS \* RESIDUE_RUN; k0 < Kp; "
                         r"k0 \+= gridDim\.y \* B_DEPTH\)",  # y: a grid-stride loop
                         lambda g, b, s: b * RUN == B_COLS * B_DEPTH and g[0] * B_COLS >= s.n
                         and 1 <= g[1] <= catalog.MAX_GRID_Y and s.kp % RUN == 0),
    "ozaki_reconstruct": (r"j = blockIdx\.x \* (\d+) \+ threadIdx\.x;[\s\S]*"
                          r"for \(int r0 = blockIdx\.y \* REBUILD_ROWS; r0 < M; r0 \+= gridDim\.y \* REBUILD_ROWS\)",
                          lambda g, b, s, t: b == t and g[0] * t >= s.n and 1 <= g[1] <= catalog.MAX_GRID_Y),
    "ozaki_nonfinite": (r"j = blockIdx\.x \* blockDim\.x \+ threadIdx\.x, i = blockIdx\.y",
                        lambda g, b, s: g[0] * b >= s.n and g[1] >= s.m),
    "ozaki_lines": (r"u < M \+ N \+ samples; u \+= gridDim\.x \* blockDim\.x", lambda g, b, s: True),
}


CHOSEN = ozaki.CANDIDATES[2]  # not the number the pipeline expects first: both numbers' kernels run


def ozaki_call(monkeypatch, shape: tuple[int, int, int]) -> tuple:
    """Every launch of one call of the Ozaki pipeline (MODULI = 0: its products, its companions) and the planes'
    tensor maps, the estimate choosing CHOSEN moduli and A holding an infinity: (pipeline, launches, planes maps)."""
    calls: list = []
    inst = catalog.instance("ozaki", {"MODULI": 0}, shape)
    monkeypatch.setattr(compiler, "load", lambda i: Recorder(calls, "ozaki_products"))
    monkeypatch.setattr(compiler, "companions", lambda i: {n: Recorder(calls, n) for n in i.spec.companions(i.params)})
    checks = ozaki_pipeline.CHECK.functions
    monkeypatch.setattr(ozaki_pipeline, "_check_kernels", lambda: {n: Recorder(calls, n) for n in checks})
    monkeypatch.setattr(ozaki_pipeline, "to_host", lambda host, array, stream: host.__setitem__(..., array))
    monkeypatch.setattr(ozaki_pipeline, "highest_priority", lambda: -5)
    planes: list = []
    monkeypatch.setattr(int8, "planes_map", lambda x, rows, k0, k1: planes.append((x.shape, rows, k0, k1)))
    monkeypatch.setattr(device, "gpu", lambda: types.SimpleNamespace(cc=(9, 0), sms=132, arch="sm_90"))  # an H100's
    # an H100's SMs, one block each, asked of an instance a call launches (the default's own launches nothing)
    monkeypatch.setattr(run, "slots", lambda spec, p: 132 if p["MODULI"] else pytest.fail("slots of MODULI = 0"))
    pipeline = ozaki_pipeline.Pipeline(inst, None, None, alpha=1.0, beta=0.0, out=None)
    pipeline.verdict[:] = 0
    pipeline.verdict[0] = CHOSEN  # ozaki_decide's choice
    pipeline.verdict[2 + 2 * len(ozaki.CANDIDATES)] = 1  # ... and its first flag: an infinity or a NaN
    pipeline()
    return pipeline, calls, planes


@pytest.mark.parametrize("shape", [(1, 1, 1), (300, 500, 1000), (70, 130, ozaki.K_CHUNK + 200)])
def test_ozaki_launches_cover_what_each_kernel_indexes(fake_cuda, monkeypatch, shape):
    pipeline, calls, planes = ozaki_call(monkeypatch, shape)
    m, n, k = shape
    sizes = types.SimpleNamespace(m=m, n=n, k=k, kp=pipeline.kp)
    launched = {name.split("<")[0] for name, _, _ in calls}
    assert launched == set(COVERS) | {"ozaki_products"}, f"Pipeline launches {sorted(launched)}"
    for name, (grid, threads, _), _ in calls:
        kernel = name.split("<")[0]
        if kernel == "ozaki_products":
            continue
        where = CHECK if kernel in ozaki_pipeline.CHECK.functions else OZAKI
        text = block(where, rf"void (?:__launch_bounds__\(\d+(?:, \d+)?\) )?{kernel}\(")
        pattern, covers = COVERS[kernel]
        bound = re.search(rf"__launch_bounds__\((\d+)(?:, \d+)?\) {kernel}\(", where)
        assert not bound or threads[0] <= int(bound[1]), \
            f"Pipeline launches {kernel} with {threads} threads, {OZAKI_AT}'s __launch_bounds__({bound[1]})"
        assert covers(grid, threads[0], sizes, *found(pattern, text, f"{OZAKI_AT}'s {kernel}")), \
            f"Pipeline's grid {grid} x {threads} misses work of {OZAKI_AT}'s {kernel} at {shape}"
    spec, chunks = catalog.get("ozaki"), pipeline.chunks
    consecutive = all(a[1] == b[0] for a, b in zip(chunks, chunks[1:]))
    assert chunks[0][0] == 0 and chunks[-1][1] == pipeline.kp and consecutive, \
        f"Pipeline.chunks {chunks} do not cut the residue rows (Kp = {pipeline.kp}) into consecutive pieces"
    products = [args for name, args, _ in calls if name == "ozaki_products"]
    kwargs = [kw for name, _, kw in calls if name == "ozaki_products"]
    assert len(products) == 2 * len(chunks), "Pipeline: the expected number's products, then the chosen one's"
    for i, (grid, threads, args) in enumerate(products):
        p = {**pipeline.inst.params, "MODULI": (pipeline.inst.params["MODULI"] or ozaki.CANDIDATES[1], CHOSEN)[
            i // len(chunks)]}
        k0, k1 = chunks[i % len(chunks)]
        assert (grid, threads, kwargs[i]) == (spec.grid(p, m, n, 132), (spec.threads(p),),
                                              {"shared_mem": spec.launch_smem(p)}), \
            f"Pipeline.multiply's launch of {p} against the catalog's grid, threads and launch_smem"
        assert args[2] == k1 - k0 <= ozaki.K_CHUNK, f"Pipeline.multiply's K = {args[2]}, ozaki.K_CHUNK"
    (bm, bn), cluster = spec.tile(pipeline.inst.params), spec.cluster(pipeline.inst.params)
    assert {rows for _, rows, _, _ in planes} == {bm, bn // cluster}, \
        "Pipeline's planes maps: boxes of a tile's rows of A and of a cluster rank's share of B's (as " \
        "kernels/int8_wgmma.cuh multicasts them)"


# --- register split, threads, clusters: __launch_bounds__, __cluster_dims__ and setmaxnreg ------------------------


def test_the_register_split_of_the_warp_specialised_kernels():
    """setmaxnreg's counts: kernel 14's WarpRoles and kernels 15/16's Roles (ws_pipeline.cuh) against the catalog's
    PRODUCER_REGISTERS and consumer_registers, which the rules of wgmma_ws_* and ozaki budget with."""
    roles = {"kernels/14_tf32_wgmma_ws.cu": (block(source("14_tf32_wgmma_ws.cu"), r"struct WarpRoles \{"),
                                             "PRODUCER_REGS", "CONSUMER_REGS"),
             "kernels/ws_pipeline.cuh": (block(source("ws_pipeline.cuh"), r"struct Roles \{"), "PRODUCER", "CONSUMER")}
    consumers = set(catalog.get("wgmma_ws_tf32").choices["CONSUMERS"]) | set(catalog.get("ozaki").choices["CONSUMERS"])
    for where, (text, producer, consumer) in roles.items():
        for c in sorted(consumers):
            got = constants(text, CONSUMERS=c)
            assert got[producer] == catalog.PRODUCER_REGISTERS, \
                f"catalog.PRODUCER_REGISTERS = {catalog.PRODUCER_REGISTERS}, {where}'s {producer} = {got[producer]}"
            assert got[consumer] == catalog.consumer_registers(c), \
                f"catalog.consumer_registers({c}) = {catalog.consumer_registers(c)}, {where}'s {consumer} = " \
                f"{got[consumer]}"
            assert got[consumer] % 8 == 0 and 24 <= got[consumer] <= 256, f"{where}: setmaxnreg takes 24..256 by 8"


LAUNCHED = [(spec, spec.function, spec.param_names) for spec in catalog.KERNELS.values()] + \
    [(catalog.get("ozaki"), catalog.PROBES[catalog.INT8_PRODUCT].functions[0],
      catalog.PROBES[catalog.INT8_PRODUCT].params)]


@pytest.mark.parametrize("spec,function,names", LAUNCHED, ids=[f for _, f, _ in LAUNCHED])
def test_threads_and_clusters_are_the_kernels_launch_bounds_and_cluster_dims(spec, function, names):
    """Every kernel's block size (`threads`) is its __launch_bounds__, its THREADS constants agree, and its blocks
    form clusters of `cluster` stacked along y, as __cluster_dims__(1, CLUSTER, 1) has them."""
    text = spec.source_text() if function == spec.function else catalog.PROBES[catalog.INT8_PRODUCT].source_text()
    declaration = kernel_declaration(text, function)
    bounds = call_args(declaration, "__launch_bounds__")
    dims = call_args(declaration, "__cluster_dims__") if "__cluster_dims__" in declaration else ["1", "1", "1"]
    where = f"{spec.path.relative_to(catalog.ROOT)}'s {function}"
    for p in catalog.legal_grid(spec):
        p = {n: p[n] for n in names}
        full = spec.full_params({**p, **({"MODULI": 0} if function != spec.function else {})})
        assert spec.threads(full) == cxx(bounds[0], **p), \
            f"catalog's {spec.name}.threads({p}) = {spec.threads(full)}, {where}'s __launch_bounds__({bounds[0]})"
        assert [cxx(d, **p) for d in dims] == [1, spec.cluster(full), 1], \
            f"catalog's {spec.name}.cluster({p}) = {spec.cluster(full)}, {where}'s __cluster_dims__({', '.join(dims)})"
        for expr in (e for name, e in declarations(text) if name == "THREADS"):
            if "::" not in expr:  # Tile::THREADS: the header's own THREADS, checked where it is declared
                assert cxx(expr, **p) == spec.threads(full), f"{where}'s THREADS = {expr} at {p}, catalog's threads"


def test_grids_cover_every_tile_once_with_clusters_stacked_along_y():
    """spec.grid against the tile walks of kernels 13, 14 and 15/16 (one block per tile, or persistent), for tails and
    whole tiles; blocks of a cluster are consecutive along y, rank = blockIdx.y % CLUSTER."""
    walks = {"kernels/13_tf32_mma_tma.cu": r"rows_of_clusters = gridDim\.y / CLUSTER, id = blockIdx\.y / CLUSTER \* "
                                           r"gridDim\.x \+ blockIdx\.x;",
             "kernels/14_tf32_wgmma_ws.cu": r"first_tile = blockIdx\.x \+ gridDim\.x \* \(blockIdx\.y / BLOCKS\), "
                                            r"tile_step = gridDim\.x \* \(gridDim\.y / BLOCKS\);",
             "kernels/int8_wgmma.cuh": r"first = blockIdx\.x \+ gridDim\.x \* \(blockIdx\.y / CLUSTER\), "
                                       r"stride = gridDim\.x \* \(gridDim\.y / CLUSTER\);"}
    for where, pattern in walks.items():
        found(pattern, (catalog.ROOT / where).read_text(), where)
    cases = [("mma_tf32_tma", {"CLUSTER": 2}), ("mma_tf32_tma", {"CLUSTER": 1}),
             ("wgmma_ws_tf32", {"PERSIST": 0}), ("wgmma_ws_tf32", {}), ("wgmma_ws_3xtf32", {"CLUSTER": 1}),
             ("wgmma_ws_tf32", {"CLUSTER": -2}), ("wgmma_ws_tf32", {"CLUSTER": -2, "PERSIST": 0}),
             ("ozaki", {}), ("ozaki", {"CLUSTER": 1, "CONSUMERS": 1})]
    for name, params in cases:
        spec = catalog.get(name)
        p = spec.full_params(params)
        (bm, bn), cluster = spec.tile(p), spec.cluster(p)
        for m, n in ((1, 1), (bm * cluster * 3 + 1, bn * 9 - 4), (bm * cluster * 20, bn * 3)):
            gx, gy, _ = spec.grid(p, m, n, slots=132 if spec.persistent(p) else 0)
            assert gy % cluster == 0, f"catalog's {name}.grid {gx, gy} for clusters of {cluster} along y"
            rows, cols = ceil_div(ceil_div(m, bm), cluster), ceil_div(n, bn)
            if p.get("CLUSTER", 1) < 0:  # kernel 14's pair side by side along N: cluster tiles of bm x (cluster bn)
                rows, cols = ceil_div(m, bm), ceil_div(ceil_div(n, bn), cluster)
            seen = []
            for y in range(gy):
                for x in range(gx):
                    if name == "mma_tf32_tma":  # one block per tile: the tile is the block's place in the grid
                        assert (gy // cluster, gx) == (rows, cols), f"catalog's {name}.grid for {m} x {n}"
                        seen.append((y // cluster * gx + x, y % cluster))
                    else:  # a block's tiles: first, first + stride, ...
                        first, stride = x + gx * (y // cluster), gx * (gy // cluster)
                        seen += [(t, y % cluster) for t in range(first, rows * cols, stride)]
            assert sorted(seen) == [(t, r) for t in range(rows * cols) for r in range(cluster)], \
                f"catalog's {name}.grid {gx, gy} at {m} x {n}: not every (cluster tile, rank) exactly once"


def test_stream_k_never_starts_more_blocks_than_kernel_10b_has_progress_words():
    """Stream-K (10b, STREAM = 1) is launched with one block per resident slot (run.slots); blocks past MAX_BLOCKS
    would do nothing, so on every GPU the book runs on the slots stay within it, whatever the registers allow."""
    (most,) = found(r"constexpr int MAX_BLOCKS = (\d+);", source("10b_pipelined_warp_tiling.cu"), "kernel 10b")
    spec = catalog.get("pipelined_warp_tiling")
    for card in (c for c in gpus.CARDS if not catalog.unsupported(spec, c.cc)):
        for p in catalog.legal_grid(spec, {"STREAM": (1,)}):
            smem = spec.smem_bytes(p) + spec.static_smem(p) + catalog.SM90_SMEM_RESERVED
            per_sm = min(card.arch.max_blocks_per_sm, card.arch.max_threads_per_sm // spec.threads(p),
                         card.arch.smem_per_sm // smem)
            assert card.sms * per_sm <= most, \
                f"{card.short}: {card.sms * per_sm} stream-K slots of {spec.describe(p)} (run.slots), kernel 10b's " \
                f"MAX_BLOCKS = {most}"


# --- shared memory: the catalog's smem_bytes against the kernels' arrays and layouts --------------------------------

STATIC_LAYOUT = {"vectorized": "TransposedA", "bank_conflicts": "ATile"}  # the ALayout each kernel instantiates


@pytest.mark.parametrize("spec", [s for s in catalog.KERNELS.values() if not s.dynamic_smem], ids=lambda s: s.name)
def test_static_shared_memory_is_the_kernels_arrays(spec):
    text = spec.source_text()
    # each array once: a file's second entry point (a parts kernel) declares the same arrays for its own launches
    arrays = dict(re.findall(r"__shared__ (?:__align__\(\d+\) )?float (\w+)((?:\[[^\]]+\])+);", text)).values()
    lda = re.search(r"template <int BM>\s+constexpr int LDA = ([^;]+);", text)  # kernel 10's padded row length
    layout = STATIC_LAYOUT.get(spec.name)
    # template parameters left at their defaults (vectorized_block's TRANSPOSED_A = true, for kernel 06 and 07)
    defaults = {name: int(value == "true") if value in ("true", "false") else int(value)
                for name, value in re.findall(r"\b(?:bool|int) (\w+) = (true|false|\d+)[,>]", text)}
    for p in catalog.legal_grid(spec):
        pad = constants(block(text, rf"struct {layout} \{{"), **p)["PAD"] if layout else 0
        scope = defaults | constants(text, **p) | {"PAD": pad}
        floats = 0
        for dims in arrays:
            dims = re.sub(r"LDA<BM>", f"({lda[1]})", dims) if lda else dims.replace("ALayout::PAD", "PAD")
            floats += math.prod(cxx(d, **scope) for d in re.findall(r"\[([^\]]+)\]", dims))
        assert spec.smem_bytes(p) == 4 * floats, \
            f"catalog's {spec.name}.smem_bytes({p}) = {spec.smem_bytes(p)}, {spec.source}'s __shared__ arrays: " \
            f"{4 * floats}"


# kernel -> (where its layout is declared, the line that places the buffers, the bytes it uses); the bytes from a
# 1024-aligned base count 1024 for the alignment (`(... + 1023) & ~1023u`), as the catalog does
ALIGNED = r"\([\w()]+ \+ 1023\) & ~1023u"
DYNAMIC = {
    "pipelined_warp_tiling": (r"void pipelined_block\(", r"Bs = smem \+ STAGES \* A_STAGE;",
                              lambda c: 4 * c["STAGES"] * (c["A_STAGE"] + c["B_STAGE"])),
    "mma_tf32": (r"struct MmaLayout \{", r"smem \+ step % STAGES \* L::STAGE_FLOATS;",
                 lambda c: 4 * c["STAGES"] * c["STAGE_FLOATS"]),
    "wgmma_tf32": (r"struct WgmmaLayout \{", rf"base = {ALIGNED};[\s\S]*smem \+ s \* L::STAGE_BYTES;",
                   lambda c: 1024 + c["STAGES"] * c["STAGE_BYTES"]),
    "mma_tf32_tma": (r"void mma_tma_block\(", rf"base = {ALIGNED};[\s\S]*full0 = base \+ STAGES \* STAGE_BYTES, "
                                              r"empty0 = full0 \+ 8 \* STAGES;",
                     lambda c: 1024 + c["STAGES"] * (c["STAGE_BYTES"] + 2 * 8)),
    "wgmma_ws_tf32": (r"void ws_block\(", rf"base = {ALIGNED};[\s\S]*full0 = base \+ STAGES \* STAGE_BYTES \+ "
                                          r"OUT_BYTES, empty0 = full0 \+ 8 \* STAGES,\s+"
                                          r"ready0 = empty0 \+ 8 \* STAGES;",
                      lambda c: 1024 + c["STAGES"] * (c["STAGE_BYTES"] + 3 * 8) + c["OUT_BYTES"]),
    "ozaki": (r"struct S8Tiles \{", rf"base = {ALIGNED};[\s\S]*full0 = out \+ CONSUMERS \* 4 \* Epilogue::WARP_SMEM,"
                                    r"\s+empty0 = full0 \+ 8 \* STAGES;", lambda c: c["SMEM"]),
}
DYNAMIC |= {"mma_3xtf32": DYNAMIC["mma_tf32"], "wgmma_3xtf32": DYNAMIC["wgmma_tf32"],
            "wgmma_ws_3xtf32": DYNAMIC["wgmma_ws_tf32"]}


@pytest.mark.parametrize("name", DYNAMIC)
def test_dynamic_shared_memory_is_the_kernels_layout(name):
    spec = catalog.get(name)
    anchor, placed, used = DYNAMIC[name]
    text = block(spec.source_text(), anchor)
    found(placed, spec.source_text(), f"{spec.source} (where it places its buffers)")
    for p in catalog.legal_grid(spec):
        c = constants(text, S8_BK=s8_bk(), **parameters(spec, p))
        assert spec.smem_bytes(p) == used(c), \
            f"catalog's {name}.smem_bytes({p}) = {spec.smem_bytes(p)}, {spec.source}'s layout: {used(c)}"


# --- TMA boxes: gemm_lab/tma.py's tensor maps against the copies the kernels expect ---------------------------------

def test_tma_boxes_of_kernels_13_and_14(fake_cuda):
    """A's box is a tile's rows by one BK-deep step, B's are BK x 32 (BN / 32 of them), C's 32 x 32 (TMA stores of
    kernel 14); a stage expects the bytes of all of them, and every box row is the 128 bytes the swizzle spans."""
    (col_step,) = found(r"map_b, col0 \+ (\d+) \* box, step \* BK", source("13_tf32_mma_tma.cu"), "kernel 13")
    c_cols, c_rows, c_bytes = found(r"tma_store\(map_c, col0 \+ 64 \* c \+ (\d+), row0 \+ (\d+) \* q, out \+ (\d+)\)",
                                    source("14_tf32_wgmma_ws.cu"), "kernel 14")
    for name in ("mma_tf32_tma", "wgmma_ws_tf32", "wgmma_ws_3xtf32"):
        spec = catalog.get(name)
        anchor, _, _ = DYNAMIC[name]
        text = block(spec.source_text(), anchor)
        expect = "STAGE_BYTES" if name == "mma_tf32_tma" else "TX_BYTES"
        found(rf"mbar_arrive_expect\(full, {expect}\)", spec.source_text(), spec.source)
        for p in catalog.legal_grid(spec):
            fake_cuda.clear()
            tma.kernel_maps(spec, p, matrix(512, 256), matrix(256, 512), matrix(512, 512))
            (a, size, swizzle), (b, _, _), *c = map(box, fake_cuda)
            k = constants(text, **parameters(spec, p))
            where = f"tma.kernel_maps for {spec.describe(p)} against {spec.source}"
            assert a == [k["BK"], spec.tile(p)[0]] and size * a[0] * a[1] == k["A_BYTES"], f"{where}: A's box {a}"
            assert b == [col_step, k["BK"]] and size * b[0] * b[1] == k["BOX_BYTES"], f"{where}: B's box {b}"
            assert k[expect] == size * (a[0] * a[1] + spec.tile(p)[1] // col_step * b[0] * b[1]), \
                f"{where}: a stage's {expect} against the boxes landing in it"
            assert size * a[0] == 128 and swizzle.endswith("SWIZZLE_128B"), f"{where}: the 128-byte swizzle"
            assert [dims for dims, _, _ in c] == ([[c_cols, c_rows]] if spec.tma_c else []) and \
                (not c or 4 * c_cols * c_rows == c_bytes), f"{where}: C's box for the TMA stores"
    assert tma.BOX_COLS == col_step == c_cols, f"tma.BOX_COLS = {tma.BOX_COLS}, kernels 13 and 14's boxes of 32"


def test_round_copies_maps_a_and_b_as_tf32_and_leaves_c_fp32(fake_cuda):
    """`round_copies`: TMA rounds A and B to TF32 as it copies them (maps of data type TF32); C's map, for the stores,
    stays FP32, and without the option every map is FP32."""
    spec = catalog.get("wgmma_ws_tf32")
    for rounded, kinds in ((True, ("TFLOAT32", "TFLOAT32", "FLOAT32")), (False, ("FLOAT32",) * 3)):
        fake_cuda.clear()
        tma.kernel_maps(spec, spec.full_params(), matrix(512, 256), matrix(256, 512), matrix(512, 512), rounded)
        assert tuple(e[0] for e in fake_cuda) == tuple(f"CU_TENSOR_MAP_DATA_TYPE_{k}" for k in kinds)


@pytest.mark.parametrize("kernel", ["wgmma_ws_3xtf32", "wgmma_tf32", "ozaki", "warp_tiling"])
def test_round_copies_is_refused_where_copies_do_not_feed_one_tf32_product(kernel):
    """3xTF32 needs the low bits rounding clears; a kernel without TMA copies has no map to round through."""
    from gemm_lab.precision import ozaki_pipeline  # noqa: F401  (registers the ozaki launcher)

    inst = catalog.instance(kernel, None, (512, 512, 256))
    with pytest.raises(ValueError, match="round_copies"):
        run.launcher(inst, matrix(512, 256), matrix(256, 512), out=matrix(512, 512), round_copies=True)


def test_tma_boxes_and_launch_of_kernel_15(fake_cuda, monkeypatch):
    """int8.launcher's planes maps (128-byte rows, A by a tile's rows, B^T by a rank's share), C's map (8 x 32
    int32, as StoreInt32 writes it) and its launch, with the epilogue's shared memory after the stages, against
    kernels/int8_wgmma.cuh and 15_int8_wgmma_ws.cu."""
    (warp_smem,) = found(r"StoreInt32 \{\s+static constexpr unsigned WARP_SMEM = (\d+);",
                         source("15_int8_wgmma_ws.cu"), "kernels/15_int8_wgmma_ws.cu")
    (warps,) = found(r"full0 = out \+ CONSUMERS \* (\d+) \* Epilogue::WARP_SMEM", source("int8_wgmma.cuh"),
                     "kernels/int8_wgmma.cuh")
    assert warps * warp_smem == int8.EPILOGUE_SMEM, \
        f"int8.EPILOGUE_SMEM = {int8.EPILOGUE_SMEM}, kernel 15's {warps} warps x WARP_SMEM {warp_smem} per consumer"
    found(r"StoreResidues \{\s+static constexpr unsigned WARP_SMEM = 0;", OZAKI, OZAKI_AT)  # kernel 16's: none
    calls: list = []
    monkeypatch.setattr(int8, "_kernel", lambda name, smem: Recorder(calls, name))
    monkeypatch.setattr(device, "gpu", lambda: types.SimpleNamespace(sms=132))
    s8 = source("int8_wgmma.cuh")
    found(r"b \+ rank \* \(T::B_BYTES / CLUSTER\), map_b, step \* S8_BK, col0 \+ rank \* \(BN / CLUSTER\)", s8,
          "kernels/int8_wgmma.cuh")
    c_cols, c_rows, c_bytes = found(r"tma_store_2d\(map_c, col0 \+ 128 \* cols \+ (\d+) \* box, row0 \+ 16 \* warp "
                                    r"\+ (\d+) \* half, buffer \+ box \* (\d+)\)", source("15_int8_wgmma_ws.cu"),
                                    "kernel 15")
    spec = catalog.get("ozaki")
    for p in catalog.legal_grid(spec, {"MODULI": (0,)}):
        fake_cuda.clear()
        a, bt, c = matrix(300, 512, dtype="int8"), matrix(260, 512, dtype="int8"), matrix(300, 260, dtype="int32")
        int8.launcher(p, a, bt, c)()
        (a, _, swizzle), (b, _, _), (c, _, _) = map(box, fake_cuda)
        t = constants(block(s8, r"struct S8Tiles \{"), S8_BK=s8_bk(), **p)
        where = f"int8.launcher for {spec.describe(p)} against kernels/int8_wgmma.cuh"
        assert a == [128, t["BM"], 1] and a[0] * a[1] == t["A_BYTES"], f"{where}: A's box {a}"
        assert b == [128, p["BN"] // p["CLUSTER"], 1] and b[0] * b[1] * p["CLUSTER"] == t["B_BYTES"], f"{where}: B's"
        assert swizzle.endswith("SWIZZLE_128B") and c == [c_cols, c_rows] == [tma.BOX_COLS, 8] and \
            4 * c_cols * c_rows == c_bytes, f"{where}: C's box {c} against kernel 15's TMA stores"
        name, (grid, threads, _), kw = calls[-1]
        assert threads == (spec.threads(p),) and grid == spec.grid(p, 300, 260, 132) and \
            kw["shared_mem"] == t["SMEM"] + p["CONSUMERS"] * warps * warp_smem, f"{where}: the launch"


# --- other facts written twice -------------------------------------------------------------------------------------

def test_wgmma_shapes_are_the_ones_the_headers_instantiate():
    def instantiated(header: str, struct: str) -> set[int]:
        return set(map(int, re.findall(rf"struct {struct}<(\d+)> \{{", source(header))))

    offered = (32, 64, 96, 128, 192, 256)
    checks = [("wgmma_tf32", "BM", {}, "wgmma.cuh", "Wgmma"),
              ("wgmma_ws_tf32", "BM", {"BSMEM": (0,)}, "wgmma.cuh", "Wgmma"),
              ("wgmma_ws_tf32", "BM", {"BSMEM": (1,)}, "wgmma_ss.cuh", "WgmmaSS"),
              ("ozaki", "BN", {}, "wgmma_s8.cuh", "WgmmaS8")]
    for name, param, extra, header, struct in checks:
        legal = {p[param] for p in catalog.legal_grid(name, {param: offered, **extra})}
        assert legal == instantiated(header, struct), \
            f"catalog's {name} takes {param} in {sorted(legal)}, kernels/{header} has {struct}<" \
            f"{sorted(instantiated(header, struct))}>"
    assert set(catalog.WGMMA_N) == instantiated("wgmma.cuh", "Wgmma"), "catalog.WGMMA_N against kernels/wgmma.cuh"


def test_steps_of_k_are_the_kernels():
    bk = {"kernel 12's WgmmaLayout": constants(block(source("12_tf32_wgmma.cu"), r"struct WgmmaLayout \{"))["BK"],
          "kernel 13": constants(block(source("13_tf32_mma_tma.cu"), r"void mma_tma_block\("))["BK"],
          "kernel 14's ws_block": constants(block(source("14_tf32_wgmma_ws.cu"), r"void ws_block\("),
                                            CONSUMERS=1, BM=64)["BK"]}
    for where, value in bk.items():
        for python, name in ((catalog.WGMMA_BK, "catalog.WGMMA_BK"), (tma.STEP, "tma.STEP"),
                             (model.RING_STEP_K, "model.RING_STEP_K")):
            assert python == value, f"{name} = {python}, {where}'s BK = {value}"
    (in_flight,) = found(r"wgmma_wait<(\d)>\(\);  // the step before is done", source("14_tf32_wgmma_ws.cu"),
                         "kernel 14")
    assert in_flight + 1 == model.RING_HELD, \
        f"model.RING_HELD = {model.RING_HELD}: kernel 14's consumers hold their stage and {in_flight} in flight"


def test_the_swizzle_drawn_is_the_kernels():
    (expr,) = re.findall(r"unsigned swizzled\(int r, int k\) \{\s+return ([^;]+);", source("wgmma.cuh"))
    for r in range(16):
        for k in range(32):
            assert diagrams.swizzle_offset(128 * r + 4 * k) == cxx(expr, r=r, k=k), \
                f"diagrams.swizzle_offset against kernels/wgmma.cuh's swizzled at row {r}, element {k}"


def test_tensor_core_peaks_count_the_kernels_work(fake_cuda, monkeypatch):
    """hardware.peak_launches' FLOP and shared memory per launch against kernels/tensor_core_peak.cu's loops."""
    from gemm_lab.models import hardware

    calls: list = []
    monkeypatch.setattr(sys.modules["cupy"], "RawModule", lambda **kw: types.SimpleNamespace(
        get_function=lambda n: Recorder(calls, n)), raising=False)
    monkeypatch.setattr(device, "gpu", lambda: types.SimpleNamespace(cc=(9, 0), sms=132, arch="sm_90"))
    peak = source("tensor_core_peak.cu")
    mma = found(r"mma\.sync\.aligned\.m(\d+)n(\d+)k(\d+)", source("tf32.cuh"), "kernels/tf32.cuh")
    (wgmmas,) = found(r"for \(int kk = 0; kk < (\d+); \+\+kk\) Wgmma<N>::rs", peak, "kernels/tensor_core_peak.cu")
    (floats,) = found(r"i < N \* (\d+); i \+= blockDim\.x", peak, "kernels/tensor_core_peak.cu")
    shape = found(r"wgmma\.mma_async\.sync\.aligned\.m(\d+)n256k(\d+)", source("wgmma.cuh"), "kernels/wgmma.cuh")
    assert mma[:2] == (diagrams.tensor_cores.MMA_M, diagrams.tensor_cores.MMA_N), \
        "diagrams MMA_M, MMA_N against kernels/tf32.cuh's mma.sync"
    for key, launch, flop in hardware.peak_launches(100):
        n = int(re.search(r"<(\d+)>", launch.func.name)[1])
        (blocks,), (threads,), _ = launch.args
        if key.startswith("mma"):  # n is CHAINS: independent m16n8k8 per warp and round
            per_thread = n * 2 * math.prod(mma) // 32
        else:  # n is wgmma's N: `wgmmas` m64nNk8 per warpgroup and round, its tile N x 32 floats from 1024 bytes
            per_thread = wgmmas * 2 * shape[0] * n * shape[1] // 128  # a warpgroup: 128 threads
            assert launch.keywords["shared_mem"] == 4 * floats * n + 1024, f"hardware.peak_launches' {key} smem"
        assert flop == blocks * threads * 100 * per_thread, f"hardware.peak_launches' {key} FLOP, the kernel's loops"


def test_the_shared_memory_chase_visits_every_word():
    (chain,) = found(r"constexpr int SHARED_CHAIN = (\d+);", source("memory_probes.cu"), "kernels/memory_probes.cu")
    assert math.gcd(memory.SHARED_STRIDE, chain) == 1, \
        f"memory.SHARED_STRIDE = {memory.SHARED_STRIDE} cycles through part of memory_probes.cu's {chain}-word ring"


def test_a_steady_call_reuses_the_last_report(fake_cuda, monkeypatch):
    """Calls that replay the graph return at once (`pending`), and their report is read when asked for; where they
    read back the same verdict and check, it is the last such call's: the host spends no Python on rebuilding it; a
    changed check is read afresh."""
    counted = {"verdict": 0, "hold_lines": 0}

    def counting(name):
        real = getattr(ozaki, name)
        return lambda *a, **k: counted.__setitem__(name, counted[name] + 1) or real(*a, **k)

    for name in counted:
        monkeypatch.setattr(ozaki, name, counting(name))
    pipeline, _, _ = ozaki_call(monkeypatch, (300, 500, 1000))  # queued launch by launch: the check runs
    monkeypatch.setattr(pipeline, "capture", lambda: None)  # no graphs on the stand-in GPU: one that launches nothing
    pipeline.graph = (pipeline.expected, types.SimpleNamespace(launch=lambda stream: None))
    pipeline()  # a replay: the check's result is on the host already, and is read
    held = pipeline.report
    pipeline()
    assert pipeline.report is held and counted == {"verdict": 1, "hold_lines": 2}
    pipeline.lines_host[0] += 1.0  # the check reads something else: the rule runs again, when the report is read
    pipeline()
    assert pipeline.pending and counted == {"verdict": 1, "hold_lines": 2}
    assert pipeline.report is not held and counted == {"verdict": 1, "hold_lines": 3}


@pytest.mark.parametrize("shape, beta", [((1, 1, 1), 0.0), ((300, 500, 1000), -0.5), ((4096, 4096, 4096), 0.0)])
def test_the_escape_applies_the_checks_rule_to_the_graphs_number(fake_cuda, monkeypatch, shape, beta):
    """`queue_escape` hands ozaki_escape what `ozaki.hold_lines` and `Estimate.lines_hold` judge by (the number the
    graph runs, its place among CANDIDATES, ROW_SLACK, SGEMM's floor), the products' own buffer where beta C is added
    after the check, a grid of whole blocks of ESCAPE_THREADS no larger than its tiles, and the pinned host memory it
    writes its state and the check's result into (no copy is queued after it)."""
    pipeline, calls, _ = ozaki_call(monkeypatch, shape)
    pipeline.beta = beta
    pipeline.c = pipeline.out if beta == 0 else np.empty(shape[:2], np.float32)
    copied: list = []
    monkeypatch.setattr(ozaki_pipeline, "to_host", lambda host, array, stream: copied.append(array))
    calls.clear()
    pipeline.queue_escape()
    [(name, (grid, threads, args), _)] = calls
    m, n, k = shape
    tiles = math.ceil(m / ozaki_pipeline.ESCAPE_TILE) * math.ceil(n / ozaki_pipeline.ESCAPE_TILE)
    assert name == "ozaki_escape" and threads == (256,) and 1 <= grid[0] <= min(tiles, 2 * 132)
    assert [int(x) for x in args[:3]] == [m, n, k] and float(args[4]) == beta
    assert args[7] is pipeline.c and args[8] is pipeline.out and args[16] is pipeline.state
    expected, q = int(args[12]), int(args[13])
    assert expected == pipeline.expected and ozaki.CANDIDATES[q] == expected
    assert float(args[14]) == ozaki.ROW_SLACK
    lines = np.zeros(ozaki.LINES)  # SGEMM's worst row and column nil: `line_ratios` divides by its floor
    lines[q] = float(args[15])
    assert ozaki.line_ratios(lines)[0][expected] == 1.0, "ozaki_escape's floor is not the host rule's"
    assert int(args[17]) == pipeline.lines_host.ctypes.data and int(args[18]) == pipeline.state_host.ctypes.data
    assert copied == []
