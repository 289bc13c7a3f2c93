"""Results as the reader sees them: tables of text cells, banners, and the provenance line that every chart and table
carries ('recorded on <GPU>, <date>' or 'measured live on <GPU>').

In the core because every layer that shows a measurement says where it came from, the same way.
"""
from __future__ import annotations

import dataclasses
import html
from dataclasses import dataclass
from typing import Iterable

from . import device
from .records import Measurement


@dataclass(frozen=True)
class Table:
    """Rows of text cells. In HTML it fits the page: compact type, numbers right-aligned, a value kept on one line
    with its unit, longer cells wrapped where the page is too narrow; `fold` starts a long table folded."""

    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    caption: str = ""
    wrap: tuple[int, ...] = ()  # columns of prose: given room to wrap into lines rather than single words
    fold: str = ""  # a summary line; the table then opens folded under it

    def __str__(self) -> str:
        cells = [self.columns, *self.rows]
        widths = [max(len(r[i]) for r in cells) for i in range(len(self.columns))]
        lines = ["  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in cells]
        lines.insert(1, "  ".join("-" * w for w in widths))
        return "\n".join(([self.fold] if self.fold else []) + lines + ([self.caption] if self.caption else []))

    def folded(self, summary: str) -> Table:
        """The same table, opening folded under `summary` (for tables too long to read in passing)."""
        return dataclasses.replace(self, fold=summary)

    def split(self, at: int) -> Tables:
        """Columns `at` and after as a second table under the first, both keyed by the first column: a table too
        wide for the page, read in two parts. The caption goes under the second."""
        def part(columns: list[int], caption: str) -> Table:
            return Table(tuple(self.columns[i] for i in columns), tuple(tuple(r[i] for i in columns) for r in self.rows),
                         caption, tuple(columns.index(i) for i in self.wrap if i in columns))

        return Tables((part(list(range(at)), ""), part([0, *range(at, len(self.columns))], self.caption)))

    def _repr_html_(self) -> str:
        pad = "padding:0.2em 0.4em"
        align = ["right" if all(_numeric(r[i]) for r in self.rows) else "left" for i in range(len(self.columns))]
        head = "".join(f"<th style='{pad};text-align:{a};vertical-align:bottom'>{html.escape(c)}</th>"
                       for c, a in zip(self.columns, align))

        def td(text: str, i: int) -> str:
            # a value and its unit ("0.82 ms") stay on one line; a value and its bracket ("48,657 (94%)") too, but
            # where the page is too narrow the bracket may go under the value; anything longer may wrap
            value, _, bracket = text.partition(" ")
            if i not in self.wrap and text.count(" ") == 1 and bracket.startswith("("):
                nowrap = "<span style='white-space:nowrap'>{}</span>"
                return (f"<td style='{pad};text-align:{align[i]}'>{nowrap.format(html.escape(value))} "
                        f"{nowrap.format(html.escape(bracket))}</td>")
            width = "min-width:14em" if i in self.wrap else "white-space:nowrap" if text.count(" ") <= 1 else ""
            return f"<td style='{pad};text-align:{align[i]};{width}'>{html.escape(text)}</td>"

        body = "".join("<tr>" + "".join(td(c, i) for i, c in enumerate(r)) + "</tr>" for r in self.rows)
        cap = (f"<caption style='caption-side:bottom;text-align:left;font-size:0.92em'>{html.escape(self.caption)}"
               "</caption>" if self.caption else "")
        table = (f"<table style='font-size:0.85em;line-height:1.35;margin:0'>{cap}<thead><tr>{head}</tr></thead>"
                 f"<tbody>{body}</tbody></table>")
        shown = f"<div style='overflow-x:auto'>{table}</div>"  # a table wider than the page scrolls, never cut
        if self.fold:
            return f"<details><summary style='cursor:pointer'>{html.escape(self.fold)}</summary>{shown}</details>"
        return shown


@dataclass(frozen=True)
class Tables:
    """Tables shown one under the other, as one output; `fold` starts them folded under one summary line."""

    parts: tuple[Table, ...]
    fold: str = ""

    def __str__(self) -> str:
        return "\n\n".join(([self.fold] if self.fold else []) + list(map(str, self.parts)))

    def folded(self, summary: str) -> Tables:
        """The same tables, opening folded under `summary`."""
        return dataclasses.replace(self, fold=summary)

    def _repr_html_(self) -> str:
        shown = "<div style='height:0.8em'></div>".join(t._repr_html_() for t in self.parts)
        if self.fold:
            return f"<details><summary style='cursor:pointer'>{html.escape(self.fold)}</summary>{shown}</details>"
        return shown


def _numeric(cell: str) -> bool:
    """A number first, perhaps with a unit or a bracketed share ('48,657 (94%)', '4.1e-06', '3.6x', '4096³'), or
    '-' or nothing for none: such columns align right."""
    if cell in ("", "-"):
        return True
    try:
        float(cell.split(" ")[0].rstrip("%x³,").replace(",", ""))
    except ValueError:
        return False
    return True


def params_text(params: dict[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items()) or "-"


def provenance(measurements: Iterable[Measurement], *, races: bool = True) -> str:
    """'recorded on <GPU>, <date>' (replay) or 'measured live on <GPU>' - shown on every chart and table. Short races
    say so (how many, where some rows are not), and other named races name their method; `races=False` leaves that
    out for a chart whose caption names its own races (chapter 8's turn lengths, the subject, not a shortcut)."""
    ms = list(measurements)
    if not ms:
        return ""
    gpus = sorted({x.gpu for x in ms})
    n_short = sum(map(is_short, ms)) if races else 0
    short = ("" if not n_short else "; short races, not sustained ones" if n_short == len(ms)
             else f"; {n_short} of these {len(ms)} results from short races, the others not")
    others = [m for m in dict.fromkeys(x.method for x in ms) if m not in ("sustained", "short", "")] if races else []
    short += f"; races timed in {', '.join(others)}" if others else ""  # e.g. chapter 8's turn lengths
    if any(x.replayed for x in ms):
        dates = sorted({x.date for x in ms})
        span = dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}"
        how = "read back from records/" if device.live() else f"replayed: {replay_reason()}"
        return f"recorded on {', '.join(gpus)}, {span} ({how}){short}"
    return f"measured live on {', '.join(gpus)}{short}"


def is_short(x: Measurement) -> bool:
    """Timed in a short race ("": recorded before the methods were named, all of them short)."""
    return x.method in ("short", "")


def counters_provenance(rows: Iterable[dict]) -> str:
    """'Nsight Compute on <GPU>, <date>' for counter rows (`hardware.counters`): every counter table names whose
    counters it shows and when they were read (live ones are today's)."""
    rows = list(rows)
    gpus = sorted({r["gpu"] for r in rows})
    dates = sorted({r["recorded_at"][:10] for r in rows})
    span = dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}"
    return f"Nsight Compute on {', '.join(gpus)}, {span}"


