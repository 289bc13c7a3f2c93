"""Pictures of ideas, drawn by code from a kernel's own parameters: another instance redraws them.

`plots` charts measurements; this module draws what a kernel does (which tiles a block reads, which lanes touch
which bank, when copies and math overlap). Where a picture needs durations it takes them from a stated model,
and says so on its face. Every figure keeps `style`'s rule: text at least the page's body size at 800 px.
New pictures for the chapters belong here.
"""
from __future__ import annotations

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


def lane_position(lane: int, params: dict[str, int]) -> tuple[int, int]:
    """(lane_m, lane_n) of a lane in its warp's lane grid, numbered as 10_warp_tiling.cu numbers them:
    along the longer side of the grid by lane % 8, along the shorter one diagonally."""
    along, diagonal = lane % 8, (lane // 8 + lane % 8) % 4
    return (along, diagonal) if params["WM"] // params["TM"] == 8 else (diagonal, along)


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
