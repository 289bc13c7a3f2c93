"""The tile explorer: sliders for a kernel's template parameters and a GFLOP/s chart that follows them.

Live, every change is validated, compiled (cached), verified against float64 and timed beside
cuBLAS; the chart keeps every configuration tried so far. The explorer opens at once on the recorded result of its
starting instance (labelled so) and measures it in a thread of its own; meanwhile the kernel's whole legal grid
starts compiling in background processes (`warmup`), nearest the sliders first, so a move finds its kernel compiled.
Where no kernel runs (replay, and so the book's static page), sliders could not move: the explorer is the in-page
Vega-Lite heatmap of the recorded grid (`explorers`) instead. The sliders sit in a grid that wraps at the page's
width, so six to eight of them keep their labels.
"""
from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable

import altair as alt
import ipywidgets as w
import matplotlib.pyplot as plt
from IPython.display import display
from matplotlib.figure import Figure

from .. import catalog, compiler, device, records, timing, turns
from ..records import Measurement
from ..spec import as_integer
from . import check_flag, diagrams, explorers, grids, plots, style, warmup
from .tables import params_text, provenance, replay_reason


def tile_explorer(kernel: str = "smem_tiled", size: int = grids.EXPLORER_SIZE,
                  extra: Callable[[dict[str, int]], Figure] | None = None, x: str | None = None,
                  y: str | None = None, sliders_in_replay: bool = False) -> w.VBox | alt.Chart:
    """A slider per template parameter of `kernel`; the chart re-measures on each change.

    `extra(params)` may draw a second figure (a model of the current tile) under the chart. In replay the explorer
    is `explorers.sweep_explorer(kernel, size, x, y)`, which moves in the static page (no `extra`: the page shows
    the default tile's picture already; `x` and `y` default to `explorers.AXES`, and named ones are checked with
    sliders too, so a typo fails live as it would in the static page); `sliders_in_replay` keeps the sliders, moving
    over the recorded grid (a notebook without a GPU).
    """
    spec = catalog.get(kernel)
    check_flag("sliders_in_replay", sliders_in_replay)
    if extra is not None and not callable(extra):
        raise TypeError(f"extra must be a function of the parameters that returns a Figure, not {extra!r}")
    named = (x, y) != (None, None)
    x, y = explorers.AXES[0] if x is None else x, explorers.AXES[1] if y is None else y
    if named:
        explorers.check_axes(spec, x, y)
    if not device.live() and not sliders_in_replay:
        with contextlib.suppress(LookupError):  # what a live page's explorer measures first (its plan: `liverun`)
            timing.bench(spec, size, spec.full_params(), method=turns.SHORT)
        return explorers.sweep_explorer(spec.name, size, x=x, y=y)
    shape = timing.shape_of(size)
    if device.live():
        choices = spec.choices
    else:
        recorded = [m.params for m in explorers.recorded_sweep(spec, shape)]
        choices = {p: tuple(sorted({r[p] for r in recorded})) for p in spec.param_names}
    defaults = spec.full_params()
    sliders = {
        p: w.SelectionSlider(options=values, value=defaults[p] if defaults[p] in values else values[0],
                             description=p, continuous_update=False, style={"description_width": "4.5em"},
                             layout=w.Layout(width="auto", min_width="0"))
        for p, values in choices.items()
    }
    status = w.HTML()
    out = w.Output()
    history: dict[tuple, Measurement] = {}
    start = {p: s.value for p, s in sliders.items()}
    background, progress = _warmup(spec, start) if device.live() else (None, w.HTML())
    one_at_a_time = threading.Lock()  # the opening measurement runs in a thread: moves wait for it

    def show(result: Measurement, params: dict[str, int]) -> None:  # from any thread: no `with out`
        out.outputs = ()
        out.append_display_data(_chart(list(history.values()) or [result], result))
        if extra is not None:
            out.append_display_data(extra(params))
        plt.close("all")

    def update(_: object = None) -> None:
        with one_at_a_time:
            params = {p: s.value for p, s in sliders.items()}
            if background is not None:
                background.focus(params)
                if not background.is_ready(params):
                    status.value = f"compiling {spec.describe(params)} (the background has not reached it yet)..."
            try:
                result = timing.bench(spec, shape, params, method=turns.SHORT)
            except (ValueError, LookupError) as err:  # a broken rule or a point outside the recorded grid
                status.value = f"<span style='color:#b00'>&#10007; {err}</span>"
                return
            if background is not None:
                background.compiled_here(params)
            history[tuple(params.items())] = result
            status.value = _status(spec, result)
            show(result, params)

    for s in sliders.values():
        s.observe(update, names="value")
    if device.live():  # open at once on the record of the starting instance, measured in a thread meanwhile
        recorded = records.lookup_or_none(spec.name, start, *shape)
        if recorded is not None:
            status.value = f"measuring {spec.describe(start)} now; until then, as recorded: " + _status(spec, recorded)
            show(recorded, start)
        box_opened = threading.Thread(target=update, name=f"{spec.name} explorer opens", daemon=True)
        box_opened.start()
    else:
        box_opened = None
        update()
    mode = ("<b>live</b>: each change compiles, verifies and times on this GPU" if device.live() else
            f"<b>replay</b> ({replay_reason()}): the sliders move over the grid recorded on {device.replay_gpu()}")
    header = w.HTML(f"{spec.title} tile explorer at {shape[0]}x{shape[1]}x{shape[2]} ({mode})")
    grid = w.GridBox(list(sliders.values()), layout=w.Layout(
        grid_template_columns="repeat(auto-fill, minmax(15em, 1fr))", grid_gap="0.2em 1em", width="100%"))
    box = w.VBox([header, grid, progress, status, out])
    box.warmup, box.opened = background, box_opened  # benchmarks/widget_latency.py waits on them
    return box


