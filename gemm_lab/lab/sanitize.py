"""compute-sanitizer over the catalogued kernels: memcheck, racecheck, synccheck and initcheck, recorded.

Each tool runs once per kernel, over a child process (`python -m gemm_lab.sanitize KERNEL CASES`) that
launches all of the kernel's cases: its default parameters and the boundaries of its legal grid, each on
tail shapes. The tool checks only our kernel (`--kernel-name` matches the mangled name), not CuPy's or
cuBLAS's, and the child turns CuPy's memory pool off, so that every array is its own allocation and
memcheck knows its true bounds. The error count comes from the tool's summary. Each run is saved to
records/<gpu>/sanitizer.json as soon as it ends, and a later call skips the clean runs recorded from
the current kernel build with the same cases, so an interrupted `gemm-lab sanitize` resumes.

Racecheck of the kernels that wait on TMA copies runs one child per case instead, each retried when it runs past
RACECHECK_CASE_S: their warps spin on mbarriers, and under racecheck's instrumentation the same one-block launch of
kernel 14 took 2, 21, 2 and over 45 s on an H100 (plain, 1-2 s every time), so one slow case must not sink the whole
run.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import asdict, dataclass, fields
from typing import Any

from tqdm.auto import tqdm

from .. import catalog, device, records
from ..catalog import KernelSpec, Probe
from ..pages import grids
from ..pages.tables import Table
from ..precision import int8
from . import plan

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
    def from_row(cls, row: dict[str, Any], where: str = "") -> SanitizerRun:
        values = records.typed_fields(cls, row, tuple(f.name for f in fields(cls)), where)
        if values["tool"] not in SANITIZER_TOOLS:
            raise records.RecordError(f"{where}: field 'tool' must be one of {', '.join(SANITIZER_TOOLS)}: "
                                      f"{records.short(row)}")
        if values["errors"] < 0:
            raise records.RecordError(f"{where}: field 'errors' must be a count (0 or more): {records.short(row)}")
        return cls(**values)


def save_sanitizer(runs: Iterable[SanitizerRun]) -> None:
    """Store sanitizer runs in their GPU's sanitizer.json (same kernel and tool: the newer one wins)."""
    for verdict in runs:
        records.upsert(records.gpu_dir(verdict.gpu) / f"{records.SANITIZER}.json", [verdict.to_row()], SANITIZER_KEY)


def sanitizer_runs(gpu: str | None = None) -> list[SanitizerRun]:
    """Every recorded sanitizer run of a GPU (default: the replay GPU); empty when none were recorded."""
    path = records.gpu_dir(gpu) / f"{records.SANITIZER}.json"
    return [SanitizerRun.from_row(r, str(path)) for r in records.read_rows(path)] if path.exists() else []

TOOLS = SANITIZER_TOOLS
ERROR_EXITCODE = 86  # compute-sanitizer's exit status when the tool found errors
TIMEOUT_S = 900  # one tool over one kernel's cases (racecheck is the slowest): a hang becomes an error
RACECHECK_CASE_S, RACECHECK_TRIES = 60, 3  # racecheck of one case of a TMA kernel: its limit, and how often it is tried
DONE = "gemm-lab sanitize: every case launched"  # the child's last line
PROBE_CASE = {"iters": 4, "blocks_per_sm": 1}  # a probe's launches under the tools: a few rounds, a block per SM
# Kernel 15 (the INT8 product alone): its default tile, unclustered, and the smallest one, on tails of each
INT8_PARAMS = ({}, {"CLUSTER": 1}, {"BN": 128, "CONSUMERS": 1, "STAGES": 3})
INT8_SHAPES = ((1, 4, 16), (129, 260, 144), (255, 516, 272), (256, 512, 256))
_SUMMARY = re.compile(r"ERROR SUMMARY: (\d+) errors?|RACECHECK SUMMARY: [^(\n]*\((\d+) errors?")


