"""Compile kernel template instances with NVRTC (cuda-bindings), to cubins cached on disk.

One compile path serves both uses. Offline (no GPU needed, used by CI): `ptxas_report()` compiles to an
sm_90 cubin (sm_90a for arch-specific kernels) and reads registers, spills, shared memory and ptxas'
"Potential Performance Loss" notes (wgmmas serialized: correct, but much slower) from its verbose output.
Live: `load()` returns a launchable `cupy.RawKernel` for the device's own architecture (or the kernel's
arch-specific target, sm_90a for wgmma), loaded from the cubin that `cubin_file()` keeps on disk per
(compiled text, template instance, arch, NVRTC version). A second process, or a pool filling the cache in
the background (`warmup`, `autotune.precompile`), then only loads it. (CuPy's own disk cache does not help
here: it recompiles every module built with `name_expressions`, to learn the mangled names.)
A record's freshness may rest on its compiled code: `sass_sha256()` fingerprints the cubin of a `Build`.
ptxas' reports are pinned per compile (`lab.pins`): a clean checkout reads them; GEMM_LAB_UNPINNED=1 compiles.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import catalog, device
from .catalog import Instance, KernelSpec, Params, Probe, SourceFile

NVRTC_OPTIONS = ("-std=c++17",)
CACHE_ENV = "GEMM_LAB_CACHE"  # where compiled cubins are kept (default: ~/.cache/gemm_lab)
REPORTS, UNPINNED_ENV = "ptxas_reports", "GEMM_LAB_UNPINNED"  # the pinned reports' file, and the switch past them
OFFLINE_ARCH = "sm_90"  # what CI compiles for, unless a kernel needs an arch-specific target
_ERROR_LINE = re.compile(r"([\w.]+)\((\d+)\): (error|warning)")
_PERFORMANCE_LOSS = re.compile(r"^.*Potential Performance Loss.*$", re.MULTILINE)


class CompileError(RuntimeError):
    """NVRTC refused a kernel; the message quotes the offending source lines."""


def explain_log(log: str, spec: SourceFile) -> str:
    """Put the source line next to every error or warning that NVRTC reports (file(line): ...)."""
    out = []
    for entry in log.splitlines():
        out.append(entry)
        match = _ERROR_LINE.search(entry)
        path = spec.path.parent / match.group(1) if match else None
        if path is not None and path.is_file():
            lines, no = path.read_text().splitlines(), int(match.group(2))
            if 1 <= no <= len(lines):
                out.append(f"    {path.relative_to(path.parent.parent)}:{no} | {lines[no - 1].strip()}")
    return "\n".join(out)


_live_cache: dict[tuple[str, str, str], Any] = {}
nvrtc_seconds = 0.0  # what this process has spent in NVRTC (a live page's ledger reports it: `liverun`)


def load(kernel: str | KernelSpec | Instance, params: Params | None = None) -> Any:
    """The launchable `cupy.RawKernel` of a template instance, compiled once (see `cubin_file`): an `Instance` as
    it was validated, or a kernel and its parameters, validated here for this GPU.

    A kernel with dynamic shared memory gets its opt-in here: the most it may ask for at launch is set to
    what it needs, which may exceed the 48 KiB every kernel gets without one.
    """
    import cupy

    inst = kernel if isinstance(kernel, Instance) else \
        catalog.instance(kernel, params, smem_limit=device.gpu().smem_per_block, cc=device.gpu().cc)
    spec, p = inst.spec, inst.params
    name = spec.name_expression(p)
    arch = spec.arch or device.gpu().arch
    key = (spec.build_sha256(), name, arch)
    if key not in _live_cache:
        path, lowered = cubin_file(inst, arch)
        fn = cupy.RawModule(path=str(path)).get_function(lowered)
        if spec.dynamic_smem:
            fn.max_dynamic_shared_size_bytes = spec.launch_smem(p)
        _live_cache[key] = fn
    return _live_cache[key]


def companions(inst: Instance) -> dict[str, Any]:
    """The launchable kernels a validated instance runs beside its own (`KernelSpec.companions`), by name
    expression; they are compiled into the same cubin as the instance."""
    import cupy

    arch = inst.spec.arch or device.gpu().arch
    path, _ = cubin_file(inst, arch)
    module = cupy.RawModule(path=str(path))
    lowered = path.with_suffix(".name").read_text().splitlines()[1:]
    return {name: module.get_function(low) for name, low in zip(inst.spec.companions(inst.params), lowered)}


def cubin_file(inst: Instance, arch: str) -> tuple[Path, str]:
    """The cubin of a validated instance for `arch` on disk, and its kernel's mangled name; compiled only when missing.
    Needs no GPU, so workers fill the cache while the GPU works; written through a rename, never seen half-written."""
    path = cached_cubin(inst.spec, names_of(inst.spec, inst.params), arch)
    return path, path.with_suffix(".name").read_text().splitlines()[0]


def cached_cubin(spec: SourceFile, names: tuple[str, ...], arch: str) -> Path:
    """The cubin of name expressions from a kernel file on disk, beside their mangled names (`.name`, the first
    expression's first); compiled only when missing."""
    path = cache_dir() / f"{_stem(spec.build_sha256(), names, arch)}.cubin"
    mangled = path.with_suffix(".name")
    if not (path.exists() and mangled.exists()):
        binary, _, lowered, _ = _nvrtc(spec, names, arch)
        write_atomic(path, binary)
        write_atomic(mangled, "\n".join(lowered).encode())
    return path


def _stem(build_sha256: str, names: tuple[str, ...], arch: str) -> str:
    """A compile's file name in the cache: what was compiled, for which arch, with which options and NVRTC."""
    key = f"{build_sha256} {' '.join(names)} {arch} {NVRTC_OPTIONS} {nvrtc_version()}"
    return hashlib.sha256(key.encode()).hexdigest()[:40]


def names_of(spec: KernelSpec, params: Params) -> tuple[str, ...]:
    """The name expressions compiled for an instance: its own, then its companions'."""
    return (spec.name_expression(params), *spec.companions(params))


def cache_dir() -> Path:
    path = Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "gemm_lab") / "cubins"
    path.mkdir(parents=True, exist_ok=True)
    return path


