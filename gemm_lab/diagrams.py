"""Pictures of ideas, drawn by code from a kernel's own parameters: another instance redraws them.

`plots` charts measurements; this module draws what a kernel does (which tiles a block reads, which lanes touch
which bank, when copies and math overlap). Where a picture needs durations it takes them from a stated model,
and says so on its face. Every figure keeps `style`'s rule: text at least the page's body size at 800 px.
New pictures for the chapters belong here.
"""
from __future__ import annotations

import math
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from . import banks, catalog, model, style
from .style import TEXT, WIDTH, stamp, wrap


def tiling(bm: int, bn: int, bk: int, m: int = 256, n: int = 256, k: int = 256) -> Figure:
    """Which tiles of A and B one block of C reads as it walks K (drawn to scale)."""
    fig, axes = plt.subplots(1, 3, figsize=(WIDTH, 3.4), gridspec_kw={"width_ratios": [k, n, n]})
    panels = (("A", m, k, (bm, bk)), ("B", k, n, (bk, bn)), ("C", m, n, (bm, bn)))
    for ax, (name, rows, cols, (th, tw)) in zip(axes, panels):
        ax.add_patch(Rectangle((0, 0), cols, rows, fill=False, linewidth=1))
        row0 = rows // 2 - (rows // 2) % th if name != "B" else 0
        col0 = cols // 2 - (cols // 2) % tw if name != "A" else 0
        if name == "A":
            for j, c in enumerate(range(0, cols, tw)):
                ax.add_patch(Rectangle((c, row0), tw, th, color="C0", alpha=0.9 if j == 1 else 0.3))
        elif name == "B":
            for j, r in enumerate(range(0, rows, th)):
                ax.add_patch(Rectangle((col0, r), tw, th, color="C1", alpha=0.9 if j == 1 else 0.3))
        else:
            ax.add_patch(Rectangle((col0, row0), tw, th, color="C2"))
        ax.set_xlim(0, cols)
        ax.set_ylim(rows, 0)
        ax.set_aspect("equal")
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_title({"A": f"A: {bm} x {bk} tiles\n(BM x BK)", "B": f"B: {bk} x {bn} tiles\n(BK x BN)",
                      "C": f"C: one block's\n{bm} x {bn} tile"}[name], fontsize=TEXT)
    fig.suptitle(wrap("One block walks K: the dark tiles are in shared memory now, the light ones come next"),
                 fontsize=TEXT)
    fig.tight_layout()
    return fig


