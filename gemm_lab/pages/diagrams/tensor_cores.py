"""Pictures of ideas, drawn by code from a kernel's own parameters: another instance redraws them.

`plots` charts measurements; this module draws what a kernel does (which tiles a block reads, which lanes touch
which bank, when copies and math overlap). Where a picture needs durations it takes them from a stated model,
and says so on its face. Every figure keeps `style`'s rule: text at least the page's body size at 800 px.
New pictures for the chapters belong here.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle

from ...models import banks, model
from ... import catalog
from .. import style
from ...models.banks import lane_position  # the lane grids' numbering, which the bank model reads too
from ..style import TEXT, WIDTH, stamp, wrap


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


def _middle_thread(rows: int, cols: int) -> int:
    """The thread whose tile sits near the middle of a rows x cols grid of thread tiles (row-major thread index),
    so that a highlighted tile touches no edge of the picture."""
    return rows // 2 * cols + cols // 2


def _cells(ax, row: int, col: int, rows: int, cols: int, colour: str, gid: str = "", **kw: Any) -> None:
    """Fill rows x cols cells whose top-left cell is (row, col), each cell its own patch (gid numbered)."""
    for i in range(rows):
        for j in range(cols):
            ax.add_patch(Rectangle((col + j, row + i), 1, 1, facecolor=colour, edgecolor="white", linewidth=0.4,
                                   gid=f"{gid} {i} {j}" if gid else None, **kw))


def outer_product(params: dict[str, int] | None = None, thread: int | None = None, kk: int | None = None) -> Figure:
    """One thread of the 2-D thread-tile kernel (05_thread_tile_2d.cu) at one step kk: the TM values of column kk
    of the A tile and the TN values of row kk of the B tile it loads into registers, and the TM x TN outputs their
    outer product updates. Left, the block's tiles in shared memory and its C tile, to scale; right, the thread's
    registers. Patches carry gids ("a i", "b j", "acc i j") so tests can count what is drawn."""
    p = catalog.get("thread_tile_2d").full_params(params)
    bm, bn, bk, tm, tn = (p[x] for x in ("BM", "BN", "BK", "TM", "TN"))
    rows, cols = bm // tm, bn // tn  # the block's grid of thread tiles
    t = _middle_thread(rows, cols) if thread is None else thread
    kk = bk // 2 if kk is None else kk
    if not (0 <= t < rows * cols and 0 <= kk < bk):
        raise ValueError(f"thread {t} and kk {kk}: a block of {rows * cols} threads, BK = {bk}")
    tr, tc = t // cols * tm, t % cols * tn  # as the kernel computes them
    fig, (tiles, regs) = plt.subplots(1, 2, figsize=(WIDTH, 4.4), gridspec_kw={"width_ratios": [1.2, 1]})
    gap = max(bk, 0.1 * max(bm, bn))
    x0, y0 = bk + gap, bk + gap  # where C starts; A to its left, B above it
    parts = {"As": (0, y0, bk, bm), "Bs": (x0, 0, bn, bk), "C": (x0, y0, bn, bm)}
    for x, y, w, h in parts.values():
        tiles.add_patch(Rectangle((x, y), w, h, facecolor="#f2f2f2", edgecolor="black", linewidth=1))
    for colour, (x, y, w, h) in (("C0", (kk, y0 + tr, 1, tm)), ("C1", (x0 + tc, kk, tn, 1)),
                                 ("C2", (x0 + tc, y0 + tr, tn, tm))):
        tiles.add_patch(Rectangle((x, y), w, h, facecolor=colour, edgecolor=colour, linewidth=2.5))
    tiles.plot([kk + 1, x0 + tc], [y0 + tr + tm / 2] * 2, color="C0", linestyle=":", linewidth=1.5)
    tiles.plot([x0 + tc + tn / 2] * 2, [kk + 1, y0 + tr], color="C1", linestyle=":", linewidth=1.5)
    tiles.text(-0.2 * gap, y0 + bm / 2, f"As: {bm} x {bk}", ha="right", va="center", rotation=90)
    tiles.text(x0 + bn / 2, -0.2 * gap, f"Bs: {bk} x {bn}", ha="center", va="bottom")
    tiles.text(x0 + bn / 2, y0 + bm + 0.2 * gap, f"the C tile, {bm} x {bn}", ha="center", va="top")
    tiles.set_xlim(-1.3 * gap, x0 + bn + 1)
    tiles.set_ylim(y0 + bm + 1.5 * gap, -1.3 * gap)
    tiles.set_aspect("equal")
    tiles.axis("off")
    for i in range(tm):
        regs.add_patch(Rectangle((0, 1 + i), 1, 1, facecolor="C0", edgecolor="white", gid=f"a {i}"))
        for j in range(tn):
            regs.add_patch(Rectangle((1.5 + j, 1 + i), 1, 1, facecolor="C2", edgecolor="white", gid=f"acc {i} {j}"))
    for j in range(tn):
        regs.add_patch(Rectangle((1.5 + j, -0.5), 1, 1, facecolor="C1", edgecolor="white", gid=f"b {j}"))
    regs.text(1.5 + tn / 2, -0.8, f"b: row kk of Bs, {tn} values", ha="center", va="bottom")
    regs.text(-0.3, 1 + tm / 2, f"a: column kk of As,\n{tm} values", ha="right", va="center", rotation=90)
    regs.text(1.5 + tn / 2, 1.4 + tm, f"acc[i][j] += a[i] × b[j]:\n{tm} x {tn} accumulators", ha="center", va="top")
    regs.set_xlim(-2.2, 2 + tn)
    regs.set_ylim(3.8 + tm, -2.2)
    regs.set_aspect("equal")
    regs.axis("off")
    fig.suptitle(wrap(f"Thread {t} at step kk = {kk}: {tm} + {tn} loads from shared memory into registers feed "
                      f"{tm} x {tn} = {tm * tn} FFMAs"), fontsize=TEXT)
    fig.tight_layout()
    return fig


def transposed_a(params: dict[str, int] | None = None, thread: int | None = None, kk: int | None = None) -> Figure:
    """The A tile of the vectorized kernel (06_vectorized.cu) as it sits in global memory (row-major, BM x BK) and as
    the kernel stores it in shared memory, transposed (As[k][m], BK x BM). Green: one thread's TM values of column kk,
    which it reads for its outer product: strided in A, contiguous (TM/4 float4s) in As. Red: one float4 that the
    copy reads along a row of A and writes down a column of As (four scalar stores). Patches carry gids ("read ...",
    "copy ...") so tests can count what is drawn."""
    p = catalog.get("vectorized").full_params(params)
    bm, bn, bk, tm, tn = (p[x] for x in ("BM", "BN", "BK", "TM", "TN"))
    t = _middle_thread(bm // tm, bn // tn) if thread is None else thread
    kk = bk // 2 if kk is None else kk
    threads = (bm // tm) * (bn // tn)
    if not (0 <= t < threads and 0 <= kk < bk):
        raise ValueError(f"thread {t} and kk {kk}: a block of {threads} threads, BK = {bk}")
    tr = t // (bn // tn) * tm
    item = t % (bm * bk // 4)  # a float4 of the copy loop (thread item % threads copies it): row r, columns c..c+3
    r, c = item // (bk // 4), item % (bk // 4) * 4
    fig = plt.figure(figsize=(WIDTH, 5.2))
    grid = fig.add_gridspec(2, 2, width_ratios=[max(bk, 0.25 * bm), bm], height_ratios=[bk, bm - bk])
    a, at, note = fig.add_subplot(grid[:, 0]), fig.add_subplot(grid[0, 1]), fig.add_subplot(grid[1, 1])
    for ax, (h, w) in ((a, (bm, bk)), (at, (bk, bm))):
        ax.add_patch(Rectangle((0, 0), w, h, facecolor="#f2f2f2", edgecolor="black", linewidth=1))
        ax.set_xlim(-1, w + 1)
        ax.set_ylim(h + 1, -1)
        ax.set_aspect("equal")
        ax.set_xticks([0, w])
        ax.set_yticks([0, h])
        ax.spines[:].set_visible(False)

    def mark(ax, x: float, y: float, w: float, h: float, colour: str, gid: str) -> None:
        ax.add_patch(Rectangle((x, y), w, h, facecolor=colour, edgecolor=colour, linewidth=2.5, gid=gid))

    for g in range(tm // 4):  # the thread's float4s of column kk: strided in A, side by side in As
        mark(a, kk, tr + 4 * g, 1, 4, "C2", f"read A {g}")
        mark(at, tr + 4 * g + 0.15, kk, 3.7, 1, "C2", f"read As {g}")
    mark(a, c, r, 4, 1, "C3", "copy A")
    mark(at, r, c, 1, 4, "C3", "copy As")
    a.set_title(f"A tile\n{bm} x {bk}\n(row-major)", fontsize=TEXT)
    a.set_xlabel("k")
    a.set_ylabel("m")
    at.set_title(f"As[k][m] in shared memory: {bk} x {bm}", fontsize=TEXT)
    at.set_xlabel("m")
    at.set_ylabel("k")
    note.axis("off")
    note.text(0, 0.95, wrap(f"green: thread {t}'s {tm} values of column kk = {kk}: {bk} floats apart in A, side by "
                            f"side in As, read as {tm // 4} float4 load{'s' if tm > 4 else ''}", TEXT, 4.4), va="top",
              color="C2", transform=note.transAxes)
    note.text(0, 0.35, wrap(f"red: the float4 thread {item % threads} copies, read along a row of A, written down "
                            "a column of As: four scalar stores", TEXT, 4.4), va="top", color="C3",
              transform=note.transAxes)
    fig.suptitle(wrap("Storing A transposed makes a thread's column of A a row in shared memory"), fontsize=TEXT)
    fig.tight_layout()
    return fig


def float4_lanes(params: dict[str, int] | None = None) -> Figure:
    """Which float4s of one row of the B tile (Bs[kk][·]) and of the transposed A tile (As[kk][·]) each lane of warp 0
    reads in the vectorized kernel (06_vectorized.cu), one colour per load instruction. A thread's TN columns are
    TN/4 groups of four spaced BN/(TN/4) apart, so the eight lanes of a quarter-warp read eight neighbouring float4s
    (128 contiguous bytes) of Bs; the lanes that share a row of C read the same float4 of As (a broadcast). Patches
    carry gids ("B lane float4", "A lane float4") so tests can check them against `banks.sites`."""
    p = catalog.get("vectorized").full_params(params)
    bm, bn, tm, tn = (p[x] for x in ("BM", "BN", "TM", "TN"))
    cols = bn // tn  # threads along a row of the C tile
    stride = bn // (tn // 4)  # GROUP_STRIDE: columns between a thread's float4 groups
    reads = {
        "Bs": (bn // 4, [[(t % cols * 4 + g * stride) // 4 for g in range(tn // 4)] for t in range(32)]),
        "As": (bm // 4, [[(t // cols * tm + 4 * h) // 4 for h in range(tm // 4)] for t in range(32)]),
    }
    fig, axes = plt.subplots(1, 2, figsize=(WIDTH, 4.4))
    for ax, (name, (float4s, lanes)) in zip(axes, reads.items()):
        for lane, got in enumerate(lanes):
            for load, f in enumerate(got):
                ax.add_patch(Rectangle((f, lane), 1, 1, facecolor=f"C{load}", edgecolor="none",
                                       gid=f"{name[0]} {lane} {f}"))
        for q in range(1, 4):
            ax.axhline(8 * q, color="gray", linewidth=0.8, linestyle="--")
        ax.set_xlim(0, float4s)
        ax.set_ylim(32, 0)
        ax.set_xticks(range(0, float4s + 1, max(4, float4s // 4)))
        ax.set_yticks(range(0, 33, 8))
        ax.set_xlabel(f"float4 of {name}[kk][·]")
        ax.set_title(f"{name}: {(tn if name == 'Bs' else tm) // 4} loads per lane", fontsize=TEXT)
    axes[0].set_ylabel("lane (dashed: quarter-warps)")
    handles = [Rectangle((0, 0), 1, 1, facecolor=f"C{i}") for i in range(max(tm, tn) // 4)]
    fig.legend(handles, [f"load {i + 1}" for i in range(len(handles))], loc="lower center", ncol=len(handles),
               frameon=False)
    fig.suptitle(wrap("Warp 0 at one kk: each quarter-warp reads eight neighbouring float4s of Bs (128 bytes) and "
                      "one float4 of As that all its lanes share"), fontsize=TEXT)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
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


def _timeline(ax, bars: list[tuple], rows: tuple[str, ...], right: float = 0) -> float:
    """Draw (row, start, length, label[, colour]) bars on rows of a timeline, up to `right` at least (a bar without a
    colour takes its row's); label each bar where its label does not run into the one before it on its row; return
    where the last bar ends."""
    lo, end = min(b[1] for b in bars), max(b[1] + b[2] for b in bars)
    ax.set_xlim(lo - 50, max(end, right) + 50)
    clocks_per_px = (max(end, right) - lo + 100) / (ax.get_position().width * ax.figure.get_figwidth() * style.DPI)
    label_end: dict[int, float] = {}
    for row, start, length, label, *colour in bars:
        ax.add_patch(Rectangle((start, row - 0.35), length, 0.7, color=colour[0] if colour else f"C{row}", alpha=0.75))
        half = 0.3 * TEXT * style.DPI / 72 * len(label) * clocks_per_px + 4 * clocks_per_px
        middle = start + length / 2
        if label and middle - half >= label_end.get(row, -float("inf")):
            ax.text(middle, row, label, ha="center", va="center")
            label_end[row] = middle + half
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ax.set_yticks(range(len(rows)), rows)
    ax.invert_yaxis()
    return end


def load_latency() -> tuple[float, str]:
    """Clocks for one global load to come back, as the pipeline timelines draw it: the GPU primer's measured DRAM
    latency (a pointer chase, `memory`), the worst case of a tile load; 600 clocks, assumed, before it was recorded."""
    from ...models import memory

    measured = memory.parameters().get("latency", {}).get("DRAM")
    return (measured["cycles"], "measured DRAM latency, GPU primer") if measured else (600.0, "assumed")


def pipeline(params: dict[str, int], steps: int = 3, latency: float | None = None) -> Figure:
    """A schematic timeline of main-loop steps of one block: when tiles travel and when FFMAs run.

    One lane per kind of work; each bar is numbered and coloured by the tile (the BK-deep slice of A and B) it works
    on, so one tile can be followed from its load to its FFMAs. Durations are a model, not a measurement: a step's
    FFMAs take BM*BN*BK / (128 / blocks) clocks (the SM's 128 FP32 lanes shared by the blocks resident on it, as the
    occupancy model `model.resident` counts them for this instance), a global load `latency` clocks (by default
    `load_latency()`), a shared store and a __syncthreads a few dozen. PREFETCH 0/1 is 08_prefetch.cu, STAGES is
    09_multistage.cu.
    """
    kernel = "multistage" if "STAGES" in params else "prefetch"
    params = catalog.get(kernel).full_params(params)
    occupancy = model.resident(kernel, params)
    blocks_per_sm = occupancy["blocks"]
    latency, origin = (latency, "given") if latency is not None else load_latency()
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
        for s in range(steps):  # wait for tile s, sync, refill the buffer step s - 1 read, multiply
            start = max(t, landed[s])
            n = s + ahead
            bars += [barrier(stages, start), tile(n % stages, start + sync, latency, n),
                     tile(stages + 1, start + sync, compute, s)]
            landed[n] = start + sync + latency
            t = start + sync + compute
        loop = landed[0]
        title = f"cp.async, {stages} stages: copies run {ahead} step(s) ahead, straight into shared memory"
    else:
        rows = ("loads of tile n", "registers → shared", "__syncthreads", "FFMAs on tile n")
        if params.get("PREFETCH"):
            bars += [tile(0, -latency - store - sync, latency, 0), tile(1, -store - sync, store, 0), barrier(2, -sync)]
            for s in range(steps):
                step = max(compute, latency)
                bars += [tile(0, t, latency, s + 1), tile(3, t, compute, s), tile(1, t + step, store, s + 1),
                         barrier(2, t + step + store)]
                t += step + store + sync
            title = "PREFETCH=1: the next tile loads during the FFMAs; one __syncthreads per step"
        else:
            for s in range(steps):
                bars += [tile(0, t, latency, s), tile(1, t + latency, store, s), barrier(2, t + latency + store),
                         tile(3, t + latency + store + sync, compute, s),
                         barrier(2, t + latency + store + sync + compute)]
                t += latency + store + 2 * sync + compute
            title = "PREFETCH=0: load, wait, store, sync, multiply, sync: the FFMAs wait for every tile"
    fig, ax = plt.subplots(figsize=(WIDTH, 1.9 + 0.4 * len(rows)))
    first = min(b[1] for b in bars)  # the clock starts with the first load
    bars = [(row, start - first, *rest) for row, start, *rest in bars]
    _timeline(ax, bars, rows, right=t - first)
    ax.set_xlim(left=0)
    ax.set_xlabel("time in SM clock cycles (model durations)")
    ax.set_title(wrap(title, style.TITLE), fontsize=style.TITLE)
    busy = steps * compute / (t - loop)
    fig.tight_layout()
    return stamp(fig, f"Bars are numbered and coloured by tile n (grey: a barrier). Model: FFMAs {compute:.0f} clk per "
                      f"step ({params['BM']}x{params['BN']}x{params['BK']} tile, {blocks_per_sm} blocks/SM by the "
                      f"occupancy model, limited by {occupancy['limited_by']}), load latency {latency:.0f} clk "
                      f"({origin}); FFMA busy {busy:.0%} of the steps shown")


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
    ax.set_title(wrap(f"Warp specialisation: {stages} stages, {consumers} consumer warpgroup(s), BM = {params['BM']}: "
                      "copies run ahead while the tensor cores work", style.TITLE), fontsize=style.TITLE)
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
    the first two trips round the ring. Stage patches carry a gid ("stage s") so tests can count them."""
    from matplotlib.patches import Ellipse, FancyArrowPatch

    p = catalog.get("wgmma_ws_tf32").full_params(params)
    stages, consumers, cluster = p["STAGES"], p["CONSUMERS"], p["CLUSTER"]
    step = stages + 1 if step is None else step
    held = ring_moment(stages, step)
    landing_kib = (p["BM"] + 64 * consumers) * 32 * 4 / 1024  # A's box and B's boxes of one 32-deep step
    arrivals = consumers * 4 * cluster
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
                        f"{consumers} consumer warpgroup(s)", style.TITLE), fontsize=style.TITLE)
    rows = (("step i", lambda i: i), ("stage i % S", lambda i: i % stages), ("trip i / S", lambda i: i // stages),
            ("producer: empty parity", lambda i: (i // stages & 1) ^ 1),
            ("consumers: full parity", lambda i: i // stages & 1))
    label_w, columns = 2.8, 2 * stages
    # the producer's first trip passes at once: a fresh barrier
    _parity_table(table, rows, columns, stages, label_w, fresh=lambda r, i: i < stages and r == 3)
    table.set_title(wrap(f"Who waits for which parity. full: 1 arrival + {landing_kib:.0f} KiB landed; empty: "
                         f"{arrivals} arrivals ({consumers} consumer(s) x 4 warps x {cluster} block(s)). Red: a fresh "
                         "barrier passes parity 1 at once", TEXT), fontsize=TEXT)
    fig.subplots_adjust(left=0.02, right=0.98, top=0.93, bottom=0.01)
    return fig


def cluster_reads(tiles: dict[str, tuple[int, int, int]]) -> Figure:
    """What one cluster reads per k: for each name, (block rows, block columns, blocks stacked along M that share B
    by multicast), the cluster's tile of C drawn to scale beside the column of A and the row of B it reads for one
    k, and the bytes per k for every 65,536 outputs (a 256 x 256 tile's worth). Patches carry a gid ("block b")."""
    fig, axes = plt.subplots(1, len(tiles), figsize=(WIDTH, 5.0))
    axes = np.atleast_1d(axes)
    top = max(max(bm * c, bn) for bm, bn, c in tiles.values())
    strip = 0.07 * top
    for ax, (name, (bm, bn, cluster)) in zip(axes, tiles.items()):
        rows = bm * cluster  # A: one value per row of the cluster's tile; B: one per column, multicast to all
        inside = bn / top >= 0.4  # room for a block's label inside it
        for b in range(cluster):
            ax.add_patch(Rectangle((0, b * bm), bn, bm, facecolor="#cfe0f5", edgecolor="black", linewidth=1.2,
                                   gid=f"block {b}"))
            ax.text(bn / 2 if inside else bn + 0.04 * top, b * bm + bm / 2, f"block {b}\n{bm} x {bn}",
                    ha="center" if inside else "left", va="center")
        ax.add_patch(Rectangle((-1.5 * strip, 0), strip, rows, facecolor="C0", alpha=0.85))
        ax.add_patch(Rectangle((0, -1.5 * strip), bn, strip, facecolor="C1", alpha=0.85))
        ax.text(-1.9 * strip, rows / 2, f"A: {rows} rows", rotation=90, ha="right", va="center", color="C0")
        ax.text(0, -1.9 * strip, f"B: {bn} columns", ha="left", va="bottom", color="C1")
        per_k = (rows + bn) * 4 * 65536 / (rows * bn)
        ax.set_xlim(-3.2 * strip, top * 1.02)
        ax.set_ylim(top * 1.02, -3.4 * strip)
        ax.set_aspect("equal")
        ax.axis("off")
        ax.set_title(wrap(f"{name}: ({rows} + {bn}) x 4 B per k, {per_k / 1024:.1f} KiB per 65,536 outputs", TEXT,
                          0.95 * WIDTH / len(tiles)), fontsize=TEXT)
    fig.suptitle(wrap("One cluster's tile of C, to scale, and the values of A and B it reads from L2 for each k "
                      "(its blocks share B by multicast)", style.TITLE), fontsize=style.TITLE)
    fig.tight_layout()
    return fig


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


QUARTER_SHADES = ("#f4a582", "#92c5de", "#b8e186", "#fdd49e")  # lanes 0-7, 8-15, 16-23, 24-31


def quarter_warps(params: dict[str, int] | None = None) -> Figure:
    """Kernel 10's lanes beside kernel 10b's, drawn from each kernel's lane code (`lane_position`): on top the warp's
    lane grid, each lane coloured by its quarter-warp; below, for one 128-bit fragment load of A and one of B, the
    float4s each quarter-warp reads, placed on the 32 banks (a float4 covers four), labelled with the grid row (A)
    or column (B) it holds. A thick line parts the half-warps. No wavefronts are counted here: chapter 7b derives
    them from this picture and Nsight Compute's counts (`banks.lds128_wavefronts`). `params`: either kernel's tiles
    (10b's other options are ignored). Patches carry gids ("<kernel> lane <l>", "<kernel> <A|B> q<q> float4 <f>")."""
    spec = catalog.get("warp_tiling")
    p = spec.full_params({k: v for k, v in (params or {}).items() if k in spec.choices})
    rows, cols = p["WM"] // p["TM"], p["WN"] // p["TN"]
    kernels = (("warp_tiling", "kernel 10 (chapter 7)"), ("pipelined_warp_tiling", "kernel 10b"))
    grid_h = min(3.4, 2.4 * rows / cols)  # inches of the lane grids
    head, gap, reads = 1.05, 0.75, 1.25  # inches: the figure's title, the space for a row's labels, a reads panel
    height = head + grid_h + 3 * gap + 2 * reads + 0.35
    fig = plt.figure(figsize=(WIDTH, height))
    grid = fig.add_gridspec(3, 2, height_ratios=[grid_h, reads, reads], hspace=gap / ((grid_h + 2 * reads) / 3),
                            wspace=0.12, top=1 - head / height, bottom=0.65 / height, left=0.14, right=0.98)
    per_bank_group = banks.BANKS * banks.WORD // 16  # float4s side by side on the 32 banks: 8
    for c, (kernel, name) in enumerate(kernels):
        lanes = fig.add_subplot(grid[0, c])
        where = [lane_position(lane, p, kernel) for lane in range(32)]
        for lane, (m, n) in enumerate(where):
            lanes.add_patch(Rectangle((n, m), 1, 1, facecolor=QUARTER_SHADES[lane // 8], edgecolor="white",
                                      linewidth=1.5, gid=f"{kernel} lane {lane}"))
            lanes.text(n + 0.5, m + 0.5, str(lane), ha="center", va="center")
        lanes.set(xlim=(0, cols), ylim=(rows, 0), aspect="equal")
        lanes.set_xticks([x + 0.5 for x in range(cols)], range(cols))
        lanes.set_yticks([y + 0.5 for y in range(rows)], range(rows))
        lanes.tick_params(length=0)
        lanes.set_title(name, fontsize=TEXT)
        lanes.set_xlabel("its column: float4 of B")
        if c == 0:
            lanes.set_ylabel("its row:\nfloat4 of A")
        for r, (operand, float4s, per_k) in enumerate(banks.fragment_loads(kernel, p), start=1):
            ax = fig.add_subplot(grid[r, c])
            quarters = [float4s[i:i + 8] for i in range(0, 32, 8)]
            for q, quarter in enumerate(quarters):
                stacked: dict[int, int] = {}
                distinct = sorted(set(quarter))
                for f in distinct:
                    group = f % per_bank_group
                    depth = sum(g % per_bank_group == group for g in distinct)  # float4s on the same banks
                    level = stacked.get(group, 0)
                    stacked[group] = level + 1
                    ax.add_patch(Rectangle((4 * group, q + 0.08 + 0.84 * level / depth), 4, 0.84 / depth,
                                           facecolor=QUARTER_SHADES[q], edgecolor="black", linewidth=0.8,
                                           gid=f"{kernel} {operand} q{q} float4 {f}"))
                    ax.text(4 * group + 2, q + 0.5, ("r" if operand == "A" else "c") + str(f), ha="center",
                            va="center")
            ax.axhline(2, color="black", linewidth=2.5)
            ax.set(xlim=(0, banks.BANKS), ylim=(4, 0))
            ax.set_xticks(range(0, banks.BANKS + 1, 8))
            ax.set_yticks([q + 0.5 for q in range(4)], [f"{8 * q}-{8 * q + 7}" for q in range(4)] if c == 0 else [])
            ax.tick_params(axis="y", length=0)
            counts = sorted({len(set(q)) for q in quarters})
            ax.set_title(wrap(f"{operand}: {' or '.join(map(str, counts))} float4s per quarter-warp", TEXT,
                              0.45 * WIDTH), fontsize=TEXT)
            if c == 0:
                ax.set_ylabel("lanes")
            if r == 2:
                ax.set_xlabel("bank")
    fig.suptitle(wrap(f"A warp's {rows} x {cols} lanes, coloured by quarter-warp, and the float4s each quarter-warp "
                      "reads in one load of A and one of B (thick line: between half-warps)", style.TITLE),
                 fontsize=style.TITLE, y=1 - 0.08 / height, va="top")
    return fig


def stream_k(params: dict[str, int] | None = None, size: int = 4096, slots: int | None = None) -> Figure:
    """Kernel 10b's two ways to share the tiles of C among the `slots` blocks the GPU holds at once (default: its SMs
    x the blocks of this instance that fit on one), at M = N = K = `size`: the tiles in grouped order, those of whole
    waves and those stream-K cuts along K; and the work of a few blocks over time, one block per tile against stream-K
    (`schedule.stream_k`), a tile's k-steps taking one unit. Patches carry a gid ("tile <t>", "piece <b>")."""
    from ...models import hardware, schedule

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


MMA_M, MMA_N = 16, 8  # mma.sync's TF32 shapes are m16n8k4 and m16n8k8


def mma_fragments(k: int = 8) -> dict[str, dict[tuple[int, int], tuple[int, int]]]:
    """Which lane holds each element of mma.sync m16n8kK's operands (TF32, K = 4 or 8), and in which of its
    registers: {"A": {(row, col): (lane, register)}, "B": ..., "C": ...}, as the PTX manual fixes it. With
    lane = 4g + t, register i of A holds A[g + 8 (i % 2)][t + 4 (i // 2)], register i of B holds B[t + 4i][g], and
    register i of C holds C[g + 8 (i // 2)][2t + i % 2] (the layout 11_tf32_mma.cu's header states)."""
    if k not in (4, 8):
        raise ValueError(f"k = {k}: mma.sync multiplies TF32 as m16n8k4 or m16n8k8")
    out: dict[str, dict[tuple[int, int], tuple[int, int]]] = {"A": {}, "B": {}, "C": {}}
    for lane in range(32):
        g, t = lane // 4, lane % 4
        for i in range(k // 2):
            out["A"][(g + 8 * (i % 2), t + 4 * (i // 2))] = (lane, i)
        for i in range(k // 4):
            out["B"][(t + 4 * i, g)] = (lane, i)
        for i in range(4):
            out["C"][(g + 8 * (i // 2), 2 * t + i % 2)] = (lane, i)
    return out


REGISTER_COLOURS = ("#9ecae1", "#fdd0a2", "#a1d99b", "#dadaeb")  # light, so the lane numbers read in black


def mma_fragment(k: int = 8, lane: int = 5) -> Figure:
    """The fragments of one mma.sync m16n8kK (TF32), laid out as the product reads: B (K x 8) above C (16 x 8), A
    (16 x K) to C's left. Each element is labelled with the lane that holds it and coloured by which of that lane's
    registers holds it; `lane`'s elements are outlined. Patches carry a gid ("A lane 5") so tests can count them."""
    if not 0 <= lane < 32:
        raise ValueError(f"lane = {lane}: a warp has lanes 0 to 31")
    layout = mma_fragments(k)
    shapes = {"A": (MMA_M, k), "B": (k, MMA_N), "C": (MMA_M, MMA_N)}
    row_in = 0.27  # inches per row: cells are wider than tall, so two-digit lanes fit at body size
    fig = plt.figure(figsize=(WIDTH, row_in * (k + MMA_M) + 1.6))
    grid = fig.add_gridspec(2, 2, width_ratios=[k, MMA_N], height_ratios=[k, MMA_M], wspace=0.08, hspace=0.08)
    axes = {"A": fig.add_subplot(grid[1, 0]), "B": fig.add_subplot(grid[0, 1]), "C": fig.add_subplot(grid[1, 1])}
    for name, (rows, cols) in shapes.items():
        ax = axes[name]
        for (r, c), (owner, register) in layout[name].items():
            mine = owner == lane
            ax.add_patch(Rectangle((c, r), 1, 1, facecolor=REGISTER_COLOURS[register], edgecolor="black" if mine
                                   else "white", linewidth=2.2 if mine else 0.8, zorder=3 if mine else 2,
                                   gid=f"{name} lane {owner}"))
            ax.text(c + 0.5, r + 0.55, str(owner), ha="center", va="center", weight="bold" if mine else "normal",
                    zorder=4)
        ax.set_xlim(0, cols)
        ax.set_ylim(rows, 0)
        ax.set_xticks([])
        ax.set_yticks([])
        for spine in ax.spines.values():
            spine.set_visible(False)
        registers = len({reg for _, reg in layout[name].values()})
        label = f"{name}: {rows} x {cols}, {registers} register{'s' if registers > 1 else ''} per lane"
        if name == "B":
            ax.set_title(label, fontsize=TEXT)
        else:
            ax.set_xlabel(label)
    legend_ax = fig.add_subplot(grid[0, 0])
    legend_ax.axis("off")
    handles = [Rectangle((0, 0), 1, 1, facecolor=c, edgecolor="none") for c in REGISTER_COLOURS]
    legend_ax.legend(handles, [f"register {i}" for i in range(4)], loc="center", frameon=False, handlelength=1.2)
    g, t = lane // 4, lane % 4
    fig.suptitle(wrap(f"mma.sync m16n8k{k}, TF32: C (16 x 8) += A x B, one warp. Each cell: the lane (4g + t) "
                      f"that holds it; lane {lane} (g = {g}, t = {t}) outlined"), fontsize=TEXT)
    fig.subplots_adjust(left=0.02, right=0.98, top=0.84, bottom=0.07)
    return fig


def ldmatrix_rows(lane: int) -> tuple[int, int]:
    """(row, first k) of the 16-byte row of A's 16 x 8 mma tile whose address `lane` gives to ldmatrix.x4, as kernel
    11 computes it (11_tf32_mma.cu's lm_row, lm_col): lanes 0-7 rows 0-7 and 8-15 rows 8-15 at k 0-3, lanes 16-31 the
    same rows at k 4-7. Block i (lanes 8i to 8i + 7) fills register i of every lane."""
    return lane % 8 + 8 * (lane // 8 % 2), 4 * (lane // 16)


def ldmatrix_x4() -> Figure:
    """ldmatrix.x4 filling A's fragment of one mma.sync m16n8k8: the 16 x 8 tile as it lies in shared memory, each
    16-byte row (4 floats) labelled outside with the lane that gives its address, each element inside with the lane
    that receives it (4g + t for element (g, t) of its 8 x 4 block) and coloured by the register it lands in (the
    block's number). The receiving lanes are `mma_fragments(8)["A"]`'s. Patches carry a gid ("row r k c")."""
    layout = mma_fragments(8)["A"]
    fig, ax = plt.subplots(figsize=(WIDTH, 0.3 * MMA_M + 1.7))
    for lane in range(32):
        row, k0 = ldmatrix_rows(lane)
        ax.add_patch(Rectangle((k0, row), 4, 1, fill=False, edgecolor="black", linewidth=1.8, zorder=3))
        ax.text(k0 - 0.15 if k0 == 0 else k0 + 4.15, row + 0.5, f"lane {lane}", ha="right" if k0 == 0 else "left",
                va="center")
        for k in range(k0, k0 + 4):
            owner, register = layout[(row, k)]
            ax.add_patch(Rectangle((k, row), 1, 1, facecolor=REGISTER_COLOURS[register], edgecolor="white",
                                   linewidth=0.8, gid=f"row {row} k {k}"))
            ax.text(k + 0.5, row + 0.55, str(owner), ha="center", va="center")
    ax.set(xlim=(-2.2, 10.2), ylim=(MMA_M, 0), aspect="equal")
    ax.axis("off")
    handles = [Rectangle((0, 0), 1, 1, facecolor=c, edgecolor="none") for c in REGISTER_COLOURS]
    ax.legend(handles, [f"register {i}" for i in range(4)], loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=4,
              frameon=False, handlelength=1.2, columnspacing=1.0)
    fig.suptitle(wrap("ldmatrix.x4 for A (16 x 8) of one mma.sync: outside, the lane that gives a 16-byte row's "
                      "address; inside, the lane that receives each value"), fontsize=TEXT)
    fig.subplots_adjust(left=0.02, right=0.98, top=0.86, bottom=0.1)
    return fig


CHUNK = 16  # bytes: the unit the shared-memory swizzles permute (four banks)
LINE = 128  # bytes: one row of the 32 banks


def swizzle_offset(offset: int, span: int = 128) -> int:
    """Where byte `offset` of a box (from a 1024-byte aligned base) lands in shared memory under TMA's `span`-byte
    swizzle (32, 64 or 128; 0: none): the 16-byte chunk bits are XORed with the bits of the 128-byte line above
    them, as many as the span has chunks. With 128-byte rows and span 128: chunk c of row r lands at chunk
    c XOR (r mod 8), the rule of kernels/wgmma.cuh's `swizzled` and 13_tf32_mma_tma.cu's `b_at`."""
    if span not in (0, 32, 64, 128):
        raise ValueError(f"span = {span}: TMA swizzles 32, 64 or 128 bytes (0: none)")
    mask = span // CHUNK - 1 if span else 0
    return offset ^ (((offset // LINE) & mask) * CHUNK)


def tma_swizzle(rows: int = 32, cols: int = 32, span: int = 128, shown: int = 16, element_bytes: int = 4) -> Figure:
    """A TMA box of rows x cols elements in shared memory, without and with the `span`-byte swizzle: the 128-byte
    lines of shared memory (one per row of the 32 banks) and, in each 16-byte chunk (four banks), which chunk of
    which box row lands there. Chunk 0 of every row is outlined: what a warp reading one column of the box touches.
    The first `shown` lines are drawn (the pattern repeats every 1024 bytes). Patches carry a gid ("swizzled r c")."""
    row_bytes = cols * element_bytes
    if row_bytes % CHUNK:
        raise ValueError(f"a box row of {row_bytes} bytes: TMA boxes have rows of whole 16-byte chunks")
    if span and row_bytes > span:
        raise ValueError(f"a box row of {row_bytes} bytes is wider than the {span}-byte swizzle (TMA refuses it)")
    chunks = row_bytes // CHUNK
    lines = min(-(-rows * row_bytes // LINE), shown)
    fig, axes = plt.subplots(1, 2, figsize=(WIDTH, 0.34 * lines + 2.4), sharey=True)
    for ax, (name, s) in zip(axes, (("no swizzle", 0), (f"{span}-byte swizzle", span))):
        for r in range(rows):
            for c in range(chunks):
                where = swizzle_offset(r * row_bytes + c * CHUNK, s)
                line, slot = divmod(where // CHUNK, LINE // CHUNK)
                if line >= lines:
                    continue
                first = c == 0
                ax.add_patch(Rectangle((slot, line), 1, 1, facecolor=to_rgba(plt.get_cmap("tab10")(c % 10), 0.45),
                                       edgecolor="black" if first else "white", linewidth=2.2 if first else 0.6,
                                       zorder=3 if first else 2, gid=f"{'swizzled' if s else 'plain'} {r} {c}"))
                ax.text(slot + 0.5, line + 0.52, str(c), ha="center", va="center", zorder=4)
        ax.set_xlim(0, LINE // CHUNK)
        ax.set_ylim(lines, 0)
        ax.set_xticks([i + 0.5 for i in range(0, LINE // CHUNK, 2)], range(0, LINE // CHUNK, 2))
        ax.set_title(name, fontsize=TEXT)
        ax.set_xlabel("16-byte chunk\n(banks 4c to 4c + 3)")
    per_line = LINE // row_bytes  # box rows in one 128-byte line
    axes[0].set_yticks([i + 0.5 for i in range(lines)],
                       [str(i) if per_line == 1 else f"{per_line * i}-{per_line * i + per_line - 1}" for i in range(lines)])
    axes[0].set_ylabel("box row" + ("" if per_line == 1 else "s") + " (one 128-byte line)")
    total = -(-rows * row_bytes // LINE)
    part = f" (the first {lines} of its {total} lines: the pattern repeats every 1,024 bytes)" if lines < total else ""
    fig.suptitle(wrap(f"A {rows} x {cols} box of {element_bytes}-byte values ({row_bytes}-byte rows) in shared "
                      f"memory{part}. In each cell: which chunk of its box row lands there; chunk 0 outlined"),
                 fontsize=TEXT)
    fig.tight_layout()
    return fig


WARP_COLOURS = ("#9ecae1", "#fdd0a2", "#a1d99b", "#dadaeb")  # the four warps of a warpgroup, light under black text


def warpgroup(params: dict[str, int] | None = None) -> Figure:
    """One wgmma of kernel 12 (12_tf32_wgmma.cu) at its parameters. Above, the block's tile of C: one warpgroup per 64
    columns (BN / 64 of them). Below, one wgmma m64nNk8 with N = BM, as the kernel computes C^T = B^T A^T: the four
    warps of a warpgroup each hold 16 rows of the register operand (64 x 8 of B^T) and of the accumulator (64 x BM of
    C^T, BM / 2 floats per thread), while the tensor cores read the shared-memory operand (8 x BM of A^T, A's tile
    stored K-major) themselves, through a descriptor. Patches carry a gid ("warpgroup g", "<operand> warp w")."""
    p = catalog.get("wgmma_tf32").full_params(params)
    bm, bn = p["BM"], p["BN"]
    groups = bn // 64
    fig = plt.figure(figsize=(WIDTH, 7.0))
    outer = fig.add_gridspec(2, 1, height_ratios=[1.05, 4.1], hspace=0.45)
    grid = outer[1].subgridspec(2, 2, width_ratios=[1, 3.2], height_ratios=[1.0, 3.0], hspace=0.12, wspace=0.06)
    block, shared = fig.add_subplot(outer[0]), fig.add_subplot(grid[0, 1])
    note, register, acc = fig.add_subplot(grid[0, 0]), fig.add_subplot(grid[1, 0]), fig.add_subplot(grid[1, 1])
    for g in range(groups):  # the block's C tile, BM rows x BN columns, one warpgroup per 64 columns
        block.add_patch(Rectangle((64 * g, 0), 64, bm, facecolor="#f6c6ad" if g == 0 else "#eeeeee",
                                  edgecolor="black", linewidth=1.2, gid=f"warpgroup {g}"))
        block.text(64 * g + 32, bm / 2, f"warpgroup {g}\nthreads {128 * g}–{128 * g + 127}", ha="center",
                   va="center")
    block.set(xlim=(0, bn), ylim=(bm, 0))
    block.set_xticks(range(0, bn + 1, 64))
    block.set_yticks([0, bm])
    block.set_title(f"The block's {bm} x {bn} tile of C: {groups} warpgroup{'s' if groups > 1 else ''} of 64 "
                    "columns", fontsize=TEXT)
    for w in range(4):  # each warp: 16 rows of the register operand and of the accumulator
        for ax, cols, name in ((register, 8, "register"), (acc, bm, "accumulator")):
            ax.add_patch(Rectangle((0, 16 * w), cols, 16, facecolor=WARP_COLOURS[w], edgecolor="black",
                                   linewidth=1.2, gid=f"{name} warp {w}"))
        register.text(4, 16 * w + 8, f"warp\n{w}", ha="center", va="center")
        acc.text(bm / 2, 16 * w + 8, f"warp {w}: rows {16 * w}–{16 * w + 15},\n{16 * bm // 32} floats per lane",
                 ha="center", va="center")
    shared.add_patch(Rectangle((0, 0), bm, 8, facecolor="#cccccc", edgecolor="black", linewidth=1.2, hatch="//",
                               gid="shared operand"))
    shared.text(bm / 2, 4, "read by the tensor cores, through a descriptor", ha="center", va="center",
                bbox={"facecolor": "white", "edgecolor": "none", "pad": 1.5})
    note.text(0.5, 0.5, "warpgroup 0:\n4 warps,\n128 threads", ha="center", va="center", transform=note.transAxes)
    note.axis("off")
    for ax, rows, cols in ((register, 64, 8), (acc, 64, bm), (shared, 8, bm)):
        ax.set(xlim=(0, cols), ylim=(rows, 0))
        ax.set_xticks([])
        ax.set_yticks([])
    register.set_xlabel("$B^T$: 64 x 8\nregisters")
    acc.set_xlabel(f"$C^T$: 64 x {bm} accumulators (warpgroup 0's\n64 columns of C), registers: {bm // 2} per thread")
    shared.set_title(f"$A^T$: 8 x {bm}, A's tile in shared memory (K-major)", fontsize=TEXT)
    fig.suptitle(wrap(f"One wgmma m64n{bm}k8: $C^T$ += $B^T A^T$ for 64 columns of C, 8 deep, issued by the 4 "
                      "warps of a warpgroup together", style.TITLE), fontsize=style.TITLE)
    fig.subplots_adjust(left=0.06, right=0.97, top=0.86, bottom=0.09)
    return fig


def k_major_desc(address: int) -> int:
    """kernels/wgmma.cuh's descriptor of a K-major tile with the 128-byte swizzle starting at shared-memory byte
    `address`: start address / 16 at bits 0-13, leading byte offset / 16 at 16-29 (1, unused with this swizzle),
    stride byte offset / 16 at 32-45 (1,024 bytes from one group of 8 rows to the next), swizzle mode at 62-63 (1)."""
    return ((address & 0x3FFFF) >> 4) | (1 << 16) | ((1024 >> 4) << 32) | (1 << 62)


DESCRIPTOR_FIELDS = (  # (name, first bit, bits, what it means)
    ("start address", 0, 14, "where the operand's first row begins, / 16"),
    ("leading byte offset", 16, 14, "unused with the 128-byte swizzle (1)"),
    ("stride byte offset", 32, 14, "bytes from one group of 8 rows to the next, / 16"),
    ("swizzle", 62, 2, "1 = the 128-byte swizzle"),
)


def descriptor_fields(desc: int) -> dict[str, int]:
    """The fields of a wgmma shared-memory descriptor, by name (DESCRIPTOR_FIELDS)."""
    return {name: desc >> first & ((1 << bits) - 1) for name, first, bits, _ in DESCRIPTOR_FIELDS}


def wgmma_descriptor(params: dict[str, int] | None = None, kk: int = 1, rows: int = 16) -> Figure:
    """What kernel 12's descriptor for the kk-th 8-deep slice of A's tile points at (12_tf32_wgmma.cu: k_major_desc
    of the tile's address + 32 kk). Above, the 64-bit descriptor with its fields' values; below, the first `rows` rows
    of A's tile in shared memory: 128-byte rows of eight 16-byte chunks (four k each), chunk c of row r stored at
    chunk c XOR (r mod 8). The cells the slice reads are outlined: chunks 2 kk and 2 kk + 1 of every row, wherever the
    swizzle put them. Patches carry a gid ("row r chunk c", "field <name>")."""
    p = catalog.get("wgmma_tf32").full_params(params)
    if not 0 <= kk < catalog.WGMMA_BK // 8:
        raise ValueError(f"kk = {kk}: a 32-deep step has 8-deep slices 0 to {catalog.WGMMA_BK // 8 - 1}")
    desc = k_major_desc(32 * kk)  # the tile at shared-memory byte 0, 1024-aligned as the kernel aligns it
    fields = descriptor_fields(desc)
    rows = min(rows, p["BM"])
    colours = {"start address": "C1", "leading byte offset": "#bbbbbb", "stride byte offset": "C2", "swizzle": "C0"}
    fig = plt.figure(figsize=(WIDTH, 0.26 * rows + 4.3))
    grid = fig.add_gridspec(2, 1, height_ratios=[1.0, 0.26 * rows], hspace=0.75)
    bar, tile = fig.add_subplot(grid[0]), fig.add_subplot(grid[1])
    for name, first, bits, _ in DESCRIPTOR_FIELDS:
        x = 63 - (first + bits - 1)  # bit 63 on the left
        bar.add_patch(Rectangle((x, 0), bits, 1, facecolor=to_rgba(colours[name], 0.55), edgecolor="black",
                                linewidth=1.2, gid=f"field {name}"))
        bar.text(x + bits / 2, 0.5, str(fields[name]), ha="center", va="center", weight="bold")
        bar.text(x + bits / 2, 1.15, name.replace(" ", "\n", 1) if bits > 2 else name, ha="center", va="bottom",
                 color="black")
    bar.add_patch(Rectangle((0, 0), 64, 1, fill=False, edgecolor="black", linewidth=1.2))
    bar.set(xlim=(0, 64), ylim=(-0.2, 2.6))
    bar.set_xticks([0.5, 63 - 45 + 0.5, 63 - 29 + 0.5, 63 - 13 + 0.5, 63.5], ["63", "45", "29", "13", "0"])
    bar.set_yticks([])
    for spine in ("left", "right", "top"):
        bar.spines[spine].set_visible(False)
    bar.set_xlabel(f"bit; the descriptor is 0x{desc:016x}")
    chunks = LINE // CHUNK
    for r in range(rows):
        for c in range(chunks):
            slot = (swizzle_offset(r * LINE + c * CHUNK) - r * LINE) // CHUNK
            read = c in (2 * kk, 2 * kk + 1)
            tile.add_patch(Rectangle((slot, r), 1, 1, facecolor=to_rgba(plt.get_cmap("tab10")(c % 10), 0.45),
                                     edgecolor="black" if read else "white", linewidth=2.4 if read else 0.6,
                                     zorder=3 if read else 2, gid=f"row {r} chunk {c}"))
            tile.text(slot + 0.5, r + 0.55, f"k{4 * c}", ha="center", va="center", zorder=4)
    for r in range(8, rows, 8):
        tile.axhline(r, color="black", linewidth=2.5)
    tile.annotate("", xy=(8.1, 8), xytext=(8.1, 0), annotation_clip=False,
                  arrowprops={"arrowstyle": "<->", "color": colours["stride byte offset"], "linewidth": 2})
    tile.text(8.3, 4, f"stride byte\noffset:\n{16 * fields['stride byte offset']:,} bytes\nto the next\n8 rows",
              color=colours["stride byte offset"], va="center", ha="left")
    tile.annotate(f"start address: byte {16 * fields['start address']}", xy=(2 * kk + 0.5, 0),
                  xytext=(2 * kk + 0.5, -1.4), ha="left", va="bottom", color=colours["start address"],
                  annotation_clip=False, arrowprops={"arrowstyle": "->", "color": colours["start address"],
                                                     "linewidth": 2})
    tile.text(8.3, min(rows, 16) - 3, "swizzle:\nchunk c of\nrow r sits at\nc XOR (r % 8)", color=colours["swizzle"],
              va="center", ha="left")
    tile.set(xlim=(0, chunks), ylim=(rows, 0))
    tile.set_xticks([i + 0.5 for i in range(chunks)], [f"{CHUNK * i}" for i in range(chunks)])
    tile.set_yticks([i + 0.5 for i in range(0, rows, 4)], range(0, rows, 4))
    tile.set_xlabel("byte of the 128-byte row (a cell: 4 floats, k = the first)")
    tile.set_ylabel("row of A's tile")
    fig.suptitle(wrap(f"The descriptor of k-slice {kk} (k = {8 * kk}–{8 * kk + 7}) and what it points at: rows "
                      f"0–{rows - 1} of A's {p['BM']}-row tile, the cells it reads outlined", style.TITLE),
                 fontsize=style.TITLE)
    fig.subplots_adjust(left=0.1, right=0.78, top=0.88, bottom=0.07)
    return fig


RANK_COLOURS = ("#9ecae1", "#fdae6b", "#a1d99b", "#dadaeb")  # the blocks of a cluster, by rank


def tma_boxes(params: dict[str, int] | None = None) -> Figure:
    """One 32-deep step of kernel 13 (13_tf32_mma_tma.cu) at its parameters, to scale. Above, the cluster's tile of C
    (CLUSTER blocks of BM x BN stacked along M) with the boxes TMA copies for the step: one BM x 32 box of A per block,
    and the BN / 32 boxes of B (32 x 32), box j issued by the block of rank j % CLUSTER and multicast to all of them.
    Below, one stage of a block's ring in shared memory, in bytes: A's box, then B's boxes, each coloured by the rank
    that issued it. Patches carry a gid ("A box r", "B box j", "stage A", "stage B j")."""
    p = catalog.get("mma_tf32_tma").full_params(params)
    bm, bn, cluster = p["BM"], p["BN"], p["CLUSTER"]
    from ... import tma

    depth, cols = tma.STEP, tma.BOX_COLS
    boxes = bn // cols
    a_bytes, box_bytes = bm * depth * 4, depth * cols * 4
    stage = a_bytes + boxes * box_bytes
    rows = bm * cluster
    fig = plt.figure(figsize=(WIDTH, 5.0 + 0.55 * cluster))
    grid = fig.add_gridspec(2, 1, height_ratios=[4.0, 0.55 * cluster + 0.3], hspace=0.3)
    ax = fig.add_subplot(grid[0])
    bars = grid[1].subgridspec(cluster, 1, hspace=0.15)
    gap = 0.3 * depth
    for r in range(cluster):
        ax.add_patch(Rectangle((0, r * bm), bn, bm, facecolor=to_rgba(RANK_COLOURS[r], 0.25), edgecolor="black",
                               linewidth=1.2))
        ax.text(bn / 2, r * bm + bm / 2, f"block of rank {r}\n{bm} x {bn} of C", ha="center", va="center")
        ax.add_patch(Rectangle((-gap - depth, r * bm), depth, bm, facecolor=RANK_COLOURS[r], edgecolor="black",
                               linewidth=1.2, gid=f"A box {r}"))
        ax.text(-gap - depth / 2, r * bm + bm / 2, f"A{r}", ha="center", va="center")
    ax.text(-gap - depth - 4, rows / 2, f"A: {cluster} box{'es' if cluster > 1 else ''} of {bm} x {depth}, "
            "one per block", rotation=90, ha="right", va="center")
    for j in range(boxes):
        ax.add_patch(Rectangle((j * cols, -gap - depth), cols, depth, facecolor=RANK_COLOURS[j % cluster],
                               edgecolor="black", linewidth=1.2, gid=f"B box {j}"))
        ax.text(j * cols + cols / 2, -gap - depth / 2, f"B{j}", ha="center", va="center")
    who = (f"box j issued by rank j % {cluster}, multicast to " + ("both blocks" if cluster == 2 else "all")
           if cluster > 1 else "all issued by the block's thread 0")
    ax.text(bn / 2, -gap - depth - 4, wrap(f"B: {boxes} boxes of {depth} x {cols}; {who}", TEXT, 0.62 * WIDTH),
            ha="center", va="bottom")
    ax.set(xlim=(-gap - depth - 30, bn + 2), ylim=(rows + 2, -gap - depth - 50), aspect="equal")
    ax.axis("off")
    for r in range(cluster):  # the stage in bytes: A's box, then B's boxes at their offsets, in every block
        bar = fig.add_subplot(bars[r])
        for i in range(boxes + 1):
            x0 = a_bytes + (i - 1) * box_bytes if i else 0
            width = box_bytes if i else a_bytes
            colour = RANK_COLOURS[(i - 1) % cluster] if i else RANK_COLOURS[r]
            bar.add_patch(Rectangle((x0, 0), width, 1, facecolor=colour, edgecolor="black", linewidth=1.2,
                                    gid=f"stage {r} B {i - 1}" if i else f"stage {r} A"))
            bar.text(x0 + width / 2, 0.5, f"B{i - 1}" if i else f"A{r}", ha="center", va="center")
        bar.set(xlim=(0, stage), ylim=(0, 1))
        bar.set_yticks([0.5], [f"rank {r}"])
        ticks = [0, a_bytes, stage]
        bar.set_xticks(ticks, [f"{t // 1024} KiB" for t in ticks] if r == cluster - 1 else [])
    bar.set_xlabel(f"one stage of each block's ring: {stage // 1024} KiB, the bytes its full barrier expects")
    sent = cluster * a_bytes + boxes * box_bytes
    fig.suptitle(wrap(f"One 32-deep step of kernel 13 (BM = {bm}, BN = {bn}, CLUSTER = {cluster}): the boxes TMA "
                      "copies, and where they land", style.TITLE), fontsize=style.TITLE)
    fig.subplots_adjust(left=0.1, right=0.97, top=0.9, bottom=0.1)
    return stamp(fig, f"L2 sends the cluster {sent // 1024} KiB per step ({cluster * stage // 1024} KiB without "
                      "multicast)" if cluster > 1 else f"L2 sends the block {sent // 1024} KiB per step")


def handoff_schedule(params: dict[str, int], steps: int, latency: float, step_clk: float) -> list[dict]:
    """Kernel 13's ring (13_tf32_mma_tma.cu) step by step, under a model of durations: thread 0 issues the first
    STAGES - 1 steps' copies at once, then the copy of step i + STAGES - 1 during step i (its stage was released when
    step i began); a copy lands `latency` clocks after it is issued and completes its stage's full barrier; the warps
    start step i when it has landed and step i - 1 is done, take `step_clk` clocks, and release step i's stage (its
    empty barrier) as step i + 1 begins. Each step: its stage, trip round the ring, the parities each side waits for
    (kernel 13's own formulas) and the times of issue, landing, start, end and release."""
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
                     macs_per_clock: int = 512) -> Figure:
    """Kernel 13's handoff through its ring of STAGES stages, drawn from its parameters (`handoff_schedule`). Above, a
    timeline: thread 0 issuing copies, each stage's copy in flight (light) and read by the warps (dark), the warps'
    mma.sync steps; a full barrier completes where a copy lands, an empty one where the warps release the stage.
    Below, who waits for which parity: the warps wait for full phase i / STAGES of stage i % STAGES, thread 0 for the
    empty phase before it (none on the first trip). Durations are a model: a step is BM x BN x 32 multiply-adds at
    `macs_per_clock` per SM, a copy lands `latency` clocks after it is issued. Patches carry a gid ("stage s")."""
    p = catalog.get("mma_tf32_tma").full_params(params)
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
                       "completes as it lands. Solid: the warps read it until they release it: ▲ empty completes", TEXT))
    full_bytes = (p["BM"] + p["BN"]) * 32 * 4
    columns = min(steps, 2 * stages)
    table_rows = (("step i", lambda r: r["step"]), ("stage i % S", lambda r: r["stage"]),
                  ("trip i / S", lambda r: r["trip"]), ("warps: full parity", lambda r: r["full_parity"]),
                  ("thread 0: empty parity", lambda r: "–" if r["empty_parity"] is None else r["empty_parity"]))
    label_w = 2.9
    _parity_table(table, [(name, lambda c, of=of: of(plan_[c])) for name, of in table_rows], columns, stages, label_w)
    table.set_title(wrap(f"Who waits for which parity (S = STAGES = {stages}). full: 1 arrival + {full_bytes // 1024} "
                         f"KiB; empty: {warps * cluster} arrivals ({warps} warps x {cluster} block(s))", TEXT),
                    fontsize=TEXT)
    fig.suptitle(wrap(f"Kernel 13's ring of {stages} stages: thread 0 refills a stage once the warps released it",
                      style.TITLE), fontsize=style.TITLE)
    fig.subplots_adjust(left=0.22, right=0.98, top=0.9, bottom=0.02)
    return stamp(fig, f"model: {step_clk:,.0f} clk per step ({p['BM']} x {p['BN']} x 32 multiply-adds at "
                      f"{macs_per_clock} per clock), copies land {latency:,} clk after issue (assumed)")


def crt(moduli: tuple[int, ...], x: int) -> Figure:
    """The Chinese remainder theorem as strips: one row per modulus p over the integers of [-P/2, P/2] (P the product
    of the moduli), the integers with x's residue modulo p filled in; the last row keeps those every modulus allows,
    which is x alone. Patches carry a gid ("p=<modulus>" or "all") so tests can count what is drawn."""
    from ...precision import ozaki

    mods = ozaki.chosen(moduli)
    big = ozaki.product(mods)
    lo, hi = -(big // 2), big - big // 2 - 1  # P integers, x's representative nearest zero among them
    if big > 420:
        raise ValueError(f"P = {big}: more integers than the picture can show one by one (at most 420)")
    if not lo <= x <= hi:
        raise ValueError(f"x = {x}: the residues modulo {mods} pin down an integer of [{lo}, {hi}] only")
    rows = [(f"x mod {p} = {x % p}", [v for v in range(lo, hi + 1) if v % p == x % p], f"C{i}", f"p={p}")
            for i, p in enumerate(mods)]
    rows.append(("all at once", [v for v in range(lo, hi + 1) if all(v % p == x % p for p in mods)], "C3", "all"))
    fig, ax = plt.subplots(figsize=(WIDTH, 0.62 * len(rows) + 1.7))
    for r, (_, values, colour, gid) in enumerate(rows):
        ax.add_patch(Rectangle((lo - 0.5, r - 0.35), big, 0.7, facecolor="#f2f2f2", edgecolor="none"))
        for v in values:
            ax.add_patch(Rectangle((v - 0.5, r - 0.35), 1, 0.7, facecolor=colour, edgecolor="none", gid=gid))
        ax.text(hi + 0.02 * big, r, f"{len(values)} left", va="center")
    ax.axvline(x, color="black", linewidth=0.8, linestyle=":")
    ax.set_xlim(lo - 0.5, hi + 0.5)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_yticks(range(len(rows)), [label for label, *_ in rows])
    ax.set_xticks(sorted({lo, 0, hi, x}))
    ax.tick_params(axis="y", length=0)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    ax.set_xlabel(f"the integers from {lo} to {hi}: P = {' x '.join(map(str, mods))} = {big} of them")
    ax.set_title(wrap(f"Residues modulo {', '.join(map(str, mods))} leave one integer: x = {x}", style.TITLE),
                 fontsize=style.TITLE)
    fig.tight_layout()
    return fig


def ozaki_pipeline(params: dict[str, int], size: int | tuple[int, int, int]) -> Figure:
    """The Ozaki scheme's stages as kernels/16_ozaki.cu runs them, each with what it does and, to scale, the bytes it
    must read and write at M = N = K = `size` (or (M, N, K)) with the instance's MODULI (the default's usual choice on
    standard normal inputs, 7, where it chooses per call) (`ozaki.traffic`: compulsory bytes, L2 serving every
    re-read, no column equilibrated). Stage boxes carry their stage's name as gid."""
    from ...precision import ozaki

    pinned = catalog.validate("ozaki", params)["MODULI"]
    moduli = pinned or ozaki.CANDIDATES[1]
    m, n, k = (size,) * 3 if isinstance(size, int) else size
    traffic = ozaki.traffic(moduli, m, n, k)
    what = {
        "scale": "norms of rows and columns; mean\nexponents of A's columns, B's rows",
        "equilibrate": "A 2^s, 2^-s B along K where\nthe exponents are unbalanced",
        "estimate": "64 x 32 elements: the error of\neach number of moduli vs SGEMM's",
        "split": f"scaled to integers → residues,\nint8, {moduli} planes each of A, B",
        "products": f"{moduli} exact INT8 GEMMs;\neach int32 sum mod p → a byte",
        "reconstruct": "CRT in double, powers of two\nundone → C in FP32",
    }
    stages = list(ozaki.STAGES)
    fig, (left, right) = plt.subplots(1, 2, figsize=(WIDTH, 6.6), gridspec_kw={"width_ratios": [1.45, 1],
                                                                               "wspace": 0.04})
    top_row = -1.0  # room above the first stage for the legend
    left.set(xlim=(0, 1), ylim=(len(stages) - 0.5, top_row))
    left.axis("off")
    for i, stage in enumerate(stages):
        left.add_patch(Rectangle((0.0, i - 0.4), 1.0, 0.8, facecolor=to_rgba(f"C{i}", 0.18), edgecolor=f"C{i}",
                                 linewidth=1.2, gid=stage))
        left.text(0.03, i - 0.2, f"{i + 1}. {stage}", weight="bold", va="center")
        left.text(0.03, i + 0.14, what[stage], va="center", linespacing=1.25)
    y = np.arange(len(stages))
    reads, writes = ([traffic[s][j] / 1e9 for s in stages] for j in (0, 1))
    right.barh(y - 0.18, reads, 0.34, color="C0", label="read")
    right.barh(y + 0.18, writes, 0.34, color="C1", label="written")
    top = max(reads + writes)
    for i in range(len(stages)):
        for dy, v in ((-0.18, reads[i]), (0.18, writes[i])):
            right.text(v + 0.02 * top, i + dy, f"{v:.2f}" if v >= 0.01 else "< 0.01", va="center")
    right.set_ylim(len(stages) - 0.5, top_row)
    right.set_yticks([])
    right.set_xlim(0, 1.4 * top)
    right.set_xlabel("GB, the least each must move")
    right.legend(loc="upper center", ncol=2, frameon=False, bbox_to_anchor=(0.5, 1.0))
    for side in ("top", "right"):
        right.spines[side].set_visible(False)
    shape = f"M = N = K = {m}" if m == n == k else f"M x N x K = {m} x {n} x {k}"
    chosen = f"{moduli} moduli" if pinned else f"{moduli} moduli (the default's choice on normal inputs)"
    fig.suptitle(wrap(f"The pipeline at {shape}, {chosen}: stages and bytes", style.TITLE),
                 fontsize=style.TITLE)
    fig.subplots_adjust(left=0.01, right=0.99, top=0.9, bottom=0.11)
    return stamp(fig, "A and B in FP32, residue rows padded as the kernels pad them; each plane read once (L2 serving "
                      "the re-reads), C written once (beta = 0)")


def outlier_channel(k: int = 48, rows: int = 64, column: int | None = None, factor: float = 1e6, moduli: int = 7,
                    seed: int = 0) -> Figure:
    """Why one outlier column of A starves the others, and how equilibration feeds them: A (rows x k) and B (k x 8)
    standard normal, column `column` of A (default k // 3) times `factor` and that row of B divided by it (the product
    is unchanged). Through the NumPy model (`ozaki.residues`, without and with `ozaki.shifts`, the integers rebuilt from
    their residues by `ozaki.reconstruct`), each bar is the median number of significant bits the elements of one column
    of A keep as integers (at most FP32's 24). Bars carry gid "outlier" (the outlier column) or "column"."""
    from ...precision import ozaki

    column = k // 3 if column is None else column
    if not 0 <= column < k:
        raise ValueError(f"column {column}: A has columns 0 to {k - 1}")
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal((rows, k)), rng.standard_normal((k, 8))
    a[:, column] *= factor
    b[column, :] /= factor
    shift = ozaki.shifts(a, b)
    fig, axes = plt.subplots(1, 2, figsize=(WIDTH, 3.9), sharey=True)
    for ax, (title, s) in zip(axes, (("as it comes", None), ("equilibrated", shift))):
        ra, _, e, _ = ozaki.residues(a, b, moduli, s)
        ints = ozaki.reconstruct(ra, np.zeros(rows, np.int64), np.zeros(k, np.int64), moduli)  # a' from its residues
        kept = np.minimum(24, np.where(ints == 0, 0, np.floor(np.log2(np.abs(np.where(ints == 0, 1, ints)))) + 1))
        median = np.median(kept, axis=0)
        for h in range(k):
            ax.bar(h, median[h], width=0.85, color="C3" if h == column else "C0",
                   gid="outlier" if h == column else "column")
        ax.axhline(24, color="black", linestyle="--", linewidth=1.2)
        ax.set_title(title + (f": s = {int(shift[column])} there" if s is not None else ""), fontsize=TEXT)
        ax.set_xlabel("column h of A (along K)")
        ax.set_ylim(0, 27)
    axes[0].set_ylabel("bits an element keeps")
    axes[0].text(0.98, 24.6, "FP32: 24", ha="right", va="bottom", transform=axes[0].get_yaxis_transform())
    factor_text = f"{factor:.0e}".replace("e+0", "e").replace("e+", "e")
    fig.suptitle(wrap(f"One column of A {factor_text} times the rest, {moduli} moduli: bits left to the other columns",
                      style.TITLE), fontsize=style.TITLE)
    fig.tight_layout()
    return stamp(fig, f"NumPy model (ozaki.residues, ozaki.shifts): A {rows} × {k}, B {k} × 8, standard normal; "
                      "median over A's rows")


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
