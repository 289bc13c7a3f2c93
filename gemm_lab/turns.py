"""How long a race runs, and how its turns are queued: the policy behind the timing spine (`timing.bench`).

The kernel and cuBLAS take turns, in rounds ordered kernel-cuBLAS, cuBLAS-kernel, ..., after an untimed lead-in of
each: a GPU at its power cap runs its clock by power and temperature, which drift over seconds, and turns in mirrored
order put both sides under the same drift instead of giving one a cooler GPU. One pair of CUDA events goes around each
turn, none between its launches: an event between two launches slows cuBLAS more than our kernels (measured, and
quoted in chapter 0), likely by stopping the second from starting on the first's heels. Each side's number is the
median of its turns' time per launch.

How long each part lasts is a `Method`:
- SUSTAINED, for every number a page quotes: each side settles untimed for `settle_ms` (a power-capped clock takes
  seconds to settle; NVIDIA's CUTLASS measurement guideline says about 3 s), then 8 mirrored rounds of turns of at least
  `turn_ms`, then further mirrored pairs where a side still has less than `side_ms` timed (small work stops at
  `max_turn_launches` a turn). A tensor-core turn that follows the other side's first runs `turn_settle_ms` untimed, so
  that it is timed at its own clock, not at the one the other side left (benchmarks/settle.py measures how long that
  takes: records/<gpu>/settle.json). FFMA races settle for FFMA_SETTLE_MS and need no turn settle: the cap does not
  throttle the FFMA pipes (`Method.for_precision`).
- LONG_TURNS, for the key shares (`catalog.KEY_SHARES`): turns of 2 s, as long as benchmarks/retime.py's blocks (in
  1 s turns the side that draws more power ran on the other's headroom under the cap: the Ozaki scheme, 2 % high).
- SHORT, where seconds matter more (sweeps, explorers, an exercise's check): one untimed turn, 4 rounds of 50 ms. Its
  records say so (`Measurement.method`), and no page quotes one as a headline.
"""
from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from . import catalog, device, telemetry
from .records import Measurement

Launches = Sequence[Callable[[], Any]]  # one side's prepared launches, cycled through (each on its own inputs)

WARMUP = 3  # launches that compile, load and create handles, then as many timed to size the lead-in
MIN_RUNS = 20  # launches a side times at least in a race whose numbers a page quotes
SLOW_MS = 50.0  # a launch this long is warmed up and sized by one launch, not WARMUP
MAX_TURN_LAUNCHES = 1000  # a turn of small work stops here (1024^3 FFMA: about 60 ms)
MAX_SETTLE_LAUNCHES = 4000
# Turns are sized 10 % long: launches can run faster in the rounds than at the end of the lead-in that sized them;
# where that is not enough, `race` adds rounds.
TURN_HEADROOM = 1.1
TIMED_PER = "turn"  # what one pair of CUDA events brackets in a race (`Measurement.timed_per`)
FFMA_SETTLE_MS = 300.0


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
    min_runs: int = MIN_RUNS  # launches a side times at least, over all its rounds

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

    def for_precision(self, precision: str) -> Method:
        """The method a race in `precision`'s math runs. On an H100 or H200 (compute capability 9.0, where it was
        measured) FP32 on FFMA pipes is not throttled by the cap: kernels and SGEMM keep their clock under sustained
        load, so neither leaves the other a different one, and a sustained FP32 race settles for FFMA_SETTLE_MS and
        starts its turns without a settle. On other GPUs (a T4's 70 W cap throttles FFMA too) it settles as any."""
        if precision != "fp32" or (device.live() and device.gpu().cc != (9, 0)):
            return self
        return replace(self, settle_ms=min(self.settle_ms, FFMA_SETTLE_MS), turn_settle_ms=0.0)

    def seconds(self, mine_ms: float, theirs_ms: float, runs: int = 0) -> float:
        """About how long a race of two sides whose launches take `mine_ms` and `theirs_ms` lasts: warm-ups, lead-ins,
        the rounds and the settles before each turn that follows the other side's (the extra rounds not counted)."""
        total = 0.0
        for ms in (mine_ms, theirs_ms):
            per_turn = self.per_turn(ms, runs or self.min_runs)
            warm = 2 if ms >= SLOW_MS else 2 * WARMUP
            launches = (warm + self.lead_in(ms, per_turn) + self.rounds * per_turn
                        + (self.rounds - 1) * self.turn_lead(ms))
            total += launches * ms
        return total / 1e3

    def holds(self, x: Measurement) -> bool:
        """Was `x` timed by this method as it times today: with at least its settles, and each turn under one pair of
        events (older records of the same name may lack either)?"""
        return (x.method == self.name and x.timed_per == TIMED_PER
                and x.turn_settle_ms >= self.for_precision(x.precision).turn_settle_ms)