def warp_access(block: int = 32, k_step: int = 0) -> Figure:
    """Which addresses of A, B and C the 32 lanes of warp 0 touch in one step, naive vs coalesced."""
    fig, axes = plt.subplots(2, 3, figsize=(WIDTH, 5.8))
    lanes = np.arange(32)
    for row_ax, kernel in zip(axes, ("naive", "coalesced")):
        rows, cols = (lanes % block, lanes // block) if kernel == "naive" else (lanes // block, lanes % block)
        touched = {"A": (rows, np.full(32, k_step)), "B": (np.full(32, k_step), cols), "C": (rows, cols)}
        for ax, (name, (r, c)) in zip(row_ax, touched.items()):
            grid = np.zeros((32, 32))
            grid[r, c] = 1
            ax.imshow(grid, cmap="Blues", vmin=0, vmax=1.3)
            lines = len({(int(a), int(b) // 32) for a, b in zip(r, c)})  # 128-byte lines: 32 floats of a row
            ax.set_title(f"{name}: {lines} line{'s' if lines > 1 else ''}", fontsize=TEXT)
            ax.set_xticks([])
            ax.set_yticks([])
        row_ax[0].set_ylabel(f"{kernel}\nrow", fontsize=TEXT)
    fig.supxlabel("column (row-major: a row is contiguous); a line is 128 bytes", fontsize=TEXT)
    fig.suptitle(wrap(f"Warp 0 of a {block} x {block} block, one iteration of k: the cells its 32 lanes touch"),
                 fontsize=TEXT)
    fig.tight_layout()
    return fig


def levels(kernel: str, params: dict[str, int], ceilings: dict, registers: int, size: int = 4096) -> Figure:
    """Arithmetic intensity at the global and shared levels against each level's ridge point, and
    the register budget of one thread (accumulators, fragments, the rest) as the compiler reports it."""
    n = size
    flop = model.flops(n, n, n)
    peak = ceilings["peak_gflops"]
    levels_ = {
        "global\n(L2/DRAM)": (flop / model.global_load_bytes(kernel, n, n, n, params), peak / ceilings["dram_gbs"]),
        "shared\nmemory": (flop / model.shared_load_bytes(kernel, n, n, n, params),
                           peak / model.shared_bandwidth_gbs(ceilings)),
    }
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(WIDTH, 3.8), gridspec_kw={"width_ratios": [1.6, 1]})
    for i, (name, (intensity, ridge)) in enumerate(levels_.items()):
        ok = intensity >= ridge
        ax.bar(i, intensity, color="C2" if ok else "C3", width=0.6)
        ax.plot([i - 0.4, i + 0.4], [ridge, ridge], "k--", linewidth=1)
        ax.text(i, intensity * 1.15, f"{intensity:.2f}", ha="center")
        ax.text(i, ridge / 1.25, f"ridge {ridge:.1f}", ha="center", va="top")
    ax.set_xticks(range(len(levels_)), list(levels_))
    ax.set_yscale("log")
    ax.set_ylim(0.05, 6 * max(max(v) for v in levels_.values()))
    ax.set_xlim(-0.6, len(levels_) - 0.4)
    ax.set_ylabel("FLOP per byte (model)")
    ax.set_title("intensity per level\n(green: above the ridge)", fontsize=TEXT)
    budget = model.register_floor(kernel, params)
    bottom = 0
    for (name, count), c in zip([*budget.items(), ("other", max(registers - sum(budget.values()), 0))],
                                ("C0", "C1", "C7")):
        ax2.bar(0, count, bottom=bottom, color=c, label=f"{name} ({count})", width=0.5)
        bottom += count
    ax2.axhline(255, color="k", linestyle=":", linewidth=1)
    ax2.text(-0.25, 258, "255 max", va="bottom")
    ax2.set_xticks([])
    ax2.set_xlim(-0.35, 1.6)
    ax2.set_ylim(0, 300)
    ax2.set_ylabel("registers per thread")
    ax2.set_title(f"register budget\n({registers} used)", fontsize=TEXT)
    ax2.legend(loc="center left", bbox_to_anchor=(0.4, 0.45), frameon=False, handlelength=1)
    fig.suptitle(wrap(catalog.get(kernel).describe(params)), fontsize=TEXT)
    fig.tight_layout()
    return fig


def bank_grid(access: banks.Access, title: str = "") -> Figure:
    """The 32 banks (columns) and the 128-byte rows of shared memory a warp's access touches, each touched word
    labelled with the first lane that touches it (a white corner: more lanes share it, a broadcast); red columns
    need more than one wavefront."""
    words: dict[int, list[int]] = {}
    for lane, addr in enumerate(access.addresses):
        for w in range(access.width // banks.WORD):
            words.setdefault(addr // banks.WORD + w, []).append(lane)
    rows = sorted({w // banks.BANKS for w in words})
    load = np.zeros(banks.BANKS, dtype=int)
    for w in words:
        load[w % banks.BANKS] += 1
    fig, ax = plt.subplots(figsize=(WIDTH, 0.42 * len(rows) + 1.9))
    for w, lanes in words.items():
        r, b = rows.index(w // banks.BANKS), w % banks.BANKS
        ax.add_patch(Rectangle((b, r), 1, 1, facecolor="C3" if load[b] > access.ideal else "C0", alpha=0.8,
                               edgecolor="white", linewidth=0.5))
        if len(lanes) > 1:
            ax.add_patch(Rectangle((b + 0.65, r), 0.35, 0.25, facecolor="white", edgecolor="none"))
        # a column is as narrow as two digits, so the lane reads upwards, as the row's height allows
        ax.text(b + 0.5, r + 0.55, str(lanes[0]), ha="center", va="center", color="white", rotation=90)
    ax.set_xlim(0, banks.BANKS)
    ax.set_ylim(len(rows), 0)
    ax.set_xticks([b + 0.5 for b in range(0, banks.BANKS, 4)], range(0, banks.BANKS, 4))
    step = max(1, len(rows) // 8)
    ax.set_yticks([r + 0.5 for r in range(0, len(rows), step)], [f"{128 * rows[r]:,}" for r in
                                                                  range(0, len(rows), step)])
    ax.set_xlabel("bank (cells: the first lane that reads or writes the word;\n"
                  "a white corner: more lanes share it)")
    ax.set_ylabel("byte offset\nof the row")
    ax.grid(False)
    ax.set_title(wrap(title or f"{access.name}: {access.width * 8}-bit, {access.wavefronts} wavefront(s), "
                      f"{access.conflicts} conflict(s)", style.TITLE), fontsize=style.TITLE)
    fig.tight_layout()
    return fig


def _timeline(ax, bars: list[tuple[int, float, float, str]], rows: tuple[str, ...], right: float = 0) -> float:
    """Draw (row, start, length, label) bars on rows of a timeline, up to `right` at least; label each bar where its
    label does not run into the one before it on its row; return where the last bar ends."""
    lo, end = min(b[1] for b in bars), max(b[1] + b[2] for b in bars)
    ax.set_xlim(lo - 50, max(end, right) + 50)
    clocks_per_px = (max(end, right) - lo + 100) / (ax.get_position().width * ax.figure.get_figwidth() * style.DPI)
    label_end: dict[int, float] = {}
    for row, start, length, label in bars:
        ax.add_patch(Rectangle((start, row - 0.35), length, 0.7, color=f"C{row}", alpha=0.75))
        half = 0.3 * TEXT * style.DPI / 72 * len(label) * clocks_per_px + 30 * clocks_per_px
        middle = start + length / 2
        if label and middle - half >= label_end.get(row, -float("inf")):
            ax.text(middle, row, label, ha="center", va="center")
            label_end[row] = middle + half
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ax.set_yticks(range(len(rows)), rows)
    ax.invert_yaxis()
    return end


def pipeline(params: dict[str, int], steps: int = 3, blocks_per_sm: int = 2, latency: int = 600) -> Figure:
    """A schematic timeline of main-loop steps of one block: when tiles travel and when FFMAs run.

    Durations are a model, not a measurement: a step's FFMAs take BM*BN*BK / (128 / blocks_per_sm)
    clocks (the SM's 128 FP32 lanes shared by the resident blocks), a global load `latency` clocks,
    a shared store and a __syncthreads a few dozen. PREFETCH 0/1 is 08_prefetch.cu, STAGES is
    09_multistage.cu.
    """
    compute = params["BM"] * params["BN"] * params["BK"] / (128 / blocks_per_sm)
    store, sync = 40, 30
    rows = ("global loads", "regs → shared", "sync", "FFMAs")
    fig, ax = plt.subplots(figsize=(WIDTH, 3.4))
    bars: list[tuple[int, float, float, str]] = []
    t = 0.0
    if "STAGES" in params:
        ahead = params["STAGES"] - 1
        for s in range(steps + ahead):
            issue = (s - ahead) * (compute + sync)
            bars.append((0, max(issue, -ahead * (compute + sync)), latency, f"tile {s}"))
        for s in range(steps):
            bars += [(2, t, sync, ""), (3, t + sync, compute, f"step {s}")]
            t += sync + compute
        title = f"cp.async, {params['STAGES']} stages: copies run {ahead} step(s) ahead, straight into shared memory"
    elif params.get("PREFETCH"):
        bars.append((0, -latency - store - sync, latency, "tile 0"))
        bars += [(1, -store - sync, store, ""), (2, -sync, sync, "")]
        for s in range(steps):
            step = max(compute, latency)
            bars += [(0, t, latency, f"tile {s + 1}"), (3, t, compute, f"step {s}"),
                     (1, t + step, store, ""), (2, t + step + store, sync, "")]
            t += step + store + sync
        title = "PREFETCH=1: the next tile loads during the FFMAs; one __syncthreads per step"
    else:
        for s in range(steps):
            bars += [(0, t, latency, f"tile {s}"), (1, t + latency, store, ""), (2, t + latency + store, sync, ""),
                     (3, t + latency + store + sync, compute, f"step {s}"),
                     (2, t + latency + store + sync + compute, sync, "")]
            t += latency + store + 2 * sync + compute
        title = "PREFETCH=0: load, wait, store, sync, multiply, sync: the FFMAs wait for every tile"
    _timeline(ax, bars, rows, right=t)
    ax.set_xlabel("clock cycles of one block (model durations)")
    ax.set_title(wrap(title, style.TITLE), fontsize=style.TITLE)
    busy = steps * compute / t if t else 0
    fig.tight_layout()
    return stamp(fig, f"model: FFMAs {compute:.0f} clk/step ({params['BM']}x{params['BN']}x{params['BK']} tile, "
                      f"{blocks_per_sm} blocks/SM), load latency {latency} clk (assumed); FFMA busy {busy:.0%} of the "
                      "steps shown")


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
        bars.append((1, free_at, latency, f"s{i % stages}"))
        landed = free_at + latency
        free_at += 40
        for c in range(consumers):
            start = max(landed, ready[c], pipe)
            pipe = ready[c] = done[c][i] = start + step_clk
            bars.append((2 + c, start, step_clk, f"k{i % steps}"))
            if i % steps == steps - 1:  # the tile's last step: its epilogue stores C
                bars.append((2 + consumers, ready[c], epilogue, "C" if c == 0 else ""))
                ready[c] += epilogue
    rows = ("TMA issue", "copies (stage)", *(f"consumer {c + 1}" for c in range(consumers)), "epilogues")
    fig, ax = plt.subplots(figsize=(WIDTH, 1.6 + 0.5 * len(rows)))
    end = _timeline(ax, bars, rows)
    ax.set_xlabel("clock cycles on one SM (model durations); k: a consumer's wgmma step")
    ax.set_title(wrap(f"Warp specialisation: {stages} stages, {consumers} consumer warpgroup(s), BM = {params['BM']}: "
                      "copies run ahead while the tensor cores work", style.TITLE), fontsize=style.TITLE)
    busy = total * consumers * step_clk / (end - first_landing)
    fig.tight_layout()
    return stamp(fig, f"model: {step_clk:.0f} clk per consumer step, copy latency {latency} clk and epilogue "
                      f"{epilogue} clk (assumed); tensor pipe busy {busy:.0%} after the first copy lands")


def lane_position(lane: int, params: dict[str, int], kernel: str = "warp_tiling") -> tuple[int, int]:
    """(lane_m, lane_n) of a lane in its warp's lane grid, numbered as the kernel's source numbers them.

    warp_tiling (10_warp_tiling.cu): along the wide side of the grid by lane % 8, along the narrow one diagonally,
    so that every quarter-warp covers all 8 x all 4. pipelined_warp_tiling (10b): a quarter-warp is 4 lanes along the
    wide side by 2 along the narrow one."""
    if kernel == "warp_tiling":
        wide, narrow = lane % 8, (lane // 8 + lane % 8) % 4
    elif kernel == "pipelined_warp_tiling":
        wide, narrow = lane // 8 % 2 * 4 + lane % 4, lane // 16 * 2 + lane // 4 % 2
    else:
        raise ValueError(f"lane_position: {kernel!r} has no lane grid (warp_tiling or pipelined_warp_tiling)")
    return (wide, narrow) if params["WM"] // params["TM"] == 8 else (narrow, wide)


def lds128_wavefronts(float4s_per_quarter: list[int]) -> int:
    """Wavefronts of one 128-bit shared load of a warp whose conflict-free quarter-warps read these numbers of distinct
    float4s, by the rule Nsight Compute's counters follow on the H100 (kernel 10b's header): one wavefront per
    quarter-warp, but the two quarter-warps of a half-warp share one when each reads at most two distinct float4s."""
    pairs = [float4s_per_quarter[i:i + 2] for i in range(0, len(float4s_per_quarter), 2)]
    return sum(1 if max(pair) <= 2 else len(pair) for pair in pairs)


def loop_nest(params: dict[str, int] | None = None, size: int = 4096, kernel: str = "warp_tiling") -> Figure:
    """The warp-tiled kernel as one loop nest (CUTLASS's way of framing a GEMM): block tile, k-step, warp tile, k,
    thread tile, FFMA, each level boxed inside the one above with this instance's numbers at M = N = K = `size`, and
    coloured by where its operands live (global memory, shared memory, registers)."""
    spec = catalog.get(kernel)
    p = spec.full_params(params)
    bm, bn, bk, wm, wn, tm, tn = (p[x] for x in ("BM", "BN", "BK", "WM", "WN", "TM", "TN"))
    tiles_m, tiles_n = -(-size // bm), -(-size // bn)
    where = {"global": "#e6e6e6", "shared": "#d5ecd0", "registers": "#d6e4f5"}
    levels = (
        ("global", "for each block tile of C:", f"{tiles_m} x {tiles_n} = {tiles_m * tiles_n:,} blocks of {bm} x {bn},"
                                                " one thread block each"),
        ("shared", f"for k0 in 0, {bk}, ..., K - {bk}:", f"{-(-size // bk):,} steps: A {bm} x {bk} and B {bk} x {bn} into "
                                                          "shared memory"),
        ("shared", "for each warp tile of the block:", f"{(bm // wm) * (bn // wn)} warps of {wm} x {wn}, at once "
                                                       f"({bm // wm} x {bn // wn})"),
        ("registers", f"for kk in 0, ..., {bk - 1}:", f"each lane reads {(tm + tn) // 4} float4s of A and B into "
                                                      "registers"),
        ("registers", "for each thread tile of the warp:", f"32 lanes of {tm} x {tn}, at once ({wm // tm} x "
                                                           f"{wn // tn} lanes)"),
        ("registers", "acc[i][j] += a[i] * b[j]", f"{tm * tn} FFMAs per lane from those {(tm + tn) // 4} loads"),
    )
    indent, band, pad, inset = 0.26, 0.62, 0.08, 0.07  # inches
    bottom = 0.1 + len(levels) * band + inset * len(levels)  # of the outermost box
    height = bottom + 0.55
    fig = plt.figure(figsize=(WIDTH, height))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set(xlim=(0, WIDTH), ylim=(height, 0))
    ax.axis("off")
    for i, (memory, code, text) in enumerate(levels):
        left, top = pad + i * indent, 0.1 + i * band
        ax.add_patch(Rectangle((left, top), WIDTH - pad - i * inset - left, bottom - i * inset - top,
                               facecolor=where[memory], edgecolor="#555", linewidth=1, gid=f"level {i}"))
        ax.text(pad + i * indent + 0.1, top + 0.08, code, family="monospace", weight="bold", va="top")
        ax.text(pad + i * indent + 0.1, top + 0.33, text, va="top")
    for j, (memory, colour) in enumerate(where.items()):
        x = pad + j * 2.1
        ax.add_patch(Rectangle((x, height - 0.36), 0.3, 0.24, facecolor=colour, edgecolor="#555"))
        ax.text(x + 0.38, height - 0.24, {"global": "global memory", "shared": "shared memory",
                                          "registers": "registers"}[memory], va="center")
    return fig


def warp_tiles(params: dict[str, int] | None = None) -> Figure:
    """The three tile levels of the warp-tiled kernel, drawn from its parameters (defaults: the catalog's).

    Top left, the block tile and its warp tiles; top right, warp 0's tile with the outputs of lanes 0 and 1 (TM/4 x
    TN/4 squares of 4 x 4, one stride apart); below, one stride's worth of the warp tile with the lane that owns
    each square. Patches carry a gid ("warp w", "lane l") so tests can count what is drawn.
    """
    p = catalog.get("warp_tiling").full_params(params)
    bm, bn, wm, wn, tm, tn = (p[x] for x in ("BM", "BN", "WM", "WN", "TM", "TN"))
    stride_m, stride_n = wm // (tm // 4), wn // (tn // 4)
    highlight = {0: "C3", 1: "C1"}
    fig = plt.figure(figsize=(WIDTH, 7.6))
    grid = fig.add_gridspec(2, 2, height_ratios=[1, 1.1])
    block, warp, lanes = fig.add_subplot(grid[0, 0]), fig.add_subplot(grid[0, 1]), fig.add_subplot(grid[1, :])
    for w in range((bm // wm) * (bn // wn)):
        r, c = w // (bn // wn) * wm, w % (bn // wn) * wn
        block.add_patch(Rectangle((c, r), wn, wm, facecolor=to_rgba("C0", 0.35) if w == 0 else "none",
                                  edgecolor="black", linewidth=1.5, gid=f"warp {w}"))
        if wn / bn >= 0.12 and wm / bm >= 0.12:
            block.text(c + wn / 2, r + wm / 2, f"w{w}", ha="center", va="center")
    for lane in range(32):
        lm, ln = lane_position(lane, p)
        lanes.add_patch(Rectangle((ln * 4, lm * 4), 4, 4, facecolor=highlight.get(lane, "white"),
                                  edgecolor="gray", linewidth=0.5))
        lanes.text(ln * 4 + 2, lm * 4 + 2, str(lane), ha="center", va="center")
        if lane in highlight:
            for g in range(tm // 4):
                for h in range(tn // 4):
                    warp.add_patch(Rectangle((ln * 4 + h * stride_n, lm * 4 + g * stride_m), 4, 4,
                                             color=highlight[lane], gid=f"lane {lane}"))
    for g in range(tm // 4):
        for h in range(tn // 4):
            warp.add_patch(Rectangle((h * stride_n, g * stride_m), stride_n, stride_m, fill=False,
                                     edgecolor="gray", linestyle=":", linewidth=1))
    for ax, (rows, cols) in ((block, (bm, bn)), (warp, (wm, wn)), (lanes, (stride_m, stride_n))):
        ax.set_xlim(0, cols)
        ax.set_ylim(rows, 0)
        ax.set_aspect("equal")
    lanes.set_xlabel("column of C (within one dotted box)")
    block.set_ylabel("row of C")
    block.set_xticks(range(0, bn + 1, max(wn, bn // 2)))
    block.set_yticks(range(0, bm + 1, max(wm, bm // 2)))
    warp.set_xticks(range(0, wn + 1, max(stride_n, wn // 2)))
    warp.set_yticks(range(0, wm + 1, max(stride_m, wm // 2)))
    lanes.set_xticks(range(0, stride_n + 1, 4 if stride_n <= 32 else 8))
    lanes.set_yticks(range(0, stride_m + 1, 4 if stride_m <= 32 else 8))
    block.set_title(f"block tile {bm} x {bn}:\n{(bm // wm) * (bn // wn)} warp tiles of {wm} x {wn}", fontsize=TEXT)
    warp.set_title("warp 0: outputs of lane 0\n(red) and lane 1 (orange)", fontsize=TEXT)
    lanes.set_title(f"lane grid {wm // tm} x {wn // tn}: the lane that owns each 4 x 4 square", fontsize=TEXT)
    fig.suptitle(wrap(f"{tm} x {tn} outputs per lane, as {tm // 4} x {tn // 4} squares of 4 x 4: {stride_m} rows "
                      f"and {stride_n} columns apart"), fontsize=TEXT)
    fig.tight_layout()
    return fig


def quarter_warps(params: dict[str, int] | None = None) -> Figure:
    """Kernel 10's lane grid beside kernel 10b's, each lane in its place and coloured by its quarter-warp, with what a
    128-bit fragment load of each operand costs: distinct float4s per quarter-warp, and wavefronts by the H100's rule
    (`lds128_wavefronts`). `params`: the tiles of either kernel (10b's other options are ignored). Patches carry a
    gid ("<kernel> lane <l>")."""
    spec = catalog.get("warp_tiling")
    p = spec.full_params({k: v for k, v in (params or {}).items() if k in spec.choices})
    rows, cols = p["WM"] // p["TM"], p["WN"] // p["TN"]
    per_k = {"A": p["TM"] // 4, "B": p["TN"] // 4}  # float4 loads of each operand per k
    shades = ("#f4a582", "#92c5de", "#b8e186", "#fdd49e")
    fig, axes = plt.subplots(1, 2, figsize=(WIDTH, 2.8 * rows / cols + 2.7))  # panels about 2.8 in wide
    for ax, kernel, name in zip(axes, ("warp_tiling", "pipelined_warp_tiling"), ("kernel 10", "kernel 10b")):
        where = [lane_position(lane, p, kernel) for lane in range(32)]
        for lane, (m, n) in enumerate(where):
            ax.add_patch(Rectangle((n, m), 1, 1, facecolor=shades[lane // 8], edgecolor="white", linewidth=1.5,
                                   gid=f"{kernel} lane {lane}"))
            ax.text(n + 0.5, m + 0.5, str(lane), ha="center", va="center")
        quarters = [where[8 * q:8 * q + 8] for q in range(4)]
        distinct = {"A": [len({m for m, _ in q}) for q in quarters], "B": [len({n for _, n in q}) for q in quarters]}
        waves = {op: lds128_wavefronts(distinct[op]) for op in distinct}
        total = sum(per_k[op] * waves[op] for op in per_k)
        ax.set(xlim=(0, cols), ylim=(rows, 0), aspect="equal")
        ax.set_xticks([c + 0.5 for c in range(cols)], range(cols))
        ax.set_yticks([r + 0.5 for r in range(rows)], range(rows))
        ax.tick_params(length=0)
        ax.set_xlabel("\n".join(["lane's column (its float4s of B)", ""]
                                 + [f"{op}: {distinct[op][0]} float4s per quarter-warp,\n{waves[op]} wavefronts per load"
                                    for op in per_k] + [f"per k: {total} wavefronts"]))
        ax.set_title(name, fontsize=TEXT)
    axes[0].set_ylabel("lane's row (its float4s of A)")
    fig.suptitle(wrap(f"The {rows} x {cols} lanes of a warp, coloured by quarter-warp (lanes 0-7, 8-15, ...); "
                      f"{per_k['A']} loads of A and {per_k['B']} of B per k"), fontsize=TEXT)
    fig.tight_layout()
    return fig


def stream_k(params: dict[str, int] | None = None, size: int = 4096, slots: int | None = None) -> Figure:
    """Kernel 10b's two ways to share the tiles of C among the `slots` blocks the GPU holds at once (default: its SMs
    x the blocks of this instance that fit on one), at M = N = K = `size`: the tiles in grouped order, those of whole
    waves and those stream-K cuts along K; and the work of a few blocks over time, one block per tile against stream-K
    (`schedule.stream_k`), a tile's k-steps taking one unit. Patches carry a gid ("tile <t>", "piece <b>")."""
    from . import hardware, schedule

    p = catalog.get("pipelined_warp_tiling").full_params(params)
    if slots is None:
        slots = hardware.ceilings()["sms"] * model.resident("pipelined_warp_tiling", p)["blocks"]
    tiles_m, tiles_n = -(-size // p["BM"]), -(-size // p["BN"])
    tiles, steps = tiles_m * tiles_n, -(-size // p["BK"])
    shared = tiles % slots
    pieces = schedule.stream_k(tiles, steps, slots)
    fig = plt.figure(figsize=(WIDTH, 8.6))
    grid = fig.add_gridspec(3, 2, height_ratios=[1.3, 1, 1], width_ratios=[1, 1.25])
    top, note = fig.add_subplot(grid[0, 0]), fig.add_subplot(grid[0, 1])
    per_tile, streamed = fig.add_subplot(grid[1, :]), fig.add_subplot(grid[2, :])
    wave_colours = ("#4c78a8", "#9ecae9")
    for t in range(tiles):  # drawn to scale: C is size x size
        r, c = schedule.tile_position(t, tiles_m, tiles_n)
        colour = "#f58518" if t < shared else wave_colours[(t - shared) // slots % 2]
        top.add_patch(Rectangle((c * p["BN"], r * p["BM"]), p["BN"], p["BM"], facecolor=colour, edgecolor="white",
                                linewidth=0.4, gid=f"tile {t}"))
    top.set(xlim=(0, tiles_n * p["BN"]), ylim=(tiles_m * p["BM"], 0), aspect="equal", xticks=[], yticks=[])
    top.set_title(f"C, {size} x {size}", fontsize=TEXT)
    note.axis("off")
    whole = tiles - shared
    note.text(0, 0.5, "\n".join([
        f"{tiles:,} tiles of {p['BM']} x {p['BN']},", f"{steps:,} k-steps each;", f"{slots} blocks at once.", "",
        f"blue: {whole // slots} whole waves,", f"{whole:,} tiles, light and dark", "",
        f"orange: {shared} tiles left over,", f"cut along K into {slots} runs", f"of about {shared * steps / slots:,.0f} "
        "k-steps"]), va="center", ha="left")
    shown = sorted({round(x) for x in np.linspace(0, slots - 1, 6)})
    one_per_tile = [[schedule.Piece(t, 0, steps) for t in range(b, tiles, slots)] for b in range(slots)]
    for ax, plan_, label in ((per_tile, one_per_tile, "one block per tile"), (streamed, pieces, "stream-K")):
        for row, b in enumerate(shown):
            t0 = 0.0
            for piece in plan_[b]:
                cut = piece.steps < steps
                colour = "#f58518" if cut else wave_colours[int(t0) % 2]
                ax.add_patch(Rectangle((t0, row - 0.35), piece.steps / steps, 0.7, facecolor=colour,
                                       edgecolor="white", linewidth=1, gid=f"piece {b}"))
                t0 += piece.steps / steps
        end = max(sum(x.steps for x in ps) for ps in plan_) / steps
        ax.axvline(end, color="black", linestyle="--", linewidth=1)
        ax.set(xlim=(0, math.ceil(tiles / slots) * 1.02), ylim=(len(shown) - 0.5, -0.5))
        ax.set_yticks(range(len(shown)), [f"block {b}" for b in shown])
        ax.set_title(f"{label}: the last block ends at {end:.2f} tile times", fontsize=TEXT)
    streamed.set_xlabel("time, in tiles of work (a tile's k-steps take 1)")
    fig.tight_layout()
    return fig


def gpu_diagram(params: dict[str, Any]) -> Figure:
    """The GPU as the primer draws it, from its own parameters (`memory.parameters`): one SM in detail (its four
    warp schedulers with their lanes and registers, shared memory and L1), the grid of all its SMs, L2 and DRAM,
    each level with its measured latency and bandwidth where the memory probes recorded them."""
    import math

    missing = "?"  # the stamp says what is not yet recorded
    lat, bw = params.get("latency", {}), params.get("bandwidth", {})

    def latency(level: str) -> str:
        return f"{lat[level]['cycles']:,.0f} clocks" if level in lat else missing

    def copy(level: str) -> str:
        return f"{bw[level]['gbs'] / 1e3:.1f} TB/s" if level in bw else missing

    def size(key: str, unit: str, scale: int) -> str:
        return f"{params[key] / scale:,.0f} {unit}" if key in params else missing

    fig, ax = plt.subplots(figsize=(WIDTH, 6.4))
    ax.set(xlim=(0, 10), ylim=(0, 9.2))
    ax.axis("off")

    def box(x: float, y: float, w: float, h: float, colour: str, label: str = "") -> None:
        ax.add_patch(Rectangle((x, y), w, h, facecolor=colour, edgecolor="black", linewidth=1))
        if label:
            ax.text(x + w / 2, y + h / 2, label, ha="center", va="center", linespacing=1.3)

    sms, schedulers = params["sms"], catalog.SCHEDULERS_PER_SM
    regs = f"{params['registers_per_sm'] // schedulers:,}" if "registers_per_sm" in params else missing
    box(0.1, 3.6, 6.6, 5.5, "#eef3fb")
    ax.text(3.4, 8.8, f"one SM of {sms}, {params['clock_mhz']:,.0f} MHz", weight="bold", ha="center", va="center")
    for i in range(schedulers):
        box(0.3 + (i % 2) * 3.15, 6.85 - (i // 2) * 1.9, 3.0, 1.75, "#c9daf2",
            f"warp scheduler\n1 instruction/clock\n{params['fp32_lanes_per_sm'] // schedulers} FP32 lanes\n"
            f"{regs} registers")
    box(0.3, 3.75, 6.15, 1.0, "#b6d7a8", f"{size('l1_smem_bytes', 'KiB', 1024)}: shared memory "
        f"(≤ {size('smem_per_sm', 'KiB', 1024)}) + L1\nshared: {latency('shared')}; L1 hit: {latency('L1')}")
    cols = math.ceil(math.sqrt(sms * 0.8))
    cell = min(2.9 / cols, 4.6 / math.ceil(sms / cols))
    for i in range(sms):
        ax.add_patch(Rectangle((7.0 + (i % cols) * cell, 8.4 - (i // cols + 1) * cell), cell * 0.8, cell * 0.8,
                               facecolor="#e45756" if i == 0 else "#4c78a8", edgecolor="none"))
    ax.text(8.45, 8.8, f"{sms} SMs", weight="bold", ha="center", va="center")
    box(0.1, 2.2, 9.8, 1.15, "#f6e3c6",
        f"L2 cache: {size('l2_bytes', 'MiB', 2**20)}, shared by all SMs\nhit: {latency('L2')}; copy: {copy('L2')}")
    box(0.1, 0.35, 9.8, 1.5, "#d9ead3",
        f"DRAM: {size('dram_bytes', 'GiB', 2**30)}\nload: {latency('DRAM')}; copy: {copy('DRAM')}")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    return stamp(fig, params["provenance"])
