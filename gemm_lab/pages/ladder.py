"""The book's ladder, one row a step: the chapter, its kernel, the one change it makes, what it reached, its share of
the cuBLAS it races, and the ceiling its speed-of-light budget predicts (`model.speed_of_light`: the lowest row its
chapter has taught; what binds at the power cap, chapters 8 and 9 show, can be another). The Ozaki scheme's ceiling
is chapter 10's speed of light (`emulation.SpeedOfLight`): its INT8 products alone at the rate cuBLAS's INT8 GEMM
reached, over the moduli it chose, read from the same record the chapter reads. The intro and the scoreboard open
with it, so that every gain has its one cause and its number before the chapters explain them.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePosixPath

from .. import catalog, records
from ..models import model
from ..precision import emulation, int8
from ..records import Measurement
from .tables import Table, baseline_name, kernel_label, provenance, shape_text


def ladder(ms: Sequence[Measurement], ceilings: dict, l2_gbs: float | None = None) -> Table:
    """One row per kernel of `ms` (one shape), in the book's order: chapter, kernel, the change it makes (its
    catalog title), TFLOP/s, % of which cuBLAS (for tensor-core kernels the median of the rounds), and the predicted
    ceiling: the lowest row of its budget at that shape."""
    order = {name: i for i, name in enumerate(catalog.KERNELS)}
    rows = []
    for x in sorted(ms, key=lambda x: (model.chapter_key(catalog.get(x.kernel).chapter), order[x.kernel])):
        spec = catalog.get(x.kernel)
        level, tflops = ozaki_ceiling(x) if spec.precision == "ozaki" else (None, None)
        if level is None:
            bound = model.speed_of_light(spec, x.params, (x.m, x.n, x.k), ceilings, l2_gbs).upto(spec.chapter).bound
            level, tflops = bound.level, bound.tflops  # the lowest among the rows its chapter has taught
        passed = ", passed" if x.gflops / 1e3 > tflops else ""
        rows.append((model.chapter_label(spec.chapter), kernel_number(spec), kernel_label(x, ms), spec.title,
                     f"{x.gflops / 1e3:,.1f}",
                     f"{x.pct_cublas:.0f}\u00a0% ({baseline_name(x.precision).split()[-1]})",
                     f"{level} ({tflops:,.1f}{passed})"))
    shapes = {shape_text(x.m, x.n, x.k) for x in ms}
    return Table(("ch.", "no.", "kernel", "what changes", "TFLOP/s", "% of cuBLAS", "predicted ceiling (TFLOP/s)"),
                 tuple(rows), f"at {', '.join(sorted(shapes))}; no.: the kernel's number, its file's in kernels/ "
                 "(the text's \"kernel 11\"; 3xTF32: its TF32 kernel's file with SPLIT set); % of cuBLAS: of the "
                 "cuBLAS (SGEMM or TF32) timed in the same run in the kernel's own "
                 "math (tensor-core kernels: the median of the rounds' shares); predicted ceiling: the lowest row "
                 "of the kernel's speed-of-light budget among those its chapter has taught (passed: the kernel beats "
                 "that row, whose model over-counts its cost; the issue row counts every instruction of the compiled "
                 "main loop, some of which a thread skips: chapter 3); the Ozaki scheme: chapter 10's speed of light, "
                 "its INT8 products alone at cuBLAS INT8's recorded rate over the moduli it chose; " + provenance(ms),
                 wrap=(3,))


def kernel_number(spec: catalog.KernelSpec) -> str:
    """The kernel's number, the prefix of its file in `kernels/` ("11" for `kernels/11_tf32_mma.cu`), with "3x" for a
    3xTF32 row (its TF32 kernel's file with `SPLIT` set)."""
    number = PurePosixPath(spec.source).name.split("_")[0].lstrip("0")
    return f"{number}, 3x" if spec.precision == "3xtf32" else number


def ozaki_ceiling(x: Measurement) -> tuple[str | None, float | None]:
    """Chapter 10's speed of light for the Ozaki race `x`: ("INT8 products", TFLOP/s), the rate of cuBLAS's INT8 GEMM
    in kernel 15's recorded race at `x`'s shape and on its GPU over the moduli `x` ran; (None, None) where it fell back
    to SGEMM or no INT8 race is recorded there. Read from the records, as the device's ceilings are: no measurement."""
    moduli = x.details.get("moduli") or x.params.get("MODULI")
    race = records.lookup_or_none(int8.PROBE.name, int8.full_params(), x.m, x.n, x.k, gpu=x.gpu)
    if not moduli or race is None:
        return None, None
    light = emulation.SpeedOfLight(x.m, int(moduli), race.cublas_gflops / 1e3, x.cublas_gflops / 1e3)
    return "INT8 products", light.tflops
