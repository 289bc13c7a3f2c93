"""Measurements as tables: plain text for the terminal, HTML for the book, each with the provenance line that every
chart and table carries ('recorded on <GPU>, <date>' or 'measured live on <GPU>'), and the banner atop a chapter."""
from __future__ import annotations

import dataclasses
import html
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .. import catalog, device, turns
from ..models.gpus import card_of
from ..records import CUBLAS_KERNELS, Measurement, date_span
from . import check_flag, check_page

if TYPE_CHECKING:
    from ..models import model

FOLD_CLASS = "lab-notes"  # a folded table looks like the lab notes (_static/gemm_lab.css): evidence, one click away


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
        wide for the page, read in two parts. The caption goes under the second, which keeps only the rows with
        something in its columns (a column of notes for a few rows is not a column of blanks)."""
        moved = range(at, len(self.columns))

        def part(columns: list[int], rows: Sequence[tuple[str, ...]], caption: str) -> Table:
            return Table(tuple(self.columns[i] for i in columns), tuple(tuple(r[i] for i in columns) for r in rows),
                         caption, tuple(columns.index(i) for i in self.wrap if i in columns))

        return Tables((part(list(range(at)), self.rows, ""),
                       part([0, *moved], [r for r in self.rows if any(r[i].strip() for i in moved)], self.caption)))

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
            return f"<details class='{FOLD_CLASS}'><summary>{html.escape(self.fold)}</summary>{shown}</details>"
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
            return f"<details class='{FOLD_CLASS}'><summary>{html.escape(self.fold)}</summary>{shown}</details>"
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
    where = _whose(ms)
    n_short = sum(map(is_short, ms)) if races else 0
    short = ("" if not n_short else "; short races, not sustained ones" if n_short == len(ms)
             else f"; {n_short} of these {len(ms)} results from short races, the others not")
    others = [m for m in dict.fromkeys(x.method for x in ms) if m not in ("sustained", "short", "")] if races else []
    short += f"; races timed in {', '.join(others)}" if others else ""  # e.g. chapter 8's turn lengths
    if any(x.replayed for x in ms):
        span = date_span(x.date for x in ms)
        how = "read back from records/" if device.live() else f"replayed: {replay_reason()}"
        return f"recorded on {where}, {span} ({how}){short}"
    return f"measured live on {where}{short}"


def _whose(ms: list[Measurement]) -> str:
    """The GPUs behind the rows: one; or, where a few kernels' rows come from another GPU than the rest (a kernel only
    that GPU has measured), the rest's GPU with those kernels named, e.g. "H100 (ozaki: H200)"; else all of them."""
    names = sorted({x.gpu for x in ms}, key=lambda g: -sum(x.gpu == g for x in ms))
    kernels = {g: sorted({x.kernel for x in ms if x.gpu == g}) for g in names}
    if len(names) == 1 or any(set(kernels[g]) & set(kernels[names[0]]) for g in names[1:]):
        return ", ".join(sorted(names))
    return f"{names[0]} (" + "; ".join(f"{', '.join(kernels[g])}: {g}" for g in names[1:]) + ")"


def kernel_label(x: Measurement, ms: Sequence[Measurement]) -> str:
    """A row's kernel name and its `gpu_mark`: "ozaki (H200)"."""
    return x.kernel + gpu_mark(x, ms)


def gpu_mark(x: Measurement, ms: Sequence[Measurement]) -> str:
    """" (H200)" where a table's rows come from several GPUs and this row's is not the one most rows come from (a
    kernel only that GPU has measured); "" for the rest."""
    gpus = [y.gpu for y in ms]
    return "" if x.gpu == max(set(gpus), key=gpus.count) else f" ({short_gpu(x.gpu)})"


def short_gpu(name: str) -> str:
    """A GPU's short name ("H200"), or its full name where no card of `gpus.CARDS` matches it."""
    return card.short if (card := card_of(name)) else name


def is_short(x: Measurement) -> bool:
    """Timed in a short race ("": recorded before the methods were named, all of them short)."""
    return x.method in ("short", "")


def counters_provenance(rows: Iterable[dict]) -> str:
    """'Nsight Compute on <GPU>, <date>' for counter rows (`hardware.counters`): every counter table names whose
    counters it shows and when they were read (live ones are today's)."""
    rows = list(rows)
    gpus = sorted({r["gpu"] for r in rows})
    return f"Nsight Compute on {', '.join(gpus)}, {date_span(r['recorded_at'][:10] for r in rows)}"


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
        look = "border-left:4px solid #36c;padding:4px 10px;background:#f4f7fc"
        return f"<div style='{look}'>{html.escape(self.text)}</div>"


