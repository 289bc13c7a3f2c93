"""Recorded GPU results: compact JSON files in `records/<gpu>/`, written atomically, replayed anywhere.

Five kinds of file per GPU, each `{"format": 1, "rows": [...]}` with one row per line:
  `<kernel>.json`  benchmark measurements (the record format below), one file per kernel and one per cuBLAS
                   math (`cublas.json`: FP32 SGEMM, `cublas_tf32.json`: TF32 tensor cores);
  `ncu.json`       hardware counters read by Nsight Compute for some kernel instances;
  `device.json`    the GPU's measured ceilings (FP32 peak, DRAM bandwidth) for rooflines;
  `memory.json`    the memory hierarchy's latencies and bandwidths, measured by the GPU primer's probes;
  `sanitizer.json` compute-sanitizer's verdict on every kernel, one row per (kernel, tool).
A row naming a kernel source or probe carries its sha256, so `check()` notices edits; `builds.json` (by the GPU
folders) pins the code each recorded build compiled to (`pin`), so a row whose kernel was only refactored stays fresh.
"""
from __future__ import annotations

import contextlib
import datetime
import fcntl
import json
import os
import statistics
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from . import catalog, device, folders

FORMAT = 1
REQUIRED = ("kernel", "source", "source_sha256", "params", "m", "n", "k", "precision",
            "gflops", "cublas_gflops", "max_rel_err", "gpu", "recorded_at")


class RecordError(ValueError):
    """A record file that cannot be read; the message names the file and the field."""


