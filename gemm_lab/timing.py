"""Time a kernel beside cuBLAS, in the same process, on inputs that do not fit in L2.

Verification comes first: a kernel whose output fails the float64 check gets no time. Timing uses CUDA events
around every launch after a warm-up. The kernel and cuBLAS take turns, in ROUNDS rounds ordered kernel-cuBLAS,
cuBLAS-kernel, ..., after an untimed turn of each: an H100 at its 700 W cap runs its clock by power and
temperature, which drift over a second, and taking turns in mirrored order puts both sides under the same drift
instead of giving one a cooler GPU (one long run of the kernel and then one of cuBLAS put the two up to 8 % apart
from run to run at 8192 on TF32, chapter 9).
Each side's number is the median of all its launches: at least 20, and enough to keep the GPU busy SUSTAIN_MS
(the clock settles within tens of milliseconds of a change of load, so each turn lasts SUSTAIN_MS / ROUNDS).
The record keeps the kernel's share of cuBLAS in each round, so its spread shows; tensor-core kernels take
TENSOR_ROUNDS turns, and their headline share is the median of the rounds'. NVML's SM clock and power are
sampled for each side while its launches run on the GPU, so a throttled run shows in its record and the two
sides' clocks can be compared. The cuBLAS beside a kernel computes as the kernel promises to (`BASELINE`):
TF32 kernels race cuBLAS on TF32 tensor cores, FP32 and 3xTF32 kernels race FP32 SGEMM.
When A, B and C together fit in twice the L2 cache, launches rotate over enough copies that each
run reads from DRAM, as a real workload would.
"""
from __future__ import annotations

import contextlib
import functools
import math
import os
import statistics
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Sequence

from tqdm.auto import tqdm

from . import device, records, run
from .catalog import KernelSpec, Params, Probe, Shape
from .records import Measurement

MIN_RUNS = 20
WARMUP = 3
SUSTAIN_MS = 200.0  # a benchmark's launches of the kernel, and of cuBLAS, each keep the GPU busy at least this long
ROUNDS = 4  # turns each side takes (a turn lasts SUSTAIN_MS / ROUNDS)
# Tensor-core kernels (every precision but FP32) take more turns: their clock follows the power cap from turn to turn,
# and their headline is the median of the rounds' shares (`records.Measurement.pct_cublas`).
TENSOR_ROUNDS = 8
MAX_RUNS = 5000
# A kernel's precision -> the math of the cuBLAS it is timed beside: 3xTF32 is meant to replace FP32 SGEMM.
BASELINE = {"fp32": "fp32", "tf32": "tf32", "3xtf32": "fp32", "ozaki": "fp32"}
_COMPUTE_TYPES = {"fp32": "COMPUTE_TYPE_DEFAULT", "tf32": "COMPUTE_TYPE_TF32"}  # cupy.matmul's, per cuBLAS math


class VerificationError(RuntimeError):
    """The kernel's output disagreed with the float64 reference: no time is reported."""


def shape_of(size: int | Sequence[int]) -> Shape:
    """`4096` -> (4096, 4096, 4096); `(m, n, k)` passes through."""
    if isinstance(size, int):
        return (size, size, size)
    m, n, k = size
    return (int(m), int(n), int(k))


def gflops(m: int, n: int, k: int, ms: float) -> float:
    return 2.0 * m * n * k / (ms * 1e-3) / 1e9


def bench(kernel: str | KernelSpec, size: int | Sequence[int], params: Params | None = None,
          *, runs: int = MIN_RUNS) -> Measurement:
    """Verify, then time one kernel instance and cuBLAS on one shape (replay: the recorded result)."""
    inst, here = run.resolve(kernel, params, shape_of(size))
    if not here:
        return records.lookup(inst.spec.name, inst.params, *inst.shape)
    if runs < MIN_RUNS:
        raise ValueError(f"runs={runs}: the median needs at least {MIN_RUNS} runs")
    spec, (m, n, k) = inst.spec, inst.shape
    with run.faults(spec, inst.params, inst.shape):
        err = run.check(inst)
        if not err <= run.tolerance(k, spec.precision):
            raise VerificationError(
                f"{inst.describe()} at M={m}, N={n}, K={k}: max relative error {err:.3g} exceeds "
                f"{run.tolerance(k, spec.precision):.3g}, so no time is reported"
            )
        sets = _input_sets(m, n, k)
        with cublas_math(BASELINE[spec.precision]):
            mine, theirs = race([[run.launcher(inst, a, b, out=c) for a, b, c in sets], _cublas_launches(sets)],
                                 runs, rounds_for(spec.precision))
    return measurement(spec, spec.precision, inst.params, inst.shape, mine, theirs, err)


