"""The GPU and what a kernel asks of its levels: the primer's diagram of one SM, the grid of SMs, L2 and DRAM with
the latencies and bandwidths the memory probes recorded (`gpu_diagram`), and a kernel's arithmetic intensity at the
global and shared levels against each level's ridge point, beside one thread's register budget (`levels`).

Its own module because these draw the machine and a kernel's demands on it, read from the ceilings, the records and
the compiler's report rather than from a tile's geometry.
"""
from __future__ import annotations

import math
from typing import Any

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from ... import catalog
from ...models import model
from ..style import TEXT, WIDTH, stamp, wrap


def gpu_diagram(params: dict[str, Any]) -> Figure:
    """The GPU as the primer draws it, from its own parameters (`memory.parameters`): one SM in detail (its four
    warp schedulers with their lanes and registers, shared memory and L1), the grid of all its SMs, L2 and DRAM,
    each level with its measured latency and bandwidth where the memory probes recorded them."""
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
    fig.suptitle(f"The GPU as nested boxes: one SM (four warp schedulers, registers, shared memory and L1), the grid "
                 f"of all {sms} SMs, then L2 and DRAM, each with its size, latency and copy rate",
                 visible=False)  # not drawn: the figure's alt text (style.describe)
    return stamp(fig, params["provenance"])


def levels(kernel: str, params: dict[str, int], ceilings: dict, registers: int, size: int = 4096) -> Figure:
    """Arithmetic intensity at the global and shared levels against each level's ridge point, and
    the register budget of one thread (accumulators, fragments, the rest) as the compiler reports it. FFMA kernels
    only: a tensor-core kernel's ridge is set by its tensor-core peak, and its registers by its fragments."""
    if (precision := catalog.get(kernel).precision) != "fp32":
        raise ValueError(f"levels draws FFMA kernels (a thread's TM x TN tile against FP32's peak); {kernel} computes "
                         f"in {precision} on the tensor cores: see hardware.tensor_core_ceilings")
    n = size
    flop = model.flops(n, n, n)
    peak = ceilings["peak_gflops"]
    levels_ = {
        "global\n(L2/DRAM)": (flop / model.global_load_bytes(kernel, n, n, n, params), peak / ceilings["dram_gbs"]),
        "shared\nmemory": (flop / model.shared_load_bytes(kernel, n, n, n, params),
                           peak / model.shared_bandwidth_gbs(ceilings)),
    }
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(WIDTH, 3.8), gridspec_kw={"width_ratios": [1.6, 1]})
    for i, (intensity, ridge) in enumerate(levels_.values()):
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
