"""When copies and math overlap: schematic timelines of one block's main loop (register prefetch, cp.async stages)
and of kernel 14's producer and consumers, and the mbarrier rings of kernels 13 and 14 with the phase parity each
side waits for. Durations come from a stated model, and each figure says so on its face.

Its own module because these pictures share the timeline and parity-table helpers, and the step-by-step models of
the rings (`ring_moment`, `handoff_schedule`) that chapters 6, 8c and 9 and their tests also read as numbers.
"""
from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.patches import Ellipse, FancyArrowPatch, Patch, Rectangle

from ... import catalog
from ...models import memory, model
from ...spec import as_integer
from .. import style
from ..prose import counted
from ..style import TEXT, WIDTH, stamp, wrap


def load_latency() -> tuple[float, str]:
    """Clocks for one global load to come back, as the pipeline timelines draw it: the GPU primer's measured DRAM
    latency (a pointer chase, `memory`), the worst case of a tile load; 600 clocks, assumed, before it was recorded."""
    measured = memory.parameters().get("latency", {}).get("DRAM")
    return (measured["cycles"], "measured DRAM latency, GPU primer") if measured else (600.0, "assumed")


def _timeline(ax, bars: list[tuple], rows: tuple[str, ...], right: float = 0) -> float:
    """Draw (row, start, length, label[, colour]) bars on rows of a timeline, up to `right` at least (a bar without a
    colour takes its row's); label each bar inside it, or just after a bar too thin to hold it, where the label does not
    run into the one before it on its row; return where the last bar ends."""
    lo, end = min(b[1] for b in bars), max(b[1] + b[2] for b in bars)
    ax.set_xlim(lo - 50, max(end, right) + 50)
    clocks_per_px = (max(end, right) - lo + 100) / (ax.get_position().width * ax.figure.get_figwidth() * style.DPI)
    label_end: dict[int, float] = {}
    for row, start, length, label, *colour in bars:
        ax.add_patch(Rectangle((start, row - 0.35), length, 0.7, color=colour[0] if colour else f"C{row}", alpha=0.75))
        half = 0.3 * TEXT * style.DPI / 72 * len(label) * clocks_per_px + 4 * clocks_per_px
        left = start + length / 2 - half if 2 * half <= length else start + length  # inside, else just after it
        if label and left >= label_end.get(row, -float("inf")):
            ax.text(left + half, row, label, ha="center", va="center")
            label_end[row] = left + 2 * half
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ax.set_yticks(range(len(rows)), rows)
    ax.invert_yaxis()
    return end


def check_timeline(steps: object, *clocks: object) -> None:
    """A timeline's steps (a whole number, at least 1) and durations (clocks, more than 0)."""
    if as_integer("steps", steps) < 1:
        raise ValueError(f"steps = {steps}: a timeline shows at least one step")
    for clk in clocks:
        if isinstance(clk, bool) or not isinstance(clk, numbers.Real) or not clk > 0:
            raise ValueError(f"a duration of {clk!r} clocks: durations are numbers of clocks above 0")


class Steps(NamedTuple):
    """One block's modelled main loop (`block_steps`): the validated parameters, its bars, lanes and title, the clock
    where the loop starts and where its last step ends, a step's FFMA clocks, the occupancy it assumed and the load
    latency with its origin."""

    params: dict[str, int]
    bars: list[tuple]
    rows: tuple[str, ...]
    title: str
    count: int
    loop: float
    end: float
    compute: float
    occupancy: dict
    latency: float
    origin: str

    @property
    def busy(self) -> float:
        """The share of the steps' clocks the block's FFMAs run: its FFMA busy share in the model."""
        return self.count * self.compute / (self.end - self.loop)