def replay_reason() -> str:
    """Why this run replays: forced, a GPU that CuPy cannot use, or no GPU at all."""
    if device.forced_replay():
        return f"{device.REPLAY_ENV} is set"
    return "CuPy sees no CUDA GPU" if device.reader_gpu() else "no CUDA GPU in use"


def short_races(ms: Iterable[Measurement]) -> str:
    """How the FP32 (FFMA) rows among `ms` were timed, in words for prose: all in sustained races, or which kernels are
    still short races (their records predate the sustained method; `gemm-lab record` re-times them)."""
    ffma = [x for x in ms if x.precision == "fp32" and x.kernel not in CUBLAS_KERNELS.values()]
    short = sorted({x.kernel for x in ffma if is_short(x)})
    if not short:
        return "their rows here are sustained races too"
    return (f"{len(short)} of their {len({x.kernel for x in ffma})} rows here ({', '.join(short)}) "
            "are still short races, as the chart's footnote says")


def tensor_pipe(cases: Sequence[tuple[str, dict[str, int]]], size: int) -> Table:
    """One launch of each (kernel, params) case at M = N = K = `size` under Nsight Compute: how busy it kept the
    tensor pipe, the share of issue slots used and what they come to per FLOP (warp instructions per 1,000 FLOP: the
    share is per cycle, so a kernel whose cycles do more FLOPs can use more slots and issue fewer instructions per
    FLOP), the bytes L2 sent to the SMs and the SM clock (not pinned). The counters that explain a tensor-core
    kernel's result; a case not recorded yet says so and how to record it. No speed: a counted launch is a short
    burst, above the clock a sustained race settles at."""
    from ..models import hardware

    found, rows = [], []
    for kernel, params in cases:
        try:
            row = hardware.counters(kernel, (size, size, size), params)
        except LookupError:
            rows.append((kernel, "not recorded yet: gemm-lab record --only counters", "", "", "", ""))
            continue
        found.append(row)
        m, card = row["metrics"], card_of(row["gpu"])
        hz, issued = m["sm__cycles_elapsed.avg.per_second"], m["smsp__issue_active.avg.pct_of_peak_sustained_active"]
        slots = issued / 100 * hz * m["gpu__time_duration.sum"] * 1e-9 * catalog.SCHEDULERS_PER_SM  # an SM's
        rows.append((kernel, f"{m[hardware.TENSOR_METRICS[0]]:.0f}%", f"{issued:.0f}%",
                     f"{slots * card.sms / (2.0 * size**3) * 1e3:.2f}" if card else "–",
                     f"{m['lts__t_sectors_srcunit_tex_op_read.sum'] * 32 / 1e9:.2f}", f"{hz / 1e6:,.0f}"))
    return Table(("kernel", "tensor pipe busy", "issue slots used", "warp instructions per 1,000 FLOP", "L2 → SM, GB",
                  "SM clock, MHz"), tuple(rows),
                 f"one launch each at {size}³, clock not pinned; instructions: slots used × cycles × "
                 f"{catalog.SCHEDULERS_PER_SM} schedulers × SMs; "
                 + (counters_provenance(found) if found else "no counters recorded for these cases yet"),
                 wrap=(1,) if len(found) < len(rows) else ())


def baseline_name(precision: str) -> str:
    """The cuBLAS a kernel of this precision is timed beside (yardstick.BASELINE): TF32 races TF32, kernel 15's INT8
    products (precision "int8", `precision.int8`) race cuBLAS INT8, the rest SGEMM."""
    from ..timing import BASELINE

    if precision == "int8":
        return "cuBLAS INT8"
    if precision not in BASELINE:
        raise ValueError(f"precision {precision!r}: the book's are {', '.join([*BASELINE, 'int8'])}")
    return "cuBLAS TF32" if BASELINE[precision] == "tf32" else "cuBLAS SGEMM"


def _baselines(ms: Sequence[Measurement]) -> str:
    names = {baseline_name(x.precision) for x in ms}
    if len(names) == 1:
        return names.pop()
    return ("cuBLAS in each kernel's math (SGEMM for FP32, 3xTF32 and Ozaki kernels, TF32 tensor cores for TF32 ones, "
            "INT8 for kernel 15)")


