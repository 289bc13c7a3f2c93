"""Tables of the precision wing's numbers, as chapter 10 and the scoreboard show them: kernel 15 beside cuBLAS INT8,
the Ozaki scheme's speed of light, its stage times, its choices of moduli and its sustained races; and, for chapter 9,
what TF32's dropped bits cost kernel 14 in joules. The precision wing measures; this module presents.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import catalog, records, timing, turns
from ..precision import emulation, int8, ozaki
from .tables import Table, clock_and_power, gflop_per_joule, long_turns, provenance, shape_text


def speed_of_light_table(sizes: Sequence[int], moduli: Sequence[int]) -> Table:
    """The speed of light of each number of moduli at each size, as a table."""
    cells = {(s, m): emulation.speed_of_light(s, m) for s in sizes for m in moduli}
    return Table(("moduli", *(f"{s}³: {what}" for s in sizes for what in ("INT8 ms", "TFLOP/s", "× SGEMM"))),
                 tuple((str(m), *(v for s in sizes for v in (f"{cells[s, m].products_ms:.2f}",
                                                              f"{cells[s, m].tflops:,.0f}",
                                                              f"{cells[s, m].times_sgemm:.1f}")))
                       for m in moduli),
                 "INT8 ms: that many INT8 products at the rate of cuBLAS's INT8 GEMM; TFLOP/s: FP32 work (2MNK) per "
                 "second if nothing else took time; × SGEMM: that against cuBLAS SGEMM; "
                 + provenance([*(int8.bench(s) for s in sizes), *(timing.cublas(s) for s in sizes)]))


def stage_table(size: int, params: dict[str, int] | None = None) -> Table:
    """Each stage of the pipeline at M = N = K = `size`: its time (`emulation.stage_ms`) and the rate that explains it,
    the least bytes it must move (`ozaki.traffic`) per second against the DRAM copy bandwidth of the device record for
    the memory-bound stages, and INT8 operations per second for the products."""
    from ..models.hardware import ceilings

    inst = catalog.instance("ozaki", params, (size,) * 3)
    moduli, ms = emulation.chosen_moduli(inst), emulation.stage_ms(size, inst.params)
    traffic, ceil = ozaki.traffic(moduli, size, size, size), ceilings()
    total = sum(ms.values())

    def rate(stage: str) -> str:
        seconds = ms[stage] / 1e3
        if stage == "products":
            return f"{moduli * 2 * size**3 / seconds / 1e12:,.0f} TOP/s of INT8 products"
        gbs = sum(traffic[stage]) / seconds / 1e9
        return f"{gbs / 1e3:.2f} TB/s, {gbs / ceil['dram_gbs']:.0%} of DRAM's"

    return Table(("stage", "ms", "share", "least bytes", "rate"),
                 tuple((stage, f"{ms[stage]:.3f}", f"{ms[stage] / total:.0%}", f"{sum(traffic[stage]) / 1e9:.2f} GB",
                        rate(stage)) for stage in ozaki.STAGES),
                 f"M = N = K = {size}, {moduli} moduli: each stage timed alone (median of its launches); least bytes: "
                 f"read + written (ozaki.traffic); DRAM's: the device record's copy bandwidth, "
                 f"{ceil['dram_gbs'] / 1e3:.2f} TB/s; stages {emulation.stage_source(inst.params)}", wrap=(4,))


def choices(cases_: Sequence[tuple[tuple[int, int, int], float | None, str]] | None = None) -> Table:
    """What the default (MODULI = 0) decided on each recorded set of inputs, from its report (`Errors.details`): the
    moduli it ran (or its fallback), its estimate of its own median error over SGEMM's on the 64 x 32 sample, and the
    measured ratio over all of C (its median element-wise error over cuBLAS SGEMM's, the same inputs, against float64).
    An estimate near the measurement is what makes the choice trustworthy: it is all the pipeline sees."""
    rows, seen = [], []
    for shape, phi, family in cases_ or emulation.cases():
        found = emulation.errors(shape, phi, family=family)
        seen += found
        auto = next(e for e in found if e.method == "ozaki" and e.params.get("MODULI") == 0)
        sgemm = next(e for e in found if e.method == "cublas")
        d = auto.details
        ran = d["moduli"]
        judged = str(ran or ozaki.CANDIDATES[-1])  # the number it ran, or the most it weighed
        estimated = d["median"][judged] / d["sgemm_median"] if d["sgemm_median"] else 0.0
        rows.append((f"{shape[0]}×{shape[1]}×{shape[2]}", emulation.case_name(phi, family),
                     str(ran) if ran else "–", f"{estimated:.2f}" + ("" if ran else f" (with {judged})"),
                     f"{auto.median_rel_err / sgemm.median_rel_err:.2f}", f"{d['largest'][judged]:.2f}",
                     str(d["equilibrated"]), "yes" if d["fallback"] else "no"))
    # the estimate beside the measurement it stands for, then the sample's largest error, which the rule also weighs
    return Table(("M×N×K", "inputs", "moduli chosen", "estimated / SGEMM", "measured / SGEMM", "largest / SGEMM",
                  "columns shifted", "fell back"), tuple(rows),
                 "the default (MODULI = 0) on each recorded set of inputs: its report (ozaki.Estimate); estimated: the "
                 "median element-wise error on its 64 × 32 sample over SGEMM's modelled one; measured: its median "
                 "element-wise error over all of C over cuBLAS SGEMM's, both against float64 (1.00 where it fell back "
                 "to cuBLAS SGEMM: it ran SGEMM); largest: its largest error on the sample over SGEMM's (the default "
                 "runs the fewest moduli with the estimated and the largest at most 1, else falls back); columns "
                 "shifted: by the equilibration; " + emulation.dates(seen))


def hidden_table() -> Table:
    """The families built to hide from the estimate's sample (`emulation.HIDDEN`): what the default ran (and what the
    sample alone had chosen), and the worst row's and column's errors beside SGEMM's, normwise and median too."""
    gpu, rows, seen = emulation.hidden_gpu(), [], []
    for shape, phi, family in emulation.hidden_cases():
        found = emulation.errors(shape, phi, gpu, family)
        seen += found
        auto = next(e for e in found if e.method == "ozaki" and e.params.get("MODULI") == 0)
        sgemm = next(e for e in found if e.method == "cublas")
        d = auto.details
        ran = f"{d['moduli']}" if d["moduli"] else f"fell back ({d['fallback']})"
        rows.append((family, ran + (f", from {d['raised_from']}" if d.get("raised_from") else ""),
                     *(f"{x:.1e}" for x in (auto.max_rel_err, auto.median_rel_err, auto.worst_row_rel_err,
                                           auto.worst_col_rel_err, sgemm.worst_row_rel_err)),
                     f"{worst_over_sgemm(auto, sgemm):.2f}"))
    return Table(("inputs", "moduli", "max / max", "median", "worst row", "worst column", "SGEMM's worst row",
                  "worst line / SGEMM's"), tuple(rows),
                 f"the default (MODULI = 0) at {shape_text(*emulation.PHI_SHAPE)} on inputs built to hide from "
                 "its 64 × 32 sample (emulation.shape_family); moduli: the number run, and the estimate's choice the "
                 "check raised; errors against float64: the relative error (max / max), the median element-wise "
                 "error; a row's error is max |C − C64| over the row's max |C64| "
                 "(a column's alike); the last column: the worse of row and column over SGEMM's same line; "
                 + emulation.dates(seen))