def block_steps(params: dict[str, int], count: int = 3, latency: float | None = None) -> Steps:
    """The model behind `pipeline`: a step's FFMAs take BM*BN*BK / (128 / blocks) clocks (the SM's 128 FP32 lanes
    shared by the blocks resident on it, as the occupancy model `model.resident` counts them for this instance), a
    global load `latency` clocks (by default `load_latency()`), a shared store and a __syncthreads a few dozen.
    PREFETCH 0/1 is 08_prefetch.cu, STAGES is 09_multistage.cu."""
    kernel = "multistage" if "STAGES" in params else "prefetch"
    params = catalog.validate(kernel, params)
    latency, origin = (latency, "given") if latency is not None else load_latency()
    check_timeline(count, latency)
    occupancy = model.resident(kernel, params)
    blocks_per_sm = occupancy["blocks"]
    compute = params["BM"] * params["BN"] * params["BK"] / (128 / blocks_per_sm)
    store, sync = 40, 30
    bars: list[tuple] = []

    def tile(row: int, start: float, length: float, n: int) -> tuple:
        return row, start, length, str(n), f"C{n % 10}"

    def barrier(row: int, start: float) -> tuple:
        return row, start, sync, "", "dimgray"

    t = loop = 0.0  # the clock at the end of the last step, and where the main loop starts
    if "STAGES" in params:  # one lane per buffer of the ring: tile n goes to buffer n % STAGES
        stages, ahead = params["STAGES"], params["STAGES"] - 1
        rows = (*(f"cp.async → buffer {b}" for b in range(stages)), "__syncthreads", "FFMAs on tile n")
        landed = {}
        for n in range(ahead):  # the prologue issues the first STAGES - 1 copies back to back
            bars.append(tile(n, n * store, latency, n))
            landed[n] = n * store + latency
        for s in range(count):  # wait for tile s, sync, refill the buffer step s - 1 read, multiply
            start = max(t, landed[s])
            n = s + ahead
            bars += [barrier(stages, start), tile(n % stages, start + sync, latency, n),
                     tile(stages + 1, start + sync, compute, s)]
            landed[n] = start + sync + latency
            t = start + sync + compute
        loop = landed[0]
        title = f"cp.async, {stages} stages: copies run {counted(ahead, 'step')} ahead, straight into shared memory"
    else:
        rows = ("loads of tile n", "registers → shared", "__syncthreads", "FFMAs on tile n")
        if params.get("PREFETCH"):
            bars += [tile(0, -latency - store - sync, latency, 0), tile(1, -store - sync, store, 0), barrier(2, -sync)]
            for s in range(count):
                step = max(compute, latency)
                bars += [tile(0, t, latency, s + 1), tile(3, t, compute, s), tile(1, t + step, store, s + 1),
                         barrier(2, t + step + store)]
                t += step + store + sync
            title = "PREFETCH=1: the next tile loads during the FFMAs, into the other buffer"
        else:
            for s in range(count):
                bars += [tile(0, t, latency, s), tile(1, t + latency, store, s), barrier(2, t + latency + store),
                         tile(3, t + latency + store + sync, compute, s),
                         barrier(2, t + latency + store + sync + compute)]
                t += latency + store + 2 * sync + compute
            title = "PREFETCH=0: load, wait, store, sync, multiply, sync: the FFMAs wait for every tile"
    return Steps(params, bars, rows, title, count, loop, t, compute, occupancy, latency, origin)


def pipeline(params: dict[str, int], steps: int = 3, latency: float | None = None) -> Figure:
    """A schematic timeline of main-loop steps of one block: when tiles travel and when FFMAs run.

    One lane per kind of work; each bar is numbered and coloured by the tile (the BK-deep slice of A and B) it works
    on, so one tile can be followed from its load to its FFMAs. Durations are a model, not a measurement
    (`block_steps`)."""
    m = block_steps(params, steps, latency)
    p = m.occupancy
    fig, ax = plt.subplots(figsize=(WIDTH, 1.9 + 0.4 * len(m.rows)))
    first = min(b[1] for b in m.bars)  # the clock starts with the first load
    bars = [(row, start - first, *rest) for row, start, *rest in m.bars]
    _timeline(ax, bars, m.rows, right=m.end - first)
    ax.set_xlim(left=0)
    ax.set_xlabel("time in SM clock cycles (model durations)")
    ax.set_title(wrap(m.title, style.TITLE), fontsize=style.TITLE)
    fig.tight_layout()
    q = m.params
    return stamp(fig, f"Bars are numbered and coloured by tile n (grey: a barrier). Model: FFMAs {m.compute:.0f} clk "
                      f"per step ({q['BM']}x{q['BN']}x{q['BK']} tile, {p['blocks']} blocks/SM by the "
                      f"occupancy model, limited by {p['limited_by']}), load latency {m.latency:.0f} clk "
                      f"({m.origin}); FFMA busy {m.busy:.0%} of the steps shown")


