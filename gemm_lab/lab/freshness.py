"""Are the recorded results current? The checks behind `gemm-lab records --check` (`problems`) and the clean-up at the
end of `gemm-lab record` (`drop_stale`).

A row that names a kernel source is fresh while that source's code is unchanged (its hashes), or, after a refactor,
while today's code compiles to what was pinned for its build (`records/builds.json`, beside the GPU folders; `pin`
writes it, offline). In a GPU folder with a sanitizer.json, every kernel measured there needs a fresh, clean run of
every sanitizer tool. The tile explorers' latencies and the pages' live runs are checked for their fields.

In the lab wing: recording is where freshness matters; the core only reads and writes the records.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import catalog, compiler, folders, records
from ..catalog import ROOT, KernelSpec, Params, SourceFile
from ..compiler import CompileError
from ..models import memory
from ..records import Measurement
from . import autotune, sanitize

LATENCY_REQUIRED = {"kernel": str, "open_s": float, "cold_s": list, "warm_s": list, "recorded_at": str}


LIVE_REQUIRED = {"page": str, "source_sha256": str, "gpu": str, "recorded_at": str, "versions": dict, "cold_s": float,
                 "warm_s": float, "startup_s": float, "cold_slowest": list, "warm_slowest": list, "errors": list}


# where the package left its ledger of the cold run
LIVE_FROM_LEDGER = {"compile_s": float, "background_compile_s": float, "work": list}


MEASURED_BY_KERNELS = ("accuracy", "ozaki_stages")  # emulation's records: rows of kernel measurements, not races


def drop_stale(gpu_name: str) -> int:
    """Delete this GPU's measurements (races, accuracy, stage times) that `check` finds stale (an older kernel source
    or header that compiles to other code than was pinned); returns how many.

    A full `gemm-lab record` calls it last: everything the book uses has just been measured again, so a
    stale row left over is one the plan no longer asks for (say, a former top-8 autotuning candidate).
    """
    dropped = 0
    for path in sorted(records.gpu_dir(gpu_name).glob("*.json")):
        if not (records.is_bench(path) or path.stem in MEASURED_BY_KERNELS):
            continue
        with records.locked(path):
            rows = records.read_rows(path)
            keep = [r for r in rows if not _stale(path, [r])]
            if len(keep) < len(rows):
                records.write_rows(path, keep)
                dropped += len(rows) - len(keep)
    return dropped


def save_latency(rows: Iterable[dict[str, Any]]) -> None:
    """Store tile-explorer latencies (benchmarks/widget_latency.py) in their GPU's file, one row per kernel."""
    for row in rows:
        _latency_problems(Path(records.LATENCY), row, raise_=True)
        records.upsert(records.gpu_dir(row["gpu"]) / f"{records.LATENCY}.json", [row], ("kernel",))


def _latency_problems(path: Path, row: dict[str, Any], raise_: bool = False) -> list[str]:
    """A latency row needs its kernel, the seconds to open and lists of seconds per cold and warm move."""
    problems = _type_problems(path, row, LATENCY_REQUIRED)
    problems += [f"{path}: field {k!r} must list seconds: {records.short(row)}" for k in ("cold_s", "warm_s")
                 if isinstance(row.get(k), list) and not all(isinstance(x, (int, float)) for x in row[k])]
    if problems and raise_:
        raise records.RecordError(problems[0])
    return problems


def _live_problems(path: Path, row: dict[str, Any]) -> list[str]:
    """A live row needs its page, seconds cold, warm and to start, the slowest cells of each run as {cell, source,
    seconds}, and its errors as text; compile seconds and work, where it has them, are a number and a list."""
    problems = _type_problems(path, row, LIVE_REQUIRED) + _type_problems(path, row, LIVE_FROM_LEDGER, optional=True)
    slow = {"cell": int, "source": str, "seconds": float}
    problems += [f"{path}: field {k!r} must list {{cell, source, seconds}}: {records.short(row)}"
                 for k in ("cold_slowest", "warm_slowest") if isinstance(row.get(k), list)
                 and not all(isinstance(x, dict) and not _type_problems(path, x, slow) for x in row[k])]
    if isinstance(row.get("errors"), list) and not all(isinstance(x, str) for x in row["errors"]):
        problems.append(f"{path}: field 'errors' must list text: {records.short(row)}")
    return problems


