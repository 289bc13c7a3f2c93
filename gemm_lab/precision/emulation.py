"""Chapter 10's measurements beyond the race with cuBLAS: how accurate each way to an FP32 product is against float64,
as K grows and as the inputs' exponents spread, and what each stage of the Ozaki scheme costs.

Accuracy compares cuBLAS SGEMM, cuBLAS on TF32 tensor cores, kernel 14's 3xTF32 and the Ozaki scheme, with 6 to 9
moduli and with its default choice (MODULI = 0, whose report is kept), on the same inputs: standard normal ones (where
the scheme must match SGEMM's accuracy), Ozaki, Uchino and Imamura's (rand - 0.5) exp(phi randn), whose exponents
spread wider as phi grows, or standard normal ones with an outlier channel (one column of A a million times larger,
the matching row of B a million times smaller: the shape of LLM activations). The families of HIDDEN are built to
hide from the estimate's sample (rows or columns of C far smaller than the rest, in columns or rows whose scale a few
large entries set): the row and column check must catch them. Rows are recorded in `records/<gpu>/accuracy.json`
and `ozaki_stages.json`, and replayed like every other measurement.
"""
from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import catalog, device, liverun, records, run, timing, turns, yardstick
from . import int8, ozaki, ozaki_pipeline

ACCURACY = "accuracy"  # records/<gpu>/accuracy.json
STAGES = "ozaki_stages"  # records/<gpu>/ozaki_stages.json
# (name, params): cuBLAS in both maths, the FP32-accurate tensor-core kernels.
METHODS: tuple[tuple[str, dict[str, int]], ...] = (
    ("cublas", {}), ("cublas_tf32", {}), ("wgmma_ws_3xtf32", {}),
    *(("ozaki", {"MODULI": m}) for m in (6, 7, 8, 9)), ("ozaki", {"MODULI": 0}),
)
OUTLIER = "outlier channel"  # a family of inputs (`inputs`, `shape_family`)
QUIET_ROWS = "quiet rows"  # four rows of B 2^20 times larger, which every 41st row of A misses
QUIET_COLUMNS = "quiet columns"  # the same transposed: four columns of A, which every 41st column of B misses
HEAVY_HALF = "heavy half of K"  # the first K / 2 rows of B 2^10 times larger, which every 16th row of A misses
SILENT_ROWS = "silent rows"  # quiet rows with rows of B 2^40 times larger: beyond what 9 moduli can carry
HIDDEN = (QUIET_ROWS, QUIET_COLUMNS, HEAVY_HALF, SILENT_ROWS)  # families built to hide from the estimate's sample
ERROR_VS_K = tuple((1024, 1024, k) for k in (64, 256, 1024, 4096, 16384, 65536))  # standard normal inputs
PHIS = (0.0, 0.5, 1.0, 2.0, 3.0, 4.0, 5.0)
PHI_SHAPE = (4096, 4096, 4096)
HEADLINE_SHAPE = (8192, 8192, 8192)  # standard normal inputs, where the scheme must be at least as accurate as SGEMM
STAGES_S = 5.0  # about how long `stage_ms` takes live
STAGE_SIZES = (2048, 4096, 8192)
SEED = 5


@dataclass(frozen=True)
class Errors:
    """One method's errors against float64 on one set of inputs."""

    method: str
    params: dict[str, int]
    m: int
    n: int
    k: int
    phi: float | None  # None: standard normal inputs
    max_rel_err: float  # max |C - ref| / max |ref|
    median_rel_err: float  # median over the elements of |C - ref| / |ref|
    gpu: str
    recorded_at: str
    family: str = ""  # "" (normal or phi's), OUTLIER or one of HIDDEN
    details: dict[str, Any] = field(default_factory=dict)  # the Ozaki scheme's default: its report (`ozaki.Estimate`)
    worst_row_rel_err: float | None = None  # max over rows of max_j |C - ref| / max_j |ref| (None: not recorded)
    worst_col_rel_err: float | None = None  # the same over columns

    def row(self) -> dict[str, Any]:
        spec = catalog.KERNELS.get(self.method)
        return {**self.__dict__, "source": spec.source if spec else "",
                "source_sha256": spec.source_sha256() if spec else "",
                "build_sha256": spec.build_sha256() if spec else ""}


