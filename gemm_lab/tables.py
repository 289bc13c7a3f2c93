"""Measurements as tables: plain text for the terminal, HTML (with its provenance) for the book."""
from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Iterable, Sequence

from .records import Measurement


@dataclass(frozen=True)
class Table:
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    caption: str = ""

    def __str__(self) -> str:
        cells = [self.columns, *self.rows]
        widths = [max(len(r[i]) for r in cells) for i in range(len(self.columns))]
        lines = ["  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in cells]
        lines.insert(1, "  ".join("-" * w for w in widths))
        return "\n".join(lines + ([self.caption] if self.caption else []))

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{html.escape(c)}</th>" for c in self.columns)
        body = "".join("<tr>" + "".join(f"<td style='white-space:nowrap'>{html.escape(c)}</td>" for c in r) + "</tr>" for r in self.rows)
        cap = f"<caption style='caption-side:bottom'>{html.escape(self.caption)}</caption>" if self.caption else ""
        return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


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
        how = "read back from records/" if device.live() else "replayed: no GPU in use"
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


@dataclass(frozen=True)
class Banner:
    """Says at the top of a chapter whether its numbers are measured now or replayed."""

    text: str

    def __str__(self) -> str:
        return self.text

    def _repr_html_(self) -> str:
        return f"<div style='border-left:4px solid #36c;padding:4px 10px;background:#f4f7fc'>{html.escape(self.text)}</div>"


def banner() -> Banner:
    from . import device, records

    if device.live():
        gpu = device.gpu()
        return Banner(f"Live: measuring on {gpu.name} ({gpu.sms} SMs, FP32 peak {gpu.peak_gflops / 1e3:.1f} "
                      f"TFLOP/s at {gpu.clock_mhz:.0f} MHz). Every number below is measured now.")
    dates = sorted({x.date for x in records.measurements()})
    when = f", {dates[0]}" + (f" to {dates[-1]}" if len(dates) > 1 else "") if dates else ""
    return Banner(f"Replay: no CUDA GPU in use, so every number below was recorded on {device.replay_gpu()}"
                  f"{when}. Run this page on a machine with an NVIDIA GPU to measure your own.")
