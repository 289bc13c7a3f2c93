"""The power cap's charts (chapters 8 and 9): how a race's share, clock and power move with the length of its turns,
and chapter 8's model of a tensor-core kernel's speed as peak x clock share x busy share."""
from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from ..records import Measurement
from .plots import CUBLAS_STYLE, color, label, legend_below, titled
from .style import TEXT, WIDTH, stamp, wrap
from .tables import baseline_name, counters_provenance, provenance, shape_text


def power_turns(rows: Sequence[tuple[float, Measurement]], cap_w: float | None = None, title: str = "") -> Figure:
    """Races of one length of turn each (`power.rows()`: (turn_ms, measurement)), against that length on a log axis:
    the kernel's share of cuBLAS (the median of its rounds, bars: their range), the SM clock of each side and each
    side's mean power (joules from NVML's energy counter over its timed seconds), one colour per kernel, its cuBLAS
    dashed in the same colour. Short turns catch a power-capped card above its cap, long ones where the cap holds it,
    which is chapter 8's lesson on why the book races in sustained turns; `cap_w` draws the cap."""
    kernels = list(dict.fromkeys(x.kernel for _, x in rows))
    fig, axes = plt.subplots(3, 1, sharex=True, figsize=(WIDTH, 8.4))
    share, clock, power = axes
    for i, kernel in enumerate(kernels):
        mine = sorted(((t, x) for t, x in rows if x.kernel == kernel), key=lambda r: r[0])
        turns, ms = [t for t, _ in mine], [x for _, x in mine]
        # two or three kernels: the default cycle's first colours tell them apart (the catalog's are too alike here)
        c, baseline = f"C{i}", baseline_name(ms[0].precision)
        share.plot(turns, [x.pct_cublas for x in ms], "o-", color=c, label=f"{label(ms[0])}; {baseline} dashed")
        for t, x in mine:
            if x.pct_range:
                share.plot([t, t], x.pct_range, color=c, linewidth=1.5, alpha=0.5, label="_rounds")
        for ax, key in ((clock, "sm_clock_mhz"), (power, "mean_power_w")):
            for side, style_ in ((lambda x: x.telemetry, "o-"), (lambda x: x.cublas_telemetry, "s--")):
                pts = [(t, side(x)[key]) for t, x in mine if key in side(x)]
                ax.plot([t for t, _ in pts], [v for _, v in pts], style_, color=c, markersize=5,
                        label=kernel if style_ == "o-" else f"_{baseline}")
    share.axhline(100, **CUBLAS_STYLE, label="_cuBLAS = 100%")
    if cap_w:
        power.axhline(cap_w, color="firebrick", linestyle=":", linewidth=1.5, label=f"power cap, {cap_w:,.0f} W")
    share.set_ylabel(wrap("% of cuBLAS (bars: rounds)", TEXT, 2.4))
    clock.set_ylabel(wrap("SM clock (MHz)", TEXT, 2.4))
    power.set_ylabel(wrap("mean power (W)", TEXT, 2.4))
    power.set_xscale("log")
    turns_all = sorted({t for t, _ in rows})
    power.set_xticks(turns_all, [f"{t:,.0f}" for t in turns_all])
    power.minorticks_off()
    power.set_xlabel("length of each side's turns (ms, log scale)")
    for ax in axes:
        ax.grid(True, alpha=0.3)
    size = sorted({shape_text(x.m, x.n, x.k) for _, x in rows})
    titled(share, title or f"Share of cuBLAS, clock and power vs turn length, {', '.join(size)}")
    fig.tight_layout()
    handles, labels = share.get_legend_handles_labels()
    if cap_w:
        power_handles, power_labels = power.get_legend_handles_labels()
        handles, labels = handles + power_handles[-1:], labels + [power_labels[-1]]
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=1, frameon=False)
    return stamp(fig, "each race after an idle pause, one untimed turn, no settling; mean power: joules of NVML's "
                 "energy counter over each side's timed seconds; " + provenance([x for _, x in rows], races=False))


def speed_shares(ceilings: dict, race: Measurement, counters: dict, peak: str = "mma_sync_tf32_gflops",
                 title: str = "") -> Figure:
    """Chapter 8's model of a tensor-core kernel's speed, as a waterfall: the instruction's peak (`ceilings[peak]`,
    timed alone at the boost clock `ceilings["clock_mhz"]`) × the clock share (the race's median SM clock over that
    clock: what the power cap takes) × the busy share (the tensor pipe's busy cycles in one counted launch,
    `counters`: what the waits take), and the product beside the race's measured speed. Each factor's bar keeps what
    is left and shows, hatched, what the factor took, so the larger loss reads at a glance."""
    from ..models.hardware import TENSOR_METRICS

    race_mhz, peak_mhz = race.telemetry["sm_clock_mhz"], ceilings["clock_mhz"]
    shares = (race_mhz / peak_mhz, counters["metrics"][TENSOR_METRICS[0]] / 100)
    levels = [ceilings[peak] / 1e3]
    for factor in shares:
        levels.append(levels[-1] * factor)
    measured = race.gflops / 1e3
    fig, ax = plt.subplots(figsize=(WIDTH, 4.6))
    ax.bar(range(3), levels, width=0.6, color="#9ecae1", edgecolor="black", linewidth=0.6, label="what is left")
    ax.bar([1, 2], [a - b for a, b in zip(levels, levels[1:])], bottom=levels[1:], width=0.6, color="white",
           edgecolor="gray", hatch="///", linewidth=0.6, label="what the factor takes")
    ax.bar(3.25, measured, width=0.6, color=color(race.kernel), edgecolor="black", linewidth=1.5, hatch="..",
           label="measured in the race")
    for i, (x0, x1) in enumerate(((0.3, 1.3), (1.3, 2.3), (2.3, 3.55))):  # each level on to the next bar
        ax.plot([x0, x1], [levels[i], levels[i]], color="gray", linestyle=":", linewidth=1)
    ax.axvline(2.625, color="gray", linewidth=0.8)  # the model's bars on the left, the measurement on the right
    labels = [f"{levels[0]:,.0f}", *(f"× {f:.2f}\n= {v:,.0f}" for f, v in zip(shares, levels[1:])),
              f"{measured:,.0f}"]
    for x, top, text in zip((0, 1, 2, 3.25), (levels[0], levels[0], levels[1], measured), labels):
        ax.annotate(text, (x, top), xytext=(0, 4), textcoords="offset points", ha="center", va="bottom",
                    bbox={"facecolor": "white", "edgecolor": "none", "pad": 1})  # over the dotted level it passes
    ax.set_xticks([0, 1, 2, 3.25], ["peak,\ntimed alone", f"× clock share\n(the cap):\n{race_mhz:,.0f} / "
                                    f"{peak_mhz:,.0f}\nMHz", "× busy share\n(the waits)\n= their product",
                                    "measured\n(the race)"])
    ax.set_xlim(-0.5, 3.75)
    ax.set_ylim(0, levels[0] * 1.22)
    ax.set_ylabel("TFLOP/s (TF32)")
    ax.grid(True, axis="y", alpha=0.3)
    titled(ax, title or f"{race.kernel} at {shape_text(race.m, race.n, race.k)}: peak × clock share × busy share "
                        "= their product, beside the race")
    fig.tight_layout()
    legend_below(fig, ax, 3, columnspacing=1.0, handletextpad=0.4)
    return stamp(fig, f"race: {provenance([race])}; peak: timed alone on {ceilings['gpu']}, "
                      f"{ceilings['recorded_at'][:10]}; busy share: {counters_provenance([counters])}")
