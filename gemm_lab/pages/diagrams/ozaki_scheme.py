"""Chapter 10's Ozaki scheme: the Chinese remainder theorem as strips (`crt`), the pipeline's stages with the bytes
each must move (`ozaki_pipeline`), and how one outlier column of A starves the others until equilibration feeds
them (`outlier_channel`).

Its own module because these draw the precision wing's model (`precision.ozaki`), not a kernel's tiles or lanes.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from ... import catalog
from ...precision import ozaki
from .. import style
from ..style import TEXT, WIDTH, stamp, wrap


def crt(moduli: tuple[int, ...], x: int) -> Figure:
    """The Chinese remainder theorem as strips: one row per modulus p over the integers of [-P/2, P/2] (P the product
    of the moduli), the integers with x's residue modulo p filled in; the last row keeps those every modulus allows,
    which is x alone. Patches carry a gid ("p=<modulus>" or "all") so tests can count what is drawn."""
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
    pinned = catalog.validate("ozaki", params)["MODULI"]
    moduli = pinned or ozaki.CANDIDATES[1]
    m, n, k = (size,) * 3 if isinstance(size, int) else size
    traffic = ozaki.traffic(moduli, m, n, k)
    what = {
        "scale": "norms of rows and columns; mean\nexponents of A's columns, B's rows",
        "equilibrate": "$A\\,2^{s}$ and $2^{-s}B$ along K where\nthe exponents are unbalanced",
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
        ra = ozaki.residues(a, b, moduli, s)[0]
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