def _type_problems(path: Path, row: dict[str, Any], types: dict[str, type], optional: bool = False) -> list[str]:
    """Each field of `types` that the row holds in another JSON type (a float may be an int, never a bool), or lacks
    unless `optional`."""
    return [f"{path}: field {k!r} must be {t.__name__}: {records.short(row)}" for k, t in types.items()
            if (k in row or not optional)
            and (not isinstance(row.get(k), (int, float) if t is float else t) or isinstance(row.get(k), bool))]


def problems(root: Path | None = None) -> list[str]:
    """Problems with the recorded data: malformed files, missing fields, a precision that is not the kernel's, stale
    kernel hashes (unless the kernel was only refactored: its code is pinned unchanged, `pin`), and, in a GPU folder
    that has a sanitizer.json, kernels measured there without a fresh, clean run of every sanitizer tool."""
    problems = []
    try:
        pinned_builds(root)
    except records.RecordError as err:
        problems.append(str(err))
    for path in sorted((root or folders.RECORDS_DIR).glob("*/*.json")):
        try:
            rows = records.read_rows(path)
            if records.is_bench(path):
                for r in rows:
                    Measurement.from_row(r, str(path))
            runs = ([sanitize.SanitizerRun.from_row(r, str(path)) for r in rows]
                    if path.stem == records.SANITIZER else [])
            if path.stem == records.MEMORY:
                for r in rows:
                    memory.MemoryRecord.from_row(r, str(path))
        except records.RecordError as err:
            problems.append(str(err))
            continue
        if path.stem == records.LATENCY:
            problems += [p for r in rows for p in _latency_problems(path, r)]
        if path.stem == records.LIVE:
            problems += [p for r in rows for p in _live_problems(path, r)]
        problems += _sanitizer_problems(path, runs) if path.stem == records.SANITIZER else _stale(path, rows)
    return problems


def _stale(path: Path, rows: list[dict[str, Any]]) -> list[str]:
    problems = []
    pinned = _pinned_here(path.parent)
    hashes: dict[str, tuple[str, str]] = {}  # today's (source_sha256, build_sha256) by kernel: once, not once a row
    for r in rows:
        if not r.get("source"):
            continue  # no kernel source behind it (cuBLAS, device ceilings)
        src, name, spec = ROOT / r["source"], _name_of(r), _spec_of(r)
        if not src.exists() or spec is None:
            problems.append(f"{path}: {name} from {r['source']} is no longer in the catalog")
            continue
        what = f"{name} {r['params']}" if "params" in r else name
        redo = f"gemm-lab record --only {spec.record}" if isinstance(spec, catalog.Probe) else "gemm-lab record"
        if spec.name not in hashes:
            hashes[spec.name] = spec.source_sha256(), spec.build_sha256()
        source_sha256, build_sha256 = hashes[spec.name]
        if source_sha256 != r.get("source_sha256"):
            why = _unpinned(r, *pinned())
            if why:
                problems.append(f"{path}: {what} was recorded from an older {r['source']} (sha256 differs, and {why}): "
                                f"re-record it on a GPU with `{redo}`")
        elif r.get("build_sha256", build_sha256) != build_sha256:
            why = _unpinned(r, *pinned())
            if why:
                problems.append(f"{path}: {what} was recorded before a header it includes changed (build_sha256 "
                                f"differs, and {why}): re-record it on a GPU with `{redo}`")
    return problems


def _sanitizer_problems(path: Path, runs: list[sanitize.SanitizerRun]) -> list[str]:
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
        for tool in sanitize.SANITIZER_TOOLS:
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


def adopt(root: Path | None = None) -> int:
    """Give today's hashes to the rows of an edited kernel whose code compiles unchanged (`_unpinned` finds nothing:
    pinned, and every instance they ran compiles to the same code today), so that `check` need not compile them
    again; returns how many rows. Their measurements are of today's code, byte for byte; rows whose code changed
    keep their hashes, and `check` calls them stale."""
    adopted, hashes = 0, {}  # today's hashes by kernel: once, not once a row
    for folder in sorted(p for p in (root or folders.RECORDS_DIR).iterdir() if p.is_dir()):
        pinned = _pinned_here(folder)
        for path in sorted(folder.glob("*.json")):
            with records.locked(path):
                rows, changed = records.read_rows(path), 0
                for r in rows:
                    spec = _spec_of(r) if r.get("source") else None
                    if spec is None or not (ROOT / r["source"]).exists():
                        continue
                    if spec.name not in hashes:
                        hashes[spec.name] = {"source_sha256": spec.source_sha256(), "build_sha256": spec.build_sha256()}
                    today = hashes[spec.name]
                    if all(r.get(k, v) == v for k, v in today.items()) or _unpinned(r, *pinned()):
                        continue
                    r.update(today)
                    changed += 1
                if changed:
                    records.write_rows(path, rows)
                    adopted += changed
    return adopted


