"""The book's charts of measurements. Every chart says on its face where its data came from.

Pictures of ideas (tiles, lanes, banks, timelines) are in `diagrams`; both keep `style`'s rule that figure text is
at least the page's body size.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from .. import catalog, run
from ..models import model
from ..records import CUBLAS, CUBLAS_KERNELS, Measurement, date_span
from ..spec import ceil_div, shape_of
from .style import TEXT, TITLE, WIDTH, renderer, stamp, wrap
from .tables import baseline_name, counters_provenance, ozaki_label, params_text, provenance, shape_text

CUBLAS_STYLE = {"color": "black", "linestyle": "--", "linewidth": 1.2}


# matplotlib's ten default colours, then fourteen more that none of them resembles
PALETTE = tuple(f"C{i}" for i in range(10)) + ("#000080", "#808000", "#008080", "#800000", "#ff00ff", "#00c000",
                                               "#4b0082", "#b8860b", "#00bfff", "#ff4500", "#2f4f4f", "#ff69b4",
                                               "#8b4513", "#9acd32")


def color(kernel: str) -> str:
    """One colour per kernel, the same on every page, and no two kernels alike (up to 24)."""
    names = list(catalog.KERNELS)
    return "black" if kernel == CUBLAS else PALETTE[names.index(kernel) % len(PALETTE)] if kernel in names else "grey"


def titled(ax: Any, text: str) -> None:
    """The axes' title, wrapped to the figure's width at the book's title size."""
    ax.set_title(wrap(text, TITLE), fontsize=TITLE)


def legend_below(fig: Figure, ax: Any, columns: int = 2, **kwargs: Any) -> None:
    """The legend under the axes, clear of every line (charts of many series)."""
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=columns, frameon=False, **kwargs)


def bars(ms: Sequence[Measurement], title: str = "") -> Figure:
    """GFLOP/s per kernel at one shape, each bar labelled with its share of cuBLAS (same run)."""
    fig, ax = plt.subplots(figsize=(WIDTH, 0.6 * len(ms) + 1.6))
    y = range(len(ms))
    # an outline keeps a bar of 1 % of the axis (chapter 1's naive kernel) visible as a bar
    ax.barh(y, [x.gflops for x in ms], color=[color(x.kernel) for x in ms], edgecolor="black", linewidth=0.6)
    cublas = sum(x.cublas_gflops for x in ms) / len(ms)
    right = max(cublas, max(x.gflops for x in ms)) * 1.5
    # the label starts a few points past the bar's end, so its box never covers the bar; one that would reach across
    # the cuBLAS line (a label is about 0.3 of the axis wide) starts past the line instead, with room to its right
    past = [0 <= cublas - x.gflops < 0.3 * right for x in ms]
    right = max(right, 1.75 * cublas) if any(past) else right
    for i, x in enumerate(ms):
        at = cublas if past[i] else x.gflops
        ax.annotate(f"{x.gflops:,.0f}\n{x.pct_cublas:.1f}% of cuBLAS", (at, i), xytext=(6, 0),
                    textcoords="offset points", va="center",
                    bbox={"facecolor": "white", "edgecolor": "none", "pad": 1, "alpha": 0.85})
    lo, hi = min(x.cublas_gflops for x in ms), max(x.cublas_gflops for x in ms)
    spread = f"{cublas:,.0f}" if hi - lo < 0.005 * cublas else f"mean {cublas:,.0f}; each race's {lo:,.0f}–{hi:,.0f}"
    ax.axvline(cublas, **CUBLAS_STYLE, label=f"cuBLAS SGEMM ({spread}); each % is of its own race's")
    ax.set_yticks(list(y), instance_labels(ms))
    ax.invert_yaxis()
    ax.set_xlabel("GFLOP/s (higher is better)")
    ax.set_xlim(0, right)
    ax.xaxis.set_major_locator(plt.MaxNLocator(4))  # five-digit tick labels need the room beside long bar labels
    ax.xaxis.set_major_formatter("{x:,.0f}")  # thousands written as the bars' labels write them
    shapes = sorted({f"{x.m}x{x.n}x{x.k}" for x in ms})
    titled(ax, title or f"SGEMM at M x N x K = {', '.join(shapes)}")
    fig.tight_layout()
    legend_below(fig, ax, 1)
    return stamp(fig, provenance(ms))


def instance_labels(ms: Sequence[Measurement], width: int = 22) -> list[str]:
    """Short names for measurements shown side by side: the kernel where kernels differ, and only the parameters
    that differ between them (all of them would not fit beside a bar), wrapped to `width` characters."""
    import textwrap

    kernels = {x.kernel for x in ms}
    differ = [p for p in dict.fromkeys(p for x in ms for p in x.params)
              if len({x.params.get(p) for x in ms}) > 1]
    out = []
    for x in ms:
        varied = ", ".join(_value_text(p, x.params[p]) for p in differ if p in x.params)
        text = " ".join(filter(None, (x.kernel if len(kernels) > 1 or not varied else "", varied)))
        out.append(textwrap.fill(text or params_text(x.params), width))
    return out


# Parameters whose values are codes: a label names the value, with the code after it ("plain (LAYOUT=0)").
VALUE_NAMES = {"LAYOUT": catalog.A_LAYOUTS}


def _value_text(param: str, value: int) -> str:
    names = VALUE_NAMES.get(param, {})
    return f"{names[value]} ({param}={value})" if value in names else f"{param}={value}"


def _shades(base: str, n: int) -> list:
    """n shades of `base`, from dark (mixed with black) to light (mixed with white): points of one kernel told apart,
    still of its colour."""
    from matplotlib.colors import to_rgb

    if n == 1:
        return [base]
    out = []
    for i in range(n):
        t = -0.6 + 1.1 * i / (n - 1)  # -0.6: 60 % black ... 0.5: 50 % white
        out.append(tuple(c * (1 + t) if t < 0 else c + (1 - c) * t for c in to_rgb(base)))
    return out


