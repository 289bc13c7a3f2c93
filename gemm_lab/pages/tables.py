"""Measurements as tables: plain text for the terminal, HTML (with its provenance) for the book."""
from __future__ import annotations

import html
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Sequence

from ..records import CUBLAS_KERNELS, Measurement
from ..report import (Banner, Markdown, Table, counters_provenance, gflop_per_joule, is_short, params_text, provenance,
                      replay_reason, shape_text)

if TYPE_CHECKING:
    from ..models import model


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
    tensor pipe, the share of issue slots used, the bytes L2 sent to the SMs and the SM clock (not pinned). The
    counters that explain a tensor-core kernel's result; a case not recorded yet says so and how to record it."""
    from ..models import hardware

    found, rows = [], []
    for kernel, params in cases:
        try:
            row = hardware.counters(kernel, (size, size, size), params)
        except LookupError:
            rows.append((kernel, "not recorded yet: gemm-lab record --only counters", "", "", ""))
            continue
        found.append(row)
        m = row["metrics"]
        rows.append((kernel, f"{m[hardware.TENSOR_METRICS[0]]:.0f}%",
                     f"{m['smsp__issue_active.avg.pct_of_peak_sustained_active']:.0f}%",
                     f"{m['lts__t_sectors_srcunit_tex_op_read.sum'] * 32 / 1e9:.2f}",
                     f"{m['sm__cycles_elapsed.avg.per_second'] / 1e6:,.0f}"))
    return Table(("kernel", "tensor pipe busy", "issue slots used", "L2 → SM, GB", "SM clock, MHz"), tuple(rows),
                 f"one launch each at {size}³, clock not pinned; "
                 + (counters_provenance(found) if found else "no counters recorded for these cases yet"),
                 wrap=(1,) if len(found) < len(rows) else ())


def baseline_name(precision: str) -> str:
    """The cuBLAS a kernel of this precision is timed beside (yardstick.BASELINE): TF32 races TF32, the rest SGEMM."""
    from ..timing import BASELINE

    return "cuBLAS TF32" if BASELINE[precision] == "tf32" else "cuBLAS SGEMM"


def _baselines(ms: Sequence[Measurement]) -> str:
    names = {baseline_name(x.precision) for x in ms}
    if len(names) == 1:
        return names.pop()
    return "cuBLAS in each kernel's math (SGEMM for FP32, 3xTF32 and Ozaki kernels, TF32 tensor cores for TF32 ones)"