BUILDS_KEY = ("source", "source_sha256", "build_sha256")


def pin(root: Path | None = None, workers: int | None = None) -> tuple[int, int]:
    """Pin the code that recorded rows ran (no GPU needed): write `builds.json` in `root` (default: records/) with a
    row per (source, source_sha256, build_sha256) that rows of its GPU folders name, holding the NVRTC version and
    the `sass_sha256` of each instance they ran (`builds_of`: key 'name expression arch').

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
    compiled = dict(zip(todo, autotune.in_processes(sass_sha256, todo, workers)))
    path = root / f"{BUILDS}.json"
    with records.locked(path):
        rows = [before[key] for key in sorted(named & set(before) - set(ran))]
        rows += [{**dict(zip(BUILDS_KEY, key)), "nvrtc": version,
                  "sass": {name: compiled[b] if b in compiled else current[key][name]
                           for name, b in sorted(builds.items())}} for key, builds in ran.items()]
        records.write_rows(path, sorted(rows, key=_build_key))
    return sum(len(r["sass"]) for r in rows), len(compiled)


def recorded_builds(root: Path | None = None) -> tuple[set[tuple[str, str, str]],
                                                      dict[tuple[str, str, str], dict[str, Build]]]:
    """The builds (source, source_sha256, build_sha256) that rows of `root`'s GPU folders (default: records/) name,
    and for those that rows are fresh by today (the same hashes), what they ran: {`Build.key`: `Build`}."""
    named, ran = set(), {}
    hashes: dict[str, tuple[str, str]] = {}  # today's (source_sha256, build_sha256) by kernel or probe
    for folder in sorted(p for p in (root or folders.RECORDS_DIR).iterdir() if p.is_dir()):
        arch = _gpu_arch(folder)
        for path in sorted(folder.glob("*.json")):
            for row in records.read_rows(path):
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
    """The rows of `builds.json` (`pin`) by (source, source_sha256, build_sha256); a records.RecordError where it is
    malformed, none where there is no such file."""
    path = (root or folders.RECORDS_DIR) / f"{BUILDS}.json"
    out = {}
    for row in records.read_rows(path) if path.exists() else []:
        sass = row.get("sass")
        if not all(isinstance(row.get(k), str) for k in (*BUILDS_KEY, "nvrtc")) or not isinstance(sass, dict) \
                or not all(isinstance(v, str) for v in sass.values()):
            raise records.RecordError(f"{path}: a row needs the strings {', '.join(BUILDS_KEY)} and 'nvrtc', and "
                                      f"'sass' (instance -> sha256): {records.short(row)}")
        out[_build_key(row)] = row
    return out


def builds_of(row: dict[str, Any], gpu_arch: str) -> list[Build]:
    """What a row ran, as the catalog compiles it today: the kernel's instances that the row's params run
    (`KernelSpec.runs`; a sanitizer row's: each case's), with their companions, for the kernel's arch-specific target
    or else `gpu_arch`; a probe's instance of the row's params where its template takes some (`Probe.params`), else
    each of its kernels (`Probe.instances`, for their arch-specific target or else `gpu_arch`). A ValueError where the
    params name no instance."""
    spec = _spec_of(row)
    sets = [row["params"]] if "params" in row else [c["params"] for c in row.get("cases", []) if "params" in c]
    if isinstance(spec, catalog.KernelSpec):
        return [build_of(spec, q, spec.arch or gpu_arch) for p in sets for q in spec.runs(spec.full_params(p))]
    if spec.params and sets:
        return [Build(spec.source, (spec.name_expression(p),), spec.arch or gpu_arch, spec.ptxas_options)
                for p in sets]
    return [Build(spec.source, (name,), arch if arch in catalog.ARCH_SPECIFIC else gpu_arch,
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
            if sass_sha256(b) != build["sass"][b.key]:
                return f"{b.key} compiles to other code today"
    except (ValueError, ImportError, RuntimeError, OSError) as err:  # unknown params, no NVRTC, a compile error
        return f"today's code cannot be compared with it ({err})"
    return None


def _pinned_here(folder: Path) -> Callable[[], tuple[dict[tuple[str, str, str], dict[str, Any]], str]]:
    """`builds.json` beside a GPU folder and that GPU's arch, read once and only when a row asks (an edited
    kernel's); a malformed `builds.json` (or memory.json) pins nothing (`check` names it)."""
    def read() -> tuple[dict[tuple[str, str, str], dict[str, Any]], str]:
        with contextlib.suppress(records.RecordError):
            return pinned_builds(folder.parent), _gpu_arch(folder)
        return {}, compiler.OFFLINE_ARCH
    return functools.cache(read)