def shape_text(m: int, n: int, k: int) -> str:
    """'4096³' for a cube, else '2999×4001×3001': short enough for a table column."""
    return f"{m}³" if m == n == k else f"{m}×{n}×{k}"


def clock_and_power(telemetry: dict[str, float]) -> str:
    """"1,830 MHz, 690 W": the median SM clock NVML read while a side ran and its mean power, the joules of its timed
    turns (NVML's energy counter) over their seconds ("-" where not read)."""
    return (f"{telemetry['sm_clock_mhz']:,.0f}\u00a0MHz, {telemetry['mean_power_w']:,.0f}\u00a0W"  # wraps at ", "
            if {"sm_clock_mhz", "mean_power_w"} <= set(telemetry) else "-")


def gflop_per_joule(x: Measurement, cublas: bool = False) -> str:
    """A side's GFLOP/J as a table shows it ("-" where NVML's energy counter was not read)."""
    value = x.gflop_per_joule(cublas)
    return f"{value:,.0f}" if value else "-"


@dataclass(frozen=True)
class Markdown:
    """MyST Markdown: the book renders it (roles and all), terminals print it as it is."""

    text: str

    def __str__(self) -> str:
        return self.text

    def _repr_markdown_(self) -> str:
        return self.text


@dataclass(frozen=True)
class Banner:
    """Says at the top of a chapter whether its numbers are measured now or replayed."""

    text: str

    def __str__(self) -> str:
        return self.text

    def _repr_html_(self) -> str:
        return f"<div style='border-left:4px solid #36c;padding:4px 10px;background:#f4f7fc'>{html.escape(self.text)}</div>"


def replay_reason() -> str:
    """Why this run replays: forced, a GPU that CuPy cannot use, or no GPU at all."""
    if device.forced_replay():
        return f"{device.REPLAY_ENV} is set"
    return "CuPy sees no CUDA GPU" if device.reader_gpu() else "no CUDA GPU in use"
