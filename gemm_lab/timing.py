"""Time a kernel beside cuBLAS, in the same process, on inputs that do not fit in L2.

Verification comes first: a kernel whose output fails the float64 check gets no time. Timing uses a pair of CUDA events
around each turn of back-to-back launches, after a warm-up (none between launches: measured, an event there slows cuBLAS
more than our kernels, likely because it stops a launch from starting on the heels of the one before, and so flatters
ours where launches are short). The kernel and cuBLAS take turns, in rounds ordered kernel-cuBLAS, cuBLAS-kernel, ...,
after an untimed lead-in of each: an H100 at its 700 W cap runs its clock by power and temperature, which drift over
seconds, and taking turns in mirrored order puts both sides under the same drift instead of giving one a cooler GPU. How
long each part lasts is the race's `Method`:
- SUSTAINED, for every number a page quotes: each side runs untimed, back to back, for SUSTAINED.settle_ms first (the
  clock of a power-capped GPU takes seconds to settle: NVIDIA's CUTLASS measurement guideline says about 3 s, and a
  tensor-core kernel here read 101-102 % of cuBLAS in 25 ms turns against 96-97 % settled), then 8 rounds of turns of at
  least 250 ms each, and a further mirrored pair of rounds where a side still has less than 2 s timed, so each side gets
  at least 2 s of timed GPU time (small work takes at most MAX_TURN_LAUNCHES launches a turn, and stops there: every
  launch of 1 ms or more reaches 2 s). A tensor-core turn that follows the other side's first runs
  SUSTAINED.turn_settle_ms untimed: the cap's clock takes that long to leave the other side's level;
- SHORT, where seconds matter more (sweeps, explorers, an exercise's check): one untimed turn, 4 rounds of 50 ms. Its
  records say so (`Measurement.method`), and no page quotes one as a headline.
Each side's number is the median of its turns' time per launch (at least MIN_RUNS launches in all; records say so:
`Measurement.timed_per`). The record keeps the kernel's share of cuBLAS in each round, so its spread shows; the headline
share of a tensor-core kernel is the median of the rounds'. NVML is read while each side's launches run: the SM clock,
and the joules from the driver's energy counter, so the record holds each side's timed milliseconds, joules per launch
and mean power (`device.Telemetry`). The cuBLAS beside a kernel computes as the kernel promises to (`BASELINE`): TF32
kernels race cuBLAS on TF32 tensor cores, FP32 and 3xTF32 kernels race FP32 SGEMM. When A, B and C together fit in twice
the L2 cache, launches rotate over enough copies that each run reads from DRAM, as a real workload would.
"""
from __future__ import annotations

import functools
import math
import statistics
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, Sequence

from tqdm.auto import tqdm

from . import device, records, run
from .catalog import KernelSpec, Params, Probe, Shape
from .yardstick import BASELINE, kernel_name as cublas_kernel, math as cublas_math
from .records import Measurement

MIN_RUNS = 20
WARMUP = 3
MAX_TURN_LAUNCHES = 1000  # a turn of small work stops here (1024^3 FFMA: about 60 ms)
MAX_SETTLE_LAUNCHES = 4000
# Turns are sized 10 % long: launches can run faster in the rounds than at the end of the lead-in that sized them
# (H100, kernel 14 at 8192: cuBLAS's eight turns came to 1,778 ms of the 2,000 asked); where that is not enough, `race`
# adds rounds.
TURN_HEADROOM = 1.1
TIMED_PER = "turn"  # what one pair of CUDA events brackets in a race (`Measurement.timed_per`)