def _gpu_arch(folder: Path) -> str:
    """The architecture a GPU folder's records were compiled for: its compute capability as its memory record names it,
    else `compiler.OFFLINE_ARCH` (sm_90, the H100's and H200's)."""
    path = folder / f"{records.MEMORY}.json"
    cc = next((r.get("properties", {}).get("cc") for r in records.read_rows(path)), None) if path.exists() else None
    return f"sm_{cc[0]}{cc[1]}" if cc else compiler.OFFLINE_ARCH


def _build_key(row: dict[str, Any]) -> tuple[str, str, str]:
    return row["source"], row["source_sha256"], row.get("build_sha256", "")


def _name_of(row: dict[str, Any]) -> str:
    return row.get("kernel") or row.get("method")  # accuracy rows name a method


def _spec_of(row: dict[str, Any]) -> catalog.KernelSpec | catalog.Probe | None:
    return catalog.KERNELS.get(_name_of(row)) or catalog.PROBES.get(_name_of(row))


@dataclass(frozen=True)
class Build(SourceFile):
    """Name expressions of a kernel file compiled together for one arch, as a record's instance ran them (its own
    expression first, then its companions'); plain data, so that a worker process can compile it."""

    source: str
    names: tuple[str, ...]
    arch: str
    ptxas_options: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        """How the build manifest (`freshness.pin`) names it: the instance's name expression and its arch."""
        return f"{self.names[0]} {self.arch}"


def build_of(spec: KernelSpec, params: Params, arch: str) -> Build:
    """The build of a kernel's instance (full parameters) for `arch`: what `cubin_file` compiles."""
    return Build(spec.source, compiler.names_of(spec, params), arch, spec.ptxas_options)


def sass_sha256(build: Build) -> str:
    """sha256 of the code a build compiles to (`code_sha256`), from the cubin cache (compiled when missing)."""
    return _sass_sha256(build, build.build_sha256())


@functools.cache
def _sass_sha256(build: Build, build_sha256: str) -> str:
    """`sass_sha256` once per process and compiled text: many records share an instance."""
    return code_sha256(compiler.cached_cubin(build, build.names, build.arch).read_bytes())


# What a cubin's kernels run with: their code (SASS, with its scheduling control bits), the attributes the driver
# reads (.nv.info: registers, stack, parameter layout, launch bounds), the sizes of their shared and local memory and
# the contents of their constant banks and global variables.
_CODE_SECTIONS = (".text.", ".nv.info", ".nv.shared.", ".nv.local.", ".nv.constant", ".nv.global")


_NOBITS = 8  # sh_type of a section that occupies no bytes in the file: only its size counts


def code_sha256(cubin: bytes) -> str:
    """sha256 of what a cubin runs (`_CODE_SECTIONS`), section by section in name order, so that where the ELF file
    places them (offsets, addresses, section order) does not count. Left out: the symbol and string tables,
    relocations, debug frames, the call graph and the toolkit's notes, whose version string `nvrtc_version` covers.
    Only the cubin's bytes count (no disassembly): the same instructions encode the same, control bits included.
    .nv.info names functions by their index in the symbol table, so adding, removing or reordering a file's kernels or
    variables may count as a change of code: the safe side."""
    digest = hashlib.sha256()
    for name, kind, flags, size, data in sorted(_sections(cubin)):
        if name.startswith(_CODE_SECTIONS):
            digest.update(f"{name} {kind} {flags} {size}\n".encode())
            digest.update(data)
    return digest.hexdigest()


def _sections(elf: bytes) -> list[tuple[str, int, int, int, bytes]]:
    """(name, type, flags, size, contents) of each section of a 64-bit little-endian ELF file (a cubin)."""
    if elf[:5] != b"\x7fELF\x02":
        raise CompileError("not a 64-bit ELF file: no cubin")
    (table,), (entry, count, names) = struct.unpack_from("<Q", elf, 0x28), struct.unpack_from("<HHH", elf, 0x3A)
    heads = [struct.unpack_from("<IIQQQQ", elf, table + i * entry) for i in range(count)]
    strings = heads[names][4]
    out = []
    for name, kind, flags, _, offset, size in heads:
        start = strings + name
        out.append((elf[start:elf.index(b"\0", start)].decode(), kind, flags, size,
                    b"" if kind == _NOBITS else elf[offset:offset + size]))
    return out