def measurements_table(ms: Sequence[Measurement], *, parameters: bool = True) -> Table:
    """One row per measurement: GFLOP/s beside cuBLAS of the same run, and vs the FP32 peak (FP32 rows only: the
    tensor cores have their own peak). What every row shares (the shape; the kernel and the parameters its rows
    share) goes to the caption, leaving the columns to what differs, so parameter cells stay short. `parameters=False`
    leaves the parameters out (rows of several kernels at their defaults, shown elsewhere), for a narrower table."""
    check_flag("parameters", parameters)
    kernels = list(dict.fromkeys(x.kernel for x in ms))
    shapes = {shape_text(x.m, x.n, x.k) for x in ms}
    show_shape = len(shapes) != 1
    if len(kernels) == 1:  # the parameters that differ between rows; the rest go to the caption
        varying = [p for p in ms[0].params if len({x.params.get(p) for x in ms}) > 1]
        fixed = params_text({p: v for p, v in ms[0].params.items() if p not in varying})
        shared = [kernels[0] if len(varying) == len(ms[0].params) else f"{kernels[0]} ({fixed})" if not varying
                  else f"{kernels[0]} ({fixed} in every row)"]
        instance_columns: tuple[str, ...] = ("parameters",) if varying else ()
    else:
        varying, shared, instance_columns = [], [], ("kernel", "parameters") if parameters else ("kernel",)

    def row(x: Measurement) -> tuple[str, ...]:
        instance = ((params_text({p: x.params[p] for p in varying}),) if varying else
                    (kernel_label(x, ms), params_text(x.params))[:len(instance_columns)] if instance_columns else ())
        return (*instance, *((shape_text(x.m, x.n, x.k),) if show_shape else ()),
                f"{x.gflops:,.0f}", f"{x.cublas_gflops:,.0f}", f"{x.pct_cublas:.1f}%" + _rounds(x),
                f"{x.pct_peak:.1f}%" if x.precision == "fp32" else "-", f"{x.max_rel_err:.1e}")

    shared += [] if show_shape else [f"M×N×K = {shapes.pop()}"]
    return Table((*instance_columns, *(("M×N×K",) if show_shape else ()),
                  "GFLOP/s", "cuBLAS", "% cuBLAS", "% FP32 peak", "error"), tuple(map(row, ms)),
                 "".join(f"{s}; " for s in shared) + f"cuBLAS: GFLOP/s of {_baselines(ms)}, timed in the same run; "
                 + ("% FP32 peak: none for tensor-core rows, whose peak is their own (gl.budget); "
                    if any(x.precision != "fp32" for x in ms) else "")
                 + ("% cuBLAS of a tensor-core row: the median of its rounds' shares, in brackets the lowest and "
                    "highest round; " if any(_rounds(x) for x in ms) else "")
                 + f"error: max relative error against float64; {provenance(ms)}",
                 wrap=(instance_columns.index("parameters"),) if "parameters" in instance_columns else ())


def _rounds(x: Measurement) -> str:
    """' (44-46)': the spread of a tensor-core row's rounds, whose median is its headline share; '' for the rest."""
    if x.precision == "fp32" or not x.pct_range:
        return ""
    lo, hi = x.pct_range
    return f" ({lo:.0f}–{hi:.0f})"


def by_size(ms: Sequence[Measurement]) -> Table:
    """One row per kernel, one column per M = N = K: GFLOP/s and % of cuBLAS (same run), to read at a glance."""
    sizes = sorted({x.m for x in ms})
    kernels = list(dict.fromkeys(x.kernel for x in ms))
    ranged = {(x.kernel, x.m): x.pct_range for x in ms if x.precision != "fp32" and x.pct_range}
    cell = {(x.kernel, x.m): f"{x.gflops:,.0f} ({x.pct_cublas:.0f}%"
            + (", {:.0f}\u2060–\u2060{:.0f}%)".format(*ranged[x.kernel, x.m]) if (x.kernel, x.m) in ranged else ")")
            for x in ms}  # (word joiners: a narrow column breaks before the range, not inside it)
    label = {x.kernel: kernel_label(x, ms) for x in ms}
    return Table(("kernel", *(f"{s}³" for s in sizes)),
                 tuple((label[k], *(cell.get((k, s), "-") for s in sizes)) for k in kernels),
                 f"GFLOP/s at M = N = K and, in brackets, % of {_baselines(ms)} timed in the same run"
                 + ("; for tensor-core kernels the median of the rounds' shares, then the rounds' range"
                    if ranged else "")
                 + "; " + provenance(ms))


