"""Which words and banks of shared memory a warp's lanes touch in one access: the bank grid of any `banks.Access`
(`bank_grid`), the float4s each lane of the vectorized kernel reads (`float4_lanes`), and the quarter-warps of
kernels 10 and 10b placed on the 32 banks (`quarter_warps`), and the passes of a 128-bit load by chapter 2's rule
(`lds128_passes`).

Its own module because these are the pictures of the bank model (`models.banks`), from which chapters 4, 5, 7b, 8,
8c and 9 read bank conflicts.
"""
from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Polygon, Rectangle

from ... import catalog
from ...models import banks
from ...models.banks import lane_position  # the lane grids' numbering, which the bank model reads too
from .. import style
from ..listings import number_ranges
from ..style import TEXT, WIDTH, wrap


def bank_grid(access: banks.Access, title: str = "") -> Figure:
    """The 32 banks (rows) and the 128-byte rows of shared memory (columns) a warp's access touches: each lane's
    word (or its 2 or 4 words, one per bank, at 64 and 128 bits) labelled once with the first lane that touches it,
    a white corner where more lanes share the word (a broadcast). Red banks need more than one wavefront. The
    default title names the access and whether it conflicts, not its wavefronts: the chapters ask readers to count
    them (chapter 5's exercises), and the grid shows them.

    Banks run down the page so that every label stands upright at the body's size: 32 columns of two-digit lanes
    would not fit the page's width. A bank's row reads as its queue: more cells in a red row, more wavefronts."""
    words: dict[int, list[int]] = {}
    for lane, addr in enumerate(access.addresses):
        for w in range(access.width // banks.WORD):
            words.setdefault(addr // banks.WORD + w, []).append(lane)
    rows = sorted({w // banks.BANKS for w in words})
    load = np.zeros(banks.BANKS, dtype=int)
    for w in words:
        load[w % banks.BANKS] += 1
    head = 0.3 * (1 + wrap(title or "x" * 60, style.TITLE).count("\n"))  # inches of the title's lines
    fig, ax = plt.subplots(figsize=(WIDTH, 0.22 * banks.BANKS + head + 1.3))
    for w, lanes in words.items():
        c, b = rows.index(w // banks.BANKS), w % banks.BANKS
        ax.add_patch(Rectangle((c, b), 1, 1, facecolor="C3" if load[b] > access.ideal else "C0", alpha=0.8,
                               edgecolor="white", linewidth=0.8))
        if len(lanes) > 1:
            ax.add_patch(Polygon([(c + 1, b), (c + 0.72, b), (c + 1, b + 0.45)], facecolor="white", edgecolor="none"))
    for lane, addr in enumerate(access.addresses):
        first = addr // banks.WORD
        if words[first][0] != lane:
            continue  # an earlier lane already labels this word
        span = [w for w in range(first, first + access.width // banks.WORD) if w // banks.BANKS == first // banks.BANKS]
        middle = (span[0] % banks.BANKS + span[-1] % banks.BANKS) / 2 + 0.5  # of the banks the lane's words take
        ax.text(rows.index(first // banks.BANKS) + 0.5, middle, str(lane), ha="center", va="center", color="white")
    ax.set_xlim(0, len(rows))
    ax.set_ylim(banks.BANKS, 0)
    column_px = (ax.get_position().width * WIDTH * style.DPI) / len(rows)
    label_px = 0.65 * TEXT * style.DPI / 72 * len(str(rows[-1])) + 8  # the widest row number, with a gap
    step = max(1, int(np.ceil(label_px / column_px)))
    ax.set_xticks([c + 0.5 for c in range(0, len(rows), step)], [str(rows[c]) for c in range(0, len(rows), step)])
    ax.set_yticks([b + 0.5 for b in range(0, banks.BANKS, 4)], range(0, banks.BANKS, 4))
    ax.tick_params(length=0)
    ax.set_xlabel(wrap("128-byte row of shared memory (byte address ÷ 128). Cells: the first lane that reads or "
                       "writes the word; a white corner: more lanes share it", TEXT))
    ax.set_ylabel("bank")
    ax.grid(False)
    verdict = "red banks: bank conflicts" if access.conflicts else "no bank conflict"  # the count is the reader's
    ax.set_title(wrap(title or f"{access.name}: {access.width * 8}-bit, {verdict}", style.TITLE), fontsize=style.TITLE)
    fig.tight_layout()
    return fig


def float4_lanes(params: dict[str, int] | None = None) -> Figure:
    """Which float4s of one row of the B tile (Bs[kk][·]) and of the transposed A tile (As[kk][·]) each lane of warp 0
    reads in the vectorized kernel (06_vectorized.cu), one colour per load instruction. A thread's TN columns are
    TN/4 groups of four spaced BN/(TN/4) apart, so the eight lanes of a quarter-warp read eight neighbouring float4s
    (128 contiguous bytes) of Bs; the lanes that share a row of C read the same float4 of As (a broadcast). Patches
    carry gids ("B lane float4", "A lane float4") so tests can check them against `banks.sites`."""
    p = catalog.validate("vectorized", params)
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


QUARTER_SHADES = ("#f4a582", "#92c5de", "#b8e186", "#fdd49e")  # lanes 0-7, 8-15, 16-23, 24-31


def quarter_warps(params: dict[str, int] | None = None) -> Figure:
    """Kernel 10's lanes beside kernel 10b's, drawn from each kernel's lane code (`lane_position`): on top the warp's
    lane grid, each lane coloured by its quarter-warp; below, for one 128-bit fragment load of A and one of B, the
    float4s each quarter-warp reads, placed on the 32 banks (a float4 covers four), labelled with the grid row (A)
    or column (B) it holds. A thick line parts the half-warps. No wavefronts are counted here: chapter 7b derives
    them from this picture and Nsight Compute's counts (`banks.lds128_wavefronts`). `params`: either kernel's tiles
    (10b's other options are ignored). Patches carry gids ("<kernel> lane <l>", "<kernel> <A|B> q<q> float4 <f>")."""
    spec = catalog.get("warp_tiling")
    ours = set(spec.choices) | set(catalog.get("pipelined_warp_tiling").choices)
    if unknown := sorted(set(params or {}) - ours):
        raise ValueError(f"quarter_warps: {', '.join(unknown)} is not a parameter of kernel 10 or 10b "
                         f"(they take {', '.join(sorted(ours))})")
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
        for r, (operand, float4s, _) in enumerate(banks.fragment_loads(kernel, p), start=1):
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


def lds128_cases() -> dict[str, tuple[int, ...]]:
    """Three 128-bit loads of a warp, as the float4 (16-byte word of shared memory, by index) each of its 32 lanes
    reads: chapter 2's load of A (`banks.sites("smem_tiled")`, four steps kk merged by the compiler: every lane the
    same float4), a load where each quarter-warp reads eight neighbouring float4s (128 bytes, all 32 banks), and one
    where each quarter-warp's float4s lie two on each of banks 0-15 (0-3 and 8-11: 128 bytes apart, a conflict)."""
    a_load = next(s for s in banks.sites("smem_tiled") if s.name.startswith("load As"))
    return {
        "chapter 2's load of A, one float4 for all lanes": tuple(a // 16 for a in a_load.addresses),
        "each quarter-warp reads 8 neighbouring float4s": tuple(lane % 8 for lane in range(32)),
        "lanes 4–7 read 128 bytes past lanes 0–3 (a conflict)": tuple(lane % 4 + 8 * (lane // 4 % 2)
                                                                       for lane in range(32)),
    }


def lds128_passes(cases: dict[str, Sequence[int]] | None = None) -> Figure:
    """The passes (wavefronts) of a warp's 128-bit shared load, one panel per case (`lds128_cases` by default): each
    row a pass across the 32 banks, each box a float4 on its four banks, labelled with the lanes it serves and
    coloured by their quarter-warp. The counts are the bank model's (`banks.lds128_wavefronts`, rule "h100"), a
    half-warp's passes `lds128_wavefronts` of the half-warp read twice, halved; the rows lay each group's distinct
    float4s out one per bank group a pass (`banks.float4_passes`). A half-warp is one group where the model shares
    a pass between its quarter-warps, else each quarter-warp is its own. Patches carry gids
    ("<case> | pass <p> | float4 <f> | lanes <l>,<l>,...")."""
    cases = dict(cases or lds128_cases())
    per_group = banks.BANKS * banks.WORD // 16  # float4s side by side on the 32 banks: 8
    layout = []  # per case: its groups (a half-warp, or a quarter-warp), each a list of passes: [{float4: lanes}]
    for name, float4s in cases.items():
        groups = []
        for h in (0, 16):
            half = list(float4s[h:h + 16])
            quarters = [half[:8], half[8:]]
            shared = banks.lds128_wavefronts(half * 2) // 2 < sum(map(banks.float4_passes, quarters))
            for lanes in ([range(h, h + 16)] if shared else [range(h, h + 8), range(h + 8, h + 16)]):
                reads: dict[int, list[int]] = {}
                for lane in lanes:
                    reads.setdefault(float4s[lane], []).append(lane)
                depth = banks.float4_passes([float4s[lane] for lane in lanes])
                passes: list[dict[int, list[int]]] = [{} for _ in range(depth)]
                level: dict[int, int] = {}
                for f in sorted(reads):
                    g = f % per_group
                    passes[level.get(g, 0)][f] = reads[f]
                    level[g] = level.get(g, 0) + 1
                groups.append(passes)
        layout.append((name, float4s, groups))
    row = 0.42  # inches a pass
    heights = [sum(map(len, groups)) for _, _, groups in layout]
    head, gap, foot = 0.65, 0.8, 0.75  # inches: the title (two lines) above the legend, between panels, the x label
    height = head + 0.75 + sum(heights) * row + gap * (len(layout) - 1) + foot
    fig = plt.figure(figsize=(WIDTH, height))
    grid = fig.add_gridspec(len(layout), 1, height_ratios=heights, hspace=gap / (sum(heights) * row / len(layout)),
                            top=1 - (head + 0.75) / height, bottom=foot / height, left=0.2, right=0.98)
    for i, (name, float4s, groups) in enumerate(layout):
        ax = fig.add_subplot(grid[i])
        y, ticks = 0, []
        for passes in groups:
            for served in passes:
                for f, readers in served.items():
                    g = f % per_group
                    quarters = sorted({lane // 8 for lane in readers})
                    for k, q in enumerate(quarters):  # one stripe per quarter-warp served
                        ax.add_patch(Rectangle((4 * g, y + 0.08 + 0.84 * k / len(quarters)), 4,
                                               0.84 / len(quarters), facecolor=QUARTER_SHADES[q], edgecolor="none"))
                    ax.add_patch(Rectangle((4 * g, y + 0.08), 4, 0.84, facecolor="none", edgecolor="black",
                                           linewidth=0.8,
                                           gid=f"{name} | pass {y + 1} | float4 {f} | lanes "
                                               + ",".join(map(str, readers))))
                    ax.text(4 * g + 2, y + 0.5, number_ranges(readers, "–"), ha="center", va="center")
                ticks.append(f"pass {y + 1}")
                y += 1
            ax.axhline(y, color="gray", linewidth=0.8, linestyle="--")
        ax.set(xlim=(0, banks.BANKS), ylim=(y, 0))
        ax.set_yticks([p + 0.5 for p in range(y)], ticks)
        ax.set_xticks(range(0, banks.BANKS + 1, 4))
        ax.tick_params(length=0)
        for b in range(0, banks.BANKS + 1, 4):
            ax.axvline(b, color="lightgray", linewidth=0.6, zorder=0)
        total = banks.lds128_wavefronts(list(float4s))
        ax.set_title(wrap(f"{'abc'[i] if i < 3 else i}) {name}: {total} passes", TEXT), fontsize=TEXT, loc="left")
        if i == len(layout) - 1:
            ax.set_xlabel("bank (a box: one float4 on 4 banks, labelled with the lanes it serves)")
    handles = [Rectangle((0, 0), 1, 1, facecolor=c) for c in QUARTER_SHADES]
    fig.legend(handles, [f"lanes {8 * q}–{8 * q + 7}" for q in range(4)], loc="upper center", ncol=4, frameon=False,
               title=None, bbox_to_anchor=(0.5, 1 - (head - 0.05) / height), handlelength=1.2, columnspacing=1.0)
    fig.suptitle(wrap("A warp's 128-bit load from shared memory, pass by pass, coloured by quarter-warp", style.TITLE),
                 fontsize=style.TITLE, y=1 - 0.05 / height, va="top")
    return fig