def measurement(spec: KernelSpec | Probe | None, precision: str, params: dict[str, int], shape: Shape, mine: Timed,
                 theirs: Timed, err: float) -> Measurement:
    """A live measurement of a kernel beside cuBLAS, or of cuBLAS alone in `precision`'s math (`spec` None,
    `theirs` is `mine`)."""
    gpu = device.gpu()
    m, n, k = shape
    rounds = [] if mine is theirs else [round(100 * c / x, 2) for x, c in zip(mine.turns_ms, theirs.turns_ms)]
    return Measurement(
        kernel=spec.name if spec else records.CUBLAS_KERNELS[precision], source=spec.source if spec else "",
        source_sha256=spec.source_sha256() if spec else "", build_sha256=spec.build_sha256() if spec else "",
        params=params, m=m, n=n, k=k,
        precision=precision, gflops=gflops(m, n, k, mine.ms), cublas_gflops=gflops(m, n, k, theirs.ms),
        max_rel_err=err, gpu=gpu.name,
        recorded_at=records.utc_now(),
        time_ms=mine.ms, cublas_time_ms=theirs.ms, runs=mine.runs, peak_gflops=gpu.peak_gflops,
        versions=records.versions(gpu),
        telemetry=mine.telemetry, cublas_telemetry=theirs.telemetry if rounds else {}, rounds_pct=rounds,
    )


def cublas(size: int | Sequence[int], precision: str = "fp32", *, runs: int = MIN_RUNS) -> Measurement:
    """cuBLAS alone in `precision`'s math ("fp32": SGEMM; "tf32": TF32 tensor cores), as a measurement of its
    pseudo-kernel (`records.CUBLAS_KERNELS`: "cublas", "cublas_tf32"; replay: recorded)."""
    m, n, k = shape_of(size)
    kernel = _cublas_kernel(precision)
    if not device.live():
        return records.lookup(kernel, {}, m, n, k)
    import cupy

    a, b = run.random_inputs(m, n, k, run.CHECK_SEED)  # the inputs `run.check` gives every kernel
    out = cupy.full((m, n), cupy.nan, dtype=cupy.float32)
    with cublas_math(precision):
        cupy.matmul(a, b, out=out)
        err = run.max_rel_err(out, a.astype(cupy.float64) @ b.astype(cupy.float64))
        (alone,) = race([_cublas_launches(_input_sets(m, n, k))], runs)
    return measurement(None, precision, {}, (m, n, k), alone, alone, err)


@contextlib.contextmanager
def cublas_math(precision: str) -> Iterator[None]:
    """`cupy.matmul` on float32 computes in `precision`'s math inside the block: "fp32" is FP32 SGEMM (TF32 off),
    "tf32" lets cuBLAS use TF32 tensor cores. CuPy's setting is per process, so the previous one is always restored."""
    import numpy
    from cupy._core import _routines_linalg as linalg

    _cublas_kernel(precision)
    if precision == "fp32":
        require_fp32_cublas()
    previous = linalg.get_compute_type(numpy.float32)
    linalg.set_compute_type(numpy.float32, getattr(linalg, _COMPUTE_TYPES[precision]))
    try:
        yield
    finally:
        linalg.set_compute_type(numpy.float32, previous)


def _cublas_kernel(precision: str) -> str:
    """The pseudo-kernel of cuBLAS in `precision`'s math; a ValueError names the maths cuBLAS has."""
    if precision not in records.CUBLAS_KERNELS:
        hint = f"; {precision} kernels race cuBLAS in {BASELINE[precision]}" if precision in BASELINE else ""
        raise ValueError(f"cuBLAS computes in {' or '.join(records.CUBLAS_KERNELS)}, not {precision!r}{hint}")
    return records.CUBLAS_KERNELS[precision]


def require_fp32_cublas() -> None:
    """Refuse to time cuBLAS when CuPy is told to let it use TF32 tensor cores: not an FP32 baseline."""
    if os.environ.get("CUPY_TF32", "0") != "0":
        raise RuntimeError("CUPY_TF32 is set: cuBLAS would use TF32 tensor cores, not an FP32 baseline")


def _cublas_launches(sets: list[tuple[Any, Any, Any]]) -> list[Callable[[], Any]]:
    import cupy

    return [functools.partial(cupy.matmul, a, b, out=c) for a, b, c in sets]


def median_ms(launches: Sequence[Callable[[], Any]], runs: int) -> float:
    """Median milliseconds of `runs` launches (cycling through `launches`) timed by CUDA events, after a warm-up."""
    import cupy

    _warm_up_ms(launches)
    events = _queue(launches, runs)
    events[-1][1].synchronize()
    return statistics.median(cupy.cuda.get_elapsed_time(s, e) for s, e in events)


