"""Measurements as tables: plain text for the terminal, HTML (with its provenance) for the book."""
from __future__ import annotations

import html
import os
from dataclasses import dataclass
from typing import Iterable, Sequence

from .records import Measurement


@dataclass(frozen=True)
class Table:
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    caption: str = ""
    wrap: tuple[int, ...] = ()  # columns of prose that may wrap in HTML; numbers never do

    def __str__(self) -> str:
        cells = [self.columns, *self.rows]
        widths = [max(len(r[i]) for r in cells) for i in range(len(self.columns))]
        lines = ["  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in cells]
        lines.insert(1, "  ".join("-" * w for w in widths))
        return "\n".join(lines + ([self.caption] if self.caption else []))

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{html.escape(c)}</th>" for c in self.columns)
        style = ["min-width:12em" if i in self.wrap else "white-space:nowrap" for i in range(len(self.columns))]
        body = "".join("<tr>" + "".join(f"<td style='{st}'>{html.escape(c)}</td>" for c, st in zip(r, style)) + "</tr>"
                       for r in self.rows)
        cap = f"<caption style='caption-side:bottom'>{html.escape(self.caption)}</caption>" if self.caption else ""
        table = f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
        return f"<div style='overflow-x:auto'>{table}</div>"  # wide tables scroll instead of being cut off


def params_text(params: dict[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items()) or "-"


def provenance(measurements: Iterable[Measurement]) -> str:
    """'recorded on <GPU>, <date>' (replay) or 'measured live on <GPU>' - shown on every chart and table."""
    ms = list(measurements)
    if not ms:
        return ""
    from . import device

    gpus = sorted({x.gpu for x in ms})
    if any(x.replayed for x in ms):
        dates = sorted({x.date for x in ms})
        span = dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}"
        how = "read back from records/" if device.live() else f"replayed: {replay_reason()}"
        return f"recorded on {', '.join(gpus)}, {span} ({how})"
    return f"measured live on {', '.join(gpus)}"


def measurements_table(ms: Sequence[Measurement]) -> Table:
    """One row per measurement: GFLOP/s beside cuBLAS of the same run, and vs the FP32 peak."""
    rows = tuple(
        (x.kernel, params_text(x.params), f"{x.m}x{x.n}x{x.k}", f"{x.gflops:,.0f}", f"{x.cublas_gflops:,.0f}",
         f"{x.pct_cublas:.1f}%", f"{x.pct_peak:.1f}%", f"{x.max_rel_err:.1e}")
        for x in ms
    )
    return Table(("kernel", "params", "M x N x K", "GFLOP/s", "cuBLAS GFLOP/s", "% cuBLAS", "% FP32 peak",
                  "max rel err"), rows, provenance(ms))


def by_size(ms: Sequence[Measurement]) -> Table:
    """One row per kernel, one column per M = N = K: GFLOP/s and % of cuBLAS (same run), to read at a glance."""
    sizes = sorted({x.m for x in ms})
    kernels = list(dict.fromkeys(x.kernel for x in ms))
    cell = {(x.kernel, x.m): f"{x.gflops:,.0f} ({x.pct_cublas:.0f}%)" for x in ms}
    return Table(("kernel", *(f"M = N = K = {s}" for s in sizes)),
                 tuple((k, *(cell.get((k, s), "-") for s in sizes)) for k in kernels),
                 "GFLOP/s (% of cuBLAS SGEMM timed in the same run); " + provenance(ms))


@dataclass(frozen=True)
class Banner:
    """Says at the top of a chapter whether its numbers are measured now or replayed."""

    text: str

    def __str__(self) -> str:
        return self.text

    def _repr_html_(self) -> str:
        return f"<div style='border-left:4px solid #36c;padding:4px 10px;background:#f4f7fc'>{html.escape(self.text)}</div>"


def banner() -> Banner:
    """Live: the GPU measuring now. Replay: why, whose records and their dates, and how to measure instead."""
    from . import device, records

    if device.live():
        gpu = device.gpu()
        return Banner(f"Live: measuring on {gpu.name} ({gpu.sms} SMs, FP32 peak {gpu.peak_gflops / 1e3:.1f} "
                      f"TFLOP/s at {gpu.clock_mhz:.0f} MHz). Every number below is measured now.")
    mine, shown = device.reader_gpu(), device.replay_gpu()
    dates = sorted({x.date for x in records.measurements()})
    when = f", {dates[0]}" + (f" to {dates[-1]}" if len(dates) > 1 else "") if dates else ""
    text = f"Replay ({replay_reason()}): every number below was recorded on {shown}{when}."
    if os.environ.get(device.GPU_ENV):
        text += f" {device.GPU_ENV} chose these records."
    elif mine and mine != shown:
        text += f" records/ holds none from your {mine} (`gemm-lab record` adds them)."
    if not mine:
        text += " Run this page on a machine with an NVIDIA GPU to measure your own."
    elif device.forced_replay():
        text += f" Unset {device.REPLAY_ENV} to measure your {mine}."
    else:
        text += f" Install the cuda12 or cuda13 extra to measure your {mine}."
    return Banner(text)


def replay_reason() -> str:
    """Why this run replays: forced, a GPU that CuPy cannot use, or no GPU at all."""
    from . import device

    if device.forced_replay():
        return f"{device.REPLAY_ENV} is set"
    return "CuPy sees no CUDA GPU" if device.reader_gpu() else "no CUDA GPU in use"


def recorded_gpus() -> list[str]:
    """Names of the GPUs with recorded results under records/ (from each folder's device.json)."""
    from . import records

    names = []
    for folder in sorted(p for p in records.RECORDS_DIR.iterdir() if p.is_dir()):
        device_file = folder / "device.json"
        if device_file.exists():
            names += [row["gpu"] for row in records.read_rows(device_file)]
    return names


def gpu_comparison(kernels: Sequence[str], sizes: Sequence[int], gpus: Sequence[str] | None = None) -> Table:
    """Recorded GFLOP/s and % of cuBLAS (same run) of each kernel's default tile on several GPUs."""
    from . import catalog, records

    gpus = list(gpus or recorded_gpus())
    rows, dates = [], set()
    for kernel in kernels:
        params = catalog.get(kernel).full_params()
        for size in sizes:
            cells = []
            for gpu in gpus:
                try:
                    x = records.lookup(kernel, params, size, size, size, gpu=gpu)
                except LookupError:
                    cells.append("not recorded")
                    continue
                dates.add(f"{x.gpu} {x.date}")
                cells.append(f"{x.gflops:,.0f} ({x.pct_cublas:.0f}%)")
            rows.append((kernel, str(size), *cells))
    return Table(("kernel", "M = N = K", *(f"{g}: GFLOP/s (% cuBLAS)" for g in gpus)), tuple(rows),
                 "recorded: " + "; ".join(sorted(dates)) + ". Each % is against cuBLAS SGEMM timed in the same run on that GPU.")
