"""The book's charts. Every chart drawn from measurements says on its face where they came from."""
from __future__ import annotations

from typing import Any, Sequence

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle

from . import banks, catalog, model, run
from .records import CUBLAS, CUBLAS_KERNELS, Measurement
from .tables import baseline_name, params_text, provenance

CUBLAS_STYLE = {"color": "black", "linestyle": "--", "linewidth": 1.2}


# matplotlib's ten default colours, then twelve more that none of them resembles
PALETTE = tuple(f"C{i}" for i in range(10)) + ("#000080", "#808000", "#008080", "#800000", "#ff00ff", "#00c000",
                                               "#4b0082", "#b8860b", "#00bfff", "#ff4500", "#2f4f4f", "#ff69b4")


def color(kernel: str) -> str:
    """One colour per kernel, the same on every page, and no two kernels alike (up to 22)."""
    names = list(catalog.KERNELS)
    return "black" if kernel == CUBLAS else PALETTE[names.index(kernel) % len(PALETTE)] if kernel in names else "grey"


def stamp(fig: Figure, text: str) -> Figure:
    """Write the data's provenance at the foot of a figure."""
    if text:
        fig.text(0.99, 0.005, text, ha="right", va="bottom", fontsize=7, color="dimgray", style="italic")
    return fig