@dataclass(frozen=True)
class Timed:
    """One side of a race: the median of all its timed launches, how many there were, the median of each of its
    turns (in the order they ran) and NVML's readings while they ran."""

    ms: float
    runs: int
    turns_ms: list[float]
    telemetry: dict[str, float]


def rounds_for(precision: str) -> int:
    """Rounds of turns a kernel of this precision takes beside cuBLAS."""
    return ROUNDS if precision == "fp32" else TENSOR_ROUNDS


def race(sides: Sequence[Sequence[Callable[[], Any]]], runs: int, rounds: int | None = None) -> list[Timed]:
    """Time each side's launches (one side, or a kernel and cuBLAS) in `rounds` (default ROUNDS) turns each, in
    mirrored order (A B, B A, ...), each turn at least `runs` / rounds launches and SUSTAIN_MS / rounds of GPU time
    (MAX_RUNS in all), after an untimed turn of each (B A) that brings the GPU to its loaded clock and temperature."""
    import cupy

    rounds = rounds or ROUNDS
    each_ms = [_warm_up_ms(launches) for launches in sides]
    per_turn = [max(math.ceil(runs / rounds),
                    min(MAX_RUNS // rounds, math.ceil(SUSTAIN_MS / rounds / max(ms, 1e-3)))) for ms in each_ms]
    seen = device.Telemetry()
    for side in reversed(range(len(sides))):  # a turn each, untimed, so that no timed turn meets a cool, idle GPU
        _queue(sides[side], per_turn[side], seen.poll)
    turns: list[tuple[int, list[tuple[Any, Any]]]] = []
    for r in range(rounds):
        for side in range(len(sides)) if r % 2 == 0 else reversed(range(len(sides))):
            # the turn is a phase of the telemetry while it is queued (an event never recorded reads as done)
            events, queued = [(cupy.cuda.Event(), cupy.cuda.Event()) for _ in range(per_turn[side])], []
            seen.phase(str(side), lambda e=events: e[0][0].done, lambda e=events, q=queued: bool(q) and e[-1][1].done)
            turns.append((side, _queue(sides[side], events, seen.poll)))
            queued.append(True)
    telemetry = seen.finish()
    turns[-1][1][-1][1].synchronize()
    out = []
    for side in range(len(sides)):
        times = [[cupy.cuda.get_elapsed_time(s, e) for s, e in events] for who, events in turns if who == side]
        out.append(Timed(ms=statistics.median(t for turn in times for t in turn), runs=sum(map(len, times)),
                         turns_ms=[statistics.median(turn) for turn in times], telemetry=telemetry[str(side)]))
    return out


def _warm_up_ms(launches: Sequence[Callable[[], Any]]) -> float:
    """Run WARMUP launches (compiling, loading, creating handles) and return the milliseconds each took."""
    import cupy

    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    start.record()
    for i in range(WARMUP):
        launches[i % len(launches)]()
    end.record()
    end.synchronize()
    return cupy.cuda.get_elapsed_time(start, end) / WARMUP


def _queue(launches: Sequence[Callable[[], Any]], runs: int | list[tuple[Any, Any]],
           poll: Callable[[], None] = lambda: None) -> list[tuple[Any, Any]]:
    """Queue launches (cycling through `launches`), each between a pair of CUDA events: `runs` of them, or one per
    pair given; `poll` is called between launches. Returns before the GPU has run them."""
    import cupy

    events = [(cupy.cuda.Event(), cupy.cuda.Event()) for _ in range(runs)] if isinstance(runs, int) else runs
    for i, (start, end) in enumerate(events):
        start.record()
        launches[i % len(launches)]()
        end.record()
        poll()
    return events


def _input_sets(m: int, n: int, k: int) -> list[tuple[Any, Any, Any]]:
    """Enough (A, B, C) copies that cycling through them moves more than twice the L2 size."""
    import cupy

    per_set = 4 * (m * k + k * n + m * n)
    count = max(1, math.ceil(2 * device.gpu().l2_bytes / per_set))
    sets = []
    for _ in range(count):
        a, b = run.random_inputs(m, n, k)
        sets.append((a, b, cupy.empty((m, n), dtype=cupy.float32)))
    return sets


def bench_all(cases: Iterable[tuple[str, Params | None, int | Sequence[int]]], *,
              desc: str = "benchmarks", progress: bool = True, save: bool = False) -> list[Measurement]:
    """Run a declared list of (kernel, params, size) cases with a progress bar.

    Live, every case is measured (and saved as soon as it is, with `save`); in replay, every case
    is looked up in the records.
    """
    cases = list(cases)
    out = []
    bar = tqdm(cases, desc=f"{desc} ({device.mode()})", disable=not progress or not device.live(), leave=False)
    for name, params, size in bar:
        bar.set_postfix_str(f"{name} {shape_of(size)}")
        out.append(bench(name, size, params))
        if save:
            records.save(out[-1:])
    return out