def cases(kernel: str | KernelSpec | Probe) -> list[dict[str, Any]]:
    """Default parameters, the first, middle and last of the legal grid (of grids.SWEEPS where it has the kernel)
    and the fewest and most threads per block of the whole legal grid, and any of plan.SANITIZE_EXTRA (options a chapter
    measures beyond the offered values), each with its tail shapes. A probe's kernels
    run a few rounds, one block per SM (`PROBE_CASE`)."""
    target = _target(kernel)
    if isinstance(target, Probe) and target.name == catalog.INT8_PRODUCT:
        return [{"params": int8.full_params(p), "shapes": [list(s) for s in INT8_SHAPES]} for p in INT8_PARAMS]
    if isinstance(target, Probe):
        return [dict(PROBE_CASE)]
    spec = catalog.get(kernel)
    grid, everything = catalog.legal_grid(spec, grids.SWEEPS.get(spec.name)), catalog.legal_grid(spec)
    picked = [spec.full_params(), grid[0], grid[len(grid) // 2], grid[-1],
              min(everything, key=spec.threads), max(everything, key=spec.threads),
              *(spec.full_params(p) for p in plan.SANITIZE_EXTRA.get(spec.name, ()))]
    unique = {json.dumps(p): p for p in picked}.values()  # first occurrence kept, in order
    return [{"params": p, "shapes": [list(s) for s in catalog.tail_shapes(spec, p)]} for p in unique]


def mangled_prefix(spec: KernelSpec) -> str:
    """How the mangled name of every instance of the kernel's template starts (`_Z16sgemm_smem_tiledI...`)."""
    return f"_Z{len(spec.function)}{spec.function}I"


def functions(spec: KernelSpec | Probe) -> tuple[str, ...]:
    """The names of the kernels the tools check: a probe's, or a spec's and its companions' (without template
    arguments)."""
    if isinstance(spec, Probe):
        return spec.functions
    return (spec.function, *(c.split("<")[0] for c in spec.companions(spec.defaults)))


def kernel_filter(spec: KernelSpec | Probe) -> str:
    """`--kernel-name`'s value: the mangled prefix of a single template's instances, else a regex of the names."""
    if isinstance(spec, KernelSpec) and len(functions(spec)) == 1:
        return f"kns={mangled_prefix(spec)}"
    return f"regex={'|'.join(functions(spec))}"


def command(spec: KernelSpec | Probe, tool: str, kernel_cases: list[dict[str, Any]], exe: str) -> list[str]:
    """The compute-sanitizer command line of one tool over one kernel's cases."""
    memcheck = ("--padding", "64", "--report-api-errors", "no") if tool == "memcheck" else ()
    only = kernel_filter(spec)
    return [exe, "--tool", tool, "--kernel-name", only,
            "--error-exitcode", str(ERROR_EXITCODE), "--check-exit-code", "no", *memcheck,
            sys.executable, "-m", "gemm_lab.lab.sanitize", spec.name, json.dumps(kernel_cases)]


def parse_errors(output: str) -> int | None:
    """The error count of the tool's summary ("ERROR SUMMARY: N errors", or racecheck's "RACECHECK SUMMARY:
    H hazards displayed (N errors, W warnings)"); None when the output has no summary."""
    counts = [int(a or b) for a, b in _SUMMARY.findall(output)]
    return max(counts) if counts else None


def run_tool(spec: KernelSpec | Probe, tool: str, kernel_cases: list[dict[str, Any]], exe: str) -> tuple[int, str]:
    """Errors that `tool` finds in the kernel's cases, and the tool's output.

    A child that fails without the tool having found anything (a Python error, a timeout) raises, so that a
    harness failure is never recorded as a clean kernel; a child killed by a kernel fault still counts.
    """
    if tool == "racecheck" and (isinstance(spec, KernelSpec) and catalog.waits_on_tma(spec) or  # one child per case
                                isinstance(spec, Probe) and spec.name == catalog.INT8_PRODUCT):  # (see the module)
        found = [_run_child(spec, tool, [{"params": c["params"], "shapes": [s]}], exe, RACECHECK_CASE_S,
                            RACECHECK_TRIES) for c in kernel_cases for s in c["shapes"]]
        return sum(errors for errors, _ in found), "".join(text for _, text in found)
    return _run_child(spec, tool, kernel_cases, exe, TIMEOUT_S, 1)


def _run_child(spec: KernelSpec | Probe, tool: str, kernel_cases: list[dict[str, Any]], exe: str, timeout: float,
               tries: int) -> tuple[int, str]:
    for attempt in range(1, tries + 1):
        try:
            out = subprocess.run(command(spec, tool, kernel_cases, exe), capture_output=True, text=True,
                                 timeout=timeout, check=False, cwd=catalog.ROOT)
            break
        except subprocess.TimeoutExpired:
            if attempt == tries:
                raise RuntimeError(f"compute-sanitizer --tool {tool} on {spec.name} ran past {timeout} s"
                                   + (f" {tries} times" if tries > 1 else "")) from None
    text = out.stdout + out.stderr
    errors = parse_errors(text)
    if errors is None or (errors == 0 and (out.returncode != 0 or DONE not in text)):
        raise RuntimeError(f"compute-sanitizer --tool {tool} on {spec.name} did not finish "
                           f"(exit status {out.returncode}); its output ends:\n{text[-3000:]}")
    return errors, text


def sanitize(kernels: Iterable[str] | None = None, tools: Iterable[str] = TOOLS, *, fresh: bool = False,
             progress: bool = True) -> list[SanitizerRun]:
    """Run each tool over each kernel (default: all, and the probes of `catalog.PROBES`), saving every run as it ends.

    Clean runs already recorded on this GPU from the current kernel build, with the same cases, are kept
    unless `fresh`. A kernel this GPU cannot run (wgmma off Hopper) is skipped, saying why. Needs a live GPU and
    compute-sanitizer on PATH, checked before anything runs.
    """
    if not device.live():
        raise RuntimeError("sanitize runs the kernels on a GPU, and none is in use (replay mode)")
    exe = shutil.which("compute-sanitizer")
    if exe is None:
        raise RuntimeError("NVIDIA's compute-sanitizer is not on PATH: it comes with the CUDA toolkit "
                           "(or pip install nvidia-cuda-sanitizer-api and add its bin/ folder to PATH)")
    specs = [_target(k) for k in dict.fromkeys(kernels or [*catalog.KERNELS, *catalog.PROBES])]
    tools = list(dict.fromkeys(tools))
    unknown = set(tools) - set(TOOLS)
    if unknown:
        raise ValueError(f"unknown tool {', '.join(sorted(unknown))}; the tools are {', '.join(TOOLS)}")
    gpu = device.gpu()
    why_not = {spec.name: catalog.unsupported(spec, gpu.cc) for spec in specs}
    for name, why in why_not.items():
        if why:
            tqdm.write(f"skipping {name}: {why}")
    specs = [spec for spec in specs if not why_not[spec.name]]
    versions = {**records.versions(gpu), "compute_sanitizer": _version(exe)}
    recorded = {} if fresh else {(r.kernel, r.tool): r for r in sanitizer_runs(gpu.name)}
    out = []
    bar = tqdm([(spec, tool) for spec in specs for tool in tools], desc="compute-sanitizer", disable=not progress)
    for spec, tool in bar:
        bar.set_postfix_str(f"{tool} {spec.name}")
        todo, old = cases(spec), recorded.get((spec.name, tool))
        if old and old.errors == 0 and old.build_sha256 == spec.build_sha256() and old.cases == todo:
            out.append(old)
            continue
        errors, text = run_tool(spec, tool, todo, exe)
        if errors:
            tqdm.write(f"{tool} found {errors} error(s) in {spec.name}; the report ends:\n{text[-4000:]}")
        out.append(SanitizerRun(
            kernel=spec.name, source=spec.source, source_sha256=spec.source_sha256(),
            build_sha256=spec.build_sha256(), tool=tool, errors=errors, cases=todo, gpu=gpu.name,
            recorded_at=records.utc_now(),
            versions=versions,
        ))
        save_sanitizer(out[-1:])
    return out


def _target(kernel: str | KernelSpec | Probe) -> KernelSpec | Probe:
    """A catalogued kernel or a probe, by name."""
    if isinstance(kernel, (KernelSpec, Probe)):
        return kernel
    return catalog.PROBES[kernel] if kernel in catalog.PROBES else catalog.get(kernel)


def summary(runs: Iterable[SanitizerRun]) -> Table:
    """Errors per kernel (rows) and tool (columns), with the GPU, the dates and the tool's version."""
    runs = list(runs)
    tools = [t for t in TOOLS if any(r.tool == t for r in runs)]
    order = list(catalog.KERNELS)  # the book's order; a kernel no longer catalogued last
    kernels = sorted({r.kernel for r in runs}, key=lambda k: (order.index(k) if k in order else len(order), k))
    errors = {(r.kernel, r.tool): str(r.errors) for r in runs}
    versions = sorted({r.versions.get("compute_sanitizer", "?") for r in runs})
    caption = (f"errors found by compute-sanitizer {', '.join(versions)} on "
               f"{', '.join(sorted({r.gpu for r in runs}))}, {records.date_span(r.recorded_at[:10] for r in runs)}"
               if runs else "no sanitizer runs")
    return Table(("kernel", *tools), tuple((k, *(errors.get((k, t), "-") for t in tools)) for k in kernels), caption)


def _version(exe: str) -> str:
    out = subprocess.run([exe, "--version"], capture_output=True, text=True, check=False).stdout
    match = re.search(r"Version (\S+)", out)
    return match.group(1) if match else "unknown"


def _launch_cases(kernel: str, kernel_cases: list[dict[str, Any]]) -> None:
    """Child process of `run_tool`: every case once with beta = 0 (C written, never read: initcheck would see
    a read of the uninitialised output) and once with beta = 0.5 on a C copied from the host (C read too; not
    the first launch's output: initcheck does not count TMA's bulk stores as writes, so kernel 14's C would read
    as uninitialised, one report per 8-byte read, measured on the H100).

    The inputs are made on the host and copied over: initcheck sees memory as written only by copies and by
    the kernels it instruments, which `--kernel-name` limits to ours, so inputs that CuPy's random kernels
    wrote would all read as uninitialised (one kernel drew a quarter of a million false reports on the H100).
    """
    import cupy
    import numpy

    from .. import compiler, run

    cupy.cuda.set_allocator(None)  # one cudaMalloc per array: a pool's slack would hide overruns from memcheck
    if kernel == catalog.INT8_PRODUCT:
        _launch_int8(kernel_cases)
        return
    if kernel in catalog.PROBES:
        _launch_probe(kernel, kernel_cases)
        return
    spec = catalog.get(kernel)
    rng = numpy.random.default_rng(0)
    for case in kernel_cases:
        name = compiler.load(spec, case["params"]).name
        if not name.startswith(mangled_prefix(spec)):
            raise RuntimeError(f"{name} does not start with {mangled_prefix(spec)}: the tool would check nothing")
        for m, n, k in case["shapes"]:
            a, b = (cupy.asarray(x) for x in run.host_inputs(m, n, k, rng))
            run.gemm(spec, a, b, case["params"])
            c = cupy.asarray(rng.uniform(-1, 1, (m, n)).astype(numpy.float32))
            run.gemm(spec, a, b, case["params"], beta=0.5, out=c)
    cupy.cuda.Device().synchronize()
    print(DONE)


def _launch_int8(kernel_cases: list[dict[str, Any]]) -> None:
    """Child process of `run_tool` for kernel 15: each case on int8 operands copied from the host (see
    `_launch_cases`); C is written by TMA stores and not read back."""
    import cupy
    import numpy

    rng = numpy.random.default_rng(0)
    for case in kernel_cases:
        for m, n, k in case["shapes"]:
            a, bt = (cupy.asarray(rng.integers(-128, 128, shape, dtype=numpy.int8)) for shape in ((m, k), (n, k)))
            int8.launcher(case["params"], a, bt, cupy.empty((m, n), cupy.int32))()
    cupy.cuda.Device().synchronize()
    print(DONE)


def _launch_probe(probe: str, kernel_cases: list[dict[str, Any]]) -> None:
    """Child process of `run_tool` for a probe: each of its kernels this GPU runs, launched small, per case."""
    import cupy

    from ..models import hardware, memory

    for case in kernel_cases:
        if probe == "tensor_core_peak":
            launches = [launch for _, launch, _ in hardware.peak_launches(case["iters"], case["blocks_per_sm"])]
        else:
            launches = [launch for _, launch in memory.launches(case["iters"], case["blocks_per_sm"])]
        for launch in launches:
            launch()
    cupy.cuda.Device().synchronize()
    print(DONE)


if __name__ == "__main__":
    _launch_cases(sys.argv[1], json.loads(sys.argv[2]))