@dataclass(frozen=True)
class Method:
    """How long a race runs: each side's untimed lead-in (settle_ms of back-to-back launches, or one untimed turn where
    it is 0), then `rounds` mirrored rounds of turns of at least turn_ms of GPU time each; a turn that follows the other
    side's first runs turn_settle_ms untimed, so that it is timed at its own clock, not at the one the other left."""

    name: str
    settle_ms: float
    rounds: int
    turn_ms: float
    turn_settle_ms: float = 0.0
    max_turn_launches: int = MAX_TURN_LAUNCHES

    @property
    def side_ms(self) -> float:
        """Each side's timed GPU time in all, wherever its turns are not cut at max_turn_launches."""
        return self.rounds * self.turn_ms

    def per_turn(self, ms: float, runs: int) -> int:
        """Launches a turn takes when one takes `ms`: enough for turn_ms (at most max_turn_launches), and for `runs`
        launches over all rounds."""
        return max(math.ceil(runs / self.rounds), min(self.max_turn_launches, _launches_for(self.turn_ms, ms)))

    def capped(self, ms: float) -> bool:
        """Are turns of launches of `ms` cut at max_turn_launches before they reach turn_ms (small work)?"""
        return _launches_for(self.turn_ms, ms) > self.max_turn_launches

    def lead_in(self, ms: float, per_turn: int) -> int:
        """Untimed launches before the rounds: settle_ms of them (at most MAX_SETTLE_LAUNCHES), and at least a turn."""
        return max(per_turn, min(MAX_SETTLE_LAUNCHES, math.ceil(self.settle_ms / max(ms, 1e-3))))

    def turn_lead(self, ms: float) -> int:
        """Untimed launches before a turn that follows the other side's: turn_settle_ms of them (at most
        MAX_SETTLE_LAUNCHES)."""
        return min(MAX_SETTLE_LAUNCHES, math.ceil(self.turn_settle_ms / max(ms, 1e-3)))

    def for_precision(self, precision: str) -> "Method":
        """The method a race in `precision`'s math runs: FP32 on FFMA pipes is not throttled by the cap (kernels and
        SGEMM hold 1.98 GHz on the H100 under sustained load, so neither leaves the other a different clock), so a
        sustained FP32 race settles for FFMA_SETTLE_MS and starts its turns without a settle."""
        if precision != "fp32":
            return self
        return replace(self, settle_ms=min(self.settle_ms, FFMA_SETTLE_MS), turn_settle_ms=0.0)

    def holds(self, x: Measurement) -> bool:
        """Was `x` timed by this method as it times today: with at least its settles, and each turn under one pair of
        events (older records of the same name may lack either)?"""
        return (x.method == self.name and x.timed_per == TIMED_PER
                and x.turn_settle_ms >= self.for_precision(x.precision).turn_settle_ms)


# On the H100 at its cap, a side timed right after the other side's turn ran up to 19 % off its own settled launch time
# for the first 50 ms (cuBLAS SGEMM after the Ozaki scheme), and kernel 14 stayed 1-2 % off until about 250 ms
# (benchmarks/settle.py, records/<gpu>/settle.json).
SUSTAINED = Method("sustained", settle_ms=1000.0, rounds=8, turn_ms=250.0, turn_settle_ms=250.0)
# The key shares (`catalog.KEY_SHARES`: the intro, README and scoreboard lead with them) take turns of 1 s: in 250 ms turns
# a race's rounds spread over up to 7 points and its median moved by up to 2 between runs (H100, Ozaki at 4096: 204.0
# and 206.1 % an hour apart), where 1 s turns kept them within 1.5 points (2026-11-27). None of them is small work, so
# every side fills its 8 s (kernel 15 at 4096, 0.11 ms a launch, takes about 10,000 a turn).
LONG_TURNS = replace(SUSTAINED, turn_ms=1000.0, max_turn_launches=20 * MAX_TURN_LAUNCHES)
SHORT = Method("short", settle_ms=0.0, rounds=4, turn_ms=50.0)
FFMA_SETTLE_MS = 300.0
# A kernel's precision -> the math of the cuBLAS it is timed beside: 3xTF32 is meant to replace FP32 SGEMM.


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
          *, runs: int = MIN_RUNS, method: Method | None = None) -> Measurement:
    """Verify, then time one kernel instance and cuBLAS on one shape, in a race of `method` (default SUSTAINED; replay:
    the recorded result)."""
    inst, here = run.resolve(kernel, params, shape_of(size))
    if not here:
        return records.lookup(inst.spec.name, inst.params, *inst.shape)
    if runs < MIN_RUNS:
        raise ValueError(f"runs={runs}: a race times at least {MIN_RUNS} launches a side")
    spec, (m, n, k) = inst.spec, inst.shape
    with run.faults(spec, inst.params, inst.shape):
        err = run.check(inst)
        if not err <= run.tolerance(k, spec.precision):
            raise VerificationError(
                f"{inst.describe()} at M={m}, N={n}, K={k}: max relative error {err:.3g} exceeds "
                f"{run.tolerance(k, spec.precision):.3g}, so no time is reported"
            )
        sets = _input_sets(m, n, k)
        launchers = [run.launcher(inst, a, b, out=c) for a, b, c in sets]
        with cublas_math(BASELINE[spec.precision]):
            method = (method or SUSTAINED).for_precision(spec.precision)
            mine, theirs = race([launchers, _cublas_launches(sets)], runs, method)
    details = launchers[-1].report
    return measurement(spec, spec.precision, inst.params, inst.shape, mine, theirs, err, method,
                       details.as_dict() if details is not None else {})


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
        params=params, m=m, n=n, k=k,
        precision=precision, gflops=gflops(m, n, k, mine.ms), cublas_gflops=gflops(m, n, k, theirs.ms),
        max_rel_err=err, gpu=gpu.name,
        recorded_at=records.utc_now(),
        time_ms=mine.ms, cublas_time_ms=theirs.ms, runs=mine.runs, peak_gflops=gpu.peak_gflops,
        versions=records.versions(gpu),
        telemetry=mine.telemetry, cublas_telemetry=theirs.telemetry if rounds else {}, rounds_pct=rounds,
        method=method.name, turn_settle_ms=0.0 if mine is theirs else method.turn_settle_ms, timed_per=TIMED_PER,
        details=details or {},
    )


