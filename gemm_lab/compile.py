"""Compile kernel template instances with NVRTC: live through CuPy, offline through cuda-bindings.

Live: `load()` returns a launchable `cupy.RawKernel` for the device's own architecture (or the
kernel's arch-specific target, sm_90a for wgmma), cached per (source hash, template instance, arch) in
this process; CuPy also keeps compiled modules on disk, so a second process does not recompile.
Offline (no GPU needed, used by CI): `ptxas_report()` compiles to an sm_90 cubin (sm_90a for
arch-specific kernels) with NVIDIA's pip NVRTC and reads registers, spills, shared memory and ptxas'
"Potential Performance Loss" notes (wgmmas serialized: correct, but much slower) from its verbose output.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

from . import catalog, device
from .catalog import Instance, KernelSpec, Params

NVRTC_OPTIONS = ("-std=c++17",)
OFFLINE_ARCH = "sm_90"  # what CI compiles for, unless a kernel needs an arch-specific target
_ERROR_LINE = re.compile(r"([\w.]+)\((\d+)\): (error|warning)")
_PERFORMANCE_LOSS = re.compile(r"^.*Potential Performance Loss.*$", re.MULTILINE)


class CompileError(RuntimeError):
    """NVRTC refused a kernel; the message quotes the offending source lines."""


def explain_log(log: str, spec: KernelSpec) -> str:
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


def load(kernel: str | KernelSpec | Instance, params: Params | None = None) -> Any:
    """Compile (once) and return the `cupy.RawKernel` of a template instance: an `Instance` as it was validated, or
    a kernel and its parameters, validated here for this GPU.

    A kernel with dynamic shared memory gets its opt-in here: the most it may ask for at launch is set to
    what it needs, which may exceed the 48 KiB every kernel gets without one.
    """
    import cupy

    inst = kernel if isinstance(kernel, Instance) else \
        catalog.instance(kernel, params, smem_limit=device.gpu().smem_per_block, cc=device.gpu().cc)
    spec, p = inst.spec, inst.params
    name = spec.instance(p)
    arch = spec.arch or device.gpu().arch
    key = (spec.build_sha256(), name, arch)
    if key not in _live_cache:
        options = (*NVRTC_OPTIONS, f"-arch={spec.arch}") if spec.arch else NVRTC_OPTIONS
        module = cupy.RawModule(code=spec.source_text(), options=options, name_expressions=[name])
        try:
            fn = module.get_function(name)  # NVRTC runs here, lazily
            if spec.dynamic_smem:
                fn.max_dynamic_shared_size_bytes = spec.launch_smem(p)
        except cupy.cuda.compiler.CompileException as err:
            raise CompileError(f"{name} failed to compile:\n{explain_log(str(err), spec)}") from None
        _live_cache[key] = fn
    return _live_cache[key]


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
    spec, name, arch = _offline_target(kernel, params, arch)
    return _offline(spec.name, spec.build_sha256(), name, arch)[1]


def cubin(kernel: str | KernelSpec, params: Params | None = None, arch: str | None = None) -> bytes:
    """The offline-compiled cubin of an instance (for disassembly without a GPU); `arch` as in `ptxas_report`."""
    spec, name, arch = _offline_target(kernel, params, arch)
    return _offline(spec.name, spec.build_sha256(), name, arch)[0]


def _offline_target(kernel: str | KernelSpec, params: Params | None, arch: str | None) -> tuple[KernelSpec, str, str]:
    """The spec, instance name and architecture of an offline compile; refuses another arch for arch-specific code."""
    spec = catalog.get(kernel)
    p = catalog.validate(spec, params)
    if spec.arch and arch not in (None, spec.arch):
        raise ValueError(f"{spec.name} uses arch-specific instructions: compile it for {spec.arch}, not {arch}")
    return spec, spec.instance(p), arch or spec.arch or OFFLINE_ARCH


@functools.cache
def _offline(kernel: str, sha: str, name: str, arch: str) -> tuple[bytes, PtxasReport]:
    """Compile with cuda-bindings' NVRTC; `sha` is part of the cache key so edits recompile."""
    from cuda.bindings import nvrtc

    spec = catalog.get(kernel)
    _, prog = _check(nvrtc.nvrtcCreateProgram(spec.source_text().encode(), spec.path.name.encode(), 0, [], []))
    try:
        _check(nvrtc.nvrtcAddNameExpression(prog, name.encode()))
        opts = [o.encode() for o in (*NVRTC_OPTIONS, f"-arch={arch}", "-Xptxas=-v")]
        (status,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        _, size = _check(nvrtc.nvrtcGetProgramLogSize(prog))
        log = b" " * size
        _check(nvrtc.nvrtcGetProgramLog(prog, log))
        log_text = log.decode(errors="replace").rstrip("\x00 \n")
        if status != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise CompileError(f"{name} failed to compile for {arch}:\n{explain_log(log_text, spec)}")
        _, size = _check(nvrtc.nvrtcGetCUBINSize(prog))
        binary = b" " * size
        _check(nvrtc.nvrtcGetCUBIN(prog, binary))
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    return binary, _parse_ptxas(log_text, name, arch)


def _check(result: tuple) -> tuple:
    from cuda.bindings import nvrtc

    if result[0] != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise CompileError(f"NVRTC call failed: {result[0]}")
    return result


def _parse_ptxas(log: str, name: str, arch: str) -> PtxasReport:
    def number(pattern: str) -> int:
        match = re.search(pattern, log)
        return int(match.group(1)) if match else 0

    if not re.search(r"Used (\d+) registers", log):
        raise CompileError(f"no ptxas report for {name} in the NVRTC log:\n{log}")
    return PtxasReport(
        instance=name,
        arch=arch,
        registers=number(r"Used (\d+) registers"),
        spill_stores=number(r"(\d+) bytes spill stores"),
        spill_loads=number(r"(\d+) bytes spill loads"),
        stack_bytes=number(r"(\d+) bytes stack frame"),
        smem_bytes=number(r"(\d+) bytes smem"),
        performance_warnings=tuple(line.strip() for line in _PERFORMANCE_LOSS.findall(log)),
    )