def producer_consumer(params: dict[str, int], tiles: int = 2, steps: int = 5, latency: int = 1200,
                      epilogue: int = 600) -> Figure:
    """A schematic timeline of kernel 14 (14_tf32_wgmma_ws.cu) on one SM: the producer's TMA copies into a ring of
    STAGES stages, and the consumer warpgroups' wgmmas, over `tiles` tiles of `steps` 32-deep steps each.

    Durations are a model, not a measurement: a consumer's step is four 64 x BM x 8 wgmmas at 1024 TF32 FMA per
    clock per SM (the tensor cores are shared, so the consumers' steps take turns), a copy lands `latency` clocks
    after it is issued, and an epilogue (stores of C) takes `epilogue` clocks. A stage is refilled once every consumer
    has finished the step that read it (its `empty` mbarrier); a consumer starts a step once its copy landed (`full`).
    """
    stages, consumers = params["STAGES"], params["CONSUMERS"]
    step_clk = 4 * 64 * params["BM"] * 8 / model.TF32_MACS_PER_CLOCK
    total = tiles * steps
    first_landing = latency  # the first copy, issued at 0
    done = [[0.0] * total for _ in range(consumers)]
    bars: list[tuple[int, float, float, str]] = []
    free_at, pipe, ready = 0.0, 0.0, [0.0] * consumers  # producer's next issue, tensor pipe, each consumer
    for i in range(total):
        if i >= stages:  # the stage's empty barrier: every consumer is done with step i - STAGES
            free_at = max(free_at, *(done[c][i - stages] for c in range(consumers)))
        bars.append((0, free_at, 40, ""))
        bars.append((1 + i % stages, free_at, latency, f"{i}"))  # each stage on its own lane: copies overlap
        landed = free_at + latency
        free_at += 40
        for c in range(consumers):
            start = max(landed, ready[c], pipe)
            pipe = ready[c] = done[c][i] = start + step_clk
            bars.append((1 + stages + c, start, step_clk, f"{i}"))
            if i % steps == steps - 1:  # the tile's last step: its epilogue stores C
                bars.append((1 + stages + consumers, ready[c], epilogue, "C" if c == 0 else ""))
                ready[c] += epilogue
    rows = ("TMA issue", *(f"copy into stage {s}" for s in range(stages)),
            *(f"consumer {c + 1} wgmmas" for c in range(consumers)), "epilogues (C)")
    fig, ax = plt.subplots(figsize=(WIDTH, 1.6 + 0.45 * len(rows)))
    end = _timeline(ax, bars, rows)
    ax.set_xlabel(wrap("clock cycles on one SM (model durations); a bar's number: the 32-deep step it copies or "
                       f"multiplies ({steps} steps per tile)", TEXT))
    ax.set_title(wrap(f"Warp specialisation: {stages} stages, {counted(consumers, 'consumer warpgroup')}, "
                      f"BM = {params['BM']}: copies run ahead while the tensor cores work", style.TITLE),
                 fontsize=style.TITLE)
    busy = total * consumers * step_clk / (end - first_landing)
    fig.tight_layout()
    return stamp(fig, f"model: {step_clk:.0f} clk per consumer step, copy latency {latency} clk and epilogue "
                      f"{epilogue} clk (assumed); tensor pipe busy {busy:.0%} after the first copy lands")


RING_STATES = {  # what a stage of kernel 14's ring holds at one moment, and its colour
    "copy in flight (TMA)": "#f2c879", "landed: full": "#8fc38f", "read by the wgmmas": "#6f9fd8",
    "wgmmas finishing: released next": "#c9c9c9",
}


def ring_moment(stages: int, step: int) -> dict[int, tuple[int, str]]:
    """Stage -> (the 32-deep step it holds, its state) in the steady state of 14_tf32_wgmma_ws.cu while the consumers
    run step `step`: the step before still finishing (wgmma_wait<1> leaves one group in flight, then its stage is
    released), the ones after it landed or landing, and the producer waiting to refill the oldest stage."""
    if stages < 3 or step < 1:
        raise ValueError(f"a ring of {stages} stages at step {step}: the picture needs STAGES >= 3 and step >= 1")
    held = {}
    for i in range(step - 1, step + stages - 1):
        state = ("wgmmas finishing: released next" if i == step - 1 else "read by the wgmmas" if i == step else
                 "copy in flight (TMA)" if i == step + stages - 2 else "landed: full")
        held[i % stages] = (i, state)
    return held