def cublas(size: int | Sequence[int], precision: str = "fp32", *, runs: int = MIN_RUNS,
           method: Method | None = None) -> Measurement:
    """cuBLAS alone in `precision`'s math ("fp32": SGEMM; "tf32": TF32 tensor cores), as a measurement of its
    pseudo-kernel (`records.CUBLAS_KERNELS`: "cublas", "cublas_tf32"; replay: recorded)."""
    m, n, k = shape_of(size)
    kernel = cublas_kernel(precision)
    if not device.live():
        return records.lookup(kernel, {}, m, n, k)
    import cupy

    a, b = run.random_inputs(m, n, k, run.CHECK_SEED)  # the inputs `run.check` gives every kernel
    out = cupy.full((m, n), cupy.nan, dtype=cupy.float32)
    with cublas_math(precision):
        cupy.matmul(a, b, out=out)
        err = run.max_rel_err(out, a.astype(cupy.float64) @ b.astype(cupy.float64))
        method = (method or SUSTAINED).for_precision(precision)
        (alone,) = race([_cublas_launches(_input_sets(m, n, k))], runs, method)
    return measurement(None, precision, {}, (m, n, k), alone, alone, err, method)


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
    """One side of a race: the median of its turns' milliseconds per launch, how many launches were timed, each
    turn's milliseconds per launch (in the order they ran) and NVML's readings while they ran (`device.Telemetry`,
    with the side's timed milliseconds, joules per launch and mean power where the energy counter was read)."""

    ms: float
    runs: int
    turns_ms: list[float]
    telemetry: dict[str, float]


def race(sides: Sequence[Sequence[Callable[[], Any]]], runs: int, method: Method | None = None) -> list[Timed]:
    """Time each side's launches (one side, or a kernel and cuBLAS) in `method.rounds` turns each, in mirrored order
    (A B, B A, ...), each turn at least `runs` / rounds launches and method.turn_ms of GPU time (`Method.per_turn`),
    after an untimed lead-in of each (B A) that brings the GPU to its loaded clock and temperature; a turn that follows
    the other side's starts with `Method.turn_lead` untimed launches. Where a side whose turns are not capped has less
    than `Method.side_ms` timed after the rounds, mirrored pairs of rounds follow until it has."""
    import cupy

    method = method or SUSTAINED
    each_ms = [_warm_up_ms(launches) for launches in sides]
    seen = device.Telemetry().start()
    leads: list[tuple[Any, Any, int]] = [(None, None, 0)] * len(sides)
    for side in reversed(range(len(sides))):  # untimed, so that no timed turn meets a cool, idle GPU
        leads[side] = _lead_in(sides[side], method.lead_in(each_ms[side], method.per_turn(each_ms[side], runs)))
    leads[0][1].synchronize()  # the last queued
    # turns are sized from the lead-in's last launches, at the clock the cap settled on, not from the warm-up's
    settled = [cupy.cuda.get_elapsed_time(start, end) / n for start, end, n in leads]
    per_turn = [method.per_turn(ms, runs) for ms in settled]
    turns: list[tuple[int, Any, Any, int]] = []  # side, start and end events, launches
    last = 0  # the lead-ins ended with side 0's

    def queue_round(r: int, launches: list[int]) -> None:
        nonlocal last
        for side in range(len(sides)) if r % 2 == 0 else reversed(range(len(sides))):
            if side != last:  # untimed, at the clock the other side left, until this side's own has settled
                _run(sides[side], method.turn_lead(settled[side]))
            last = side
            # one pair of events around the turn's launches, none between them: an event between two launches costs
            # cuBLAS more than our kernels (kernel 15 at 4096 on the H100: 95.6-96.2 % of cuBLAS INT8 without events
            # between launches, 97.9-100.0 % with), likely by stopping the second from starting on the first's heels.
            # The turn is a phase of the telemetry while it is queued: started once its start event is queued and
            # the GPU has reached it, ended once all its launches are queued and its end event is reached.
            start, end, queued = cupy.cuda.Event(), cupy.cuda.Event(), []
            seen.phase(str(side), lambda s=start, q=queued: bool(q) and s.done,
                       lambda e=end, q=queued: len(q) == 2 and e.done)
            start.record()
            queued.append(True)
            _run(sides[side], launches[side])
            end.record()
            queued.append(True)
            turns.append((side, start, end, launches[side]))

    def spans(side: int) -> tuple[list[float], list[int]]:  # each of a side's turns so far: milliseconds, launches
        mine = [(cupy.cuda.get_elapsed_time(s, e), n) for who, s, e, n in turns if who == side]
        return [ms for ms, _ in mine], [n for _, n in mine]

    for r in range(method.rounds):
        queue_round(r, per_turn)
    # launches can run faster in the rounds than at the lead-in's end that sized the turns: while a side whose turns
    # reach turn_ms has less than side_ms timed, a further mirrored pair of rounds, of equal time a side, makes it up
    while method.side_ms > 0 and not all(method.capped(ms) for ms in settled):
        turns[-1][2].synchronize()
        timed = [(sum(ms), sum(n)) for ms, n in map(spans, range(len(sides)))]
        short = max(method.side_ms - ms for (ms, _), each in zip(timed, settled) if not method.capped(each))
        if short <= 0:
            break
        # turns no shorter than the rounds', so that each weighs alike in the median
        extra = [min(method.max_turn_launches, _launches_for(max(short / 2, method.turn_ms), ms / n))
                 for ms, n in timed]
        done = len(turns) // len(sides)  # rounds so far
        for r in (done, done + 1):
            queue_round(r, extra)
    telemetry = seen.finish()
    turns[-1][2].synchronize()
    out = []
    for side in range(len(sides)):
        spent, launches = spans(side)
        each = [ms / n for ms, n in zip(spent, launches)]
        out.append(Timed(ms=statistics.median(each), runs=sum(launches), turns_ms=each,
                         telemetry=energy_fields(telemetry[str(side)], sum(spent), sum(launches))))
    return out