def inputs(m: int, n: int, k: int, phi: float | None, seed: int = SEED, family: str = "") -> tuple[Any, Any]:
    """A (m x k) and B (k x n), float32 on the GPU: standard normal (phi None), (rand - 0.5) exp(phi randn), or
    standard normal made into a `family` (`shape_family`)."""
    import cupy

    rng = cupy.random.default_rng(seed)

    def draw(shape: tuple[int, int]) -> Any:
        if phi is None:
            return rng.standard_normal(shape, dtype=cupy.float32)
        return ((rng.random(shape, dtype=cupy.float32) - 0.5)
                * cupy.exp(phi * rng.standard_normal(shape, dtype=cupy.float32))).astype(cupy.float32)

    a, b = draw((m, k)), draw((k, n))
    shape_family(a, b, family)
    return a, b


def shape_family(a: Any, b: Any, family: str) -> None:
    """Make standard normal A (m x k) and B (k x n), NumPy or CuPy float32 arrays, into `family`'s inputs, in place:
    OUTLIER (column K / 3 of A times 1e6, that row of B times 1e-6), or one of HIDDEN, whose heavy rows of B
    (columns of A) set the scale of every column (row), while a few rows of A (columns of B) miss them: those rows
    of C are far smaller than the rest, and the scale leaves them few bits. Equilibration halves the heavy factor."""
    m, k = a.shape
    heavy = slice(k // 8, None, max(1, k // 4))  # four rows of B (columns of A) spread along K
    if family == OUTLIER:
        a[:, k // 3] *= 1e6
        b[k // 3, :] *= 1e-6
    elif family in (QUIET_ROWS, SILENT_ROWS):
        b[heavy] *= 2.0 ** (20 if family == QUIET_ROWS else 40)
        a[5::41, heavy] = 0
    elif family == QUIET_COLUMNS:
        a[:, heavy] *= 2.0**20
        b[heavy, 5::41] = 0
    elif family == HEAVY_HALF:
        b[: k // 2] *= 2.0**10
        a[3::16, : k // 2] = 0
    elif family:
        raise ValueError(f"no family {family!r}: {OUTLIER!r} or one of {HIDDEN}")


def product(method: str, params: dict[str, int], a: Any, b: Any) -> Any:
    """C = A B by one method."""
    import cupy

    if method in records.CUBLAS_KERNELS.values():
        with yardstick.cublas_math(records.precision_of(method)):
            return cupy.matmul(a, b)
    return run.gemm(method, a, b, params)


def measure(shape: tuple[int, int, int], phi: float | None, methods: Sequence[tuple[str, dict[str, int]]] = METHODS,
            family: str = "") -> list[Errors]:
    """Every method this GPU runs on one set of inputs, against their float64 product (a pinned number of moduli is
    measured as it is, without its warning; the default's report is kept)."""

    m, n, k = shape
    a, b = inputs(m, n, k, phi, family=family)
    ref = run.reference(a, b)[0]
    now = records.utc_now()
    out = []
    for name, params in methods:
        if name in catalog.KERNELS and catalog.unsupported(name, device.gpu().cc):
            continue
        with run.faults(name, params, shape), warnings.catch_warnings():
            warnings.simplefilter("ignore", ozaki.AccuracyWarning)
            warnings.simplefilter("ignore", ozaki.Fallback)
            if name == "ozaki":
                c, report = run.gemm(name, a, b, params, report=True)
            else:
                c, report = product(name, params, a, b), None
            normwise, median, worst_row, worst_col = relative_errors(c, ref)
            out.append(Errors(name, catalog.get(name).full_params(params) if name in catalog.KERNELS else {}, m, n, k,
                              phi, normwise, median, device.gpu().name, now, family,
                              report.as_dict() if report and not params.get("MODULI") else {}, worst_row, worst_col))
    return out


def relative_errors(c: Any, ref: Any) -> tuple[float, float, float, float]:
    """C against float64's ref (CuPy arrays): normwise (max |C - ref| / max |ref|), the median element's
    |C - ref| / |ref|, the worst row's and the worst column's (`worst_lines`)."""
    import cupy

    diff = cupy.abs(c.astype(cupy.float64) - ref)
    scale, magnitude = float(cupy.abs(ref).max()) or 1.0, cupy.maximum(cupy.abs(ref), 1e-300)
    return (float(diff.max()) / scale, float(cupy.median(diff / magnitude)), *worst_lines(diff, ref))


def worst_lines(diff: Any, ref: Any) -> tuple[float, float]:
    """The worst row's relative error, max over rows of max_j |C - ref| / max_j |ref|, and the worst column's (rows
    and columns of ref that are all zero left out); NumPy or CuPy arrays."""
    def worst(axis: int) -> float:
        top, err = abs(ref).max(axis=axis), diff.max(axis=axis)
        seen = top > 0
        return float((err[seen] / top[seen]).max()) if bool(seen.any()) else 0.0

    return worst(1), worst(0)


def cases() -> list[tuple[tuple[int, int, int], float | None, str]]:
    """Every (shape, phi, family) the chapter shows: standard normal inputs as K grows and at 8192, the spreads of phi,
    and the outlier channel."""
    return [(s, None, "") for s in (*ERROR_VS_K, HEADLINE_SHAPE)] + [(PHI_SHAPE, phi, "") for phi in PHIS] + \
        [(PHI_SHAPE, None, OUTLIER)]


def record_accuracy() -> None:
    """Measure every case of `cases` and `hidden_cases` and store the rows (live only)."""
    for shape, phi, family in [*cases(), *hidden_cases()]:
        rows = [e.row() for e in measure(shape, phi, family=family)]
        records.upsert(records.gpu_dir(device.gpu().name) / f"{ACCURACY}.json", rows, ACCURACY_KEY)


ACCURACY_KEY = ("method", "params", "m", "n", "k", "phi", "family")


def hidden_cases() -> list[tuple[tuple[int, int, int], float | None, str]]:
    """The families of HIDDEN, at PHI_SHAPE: what the row and column check must catch."""
    return [(PHI_SHAPE, None, family) for family in HIDDEN]


def hidden_gpu() -> str:
    """The GPU whose records the hidden families are read from: the replay GPU's where it has them, else the first
    GPU with records that has them all (the families came after some GPUs' records)."""
    def has(gpu: str) -> bool:
        try:
            return all(errors(shape, phi, gpu, family) for shape, phi, family in hidden_cases())
        except LookupError:
            return False

    found = next(filter(has, records.fallbacks()), None)
    if found is None:
        raise LookupError("no GPU has recorded the hidden families: `gemm-lab record --only ozaki` on a Hopper GPU")
    return found


def errors(shape: tuple[int, int, int], phi: float | None, gpu: str | None = None, family: str = "") -> list[Errors]:
    """The recorded errors of every method on one case, in METHODS' order: `gpu`'s, or the first GPU's of
    `records.fallbacks` whose rows of the case hold the Ozaki scheme's current build (another GPU's may not)."""
    def case(where: str | None) -> list[dict[str, Any]]:
        return [r for r in records.read_kind(ACCURACY, where) if (r["m"], r["n"], r["k"]) == tuple(shape)
                and r["phi"] == phi and r.get("family", "") == family]

    rows = case(gpu) if gpu else next((r for r in map(case, records.fallbacks())
                                       if any(x["method"] == "ozaki" for x in r)), None) or case(None)
    if not rows:
        raise LookupError(f"no recorded accuracy for M, N, K = {shape}, phi = {phi}{', ' + family if family else ''} "
                          f"on {gpu or device.replay_gpu()}: record it on a GPU with `gemm-lab record --only ozaki`")
    order = [(name, params) for name, params in METHODS]
    fields = set(Errors.__dataclass_fields__)
    newest: dict[str, dict[str, Any]] = {}  # a method re-recorded (a new kernel source) keeps only its latest row
    for r in sorted(rows, key=lambda r: r["recorded_at"]):
        newest[json.dumps([r["method"], r["params"]], sort_keys=True)] = r
    found = [Errors(**{f: r[f] for f in fields if f in r}) for r in newest.values()]
    return sorted(found, key=lambda e: next((i for i, (n, p) in enumerate(order)
                                             if n == e.method and all(e.params.get(x) == v for x, v in p.items())), 99))


def stage_ms(size: int, params: dict[str, int] | None = None, runs: int = 20) -> dict[str, float]:
    """Milliseconds of each stage of the Ozaki pipeline (`ozaki.STAGES`) at M = N = K = size, each timed alone in a
    short race (live, where the reader asked for sweeps: `liverun`), or as recorded."""
    inst = catalog.instance("ozaki", params, (size, size, size))
    with liverun.work("sweeps", f"Ozaki stages of {inst.describe()} at {size}", STAGES_S) as task:
        if task.live and device.runs_here(inst.spec):
            task.result = task.result or _stage_ms(inst, runs)
            return task.result
    rows = [r for r in _stage_rows(inst.params) if r["m"] == size]
    if not rows:
        raise LookupError(f"no recorded stage times of {inst.describe()} at {size} on {device.replay_gpu()}")
    return rows[0]["stages_ms"]


def _stage_rows(params: dict[str, int]) -> list[dict[str, Any]]:
    """The recorded stage times of these parameters: the first GPU's of `records.fallbacks` that has them."""
    def of(gpu: str) -> list[dict[str, Any]]:
        return [r for r in records.read_kind(STAGES, gpu) if r["params"] == params]

    return next(filter(None, map(of, records.fallbacks())), [])


def _stage_ms(inst: catalog.Instance, runs: int) -> dict[str, float]:
    import cupy

    size = inst.shape[0]

    a, b = run.random_inputs(size, size, size, run.CHECK_SEED)
    c = cupy.empty((size, size), cupy.float32)
    parts = ozaki_pipeline.Pipeline(inst, a, b, alpha=1.0, beta=0.0, out=c).stages()
    for _ in range(turns.WARMUP):  # the estimate's choice, kept by the later stages
        for _, part in parts:
            part()
    return {name: turns.time_ms([part], runs) for name, part in parts}


def record_stages(params: dict[str, int] | None = None) -> None:
    """Record `stage_ms` at each of STAGE_SIZES (live only)."""
    spec = catalog.get("ozaki")
    p, gpu = spec.full_params(params), device.gpu()
    now = records.utc_now()
    rows = [{"kernel": spec.name, "source": spec.source, "source_sha256": spec.source_sha256(),
             "build_sha256": spec.build_sha256(), "params": p, "m": s, "n": s, "k": s, "stages_ms": stage_ms(s, p),
             "gpu": gpu.name, "recorded_at": now} for s in STAGE_SIZES]
    records.upsert(records.gpu_dir(gpu.name) / f"{STAGES}.json", rows, ("params", "m"))


def stage_source(params: dict[str, int] | None = None) -> str:
    """Where `stage_ms`'s numbers come from, for a chart's stamp: measured live, or recorded on which GPU and when."""
    inst = catalog.instance("ozaki", params, (STAGE_SIZES[0],) * 3)
    if liverun.measures("sweeps") and device.runs_here(inst.spec):
        return f"measured live on {device.gpu().name}"
    rows = _stage_rows(inst.params)
    if not rows:
        return f"no stage times recorded for {inst.describe()} on {device.replay_gpu()}"
    return f"recorded on {rows[0]['gpu']}, {records.date_span(r['recorded_at'][:10] for r in rows)}"


@dataclass(frozen=True)
class SpeedOfLight:
    """The speed of light of the scheme with `moduli` moduli at M = N = K = `size`: its INT8 products alone, at the
    rate cuBLAS's INT8 GEMM reached, against one cuBLAS SGEMM (both rates measured, TOP/s and TFLOP/s)."""

    size: int
    moduli: int
    int8_tops: float  # cuBLAS INT8, beside kernel 15 (`int8.bench`)
    sgemm_tflops: float  # cuBLAS SGEMM (`timing.cublas`)

    @property
    def products_ms(self) -> float:
        return self.moduli * 2 * self.size**3 / self.int8_tops / 1e9

    @property
    def tflops(self) -> float:
        """FP32 products per second if nothing but the INT8 products took time."""
        return self.int8_tops / self.moduli

    @property
    def times_sgemm(self) -> float:
        return self.tflops / self.sgemm_tflops


def speed_of_light(size: int, moduli: int) -> SpeedOfLight:
    """`SpeedOfLight` from the measurements of cuBLAS's INT8 GEMM and SGEMM at `size`: live, or as recorded on the GPU
    whose records hold the scheme's races (`scheme_gpu`), so that the ceiling and the races are one GPU's."""
    if moduli not in ozaki.CANDIDATES:
        raise ValueError(f"moduli={moduli!r}: the scheme runs {', '.join(map(str, ozaki.CANDIDATES))} products")
    k15, sgemm = int8.bench(size), timing.cublas(size)  # measured now where the page is live
    if k15.replayed:
        k15, sgemm = (records.lookup(name, params, size, size, size, gpu=scheme_gpu())
                      for name, params in ((int8.PROBE.name, int8.full_params()), ("cublas", {})))
    return SpeedOfLight(size, moduli, k15.cublas_gflops / 1e3, sgemm.gflops / 1e3)


def scheme_gpu() -> str:
    """The GPU whose records a replayed page reads the scheme's races from: the first of `records.fallbacks` with any
    (another GPU may not have measured its current build)."""
    return next((g for g in records.fallbacks() if records.measurements("ozaki", g)), device.replay_gpu())


def chosen_moduli(inst: catalog.Instance) -> int:
    """The moduli an instance multiplies with: its MODULI, or, for the automatic choice (0), what the estimate chose
    in the recorded race of the same instance and shape (stage times are recorded without the choice)."""
    if inst.params["MODULI"]:
        return inst.params["MODULI"]
    x = records.lookup_or_none("ozaki", inst.params, *inst.shape, gpu=device.gpu().name if device.live() else None)
    if x is None or not x.details.get("moduli"):
        raise LookupError(f"{inst.describe()}: no recorded race says how many moduli the estimate chose at "
                          f"{inst.shape[0]}: gemm-lab record --only headline --chapter ch10_ozaki")
    return int(x.details["moduli"])


def case_name(phi: float | None, family: str = "") -> str:
    """How a table names one set of inputs: "normal", "φ = 2", or the family ("outlier channel")."""
    return family or ("normal" if phi is None else f"φ = {phi:g}")


def dates(rows: Sequence[Errors]) -> str:
    gpus = sorted({r.gpu for r in rows})
    return f"recorded on {', '.join(gpus)}, {records.date_span(r.recorded_at[:10] for r in rows)}"


def clock_speed_of_light(x: Any) -> float:
    """TFLOP/s the pipeline of measurement `x` could reach at the SM clock it ran at, if its products alone took time:
    kernel 15's recorded INT8 rate per MHz at that size (its own race's clock), times `x`'s clock, over the moduli
    that ran. The same measurement's clock sets the ceiling it is compared with (a ceiling at another clock would
    flatter or blame the pipeline for the power cap)."""
    k15 = int8.bench(x.m)
    if x.replayed:  # the same GPU's rate
        k15 = records.lookup(int8.PROBE.name, int8.full_params(), x.m, x.n, x.k, gpu=x.gpu)
    per_mhz = k15.gflops / 1e3 / k15.telemetry["sm_clock_mhz"]
    moduli = x.details.get("moduli") or x.params["MODULI"]
    return per_mhz * x.telemetry["sm_clock_mhz"] / moduli


def outlier_model(k: int = 512, rows: int = 64, cols: int = 48, moduli: int = 7, factor: float = 1e6,
                  seed: int = 0) -> dict[str, float]:
    """The outlier channel in the NumPy model, on the CPU: A (rows x k) and B (k x cols) standard normal, column k // 3
    of A times `factor` and that row of B over it. The max relative error against float64 of float32's A @ B and of
    the scheme with `moduli` moduli as it comes ("plain") and equilibrated (`ozaki.shifts`): the size of the damage
    that equilibration repairs, without a GPU."""
    import numpy as np

    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal((rows, k)), rng.standard_normal((k, cols))
    a[:, k // 3] *= factor
    b[k // 3, :] /= factor
    a, b = a.astype(np.float32), b.astype(np.float32)
    exact = run.reference(a, b)[0]

    def err(c: Any) -> float:
        return float(np.abs(np.asarray(c, np.float64) - exact).max() / np.abs(exact).max())

    out = {"float32": err(a @ b)}
    for name, shift in (("plain", None), ("equilibrated", ozaki.shifts(a, b))):
        ra, rb, e, f = ozaki.residues(a, b, moduli, shift)
        out[name] = err(ozaki.reconstruct([x @ y for x, y in zip(ra, rb)], e, f, moduli).astype(np.float32))
    return out