def write_atomic(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


@functools.cache
def nvrtc_version() -> str:
    """The installed NVRTC's version, e.g. '13.5': the same source may compile to other code under another."""
    from cuda.bindings import nvrtc

    _, major, minor = _check(nvrtc.nvrtcVersion())
    return f"{major}.{minor}"


@dataclass(frozen=True)
class PtxasReport:
    """What ptxas says about one compiled instance."""

    instance: str
    arch: str
    registers: int
    spill_stores: int
    spill_loads: int
    stack_bytes: int
    smem_bytes: int  # static shared memory; a kernel's dynamic shared memory is asked for at launch
    performance_warnings: tuple[str, ...] = ()  # ptxas' "Potential Performance Loss" lines (e.g. wgmmas serialized)

    @property
    def spills(self) -> int:
        return self.spill_stores + self.spill_loads


@dataclass(frozen=True)
class Resources:
    """Per-thread registers, shared memory per block and local memory (spills) of an instance."""

    registers: int
    smem_bytes: int
    local_bytes: int
    origin: str  # where the numbers come from


def resources(kernel: str | KernelSpec, params: Params | None = None) -> Resources:
    """Live: the loaded kernel's attributes on this GPU; otherwise the offline ptxas report. Shared memory
    counts the static arrays and the dynamic shared memory a launch asks for."""
    spec = catalog.get(kernel)
    p = spec.full_params(params)
    if chosen := [q for q in spec.runs(p) if q != p]:  # the Ozaki default: its own instance launches nothing
        name = next(n for n in p if chosen[0][n] != p[n])
        options = ", ".join(str(q[name]) for q in chosen)
        raise ValueError(f"{spec.name} {p}: each call chooses the instance it launches ({name} = {options}); ask for "
                         f"the resources of one, e.g. gl.resources({spec.name!r}, {{{name!r}: {chosen[0][name]}}})")
    if device.live():
        fn = load(spec, p)
        return Resources(fn.num_regs, fn.shared_size_bytes + spec.launch_smem(p), fn.local_size_bytes,
                         f"the compiled kernel on {device.gpu().name}")
    r = ptxas_report(spec, p)
    return Resources(r.registers, r.smem_bytes + spec.launch_smem(p), r.stack_bytes + r.spills,
                     f"ptxas, offline for {r.arch}")


def ptxas_report(kernel: str | KernelSpec, params: Params | None = None, arch: str | None = None) -> PtxasReport:
    """Registers, spills, shared memory and performance warnings of an instance, compiled offline (no GPU
    needed) for `arch` (default: the kernel's arch-specific target, else sm_90)."""
    spec, names, arch = _offline_target(kernel, params, arch)
    pinned = pinned_reports().get(_stem(spec.build_sha256(), names, arch))
    if pinned and not device.env_flag(UNPINNED_ENV):
        return PtxasReport(names[0], arch, **{**pinned, "performance_warnings": tuple(pinned["performance_warnings"])})
    if (report := _offline(spec.name, spec.build_sha256(), names, arch)[1]) is None:
        raise CompileError(f"NVRTC compiled {names[0]} for {arch}, but its log holds no ptxas report (-Xptxas=-v) "
                           "and no ptxas is on PATH to ask instead")
    if pinned and pinned != report_fields(report):
        raise CompileError(f"{names[0]}: records/{REPORTS}.json pins another report than ptxas gives: re-pin them")
    return report


@functools.cache
def pinned_reports() -> dict[str, dict[str, Any]]:
    path = catalog.ROOT / "records" / f"{REPORTS}.json"  # with the sources they pin, whichever records are read
    return {r.pop("key"): r for r in (json.loads(path.read_text())["rows"] if path.exists() else [])}


def report_fields(report: PtxasReport) -> dict[str, Any]:
    """A report as pinned: what ptxas said, without the instance and arch its key already names."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in vars(report).items() if k not in ("instance", "arch")}


def cubin(kernel: str | KernelSpec, params: Params | None = None, arch: str | None = None) -> bytes:
    """The offline-compiled cubin of an instance (for disassembly without a GPU); `arch` as in `ptxas_report`."""
    spec, names, arch = _offline_target(kernel, params, arch)
    return _offline(spec.name, spec.build_sha256(), names, arch)[0]


def probe_report(probe: Probe, name: str, arch: str) -> PtxasReport:
    """ptxas' report on one kernel of a probe file (`catalog.PROBES`: a name expression of its `instances`), compiled
    offline for `arch`: what the tests check before a GPU ever runs it."""
    _, log, lowered, _ = _nvrtc(probe, (name,), arch)
    report = _parse_ptxas(log, name, lowered[0], arch)
    if report is None:
        raise CompileError(f"NVRTC compiled {name} of {probe.source} for {arch}, but its log holds no ptxas report")
    return report


def _offline_target(kernel: str | KernelSpec, params: Params | None,
                    arch: str | None) -> tuple[KernelSpec, tuple[str, ...], str]:
    """The spec, name expressions and architecture of an offline compile; refuses another arch for arch-specific
    code."""
    spec = catalog.get(kernel)
    p = catalog.validate(spec, params)
    if spec.arch and arch not in (None, spec.arch):
        raise ValueError(f"{spec.name} uses arch-specific instructions: compile it for {spec.arch}, not {arch}")
    return spec, names_of(spec, p), arch or spec.arch or OFFLINE_ARCH


@functools.cache
def _offline(kernel: str, sha: str, names: tuple[str, ...], arch: str) -> tuple[bytes, PtxasReport | None, str]:
    """`offline` of a catalogued kernel, cached per (kernel, build hash, names, arch): `sha` is part of the key so
    edits recompile. On disk too, beside the live cubins (the same compile): each chapter runs in its own process,
    and a chapter that reads the registers of a whole tile grid would otherwise compile it again every time."""
    path = cache_dir() / f"{_stem(sha, names, arch)}.cubin"
    mangled, log = path.with_suffix(".name"), path.with_suffix(".log")
    if path.exists() and mangled.exists() and log.exists():
        lowered = mangled.read_text().splitlines()
        report = _parse_ptxas(log.read_text(), names[0], lowered[0], arch)
        if report is not None:
            return path.read_bytes(), report, lowered[0]
    binary, report, lowered, text = _reported(catalog.get(kernel), names, arch)
    write_atomic(path, binary)
    write_atomic(mangled, "\n".join(lowered).encode())
    if report is not None:
        write_atomic(log, text.encode())
    return binary, report, lowered[0]


def offline(spec: SourceFile, names: tuple[str, ...], arch: str) -> tuple[bytes, PtxasReport | None, str]:
    """Compile with cuda-bindings' NVRTC: the cubin, ptxas' report on the first name expression (the others compile
    beside it) and its mangled name."""
    binary, report, lowered, _ = _reported(spec, names, arch)
    return binary, report, lowered[0]


def _reported(spec: SourceFile, names: tuple[str, ...],
              arch: str) -> tuple[bytes, PtxasReport | None, tuple[str, ...], str]:
    """An NVRTC compile with ptxas' report: the cubin, the report, the mangled names and the log the report came from.
    The GPU machine's NVRTC (CUDA 13.0) now and then returns a log without the report that -Xptxas=-v asks for (in
    pytest, and in pool workers during `record`); the toolkit's own ptxas, where there is one, then reports on the
    same PTX (else the report is None)."""
    binary, log, lowered, ptx = _nvrtc(spec, names, arch)
    report = _parse_ptxas(log, names[0], lowered[0], arch)
    if report is None and shutil.which("ptxas"):
        log = _ptxas_log(ptx, arch, spec.ptxas_options)
        report = _parse_ptxas(log, names[0], lowered[0], arch)
    return binary, report, lowered, log


def _ptxas_log(ptx: bytes, arch: str, options: tuple[str, ...] = ()) -> str:
    """ptxas -v's report on a PTX module, from the CUDA toolkit's ptxas."""
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "kernel.ptx"
        src.write_bytes(ptx.rstrip(b"\x00"))
        out = subprocess.run(["ptxas", f"-arch={arch}", "-v", *options, str(src),
                              "-o", str(Path(tmp) / "kernel.cubin")], capture_output=True, text=True, check=False)
    return out.stdout + out.stderr


def _nvrtc(spec: SourceFile, names: tuple[str, ...], arch: str) -> tuple[bytes, str, tuple[str, ...], bytes]:
    """One NVRTC compile of name expressions from a kernel file: the cubin, the compile log, their mangled names and
    the PTX."""
    from cuda.bindings import nvrtc

    started = time.perf_counter()
    _, prog = _check(nvrtc.nvrtcCreateProgram(spec.source_text().encode(), spec.path.name.encode(), 0, [], []))
    try:
        for name in names:
            _check(nvrtc.nvrtcAddNameExpression(prog, name.encode()))
        opts = [o.encode() for o in (*NVRTC_OPTIONS, f"-arch={arch}", "-Xptxas=-v",
                                     *(f"-Xptxas={o}" for o in spec.ptxas_options))]
        (status,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        _, size = _check(nvrtc.nvrtcGetProgramLogSize(prog))
        log = b" " * size
        _check(nvrtc.nvrtcGetProgramLog(prog, log))
        log_text = log.decode(errors="replace").rstrip("\x00 \n")
        if status != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise CompileError(f"{names[0]} failed to compile for {arch}:\n{explain_log(log_text, spec)}")
        _, size = _check(nvrtc.nvrtcGetCUBINSize(prog))
        binary = b" " * size
        _check(nvrtc.nvrtcGetCUBIN(prog, binary))
        lowered = tuple(_check(nvrtc.nvrtcGetLoweredName(prog, name.encode()))[1].decode() for name in names)
        _, size = _check(nvrtc.nvrtcGetPTXSize(prog))
        ptx = b" " * size
        _check(nvrtc.nvrtcGetPTX(prog, ptx))
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
        global nvrtc_seconds
        nvrtc_seconds += time.perf_counter() - started
    return binary, log_text, lowered, ptx


def _check(result: tuple) -> tuple:
    from cuda.bindings import nvrtc

    if result[0] != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise CompileError(f"NVRTC call failed: {result[0]}")
    return result


def _parse_ptxas(log: str, name: str, mangled: str, arch: str) -> PtxasReport | None:
    """ptxas' report on the entry function `mangled`: where the log reports on several (an instance and its
    companions), the part about that one."""
    parts = re.split(r"(?=ptxas info\s*: Compiling entry function)", log)
    if len(parts) > 2:
        log = next((part for part in parts if f"'{mangled}'" in part), log)

    def number(pattern: str) -> int:
        match = re.search(pattern, log)
        return int(match.group(1)) if match else 0

    if not re.search(r"Used (\d+) registers", log):
        return None
    return PtxasReport(
        instance=name, arch=arch, registers=number(r"Used (\d+) registers"),
        spill_stores=number(r"(\d+) bytes spill stores"), spill_loads=number(r"(\d+) bytes spill loads"),
        stack_bytes=number(r"(\d+) bytes stack frame"), smem_bytes=number(r"(\d+) bytes smem"),
        performance_warnings=tuple(line.strip() for line in _PERFORMANCE_LOSS.findall(log)))