def energy_fields(seen: dict[str, float], timed_ms: float, launches: int) -> dict[str, float]:
    """A side's telemetry as recorded: its clock samples' summary, its timed milliseconds, and, where NVML's energy
    counter was read, its joules per launch and mean power (joules over the seconds its turns were seen running)."""
    out = {k: v for k, v in seen.items() if k not in ("joules", "seconds")}
    out["timed_ms"] = timed_ms
    if seen.get("seconds"):
        out["energy_j"] = seen["joules"] / launches
        out["mean_power_w"] = seen["joules"] / seen["seconds"]
    return out


def _launches_for(turn_ms: float, ms: float) -> int:
    """Launches of `ms` each that fill turn_ms of GPU time, TURN_HEADROOM long."""
    return math.ceil(TURN_HEADROOM * turn_ms / max(ms, 1e-3))


def _run(launches: Sequence[Callable[[], Any]], count: int) -> None:
    """Queue `count` untimed launches (cycling through `launches`)."""
    for i in range(count):
        launches[i % len(launches)]()


def _lead_in(launches: Sequence[Callable[[], Any]], count: int) -> tuple[Any, Any, int]:
    """Queue `count` launches untimed but for the last quarter (at least one), which runs under one pair of CUDA events
    as a turn does: what a launch takes once the clock has settled. Returns the events and the launches between."""
    import cupy

    tail = max(1, count // 4)
    _run(launches, count - tail)
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    start.record()
    _run(launches, tail)
    end.record()
    return start, end, tail


def _warm_up_ms(launches: Sequence[Callable[[], Any]]) -> float:
    """Run WARMUP launches (compiling, loading, creating handles), then WARMUP more timed: the milliseconds each of
    those took (the first ones' compiling would make a turn too short)."""
    import cupy

    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    for timed in (False, True):
        start.record()
        for i in range(WARMUP):
            launches[i % len(launches)]()
        end.record()
        end.synchronize()
    return cupy.cuda.get_elapsed_time(start, end) / WARMUP


def _queue(launches: Sequence[Callable[[], Any]], runs: int) -> list[tuple[Any, Any]]:
    """Queue `runs` launches (cycling through `launches`), each between a pair of CUDA events. Returns before the GPU
    has run them."""
    import cupy

    events = [(cupy.cuda.Event(), cupy.cuda.Event()) for _ in range(runs)]
    for i, (start, end) in enumerate(events):
        start.record()
        launches[i % len(launches)]()
        end.record()
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
              desc: str = "benchmarks", progress: bool = True, save: bool = False,
              method: Method | None = None) -> list[Measurement]:
    """Run a declared list of (kernel, params, size) cases with a progress bar.

    Live, every case is measured (and saved as soon as it is, with `save`); in replay, every case
    is looked up in the records.
    """
    cases = list(cases)
    out = []
    bar = tqdm(cases, desc=f"{desc} ({device.mode()})", disable=not progress or not device.live(), leave=False)
    for name, params, size in bar:
        bar.set_postfix_str(f"{name} {shape_of(size)}")
        out.append(bench(name, size, params, method=method))
        if save:
            records.save(out[-1:])
    return out