SUSTAINED = Method("sustained", settle_ms=1000.0, rounds=8, turn_ms=250.0, turn_settle_ms=250.0)
# None of the key shares is small work, so every side fills its 16 s (kernel 15 at 4096 takes about 20,000 a turn).
LONG_TURNS = replace(SUSTAINED, turn_ms=2000.0, max_turn_launches=40 * MAX_TURN_LAUNCHES)
SHORT = Method("short", settle_ms=0.0, rounds=4, turn_ms=50.0, min_runs=4)
# A book page's live race of a key share (`reader_method`): settled as SUSTAINED, in half its rounds, so that a page
# that quotes several key shares still runs in its budget; the records hold the full race.
BRIEF = replace(SUSTAINED, name="sustained, 4 rounds", rounds=4)


def reader_method(kernel: str, params: dict[str, int], shape: tuple[int, int, int]) -> Method:
    """The race a book page runs live: BRIEF (settled, sustained) for a key share at its defaults (the numbers the book
    leads with, whose clock the power cap sets), SHORT for the rest, so that a page runs in its budget (`liverun`)."""
    return BRIEF if catalog.is_key_share(kernel, params, shape) else SHORT


@dataclass(frozen=True)
class Timed:
    """One side of a race: the median of its turns' milliseconds per launch, how many launches were timed, each
    turn's milliseconds per launch (in the order they ran) and NVML's readings while they ran (`telemetry.Telemetry`,
    with the side's timed milliseconds, joules per launch and mean power where the energy counter was read)."""

    ms: float
    runs: int
    turns_ms: list[float]
    telemetry: dict[str, float]


@dataclass(frozen=True)
class Turn:
    """One side's back-to-back launches between a pair of CUDA events."""

    side: int
    start: Any
    end: Any
    launches: int

    @property
    def ms(self) -> float:
        import cupy

        return cupy.cuda.get_elapsed_time(self.start, self.end)


def race(sides: Sequence[Launches], runs: int = 0, method: Method | None = None) -> list[Timed]:
    """Time each side's launches (one side, or a kernel and cuBLAS) in `method.rounds` mirrored rounds (A B, B A, ...),
    each turn at least `runs` / rounds launches and method.turn_ms of GPU time (`Method.per_turn`), after an untimed
    lead-in of each (B A) that brings the GPU to its loaded clock and temperature. Where a side whose turns are not
    capped has less than `Method.side_ms` timed after the rounds, mirrored pairs of rounds follow until it has."""
    method = method or SUSTAINED
    runs = runs or method.min_runs
    each_ms = [_warm_up_ms(launches) for launches in sides]
    seen = telemetry.Telemetry().start()
    leads: list[Turn] = []
    for side in reversed(range(len(sides))):  # untimed but for their ends, so no timed turn meets a cool, idle GPU
        count = method.lead_in(each_ms[side], method.per_turn(each_ms[side], runs))
        leads.insert(0, _lead_in(side, sides[side], count))
    leads[0].end.synchronize()  # the last queued
    # turns are sized from the lead-in's last launches, at the clock the cap settled on, not from the warm-up's
    turns = _Turns(sides, method, [lead.ms / lead.launches for lead in leads], seen)
    per_turn = [method.per_turn(ms, runs) for ms in turns.settled]
    for _ in range(method.rounds):
        turns.queue_round(per_turn)
    while extra := turns.shortfall():
        turns.queue_round(extra)
        turns.queue_round(extra)
    readings = seen.finish()
    turns.done()
    return [turns.timed(side, readings[str(side)]) for side in range(len(sides))]


