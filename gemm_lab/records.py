"""Recorded GPU results: compact JSON files in `records/<gpu>/`, written atomically, replayed anywhere.

Five kinds of file per GPU, each `{"format": 1, "rows": [...]}` with one row per line:
  `<kernel>.json`  benchmark measurements (the record format below), one file per kernel and one per cuBLAS
                   math (`cublas.json`: FP32 SGEMM, `cublas_tf32.json`: TF32 tensor cores);
  `ncu.json`       hardware counters read by Nsight Compute for some kernel instances;
  `device.json`    the GPU's measured ceilings (FP32 peak, DRAM bandwidth) for rooflines;
  `memory.json`    the memory hierarchy's latencies and bandwidths, measured by the GPU primer's probes;
  `sanitizer.json` compute-sanitizer's verdict on every kernel, one row per (kernel, tool).
A row that names a kernel source carries its sha256, so `check()` notices edited kernels and probes; beside the GPU
folders, `builds.json` pins the code each recorded build compiled to (`pin`), so that a row whose kernel was only
refactored since (the same code compiles from it today) stays fresh.
"""
from __future__ import annotations

import contextlib
import datetime
import fcntl
import functools
import json
import os
import statistics
import tempfile
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from . import catalog, compiler, device, folders
from .catalog import ROOT

FORMAT = 1
REQUIRED = ("kernel", "source", "source_sha256", "params", "m", "n", "k", "precision",
            "gflops", "cublas_gflops", "max_rel_err", "gpu", "recorded_at")


class RecordError(ValueError):
    """A record file that cannot be read; the message names the file and the field."""



def utc_now() -> str:
    """The moment a record is made, as every record stamps it (UTC, to the second)."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def versions(gpu: Any) -> dict[str, str]:
    """The software a live measurement ran under, as every record names it."""
    return {"driver": gpu.driver, "cuda_runtime": gpu.cuda_runtime, "cupy": gpu.cupy}

@dataclass(frozen=True)
class Measurement:
    """One verified, timed kernel run beside cuBLAS on the same shape, in the same process."""

    kernel: str
    source: str
    source_sha256: str
    params: dict[str, int]
    m: int
    n: int
    k: int
    precision: str
    gflops: float
    cublas_gflops: float
    max_rel_err: float
    gpu: str
    recorded_at: str
    build_sha256: str = ""  # sha256 of the compiled text: the .cu file with its headers
    time_ms: float = 0.0
    cublas_time_ms: float = 0.0
    runs: int = 0
    peak_gflops: float = 0.0
    versions: dict[str, str] = field(default_factory=dict)  # driver, CUDA runtime, CuPy
    telemetry: dict[str, float] = field(default_factory=dict)  # SM clock, power while the timed launches ran
    cublas_telemetry: dict[str, float] = field(default_factory=dict)  # the same while cuBLAS's ran, in turn with them
    rounds_pct: list[float] = field(default_factory=list)  # % of cuBLAS in each round of turns (older records: none)
    details: dict[str, Any] = field(default_factory=dict)  # what the kernel chose at run time (the Ozaki scheme's moduli)
    method: str = ""  # the race's `turns.Method`: "sustained" (what pages quote) or "short"; older records: ""
    turn_settle_ms: float = 0.0  # untimed milliseconds a side ran before a turn that followed the other's (older: 0)
    timed_per: str = "launch"  # what one pair of CUDA events bracketed: "turn" (today), "launch" (older records)
    replayed: bool = field(default=False, compare=False)  # set on load, never stored

    @property
    def pct_cublas(self) -> float:
        """The kernel's share of cuBLAS's speed, in %. For a tensor-core kernel (any precision but FP32), whose clock
        follows the power cap from one round of turns to the next, the median of the rounds' shares where they were
        recorded, so that the headline lies within them; otherwise the ratio of the two sides' medians."""
        if self.precision != "fp32" and self.rounds_pct:
            return statistics.median(self.rounds_pct)
        return 100 * self.gflops / self.cublas_gflops

    @property
    def pct_range(self) -> tuple[float, float] | None:
        """The lowest and highest share of cuBLAS in the rounds of turns, or None where none were recorded."""
        return (min(self.rounds_pct), max(self.rounds_pct)) if self.rounds_pct else None

    def gflop_per_joule(self, cublas: bool = False) -> float | None:
        """The kernel's (or, with `cublas`, cuBLAS's) work per energy: 2MNK / 1e9 over the joules of one launch, from
        NVML's energy counter; None where the counter was not read (older records, short launches, other drivers)."""
        joules = (self.cublas_telemetry if cublas else self.telemetry).get("energy_j")
        return 2 * self.m * self.n * self.k / 1e9 / joules if joules else None

    @property
    def pct_peak(self) -> float:
        return 100 * self.gflops / self.peak_gflops if self.peak_gflops else float("nan")

    @property
    def date(self) -> str:
        return self.recorded_at[:10]

    def to_row(self) -> dict[str, Any]:
        row = asdict(self)
        row.pop("replayed")
        return row

    @classmethod
    def from_row(cls, row: dict[str, Any], where: str = "") -> "Measurement":
        values = _typed_fields(cls, row, REQUIRED, where)
        values.pop("replayed", None)
        expected = precision_of(row["kernel"])
        allowed = (expected,) if expected else catalog.PRECISIONS
        if values["precision"] not in allowed:
            whose = f" for {row['kernel']}" if expected else ""
            raise RecordError(f"{where}: field 'precision' must be {' or '.join(map(repr, allowed))}{whose}: "
                              f"{_short(row)}")
        spec = catalog.KERNELS.get(row["kernel"])
        if spec and set(row["params"]) == set(spec.param_names):
            values["params"] = {p: row["params"][p] for p in spec.param_names}  # template order
        return cls(**values, replayed=True)


