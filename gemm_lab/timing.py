"""Time a kernel beside cuBLAS, in the same process, on inputs that do not fit in L2: the spine of every measurement.

`bench` reads top to bottom: resolve the instance (or replay its record) -> load and check it against float64 (a kernel
that fails gets no time) -> race it against cuBLAS in turns, one pair of CUDA events around each turn -> the median of
the turns -> a `Measurement`. How long the race runs, and how its turns are queued, is the policy of `turns.py`; what
NVML saw while they ran is `telemetry.py`'s. The cuBLAS beside a kernel computes as the kernel promises to (`BASELINE`):
TF32 kernels race cuBLAS on TF32 tensor cores, FP32, 3xTF32 and the Ozaki scheme race FP32 SGEMM. When A, B and C
together fit in twice the L2 cache, launches rotate over enough copies that each run reads from DRAM, as a real
workload would.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from tqdm.auto import tqdm

from . import catalog, device, liverun, records, run, turns
from .catalog import Instance, KernelSpec, Params, Probe, Shape
from .records import Measurement
from .spec import as_integer, shape_of
from .turns import Method, Timed
from .yardstick import BASELINE, cublas_math
from .yardstick import kernel_name as cublas_kernel

RACE_S = 10.0  # what a race never recorded is counted as, in a page's plan


class VerificationError(RuntimeError):
    """The kernel's output disagreed with the float64 reference: no time is reported."""


def bench(kernel: str | KernelSpec, size: int | Sequence[int], params: Params | None = None,
          *, runs: int = 0, method: Method | None = None, kind: str = "races") -> Measurement:
    """Verify, then time one kernel instance and cuBLAS on one shape, in a race of `method` (default: `turns.SUSTAINED`,
    or on a book page `turns.reader_method`; replay: the recorded result, as in a live page's work that it reads back,
    `liverun`; `kind`: what kind of a page's work it is, "sweeps" for one case of a grid)."""
    inst, here = run.resolve(kernel, params, shape_of(size))
    _check_race(runs, method)
    method = method or default_method(inst.spec.name, inst.params, inst.shape)
    label = f"{inst.describe()} at {'x'.join(map(str, inst.shape))}, {method.name}"
    kind = "races" if catalog.is_key_share(inst.spec.name, inst.params, inst.shape) else kind  # always quoted live
    with liverun.work(kind, label, race_seconds(inst.spec.name, inst.params, inst.shape, method),
                      instances=compiled_for(inst)) as task:
        if not (here and task.live):
            return run.replayed(records.lookup(inst.spec.name, inst.params, *inst.shape))
        if task.result is None:
            task.result = verified_race(inst, runs, method)
        return task.result


def _check_race(runs: object, method: object) -> None:
    """`runs` and `method`, live or replayed: 0 (the race's own least) or a number of launches a side; a `Method`."""
    if as_integer("runs", runs) < 0:
        raise ValueError(f"runs={runs}: launches a side, 0 for the race's own least")
    if method is not None and not isinstance(method, Method):
        raise TypeError(f"method is a turns.Method, such as turns.SHORT or turns.SUSTAINED, not {method!r}")


def verified_race(inst: Instance, runs: int, method: Method) -> Measurement:
    """`bench` live: check against float64 (no time for a kernel that fails), then race (`runs` 0: the method's own
    least, `Method.min_runs`)."""
    if runs and runs < method.min_runs:
        raise ValueError(f"runs={runs}: a {method.name} race times at least {method.min_runs} launches a side")
    spec, (m, n, k) = inst.spec, inst.shape
    with run.faults(spec, inst.params, inst.shape):
        err = run.measure_error(inst)
    if not err <= run.tolerance(k, spec.precision):
        raise VerificationError(f"{inst.describe()} at M={m}, N={n}, K={k}: max relative error {err:.3g} exceeds "
                                f"{run.tolerance(k, spec.precision):.3g}, so no time is reported")
    return raced(inst, err, runs=runs, method=method)