def ozaki_label(pinned: int, ran: int | None = None) -> str:
    """"Ozaki, 8 moduli", or for the default "Ozaki, auto (7 moduli)" (what its estimate chose, where recorded). Here,
    not in `plots`, so that tables and charts name the Ozaki rows alike without importing each other."""
    if pinned:
        return f"Ozaki, {pinned} moduli"
    return f"Ozaki, auto ({ran} moduli)" if ran else "Ozaki, auto" if ran is None else "Ozaki, auto (fell back)"


def energy_headline(x: Measurement) -> str:
    """'94.8 % of cuBLAS TF32 (rounds 93–96 %) at 501 GFLOP/J, cuBLAS 503': a kernel's share of cuBLAS and its work
    per joule beside cuBLAS's, as the intro and the scoreboard quote it. At the power cap speed is the cap times the
    work per joule, so the two numbers explain each other; the energy is left out where the record has none."""
    spread = f" (rounds {x.pct_range[0]:.0f}–{x.pct_range[1]:.0f} %)" if x.precision != "fp32" and x.pct_range else ""
    text = f"{x.pct_cublas:.1f} % of {baseline_name(x.precision)}{spread}"
    mine, theirs = x.gflop_per_joule(), x.gflop_per_joule(cublas=True)
    elsewhere = x.replayed and x.gpu != device.replay_gpu()  # a kernel only another GPU has measured
    return text + (f" at {mine:,.0f} GFLOP/J, cuBLAS {theirs:,.0f}" if mine and theirs else "") + (
        f" (on the {short_gpu(x.gpu)})" if elsewhere and card_of(x.gpu) else "")


def speed_and_power(ms: Sequence[Measurement]) -> Table:
    """Each measurement's speed beside cuBLAS in its own math, the range of its rounds' shares, the median SM clock
    NVML read while each side's timed launches ran, and each side's work per energy (NVML's energy counter): for
    tensor-core kernels, whose clock follows the power cap, the numbers that explain a share."""
    def name(x: Measurement) -> str:
        return (ozaki_label(x.params["MODULI"], x.details.get("moduli")) if "MODULI" in x.params else x.kernel) + \
            gpu_mark(x, ms)

    def share(x: Measurement) -> str:
        spread = x.pct_range
        return f"{x.pct_cublas:.0f}%" + (f" ({spread[0]:.0f}–{spread[1]:.0f})" if spread else "")

    def clock(t: dict[str, float]) -> str:
        return f"{t['sm_clock_mhz']:,.0f}" if "sm_clock_mhz" in t else "-"

    return Table(("size", "kernel", "TFLOP/s", "% of cuBLAS (rounds)", "MHz", "GFLOP/J", "cuBLAS MHz",
                  "cuBLAS GFLOP/J"),
                 tuple((shape_text(x.m, x.n, x.k), name(x), f"{x.gflops / 1e3:,.1f}", share(x), clock(x.telemetry),
                        gflop_per_joule(x), clock(x.cublas_telemetry), gflop_per_joule(x, cublas=True)) for x in ms),
                 f"% of {_baselines(ms)}, timed in the same run, in turns: the median of the rounds' shares, their "
                 "range in brackets; MHz: NVML's median SM clock while each side ran; GFLOP/J: its work over the "
                 "joules NVML's energy counter gave its timed turns; " + provenance(ms))


FORMER_LONG_TURN_MS = 1000.0  # the key shares' turns before records kept `turn_ms` (2026-11-29)


def turn_ms_of(x: Measurement) -> float:
    """The turn length `x` was raced in: kept in its record since 2026-11-29; before, a sustained key share took
    FORMER_LONG_TURN_MS and every other race its method's turns."""
    if x.turn_ms:
        return x.turn_ms
    key = x.method == turns.SUSTAINED.name and catalog.is_key_share(x.kernel, x.params, (x.m, x.n, x.k))
    by_method = {m.name: m.turn_ms for m in (turns.SHORT, turns.SUSTAINED)}
    return FORMER_LONG_TURN_MS if key else by_method.get(x.method, 0.0)