LATENCY = "widget_latency"  # records/<gpu>/widget_latency.json: seconds per live tile-explorer move
LATENCY_REQUIRED = {"kernel": str, "open_s": float, "cold_s": list, "warm_s": list, "recorded_at": str}
RETIME = "retime"  # records/<gpu>/retime.json: benchmarks/retime.py's blocks, beside the key shares' races
LIVE = "live"  # records/<gpu>/live.json: benchmarks/live.py's cold and warm runs of each page of the book
LIVE_REQUIRED = {"page": str, "source_sha256": str, "gpu": str, "recorded_at": str, "versions": dict, "cold_s": float,
                 "warm_s": float, "startup_s": float, "cold_slowest": list, "warm_slowest": list, "errors": list}
LIVE_FROM_LEDGER = {"compile_s": float, "work": list}  # where the package left its ledger of the cold run

SANITIZER = "sanitizer"  # records/<gpu>/sanitizer.json
SANITIZER_TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
SANITIZER_KEY = ("kernel", "tool")


@dataclass(frozen=True)
class SanitizerRun:
    """One compute-sanitizer tool run over all of a kernel's cases (`gemm-lab sanitize`); clean means errors == 0."""

    kernel: str
    source: str
    source_sha256: str
    build_sha256: str  # the compiled text the tool saw: a header edit makes the verdict stale
    tool: str
    errors: int
    cases: list[dict[str, Any]]  # [{"params": {...}, "shapes": [[m, n, k], ...]}, ...]
    gpu: str
    recorded_at: str
    versions: dict[str, str]  # driver, CUDA runtime, CuPy, compute-sanitizer

    def to_row(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_row(cls, row: dict[str, Any], where: str = "") -> "SanitizerRun":
        values = _typed_fields(cls, row, tuple(f.name for f in fields(cls)), where)
        if values["tool"] not in SANITIZER_TOOLS:
            raise RecordError(f"{where}: field 'tool' must be one of {', '.join(SANITIZER_TOOLS)}: {_short(row)}")
        if values["errors"] < 0:
            raise RecordError(f"{where}: field 'errors' must be a count (0 or more): {_short(row)}")
        return cls(**values)


MEMORY = "memory"  # records/<gpu>/memory.json: what kernels/memory_probes.cu measured (`memory.measure`)
MEMORY_LEVELS = ("shared", "L1", "L2", "DRAM")  # where a load may find its data, nearest first
MEMORY_BANDWIDTH_LEVELS = ("L2", "DRAM")  # where the copy's working set may sit
# what the device reports about itself (cudaGetDeviceProperties), in a memory record's `properties`
DEVICE_PROPERTIES = ("cc", "sms", "clock_mhz", "registers_per_sm", "smem_per_sm", "smem_per_block",
                     "smem_reserved_per_block", "max_threads_per_sm", "max_blocks_per_sm", "l2_bytes", "dram_bytes")


@dataclass(frozen=True)
class MemoryRecord:
    """The GPU primer's microbenchmarks on one GPU: the device's own parameters, the latency of one load at each
    level of the memory hierarchy (a pointer chase), the bandwidth of a copy whose data sit in L2 or in DRAM, and the
    chase's latency against its working set."""

    kernel: str  # the probe (`catalog.PROBES`)
    source: str
    source_sha256: str
    build_sha256: str
    gpu: str
    recorded_at: str
    versions: dict[str, str]  # driver, CUDA runtime, CuPy
    properties: dict[str, Any]  # DEVICE_PROPERTIES; cc as [major, minor]
    latency: list[dict[str, Any]]  # {"level", "bytes": the chase's working set, "cycles", "ns"}, one per level
    bandwidth: list[dict[str, Any]]  # {"level", "bytes": the copy's working set, "gbs"}, for L2 and DRAM
    sweep: list[dict[str, Any]]  # {"bytes", "cycles", "ns"}: the chase's latency against its working set
    replayed: bool = field(default=False, compare=False)  # set on load, never stored

    @property
    def date(self) -> str:
        return self.recorded_at[:10]

    def latency_of(self, level: str) -> dict[str, Any]:
        return next(x for x in self.latency if x["level"] == level)

    def bandwidth_of(self, level: str) -> dict[str, Any]:
        return next(x for x in self.bandwidth if x["level"] == level)

    def to_row(self) -> dict[str, Any]:
        row = asdict(self)
        row.pop("replayed")
        return row

    @classmethod
    def from_row(cls, row: dict[str, Any], where: str = "") -> "MemoryRecord":
        values = _typed_fields(cls, row, tuple(f.name for f in fields(cls) if f.name != "replayed"), where)
        values.pop("replayed", None)
        problems = [f"properties lack {k!r}" for k in DEVICE_PROPERTIES if k not in values["properties"]]
        for name, levels, numbers in (("latency", MEMORY_LEVELS, ("bytes", "cycles", "ns")),
                                      ("bandwidth", MEMORY_BANDWIDTH_LEVELS, ("bytes", "gbs")),
                                      ("sweep", (), ("bytes", "cycles", "ns"))):
            for x in values[name]:
                if not isinstance(x, dict) or (levels and x.get("level") not in levels) or not all(
                        isinstance(x.get(k), (int, float)) and not isinstance(x.get(k), bool) and x[k] > 0
                        for k in numbers):
                    problems.append(f"each {name} entry needs " + (f"a level of {', '.join(levels)} and " if levels
                                    else "") + f"positive {', '.join(numbers)}, not {x!r}")
            seen = [x.get("level") for x in values[name] if isinstance(x, dict)]
            problems += [f"{name} lacks the level {level!r}" for level in levels if level not in seen]
        if problems:
            raise RecordError(f"{where}: {problems[0]}: {_short(row)}")
        return cls(**values, replayed=True)


_JSON_TYPES = {"str": (str,), "int": (int,), "float": (int, float), "bool": (bool,), "dict": (dict,), "list": (list,)}


def _typed_fields(cls: type, row: dict[str, Any], required: tuple[str, ...], where: str) -> dict[str, Any]:
    """The row's values of `cls`'s fields, each of its declared JSON type; a RecordError names the field."""
    for name in required:
        if name not in row:
            raise RecordError(f"{where}: a row lacks the field {name!r}: {_short(row)}")
    values = {}
    for f in fields(cls):
        if f.name not in row:
            continue
        value, kind = row[f.name], str(f.type).split("[")[0]
        if not isinstance(value, _JSON_TYPES[kind]) or (isinstance(value, bool) and kind != "bool"):
            raise RecordError(f"{where}: field {f.name!r} must be {f.type}, not {value!r}: {_short(row)}")
        values[f.name] = value
    return values


def gpu_dir(gpu_name: str | None = None) -> Path:
    """A GPU's folder of records (default: the replay GPU's)."""
    return folders.gpu_folder(gpu_name or device.replay_gpu())


def read_rows(path: Path) -> list[dict[str, Any]]:
    """Rows of one record file; a clear RecordError when it is malformed."""
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise RecordError(f"{path}: not valid JSON ({err})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("rows"), list):
        raise RecordError(f"{path}: expected {{'format': {FORMAT}, 'rows': [...]}}")
    for i, row in enumerate(data["rows"]):
        if not isinstance(row, dict):
            raise RecordError(f"{path}: row {i} is not an object")
    return data["rows"]


def upsert(path: Path, new_rows: Iterable[dict[str, Any]], key: tuple[str, ...]) -> None:
    """Merge rows into a file, replacing rows with the same key; atomic and locked.

    The file is rewritten through a temporary file and a rename, so a crash leaves either the old
    or the new file, never half of one; a lock file keeps two writers from interleaving.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with _locked(path):
        rows = {_key(r, key): r for r in (read_rows(path) if path.exists() else [])}
        rows.update({_key(r, key): r for r in new_rows})
        _write(path, [rows[k] for k in sorted(rows)])


MEASURED_BY_KERNELS = ("accuracy", "ozaki_stages")  # emulation's records: rows of kernel measurements, not races


def drop_stale(gpu_name: str) -> int:
    """Delete this GPU's measurements (races, accuracy, stage times) that `check` finds stale (an older kernel source
    or header that compiles to other code than was pinned); returns how many.

    A full `gemm-lab record` calls it last: everything the book uses has just been measured again, so a
    stale row left over is one the plan no longer asks for (say, a former top-8 autotuning candidate).
    """
    dropped = 0
    for path in sorted(gpu_dir(gpu_name).glob("*.json")):
        if not (_is_bench(path) or path.stem in MEASURED_BY_KERNELS):
            continue
        with _locked(path):
            rows = read_rows(path)
            keep = [r for r in rows if not _stale(path, [r])]
            if len(keep) < len(rows):
                _write(path, keep)
                dropped += len(rows) - len(keep)
    return dropped


def _write(path: Path, rows: list[dict[str, Any]]) -> None:
    """Replace the file's rows (the caller holds its lock) through a temporary file and a rename."""
    body = ",\n".join(json.dumps(r, sort_keys=True, separators=(",", ":")) for r in rows)
    text = f'{{"format": {FORMAT}, "rows": [\n{body}\n]}}\n'
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path.with_name(f".{path.name}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _key(row: dict[str, Any], key: tuple[str, ...]) -> str:
    return json.dumps([row.get(k) for k in key], sort_keys=True)


CUBLAS = "cublas"  # pseudo-kernel name of cuBLAS-only baseline measurements: FP32 SGEMM
CUBLAS_TF32 = "cublas_tf32"  # the same with TF32 tensor-core math
CUBLAS_KERNELS = {"fp32": CUBLAS, "tf32": CUBLAS_TF32}  # cuBLAS's math -> its pseudo-kernel
BENCH_KEY = ("kernel", "params", "m", "n", "k", "precision")


def precision_of(kernel: str) -> str | None:
    """The precision a measurement of this kernel carries: the catalog's (or a timed probe's), or the cuBLAS
    pseudo-kernel's math; None for a kernel that is none of these (no longer catalogued)."""
    if kernel in catalog.KERNELS:
        return catalog.get(kernel).precision
    if kernel in catalog.PROBES and catalog.PROBES[kernel].precision:
        return catalog.PROBES[kernel].precision
    return next((math for math, name in CUBLAS_KERNELS.items() if name == kernel), None)


def save(measurements: Iterable[Measurement]) -> None:
    """Store measurements in their GPU's per-kernel files (same key: the newer one wins)."""
    by_file: dict[Path, list[dict[str, Any]]] = {}
    for ms in measurements:
        by_file.setdefault(gpu_dir(ms.gpu) / f"{ms.kernel}.json", []).append(ms.to_row())
    for path, rows in by_file.items():
        upsert(path, rows, BENCH_KEY)


def measurements(kernel: str | None = None, gpu: str | None = None) -> list[Measurement]:
    """Every recorded measurement of a GPU (default: the replay GPU), optionally of one kernel."""
    folder = gpu_dir(gpu)
    names = [kernel] if kernel else [p.stem for p in sorted(folder.glob("*.json")) if _is_bench(p)]
    out = []
    for name in names:
        path = folder / f"{name}.json"
        if path.exists():
            out.extend(Measurement.from_row(r, str(path)) for r in read_rows(path))
    return out


def lookup(kernel: str, params: dict[str, int], m: int, n: int, k: int, gpu: str | None = None) -> Measurement:
    """The recorded measurement of exactly this instance and shape, or a LookupError saying what exists."""
    found = [x for x in measurements(kernel, gpu) if x.params == params and (x.m, x.n, x.k) == (m, n, k)]
    if found:
        return found[0]
    have = sorted({(x.m, x.n, x.k) for x in measurements(kernel, gpu) if x.params == params})
    what = catalog.get(kernel).describe(params) if kernel in catalog.KERNELS else kernel
    raise LookupError(
        f"no recorded result for {what} at M={m}, N={n}, K={k} on "
        f"{gpu or device.replay_gpu()}; recorded shapes for these parameters: {have or 'none'}. "
        "Run live on a GPU, or record it with `gemm-lab record`."
    )


def lookup_or_none(kernel: str, params: dict[str, int], m: int, n: int, k: int, gpu: str | None = None) -> Measurement | None:
    """`lookup`, or None where nothing of this instance and shape was recorded."""
    try:
        return lookup(kernel, params, m, n, k, gpu)
    except LookupError:
        return None


def read_kind(kind: str, gpu: str | None = None) -> list[dict[str, Any]]:
    """Rows of `ncu.json`, `device.json` or `memory.json` for a GPU (empty when none were recorded)."""
    path = gpu_dir(gpu) / f"{kind}.json"
    return read_rows(path) if path.exists() else []


def read_kind_or_default(kind: str, gpu: str | None, benchmark: str) -> tuple[list[dict[str, Any]], str]:
    """Rows of a benchmark's `kind`.json and whose they are: `gpu`'s (default: the replay GPU's) where it has them,
    else the default replay GPU's; a LookupError naming `benchmark` where neither has."""
    name = gpu or device.replay_gpu()
    rows = read_kind(kind, name) or read_kind(kind, name := device.DEFAULT_REPLAY_GPU)
    if not rows:
        raise LookupError(f"no {kind}.json recorded on {name}: run `python {benchmark}` on a GPU")
    return rows, name


def save_latency(rows: Iterable[dict[str, Any]]) -> None:
    """Store tile-explorer latencies (benchmarks/widget_latency.py) in their GPU's file, one row per kernel."""
    for row in rows:
        _latency_problems(Path(LATENCY), row, raise_=True)
        upsert(gpu_dir(row["gpu"]) / f"{LATENCY}.json", [row], ("kernel",))


def latencies(gpu: str | None = None) -> list[dict[str, Any]]:
    """The recorded tile-explorer latencies of a GPU (default: the replay GPU); empty when none were recorded."""
    return read_kind(LATENCY, gpu)


def _latency_problems(path: Path, row: dict[str, Any], raise_: bool = False) -> list[str]:
    """A latency row needs its kernel, the seconds to open and lists of seconds per cold and warm move."""
    problems = _type_problems(path, row, LATENCY_REQUIRED)
    problems += [f"{path}: field {k!r} must list seconds: {_short(row)}" for k in ("cold_s", "warm_s")
                 if isinstance(row.get(k), list) and not all(isinstance(x, (int, float)) for x in row[k])]
    if problems and raise_:
        raise RecordError(problems[0])
    return problems


def _live_problems(path: Path, row: dict[str, Any]) -> list[str]:
    """A live row needs its page, seconds cold, warm and to start, the slowest cells of each run as {cell, source,
    seconds}, and its errors as text; compile seconds and work, where it has them, are a number and a list."""
    problems = _type_problems(path, row, LIVE_REQUIRED) + _type_problems(path, row, LIVE_FROM_LEDGER, optional=True)
    slow = {"cell": int, "source": str, "seconds": float}
    problems += [f"{path}: field {k!r} must list {{cell, source, seconds}}: {_short(row)}"
                 for k in ("cold_slowest", "warm_slowest") if isinstance(row.get(k), list)
                 and not all(isinstance(x, dict) and not _type_problems(path, x, slow) for x in row[k])]
    if isinstance(row.get("errors"), list) and not all(isinstance(x, str) for x in row["errors"]):
        problems.append(f"{path}: field 'errors' must list text: {_short(row)}")
    return problems


def _type_problems(path: Path, row: dict[str, Any], types: dict[str, type], optional: bool = False) -> list[str]:
    """Each field of `types` that the row holds in another JSON type (a float may be an int, never a bool), or lacks
    unless `optional`."""
    return [f"{path}: field {k!r} must be {t.__name__}: {_short(row)}" for k, t in types.items()
            if (k in row or not optional)
            and (not isinstance(row.get(k), (int, float) if t is float else t) or isinstance(row.get(k), bool))]


def save_sanitizer(runs: Iterable[SanitizerRun]) -> None:
    """Store sanitizer runs in their GPU's sanitizer.json (same kernel and tool: the newer one wins)."""
    for run in runs:
        upsert(gpu_dir(run.gpu) / f"{SANITIZER}.json", [run.to_row()], SANITIZER_KEY)


def sanitizer_runs(gpu: str | None = None) -> list[SanitizerRun]:
    """Every recorded sanitizer run of a GPU (default: the replay GPU); empty when none were recorded."""
    path = gpu_dir(gpu) / f"{SANITIZER}.json"
    return [SanitizerRun.from_row(r, str(path)) for r in read_rows(path)] if path.exists() else []


def check(root: Path | None = None) -> list[str]:
    """Problems with the recorded data: malformed files, missing fields, a precision that is not the kernel's, stale
    kernel hashes (unless the kernel was only refactored: its code is pinned unchanged, `pin`), and, in a GPU folder
    that has a sanitizer.json, kernels measured there without a fresh, clean run of every sanitizer tool."""
    problems = []
    try:
        pinned_builds(root)
    except RecordError as err:
        problems.append(str(err))
    for path in sorted((root or folders.RECORDS_DIR).glob("*/*.json")):
        try:
            rows = read_rows(path)
            if _is_bench(path):
                for r in rows:
                    Measurement.from_row(r, str(path))
            runs = [SanitizerRun.from_row(r, str(path)) for r in rows] if path.stem == SANITIZER else []
            if path.stem == MEMORY:
                for r in rows:
                    MemoryRecord.from_row(r, str(path))
        except RecordError as err:
            problems.append(str(err))
            continue
        if path.stem == LATENCY:
            problems += [p for r in rows for p in _latency_problems(path, r)]
        if path.stem == LIVE:
            problems += [p for r in rows for p in _live_problems(path, r)]
        problems += _sanitizer_problems(path, runs) if path.stem == SANITIZER else _stale(path, rows)
    return problems


def _stale(path: Path, rows: list[dict[str, Any]]) -> list[str]:
    problems = []
    pinned = _pinned_here(path.parent)
    for r in rows:
        if not r.get("source"):
            continue  # no kernel source behind it (cuBLAS, device ceilings)
        src, name, spec = ROOT / r["source"], _name_of(r), _spec_of(r)
        if not src.exists() or spec is None:
            problems.append(f"{path}: {name} from {r['source']} is no longer in the catalog")
            continue
        what = f"{name} {r['params']}" if "params" in r else name
        redo = f"gemm-lab record --only {spec.record}" if isinstance(spec, catalog.Probe) else "gemm-lab record"
        if spec.source_sha256() != r.get("source_sha256"):
            why = _unpinned(r, *pinned())
            if why:
                problems.append(f"{path}: {what} was recorded from an older {r['source']} (sha256 differs, and {why}): "
                                f"re-record it on a GPU with `{redo}`")
        elif r.get("build_sha256", spec.build_sha256()) != spec.build_sha256():
            why = _unpinned(r, *pinned())
            if why:
                problems.append(f"{path}: {what} was recorded before a header it includes changed (build_sha256 "
                                f"differs, and {why}): re-record it on a GPU with `{redo}`")
    return problems


def _sanitizer_problems(path: Path, runs: list[SanitizerRun]) -> list[str]:
    """Every recorded run must be of a catalogued kernel's (or probe's) current build and find no errors, and every
    catalogued kernel with measurements in this GPU's folder needs a run of each tool, as does each probe whose record
    (`Probe.record`) is there. A kernel never measured on that GPU (added since, or one it cannot run) needs no run
    until it is."""
    problems = [f"{path}: {r.kernel} is no longer in the catalog" for r in runs
                if r.kernel not in catalog.KERNELS and r.kernel not in catalog.PROBES]
    found = {(r.kernel, r.tool): r for r in runs}
    pinned = _pinned_here(path.parent)
    for spec in (*catalog.KERNELS.values(), *catalog.PROBES.values()):
        build, redo = spec.build_sha256(), f"run `gemm-lab sanitize {spec.name}` on that GPU"
        used = spec.record if isinstance(spec, catalog.Probe) else spec.name  # the record the probe's runs made
        measured = (path.parent / f"{used}.json").exists()
        for tool in SANITIZER_TOOLS:
            run = found.get((spec.name, tool))
            if run is None:
                if measured:
                    problems.append(f"{path}: {spec.name} has no {tool} record: {redo}")
            elif run.build_sha256 != build and (why := _unpinned(run.to_row(), *pinned())):
                problems.append(f"{path}: the {tool} record of {spec.name} is of an older {spec.source} or a header "
                                f"it includes (build_sha256 differs, and {why}): {redo}")
            elif run.errors:
                problems.append(f"{path}: {tool} found {run.errors} error(s) in {spec.name}: fix them, then {redo}")
    return problems


BUILDS = "builds"  # records/builds.json, beside the GPU folders: the code of each recorded build (`pin`)
BUILDS_KEY = ("source", "source_sha256", "build_sha256")


def pin(root: Path | None = None, workers: int | None = None) -> tuple[int, int]:
    """Pin the code that recorded rows ran (no GPU needed): write `builds.json` in `root` (default: records/) with a
    row per (source, source_sha256, build_sha256) that rows of its GPU folders name, holding the NVRTC version and
    the `compiler.sass_sha256` of each instance they ran (`builds_of`: key 'name expression arch').

    Only a build that rows are fresh by today (same hashes) can be compiled, in `workers` processes (cached cubins are
    reused); one pinned under another NVRTC is compiled again. A build that rows name but no longer match keeps what
    was pinned (its source is gone: that is what `check` compares today's code with); one no row names is dropped.
    Returns how many instances are pinned and how many of them were pinned now (from the cubin cache where it has them).
    """
    root = root or folders.RECORDS_DIR
    named, ran = recorded_builds(root)
    version, before = compiler.nvrtc_version(), pinned_builds(root)
    current = {key: row["sass"] for key, row in before.items() if row["nvrtc"] == version}
    todo = sorted({b for key, builds in ran.items() for name, b in builds.items()
                   if name not in current.get(key, {})}, key=lambda b: (b.source, b.names, b.arch))
    compiled = dict(zip(todo, compiler.in_processes(compiler.sass_sha256, todo, workers)))
    path = root / f"{BUILDS}.json"
    with _locked(path):
        rows = [before[key] for key in sorted(named & set(before) - set(ran))]
        rows += [{**dict(zip(BUILDS_KEY, key)), "nvrtc": version,
                  "sass": {name: compiled[b] if b in compiled else current[key][name]
                           for name, b in sorted(builds.items())}} for key, builds in ran.items()]
        _write(path, sorted(rows, key=_build_key))
    return sum(len(r["sass"]) for r in rows), len(compiled)


def recorded_builds(root: Path | None = None) -> tuple[set[tuple[str, str, str]],
                                                      dict[tuple[str, str, str], dict[str, compiler.Build]]]:
    """The builds (source, source_sha256, build_sha256) that rows of `root`'s GPU folders (default: records/) name,
    and for those that rows are fresh by today (the same hashes), what they ran: {`Build.key`: `Build`}."""
    named, ran = set(), {}
    hashes: dict[str, tuple[str, str]] = {}  # today's (source_sha256, build_sha256) by kernel or probe
    for folder in sorted(p for p in (root or folders.RECORDS_DIR).iterdir() if p.is_dir()):
        arch = _gpu_arch(folder)
        for path in sorted(folder.glob("*.json")):
            for row in read_rows(path):
                spec = _spec_of(row) if row.get("source") else None
                if spec is None:
                    continue
                key = _build_key(row)
                named.add(key)
                if spec.name not in hashes:
                    hashes[spec.name] = spec.source_sha256(), spec.build_sha256()
                if (ROOT / row["source"]).exists() and hashes[spec.name] == key[1:]:
                    with contextlib.suppress(ValueError):  # parameters the catalog no longer has: nothing to pin
                        builds = builds_of(row, arch)
                        ran.setdefault(key, {}).update((b.key, b) for b in builds)
    return named, ran


def pinned_builds(root: Path | None = None) -> dict[tuple[str, str, str], dict[str, Any]]:
    """The rows of `builds.json` (`pin`) by (source, source_sha256, build_sha256); a RecordError where it is
    malformed, none where there is no such file."""
    path = (root or folders.RECORDS_DIR) / f"{BUILDS}.json"
    out = {}
    for row in read_rows(path) if path.exists() else []:
        sass = row.get("sass")
        if not all(isinstance(row.get(k), str) for k in (*BUILDS_KEY, "nvrtc")) or not isinstance(sass, dict) \
                or not all(isinstance(v, str) for v in sass.values()):
            raise RecordError(f"{path}: a row needs the strings {', '.join(BUILDS_KEY)} and 'nvrtc', and 'sass' "
                              f"(instance -> sha256): {_short(row)}")
        out[_build_key(row)] = row
    return out


def builds_of(row: dict[str, Any], gpu_arch: str) -> list[compiler.Build]:
    """What a row ran, as the catalog compiles it today: a kernel's instance of the row's params (a sanitizer row's:
    of each case's), with its companions, for the kernel's arch-specific target or else `gpu_arch`; a probe's instance
    of the row's params where its template takes some (`Probe.params`), else each of its kernels (`Probe.instances`,
    for their arch-specific target or else `gpu_arch`). A ValueError where the params name no instance."""
    spec = _spec_of(row)
    sets = [row["params"]] if "params" in row else [c["params"] for c in row.get("cases", []) if "params" in c]
    if isinstance(spec, catalog.KernelSpec):
        return [compiler.build_of(spec, spec.full_params(p), spec.arch or gpu_arch) for p in sets]
    if spec.params and sets:
        return [compiler.Build(spec.source, (spec.name_expression(p),), spec.arch or gpu_arch, spec.ptxas_options)
                for p in sets]
    return [compiler.Build(spec.source, (name,), arch if arch in catalog.ARCH_SPECIFIC else gpu_arch,
                           spec.ptxas_options) for name, arch in spec.instances]


def _unpinned(row: dict[str, Any], pinned: dict[tuple[str, str, str], dict[str, Any]], gpu_arch: str) -> str | None:
    """Why a row of an edited kernel (its hashes are not today's) is not fresh by its code; None where `builds.json`
    pins its build under the installed NVRTC and each instance it ran (`builds_of`) compiles to the same code today."""
    build = pinned.get(_build_key(row))
    if build is None:
        return f"{BUILDS}.json pins no code of the build it was recorded from"
    try:
        if build["nvrtc"] != compiler.nvrtc_version():
            return (f"{BUILDS}.json pinned its code under NVRTC {build['nvrtc']}, not the installed "
                    f"{compiler.nvrtc_version()}")
        for b in builds_of(row, gpu_arch):
            if b.key not in build["sass"]:
                return f"{BUILDS}.json pins no code of {b.key} in the build it was recorded from"
            if compiler.sass_sha256(b) != build["sass"][b.key]:
                return f"{b.key} compiles to other code today"
    except (ValueError, ImportError, RuntimeError, OSError) as err:  # unknown params, no NVRTC, a compile error
        return f"today's code cannot be compared with it ({err})"
    return None


def _pinned_here(folder: Path) -> Callable[[], tuple[dict[tuple[str, str, str], dict[str, Any]], str]]:
    """`builds.json` beside a GPU folder and that GPU's arch, read once and only when a row asks (an edited
    kernel's); a malformed `builds.json` (or memory.json) pins nothing (`check` names it)."""
    def read() -> tuple[dict[tuple[str, str, str], dict[str, Any]], str]:
        with contextlib.suppress(RecordError):
            return pinned_builds(folder.parent), _gpu_arch(folder)
        return {}, compiler.OFFLINE_ARCH
    return functools.cache(read)


def _gpu_arch(folder: Path) -> str:
    """The architecture a GPU folder's records were compiled for: its compute capability as its memory record names it,
    else `compiler.OFFLINE_ARCH` (sm_90, the H100's and H200's)."""
    path = folder / f"{MEMORY}.json"
    cc = next((r.get("properties", {}).get("cc") for r in read_rows(path)), None) if path.exists() else None
    return f"sm_{cc[0]}{cc[1]}" if cc else compiler.OFFLINE_ARCH


def _build_key(row: dict[str, Any]) -> tuple[str, str, str]:
    return row["source"], row["source_sha256"], row.get("build_sha256", "")


def _name_of(row: dict[str, Any]) -> str:
    return row.get("kernel") or row.get("method")  # accuracy rows name a method


def _spec_of(row: dict[str, Any]) -> catalog.KernelSpec | catalog.Probe | None:
    return catalog.KERNELS.get(_name_of(row)) or catalog.PROBES.get(_name_of(row))


def _is_bench(path: Path) -> bool:
    return precision_of(path.stem) is not None


def _short(row: dict[str, Any]) -> str:
    text = json.dumps(row)
    return text if len(text) < 160 else text[:157] + "..."


def recorded_gpus() -> list[str]:
    """Names of the GPUs with recorded results under records/ (from each folder's device.json)."""
    names = []
    for folder in sorted(p for p in folders.RECORDS_DIR.iterdir() if p.is_dir()):
        device_file = folder / "device.json"
        if device_file.exists():
            names += [row["gpu"] for row in read_rows(device_file)]
    return names
