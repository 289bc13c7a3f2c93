"""The issue-bound view of chapters 7 onward, as one table a page shows.

Each SM's four warp schedulers issue one warp instruction per clock, and the FP32 peak needs every one of them to be
an FFMA. So an FFMA kernel runs at most at the peak x the FFMA share of its main loop, which the offline SASS gives
before anything runs (`model.speed_of_light`'s issue ceiling); and it runs at about the peak x the FFMA share of what
it issued x the share of issue slots in which it issued at all, both counted by Nsight Compute. The first factor is
the instruction mix; the second is latency hiding: a slot goes idle when every warp of its scheduler is waiting.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .. import catalog, records, timing
from ..records import Measurement
from . import hardware, sass

FMA_BUSY = "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active"
ISSUE_BUSY = "smsp__issue_active.avg.pct_of_peak_sustained_active"
WARPS_ACTIVE = "sm__warps_active.avg.pct_of_peak_sustained_active"
WARPS_PER_SM = 64  # the most resident warps an SM holds (sm_80 and sm_90)


@dataclass(frozen=True)
class Row:
    """One instance: its FFMA share in the compiled main loop, and what the counters and the timing recorded (None
    where they are not recorded yet)."""

    label: str
    kernel: str
    params: dict[str, int]
    sass_share: float
    peak_tflops: float
    counters: dict | None
    measured: Measurement | None

    @property
    def ceiling_tflops(self) -> float:
        """The issue ceiling: every slot issues, and the loop's FFMA share of them are FFMAs."""
        return self.peak_tflops * self.sass_share

    @property
    def counted_share(self) -> float | None:
        """FFMAs' share of what was issued: FMA-pipe cycles over issue cycles (the loop's few integer multiply-adds
        run on the FMA pipe too)."""
        return self.counters and self.counters["metrics"][FMA_BUSY] / self.counters["metrics"][ISSUE_BUSY]

    @property
    def issue_busy(self) -> float | None:
        """The share of issue slots in which a warp instruction issued."""
        return self.counters and self.counters["metrics"][ISSUE_BUSY] / 100

    @property
    def warps_per_scheduler(self) -> float | None:
        return self.counters and self.counters["metrics"][WARPS_ACTIVE] / 100 * WARPS_PER_SM / catalog.SCHEDULERS_PER_SM

    @property
    def from_counters_tflops(self) -> float | None:
        """peak x counted FFMA share x issue slots used: the speed the counters account for."""
        return self.counters and self.peak_tflops * self.counted_share * self.issue_busy


def rows(cases: Sequence[tuple[str, str, dict[str, int] | None]], size: int = 4096,
         ceilings: dict | None = None, gpu: str | None = None) -> list[Row]:
    """A Row per (label, kernel, params) at M = N = K = `size`: live, measured and counted now; in replay, read from
    the records, with None where an instance is not recorded (`missing` says how to record it). With `gpu`, always
    that GPU's records (rows recorded on one GPU only)."""
    peak = (ceilings or hardware.ceilings())["peak_gflops"] / 1e3
    out = []
    for label, kernel, params in cases:
        p = catalog.validate(kernel, params)
        mix = sass.main_loop_mix(kernel, p)
        counted, measured = (hardware.recorded_counters(kernel, p, (size,) * 3, gpu),
                             records.lookup_or_none(kernel, p, size, size, size, gpu=gpu)) if gpu else \
            (_or_none(hardware.counters, kernel, (size,) * 3, p), _or_none(timing.bench, kernel, size, p))
        out.append(Row(label, kernel, p, mix["FFMA"] / sum(mix.values()), peak, counted, measured))
    return out


def _or_none(read: Callable[..., Any], *args: Any) -> Any:
    try:
        return read(*args)
    except (LookupError, RuntimeError):  # not recorded (replay), or ncu could not run and nothing was recorded
        return None


def missing(rs: Sequence[Row]) -> list[str]:
    """The `gemm-lab record` commands that would fill the rows' unrecorded cells (run on a GPU)."""
    out = []
    if any(r.measured is None for r in rs):
        out.append("gemm-lab record --only headline")
    if any(r.counters is None for r in rs):
        out.append("gemm-lab record --only counters")
    return out