def long_turns(ms: Sequence[Measurement]) -> str:
    """The turn lengths the key shares among `ms` were raced in ("2 s"; "1 s or 2 s" where rows of both show)."""
    lengths = sorted({turn_ms_of(x) for x in ms if catalog.is_key_share(x.kernel, x.params, (x.m, x.n, x.k))})
    return " or ".join(f"{t / 1e3:g} s" for t in lengths or [turns.LONG_TURNS.turn_ms])


RETIME_AGREE = 1.0  # % of the re-timed share within which an outside re-timing confirms a record (issue 49)


def retime_gap_pct(race_pct: float, blocks_pct: float) -> float:
    """How far a race's share lies from its re-timing, in % of the re-timed share."""
    return 100 * abs(race_pct - blocks_pct) / blocks_pct


@dataclass(frozen=True)
class Retimed:
    """The key shares beside an outside re-timing of them (`retimed`): the table, and the rows more than RETIME_AGREE
    apart."""

    table: Table
    apart: tuple[str, ...]  # "int8_wgmma_ws at 4,096 (3.0 points, 3.1 %)"
    agree: float
    gpu: str
    how: str  # "after 1.5 s untimed, 5 runs of 2 s a side, each after 0.5 s untimed"
    where: str  # "H100", or "H100 (ozaki: the H200)" where some rows are another GPU's


def retimed(gpu: str | None = None) -> Retimed:
    """Each key share's race (CUDA events around each turn) beside benchmarks/retime.py's blocks
    (2 s of back-to-back launches under one pair of events) from records/<gpu>/retime.json: the replay GPU's where it
    has them, else the default replay GPU's. Two harnesses that agree confirm the number; where they do not, the
    page says by how much."""
    from .. import records

    rows, name = records.read_kind_or_default(records.RETIME, gpu, "benchmarks/retime.py")
    lacking = [(k, s) for k, s in catalog.KEY_SHARES if not any((r["kernel"], r["m"]) == (k, s) for r in rows)]
    for other in ([] if gpu else records.fallbacks()):  # a key share this GPU has no race of: whose race the pages read
        rows += [r for r in records.read_kind(records.RETIME, other) if (r["kernel"], r["m"]) in lacking
                 and records.lookup_or_none(r["kernel"], r["params"], r["m"], r["n"], r["k"], gpu=name) is None]
        lacking = [c for c in lacking if not any((r["kernel"], r["m"]) == c for r in rows)]
    found = [(x, r) for r in rows if (x := records.lookup_or_none(r["kernel"], r["params"], r["m"], r["n"], r["k"],
                                                                  gpu=r["gpu"])) is not None]
    races, cells, apart = [x for x, _ in found], [], []
    for x, r in found:
        pairs = r.get("pairs_pct") or [r["pct_blocks"]]
        gap, off = x.pct_cublas - r["pct_blocks"], retime_gap_pct(x.pct_cublas, r["pct_blocks"])
        if off > RETIME_AGREE:
            apart.append(f"{x.kernel} at {x.m:,} ({abs(gap):.1f} points, {off:.1f} %)")
        spread = x.pct_range
        cells.append((kernel_label(x, races), f"{x.m:,}", f"{x.pct_cublas:.1f}% ({spread[0]:.1f}–{spread[1]:.1f})"
                      if spread else f"{x.pct_cublas:.1f}%",
                      f"{r['pct_blocks']:.1f}% ({min(pairs):.1f}–{max(pairs):.1f})", f"{gap:+.1f} ({off:.1f} %)"))
    table = Table(("kernel", "size", "race (rounds)", "re-timed (pairs of runs)",
                   "points apart (% of the re-timed share)"), tuple(cells),
                  f"% of the cuBLAS each kernel replaces; race: the record the pages quote; re-timed: "
                  f"benchmarks/retime.py, {date_span(r['recorded_at'][:10] for r in rows)}; " + provenance(races))
    first = rows[0]
    how = (f"after {first['warm_s']:g} s untimed, {first['blocks'] // 2} runs of {first['block_s']:g} s a side, each "
           f"after {first['lead_s']:g} s untimed")
    others = sorted({x.gpu for x in races} - {name})
    where = short_gpu(name)
    for g in others:  # key shares read from another GPU's records: said with the GPU they are the verdict on
        kernels = sorted({x.kernel for x in races if x.gpu == g})
        where += f" ({' and '.join(kernels)}: the {short_gpu(g)})"
    return Retimed(table, tuple(apart), RETIME_AGREE, name, how, where)


