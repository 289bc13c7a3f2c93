"""Recorded GPU results: compact JSON files in `records/<gpu>/`, written atomically, replayed anywhere.

Three kinds of file per GPU, each `{"format": 1, "rows": [...]}` with one row per line:
  `<kernel>.json`  benchmark measurements (the record format below), one file per kernel;
  `ncu.json`       hardware counters read by Nsight Compute for some kernel instances;
  `device.json`    the GPU's measured ceilings (FP32 peak, DRAM bandwidth) for rooflines.
A row that names a kernel source carries its sha256, so `check()` notices edited kernels.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import tempfile
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Iterable, Iterator

from . import catalog, device
from .catalog import ROOT

RECORDS_DIR = ROOT / "records"
FORMAT = 1
REQUIRED = ("kernel", "source", "source_sha256", "params", "m", "n", "k", "precision",
            "gflops", "cublas_gflops", "max_rel_err", "gpu", "recorded_at")


class RecordError(ValueError):
    """A record file that cannot be read; the message names the file and the field."""


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
    telemetry: dict[str, float] = field(default_factory=dict)  # SM clock, power after timing
    replayed: bool = field(default=False, compare=False)  # set on load, never stored

    @property
    def pct_cublas(self) -> float:
        return 100 * self.gflops / self.cublas_gflops

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
        for name in REQUIRED:
            if name not in row:
                raise RecordError(f"{where}: a row lacks the field {name!r}: {_short(row)}")
        known = {f.name for f in fields(cls)} - {"replayed"}
        values = {k: v for k, v in row.items() if k in known}
        spec = catalog.KERNELS.get(row["kernel"])
        if spec and isinstance(row["params"], dict) and set(row["params"]) == set(spec.param_names):
            values["params"] = {p: row["params"][p] for p in spec.param_names}  # template order
        try:
            return cls(**values, replayed=True)
        except TypeError as err:
            raise RecordError(f"{where}: malformed row ({err}): {_short(row)}") from None


def slug(gpu_name: str) -> str:
    """Folder name of a GPU's records: 'NVIDIA H100 80GB HBM3' -> 'nvidia-h100-80gb-hbm3'."""
    return re.sub(r"[^a-z0-9]+", "-", gpu_name.lower()).strip("-")


def gpu_dir(gpu_name: str | None = None) -> Path:
    return RECORDS_DIR / slug(gpu_name or device.replay_gpu())


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
        body = ",\n".join(json.dumps(rows[k], sort_keys=True, separators=(",", ":")) for k in sorted(rows))
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


CUBLAS = "cublas"  # pseudo-kernel name of cuBLAS-only baseline measurements
BENCH_KEY = ("kernel", "params", "m", "n", "k", "precision")


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


def read_kind(kind: str, gpu: str | None = None) -> list[dict[str, Any]]:
    """Rows of `ncu.json` or `device.json` for a GPU (empty when none were recorded)."""
    path = gpu_dir(gpu) / f"{kind}.json"
    return read_rows(path) if path.exists() else []


def check(root: Path = RECORDS_DIR) -> list[str]:
    """Problems with the recorded data: malformed files, missing fields, stale kernel hashes."""
    problems = []
    for path in sorted(root.glob("*/*.json")):
        try:
            rows = read_rows(path)
            if _is_bench(path):
                for r in rows:
                    Measurement.from_row(r, str(path))
        except RecordError as err:
            problems.append(str(err))
            continue
        for r in rows:
            if not r.get("source"):
                continue  # no kernel source behind it (cuBLAS, device ceilings)
            src = ROOT / r["source"]
            if not src.exists() or r.get("kernel") not in catalog.KERNELS:
                problems.append(f"{path}: {r.get('kernel')} from {r['source']} is no longer in the catalog")
                continue
            spec = catalog.get(r["kernel"])
            if spec.source_sha256() != r.get("source_sha256"):
                problems.append(
                    f"{path}: {r['kernel']} {r.get('params')} was recorded from an older {r['source']} "
                    "(sha256 differs): re-record it on a GPU with `gemm-lab record`"
                )
            elif r.get("build_sha256", spec.build_sha256()) != spec.build_sha256():
                problems.append(
                    f"{path}: {r['kernel']} {r.get('params')} was recorded before a header it includes changed "
                    "(build_sha256 differs): re-record it on a GPU with `gemm-lab record`"
                )
    return problems


def _is_bench(path: Path) -> bool:
    return path.stem in catalog.KERNELS or path.stem == CUBLAS


def _short(row: dict[str, Any]) -> str:
    text = json.dumps(row)
    return text if len(text) < 160 else text[:157] + "..."
