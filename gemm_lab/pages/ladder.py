"""The book's ladder, one row a step: the chapter, its kernel, the one change it makes, what it reached, its share of
the cuBLAS it races, and the ceiling its speed-of-light budget predicts (`model.speed_of_light`: the lowest row its
chapter has taught; what binds at the power cap, chapters 8 and 9 show, can be another). The intro and
the scoreboard open with it, so that every gain has its one cause and its number before the chapters explain them.
"""
from __future__ import annotations

from collections.abc import Sequence

from .. import catalog
from ..models import model
from ..records import Measurement
from .tables import Table, baseline_name, provenance, shape_text


def ladder(ms: Sequence[Measurement], ceilings: dict, l2_gbs: float | None = None) -> Table:
    """One row per kernel of `ms` (one shape), in the book's order: chapter, kernel, the change it makes (its
    catalog title), TFLOP/s, % of which cuBLAS (for tensor-core kernels the median of the rounds), and the predicted
    ceiling: the lowest row of its budget at that shape."""
    order = {name: i for i, name in enumerate(catalog.KERNELS)}
    rows = []
    for x in sorted(ms, key=lambda x: (model.chapter_key(catalog.get(x.kernel).chapter), order[x.kernel])):
        spec = catalog.get(x.kernel)
        budget = model.speed_of_light(spec, x.params, (x.m, x.n, x.k), ceilings, l2_gbs).upto(spec.chapter)
        bound = budget.bound  # among the rows its chapter has taught
        passed = ", passed" if x.gflops / 1e3 > bound.tflops else ""
        rows.append((model.chapter_label(spec.chapter), x.kernel, spec.title, f"{x.gflops / 1e3:,.1f}",
                     f"{x.pct_cublas:.0f} % of {baseline_name(x.precision)}",
                     f"{bound.level} ({bound.tflops:,.1f}{passed})"))
    shapes = {shape_text(x.m, x.n, x.k) for x in ms}
    return Table(("ch.", "kernel", "the one change", "TFLOP/s", "share", "predicted ceiling (TFLOP/s)"), tuple(rows),
                 f"at {', '.join(sorted(shapes))}; share: of the cuBLAS timed in the same run in the kernel's own "
                 "math (tensor-core kernels: the median of the rounds of turns); predicted ceiling: the lowest row "
                 "of the kernel's speed-of-light budget among those its chapter has taught (passed: the kernel beats "
                 "that row, whose model over-counts its cost); " + provenance(ms),
                 wrap=(2, 5))