def kernels_table() -> Table:
    """Every kernel of the catalog: the chapter that introduces it, what it changes and its source file."""
    from .. import catalog

    return Table(("kernel", "chapter", "what it changes", "source"),
                 tuple((s.name, s.chapter[2:].split("_")[0].lstrip("0") or "0", s.notes,
                        s.source.removeprefix("kernels/")) for s in catalog.KERNELS.values()),
                 "source: the file in kernels/", wrap=(2,))


def gpus_table(gpus: Sequence[str]) -> Table:
    """What each recorded GPU is: SMs, clock, peak, measured DRAM bandwidth and L2, from its device record."""
    from .. import records

    rows = []
    for c in (records.read_kind("device", g)[0] for g in gpus):
        rows.append((c["gpu"], str(c["sms"]), f"{c['clock_mhz']:.0f}", f"{c['peak_gflops'] / 1e3:.1f}",
                     f"{c['dram_gbs']:,.0f}", f"{c['l2_bytes'] / 2**20:.0f}", c["recorded_at"][:10]))
    return Table(("GPU", "SMs", "boost clock (MHz)", "FP32 peak (TFLOP/s)", "DRAM copy (GB/s)", "L2 (MiB)", "recorded"),
                 tuple(rows), "DRAM copy: bandwidth measured by a device-to-device copy", wrap=(0,))


def banner(page: str = "") -> Banner:
    """Live: the GPU measuring now and, for a book page, what it measures now, what it reads back from the records and
    about how long it takes (`liverun.page`). Replay: why, whose records and their dates, and how to measure instead."""
    from .. import liverun, records
    from . import warmup

    plan = liverun.page(check_page(page)) if page else ""
    if plan:  # the page's kernels compile in the background while its first cells run
        warmup.compile_all(liverun.to_compile(), on_done=liverun.compiled_in_background)
    if device.live():
        gpu = device.gpu()
        return Banner(f"Live: measuring on {gpu.name} ({gpu.sms} SMs, FP32 peak {gpu.peak_gflops / 1e3:.1f} "
                      f"TFLOP/s at {gpu.clock_mhz:.0f} MHz). " + (plan or "Every number below is measured now."))
    moved = _follow_the_page(page)
    mine, shown = device.reader_gpu(), device.replay_gpu()
    dates = [x.date for x in records.measurements()]
    when = f", {date_span(dates)}" if dates else ""
    text = f"Replay ({replay_reason()}): every number below was recorded on {shown}{when}" + (
        ", the span of that GPU's records; each chart and table gives the dates of its own data, within it."
        if len(dates) > 1 else ".")
    text += " A chart or table that names another GPU shows that GPU's records." + _recorded_elsewhere(page, shown)
    if moved:
        own = ", ".join(k.name for k in _own_kernels(page))
        text += (f" {moved} has no records of this page's own kernel ({own}, its current build), so the page replays "
                 f"the {shown}'s throughout, other kernels' numbers too: they differ a little from those other pages "
                 f"give for the {moved}.")
    elif os.environ.get(device.GPU_ENV):
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


def _own_kernels(page: str) -> list[catalog.KernelSpec]:
    """The kernels a page introduces (none for "")."""
    return [s for s in catalog.KERNELS.values() if page and s.chapter == page]


def _follow_the_page(page: str) -> str:
    """Where the replayed GPU has no records of any kernel the page introduces (their current build measured on
    another GPU alone), the page replays the first GPU that has them all, so that its numbers are one GPU's (its
    kernel process's GEMM_LAB_GPU, set here); returns the GPU it left, or ""."""
    from .. import records

    own = [s.name for s in _own_kernels(page)]
    if device.live() or os.environ.get(device.GPU_ENV) or not own or any(map(records.measurements, own)):
        return ""
    found = next((g for g in records.fallbacks() if all(records.measurements(k, g) for k in own)), None)
    if found is None:
        return ""
    left = device.replay_gpu()
    os.environ[device.GPU_ENV] = found
    return left


def _recorded_elsewhere(page: str, shown: str) -> str:
    """The banner's sentence on the page's kernels that `shown` has no records of and another GPU has (a kernel whose
    current build only that GPU has measured): whose rows the page reads instead, and when they were recorded."""
    from .. import records

    out = ""
    for spec in (s for s in _own_kernels(page) if not records.measurements(s.name)):
        for gpu in records.fallbacks():
            dates = [x.date for x in records.measurements(spec.name, gpu)]
            if dates:
                out += (f" Except the {spec.name} kernel's: {shown} has no records of it, so they are {gpu}'s, "
                        f"recorded {date_span(dates)}.")
                break
    return out