def worst_over_sgemm(auto: Any, sgemm: Any) -> float:
    """The default's worst row or column error over SGEMM's worst row or column (the worse ratio of the two)."""
    return max(auto.worst_row_rel_err / sgemm.worst_row_rel_err, auto.worst_col_rel_err / sgemm.worst_col_rel_err)


def race_table(ms: Sequence[Any]) -> Table:
    """Each sustained race beside cuBLAS SGEMM: the share, and for both sides the median SM clock and mean power
    (NVML's energy counter over the timed turns' seconds) and GFLOP per joule, which decide who wins under the power
    cap."""

    def moduli(x: Any) -> str:
        pinned, ran = x.params["MODULI"], x.details.get("moduli")
        return str(pinned) if pinned else f"auto ({ran})" if ran else "auto (fell back)"

    return Table(("size", "moduli", "% of SGEMM", "clock, power", "GFLOP/J", "SGEMM clock, power", "SGEMM GFLOP/J"),
                 tuple((shape_text(x.m, x.n, x.k), moduli(x), f"{x.pct_cublas:.0f}%", clock_and_power(x.telemetry),
                        gflop_per_joule(x), clock_and_power(x.cublas_telemetry), gflop_per_joule(x, cublas=True))
                       for x in ms),
                 f"sustained races (each side settles {turns.SUSTAINED.settle_ms / 1e3:g} s, then "
                 f"{turns.SUSTAINED.rounds} mirrored rounds of turns of {turns.SUSTAINED.turn_ms:g} ms, or "
                 f"{turns.MAX_TURN_LAUNCHES:,} launches where those take less; the defaults at "
                 f"{' and '.join(str(s) for k, s in catalog.KEY_SHARES if k == 'ozaki')} take turns of "
                 f"{long_turns(ms)}; the incoming side first runs "
                 f"{turns.SUSTAINED.turn_settle_ms:g} ms untimed); % of cuBLAS SGEMM "
                 "timed in the same race: the median of the rounds; power: the joules of NVML's energy counter over "
                 "the timed turns' seconds; GFLOP/J: 2MNK over the joules of one launch; " + provenance(ms),
                 wrap=(3, 5))