SIZE_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "h")  # one per matrix size where a chart shows several


def vs_size(ms: Sequence[Measurement], title: str = "GFLOP/s vs matrix size", *, log: bool = True) -> Figure:
    """GFLOP/s against M = N = K for each kernel, with cuBLAS (median of the same runs) as reference; `log=False`
    gives GFLOP/s a linear axis, which separates kernels that lie close together near cuBLAS."""
    fig, ax = plt.subplots(figsize=(WIDTH, 4))
    series: dict[str, list[Measurement]] = {}
    for x in ms:
        series.setdefault(x.kernel, []).append(x)
    cublas: dict[int, list[float]] = {}
    for name, xs in series.items():
        xs = sorted(xs, key=lambda x: x.m)
        if name != CUBLAS:
            ax.plot([x.m for x in xs], [x.gflops for x in xs], "o-", color=color(name), label=name)
        for x in xs:
            cublas.setdefault(x.m, []).append(x.cublas_gflops)
    sizes = sorted(cublas)
    ax.plot(sizes, [sorted(cublas[s])[len(cublas[s]) // 2] for s in sizes], **CUBLAS_STYLE, marker="s",
            label="cuBLAS SGEMM")
    ax.set_xscale("log", base=2)
    if log:
        ax.set_yscale("log")
    else:
        ax.set_ylim(bottom=0)
    ax.set_xticks(sizes, [str(s) for s in sizes])
    ax.set_xlabel("M = N = K")
    ax.set_ylabel("GFLOP/s (log scale)" if log else "GFLOP/s")
    titled(ax, title)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    legend_below(fig, ax, 2)
    return stamp(fig, provenance(ms))


def scoreboard(ms: Sequence[Measurement], title: str = "", labels: Sequence[str] | None = None) -> Figure:
    """The book's map: each kernel's share of cuBLAS at one shape, in chapter order, with its TFLOP/s.

    Each bar is against cuBLAS timed in the same run in the math the kernel promises (yardstick.BASELINE), so the
    TF32 kernels (hatched) race cuBLAS on TF32 tensor cores and the FP32 and 3xTF32 ones race SGEMM. `labels`
    names the bars instead of "chapter kernel", in the order of `ms` (which then keeps its order).
    """
    order = list(catalog.KERNELS)
    if labels is not None and len(labels) != len(ms):
        raise ValueError(f"{len(labels)} labels for {len(ms)} measurements")
    if labels is None:  # the reading order: chapter names sort as _toc.yml lists them (ch08, ch08a, ch08b, ch08c)
        ms = sorted(ms, key=lambda x: (catalog.get(x.kernel).chapter, order.index(x.kernel)))
    fig, ax = plt.subplots(figsize=(WIDTH, 0.4 * len(ms) + 1.6))
    y = list(range(len(ms)))
    bars_ = ax.barh(y, [x.pct_cublas for x in ms], color=[color(x.kernel) for x in ms], height=0.7)
    for bar, x in zip(bars_, ms):
        bar.set_hatch("////" if baseline_name(x.precision) == "cuBLAS TF32" else "")
        bar.set_edgecolor("white")
        middle = bar.get_y() + bar.get_height() / 2
        spread = x.pct_range if x.precision != "fp32" else None  # a tensor-core headline: the rounds' median
        if spread:
            ax.plot(spread, [middle, middle], color="black", linewidth=1.5, solid_capstyle="butt")
            ax.plot(spread, [middle, middle], "|", color="black", markersize=8)
        ax.text(1.02, middle, f"{x.pct_cublas:.0f}%" + (" ({:.0f}–{:.0f}),\n".format(*spread) if spread else ", ")
                + f"{x.gflops / 1e3:,.1f} TFLOP/s", transform=ax.get_yaxis_transform(), va="center", linespacing=1.0)
    chapters = [int(catalog.get(x.kernel).chapter[2:4]) for x in ms]
    for i in range(1, len(ms)):
        if chapters[i] != chapters[i - 1]:
            ax.axhline(i - 0.5, color="lightgray", linewidth=0.8)
    ax.set_yticks(y, [wrap(t, TEXT, 2.4) for t in labels] if labels is not None else
                  [f"{catalog.get(x.kernel).chapter[2:].split('_')[0].lstrip('0')} {x.kernel}" for x in ms])
    ax.set_ylim(len(ms) - 0.5, -0.5)
    ax.axvline(100, **CUBLAS_STYLE)
    ax.set_xlim(0, max(110, max(max(x.pct_range or (x.pct_cublas,)) for x in ms) * 1.05))
    ax.set_xlabel(wrap("% of cuBLAS timed in the same run, in the kernel's math (higher is better)", TEXT, 4.5))
    if labels is None:
        ax.set_ylabel("chapter, kernel")
    shapes = sorted({f"M = N = K = {x.m}" if x.m == x.n == x.k else f"{x.m}x{x.n}x{x.k}" for x in ms})
    ax.set_title(wrap(title, TITLE) if title else f"Every kernel vs cuBLAS, chapter by chapter\n{', '.join(shapes)}",
                 fontsize=TITLE)
    fig.tight_layout()
    sgemm = [name for precision, name in (("fp32", "FFMA"), ("3xtf32", "3xTF32"), ("ozaki", "Ozaki"))
             if any(x.precision == precision for x in ms)]
    sgemm_label = " and ".join([", ".join(sgemm[:-1]), sgemm[-1]] if len(sgemm) > 1 else sgemm)
    handles = [*([Patch(facecolor="gray", label=f"{sgemm_label} kernels vs cuBLAS SGEMM (FP32)")] if sgemm else []),
               *([Patch(facecolor="gray", hatch="////", edgecolor="white", label="TF32 kernels vs cuBLAS TF32")]
                 if any(x.precision == "tf32" for x in ms) else []),
               plt.Line2D([], [], **CUBLAS_STYLE, label="cuBLAS = 100%"),
               *([plt.Line2D([], [], color="black", marker="|", markersize=8,
                             label="tensor cores: median of the rounds' shares, their range (in brackets)")]
                 if any(x.pct_range and x.precision != "fp32" for x in ms) else [])]
    fig.legend(handles=handles,
               loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=1, handlelength=2.5, handleheight=1.3,
               frameon=False)
    return stamp(fig, provenance(ms))


def ladder(ladders: dict[int, Sequence[Measurement]], labels: Sequence[str], title: str = "") -> Figure:
    """Rungs of a ladder of options, top to bottom: each rung's share of cuBLAS (timed in turns in the same run, in
    the kernel's math) as the median of its rounds' shares, with the rounds' lowest and highest share as an
    interval, one marker per size (`ladders`: size -> the rungs' measurements, in the order of `labels`). Two
    rungs whose intervals overlap are not told apart by these rounds; a rung clear of the one above it moved."""
    sizes = list(ladders)
    if any(len(xs) != len(labels) for xs in ladders.values()):
        raise ValueError(f"{len(labels)} labels; each size needs one measurement per label")
    fig, ax = plt.subplots(figsize=(WIDTH, 0.75 * len(labels) + 2.0))
    markers, offset = "osD^", 0.32 / max(1, len(sizes) - 1) if len(sizes) > 1 else 0.0
    for j, size in enumerate(sizes):
        y = [i - 0.16 + j * offset if len(sizes) > 1 else i for i in range(len(labels))]
        for yi, x in zip(y, ladders[size]):
            low, high = x.pct_range or (x.pct_cublas, x.pct_cublas)
            ax.plot([low, high], [yi, yi], color=f"C{j}", linewidth=2, solid_capstyle="butt")
            ax.plot([low, high], [yi, yi], "|", color=f"C{j}", markersize=10)
        ax.plot([x.pct_cublas for x in ladders[size]], y, markers[j % len(markers)], color=f"C{j}", markersize=8,
                linestyle="none", label=f"M = N = K = {size}")
    ax.axvline(100, **CUBLAS_STYLE, label="cuBLAS = 100%")
    ax.set_yticks(range(len(labels)), [wrap(t, TEXT, 2.5) for t in labels])
    ax.tick_params(axis="y", length=0)  # a tick beside a two-line label reads as a stray "_" between its lines
    ax.set_ylim(len(labels) - 0.5, -0.5)
    every = [v for xs in ladders.values() for x in xs for v in (x.pct_range or (x.pct_cublas,))]
    ax.set_xlim(min(every) - 5, max(max(every), 100) + 5)
    ax.set_xlabel(wrap("% of cuBLAS in the kernel's math, timed in turns in the same run (marker: the median of the "
                       "rounds; bar: their range)", TEXT, 4.0))
    ax.grid(True, axis="x", alpha=0.3)
    if title:
        ax.set_title(wrap(title, TITLE, 3.9), fontsize=TITLE)
    fig.tight_layout()
    legend_below(fig, ax, len(sizes) + 1, columnspacing=1.0, handletextpad=0.4)
    return stamp(fig, provenance([x for xs in ladders.values() for x in xs]))


def roofline(ceilings: dict, ms: Sequence[Measurement], title: str = "") -> Figure:
    """Attainable GFLOP/s vs arithmetic intensity (measured DRAM bandwidth, FP32 peak), kernels on it.

    Each kernel sits at the intensity its traffic model predicts, which is what it would reach if
    every global load went to DRAM; caches move real kernels to the right of that point.
    """
    peak, bw = ceilings["peak_gflops"], ceilings["dram_gbs"]
    fig, ax = plt.subplots(figsize=(WIDTH, 4.2))
    xs = sorted({2.0**e for e in range(-4, 13)} | {peak / bw})  # the ridge point too, so the line bends where it is
    ax.plot(xs, [model.roofline(i, peak, bw) for i in xs], color="dimgray", linewidth=2)
    # the peak's label sits above its line, in room the y-axis keeps for it
    ax.annotate(f"FP32 FFMA peak {peak / 1e3:.1f} TFLOP/s", (xs[-1], peak), xytext=(0, 4), textcoords="offset points",
                ha="right", va="bottom")
    sizes = sorted({(x.m, x.n, x.k) for x in ms})
    for x in ms:
        if x.kernel == CUBLAS:
            i = 2 * x.m * x.n * x.k / model.compulsory_bytes(x.m, x.n, x.k)
        else:
            i = model.intensity(x.kernel, x.m, x.n, x.k, x.params)
        marker = SIZE_MARKERS[sizes.index((x.m, x.n, x.k)) % len(SIZE_MARKERS)]  # one marker per size, told apart
        name = "cuBLAS SGEMM" if x.kernel == CUBLAS else x.kernel
        ax.plot(i, x.gflops, marker, color=color(x.kernel), markersize=8, linestyle="none",
                label=f"{name} at {shape_text(x.m, x.n, x.k)}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    low, _ = ax.get_ylim()
    ax.set_ylim(low, peak * 2.2)
    ax.set_xlabel("arithmetic intensity (FLOP per byte of global traffic, model)")
    ax.set_ylabel("GFLOP/s")
    titled(ax, title or f"Roofline of the {ceilings['gpu']}")
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    # the bandwidth's label runs along its slope, just above it (the angle as drawn, once the axes have their size)
    (x0, y0), (x1, y1) = ax.transData.transform([(xs[1], bw * xs[1]), (xs[5], bw * xs[5])])
    ax.annotate(f"DRAM {bw / 1e3:.2f} TB/s (measured)", (xs[1], bw * xs[1]), xytext=(-4, 6), textcoords="offset points",
                rotation=math.degrees(math.atan2(y1 - y0, x1 - x0)), rotation_mode="anchor", ha="left", va="bottom")
    legend_below(fig, ax, 2)
    date = ceilings["recorded_at"][:10]
    return stamp(fig, provenance(ms) + f"; ceilings recorded on {ceilings['gpu']}, {date}")


def tile_heatmaps(ms: Sequence[Measurement], x: str, y: str, facet: str, title: str = "") -> Figure:
    """TFLOP/s over two parameters, one panel per value of a third (empty cells: illegal or not run).

    Panels sit side by side as far as cells stay wide enough for their numbers in body-size type, then wrap.
    """
    import numpy as np

    facets = sorted({m.params[facet] for m in ms})
    xs, ys = sorted({m.params[x] for m in ms}), sorted({m.params[y] for m in ms})
    cell, label = 0.45, 0.7  # inches: one cell's width (a number like 31.2), a panel's axis labels
    per_row = max(1, min(len(facets), int((WIDTH - 1.0) // (len(xs) * cell + label))))
    rows = ceil_div(len(facets), per_row)
    fig, axes = plt.subplots(rows, per_row, squeeze=False, layout="constrained",
                             figsize=(WIDTH, rows * (len(ys) * 0.42 + 1.3) + 0.6))
    # the colours span the data, not 0 to the top: a sweep's instances lie within a few tens of % of each other
    low, top = min(m.gflops for m in ms) / 1e3, max(m.gflops for m in ms) / 1e3
    dark = low + 0.55 * (top - low)  # viridis is dark below about here: white numbers there
    for ax in axes.flat[len(facets):]:
        ax.set_visible(False)
    for ax, f in zip(axes.flat, facets):
        grid = np.full((len(ys), len(xs)), np.nan)
        for m in ms:
            if m.params[facet] == f:
                grid[ys.index(m.params[y]), xs.index(m.params[x])] = m.gflops / 1e3
        image = ax.imshow(grid, origin="lower", cmap="viridis", vmin=low, vmax=top, aspect="auto")
        for (r, c), v in np.ndenumerate(grid):
            if not np.isnan(v):
                ax.text(c, r, f"{v:.1f}", ha="center", va="center", color="white" if v < dark else "black")
        ax.set_xticks(range(len(xs)), xs)
        ax.set_yticks(range(len(ys)), ys)
        ax.set_xlabel(x)
        ax.set_ylabel(y)
        ax.set_title(f"{facet} = {f}", fontsize=TEXT)
    fig.colorbar(image, ax=axes, label="TFLOP/s", shrink=0.9)
    shape = ms[0]
    fig.suptitle(wrap(title or f"{shape.kernel} at {shape.m}x{shape.n}x{shape.k}: TFLOP/s", TITLE))
    return stamp(fig, provenance(ms))


def traffic(rows: Sequence[dict], predicted: Sequence[float], labels: Sequence[str], title: str = "") -> Figure:
    """Bytes the traffic model predicts beside what the L2 and DRAM counters measured."""
    import numpy as np

    fig, ax = plt.subplots(figsize=(WIDTH, 3.8))
    x = np.arange(len(rows))
    l2 = [r["metrics"]["lts__t_sectors_srcunit_tex_op_read.sum"] * 32 for r in rows]
    dram = [r["metrics"]["dram__bytes_read.sum"] for r in rows]
    ax.bar(x - 0.27, [p / 1e9 for p in predicted], 0.27, label="model: global loads requested", color="C7")
    ax.bar(x, [v / 1e9 for v in l2], 0.27, label="measured: L2 reads from L1 (ncu)", color="C0")
    ax.bar(x + 0.27, [v / 1e9 for v in dram], 0.27, label="measured: DRAM reads (ncu)", color="C3")
    ax.set_xticks(x, [wrap(t, TEXT, 1.2) for t in labels])
    ax.set_yscale("log")
    ax.set_ylabel("GB per GEMM (log scale)")
    titled(ax, title)
    ax.grid(True, axis="y", which="both", alpha=0.3)
    fig.tight_layout()
    legend_below(fig, ax, 1)
    gpu, date = rows[0]["gpu"], min(r["recorded_at"] for r in rows)[:10]
    return stamp(fig, f"counters recorded with Nsight Compute on {gpu}, {date}")


def paired(pairs: Sequence[tuple[Measurement, Measurement]], label_a: str, label_b: str, title: str = "") -> Figure:
    """GFLOP/s of the same tiles under two kernels: points above the diagonal favour the second."""
    fig, ax = plt.subplots(figsize=(5.2, 5))
    xs, ys = [a.gflops for a, _ in pairs], [b.gflops for _, b in pairs]
    ax.scatter(xs, ys, s=14, color="C0")
    top = max(xs + ys) * 1.05
    ax.plot([0, top], [0, top], "k:", linewidth=1)
    ax.set_xlim(0, top)
    ax.set_ylim(0, top)
    ax.set_xlabel(f"{label_a}: GFLOP/s")
    ax.set_ylabel(f"{label_b}: GFLOP/s")
    wins = sum(y > x for x, y in zip(xs, ys))
    titled(ax, title + f"\n{label_b} faster on {wins} of {len(pairs)} tiles")
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    return stamp(fig, provenance([m for pair in pairs for m in pair]))


def stalls(rows: Sequence[dict], labels: Sequence[str], title: str = "") -> Figure:
    """Warps stalled per issued instruction, by reason, from recorded Nsight Compute rows."""
    from ..models.hardware import STALL_REASONS
    from ..models.hardware import stalls as stall_values

    fig, ax = plt.subplots(figsize=(WIDTH, 3.8))
    width = 0.8 / len(rows)
    for i, (row, label) in enumerate(zip(rows, labels)):
        values = stall_values(row)
        ax.bar([x + i * width for x in range(len(STALL_REASONS))], [values[r] for r in STALL_REASONS],
               width=width, label=label)
    ax.set_xticks([x + 0.4 - width / 2 for x in range(len(STALL_REASONS))],
                  [r.replace("_", " ") for r in STALL_REASONS], rotation=30, ha="right")
    ax.set_ylabel("warps stalled per issue")
    titled(ax, title or "Why warps wait (Nsight Compute stall reasons)")
    fig.tight_layout()
    legend_below(fig, ax, 1)
    return stamp(fig, f"{counters_provenance(rows)}, M=N=K={rows[0]['m']}")


def gpu_bars(kernels: Sequence[str], size: int, gpus: Sequence[str]) -> Figure:
    """% of cuBLAS (same run) of each kernel's default tile at one size, one bar per recorded GPU."""
    from .. import records

    if unknown := [g for g in gpus if g not in records.recorded_gpus()]:
        raise ValueError(f"no records of {', '.join(map(repr, unknown))}; the recorded GPUs are "
                         f"{', '.join(records.recorded_gpus())}")
    m, n, k = shape_of(size)
    if not m == n == k:
        raise ValueError(f"size {size!r}: the bars stand at one cube, M = N = K")
    size = m
    fig, ax = plt.subplots(figsize=(WIDTH, 3.4))
    width = 0.8 / len(gpus)
    found: list[Measurement] = []
    for i, gpu in enumerate(gpus):
        values = []
        for kernel in kernels:
            try:
                x = records.lookup(kernel, catalog.get(kernel).full_params(), size, size, size, gpu=gpu)
                found.append(x)
                values.append(x.pct_cublas)
            except LookupError:
                values.append(0.0)
        ax.bar([j + i * width for j in range(len(kernels))], values, width=width, label=gpu)
    ax.axhline(100, **CUBLAS_STYLE, label="cuBLAS SGEMM (each GPU's own)")
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(kernels))], kernels, rotation=25, ha="right")
    ax.set_ylabel("% of cuBLAS, same run")
    titled(ax, f"Default tiles at {size}x{size}x{size} on each recorded GPU")
    fig.tight_layout()
    legend_below(fig, ax, 1)
    return stamp(fig, provenance(found))


PRECISION_MARKERS = {"fp32": "o", "tf32": "s", "3xtf32": "D", "ozaki": "^"}


def label(x: Measurement) -> str:
    """What a point or line stands for: the kernel, or which cuBLAS (its math follows the precision)."""
    if x.kernel in CUBLAS_KERNELS.values():
        return "cuBLAS, TF32 tensor cores" if x.precision == "tf32" else "cuBLAS SGEMM (FP32)"
    if x.precision == "ozaki":
        return ozaki_label(x.params["MODULI"], x.details.get("moduli"))
    return f"{x.kernel} ({x.precision.upper().replace('3XTF32', '3xTF32')})"


def error_vs_k(ms: Sequence[Measurement], title: str = "Max relative error vs K (float64 reference)") -> Figure:
    """max_rel_err against K for each kernel, with the two models of chapter 8b: FP32's accumulation error, u * sqrt(K)
    for FP32's unit roundoff u, which grows with K; and TF32's rounding of the inputs, about TF32's u whatever K (the
    error is relative to the largest |C|, which grows like sqrt(K) too on random inputs). Kernels whose errors are
    identical at every K (they sum in the same order) share one line and one legend entry, so none hides another."""
    fig, ax = plt.subplots(figsize=(WIDTH, 4.2))
    series: dict[str, list[Measurement]] = {}
    for x in ms:
        series.setdefault(label(x), []).append(x)
    lines: dict[tuple, list[tuple[str, list[Measurement]]]] = {}
    for name, xs in series.items():
        xs = sorted(xs, key=lambda x: x.k)
        lines.setdefault(tuple((x.k, x.max_rel_err) for x in xs), []).append((name, xs))
    for same in lines.values():
        xs = same[0][1]
        dashed = {"linestyle": "--"} if xs[0].kernel in CUBLAS_KERNELS.values() else {}
        ax.plot([x.k for x in xs], [x.max_rel_err for x in xs], marker=PRECISION_MARKERS.get(xs[0].precision, "o"),
                color=color(xs[0].kernel), label=_same_line([name for name, _ in same]), **dashed)
    ks = sorted({x.k for x in ms})
    # two models, two line styles (dotted, dash-dot), neither the dashes of cuBLAS's lines
    for name, u, grows, style in (("FP32 u·√K", run.UNIT_ROUNDOFF["fp32"], True, ":"),
                                  ("TF32 u", run.UNIT_ROUNDOFF["tf32"], False, "-.")):
        ax.plot(ks, [u * k**0.5 if grows else u for k in ks], style, color="dimgray", linewidth=1.6,
                label=f"model: {name}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(ks, [f"{k:,}" for k in ks])
    shapes = sorted({(x.m, x.n) for x in ms})
    square = len(shapes) == 1 and shapes[0][0] == shapes[0][1]
    ax.set_xlabel("K (inner dimension)" + (f", M = N = {shapes[0][0]}" if square else ""))
    ax.set_ylabel("max |C - C64| / max |C64| (log scale)")
    titled(ax, title)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    legend_below(fig, ax, 1)
    return stamp(fig, provenance(ms))


def _same_line(names: list[str]) -> str:
    """One legend entry for the series drawn as one line: "a (TF32)" and "b (TF32)" -> "a, b (TF32, identical)"."""
    if len(names) == 1:
        return names[0]
    kernels = [n.rsplit(" (", 1)[0] for n in names]
    kinds = {n.rsplit(" (", 1)[-1].rstrip(")") for n in names}
    kind = f"{kinds.pop()}, " if len(kinds) == 1 else ""
    return wrap(", ".join(kernels), 48) + f" ({kind}identical errors)"


def accuracy_vs_speed(ms: Sequence[Measurement], title: str = "") -> Figure:
    """Each kernel (and cuBLAS) as one point: TFLOP/s against max relative error, on one shape; the legend below
    names the points (labels beside them would print over each other where kernels nearly coincide), and cuBLAS's
    points are open rings, so a kernel that matches cuBLAS shows inside its ring."""
    fig, ax = plt.subplots(figsize=(WIDTH, 4.5))
    groups: dict[tuple[str, str], list[Measurement]] = {}
    for x in ms:  # points that would look alike (one kernel, one precision): a shade each, darkest first
        groups.setdefault((x.kernel, x.precision), []).append(x)
    shade = {id(x): c for xs in groups.values() for x, c in zip(xs, _shades(color(xs[0].kernel), len(xs)))}
    for x in ms:
        ring = x.kernel in CUBLAS_KERNELS.values()
        ax.scatter(x.gflops / 1e3, x.max_rel_err, s=220 if ring else 60, marker=PRECISION_MARKERS.get(x.precision, "o"),
                   color="none" if ring else shade[id(x)], edgecolor=shade[id(x)] if ring else "black",
                   linewidth=2 if ring else 0.6, zorder=2 if ring else 3, label=label(x))
    ax.set_yscale("log")
    ax.set_xlim(0, max(x.gflops for x in ms) / 1e3 * 1.1)
    lo, hi = min(x.max_rel_err for x in ms), max(x.max_rel_err for x in ms)
    ax.set_ylim(lo / 4, hi * 4)
    ax.set_xlabel("TFLOP/s (higher is better)")
    ax.set_ylabel("max relative error vs float64 (lower is better)")
    shapes = sorted({f"{x.m}x{x.n}x{x.k}" for x in ms})
    titled(ax, title or f"Accuracy and speed at M x N x K = {', '.join(shapes)}")
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    legend_below(fig, ax, 1)
    return stamp(fig, provenance(ms))


def memory_latency(recs: Sequence[Any]) -> Figure:
    """Nanoseconds per load of one thread's pointer chase against its working set, a line per GPU
    (`memory.MemoryRecord`s): flat while the chain fits in L1, in L2, then only in DRAM, with each GPU's L2 size
    marked. Without records, the empty chart says how to record them."""
    from ..models.memory import provenance as memory_provenance

    if not recs:
        fig, ax = plt.subplots(figsize=(WIDTH, 0.9))
        ax.axis("off")
        ax.text(0.5, 0.5, wrap("not yet recorded: run gemm-lab record --only memory on the GPU"), ha="center",
                va="center", transform=ax.transAxes)
        return fig
    fig, ax = plt.subplots(figsize=(WIDTH, 4.2))
    for i, rec in enumerate(recs):
        xs = [x["bytes"] for x in rec.sweep]
        # the L2 size is named in the legend: two GPUs' L2 lines stand too close for a label beside each
        ax.plot(xs, [x["ns"] for x in rec.sweep], "o-", color=f"C{i}",
                label=f"{rec.gpu} (dotted: its L2, {rec.properties['l2_bytes'] / 2**20:.0f} MiB)")
        ax.axvline(rec.properties["l2_bytes"], color=f"C{i}", linestyle=":", linewidth=1.2)
    ax.set_xscale("log", base=2)
    widest = max(x["bytes"] for rec in recs for x in rec.sweep)
    ax.set_xlim(right=widest * 2 ** 0.8)  # room for the last tick's label inside the frame
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(lambda v, _: f"{v:g}")
    ax.yaxis.set_minor_formatter(lambda v, _: f"{v:g}" if str(v)[0] in "25" else "")
    ticks = [2**e for e in range(12, 31, 3) if 2**e <= widest]
    ax.set_xticks(ticks, [f"{t // 2**30} GiB" if t >= 2**30 else f"{t // 2**20} MiB" if t >= 2**20 else
                          f"{t // 2**10} KiB" for t in ticks])
    ax.set_xlabel("working set of the chain")
    ax.set_ylabel("ns per load (log scale)")
    ax.set_title("One load's latency: L1, then L2, then DRAM")
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    legend_below(fig, ax, 1)
    return stamp(fig, "; ".join(memory_provenance(rec) for rec in recs))


def stage_costs(times: dict[int, dict[str, float]], sgemm: Sequence[Measurement], source: str) -> Figure:
    """The Ozaki pipeline's time at each M = N = K, stage by stage (`emulation.stage_ms`), as a share of one cuBLAS
    SGEMM's time at that size (`sgemm`: cuBLAS measurements, one per size), with SGEMM's own bar (100 %) and time
    below it: a stage bar shorter than SGEMM's beats it.
    `source` says where the stage times come from."""
    from ..precision.ozaki import STAGES

    sgemm_ms = {x.m: 1e-6 * model.flops(x.m, x.n, x.k) / x.gflops for x in sgemm}
    missing = sorted(set(times) - set(sgemm_ms))
    if missing:
        raise ValueError(f"no cuBLAS SGEMM measurement at M = N = K = {missing}")
    sizes = sorted(times)
    longest = max(100 * sum(times[s].values()) / sgemm_ms[s] for s in sizes)
    fig, ax = plt.subplots(figsize=(WIDTH, 1.0 * len(sizes) + 2.2))
    pad = 0.015 * max(100, longest)
    for row, size in enumerate(sizes):
        left = 0.0
        for i, stage in enumerate(STAGES):
            share = 100 * times[size][stage] / sgemm_ms[size]
            ax.barh(row - 0.17, share, left=left, color=f"C{i}", label=stage if row == 0 else None, height=0.42)
            if share > 0.06 * max(100, longest):  # wide enough for its number
                ax.text(left + share / 2, row - 0.17, f"{share:.0f}", ha="center", va="center", color="white")
            left += share
        total = sum(times[size].values())
        ax.text(left + pad, row - 0.17, f"{total:.2f} ms", va="center")
        # the baseline beside the stages: one SGEMM, 100 % by definition, and its time
        ax.barh(row + 0.25, 100, color="lightgrey", edgecolor="black", linewidth=0.6, height=0.3,
                label="one cuBLAS SGEMM" if row == 0 else None)
        ax.text(100 + pad, row + 0.25, f"{sgemm_ms[size]:.2f} ms", va="center")
    ax.set_yticks(range(len(sizes)), [f"{s:,}" for s in sizes])
    ax.set_ylim(len(sizes) - 0.5, -0.5)
    ax.set_ylabel("M = N = K")
    ax.set_xlim(0, 1.25 * max(100, longest))
    ax.set_xlabel("% of one cuBLAS SGEMM's time (grey: that SGEMM)")
    titled(ax, "Where the Ozaki scheme's time goes, stage by stage")
    fig.tight_layout()
    legend_below(fig, ax, 3)
    return stamp(fig, f"stages: {source}; SGEMM: {provenance(sgemm)}")


EMULATION_STYLE = {"cublas": ("cuBLAS SGEMM (FP32)", "black", "--", "o"),
                   "cublas_tf32": ("cuBLAS TF32", "dimgray", "--", "s"),
                   "wgmma_ws_3xtf32": ("3xTF32 (kernel 14)", None, "-", "D")}


def errors(rows: Sequence[Any], along: str = "k", title: str = "") -> Figure:
    """Max and median relative error against float64 (`emulation.Errors` rows), one line per method, against K
    (`along="k"`, standard normal inputs) or against phi, the spread of the inputs' exponents (`along="phi"`)."""
    import matplotlib as mpl

    if along not in ("k", "phi"):
        raise ValueError(f"along={along!r}: 'k' or 'phi'")
    series: dict[tuple[str, int], list[Any]] = {}
    for r in rows:
        series.setdefault((r.method, r.params.get("MODULI", 0)), []).append(r)
    moduli = sorted(m for name, m in series if name == "ozaki" and m)  # pinned counts, in shades
    shades = mpl.colormaps["viridis"]
    fig, axes = plt.subplots(1, 2, figsize=(WIDTH, 4.2), sharex=True)
    for (name, mods), rs in series.items():
        rs = sorted(rs, key=lambda r: getattr(r, along))
        if name == "ozaki" and not mods:  # the default, which picks its count per call: the line to read
            text, colour, line, marker = "Ozaki, auto (chosen per call)", "crimson", "-", "*"
        elif name == "ozaki":
            text, colour, line, marker = (f"Ozaki, {mods} moduli", shades(0.85 * moduli.index(mods) /
                                          max(1, len(moduli) - 1)), "-", "^")
        else:
            text, colour, line, marker = EMULATION_STYLE.get(name, (name, None, "-", "o"))
            colour = colour or color(name)
        for ax, stat in zip(axes, ("max_rel_err", "median_rel_err")):
            ax.plot([getattr(r, along) for r in rs], [getattr(r, stat) for r in rs], linestyle=line, marker=marker,
                    color=colour, label=text, markersize=5)
    xs = sorted({getattr(r, along) for r in rows})
    for ax, what in zip(axes, ("max |C - C64| / max |C64|", "median |C - C64| / |C64|")):
        ax.set_yscale("log")
        ax.set_title(what, fontsize=TEXT)
        ax.grid(True, which="major", alpha=0.3)
        if along == "k":
            ax.set_xscale("log", base=2)
            ax.set_xticks(xs[::2], [f"{x // 1024}K" if x >= 1024 else str(x) for x in xs[::2]])
    axes[0].set_ylabel("relative error (log scale)")
    shapes = sorted({(r.m, r.n) for r in rows})
    if along == "k":
        fig.supxlabel(f"K (M = N = {shapes[0][0]}), standard normal inputs" if len(shapes) == 1 else "K",
                      fontsize=TEXT)
    else:
        fig.supxlabel("φ: inputs (rand − 0.5) · exp(φ · randn)", fontsize=TEXT)
    fig.suptitle(wrap(title or ("Error against float64 as K grows" if along == "k" else
                                f"Error as the inputs' exponents spread (M = N = K = {shapes[0][0]})"), TITLE),
                 fontsize=TITLE)
    fig.tight_layout()
    legend_below(fig, axes[0], 2)
    gpus = sorted({r.gpu for r in rows})
    return stamp(fig, f"recorded on {', '.join(gpus)}, {date_span(r.recorded_at[:10] for r in rows)}")


def claims(groups: Sequence[tuple[str, Sequence[tuple[str, float, Measurement]]]], title: str = "") -> Figure:
    """Published claims beside ours, as the one ratio that travels between GPUs: % of cuBLAS SGEMM timed on the same
    GPU. One panel per source (`published.claims_beside_ours`); per step a grey bar (published, on its GPU) and a
    coloured one (ours, the instance with the same idea, on ours). Equal bars: the ratio travelled; unequal: the GPU
    or the harness changed it, and the page says why."""
    rows = [len(items) for _, items in groups]
    fig, axes = plt.subplots(len(groups), 1, figsize=(WIDTH, 0.42 * sum(rows) + 1.3 * len(groups) + 0.9),
                             gridspec_kw={"height_ratios": [r + 1.2 for r in rows]}, sharex=True, squeeze=False)
    top = max(max(p, x.pct_cublas) for _, items in groups for _, p, x in items)
    for ax, (source, items) in zip(axes[:, 0], groups):
        y = range(len(items))
        ax.barh([i - 0.2 for i in y], [p for _, p, _ in items], height=0.38, color="lightgray", hatch="///",
                edgecolor="gray", label="published, on its GPU")
        ax.barh([i + 0.2 for i in y], [x.pct_cublas for _, _, x in items], height=0.38,
                color=[color(x.kernel) for _, _, x in items], edgecolor="black", linewidth=0.6,
                label="ours, same idea, on the H100")
        for i, (_, p, x) in enumerate(items):
            at = max(p, x.pct_cublas) + 2
            at = 102 if 100 - 25 < at < 102 else at  # a label that would cross cuBLAS's line starts past it
            ax.text(at, i, f"{p:.0f} → {x.pct_cublas:.0f}%", va="center",
                    bbox={"facecolor": "white", "edgecolor": "none", "pad": 1, "alpha": 0.85})
        ax.set_yticks(list(y), [wrap(label, TEXT, 2.3) for label, _, _ in items], linespacing=0.95)
        ax.set_ylim(len(items) - 0.5, -0.5)
        ax.axvline(100, **CUBLAS_STYLE)
        ax.set_title(wrap(source, TEXT, 3.8), fontsize=TEXT, loc="left")  # within the axes' width
    ax = axes[-1, 0]
    ax.set_xlim(0, top * 1.3)
    ax.set_xlabel(wrap("% of cuBLAS SGEMM timed on the same GPU (higher is better); dashed: cuBLAS", TEXT, 4.3))
    fig.suptitle(wrap(title or "Published claims beside ours: the ratio to cuBLAS, step by step", TITLE),
                 fontsize=TITLE)
    fig.tight_layout()
    right = _room_for_labels(fig, [t for a in axes[:, 0] for t in a.texts], top * 1.3)  # as laid out
    ax.set_xlim(0, right)
    ax.set_xticks([t for t in range(0, int(right), 50) if t < right - 10])  # no tick label on the right edge
    handles = [Patch(facecolor="lightgray", hatch="///", edgecolor="gray", label="published, % of cuBLAS on its GPU"),
               Patch(facecolor="gray", label="ours, the same idea, % of cuBLAS on ours (colour: the kernel)")]
    fig.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=1, frameon=False)
    return stamp(fig, "Published: quoted as data from each source (gemm_lab.published). Ours: "
                 + provenance([x for _, items in groups for _, _, x in items]))


def _room_for_labels(fig: Figure, texts: Sequence[Any], right: float, margin_px: float = 6.0) -> float:
    """The right end of a shared x-axis starting at 0, at least `right`, far enough that every text written at a data
    x (a bar's label) ends `margin_px` inside the frame: x * W / R + width + margin <= W for axes W px wide."""
    drawn = renderer(fig)
    for t in texts:
        axes_px = t.axes.get_window_extent(drawn).width
        width = t.get_window_extent(drawn).width
        right = max(right, t.get_position()[0] * axes_px / max(1.0, axes_px - width - margin_px))
    return right


def _moduli_shade(moduli: int) -> Any:
    """A pinned count of moduli's colour, 6 to 9 from dark to light (as in the error charts' viridis)."""
    import matplotlib as mpl

    return mpl.colormaps["viridis"](0.85 * (moduli - 6) / 3)


def median_error_vs_speed(ms: Sequence[Measurement], errs: Sequence[Any], title: str = "") -> Figure:
    """Each method as one point: TFLOP/s of its sustained race (`ms`) against the median of each element's relative
    error on standard normal inputs of the same shape (`errs`, `emulation.Errors`): the median, because the max error
    of the speed check hides what an emulation loses on small elements. A measurement without an accuracy record of
    the same method and MODULI is refused (a point needs both)."""
    from ..records import CUBLAS_KERNELS as cublas_names

    def key(method: str, params: dict[str, int]) -> tuple[str, int]:
        return method, params.get("MODULI", -1)

    found = {key(e.method, e.params): e for e in errs}
    fig, ax = plt.subplots(figsize=(WIDTH, 4.5))
    ys = []
    for x in ms:
        e = found.get(key(x.kernel, x.params))
        if e is None or (e.m, e.n, e.k) != (x.m, x.n, x.k):
            raise ValueError(f"no accuracy record of {label(x)} at {x.m}x{x.n}x{x.k}")
        ring = x.kernel in cublas_names.values()
        auto = x.precision == "ozaki" and not x.params["MODULI"]
        # the Ozaki points are one kernel: the default a crimson star, pinned counts in shades, so no two look alike
        fill = "crimson" if auto else _moduli_shade(x.params["MODULI"]) if x.precision == "ozaki" else color(x.kernel)
        ax.scatter(x.gflops / 1e3, e.median_rel_err, s=220 if ring or auto else 70,
                   marker="*" if auto else PRECISION_MARKERS.get(x.precision, "o"), color="none" if ring else fill,
                   edgecolor=color(x.kernel) if ring else "black", linewidth=2 if ring else 0.6,
                   label=label(x), zorder=2 if ring else 3)
        if x.precision == "ozaki":
            pinned, ran = x.params["MODULI"], x.details.get("moduli")
            ax.annotate(str(pinned) if pinned else f"auto: {ran}", (x.gflops / 1e3, e.median_rel_err),
                        xytext=(7, 4) if pinned else (7, -14), textcoords="offset points")
        ys.append(e.median_rel_err)
    ax.set_yscale("log")
    ax.set_ylim(min(ys) / 4, max(ys) * 4)
    ax.set_xlim(0, max(x.gflops for x in ms) / 1e3 * 1.12)
    ax.set_xlabel("TFLOP/s, sustained (higher is better)")
    ax.set_ylabel(wrap("median element-wise error vs float64 (lower is better)", TEXT, 3.6))
    shapes = sorted({f"{x.m}x{x.n}x{x.k}" for x in ms})
    titled(ax, title or f"Median error and speed at M x N x K = {', '.join(shapes)}; Ozaki points: their moduli")
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    legend_below(fig, ax, 2)
    return stamp(fig, provenance(ms) + f"; errors recorded {date_span(e.recorded_at[:10] for e in errs)}")