def gpu_comparison(kernels: Sequence[str], sizes: Sequence[int], gpus: Sequence[str] | None = None) -> Table:
    """Recorded GFLOP/s and % of cuBLAS (same run) of each kernel's default tile on several GPUs."""
    from .. import catalog, records

    gpus = list(gpus or records.recorded_gpus())
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
                 "recorded: " + "; ".join(sorted(dates))
                 + ". Each % is against cuBLAS SGEMM timed in the same run on that GPU.")


@dataclass(frozen=True)
class BudgetView:
    """A speed-of-light budget (`model.speed_of_light`) beside the measured result: one line per ceiling taught so far,
    each with the chapter that teaches it, the lowest in bold, bars to scale up to the peak (longer ceilings cannot
    bind and are cut, marked »).

    The rule every page follows: the lowest row is the prediction where the model counts the kernel's cost right; a
    measured speed above a row means that row overcounts, and the page says why."""

    budget: model.Budget
    measured: Measurement

    def _lines(self) -> list[tuple[str, float | None, str]]:
        from ..models.model import ROW_CHAPTERS, chapter_label

        b, x = self.budget, self.measured
        share = x.gflops / 1e3 / b.bound.tflops
        beyond = "; above it: that row overcounts this kernel's cost (the text says why)" if share > 1.005 else ""
        return [*((c.level + (f" (ch. {chapter_label(ROW_CHAPTERS[c.level])})" if c.level in ROW_CHAPTERS else ""),
                   c.tflops, c.how) for c in b.ceilings),
                ("measured", x.gflops / 1e3, f"{share:.0%} of the {b.bound.level} ceiling{beyond}; " + provenance([x]))]

    def caption(self) -> str:
        from ..models.model import ROW_CHAPTERS, chapter_key, chapter_label

        b = self.budget
        m, n, k = b.shape
        later = ", ".join(f"{level} (chapter {chapter_label(ROW_CHAPTERS[level])})"
                          for level in sorted(b.hidden, key=lambda level: chapter_key(ROW_CHAPTERS[level])))
        return (f"Speed of light of {b.kernel} ({params_text(b.params)}) at {shape_text(m, n, k)}, TFLOP/s, each "
                f"ceiling with the chapter that teaches it. The lowest, {b.bound.level}, is the prediction where the "
                "model counts right; a measurement above a row means that row overcounts. "
                + (f"Rows that later chapters add: {later}. " if later else "")
                + f"Ceilings from the {b.gpu} device record and the offline SASS.")

    def __str__(self) -> str:
        rows = [(level, "-" if t is None else f"{t:,.1f}", how) for level, t, how in self._lines()]
        width = max(len(r[0]) for r in rows)
        return "\n".join([self.caption()] + [f"{a:<{width}}  {t:>8}  {how}" for a, t, how in rows])

    def _repr_html_(self) -> str:
        top = self.budget.ceilings[0].tflops  # the peak: FFMA or tensor
        bound = self.budget.bound.level
        cells = []
        for (level, t, how), c in zip(self._lines(), [*self.budget.ceilings, None]):
            weight = "font-weight:bold;" if c is None or c.level == bound else ""
            colour = "#c33" if c is None else "#36c" if c.level == bound else "#9ab"
            bar = "" if t is None else (
                f"<div style='background:{colour};height:0.8em;width:{min(t / top, 1) * 100:.1f}%'></div>"
                + ("<span style='font-size:0.8em'>»</span>" if t > 1.001 * top else ""))
            name, _, taught = level.partition(" (")
            label = html.escape(name) + (f" <span style='font-weight:normal;color:#777;font-size:0.85em'>"
                                         f"({html.escape(taught)}</span>" if taught else "")
            cells.append(f"<tr style='{weight}'><td style='padding:0.1em 0.5em;white-space:nowrap'>"
                         f"{label}</td><td style='padding:0.1em 0.5em;text-align:right'>"
                         f"{'-' if t is None else f'{t:,.1f}'}</td><td style='width:30%;padding:0.1em 0.5em'>"
                         f"<div style='display:flex;align-items:center;gap:2px'>{bar}</div></td>"
                         "<td style='padding:0.1em 0.5em;"
                         f"font-size:0.9em;{'' if weight else 'color:#555'}'>{html.escape(how)}</td></tr>")
        return (f"<div style='overflow-x:auto'><table style='font-size:0.85em;line-height:1.35;margin:0;width:100%'>"
                f"<caption style='caption-side:bottom;text-align:left;font-size:0.92em'>{html.escape(self.caption())}"
                f"</caption><thead><tr><th style='text-align:left'>ceiling</th><th style='text-align:right'>TFLOP/s"
                f"</th><th></th><th style='text-align:left'>from</th></tr></thead><tbody>{''.join(cells)}</tbody>"
                "</table></div>")