class _Turns:
    """A race's turns as they are queued: which side ran last, and each turn's events."""

    def __init__(self, sides: Sequence[Launches], method: Method, settled: list[float], seen: Any):
        self.sides, self.method, self.settled, self.seen = sides, method, settled, seen
        self.turns: list[Turn] = []
        self.last = 0  # the lead-ins ended with side 0's

    def queue_round(self, launches: list[int]) -> None:
        """One round: each side's turn of `launches[side]`, in mirrored order from one round to the next."""
        order = range(len(self.sides))
        for side in order if len(self.turns) // len(self.sides) % 2 == 0 else reversed(order):
            if side != self.last:  # untimed, at the clock the other side left, until this side's own has settled
                _run(self.sides[side], self.method.turn_lead(self.settled[side]))
            self.last = side
            self.turns.append(_timed_turn(side, self.sides[side], launches[side], self.seen))

    def shortfall(self) -> list[int]:
        """Launches a side's turn takes in a further mirrored pair of rounds, or [] when every side whose turns are not
        capped has `side_ms` timed. Launches can run faster in the rounds than at the lead-in's end that sized them;
        the extra turns are no shorter than the rounds', so that each weighs alike in the median."""
        method = self.method
        if method.side_ms <= 0 or all(method.capped(ms) for ms in self.settled):
            return []
        self.done()
        timed = [(sum(t.ms for t in mine), sum(t.launches for t in mine))
                 for mine in map(self.of, range(len(self.sides)))]
        short = max(method.side_ms - ms for (ms, _), each in zip(timed, self.settled) if not method.capped(each))
        if short <= 0:
            return []
        return [min(method.max_turn_launches, _launches_for(max(short / 2, method.turn_ms), ms / n)) for ms, n in timed]

    def of(self, side: int) -> list[Turn]:
        return [t for t in self.turns if t.side == side]

    def done(self) -> None:
        self.turns[-1].end.synchronize()

    def timed(self, side: int, readings: dict[str, float]) -> Timed:
        mine = self.of(side)
        each = [t.ms / t.launches for t in mine]
        spent, launches = sum(t.ms for t in mine), sum(t.launches for t in mine)
        return Timed(ms=statistics.median(each), runs=launches, turns_ms=each,
                     telemetry=telemetry.energy_fields(readings, spent, launches))


def _timed_turn(side: int, launches: Launches, count: int, seen: Any) -> Turn:
    """Queue one timed turn. It is a phase of the telemetry while it is queued: started once its start event is queued
    and the GPU has reached it, ended once all its launches are queued and its end event is reached."""
    import cupy

    start, end, queued = cupy.cuda.Event(), cupy.cuda.Event(), []
    seen.phase(str(side), lambda: bool(queued) and start.done, lambda: len(queued) == 2 and end.done)
    start.record()
    queued.append(True)
    _run(launches, count)
    end.record()
    queued.append(True)
    return Turn(side, start, end, count)


def _launches_for(turn_ms: float, ms: float) -> int:
    """Launches of `ms` each that fill turn_ms of GPU time, TURN_HEADROOM long."""
    return math.ceil(TURN_HEADROOM * turn_ms / max(ms, 1e-3))


def _run(launches: Launches, count: int) -> None:
    """Queue `count` untimed launches (cycling through `launches`)."""
    for i in range(count):
        launches[i % len(launches)]()


def _lead_in(side: int, launches: Launches, count: int) -> Turn:
    """Queue `count` launches untimed but for the last quarter (at least one), which runs under one pair of CUDA events
    as a turn does: what a launch takes once the clock has settled."""
    import cupy

    tail = max(1, count // 4)
    _run(launches, count - tail)
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    start.record()
    _run(launches, tail)
    end.record()
    return Turn(side, start, end, tail)


def _warm_up_ms(launches: Launches) -> float:
    """Warm up (compiling, loading, creating handles) and say how long one launch takes, to size the lead-in: the first
    launch, timed; where it took SLOW_MS or more, one more launch is enough, else WARMUP - 1 more untimed and WARMUP
    timed (the first ones' compiling would make a turn too short)."""
    import cupy

    start, end = cupy.cuda.Event(), cupy.cuda.Event()

    def timed(first: int, count: int) -> float:
        start.record()
        for i in range(first, first + count):
            launches[i % len(launches)]()
        end.record()
        end.synchronize()
        return cupy.cuda.get_elapsed_time(start, end) / count

    if timed(0, 1) >= SLOW_MS:
        return timed(1, 1)
    _run(launches[1:] + launches[:1], WARMUP - 1)
    return timed(WARMUP, WARMUP)


def time_ms(launches: Launches, runs: int) -> float:
    """Milliseconds per launch of one side alone, in a short race (turns under one pair of events each, the median of
    the turns): how the core times a probe, a copy or a peak kernel."""
    return race([launches], runs, SHORT)[0].ms
