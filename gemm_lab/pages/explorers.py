"""Explorers that work in the static web page: Vega-Lite charts over a recorded sweep grid.

The reader picks values from drop-downs bound to Vega-Lite parameters; filter transforms keep the
matching configurations and the heatmap redraws in the browser, with no Python kernel and no
hand-written JavaScript. The data are the records of the replay GPU, and the title says so. Text is set in CSS
pixels at least the page's body size (`style.BODY_PX`); the book's stylesheet lays the drop-downs out in a grid.
"""
from __future__ import annotations

import altair as alt

from .. import catalog, device, records
from ..records import Measurement
from ..spec import Shape, shape_of
from . import grids, style
from .tables import params_text, provenance

AXES = ("BN", "BM")  # the heatmap's x and y unless a page names others


def sweep_explorer(kernel: str, size: int | Shape = grids.EXPLORER_SIZE, x: str = AXES[0],
                   y: str = AXES[1]) -> alt.Chart:
    """A GFLOP/s heatmap over two parameters (`x`, `y`) at `size` (M = N = K, or (M, N, K)); every other parameter is
    a drop-down in the page.

    Switches Altair to its HTML renderer, so the chart is self-contained in the built book.
    """
    spec = catalog.get(kernel)
    check_axes(spec, x, y)
    shape = shape_of(size)
    ms = recorded_sweep(spec, shape)
    alt.renderers.enable("html")
    grid = catalog.legal_grid(spec, grids.SWEEPS.get(spec.name))
    recorded = {tuple(sorted(m.params.items())) for m in ms}
    missing = sum(tuple(sorted(p.items())) not in recorded for p in grid)
    rows = [{**m.params, "GFLOP/s": round(m.gflops), "% of cuBLAS": round(m.pct_cublas, 1),
             "configuration": params_text(m.params)} for m in ms]
    defaults = spec.full_params()
    controls = [p for p in spec.param_names if p not in (x, y)]
    chart = alt.Chart(alt.Data(values=rows))
    for p in controls:
        values = sorted({r[p] for r in rows})
        name = f"pick_{p}"
        chart = chart.add_params(alt.param(
            name=name, value=defaults[p] if defaults[p] in values else values[0],
            bind=alt.binding_select(options=values, name=f"{p} ")))
        chart = chart.transform_filter(f"datum.{p} == {name}")
    # the colours span the sweep's range, not 0 to its top: its instances lie within tens of % of each other
    low, top = min(r["GFLOP/s"] for r in rows), max(r["GFLOP/s"] for r in rows)
    base = chart.encode(x=alt.X(f"{x}:O", title=x, axis=alt.Axis(labelAngle=0)),
                        y=alt.Y(f"{y}:O", title=y, sort="descending"))
    cells = base.mark_rect().encode(
        color=alt.Color("GFLOP/s:Q", scale=alt.Scale(domain=[low, top], scheme="viridis")),
        tooltip=["configuration:N", "GFLOP/s:Q", "% of cuBLAS:Q"])
    labels = base.mark_text(fontSize=style.BODY_PX).encode(
        text=alt.Text("GFLOP/s:Q", format=","),
        color=alt.condition(f"datum['GFLOP/s'] < {low + 0.55 * (top - low)}", alt.value("white"), alt.value("black")))
    text = style.BODY_PX
    return (cells + labels).properties(
        width=72 * len({r[x] for r in rows}), height=40 * len({r[y] for r in rows}),
        title={"text": f"{spec.name} at {'x'.join(map(str, shape))}: GFLOP/s (hover for details)",
               # the page is static: why it replays does not apply; what is not recorded yet, it says
               "subtitle": [provenance(ms).split(" (")[0]] + ([
                   f"{missing} of its {len(grid)} swept instances not recorded yet",
                   "(gemm-lab record --only sweeps)"] if missing else [])},
    ).configure_axis(labelFontSize=text, titleFontSize=text).configure_legend(
        labelFontSize=text, titleFontSize=text).configure_title(fontSize=text + 1, subtitleFontSize=text)


def recorded_sweep(spec: catalog.KernelSpec, shape: Shape) -> list[Measurement]:
    """The replay GPU's measurements of `spec` at `shape`, for an explorer; a LookupError says where its sweep lies, or
    that it has none (only `grids.SWEEPS`' kernels have one)."""
    if spec.name not in grids.SWEEPS:  # its records are races of a few instances, not a grid to explore
        raise LookupError(f"{spec.name} has no recorded sweep at any size; the kernels with one are "
                          f"{', '.join(grids.SWEEPS)}")
    ms = [m for m in records.measurements(spec.name) if (m.m, m.n, m.k) == shape]
    if ms:
        return ms
    raise LookupError(f"no recorded sweep of {spec.name} at {'x'.join(map(str, shape))} on {device.replay_gpu()}; "
                      f"the book's sweeps are at {grids.EXPLORER_SIZE}")


def check_axes(spec: catalog.KernelSpec, x: str, y: str) -> None:
    """Refuse axes that are not two different parameters of the kernel (a typo failed later as a bare KeyError)."""
    names = ", ".join(spec.param_names)
    if len(spec.param_names) < 2:
        raise ValueError(f"{spec.name} has one parameter, {names}: the explorer's heatmap needs two, for x and y")
    for name in (x, y):
        if name not in spec.param_names:
            raise ValueError(f"{spec.name} has no parameter {name}; pick x and y from {names}")
    if x == y:
        raise ValueError(f"x and y are both {x}: pick two different parameters of {spec.name} from {names}")
