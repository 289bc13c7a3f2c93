"""Chapter 8's lesson on the 700 W cap: a tensor-core kernel's share of cuBLAS against how long each side's turns last.

A race whose turns last tens of milliseconds, started on a GPU that has idled, catches the card above its power cap:
NVML's energy counter shows mean powers past 700 W, and the side that spends more joules per FLOP profits most. In
turns of seconds the clock has settled where the cap holds it, and speed is the cap divided by the energy per FLOP.
`sweep` races a kernel and cuBLAS as the book once did (one untimed turn, then mirrored rounds), after an idle pause,
with turns from 25 ms to 3 s, and records every race in `records/<gpu>/turns.json`; `rows` replays them.
"""
from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

from .. import device, records, timing, turns
from ..records import Measurement

TURNS = "turns"  # records/<gpu>/turns.json
SETTLE = "settle"  # records/<gpu>/settle.json, from benchmarks/settle.py
CAP_W = 700.0  # the power limit of the H100 SXM and the H200 SXM (NVIDIA's data sheets; nvidia-smi's power.limit)
# a mean power this close below the cap counts as at it: the limiter holds its own average near the cap
NEAR_CAP_W = 20.0
# the SM clock's step: below the cap a card sits at its boost clock or one step under it; further down, the limiter
# has pulled it (the scoreboard's clock test)
CLOCK_STEP_MHZ = 15
TURN_MS = (25.0, 100.0, 250.0, 1000.0, 3000.0)
# (kernel, params): kernel 14 TF32 against cuBLAS TF32, and kernel 10b (FFMA, below the cap) against SGEMM as control
CASES: tuple[tuple[str, dict[str, int]], ...] = (("wgmma_ws_tf32", {}), ("pipelined_warp_tiling", {}))
SIZE = 8192
IDLE_S = 2.0  # the pause before each race, so each starts from an idling GPU as a short benchmark would
TIMED_MS = 4000.0  # each side's timed GPU time is at least this, in at least two rounds and at most eight


def switch_offset(within_ms: float = 50.0, gpu: str | None = None) -> tuple[float, str]:
    """How far, in %, a side's launches ran from its own settled time in the first `within_ms` after the other side's
    turn (the most over the cases and blocks of benchmarks/settle.py, records/<gpu>/settle.json), and on which GPU:
    the replay GPU's where it has them, else the default replay GPU's. Why a sustained turn settles first."""
    rows, name = records.read_kind_or_default(SETTLE, gpu, "benchmarks/settle.py")
    off = 0.0
    for r in rows:
        early = sum(1 for w in r["windows_ms"] if w < within_ms)
        off = max(off, *(abs(v - 100) for b in r["blocks"] for side in (b["kernel_rel"], b["cublas_rel"])
                         for v in side[:early]))
    return off, name


def method(turn_ms: float) -> turns.Method:
    """A race of turns of `turn_ms`, with one untimed turn as its lead-in (the book's short races before they were
    sustained): eight rounds, fewer where eight would run past TIMED_MS per side (never fewer than two)."""
    rounds = max(2, min(8, math.ceil(TIMED_MS / turn_ms)))
    return turns.Method(f"turns of {turn_ms:g} ms", settle_ms=0.0, rounds=rounds, turn_ms=turn_ms)


def sweep(cases: Sequence[tuple[str, dict[str, int]]] = CASES, turns_ms: Sequence[float] = TURN_MS,
          size: int = SIZE) -> list[dict[str, Any]]:
    """Race each case at each turn length (live only), each race after IDLE_S of idling; store and return the rows."""
    rows = []
    for name, params in cases:
        for turn_ms in turns_ms:
            time.sleep(IDLE_S)
            x = timing.bench(name, size, params, method=method(turn_ms))
            rows.append({**x.to_row(), "turn_ms": turn_ms})
    records.upsert(records.gpu_dir(device.gpu().name) / f"{TURNS}.json", rows, ("kernel", "params", "m", "turn_ms"))
    return rows


def rows(gpu: str | None = None) -> list[tuple[float, Measurement]]:
    """The recorded races of `sweep` on a GPU (default: the replay GPU's), as (turn_ms, measurement), by kernel then
    turn length."""
    out = [(r["turn_ms"], Measurement.from_row({k: v for k, v in r.items() if k != "turn_ms"}, TURNS))
           for r in records.read_kind(TURNS, gpu)]
    if not out:
        raise LookupError(f"no races of turn lengths recorded on {gpu or device.replay_gpu()}: record them on a GPU "
                          "with `gemm-lab record --only power`")
    return sorted(out, key=lambda t: (t[1].kernel, t[0]))


def against_cap(watts: float) -> str:
    """'at' or 'below': where a side's mean power sits against the cap, said the same way on every page."""
    return "below" if watts < CAP_W - NEAR_CAP_W else "at"