def measurements_table(ms: Sequence[Measurement], *, parameters: bool = True) -> Table:
    """One row per measurement: GFLOP/s beside cuBLAS of the same run, and vs the FP32 peak (FP32 rows only: the
    tensor cores have their own peak). What every row shares (the shape; the kernel and the parameters its rows
    share) goes to the caption, leaving the columns to what differs, so parameter cells stay short. `parameters=False`
    leaves the parameters out (rows of several kernels at their defaults, shown elsewhere), for a narrower table."""
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
                    (x.kernel, params_text(x.params))[:len(instance_columns)] if instance_columns else ())
        return (*instance, *((shape_text(x.m, x.n, x.k),) if show_shape else ()),
                f"{x.gflops:,.0f}", f"{x.cublas_gflops:,.0f}", f"{x.pct_cublas:.1f}%" + _rounds(x),
                f"{x.pct_peak:.1f}%" if x.precision == "fp32" else "-", f"{x.max_rel_err:.1e}")

    shared += [] if show_shape else [f"M×N×K = {shapes.pop()}"]
    return Table((*instance_columns, *(("M×N×K",) if show_shape else ()),
                  "GFLOP/s", "cuBLAS", "% cuBLAS", "% FP32 peak", "error"), tuple(map(row, ms)),
                 "".join(f"{s}; " for s in shared) + f"cuBLAS: GFLOP/s of {_baselines(ms)}, timed in the same run; "
                 + ("% FP32 peak: none for tensor-core rows, whose peak is their own (gl.budget); "
                    if any(x.precision != "fp32" for x in ms) else "")
                 + ("% cuBLAS of a tensor-core row: the median of its rounds of turns, in brackets the lowest and "
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
    return Table(("kernel", *(f"{s}³" for s in sizes)),
                 tuple((k, *(cell.get((k, s), "-") for s in sizes)) for k in kernels),
                 f"GFLOP/s at M = N = K and, in brackets, % of {_baselines(ms)} timed in the same run"
                 + ("; for tensor-core kernels the median of the rounds of turns, then the rounds' range" if ranged else "")
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
    return text + (f" at {mine:,.0f} GFLOP/J, cuBLAS {theirs:,.0f}" if mine and theirs else "")


def speed_and_power(ms: Sequence[Measurement]) -> Table:
    """Each measurement's speed beside cuBLAS in its own math, the range of its rounds' shares, the median SM clock
    NVML read while each side's timed launches ran, and each side's work per energy (NVML's energy counter): for
    tensor-core kernels, whose clock follows the power cap, the numbers that explain a share."""
    def name(x: Measurement) -> str:
        return ozaki_label(x.params["MODULI"], x.details.get("moduli")) if "MODULI" in x.params else x.kernel

    def share(x: Measurement) -> str:
        spread = x.pct_range
        return f"{x.pct_cublas:.0f}%" + (f" ({spread[0]:.0f}–{spread[1]:.0f})" if spread else "")

    def clock(t: dict[str, float]) -> str:
        return f"{t['sm_clock_mhz']:,.0f}" if "sm_clock_mhz" in t else "-"

    return Table(("size", "kernel", "TFLOP/s", "% of cuBLAS (rounds)", "MHz", "GFLOP/J", "cuBLAS MHz", "cuBLAS GFLOP/J"),
                 tuple((shape_text(x.m, x.n, x.k), name(x), f"{x.gflops / 1e3:,.1f}", share(x), clock(x.telemetry),
                        gflop_per_joule(x), clock(x.cublas_telemetry), gflop_per_joule(x, cublas=True)) for x in ms),
                 f"% of {_baselines(ms)}, timed in the same run, in turns: the median of the rounds' shares, their "
                 "range in brackets; MHz: NVML's median SM clock while each side ran; GFLOP/J: its work over the "
                 "joules NVML's energy counter gave its timed turns; " + provenance(ms))


RETIME_AGREE = 2.0  # points of cuBLAS's speed within which an outside re-timing confirms a record (issue 38)


@dataclass(frozen=True)
class Retimed:
    """The key shares beside an outside re-timing of them (`retimed`): the table, and the rows more than RETIME_AGREE
    apart."""

    table: Table
    apart: tuple[str, ...]  # "int8_wgmma_ws at 4,096 (3.0 points)"
    agree: float
    gpu: str
    how: str  # "after 1.5 s untimed, 5 runs of 2 s a side, each after 0.5 s untimed"


def retimed(gpu: str | None = None) -> Retimed:
    """Each key share's race (CUDA events around each turn of 1 s) beside benchmarks/retime.py's blocks
    (2 s of back-to-back launches under one pair of events) from records/<gpu>/retime.json: the replay GPU's where it
    has them, else the default replay GPU's. Two harnesses that agree confirm the number; where they do not, the
    page says by how much."""
    from .. import records

    rows, name = records.read_kind_or_default(records.RETIME, gpu, "benchmarks/retime.py")
    cells, apart, races = [], [], []
    for r in rows:
        x = records.lookup_or_none(r["kernel"], r["params"], r["m"], r["n"], r["k"], gpu=r["gpu"])
        if x is None:
            continue
        races.append(x)
        pairs = r.get("pairs_pct") or [r["pct_blocks"]]
        gap = x.pct_cublas - r["pct_blocks"]
        if abs(gap) > RETIME_AGREE:
            apart.append(f"{x.kernel} at {x.m:,} ({abs(gap):.1f} points)")
        spread = x.pct_range
        cells.append((x.kernel, f"{x.m:,}", f"{x.pct_cublas:.1f}% ({spread[0]:.1f}–{spread[1]:.1f})" if spread
                      else f"{x.pct_cublas:.1f}%", f"{r['pct_blocks']:.1f}% ({min(pairs):.1f}–{max(pairs):.1f})",
                      f"{gap:+.1f}"))
    table = Table(("kernel", "size", "race (rounds)", "re-timed (pairs of runs)", "points apart"), tuple(cells),
                  f"% of the cuBLAS each kernel replaces; race: the record the pages quote; re-timed: "
                  f"benchmarks/retime.py, {min(r['recorded_at'][:10] for r in rows)}; " + provenance(races))
    first = rows[0]
    how = (f"after {first['warm_s']:g} s untimed, {first['blocks'] // 2} runs of {first['block_s']:g} s a side, each "
           f"after {first['lead_s']:g} s untimed")
    return Retimed(table, tuple(apart), RETIME_AGREE, name, how)


def chapter_map(ms: Sequence[Measurement], cublas: Measurement) -> Markdown:
    """The book in one line per chapter: its title (a link) and what each kernel it adds reached in `ms`, against
    cuBLAS timed in the same run in the kernel's own math; chapter 0 measures cuBLAS itself (`cublas`).

    The lines use MyST's {doc} role, so the code cell showing them needs `markdown_format: myst` (myst-nb).
    """
    from .. import catalog

    shapes = {(x.m, x.n, x.k) for x in (*ms, cublas)}
    if len(shapes) != 1:
        raise ValueError(f"chapter_map compares one shape, got {sorted(shapes)}")
    m, n, k = shapes.pop()
    found = {x.kernel: x for x in ms}
    chapters: dict[str, list[Measurement]] = {}
    for name, spec in catalog.KERNELS.items():
        if name in found:
            chapters.setdefault(spec.chapter, []).append(found[name])
    lines = [f"* **{{doc}}`{catalog.MEASURING_CHAPTER}`**: cuBLAS SGEMM, {cublas.gflops / 1e3:,.1f} TFLOP/s, "
             f"{cublas.pct_peak:.0f}% of the FP32 peak."]
    for chapter, xs in sorted(chapters.items()):  # the book's order: ch08_..., ch08a_..., ch08b_...
        items = [f"`{x.kernel}` {x.gflops / 1e3:,.1f} TFLOP/s ({x.pct_cublas:.0f}%"
                 + (" of cuBLAS TF32" if baseline_name(x.precision) == "cuBLAS TF32" else "")
                 + ("; rounds {:.0f}–{:.0f}%".format(*x.pct_range) if x.precision != "fp32" and x.pct_range else "")
                 + ")" for x in xs]
        lines.append(f"* **{{doc}}`{chapter}`**: " + ", ".join(items) + ".")
    where = f"M = N = K = {m}" if m == n == k else f"M×N×K = {m}×{n}×{k}"
    return Markdown("\n".join(lines) + f"\n\nAll at {where}; in brackets, % of cuBLAS SGEMM (of cuBLAS TF32 where "
                    "marked) timed in the same run, for tensor-core kernels the median of the rounds of turns with "
                    f"their range; {provenance([*ms, cublas])}.")


def kernels_table() -> Table:
    """Every kernel of the catalog: the chapter that introduces it, what it changes and its source file."""
    from .. import catalog

    return Table(("kernel", "chapter", "what it changes", "source"),
                 tuple((s.name, s.chapter[2:].split("_")[0].lstrip("0") or "0", s.notes, s.source.removeprefix("kernels/"))
                       for s in catalog.KERNELS.values()),
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


def banner() -> Banner:
    """Live: the GPU measuring now. Replay: why, whose records and their dates, and how to measure instead."""
    from .. import device, records

    if device.live():
        gpu = device.gpu()
        return Banner(f"Live: measuring on {gpu.name} ({gpu.sms} SMs, FP32 peak {gpu.peak_gflops / 1e3:.1f} "
                      f"TFLOP/s at {gpu.clock_mhz:.0f} MHz). Every number below is measured now.")
    mine, shown = device.reader_gpu(), device.replay_gpu()
    dates = sorted({x.date for x in records.measurements()})
    when = f", {dates[0]}" + (f" to {dates[-1]}" if len(dates) > 1 else "") if dates else ""
    text = f"Replay ({replay_reason()}): every number below was recorded on {shown}{when}" + (
        ", the span of all the book's records; each chart and table gives the dates of its own data, within it."
        if len(dates) > 1 else ".")
    text += " A chart or table that names another GPU shows that GPU's records."
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
                 "recorded: " + "; ".join(sorted(dates)) + ". Each % is against cuBLAS SGEMM timed in the same run on that GPU.")


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
                         f"{'-' if t is None else f'{t:,.1f}'}</td><td style='width:30%;padding:0.1em 0.5em'><div style='display:"
                         f"flex;align-items:center;gap:2px'>{bar}</div></td><td style='padding:0.1em 0.5em;"
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
    from ..models import hardware, model

    spec = catalog.get(kernel)
    p = spec.full_params(params)
    b = model.speed_of_light(spec, p, size, ceilings or hardware.ceilings(), l2_gbs or _recorded_l2_gbs())
    page = upto or spec.chapter or "all"
    return BudgetView(b if page == "all" else b.upto(page), measured or timing.bench(spec, size, p))


def _recorded_l2_gbs() -> float | None:
    """The L2 copy bandwidth in GB/s that the memory probes recorded for the GPU whose records replay (or the live
    one), or None before they ran there."""
    from .. import device
    from ..records import MemoryRecord, read_kind

    rows = read_kind("memory", device.gpu().name if device.live() else None)
    return MemoryRecord.from_row(rows[0]).bandwidth_of("L2")["gbs"] if rows else None