def int8_table(sizes: Sequence[int]) -> Table:
    """Kernel 15 beside cuBLAS's INT8 GEMM at each M = N = K (`int8.bench`): TOP/s, the share (median of the rounds,
    their range) and each side's clock and power."""
    ms = [int8.bench(s) for s in sizes]

    def share(x: records.Measurement) -> str:
        return f"{x.pct_cublas:.1f}%" + (f" ({x.pct_range[0]:.0f}–{x.pct_range[1]:.0f})" if x.pct_range else "")

    return Table(("M = N = K", "kernel 15 TOP/s", "cuBLAS INT8 TOP/s", "% of cuBLAS (rounds)", "kernel: clock, power",
                  "cuBLAS: clock, power"),
                 tuple((f"{x.m}³", f"{x.gflops / 1e3:,.0f}", f"{x.cublas_gflops / 1e3:,.0f}", share(x),
                        clock_and_power(x.telemetry), clock_and_power(x.cublas_telemetry)) for x in ms),
                 "int8 operands, int32 sums, both checked exact; cuBLAS through cublasGemmEx in the same process, in "
                 "turns; TOP/s: 2MNK integer operations per second; " + provenance(ms))


TMA_ROUNDS = "fp32, TMA rounds"  # toggling.json's inputs where TMA rounded FP32 inputs to TF32 as it copied them


def toggling_races(gpu: str | None = None) -> list[records.Measurement]:
    """benchmarks/toggling.py's races of a GPU (default: the replay GPU), each with its inputs in `details`."""
    path = records.gpu_dir(gpu) / f"{records.TOGGLING}.json"
    return [records.Measurement.from_row(r, str(path)) for r in records.read_kind(records.TOGGLING, gpu)]


def rounded_copies(gpu: str | None = None) -> dict[int, records.Measurement]:
    """Kernel 14's pair along N launched with copies that round to TF32 (`TMA_ROUNDS`), by size: the races of
    benchmarks/toggling.py on a GPU (default: the replay GPU)."""
    return {x.m: x for x in toggling_races(gpu) if x.params["CLUSTER"] < 0 and x.details["inputs"] == TMA_ROUNDS}


def rounded_copies_headline(gpu: str | None = None) -> str:
    """Those races in a phrase for the intro and the scoreboard: each size's share of cuBLAS TF32 and both sides'
    GFLOP per joule ("" where none is recorded)."""
    races = rounded_copies(gpu)
    return "; ".join(f"{x.pct_cublas:.1f} % of cuBLAS TF32 at {m:,}, {x.gflop_per_joule():,.0f} against "
                     f"{x.gflop_per_joule(cublas=True):,.0f} GFLOP/J" for m, x in sorted(races.items()))


def toggling_table(ms: Sequence[Any]) -> Table:
    """benchmarks/toggling.py's races: kernel 14 beside cuBLAS TF32 on FP32 inputs and on inputs whose A or B was
    rounded to TF32 first, with each side's clock, power and GFLOP per joule. The same products, the same bytes: what
    changes is how many bits toggle on the way to the tensor cores, which drop the 13 low ones anyway."""
    def pair(x: Any) -> str:
        return "pair along N" if x.params["CLUSTER"] < 0 else "default"

    return Table(("kernel 14", "size", "inputs", "% of cuBLAS TF32 (rounds)", "clock, power", "GFLOP/J",
                  "cuBLAS clock, power", "cuBLAS GFLOP/J"),
                 tuple((pair(x), shape_text(x.m, x.n, x.k), x.details["inputs"],
                        "{:.1f}% ({:.1f}–{:.1f})".format(x.pct_cublas, *x.pct_range), clock_and_power(x.telemetry),
                        gflop_per_joule(x), clock_and_power(x.cublas_telemetry), gflop_per_joule(x, cublas=True))
                       for x in sorted(ms, key=lambda x: (x.params["CLUSTER"] < 0, x.m, x.details["inputs"] != "fp32",
                                                          x.details["inputs"]))),
                 "benchmarks/toggling.py: each row one race, each side settled first; A or B as TF32: rounded to the "
                 "nearest TF32 value before the race (its 13 low mantissa bits zero), the other operand as drawn; "
                 f"{TMA_ROUNDS}: FP32 inputs, which TMA rounds to TF32 (nearest, ties to even) as it copies them into "
                 "shared memory, as cuBLAS's copies do; "
                 "power: NVML's energy counter over the timed turns' seconds; GFLOP/J: 2MNK over one launch's joules; "
                 + provenance(ms), wrap=(4, 6))
