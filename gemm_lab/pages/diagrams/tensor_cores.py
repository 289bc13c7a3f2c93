"""How operands reach the tensor cores: which lane holds which element of an mma.sync fragment and how ldmatrix.x4
fills it, TMA's shared-memory swizzle, the warpgroup and shared-memory descriptor of a wgmma, which fragment set and
stage kernel 12's steps use while their wgmma groups are in flight, the boxes TMA copies in one step and what a
cluster reads from L2 for each k.

Its own module because these pictures follow the PTX manual's layouts through the kernels' own formulas
(`mma_fragments`, `ldmatrix_rows`, `swizzle_offset`, `k_major_desc`), which the tests check against the CUDA
source; chapters 8, 8a, 8c and 9 draw them.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle

from ... import catalog, tma
from ...models import banks
from ...spec import as_integer, ceil_div
from .. import style
from ..style import TEXT, WIDTH, stamp, wrap

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
    lane = banks.check_lane(lane)
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
    lane = banks.check_lane(lane)
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
    if as_integer("offset", offset) < 0:
        raise ValueError(f"offset = {offset}: a byte of a box is at offset 0 or more")
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
    lines = min(ceil_div(rows * row_bytes, LINE), shown)
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
                       [str(i) if per_line == 1 else f"{per_line * i}-{per_line * i + per_line - 1}"
                        for i in range(lines)])
    axes[0].set_ylabel("box row" + ("" if per_line == 1 else "s") + " (one 128-byte line)")
    total = ceil_div(rows * row_bytes, LINE)
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
    p = catalog.validate("wgmma_tf32", params)
    bm, bn = p["BM"], p["BN"]
    groups = bn // 64
    fig = plt.figure(figsize=(WIDTH, 7.4))
    outer = fig.add_gridspec(2, 1, height_ratios=[1.35, 4.1], hspace=0.4)
    grid = outer[1].subgridspec(2, 2, width_ratios=[1, 3.2], height_ratios=[1.0, 3.0], hspace=0.12, wspace=0.06)
    block, shared = fig.add_subplot(outer[0]), fig.add_subplot(grid[0, 1])
    note, register, acc = fig.add_subplot(grid[0, 0]), fig.add_subplot(grid[1, 0]), fig.add_subplot(grid[1, 1])
    for g in range(groups):  # the block's C tile, BM rows x BN columns, one warpgroup per 64 columns
        block.add_patch(Rectangle((64 * g, 0), 64, bm, facecolor="#f6c6ad" if g == 0 else "#eeeeee",
                                  edgecolor="black", linewidth=1.2, gid=f"warpgroup {g}"))
        # three lines: "threads 128–255" on one line would fill a quarter of the strip to its borders
        block.text(64 * g + 32, bm / 2, f"warpgroup {g}\nthreads\n{128 * g}–{128 * g + 127}", ha="center",
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
    shared.text(bm / 2, 4, "read by the tensor cores,\nthrough a descriptor", ha="center", va="center",
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
    p = catalog.validate("wgmma_tf32", params)
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


def wgmma_steps(stages: int, steps: Sequence[int]) -> list[dict[str, int]]:
    """What each main-loop step i of kernel 12's TF32 path (12_tf32_wgmma.cu, `run_step`) touches: the fragment set
    its loads write (frag0 for even steps, frag1 for odd: the loop runs steps in pairs), the stage it reads (i %
    STAGES), and the tile its cp.async issues after the barrier (i + STAGES - 2) with the stage that tile fills (the
    one step i - 2 read)."""
    if stages < 3:
        raise ValueError(f"STAGES = {stages}: kernel 12 needs at least 3 (one read, one still read, one arriving)")
    return [{"step": i, "frag": i % 2, "reads": i % stages, "fills": (i + stages - 2) % stages,
             "tile": i + stages - 2} for i in steps]


def wgmma_wait(params: dict[str, int] | None = None, step: int = 4) -> Figure:
    """What wgmma_wait<1> leaves in flight: kernel 12's main loop (TF32) over steps s - 1, s, s + 1 (s = `step`), in
    the order 12_tf32_wgmma.cu runs each: wait for the copies and sync, issue the next copy, load the step's B^T
    fragments into its set (`wgmma_steps`), wgmma.fence, BK / 8 wgmmas (one per 8-deep slice), commit,
    wgmma_wait<1>. Below the threads, each fragment set
    (written by a step's loads, then read by its group while the group is in flight) and each of the STAGES shared
    buffers (filled by cp.async, then read by its step until that step's group is done). A schematic: order, not
    durations, drawn where the tensor cores are the slower side, so each wait<1> waits for the group before.
    Patches carry a gid ("frag f group i", "frag f loads i", "stage k read i", "stage k fill j")."""
    p = catalog.validate("wgmma_tf32", params)
    stages = p["STAGES"]
    if step < 1:
        raise ValueError(f"step = {step}: the picture starts at step s - 1 >= 0")
    wgmmas = catalog.WGMMA_BK // 8  # one per 8-deep slice of a step
    frag_colours = ("#6baed6", "#74c476")  # frag0, frag1
    parts = (  # (name, schematic length, colour (None: the step's fragment set's), legend)
        ("sync", 1.0, "#9a9a9a", "copies landed, barrier"), ("cp.async", 0.8, "#f2c879", "cp.async: the next copy"),
        ("loads", 1.8, None, "loads into frag"), ("fence", 0.3, "black", "wgmma.fence"),
        ("wgmma", 1.3, "#3f6fb5", f"{wgmmas} wgmmas, commit"), ("wait", 1.6, "white", "wgmma_wait<1>"))
    period = sum(length for _, length, _, _ in parts)
    at = {part[0]: sum(length for _, length, _, _ in parts[:i]) for i, part in enumerate(parts)}
    first, last = step - 1, step + 1
    left, right = 0.0, 3 * period + 1.6
    rows = ("threads", "frag0", "frag1", *(f"stage {k}" for k in range(stages)))
    height = 0.42 * len(rows)  # inches of rows; above them the title and the steps, below the legend
    fig = plt.figure(figsize=(WIDTH, height + 3.3))
    ax = fig.add_axes((0.14, 1 - (height + 1.0) / fig.get_figheight(), 0.84, height / fig.get_figheight()))
    per_unit = 0.84 * WIDTH * style.DPI / (right - left)  # px per unit of the schematic's time

    def start(i: int) -> float:  # where step i begins
        return (i - first) * period

    def name(i: int) -> str:
        return "s" if i == step else f"s {'−' if i < step else '+'} {abs(i - step)}"

    def bar(row: int, x0: float, x1: float, colour: Any, label: str = "", gid: str = "", **kw: Any) -> None:
        x0, x1 = max(x0, left), min(x1, right)  # what the window shows
        if x1 <= x0:
            return
        ax.add_patch(Rectangle((x0, row - 0.32), x1 - x0, 0.64, facecolor=colour, edgecolor="black",
                               linewidth=0.6, gid=gid or None, **kw))
        if label and 0.55 * TEXT * style.DPI / 72 * len(label) + 8 <= (x1 - x0) * per_unit:  # where it fits
            ax.text((x0 + x1) / 2, row, label, ha="center", va="center",
                    bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.5, "alpha": 0.7})

    for x in wgmma_steps(stages, range(first - stages, last + 2)):
        i, t, f = x["step"], start(x["step"]), x["frag"]
        if first <= i:  # step s + 2's first instructions show at the right edge, as its stages do
            for part, length, colour, _ in parts:
                bar(0, t + at[part], t + at[part] + length, colour or frag_colours[f],
                    hatch="//" if part == "wait" else None)
        bar(1 + f, t + at["loads"], t + at["fence"], frag_colours[f], gid=f"frag{f} loads {i}")
        bar(1 + f, t + at["wgmma"], start(i + 2), to_rgba(frag_colours[f], 0.3), f"group {name(i)}",
            f"frag{f} group {i}")
        bar(3 + x["reads"], t + at["cp.async"], start(i + 2), to_rgba("#9e9ac8", 0.45), f"{name(i)} reads",
            f"stage {x['reads']} read {i}")
        bar(3 + x["fills"], t + at["cp.async"], start(x["tile"]) + at["cp.async"], to_rgba("#f2c879", 0.6),
            f"tile {name(x['tile'])} lands", f"stage {x['fills']} fill {x['tile']}", hatch="..")
    for i in range(first, last + 2):
        ax.axvline(start(i), color="lightgray", linewidth=0.8, zorder=0)
    for i in range(first, last + 1):  # each step's wait<1> returns where the group before it is done
        ax.axvline(start(i + 1), color="#b5462f" if i == step else "dimgray", linestyle="--",
                   linewidth=2.2 if i == step else 1)
    done = wgmma_steps(stages, [step - 1])[0]  # what step s's wait<1> lets go: group s - 1's set and stage
    ax.plot([start(step + 1)] * 2, [1 + done["frag"], 3 + done["reads"]], "o", color="#b5462f", markersize=9,
            markeredgecolor="white", zorder=5)
    ax.set_xlim(left, right)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_yticks(range(len(rows)), rows)
    ax.tick_params(axis="y", length=0)
    ax.set_xticks([start(i + 1) for i in range(first, last + 1)],
                  [f"wait<1>\nof {name(i)}" for i in range(first, last + 1)])
    top = ax.secondary_xaxis("top")
    top.set_xticks([start(i) + period / 2 for i in range(first, last + 1)],
                   [f"step {name(i)} = {i}" for i in range(first, last + 1)])
    top.tick_params(length=0)
    handles = [Patch(facecolor=c, edgecolor="black", hatch="//" if part == "wait" else None, label=text)
               for part, _, colour, label in parts
               for c, text in ([(colour, label)] if colour else zip(frag_colours, (f"{label}0", f"{label}1")))]
    handles.append(plt.Line2D([], [], marker="o", color="#b5462f", linestyle="none", markersize=9,
                              label="safe to overwrite (a stage: after\nthe next __syncthreads)"))
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.43, -0.3), ncol=2, frameon=False,
              handlelength=1.2, columnspacing=1.0, title="threads, in each step's order:")
    fig.suptitle(wrap(f"Kernel 12, STAGES = {stages}: after step s's wgmma_wait<1> (red), one group is still in "
                      "flight", style.TITLE), fontsize=style.TITLE)
    return stamp(fig, "Schematic: order, not durations (drawn where the tensor cores are the slower side). frag0, "
                      "frag1: the two register sets of B^T fragments; stage k: a shared-memory buffer. A group "
                      f"(a step's {wgmmas} wgmmas) reads its set and stage from issue until a wait retires it.")


RANK_COLOURS = ("#9ecae1", "#fdae6b", "#a1d99b", "#dadaeb")  # the blocks of a cluster, by rank


def tma_boxes(params: dict[str, int] | None = None) -> Figure:
    """One 32-deep step of kernel 13 (13_tf32_mma_tma.cu) at its parameters, to scale. Above, the cluster's tile of C
    (CLUSTER blocks of BM x BN stacked along M) with the boxes TMA copies for the step: one BM x 32 box of A per block,
    and the BN / 32 boxes of B (32 x 32), box j issued by the block of rank j % CLUSTER and multicast to all of them.
    Below, one stage of a block's ring in shared memory, in bytes: A's box, then B's boxes, each coloured by the rank
    that issued it. Patches carry a gid ("A box r", "B box j", "stage A", "stage B j")."""
    p = catalog.validate("mma_tf32_tma", params)
    bm, bn, cluster = p["BM"], p["BN"], p["CLUSTER"]
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


def cluster_reads(tiles: dict[str, tuple[int, int, int]]) -> Figure:
    """What one cluster reads per k: for each name, (block rows, block columns, blocks per cluster: stacked along M and
    sharing B by multicast, or, negative, side by side along N and sharing A), the cluster's tile of C drawn to scale
    beside the column of A and the row of B it reads for one k, and the bytes per k for every 65,536 outputs (a
    256 x 256 tile's worth). Patches carry a gid ("block b")."""
    fig, axes = plt.subplots(1, len(tiles), figsize=(WIDTH, 5.0))
    axes = np.atleast_1d(axes)
    top = max(max(bm * max(c, 1), bn * max(-c, 1)) for bm, bn, c in tiles.values())
    strip = 0.07 * top
    for ax, (name, (bm, bn, cluster)) in zip(axes, tiles.items()):
        along_m, along_n = max(cluster, 1), max(-cluster, 1)
        rows, cols = bm * along_m, bn * along_n  # A: one value per row of the cluster's tile; B: one per column
        inside = bn / top >= 0.4  # room for a block's label inside it
        for b in range(along_m * along_n):
            x, y = b // along_m * bn, b % along_m * bm
            ax.add_patch(Rectangle((x, y), bn, bm, facecolor="#cfe0f5", edgecolor="black", linewidth=1.2,
                                   gid=f"block {b}"))
            if inside or along_n == 1:  # inside the block, or right of the column of blocks
                ax.text(x + bn / 2 if inside else cols + 0.04 * top, y + bm / 2, f"block {b}\n{bm} x {bn}",
                        ha="center" if inside else "left", va="center")
            else:  # narrow blocks side by side: each one's number inside it, their size once, under them
                ax.text(x + bn / 2, y + bm / 2, f"block\n{b}", ha="center", va="center")
        if not inside and along_n > 1:
            ax.text(cols / 2, rows + 0.04 * top, f"blocks of {bm} x {bn}", ha="center", va="top")
        ax.add_patch(Rectangle((-1.5 * strip, 0), strip, rows, facecolor="C0", alpha=0.85))
        ax.add_patch(Rectangle((0, -1.5 * strip), cols, strip, facecolor="C1", alpha=0.85))
        ax.text(-1.9 * strip, rows / 2, f"A: {rows} rows", rotation=90, ha="right", va="center", color="C0")
        ax.text(0, -1.9 * strip, f"B: {cols} columns", ha="left", va="bottom", color="C1")
        per_k = (rows + cols) * 4 * 65536 / (rows * cols)
        ax.set_xlim(-3.2 * strip, top * 1.02)
        ax.set_ylim(top * 1.02, -3.4 * strip)
        ax.set_aspect("equal")
        ax.axis("off")
        shares = "" if along_m * along_n == 1 else ", sharing A" if along_n > 1 else ", sharing B"
        ax.set_title(wrap(f"{name}{shares}: ({rows} + {cols}) x 4 B per k, {per_k / 1024:.1f} KiB per 65,536 "
                          "outputs", TEXT, 0.95 * WIDTH / len(tiles)), fontsize=TEXT)
    fig.suptitle(wrap("One cluster's tile of C, to scale, and the values of A and B it reads from L2 for each k "
                      "(a cluster's blocks share what they both read by multicast)", style.TITLE),
                 fontsize=style.TITLE)
    fig.tight_layout()
    return fig