def utc_now() -> str:
    """The moment a record is made, as every record stamps it (UTC, to the second)."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def date_span(dates: Iterable[str]) -> str:
    """'<first> to <last>' of ISO dates, or the one date where all are the same day: how captions date their data."""
    days = sorted(set(dates))
    return days[0] if len(days) == 1 else f"{days[0]} to {days[-1]}"


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
    # what the kernel chose at run time (the Ozaki scheme's moduli)
    details: dict[str, Any] = field(default_factory=dict)
    method: str = ""  # the race's `turns.Method`: "sustained" (what pages quote) or "short"; older records: ""
    turn_settle_ms: float = 0.0  # untimed milliseconds a side ran before a turn that followed the other's (older: 0)
    turn_ms: float = 0.0  # the shortest a timed turn was sized to (older records: 0, `pages.tables.turn_ms_of` tells)
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
    def from_row(cls, row: dict[str, Any], where: str = "") -> Measurement:
        values = typed_fields(cls, row, REQUIRED, where)
        values.pop("replayed", None)
        expected = precision_of(row["kernel"])
        allowed = (expected,) if expected else catalog.PRECISIONS
        if values["precision"] not in allowed:
            whose = f" for {row['kernel']}" if expected else ""
            raise RecordError(f"{where}: field 'precision' must be {' or '.join(map(repr, allowed))}{whose}: "
                              f"{short(row)}")
        spec = catalog.KERNELS.get(row["kernel"])
        if spec and set(row["params"]) == set(spec.param_names):
            values["params"] = {p: row["params"][p] for p in spec.param_names}  # template order
        return cls(**values, replayed=True)


LATENCY = "widget_latency"  # records/<gpu>/widget_latency.json: seconds per live tile-explorer move
RETIME = "retime"  # records/<gpu>/retime.json: benchmarks/retime.py's blocks, beside the key shares' races
LIVE = "live"  # records/<gpu>/live.json: benchmarks/live.py's cold and warm runs of each page of the book
SANITIZER = "sanitizer"  # records/<gpu>/sanitizer.json
MEMORY = "memory"  # records/<gpu>/memory.json: what kernels/memory_probes.cu measured (`memory.measure`)
TOGGLING = "toggling"  # records/<gpu>/toggling.json: benchmarks/toggling.py's races on inputs rounded to TF32 first


_JSON_TYPES = {"str": (str,), "int": (int,), "float": (int, float), "bool": (bool,), "dict": (dict,), "list": (list,)}


def typed_fields(cls: type, row: dict[str, Any], required: tuple[str, ...], where: str) -> dict[str, Any]:
    """The row's values of `cls`'s fields, each of its declared JSON type; a RecordError names the field."""
    for name in required:
        if name not in row:
            raise RecordError(f"{where}: a row lacks the field {name!r}: {short(row)}")
    values = {}
    for f in fields(cls):
        if f.name not in row:
            continue
        value, kind = row[f.name], str(f.type).split("[")[0]
        if not isinstance(value, _JSON_TYPES[kind]) or (isinstance(value, bool) and kind != "bool"):
            raise RecordError(f"{where}: field {f.name!r} must be {f.type}, not {value!r}: {short(row)}")
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
    with locked(path):
        rows = {_key(r, key): r for r in (read_rows(path) if path.exists() else [])}
        rows.update({_key(r, key): r for r in new_rows})
        write_rows(path, [rows[k] for k in sorted(rows)])


def write_rows(path: Path, rows: list[dict[str, Any]]) -> None:
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
def locked(path: Path) -> Iterator[None]:
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
    names = [kernel] if kernel else [p.stem for p in sorted(folder.glob("*.json")) if is_bench(p)]
    out = []
    for name in names:
        path = folder / f"{name}.json"
        if path.exists():
            out.extend(Measurement.from_row(r, str(path)) for r in read_rows(path))
    if not out and gpu and not folder.is_dir() and gpu not in (*fallbacks(), device.live() and device.gpu().name):
        raise ValueError(f"no records for a GPU named {gpu!r}; recorded GPUs: {', '.join(recorded_gpus())}")
    if not out and kernel and kernel not in catalog.KERNELS and not any(folders.RECORDS_DIR.glob(f"*/{kernel}.json")):
        raise ValueError(f"no kernel {kernel!r} in the catalog or the records; the catalog has "
                         f"{', '.join(catalog.KERNELS)}")  # checked only when nothing was found: this path is hot
    return out


def lookup(kernel: str, params: dict[str, int], m: int, n: int, k: int, gpu: str | None = None) -> Measurement:
    """The recorded measurement of exactly this instance and shape, or a LookupError saying what exists. Without a named
    `gpu`, the first of `fallbacks` that has it (a build that one GPU alone measured); its `gpu` says whose."""
    where = (gpu,) if gpu else fallbacks()
    for name in where:
        found = [x for x in measurements(kernel, name) if x.params == params and (x.m, x.n, x.k) == (m, n, k)]
        if found:
            return found[0]
    have = sorted({(x.m, x.n, x.k) for name in where for x in measurements(kernel, name) if x.params == params})
    what = catalog.get(kernel).describe(params) if kernel in catalog.KERNELS else kernel
    raise LookupError(f"no recorded result for {what} at M={m}, N={n}, K={k} on {' or '.join(where)}; recorded "
                      f"shapes for these parameters: {have or 'none'}. Run live on a GPU, or record it with "
                      "`gemm-lab record`.")


def lookup_or_none(kernel: str, params: dict[str, int], m: int, n: int, k: int,
                   gpu: str | None = None) -> Measurement | None:
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


def latencies(gpu: str | None = None, submits: bool = False) -> list[dict[str, Any]]:
    """Recorded explorer moves (or exercise answers, `submits`) of a GPU (default: the replay GPU), else of the first
    of `fallbacks` that has them."""
    def pick(name: str | None) -> list[dict[str, Any]]:
        return [r for r in read_kind(LATENCY, name) if r["kernel"].startswith("submit ") == submits]
    return next(filter(None, map(pick, (gpu, *fallbacks()))), [])


def is_bench(path: Path) -> bool:
    return precision_of(path.stem) is not None


def short(row: dict[str, Any]) -> str:
    text = json.dumps(row)
    return text if len(text) < 160 else text[:157] + "..."


def fallbacks() -> list[str]:
    """Where an unnamed GPU's record is looked for, in order: the replayed GPU, the book's own, every recorded GPU."""
    return list(dict.fromkeys((device.replay_gpu(), device.DEFAULT_REPLAY_GPU, *recorded_gpus())))


def recorded_gpus() -> list[str]:
    """Names of the GPUs with recorded results under records/ (from each folder's device.json): what GEMM_LAB_GPU may
    name."""
    files = sorted(p / "device.json" for p in folders.RECORDS_DIR.iterdir() if p.is_dir())
    return [row["gpu"] for f in files if f.exists() for row in read_rows(f)]
