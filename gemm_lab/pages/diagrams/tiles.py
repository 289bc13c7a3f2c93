"""Which part of A, B and C a block, a warp, a thread or a lane owns and reads, drawn to scale from a kernel's tile
parameters: a block's walk along K, the lines a warp's loads touch, one thread's outer product and its transposed A,
the warp-tiled kernel's loop nest and tile levels, and stream-K's share of the tiles among the GPU's blocks.

Its own module because these pictures share one subject, the geometry of tiles (a tile of C and the slices of A and
B that feed it), which chapters 1 to 7b build up level by level.
"""
from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from ... import catalog
from ...models import hardware, model, schedule
from ...models.banks import lane_position  # the lane grids' numbering, which the bank model reads too
from ...spec import ceil_div
from ..style import TEXT, WIDTH, wrap


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
    """Which addresses of A, B and C the 32 lanes of warp 0 touch in one step, naive vs coalesced: the floats the
    lanes touch (dark), the rest of each 32-byte sector that moves with them (orange) and the 128-byte lines L1
    looks up (grey outline). A lone touched float is one cell of 8 in its sector: the orange shows what moves for it,
    so the waste reads at a glance, and the titles count what the text's model counts."""
    fig, axes = plt.subplots(2, 3, figsize=(WIDTH, 6.4))
    lanes = np.arange(32)
    for row_ax, kernel in zip(axes, ("naive", "coalesced")):
        rows, cols = (lanes % block, lanes // block) if kernel == "naive" else (lanes // block, lanes % block)
        touched = {"A": (rows, np.full(32, k_step)), "B": (np.full(32, k_step), cols), "C": (rows, cols)}
        for ax, (name, (r, c)) in zip(row_ax, touched.items()):
            cells = set(zip(r.tolist(), c.tolist()))
            sectors = sorted({(a, b // 8) for a, b in cells})  # 32 bytes: 8 floats of a row
            lines = sorted({(a, b // 32) for a, b in cells})  # 128 bytes: 32 floats of a row
            for line_row, part in lines:
                ax.add_patch(Rectangle((32 * part, line_row), 32, 1, facecolor="#f0f0f0", edgecolor="#969696",
                                       linewidth=0.6))
            for sector_row, part in sectors:
                ax.add_patch(Rectangle((8 * part, sector_row), 8, 1, facecolor="#fdae6b", edgecolor="#969696",
                                       linewidth=0.6))
            for a, b in cells:
                ax.add_patch(Rectangle((b, a), 1, 1, facecolor="#08519c", edgecolor="none"))
            ax.set(xlim=(0, 32), ylim=(32, 0), aspect="equal")
            ax.set_title(f"{name}: {len(sectors)} sector{'s' if len(sectors) > 1 else ''}, "
                         f"{len(lines)} line{'s' if len(lines) > 1 else ''}", fontsize=TEXT)
            ax.set_xticks([])
            ax.set_yticks([])
        row_ax[0].set_ylabel(f"{kernel}\nrow", fontsize=TEXT)
    fig.supxlabel(wrap("column (row-major: a row is contiguous). Dark: a float a lane reads or writes; orange: the "
                       "rest of its 32-byte sector (8 floats), which moves with it; grey: its 128-byte line "
                       "(32 floats), which L1 looks up"), fontsize=TEXT)
    fig.suptitle(wrap(f"Warp 0 of a {block} x {block} block, one iteration of k: the cells its 32 lanes touch"),
                 fontsize=TEXT)
    fig.tight_layout()
    return fig


def _middle_thread(rows: int, cols: int) -> int:
    """The thread whose tile sits near the middle of a rows x cols grid of thread tiles (row-major thread index),
    so that a highlighted tile touches no edge of the picture."""
    return rows // 2 * cols + cols // 2


def outer_product(params: dict[str, int] | None = None, thread: int | None = None, kk: int | None = None) -> Figure:
    """One thread of the 2-D thread-tile kernel (05_thread_tile_2d.cu) at one step kk: the TM values of column kk
    of the A tile and the TN values of row kk of the B tile it loads into registers, and the TM x TN outputs their
    outer product updates. Left, the block's tiles in shared memory and its C tile, to scale; right, the thread's
    registers. Patches carry gids ("a i", "b j", "acc i j") so tests can count what is drawn."""
    p = catalog.validate("thread_tile_2d", params)
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
    p = catalog.validate("vectorized", params)
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


def loop_nest(params: dict[str, int] | None = None, size: int = 4096, kernel: str = "warp_tiling") -> Figure:
    """The warp-tiled kernel as one loop nest (CUTLASS's way of framing a GEMM): block tile, k-step, warp tile, k,
    thread tile, FFMA, each level boxed inside the one above with this instance's numbers at M = N = K = `size`, and
    coloured by where its operands live (global memory, shared memory, registers)."""
    spec = catalog.get(kernel)
    p = catalog.validate(spec, params)
    bm, bn, bk, wm, wn, tm, tn = (p[x] for x in ("BM", "BN", "BK", "WM", "WN", "TM", "TN"))
    tiles_m, tiles_n = ceil_div(size, bm), ceil_div(size, bn)
    where = {"global": "#e6e6e6", "shared": "#d5ecd0", "registers": "#d6e4f5"}
    levels = (
        ("global", "for each block tile of C:", f"{tiles_m} x {tiles_n} = {tiles_m * tiles_n:,} blocks of {bm} x {bn},"
                                                " one thread block each"),
        ("shared", f"for k0 in 0, {bk}, ..., K - {bk}:", f"{ceil_div(size, bk):,} steps: A {bm} x {bk} and B "
                                                          f"{bk} x {bn} into shared memory"),
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
    fig.suptitle("The warp-tiled kernel as one loop nest: block tile, k-step, warp tile, k, thread tile and FFMA, each "
                 "level boxed inside the one above and coloured by where its operands live",
                 visible=False)  # not drawn: the figure's alt text (style.describe)
    return fig


def warp_tiles(params: dict[str, int] | None = None) -> Figure:
    """The three tile levels of the warp-tiled kernel, drawn from its parameters (defaults: the catalog's).

    Top left, the block tile and its warp tiles; top right, warp 0's tile with the outputs of lanes 0 and 1 (TM/4 x
    TN/4 squares of 4 x 4, one stride apart); below, one stride's worth of the warp tile with the lane that owns
    each square. Patches carry a gid ("warp w", "lane l") so tests can count what is drawn.
    """
    p = catalog.validate("warp_tiling", params)
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


def stream_k(params: dict[str, int] | None = None, size: int = 4096, slots: int | None = None) -> Figure:
    """Kernel 10b's two ways to share the tiles of C among the `slots` blocks the GPU holds at once (default: its SMs
    x the blocks of this instance that fit on one), at M = N = K = `size`: the tiles in grouped order, those of whole
    waves and those stream-K cuts along K; and the work of a few blocks over time, one block per tile against stream-K
    (`schedule.stream_k`), a tile's k-steps taking one unit. Patches carry a gid ("tile <t>", "piece <b>")."""
    p = catalog.validate("pipelined_warp_tiling", params)
    if slots is None:
        slots = hardware.ceilings()["sms"] * model.resident("pipelined_warp_tiling", p)["blocks"]
    tiles_m, tiles_n = ceil_div(size, p["BM"]), ceil_div(size, p["BN"])
    tiles, steps = tiles_m * tiles_n, ceil_div(size, p["BK"])
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
        f"orange: {shared} tiles left over,", f"cut along K into {slots} runs",
        "of equal length (chapter 7b's Exercise 1", "asks how long)"]), va="center", ha="left")
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