def bars(ms: Sequence[Measurement], title: str = "") -> Figure:
    """GFLOP/s per kernel at one shape, each bar labelled with its share of cuBLAS (same run)."""
    fig, ax = plt.subplots(figsize=(7, 0.55 * len(ms) + 1.4))
    labels = [f"{x.kernel}\n{params_text(x.params)}" for x in ms]
    y = range(len(ms))
    ax.barh(y, [x.gflops for x in ms], color=[color(x.kernel) for x in ms])
    for i, x in enumerate(ms):
        ax.text(x.gflops, i, f"  {x.gflops:,.0f}  ({x.pct_cublas:.1f}% of cuBLAS)", va="center", fontsize=8)
    cublas = sum(x.cublas_gflops for x in ms) / len(ms)
    ax.axvline(cublas, **CUBLAS_STYLE, label=f"cuBLAS SGEMM, same runs ({cublas:,.0f})")
    ax.set_yticks(list(y), labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("GFLOP/s (higher is better)")
    ax.set_xlim(0, max(cublas, max(x.gflops for x in ms)) * 1.45)
    shapes = sorted({f"{x.m}x{x.n}x{x.k}" for x in ms})
    ax.set_title(title or f"SGEMM at M x N x K = {', '.join(shapes)}", fontsize=10)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    return stamp(fig, provenance(ms))


def vs_size(ms: Sequence[Measurement], title: str = "GFLOP/s vs matrix size") -> Figure:
    """GFLOP/s against M = N = K for each kernel, with cuBLAS (median of the same runs) as reference."""
    fig, ax = plt.subplots(figsize=(7, 4))
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
    ax.set_yscale("log")
    ax.set_xticks(sizes, [str(s) for s in sizes])
    ax.set_xlabel("M = N = K")
    ax.set_ylabel("GFLOP/s (log scale)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    return stamp(fig, provenance(ms))


def scoreboard(ms: Sequence[Measurement], title: str = "") -> Figure:
    """The book's map: each kernel's share of cuBLAS at one shape, in chapter order, with its TFLOP/s.

    Each bar is against cuBLAS timed in the same run in the math the kernel promises (timing.BASELINE), so the
    TF32 kernels (hatched) race cuBLAS on TF32 tensor cores and the FP32 and 3xTF32 ones race SGEMM.
    """
    order = list(catalog.KERNELS)
    ms = sorted(ms, key=lambda x: order.index(x.kernel))
    fig, ax = plt.subplots(figsize=(7, 0.32 * len(ms) + 1.6))
    y = list(range(len(ms)))
    bars_ = ax.barh(y, [x.pct_cublas for x in ms], color=[color(x.kernel) for x in ms], height=0.7)
    for bar, x in zip(bars_, ms):
        bar.set_hatch("////" if baseline_name(x.precision) == "cuBLAS TF32" else "")
        bar.set_edgecolor("white")
        ax.text(1.02, bar.get_y() + bar.get_height() / 2, f"{x.gflops / 1e3:,.1f} TFLOP/s, {x.pct_cublas:.0f}% of "
                f"{baseline_name(x.precision)}", transform=ax.get_yaxis_transform(), va="center", fontsize=8)
    chapters = [int(catalog.get(x.kernel).chapter[2:4]) for x in ms]
    for i in range(1, len(ms)):
        if chapters[i] != chapters[i - 1]:
            ax.axhline(i - 0.5, color="lightgray", linewidth=0.8)
    ax.set_yticks(y, [f"ch{c}  {x.kernel}" for c, x in zip(chapters, ms)], fontsize=8.5)
    ax.set_ylim(len(ms) - 0.5, -0.5)
    ax.axvline(100, **CUBLAS_STYLE)
    ax.set_xlim(0, max(110, max(x.pct_cublas for x in ms) * 1.05))
    ax.set_xlabel("% of cuBLAS timed in the same run, in the kernel's math (higher is better)", fontsize=8)
    fig.legend(handles=[Patch(facecolor="gray", label="FFMA and 3xTF32 kernels vs cuBLAS SGEMM (FP32)"),
                        Patch(facecolor="gray", hatch="////", edgecolor="white", label="TF32 kernels vs cuBLAS TF32"),
                        plt.Line2D([], [], **CUBLAS_STYLE, label="cuBLAS = 100%")],
               loc="lower center", bbox_to_anchor=(0.5, 0.03), ncol=3, fontsize=7.5, handlelength=2.5, handleheight=1.3,
               frameon=False)
    shapes = sorted({f"M = N = K = {x.m}" if x.m == x.n == x.k else f"{x.m}x{x.n}x{x.k}" for x in ms})
    ax.set_title(title or f"Every kernel of the book vs cuBLAS, chapter by chapter ({', '.join(shapes)})", fontsize=10)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return stamp(fig, provenance(ms))


def roofline(ceilings: dict, ms: Sequence[Measurement], title: str = "") -> Figure:
    """Attainable GFLOP/s vs arithmetic intensity (measured DRAM bandwidth, FP32 peak), kernels on it.

    Each kernel sits at the intensity its traffic model predicts, which is what it would reach if
    every global load went to DRAM; caches move real kernels to the right of that point.
    """
    peak, bw = ceilings["peak_gflops"], ceilings["dram_gbs"]
    fig, ax = plt.subplots(figsize=(7, 4.2))
    xs = [2**e for e in range(-4, 13)]
    ax.plot(xs, [model.roofline(i, peak, bw) for i in xs], color="dimgray", linewidth=2)
    ax.text(xs[0] * 1.2, bw * xs[0] * 1.6, f"DRAM {bw / 1e3:.2f} TB/s (measured)", rotation=33, fontsize=8)
    ax.text(xs[-1], peak * 1.08, f"FP32 FFMA peak {peak / 1e3:.1f} TFLOP/s", ha="right", fontsize=8)
    for x in ms:
        if x.kernel == CUBLAS:
            i = 2 * x.m * x.n * x.k / model.compulsory_bytes(x.m, x.n, x.k)
        else:
            i = model.intensity(x.kernel, x.m, x.n, x.k, x.params)
        ax.plot(i, x.gflops, "o", color=color(x.kernel), label=f"{x.kernel} ({x.m}$^3$)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP per byte of global traffic, model)")
    ax.set_ylabel("GFLOP/s")
    ax.set_title(title or f"Roofline of the {ceilings['gpu']}", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    date = ceilings["recorded_at"][:10]
    return stamp(fig, provenance(ms) + f"; ceilings recorded on {ceilings['gpu']}, {date}")


def tile_heatmaps(ms: Sequence[Measurement], x: str, y: str, facet: str, title: str = "") -> Figure:
    """GFLOP/s over two parameters, one panel per value of a third (empty cells: illegal or not run)."""
    import numpy as np

    facets = sorted({m.params[facet] for m in ms})
    xs, ys = sorted({m.params[x] for m in ms}), sorted({m.params[y] for m in ms})
    fig, axes = plt.subplots(1, len(facets), figsize=(3.2 * len(facets) + 0.8, 3.3), squeeze=False)
    top = max(m.gflops for m in ms)
    for ax, f in zip(axes[0], facets):
        grid = np.full((len(ys), len(xs)), np.nan)
        for m in ms:
            if m.params[facet] == f:
                grid[ys.index(m.params[y]), xs.index(m.params[x])] = m.gflops
        image = ax.imshow(grid, origin="lower", cmap="viridis", vmin=0, vmax=top)
        for (r, c), v in np.ndenumerate(grid):
            if not np.isnan(v):
                ax.text(c, r, f"{v / 1e3:.1f}", ha="center", va="center", fontsize=7,
                        color="white" if v < 0.6 * top else "black")
        ax.set_xticks(range(len(xs)), xs)
        ax.set_yticks(range(len(ys)), ys)
        ax.set_xlabel(x)
        ax.set_ylabel(y)
        ax.set_title(f"{facet} = {f}", fontsize=9)
    fig.colorbar(image, ax=axes[0].tolist(), label="GFLOP/s (cells: TFLOP/s)", shrink=0.9)
    shape = ms[0]
    fig.suptitle(title or f"{shape.kernel} at {shape.m}x{shape.n}x{shape.k}", fontsize=10)
    return stamp(fig, provenance(ms))


def tiling(bm: int, bn: int, bk: int, m: int = 256, n: int = 256, k: int = 256) -> Figure:
    """Which tiles of A and B one block of C reads as it walks K (drawn to scale)."""
    fig, axes = plt.subplots(1, 3, figsize=(9, 3.2), gridspec_kw={"width_ratios": [k, n, n]})
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
        ax.set_title({"A": f"A: BM x BK = {bm} x {bk} tiles", "B": f"B: BK x BN = {bk} x {bn} tiles",
                      "C": f"C: one block's {bm} x {bn} tile"}[name], fontsize=9)
    fig.suptitle("One block walks K: the dark tiles are in shared memory now, the light ones come next",
                 fontsize=9)
    fig.tight_layout()
    return fig


def warp_access(block: int = 32, k_step: int = 0) -> Figure:
    """Which addresses of A, B and C the 32 lanes of warp 0 touch in one step, naive vs coalesced."""
    import numpy as np

    fig, axes = plt.subplots(2, 3, figsize=(9, 5.6))
    lanes = np.arange(32)
    for row_ax, kernel in zip(axes, ("naive", "coalesced")):
        rows, cols = (lanes % block, lanes // block) if kernel == "naive" else (lanes // block, lanes % block)
        touched = {"A": (rows, np.full(32, k_step)), "B": (np.full(32, k_step), cols), "C": (rows, cols)}
        for ax, (name, (r, c)) in zip(row_ax, touched.items()):
            grid = np.zeros((32, 32))
            grid[r, c] = 1
            ax.imshow(grid, cmap="Blues", vmin=0, vmax=1.3)
            lines = len({(int(a), int(b) // 32) for a, b in zip(r, c)})  # 128-byte lines: 32 floats of a row
            ax.set_title(f"{kernel}: {name}, {lines} line{'s' if lines > 1 else ''} of 128 B", fontsize=9)
            ax.set_xticks([])
            ax.set_yticks([])
            ax.set_xlabel("column (row-major: contiguous)", fontsize=7)
            ax.set_ylabel("row", fontsize=7)
    fig.suptitle(f"Warp 0 of a {block}x{block} block, one iteration of k: cells touched by its 32 lanes",
                 fontsize=10)
    fig.tight_layout()
    return fig


def traffic(rows: Sequence[dict], predicted: Sequence[float], labels: Sequence[str], title: str = "") -> Figure:
    """Bytes the traffic model predicts beside what the L2 and DRAM counters measured."""
    import numpy as np

    fig, ax = plt.subplots(figsize=(8, 3.8))
    x = np.arange(len(rows))
    l2 = [r["metrics"]["lts__t_sectors_srcunit_tex_op_read.sum"] * 32 for r in rows]
    dram = [r["metrics"]["dram__bytes_read.sum"] for r in rows]
    ax.bar(x - 0.27, [p / 1e9 for p in predicted], 0.27, label="model: global loads requested", color="C7")
    ax.bar(x, [v / 1e9 for v in l2], 0.27, label="measured: L2 reads from L1 (ncu)", color="C0")
    ax.bar(x + 0.27, [v / 1e9 for v in dram], 0.27, label="measured: DRAM reads (ncu)", color="C3")
    ax.set_xticks(x, labels, fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("GB per GEMM (log scale)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(True, axis="y", which="both", alpha=0.3)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    gpu, date = rows[0]["gpu"], min(r["recorded_at"] for r in rows)[:10]
    return stamp(fig, f"counters recorded with Nsight Compute on {gpu}, {date}")


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
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(8, 3.3), gridspec_kw={"width_ratios": [2, 1]})
    for i, (name, (intensity, ridge)) in enumerate(levels_.items()):
        ok = intensity >= ridge
        ax.bar(i, intensity, color="C2" if ok else "C3", width=0.6)
        ax.plot([i - 0.4, i + 0.4], [ridge, ridge], "k--", linewidth=1)
        ax.text(i, intensity * 1.15, f"{intensity:.2f}", ha="center", fontsize=8)
        ax.text(i + 0.42, ridge, f"ridge {ridge:.1f}", va="center", fontsize=7)
    ax.set_xticks(range(len(levels_)), list(levels_), fontsize=8)
    ax.set_yscale("log")
    ax.set_ylim(0.05, 4 * max(max(v) for v in levels_.values()))
    ax.set_xlim(-0.6, len(levels_) - 0.1)
    ax.set_ylabel("FLOP per byte (model)")
    ax.set_title("intensity per level (green: above the ridge)", fontsize=9)
    budget = model.register_floor(kernel, params)
    bottom = 0
    for (name, count), c in zip([*budget.items(), ("other", max(registers - sum(budget.values()), 0))], ("C0", "C1", "C7")):
        ax2.bar(0, count, bottom=bottom, color=c, label=f"{name} ({count})", width=0.5)
        bottom += count
    ax2.axhline(255, color="k", linestyle=":", linewidth=1)
    ax2.text(0.3, 255, "255 max", va="bottom", fontsize=7)
    ax2.set_xticks([])
    ax2.set_xlim(-0.5, 1.0)
    ax2.set_ylim(0, 280)
    ax2.set_ylabel("registers per thread")
    ax2.set_title(f"register budget ({registers} used)", fontsize=9)
    ax2.legend(fontsize=7, loc="upper right")
    spec = catalog.get(kernel)
    fig.suptitle(f"{spec.describe(params)}", fontsize=9)
    fig.tight_layout()
    return fig


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
    ax.set_title(title + f"\n{label_b} faster on {wins} of {len(pairs)} tiles", fontsize=9)
    ax.grid(True, alpha=0.3)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    return stamp(fig, provenance([m for pair in pairs for m in pair]))


def bank_grid(access: banks.Access, title: str = "") -> Figure:
    """The 32 banks (columns) and the 128-byte rows of shared memory a warp's access touches,
    each touched word labelled with its lanes; red columns need more than one wavefront."""
    import numpy as np


    words: dict[int, list[int]] = {}
    for lane, addr in enumerate(access.addresses):
        for w in range(access.width // banks.WORD):
            words.setdefault(addr // banks.WORD + w, []).append(lane)
    rows = sorted({w // banks.BANKS for w in words})
    load = np.zeros(banks.BANKS, dtype=int)
    for w in words:
        load[w % banks.BANKS] += 1
    fig, ax = plt.subplots(figsize=(10, 0.42 * len(rows) + 1.6))
    for w, lanes in words.items():
        r, b = rows.index(w // banks.BANKS), w % banks.BANKS
        ax.add_patch(Rectangle((b, r), 1, 1, color="C3" if load[b] > access.ideal else "C0", alpha=0.75))
        label = ",".join(map(str, lanes[:2])) + ("+" if len(lanes) > 2 else "")
        ax.text(b + 0.5, r + 0.5, label, ha="center", va="center", fontsize=5.5, color="white")
    ax.set_xlim(0, banks.BANKS)
    ax.set_ylim(len(rows), 0)
    ax.set_xticks([b + 0.5 for b in range(banks.BANKS)], range(banks.BANKS), fontsize=6)
    ax.set_yticks([r + 0.5 for r in range(len(rows))], [f"{4 * 32 * row} B" for row in rows], fontsize=6)
    ax.set_xlabel("bank (cells: the lanes that touch this 4-byte word)")
    ax.set_ylabel("row of 128 bytes")
    ax.grid(False)
    ax.set_title(title or f"{access.name}: {access.width * 8}-bit, {access.wavefronts} wavefront(s), "
                 f"{access.conflicts} conflict(s)", fontsize=9)
    fig.tight_layout()
    return fig


def pipeline(params: dict[str, int], steps: int = 3, blocks_per_sm: int = 2, latency: int = 600) -> Figure:
    """A schematic timeline of main-loop steps of one block: when tiles travel and when FFMAs run.

    Durations are a model, not a measurement: a step's FFMAs take BM*BN*BK / (128 / blocks_per_sm)
    clocks (the SM's 128 FP32 lanes shared by the resident blocks), a global load `latency` clocks,
    a shared store and a __syncthreads a few dozen. PREFETCH 0/1 is 08_prefetch.cu, STAGES is
    09_multistage.cu.
    """
    compute = params["BM"] * params["BN"] * params["BK"] / (128 / blocks_per_sm)
    store, sync = 40, 30
    rows = ("global loads\n(in flight)", "registers → shared", "__syncthreads", "FFMAs")
    fig, ax = plt.subplots(figsize=(9, 2.6))
    bars_: list[tuple[int, float, float, str]] = []  # (row, start, length, label)
    t = 0.0
    if "STAGES" in params:
        ahead = params["STAGES"] - 1
        for s in range(steps + ahead):
            issue = (s - ahead) * (compute + sync)
            bars_.append((0, max(issue, -ahead * (compute + sync)), latency, f"tile {s}"))
        for s in range(steps):
            bars_ += [(2, t, sync, ""), (3, t + sync, compute, f"step {s}")]
            t += sync + compute
        title = f"cp.async, {params['STAGES']} stages: copies run {ahead} step(s) ahead, straight into shared memory"
    elif params.get("PREFETCH"):
        bars_.append((0, -latency - store - sync, latency, "tile 0"))
        bars_ += [(1, -store - sync, store, ""), (2, -sync, sync, "")]
        for s in range(steps):
            step = max(compute, latency)
            bars_ += [(0, t, latency, f"tile {s + 1}"), (3, t, compute, f"step {s}"),
                      (1, t + step, store, ""), (2, t + step + store, sync, "")]
            t += step + store + sync
        title = "PREFETCH=1: the next tile loads during the FFMAs; one __syncthreads per step"
    else:
        for s in range(steps):
            bars_ += [(0, t, latency, f"tile {s}"), (1, t + latency, store, ""), (2, t + latency + store, sync, ""),
                      (3, t + latency + store + sync, compute, f"step {s}"),
                      (2, t + latency + store + sync + compute, sync, "")]
            t += latency + store + 2 * sync + compute
        title = "PREFETCH=0: load, wait, store, sync, multiply, sync: the FFMAs wait for every tile"
    for row, start, length, label in bars_:
        ax.add_patch(Rectangle((start, row - 0.35), length, 0.7, color=f"C{row}", alpha=0.75))
        if label:
            ax.text(start + length / 2, row, label, ha="center", va="center", fontsize=7)
    lo = min(b[1] for b in bars_)
    ax.set_xlim(lo - 50, max(t, max(b[1] + b[2] for b in bars_)) + 50)
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ax.set_yticks(range(len(rows)), rows, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("clock cycles of one block (schematic: model durations, see caption)")
    ax.set_title(title, fontsize=9)
    busy = steps * compute / t if t else 0
    stamp(fig, f"model: FFMAs {compute:.0f} clk/step ({params['BM']}x{params['BN']}x{params['BK']} tile, "
               f"{blocks_per_sm} blocks/SM), load latency {latency} clk (assumed); FFMA busy {busy:.0%} of the steps shown")
    fig.tight_layout()
    return fig


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
    bars_: list[tuple[int, float, float, str]] = []  # (row, start, length, label)
    free_at, pipe, ready = 0.0, 0.0, [0.0] * consumers  # producer's next issue, tensor pipe, each consumer
    for i in range(total):
        if i >= stages:  # the stage's empty barrier: every consumer is done with step i - STAGES
            free_at = max(free_at, *(done[c][i - stages] for c in range(consumers)))
        bars_.append((0, free_at, 40, ""))
        bars_.append((1, free_at, latency, f"s{i % stages}"))
        landed = free_at + latency
        free_at += 40
        for c in range(consumers):
            start = max(landed, ready[c], pipe)
            pipe = ready[c] = done[c][i] = start + step_clk
            bars_.append((2 + c, start, step_clk, f"t{i // steps}.k{i % steps}"))
            if i % steps == steps - 1:  # the tile's last step: its epilogue stores C
                bars_.append((2 + consumers, ready[c], epilogue, "C" if c == 0 else ""))
                ready[c] += epilogue
    rows = ("producer: TMA issue", "copies in flight\n(ring stage)", *(f"consumer {c + 1}: wgmma" for c in
                                                                        range(consumers)), "epilogues")
    fig, ax = plt.subplots(figsize=(9, 1.0 + 0.5 * len(rows)))
    for row, start, length, label in bars_:
        ax.add_patch(Rectangle((start, row - 0.35), length, 0.7, color=f"C{row}", alpha=0.75))
        if label and length > 200:
            ax.text(start + length / 2, row, label, ha="center", va="center", fontsize=6)
    end = max(b[1] + b[2] for b in bars_)
    ax.set_xlim(-50, end + 50)
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ax.set_yticks(range(len(rows)), rows, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("clock cycles on one SM (schematic: model durations, see caption)")
    ax.set_title(f"Warp specialisation: {stages} stages, {consumers} consumer warpgroup(s), BM = {params['BM']}: "
                 "copies run ahead while the tensor cores work", fontsize=9)
    busy = total * consumers * step_clk / (end - first_landing)
    stamp(fig, f"model: {step_clk:.0f} clk per consumer step, copy latency {latency} clk and epilogue {epilogue} clk "
               f"(assumed); tensor pipe busy {busy:.0%} after the first copy lands")
    fig.tight_layout()
    return fig


def stalls(rows: Sequence[dict], labels: Sequence[str], title: str = "") -> Figure:
    """Warps stalled per issued instruction, by reason, from recorded Nsight Compute rows."""
    from .hardware import STALL_REASONS, stalls as stall_values

    fig, ax = plt.subplots(figsize=(8, 3.2))
    width = 0.8 / len(rows)
    for i, (row, label) in enumerate(zip(rows, labels)):
        values = stall_values(row)
        ax.bar([x + i * width for x in range(len(STALL_REASONS))], [values[r] for r in STALL_REASONS],
               width=width, label=label)
    ax.set_xticks([x + 0.4 - width / 2 for x in range(len(STALL_REASONS))],
                  [r.replace("_", " ") for r in STALL_REASONS], rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("warps stalled per issue")
    ax.set_title(title or "Why warps wait (Nsight Compute stall reasons)", fontsize=10)
    ax.legend(fontsize=7)
    stamp(fig, f"ncu, recorded on {rows[0]['gpu']}, {rows[0]['recorded_at'][:10]}, M=N=K={rows[0]['m']}")
    fig.tight_layout()
    return fig


def gpu_bars(kernels: Sequence[str], size: int, gpus: Sequence[str]) -> Figure:
    """% of cuBLAS (same run) of each kernel's default tile at one size, one bar per recorded GPU."""
    from . import records

    fig, ax = plt.subplots(figsize=(8, 3.4))
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
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(kernels))], kernels, rotation=25, ha="right", fontsize=8)
    ax.set_ylabel("% of cuBLAS, same run")
    ax.set_title(f"Default tiles at {size}x{size}x{size} on each recorded GPU", fontsize=10)
    ax.legend(fontsize=7)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    return stamp(fig, provenance(found))


def lane_position(lane: int, params: dict[str, int]) -> tuple[int, int]:
    """(lane_m, lane_n) of a lane in its warp's lane grid, numbered as 10_warp_tiling.cu numbers them:
    along the longer side of the grid by lane % 8, along the shorter one diagonally."""
    along, diagonal = lane % 8, (lane // 8 + lane % 8) % 4
    return (along, diagonal) if params["WM"] // params["TM"] == 8 else (diagonal, along)


def warp_tiles(params: dict[str, int] | None = None) -> Figure:
    """The three tile levels of the warp-tiled kernel, drawn from its parameters (defaults: the catalog's).

    Left, the block tile and its warp tiles; middle, warp 0's tile with the outputs of lanes 0 and 1 (TM/4 x
    TN/4 squares of 4 x 4, one stride apart); right, one stride's worth of the warp tile with the lane that
    owns each square. Patches carry a gid ("warp w", "lane l") so tests can count what is drawn.
    """
    from matplotlib.colors import to_rgba

    p = catalog.get("warp_tiling").full_params(params)
    bm, bn, wm, wn, tm, tn = (p[x] for x in ("BM", "BN", "WM", "WN", "TM", "TN"))
    stride_m, stride_n = wm // (tm // 4), wn // (tn // 4)
    highlight = {0: "C3", 1: "C1"}
    ratios = (bn / bm, wn / wm, max(stride_n / stride_m, 0.8))  # the lane panel wide enough for its title
    fig, (block, warp, lanes) = plt.subplots(1, 3, figsize=(10, 4.2), gridspec_kw={"width_ratios": ratios})
    for w in range((bm // wm) * (bn // wn)):
        r, c = w // (bn // wn) * wm, w % (bn // wn) * wn
        block.add_patch(Rectangle((c, r), wn, wm, facecolor=to_rgba("C0", 0.35) if w == 0 else "none",
                                  edgecolor="black", linewidth=1.5, gid=f"warp {w}"))
        block.text(c + wn / 2, r + wm / 2, f"warp {w}" if wn >= 32 else f"w{w}", ha="center", va="center", fontsize=8)
    inches = min(10 * 0.8 * ratios[2] / sum(ratios) / (stride_n / 4), 4.2 * 0.6 / (stride_m / 4))  # a 4 x 4 square
    for lane in range(32):
        lm, ln = lane_position(lane, p)
        lanes.add_patch(Rectangle((ln * 4, lm * 4), 4, 4, facecolor=highlight.get(lane, "white"),
                                  edgecolor="gray", linewidth=0.5))
        lanes.text(ln * 4 + 2, lm * 4 + 2, str(lane), ha="center", va="center", fontsize=min(9.0, 28 * inches))
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
        ax.set_xlabel("column of C")
    block.set_ylabel("row of C")
    block.set_xticks(range(0, bn + 1, max(wn, bn // 4)))
    block.set_yticks(range(0, bm + 1, max(wm, bm // 4)))
    warp.set_xticks(range(0, wn + 1, stride_n))
    warp.set_yticks(range(0, wm + 1, stride_m))
    lanes.set_xticks(range(0, stride_n + 1, 4 if stride_n <= 16 else 8))
    lanes.set_yticks(range(0, stride_m + 1, 4 if stride_m <= 16 else 8))
    block.set_title(f"block tile {bm} x {bn}:\n{(bm // wm) * (bn // wn)} warp tiles of {wm} x {wn}", fontsize=9)
    warp.set_title("warp 0: the outputs of\nlane 0 (red) and lane 1 (orange)", fontsize=9)
    lanes.set_title(f"lane grid {wm // tm} x {wn // tn}:\nowner of each 4 x 4", fontsize=9)
    fig.suptitle(f"{tm} x {tn} outputs per lane, as {tm // 4} x {tn // 4} squares of 4 x 4: {stride_m} rows and "
                 f"{stride_n} columns apart (right: one dotted box of the middle panel)", fontsize=10)
    fig.tight_layout()
    return fig


PRECISION_MARKERS = {"fp32": "o", "tf32": "s", "3xtf32": "D"}


def label(x: Measurement) -> str:
    """What a point or line stands for: the kernel, or which cuBLAS (its math follows the precision)."""
    if x.kernel in CUBLAS_KERNELS.values():
        return "cuBLAS, TF32 tensor cores" if x.precision == "tf32" else "cuBLAS SGEMM (FP32)"
    return f"{x.kernel} ({x.precision.upper().replace('3XTF32', '3xTF32')})"


def error_vs_k(ms: Sequence[Measurement], title: str = "Max relative error vs K (float64 reference)") -> Figure:
    """max_rel_err against K for each kernel, with u * sqrt(K) for FP32's and TF32's unit roundoff u."""
    fig, ax = plt.subplots(figsize=(7, 4.2))
    series: dict[str, list[Measurement]] = {}
    for x in ms:
        series.setdefault(label(x), []).append(x)
    for name, xs in series.items():
        xs = sorted(xs, key=lambda x: x.k)
        ax.plot([x.k for x in xs], [x.max_rel_err for x in xs], marker=PRECISION_MARKERS.get(xs[0].precision, "o"),
                color=color(xs[0].kernel), label=name, **({"linestyle": "--"} if xs[0].kernel in CUBLAS_KERNELS.values() else {}))
    ks = sorted({x.k for x in ms})
    for name, u in (("FP32", run.UNIT_ROUNDOFF["fp32"]), ("TF32", run.UNIT_ROUNDOFF["tf32"])):
        ax.plot(ks, [u * k**0.5 for k in ks], ":", color="grey", linewidth=1)
        ax.text(ks[-1], u * ks[-1] ** 0.5, f" {name} u·√K", fontsize=7, color="grey", va="center")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(ks, [f"{k:,}" for k in ks])
    shapes = sorted({(x.m, x.n) for x in ms})
    ax.set_xlabel("K (inner dimension)" + (f", M = N = {shapes[0][0]}" if len(shapes) == 1 and shapes[0][0] == shapes[0][1] else ""))
    ax.set_ylabel("max |C - C64| / max |C64| (log scale)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    return stamp(fig, provenance(ms))


def accuracy_vs_speed(ms: Sequence[Measurement], title: str = "") -> Figure:
    """Each kernel (and cuBLAS) as one point: TFLOP/s against max relative error, on one shape."""
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for x in ms:
        ax.scatter(x.gflops / 1e3, x.max_rel_err, s=60, marker=PRECISION_MARKERS.get(x.precision, "o"),
                   color=color(x.kernel), edgecolor="black", linewidth=0.6, zorder=3)
    ax.set_yscale("log")
    ax.set_xlim(0, max(x.gflops for x in ms) / 1e3 * 1.35)
    lo, hi = min(x.max_rel_err for x in ms), max(x.max_rel_err for x in ms)
    ax.set_ylim(lo / 4, hi * 4)
    _label_points(ax, [((x.gflops / 1e3, x.max_rel_err), label(x)) for x in ms])
    ax.set_xlabel("TFLOP/s (higher is better)")
    ax.set_ylabel("max relative error vs float64 (lower is better)")
    shapes = sorted({f"{x.m}x{x.n}x{x.k}" for x in ms})
    ax.set_title(title or f"Accuracy and speed at M x N x K = {', '.join(shapes)}", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    return stamp(fig, provenance(ms))


def _label_points(ax: Any, points: list[tuple[tuple[float, float], str]], size: float = 7) -> None:
    """Label each point to its upper right, lifting a label in steps of a line until it clears those placed
    before (points with nearly equal values, such as kernels of one precision, would print over each other)."""
    placed: list[tuple[float, float, float, float]] = []  # label boxes in points: left, bottom, right, top
    scale = 72 / ax.figure.dpi
    for (x, y), text in sorted(points, key=lambda p: (p[0][1], p[0][0])):
        px, py = (v * scale for v in ax.transData.transform((x, y)))
        width, lift = 0.6 * size * len(text), 4.0
        while any(px + 6 < r and l < px + 6 + width and py + lift < t and b < py + lift + size + 2
                  for l, b, r, t in placed):
            lift += size + 3
        placed.append((px + 6, py + lift, px + 6 + width, py + lift + size + 2))
        ax.annotate(text, (x, y), textcoords="offset points", xytext=(6, lift), fontsize=size)


# --- the GPU primer ---

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

    fig, ax = plt.subplots(figsize=(7.2, 6.6))
    ax.set(xlim=(0, 10), ylim=(0, 9.2))
    ax.axis("off")

    def box(x: float, y: float, w: float, h: float, colour: str, label: str = "", size_: float = 12) -> None:
        ax.add_patch(Rectangle((x, y), w, h, facecolor=colour, edgecolor="black", linewidth=1))
        if label:
            ax.text(x + w / 2, y + h / 2, label, ha="center", va="center", fontsize=size_, linespacing=1.3)

    sms, schedulers = params["sms"], catalog.SCHEDULERS_PER_SM
    regs = f"{params['registers_per_sm'] // schedulers:,}" if "registers_per_sm" in params else missing
    box(0.1, 3.6, 6.6, 5.5, "#eef3fb")
    ax.text(3.4, 8.8, f"one SM of {sms}, {params['clock_mhz']:,.0f} MHz", fontsize=13, weight="bold",
            ha="center", va="center")
    for i in range(schedulers):
        box(0.3 + (i % 2) * 3.15, 6.85 - (i // 2) * 1.9, 3.0, 1.75, "#c9daf2",
            f"warp scheduler\n1 instruction/clock\n{params['fp32_lanes_per_sm'] // schedulers} FP32 lanes\n"
            f"{regs} registers", 11.5)
    box(0.3, 3.75, 6.15, 1.0, "#b6d7a8", f"{size('l1_smem_bytes', 'KiB', 1024)}: shared memory "
        f"(≤ {size('smem_per_sm', 'KiB', 1024)}) + L1\nshared: {latency('shared')}; L1 hit: {latency('L1')}", 11.5)
    cols = math.ceil(math.sqrt(sms * 0.8))
    cell = min(2.9 / cols, 4.6 / math.ceil(sms / cols))
    for i in range(sms):
        ax.add_patch(Rectangle((7.0 + (i % cols) * cell, 8.4 - (i // cols + 1) * cell), cell * 0.8, cell * 0.8,
                               facecolor="#e45756" if i == 0 else "#4c78a8", edgecolor="none"))
    ax.text(8.45, 8.8, f"{sms} SMs", fontsize=13, weight="bold", ha="center", va="center")
    box(0.1, 2.2, 9.8, 1.15, "#f6e3c6",
        f"L2 cache: {size('l2_bytes', 'MiB', 2**20)}, shared by all SMs\nhit: {latency('L2')}; copy: {copy('L2')}")
    box(0.1, 0.35, 9.8, 1.5, "#d9ead3",
        f"DRAM: {size('dram_bytes', 'GiB', 2**30)}\nload: {latency('DRAM')}; copy: {copy('DRAM')}")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    return stamp(fig, params["provenance"])


def memory_latency(recs: Sequence[Any]) -> Figure:
    """Nanoseconds per load of one thread's pointer chase against its working set, a line per GPU
    (`records.MemoryRecord`s): flat while the chain fits in L1, in L2, then only in DRAM, with each GPU's L2 size
    marked. Without records, the empty chart says how to record them."""
    from .memory import provenance as memory_provenance

    if not recs:
        fig, ax = plt.subplots(figsize=(7, 0.9))
        ax.axis("off")
        ax.text(0.5, 0.5, "not yet recorded: run gemm-lab record --only memory on the GPU", ha="center",
                va="center", fontsize=12, transform=ax.transAxes)
        return fig
    fig, ax = plt.subplots(figsize=(7, 4))
    for i, rec in enumerate(recs):
        xs = [x["bytes"] for x in rec.sweep]
        ax.plot(xs, [x["ns"] for x in rec.sweep], "o-", color=f"C{i}", label=rec.gpu)
        ax.axvline(rec.properties["l2_bytes"], color=f"C{i}", linestyle=":", linewidth=1.2)
        ax.text(rec.properties["l2_bytes"], 0.05 + 0.09 * i, f" L2: {rec.properties['l2_bytes'] / 2**20:.0f} MiB",
                color=f"C{i}", transform=ax.get_xaxis_transform(), fontsize=11)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(lambda v, _: f"{v:g}")
    ax.yaxis.set_minor_formatter(lambda v, _: f"{v:g}" if str(v)[0] in "25" else "")
    ticks = [2**e for e in range(12, 31, 3)]
    ax.set_xticks(ticks, [f"{t // 2**20} MiB" if t >= 2**20 else f"{t // 2**10} KiB" for t in ticks])
    ax.tick_params(labelsize=11)
    ax.set_xlabel("working set of the chain", fontsize=11)
    ax.set_ylabel("ns per load (log scale)", fontsize=11)
    ax.set_title("One load's latency: L1, then L2, then DRAM", fontsize=12)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=11, loc="upper left")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    return stamp(fig, "; ".join(memory_provenance(rec) for rec in recs))