def _warmup(spec: catalog.KernelSpec, start: dict[str, int]) -> tuple[warmup.Warmup, w.HTML]:
    """Background compilation of the kernel's legal grid on this GPU (less the starting instance, which the
    first chart compiles), and a line that follows it."""
    gpu = device.gpu()
    grid = [p for p in catalog.legal_grid(spec) if p != start
            and spec.smem_bytes(p) <= gpu.smem_per_block]
    line = w.HTML()

    def show(done: int, total: int) -> None:
        line.value = (f"<small>compiled in the background: {done} of {total} legal instances, nearest the sliders "
                      "first</small>" if done < total else
                      f"<small>all {total + 1} legal instances compiled: a move only loads and times its kernel"
                      "</small>")

    show(0, len(grid))
    return warmup.Warmup(spec, grid, start, spec.arch or gpu.arch, on_progress=show), line


def _status(spec: catalog.KernelSpec, x: Measurement) -> str:
    text = (f"&#10003; {spec.describe(x.params)}: {spec.threads(x.params)} threads, "
            f"{spec.smem_bytes(x.params)} B shared memory, {_registers(spec, x.params)}; "
            f"verified (max rel err {x.max_rel_err:.1e}); <b>{x.gflops:,.0f} GFLOP/s</b> = "
            f"{x.pct_cublas:.1f}% of cuBLAS")
    return text


def _registers(spec: catalog.KernelSpec, params: dict[str, int]) -> str:
    try:
        return f"{compiler.resources(spec, params).registers} registers/thread"
    except ImportError:  # replay without the offline compiler installed: the count is optional here
        return "registers unknown"


def _chart(history: list[Measurement], current: Measurement):
    ordered = sorted(history, key=lambda x: x.gflops)
    fig, ax = plt.subplots(figsize=(7, 0.3 * len(ordered) + 1.6))
    ax.barh([f"{params_text(x.params)} ({_registers(catalog.get(x.kernel), x.params)})" for x in ordered],
            [x.gflops for x in ordered], color=["C3" if x is current else "C0" for x in ordered])
    ax.axvline(current.cublas_gflops, **plots.CUBLAS_STYLE, label=f"cuBLAS ({current.cublas_gflops:,.0f})")
    ax.set_xlabel("GFLOP/s")
    ax.set_title("configurations tried so far (red: current)", fontsize=9)
    ax.legend(fontsize=8, loc="lower right")
    ax.tick_params(axis="y", labelsize=7)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    return style.stamp(fig, provenance(history))


def bank_explorer(size: int = grids.COUNTER_SIZE) -> w.VBox:
    """Pick an A-tile layout and a shared-memory instruction: see its bank grid, and the model's
    whole-launch conflict count beside the hardware's (live: Nsight Compute now; replay: recorded) at M = N = K =
    `size`."""
    from ..models import banks, hardware

    size = as_integer("size (M = N = K, one integer)", size)
    layout = w.Dropdown(options=[(f"{v} ({k})", k) for k, v in catalog.A_LAYOUTS.items()], value=0,
                        description="A layout")
    site = w.Dropdown(options=[(s.name, i) for i, s in enumerate(banks.sites("bank_conflicts"))], value=0,
                      description="instruction", layout=w.Layout(width="420px"))
    counters = w.HTML()
    out = w.Output()

    def update(_: object = None) -> None:
        params = catalog.get("bank_conflicts").full_params({"LAYOUT": layout.value})
        with out:
            out.clear_output(wait=True)
            display(diagrams.bank_grid(banks.sites("bank_conflicts", params)[site.value]))
            plt.close("all")
        counters.value = "counting with Nsight Compute..." if device.live() else ""
        try:
            row = hardware.counters("bank_conflicts", (size,) * 3, params)
        except (LookupError, RuntimeError) as err:
            counters.value = f"<span style='color:#b00'>{err}</span>"
            return
        predicted = banks.predict("bank_conflicts", size, size, size, params)
        m = row["metrics"]
        counters.value = (
            f"whole launch at {size}<sup>3</sup>: store conflicts predicted {predicted['st_conflicts']:,.0f}, "
            f"hardware {m['l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum']:,.0f}; load conflicts "
            f"predicted {predicted['ld_conflicts']:,.0f}, hardware "
            f"{m['l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum']:,.0f} "
            f"({'measured now' if device.live() else 'recorded on ' + row['gpu'] + ', ' + row['recorded_at'][:10]})")

    layout.observe(update, names="value")
    site.observe(update, names="value")
    update()
    return w.VBox([w.HBox([layout, site]), counters, out])