def budget(kernel: str, params: dict[str, int] | None = None, size: int = 4096, *, ceilings: dict | None = None,
           measured: Measurement | None = None, l2_gbs: float | None = None, upto: str | None = None) -> BudgetView:
    """A kernel instance's speed-of-light budget at M = N = K = `size`, with its result beside it: the one call a
    chapter makes to show where the ceiling is and how close the kernel came. `ceilings` defaults to
    `hardware.ceilings()` (pass the page's own to save measuring them again live), `measured` to `timing.bench`;
    `l2_gbs` (the L2 ceiling, see `model.speed_of_light`) to the L2 copy bandwidth the memory probes recorded on this
    GPU, where they did. `upto` is the book page whose reader sees it: only the rows taught by then show
    (`model.ROW_CHAPTERS`); by default the page that introduces the kernel, or every row ("all").

        gl.budget("warp_tiling")                       # the default tile at 4096
        gl.budget("smem_tiled", {"BK": 8}, 2048, ceilings=ceil)
        gl.budget("prefetch", upto="ch07_warp_tiling")  # chapter 6's kernel, as chapter 7 shows it
    """
    from .. import catalog, timing
    from ..models import model

    spec = catalog.get(kernel)
    if isinstance(params, (int, tuple)):
        raise TypeError(f"budget({kernel!r}, {params!r}): the second argument is the tile parameters, a dict; the size "
                        f"comes third, or as size={params!r}")
    p = spec.full_params(params)
    shape = catalog.shape_of(size)
    if measured is not None and (measured.kernel, (measured.m, measured.n, measured.k)) != (spec.name, shape):
        raise ValueError(f"measured is {measured.kernel} at {measured.m}x{measured.n}x{measured.k}, not the budget's "
                         f"{spec.name} at {'x'.join(map(str, shape))}: pass the measurement of this kernel and size")
    if l2_gbs is not None and not l2_gbs > 0:
        raise ValueError(f"l2_gbs={l2_gbs!r}: the L2 ceiling's bandwidth in GB/s must be positive "
                         "(None: the recorded one)")
    if spec.precision == "ozaki":
        raise ValueError("the Ozaki scheme is a pipeline of some twenty kernels, which this one-kernel budget does not "
                         "model: chapter 10 gives its speed of light (cuBLAS INT8's rate over the number of moduli)")
    measured = measured or timing.bench(spec, shape, p)
    ceilings = ceilings or _ceilings_of(measured.gpu)
    if ceilings.get("gpu", measured.gpu) != measured.gpu:
        raise ValueError(f"the ceilings are {ceilings['gpu']}'s and the measurement {measured.gpu}'s: pass one GPU's")
    b = model.speed_of_light(spec, p, shape, ceilings, l2_gbs or _recorded_l2_gbs())
    page = upto if upto in (None, "all") else check_page(upto)
    page = page or spec.chapter or "all"
    return BudgetView(b if page == "all" else b.upto(page), measured)


def _ceilings_of(gpu: str) -> dict:
    """The ceilings beside a measurement: its own GPU's (a build that one GPU alone recorded replays that GPU's
    measurement, so the replayed GPU's ceilings would not be its own)."""
    from ..models import hardware
    from ..records import read_kind

    if device.live() or gpu == device.replay_gpu():
        return hardware.ceilings()
    rows = read_kind("device", gpu)
    if not rows:
        raise LookupError(f"no recorded device ceilings for {gpu}, whose measurement this budget shows")
    return rows[0]


def _recorded_l2_gbs() -> float | None:
    """The L2 copy bandwidth in GB/s that the memory probes recorded for the GPU whose records replay (or the live
    one), or None before they ran there."""
    from ..models.memory import MemoryRecord
    from ..records import read_kind

    rows = read_kind("memory", device.gpu().name if device.live() else None)
    return MemoryRecord.from_row(rows[0]).bandwidth_of("L2")["gbs"] if rows else None