def mbarrier_ring(params: dict[str, int], step: int | None = None) -> Figure:
    """Kernel 14's ring of STAGES stages (14_tf32_wgmma_ws.cu), drawn from its parameters: above, one moment of the
    steady state (which step each stage holds, who waits where); below, the phase parity each side waits for on
    the first two trips round the ring. Stage patches carry a gid ("stage s") so tests can count them. The empty
    barrier's arrival count is left out: an exercise asks for it."""
    p = catalog.validate("wgmma_ws_tf32", params)
    stages, consumers = p["STAGES"], p["CONSUMERS"]
    step = stages + 1 if step is None else step
    held = ring_moment(stages, step)
    landing_kib = (p["BM"] + 64 * consumers) * 32 * 4 / 1024  # A's box and B's boxes of one 32-deep step
    fig = plt.figure(figsize=(WIDTH, 9.2))
    grid = fig.add_gridspec(2, 1, height_ratios=[3.6, 1.3], hspace=0.25)
    ring, table = fig.add_subplot(grid[0]), fig.add_subplot(grid[1])
    box_w, box_h = 1.0, 0.66
    rx, ry = max(1.05, 0.66 / np.sin(np.pi / stages)), 1.0  # an ellipse wide enough that neighbours stay clear
    ring.add_patch(Ellipse((0, 0), 2 * rx, 2 * ry, fill=False, edgecolor="gray", linewidth=1.2, linestyle=":"))
    for s in range(stages):
        angle = np.pi / 2 - 2 * np.pi * s / stages
        x, y = rx * np.cos(angle), ry * np.sin(angle)
        i, state = held[s]
        role = "consumers\nread it" if i == step else "producer\nwaits" if i == step - 1 else ""
        ring.add_patch(Rectangle((x - box_w / 2, y - box_h / 2), box_w, box_h, facecolor=RING_STATES[state],
                                 edgecolor="black", linewidth=2.5 if role else 1, gid=f"stage {s}"))
        ring.text(x, y, f"stage {s}\nstep {i}" if not role else f"stage {s}, step {i}\n{role}", ha="center",
                  va="center", linespacing=1.15)
        later = np.pi / 2 - 2 * np.pi * (s + 0.5) / stages  # an arrowhead between this stage and the next
        ring.add_patch(FancyArrowPatch((rx * np.cos(later + 0.04), ry * np.sin(later + 0.04)),
                                       (rx * np.cos(later - 0.04), ry * np.sin(later - 0.04)),
                                       arrowstyle="-|>", mutation_scale=18, color="gray"))
    ring.text(0, 0, f"step i uses\nstage i % {stages}", ha="center", va="center", color="dimgray")
    ring.set_xlim(-rx - 0.72, rx + 0.72)
    ring.set_ylim(-ry - 1.0, ry + 0.4)
    ring.set_aspect("equal")
    ring.axis("off")
    ring.legend(handles=[Patch(facecolor=c, edgecolor="black", label=k) for k, c in RING_STATES.items()],
                loc="lower center", ncol=2, frameon=False, handlelength=1.2, columnspacing=1.0)
    ring.set_title(wrap(f"The ring while the consumers run step {step}: {stages} stages of {landing_kib:.0f} KiB, "
                        + counted(consumers, "consumer warpgroup"), style.TITLE), fontsize=style.TITLE)
    rows = (("step i", lambda i: i), ("stage i % S", lambda i: i % stages), ("trip i / S", lambda i: i // stages),
            ("producer: empty parity", lambda i: (i // stages & 1) ^ 1),
            ("consumers: full parity", lambda i: i // stages & 1))
    label_w, columns = 2.8, 2 * stages
    # the producer's first trip passes at once: a fresh barrier
    _parity_table(table, rows, columns, stages, label_w, fresh=lambda r, i: i < stages and r == 3)
    table.set_title(wrap(f"Who waits for which parity. full: 1 arrival + {landing_kib:.0f} KiB landed; empty: "
                         "an arrival from each consumer warp of the cluster done with the stage (chapter 9's "
                         "Exercise 3 counts them). Red: a fresh "
                         "barrier passes parity 1 at once", TEXT), fontsize=TEXT)
    fig.subplots_adjust(left=0.02, right=0.98, top=0.93, bottom=0.01)
    return fig


def handoff_schedule(params: dict[str, int], steps: int, latency: float, step_clk: float) -> list[dict]:
    """Kernel 13's ring (13_tf32_mma_tma.cu) step by step, under a model of durations: thread 0 issues the first
    STAGES - 1 steps' copies at once, then the copy of step i + STAGES - 1 during step i (its stage was released when
    step i began); a copy lands `latency` clocks after it is issued and completes its stage's full barrier; the warps
    start step i when it has landed and step i - 1 is done, take `step_clk` clocks, and release step i's stage (its
    empty barrier) as step i + 1 begins. Each step: its stage, trip round the ring, the parities each side waits for
    (kernel 13's own formulas) and the times of issue, landing, start, end and release."""
    check_timeline(steps, latency, step_clk)
    stages = params["STAGES"]
    out: list[dict] = []
    issued = {i: 40.0 * i for i in range(min(stages - 1, steps))}
    end = 0.0
    for i in range(steps):
        landed = issued[i] + latency
        start = max(landed, end)
        end = start + step_clk
        if i + stages - 1 < steps:  # at the step's second slice (kk == 1), into the stage step i - 1 left
            issued[i + stages - 1] = start + step_clk / 4
        out.append({"step": i, "stage": i % stages, "trip": i // stages, "full_parity": (i // stages) & 1,
                    "empty_parity": (i // stages - 1) & 1 if i >= stages else None, "issued": issued[i],
                    "landed": landed, "start": start, "end": end})
    for i, row in enumerate(out):
        row["released"] = out[i + 1]["start"] if i + 1 < steps else row["end"]
    return out


def mbarrier_handoff(params: dict[str, int] | None = None, steps: int | None = None, latency: int = 1500,
                     macs_per_clock: float | None = None) -> Figure:
    """Kernel 13's handoff through its ring of STAGES stages, drawn from its parameters (`handoff_schedule`). Above, a
    timeline: thread 0 issuing copies, each stage's copy in flight (light) and read by the warps (dark), the warps'
    mma.sync steps; a full barrier completes where a copy lands, an empty one where the warps release the stage.
    Below, who waits for which parity: the warps wait for full phase i / STAGES of stage i % STAGES, thread 0 for the
    empty phase before it (none on the first trip). Durations are a model: a step is BM x BN x 32 multiply-adds at
    `macs_per_clock` per SM (default: the recorded mma.sync peak, chapter 8's, per SM and clock), a copy lands
    `latency` clocks after it is issued. Patches carry a gid ("stage s")."""
    if macs_per_clock is None:
        from ...models import hardware

        ceil = hardware.ceilings()
        macs_per_clock = ceil["mma_sync_tf32_gflops"] * 1e3 / 2 / (ceil["sms"] * ceil["clock_mhz"])
    p = catalog.validate("mma_tf32_tma", params)
    stages, cluster = p["STAGES"], p["CLUSTER"]
    warps = (p["BM"] // p["WM"]) * (p["BN"] // p["WN"])
    steps = 2 * stages + 1 if steps is None else steps
    step_clk = p["BM"] * p["BN"] * 32 / macs_per_clock
    plan_ = handoff_schedule(p, steps, latency, step_clk)
    fig = plt.figure(figsize=(WIDTH, 0.45 * (stages + 2) + 5.0))
    grid = fig.add_gridspec(2, 1, height_ratios=[0.45 * (stages + 2) + 0.9, 2.0], hspace=0.75)
    ax, table = fig.add_subplot(grid[0]), fig.add_subplot(grid[1])
    warp_row = 1 + stages

    def bar(row: int, start: float, length: float, colour: str, light: bool, label: str = "", gid: str = "") -> None:
        ax.add_patch(Rectangle((start, row - 0.35), length, 0.7, facecolor=to_rgba(colour, 0.25 if light else 0.8),
                               edgecolor=colour, hatch="///" if light else None, linewidth=1, gid=gid or None))
        if label:
            ax.text(start + length / 2, row, label, ha="center", va="center")

    for row in plan_:
        i, s = row["step"], row["stage"]
        colour = f"C{i % 10}"
        bar(0, row["issued"], 80, colour, False)
        bar(1 + s, row["issued"], row["landed"] - row["issued"], colour, True, gid=f"stage {s}")
        bar(1 + s, row["start"], row["released"] - row["start"], colour, False, str(i), f"stage {s}")
        bar(warp_row, row["start"], step_clk, colour, False, str(i))
        ax.plot(row["landed"], 1 + s - 0.4, marker="v", color="black", markersize=8, clip_on=False)
        if i + 1 < len(plan_):  # the last step shown is still being read
            ax.plot(row["released"], 1 + s + 0.4, marker="^", color="black", markersize=8, clip_on=False)
    end = max(r["released"] for r in plan_)
    ax.set_xlim(0, end + 50)
    ax.set_ylim(warp_row + 0.6, -0.6)
    ax.set_yticks(range(warp_row + 1), ("thread 0: TMA", *(f"stage {s}" for s in range(stages)), "warps: mma.sync"))
    ax.set_xlabel(wrap("clock cycles (model durations). Hatched: the copy of step i in flight; ▼ its full barrier "
                       "completes as it lands. Solid: the warps read it until they release it: ▲ empty completes",
                       TEXT))
    full_bytes = (p["BM"] + p["BN"]) * 32 * 4
    columns = min(steps, 2 * stages)
    table_rows = (("step i", lambda r: r["step"]), ("stage i % S", lambda r: r["stage"]),
                  ("trip i / S", lambda r: r["trip"]), ("warps: full parity", lambda r: r["full_parity"]),
                  ("thread 0: empty parity", lambda r: "–" if r["empty_parity"] is None else r["empty_parity"]))
    label_w = 2.9
    _parity_table(table, [(name, lambda c, of=of: of(plan_[c])) for name, of in table_rows], columns, stages, label_w)
    table.set_title(wrap(f"Who waits for which parity (S = STAGES = {stages}). full: 1 arrival + {full_bytes // 1024} "
                         f"KiB; empty: one arrival per warp of the cluster ({warps} warps in "
                         f"{f'each of {cluster} blocks' if cluster > 1 else 'its one block'})", TEXT),
                    fontsize=TEXT)
    fig.suptitle(wrap(f"Kernel 13's ring of {stages} stages: thread 0 refills a stage once the warps released it",
                      style.TITLE), fontsize=style.TITLE)
    fig.subplots_adjust(left=0.22, right=0.98, top=0.9, bottom=0.02)
    return stamp(fig, f"model: {step_clk:,.0f} clk per step ({p['BM']} x {p['BN']} x 32 multiply-adds at "
                      f"{macs_per_clock:,.0f} per clock, the mma.sync peak's), copies land {latency:,} clk after issue "
                      "(assumed)")


def _parity_table(table: Any, rows: Sequence[tuple[str, Callable[[int], Any]]], columns: int, stages: int,
                  label_w: float, fresh: Callable[[int, int], bool] = lambda r, i: False) -> None:
    """An mbarrier ring's table of parities: a row per name (`of(i)` for column i, the first row bold), a dotted line
    after the first trip of `stages`; `fresh(row, column)` marks in red what a fresh barrier lets pass at once."""
    for r, (name, of) in enumerate(rows):
        table.text(-0.15, r, name, ha="right", va="center", weight="bold" if r == 0 else "normal")
        for i in range(columns):
            table.text(i + 0.5, r, str(of(i)), ha="center", va="center", weight="bold" if r == 0 else "normal",
                       color="#b5462f" if fresh(r, i) else "black")
    table.axhline(0.5, color="gray", linewidth=0.8)
    table.axvline(stages, color="gray", linewidth=0.8, linestyle=":")
    table.set_xlim(-label_w * columns / (WIDTH - label_w), columns)
    table.set_ylim(len(rows) - 0.5, -0.5)
    table.axis("off")


def ring_flight(ring: model.Ring, stages: int) -> Figure:
    """Little's law for a ring of copy stages, to scale from `ring` (`model.ring`): copies issued one pace apart (the
    slower of a consumer step T and a fill: one SM's share of the bandwidth fills one stage at a time), each done W
    later (L2's latency, then the fill); the consumers' math, T long, on each stage once it lands (idle between where
    the fill is the slower). At the moment marked, just after a copy is issued, ceil(W / pace) copies are in flight and
    the consumers hold `ring.held` stages (the one read now, the one before still finishing): a ring of `stages` must
    have room for all. Patches carry a gid ("copy i latency", "copy i fill", "math i")."""
    step, copy, pace, flight = ring.step_ns, ring.copy_ns, ring.pace_ns, ring.in_flight
    now_copy = flight + 1  # the moment: just after this copy is issued, with whole copies before it
    copies = now_copy + 2
    now = now_copy * pace + 0.02 * pace
    rows = (*(f"copy {i}" for i in range(copies)), "math: step")
    fig, ax = plt.subplots(figsize=(WIDTH, 0.5 * len(rows) + 4.2))
    right = (copies - 1) * pace + copy + step + 0.1 * pace
    per_ns = 0.8 * WIDTH * style.DPI / right  # px per ns, for labels that fit their bar

    def bar(row: int, x0: float, length: float, colour: str, label: str, gid: str) -> None:
        ax.add_patch(Rectangle((x0, row - 0.32), length, 0.64, facecolor=colour, edgecolor="black", linewidth=0.6,
                               gid=gid))
        if label and 0.55 * TEXT * style.DPI / 72 * len(label) + 6 <= length * per_ns:
            ax.text(x0 + length / 2, row, label, ha="center", va="center")

    in_flight = [i for i in range(copies) if i * pace <= now < i * pace + copy]
    read = next((i for i in range(copies) if copy + i * pace <= now < copy + (i + 1) * pace), None)
    holding = set() if read is None else set(range(read - ring.held + 1, read + 1))  # the last landed, and before
    for i in range(copies):
        bar(i, i * pace, ring.latency_ns, "#c6dbef", "", f"copy {i} latency")
        bar(i, i * pace + ring.latency_ns, ring.fill_ns, "#6baed6", f"stage {i % stages}", f"copy {i} fill")
        landed = copy + i * pace  # the consumers take stage i once it has landed
        bar(len(rows) - 1, landed, step, "#3f6fb5" if i in holding else "#9ecae1", str(i), f"math {i}")
    ax.axvline(now, color="#b5462f", linestyle="--", linewidth=1.2)
    arrows = ((-1.25, pace, f"pace = {pace:,.0f} ns: {'a fill' if ring.fill_ns > step else 'a step'}"),
              (-0.6, copy, f"W = {copy:,.0f} ns"))
    for y, x1, label in arrows:
        ax.annotate("", xy=(x1, y), xytext=(0, y), arrowprops={"arrowstyle": "<->", "linewidth": 1})
        ax.text(x1 + 0.03 * pace, y, label, ha="left", va="center")
    ax.set_xlim(0, right)
    ax.set_ylim(len(rows) - 0.5, -1.7)
    ax.set_yticks(range(len(rows)), rows)
    ax.set_xlabel(wrap(f"ns (a model: the tensor peak's step T = {step:,.0f} ns, the GPU primer's L2 latency and "
                       "bandwidth)", TEXT))
    ax.legend(handles=[Patch(facecolor="#c6dbef", edgecolor="black", label="L2's latency"),
                       Patch(facecolor="#6baed6", edgecolor="black", label="fill: the stage's bytes"),
                       Patch(facecolor="#3f6fb5", edgecolor="black", label="stages the consumers hold")],
              loc="upper center", bbox_to_anchor=(0.5, -0.24), ncol=2, frameon=False)
    held = f"stages {', '.join(str(i % stages) for i in sorted(holding) if i >= 0)}" if holding else "none yet"
    ax.set_title(wrap(f"At the dashed line: {len(in_flight)} copies in flight (stages "
                      f"{', '.join(str(i % stages) for i in in_flight)}), the consumers hold {ring.held} "
                      f"({held}): {len(in_flight) + ring.held} of the ring's {stages} stages", TEXT),
                 fontsize=TEXT, loc="left")
    fig.suptitle(wrap(f"Little's law: a copy issued every {pace:,.0f} ns stays W in flight, so W / pace = "
                      f"{copy / pace:.2f} → {flight} in flight", style.TITLE), fontsize=style.TITLE)
    fig.tight_layout()
    return fig