def default_method(kernel: str, params: dict[str, int], shape: Shape) -> Method:
    """The race a call without a method runs: SUSTAINED, but on a book page (`liverun.page`) the reader's (`turns.
    reader_method`: sustained for the key shares, short for the rest), so that a page runs live in its budget."""
    return turns.reader_method(kernel, params, shape) if liverun.SESSION.page else turns.SUSTAINED


def compiled_for(inst: Instance) -> list[tuple[str, dict[str, int]]]:
    """The instances a race of `inst` compiles: its own, and for the Ozaki scheme's default the products of the number
    of moduli it chose where it was recorded (each call runs the instance of the number it chose)."""
    out = [(inst.spec.name, inst.params)]
    x = records.lookup_or_none(inst.spec.name, inst.params, *inst.shape) if inst.spec.name == "ozaki" else None
    if x and x.details.get("moduli") and not inst.params["MODULI"]:
        out.append((inst.spec.name, {**inst.params, "MODULI": x.details["moduli"]}))
    return out


def race_seconds(kernel: str, params: dict[str, int], shape: Shape, method: Method) -> float:
    """About how long a race of `method` takes, from the record of the same race on the replay GPU (its launch times);
    a race never recorded counts as RACE_S."""
    x = records.lookup_or_none(kernel, params, *shape)
    return method.for_precision(x.precision).seconds(x.time_ms, x.cublas_time_ms) if x else RACE_S


def raced(inst: Instance, err: float, *, runs: int = 0, method: Method | None = None) -> Measurement:
    """Race an instance that passed its check (max relative error `err`) against cuBLAS on its shape: `bench` after
    its own check, or a reader's kernel after the exercise's (`exercises.submit`, which checks other layouts)."""
    spec = inst.spec
    with run.faults(spec, inst.params, inst.shape):
        launches, theirs = sides(inst)
        with cublas_math(BASELINE[spec.precision]):
            method = (method or turns.SUSTAINED).for_precision(spec.precision)
            mine, cublas_side = turns.race([launches, theirs], runs, method)
    chosen = launches[-1].report
    return measurement(spec, spec.precision, inst.params, inst.shape, mine, cublas_side, err, method,
                       chosen.as_dict() if chosen is not None else {})


def sides(inst: Instance) -> tuple[list[run.Launch], list[Callable[[], Any]]]:
    """The instance's prepared launches on enough input sets that cycling through them defeats L2, and cuBLAS's on the
    same sets: the two sides of a race."""
    sets = input_sets(*inst.shape)
    return [run.launcher(inst, a, b, out=c) for a, b, c in sets], cublas_launches(sets)


def cublas(size: int | Sequence[int], precision: str = "fp32", *, runs: int = 0,
           method: Method | None = None, kind: str = "races") -> Measurement:
    """cuBLAS alone in `precision`'s math ("fp32": SGEMM; "tf32": TF32 tensor cores), as a measurement of its
    pseudo-kernel (`records.CUBLAS_KERNELS`: "cublas", "cublas_tf32"; replay: recorded; `kind` as for `bench`)."""
    m, n, k = shape_of(size)
    _check_race(runs, method)
    kernel = cublas_kernel(precision)
    method = method or default_method(kernel, {}, (m, n, k))
    with liverun.work(kind, f"{kernel} at {m}x{n}x{k}, {method.name}",
                      race_seconds(kernel, {}, (m, n, k), method) / 2) as task:
        if not task.live:
            return records.lookup(kernel, {}, m, n, k)
        if task.result is not None:
            return task.result
        import cupy

        a, b = run.random_inputs(m, n, k, run.CHECK_SEED)  # the inputs `run.measure_error` gives every kernel
        out = cupy.full((m, n), cupy.nan, dtype=cupy.float32)
        with cublas_math(precision):
            cupy.matmul(a, b, out=out)
            err = run.max_rel_err(out, run.reference(a, b)[0])
            method = method.for_precision(precision)
            (alone,) = turns.race([cublas_launches(input_sets(m, n, k))], runs, method)
        task.result = measurement(None, precision, {}, (m, n, k), alone, alone, err, method)
        return task.result


def measurement(spec: KernelSpec | Probe | None, precision: str, params: dict[str, int], shape: Shape, mine: Timed,
                theirs: Timed, err: float, method: Method, details: dict[str, Any] | None = None) -> Measurement:
    """A live measurement of a kernel beside cuBLAS, or of cuBLAS alone in `precision`'s math (`spec` None,
    `theirs` is `mine`), from a race of `method`."""
    gpu = device.gpu()
    m, n, k = shape
    rounds = [] if mine is theirs else [round(100 * c / x, 2) for x, c in zip(mine.turns_ms, theirs.turns_ms)]
    return Measurement(
        kernel=spec.name if spec else records.CUBLAS_KERNELS[precision], source=spec.source if spec else "",
        source_sha256=spec.source_sha256() if spec else "", build_sha256=spec.build_sha256() if spec else "",
        params=params, m=m, n=n, k=k, precision=precision,
        gflops=gflops(m, n, k, mine.ms), cublas_gflops=gflops(m, n, k, theirs.ms), max_rel_err=err, gpu=gpu.name,
        recorded_at=records.utc_now(), time_ms=mine.ms, cublas_time_ms=theirs.ms, runs=mine.runs,
        peak_gflops=gpu.peak_gflops, versions=records.versions(gpu),
        telemetry=mine.telemetry, cublas_telemetry=theirs.telemetry if rounds else {}, rounds_pct=rounds,
        method=method.name, turn_settle_ms=0.0 if mine is theirs else method.turn_settle_ms, turn_ms=method.turn_ms,
        timed_per=turns.TIMED_PER, details=details or {},
    )


def gflops(m: int, n: int, k: int, ms: float) -> float:
    return 2.0 * m * n * k / (ms * 1e-3) / 1e9


def input_sets(m: int, n: int, k: int) -> list[tuple[Any, Any, Any]]:
    """Enough (A, B, C) copies that cycling through them moves more than twice the L2 size."""
    import cupy

    per_set = 4 * (m * k + k * n + m * n)
    count = max(1, math.ceil(2 * device.gpu().l2_bytes / per_set))
    return [(*run.random_inputs(m, n, k), cupy.empty((m, n), dtype=cupy.float32)) for _ in range(count)]


def cublas_launches(sets: list[tuple[Any, Any, Any]]) -> list[Callable[[], Any]]:
    """cuBLAS's side of a race: `cupy.matmul` on each input set, in the math `cublas_math` set around it."""
    import cupy

    return [functools.partial(cupy.matmul, a, b, out=c) for a, b, c in sets]


def bench_all(cases: Iterable[tuple[str, Params | None, int | Sequence[int]]], *,
              desc: str = "benchmarks", progress: bool = True, save: bool = False,
              method: Method | None = None, kind: str = "races") -> list[Measurement]:
    """Run a declared list of (kernel, params, size) cases with a progress bar: live, each measured (and saved at
    once, with `save`); in replay, looked up. On a page, `kind="sweeps"` marks a grid read back from the records
    unless the reader asks for sweeps (`liverun`)."""
    cases = list(cases)
    if bad := next((c for c in cases if not (isinstance(c, (tuple, list)) and len(c) == 3)), None):
        raise ValueError(f"bench_all takes (kernel, params, size) cases, params None for the defaults; not {bad!r}")
    out = []
    quiet = not progress or not device.live() or liverun.SESSION.bar is not None  # a page shows one bar of its own
    bar = tqdm(cases, desc=f"{desc} ({device.mode()})", disable=quiet, leave=False)
    for name, params, size in bar:
        bar.set_postfix_str(f"{name} {shape_of(size)}")
        out.append(bench(name, size, params, method=method, kind=kind))
        if save:
            records.save(out[-1:])
    return out
