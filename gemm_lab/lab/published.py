"""Numbers published by the articles the book builds on, quoted as data with their source, and the
tables that set them beside our own measurements.
"""
from __future__ import annotations

from typing import NamedTuple

from .. import catalog, device, timing
from ..models import banks, model
from ..pages.tables import Table, params_text, provenance
from ..records import Measurement
from . import baselines, sweeps

SEED000 = "a Zhihu article on GEMM optimisation (part 2) measured on a V100 at M = N = K = 4096"

# (BM, BK, BN, TM, TN) in the article's column order -> (GFLOP/s on the V100, % of cuBLAS there).
SEED000_TABLE: dict[tuple[int, int, int, int, int], tuple[float, float]] = {
    (64, 16, 64, 4, 4): (13036.2, 86.0),
    (64, 32, 64, 4, 4): (11738.8, 77.5),
    (64, 4, 64, 8, 8): (13065.6, 86.2),
    (64, 8, 64, 8, 8): (13463.9, 88.9),
    (64, 16, 64, 8, 8): (12682.8, 83.7),
    (64, 32, 64, 8, 8): (8517.43, 56.2),
    (128, 16, 128, 8, 8): (13506.8, 89.1),
    (128, 8, 128, 8, 8): (14167.1, 93.5),
}
SEED000_CONFIGS = tuple(SEED000_TABLE)


def seed_table_cases(size: int = 4096) -> tuple[tuple[str, dict[str, int], int], ...]:
    """Seed 000's eight configurations, with and without prefetch, and in the cp.async pipeline (`plan` records
    them)."""
    cases = []
    for bm, bk, bn, tm, tn in SEED000_CONFIGS:
        tile = {"BM": bm, "BN": bn, "BK": bk, "TM": tm, "TN": tn}
        cases += [("prefetch", {**tile, "PREFETCH": p}, size) for p in (0, 1)]
        stages = catalog.legal_grid("multistage", {**{k: (v,) for k, v in tile.items()}, "STAGES": (2, 3)})
        cases += [("multistage", p, size) for p in stages]  # the stage counts whose buffers fit
    return tuple(cases)


def seed000_table(size: int = 4096) -> Table:
    """Seed 000's eight configurations: its V100 column beside ours (same run as cuBLAS each), with
    what explains the differences: registers, resident blocks per SM, and the share of FFMA peak
    that shared-memory wavefronts allow on the H100 (128 FP32 lanes per SM) and the V100 (64)."""
    cases = seed_table_cases(size)
    rows, ms = [], []
    for bm, bk, bn, tm, tn in SEED000_CONFIGS:
        tile = {"BM": bm, "BN": bn, "BK": bk, "TM": tm, "TN": tn}
        v100_gflops, v100_pct = SEED000_TABLE[(bm, bk, bn, tm, tn)]
        off, on = (timing.bench("prefetch", size, {**tile, "PREFETCH": p}) for p in (0, 1))
        staged = [timing.bench(k, size, p) for k, p, _ in cases if k == "multistage" and tile.items() <= p.items()]
        best_async = max(staged, key=lambda x: x.gflops)
        ms += [off, on, *staged]
        res = [model.resident("prefetch", x.params) for x in (off, on)]
        rows.append((
            f"{bm}, {bk}, {bn}, {tm}, {tn}", f"{v100_gflops:,.0f}", f"{v100_pct:.1f}%",
            f"{off.pct_cublas:.1f}%", f"{on.gflops:,.0f}", f"{on.pct_cublas:.1f}%",
            f"{best_async.pct_cublas:.1f}% ({best_async.params['STAGES']})",
            " / ".join(str(r["registers"]) for r in res), " / ".join(f"{r['blocks']} ({r['warps']})" for r in res),
            f"{banks.fma_ceiling('prefetch', tile, 128):.0%} / {banks.fma_ceiling('prefetch', tile, 64):.0%}",
        ))
    return Table(
        ("BM, BK, BN, TM, TN", "V100 GFLOP/s", "V100 % cuBLAS", "no prefetch", "prefetch GFLOP/s",
         "prefetch % cuBLAS", "cp.async (stages)", "registers (no / with prefetch)",
         "blocks (warps) per SM, no / with", "shared-memory ceiling H100 / V100"),
        tuple(rows),
        f"M = N = K = {size}. V100 columns: {SEED000} (quoted as data). Ours: {provenance(ms)}; % of cuBLAS "
        f"in the same run; cp.async: the better of 2 and 3 stages. Registers: {res[0]['origin']}.",
    )


SEED002 = "seed 002, the README of my_SGEMM (its GPU is not named), at M = N = K = 2048"
SEED002_CUBLAS = 2477.0  # GFLOP/s of cuBLAS in the same README

# One published step: the article's label, its idea in our words, its GFLOP/s, and the instance of ours that
# carries the same idea (kernel, and parameters or the size M = N = K at which its recorded sweep's fastest instance
# is taken), with why that one.
Step = tuple[str, str, "float | None", str, "dict[str, int] | int", str]

SEED002_STEPS: tuple[Step, ...] = (
    ("k1", "naive: one thread per output", 386, "naive", {}, "chapter 1's first kernel"),
    ("k2", "loop tiling: 32 x 32 tiles", 154, "smem_tiled", {}, "32 x 32 x 32 tiles staged in shared memory"),
    ("k3", "one register saved", 154, "smem_tiled", {}, "same instance: register allocation is the compiler's here"),
    ("k4", "thread index remapped: neighbouring threads, neighbouring addresses", 279, "coalesced", {},
     "chapter 1's coalesced mapping"),
    ("k5", "more outputs per thread", 830, "thread_tile_1d", {}, "8 outputs per thread in a column"),
    ("k6", "float4 loads", 930, "vectorized", {"BM": 32, "BN": 32, "BK": 16, "TM": 4, "TN": 4},
     "float4 fragments need 4 x 4 thread tiles in ours, so this is k7's idea too"),
    ("k7", "4 x 4 sub-tiles per thread", 2690, "vectorized", {"BM": 32, "BN": 32, "BK": 16, "TM": 4, "TN": 4},
     "4 x 4 per thread, 32 x 32 per block"),
    ("k8", "more outputs per block", 3280, "vectorized", {"BM": 64, "BN": 64, "BK": 16, "TM": 4, "TN": 4},
     "4 x 4 per thread, 64 x 64 per block (the README gives no block sizes)"),
    ("-", "loop unrolling by 4 (listed, not in the table)", None, "vectorized", {},
     "ours unroll the whole k loop of a tile in every tiled kernel; chapter 4's default tiles"),
)

SIBOEHM = "siboehm/SGEMM_CUDA's README, measured on an RTX A6000 at M = N = K = 4092"
SIBOEHM_SIZE = 4092
SIBOEHM_CUBLAS = 23249.6
SIBOEHM_STEPS: tuple[Step, ...] = (
    ("1", "naive", 309, "naive", {}, ""),
    ("2", "global-memory coalescing", 1986.5, "coalesced", {}, ""),
    ("3", "shared-memory caching", 2980.3, "smem_tiled", {}, ""),
    ("4", "1D block tiling", 8474.7, "thread_tile_1d", {}, ""),
    ("5", "2D block tiling", 15971.7, "thread_tile_2d", {}, ""),
    ("6", "vectorized memory access", 18237.3, "vectorized", {}, ""),
    ("7", "bank conflicts avoided (linearize)", 16213.4, "bank_conflicts", {"LAYOUT": 2},
     "ours: an XOR swizzle of the A tile, another fix of the same conflict"),
    ("8", "bank conflicts avoided (offset)", 16459.2, "bank_conflicts", {"LAYOUT": 1}, "ours: rows padded by 4"),
    ("9", "autotuning", 19721, "vectorized", 2048, "the fastest instance of chapter 4's sweep at 2048"),
    ("10", "warp tiling", 21779.3, "warp_tiling", {}, "chapter 7's default tiles"),
    ("11", "double buffering", 17278.3, "prefetch", {}, "chapter 6's default tiles"),
)

# its best configuration at 4096 (the article's 91 % is an average over sizes 1024-4096 with 64 x 64 tiles)
SEED000_CLAIM = (SEED000_TABLE[(128, 8, 128, 8, 8)][1], "prefetch",
                 {"BM": 128, "BN": 128, "BK": 8, "TM": 8, "TN": 8, "PREFETCH": 1})


def resolve(step: Step) -> tuple[str, dict[str, int]]:
    """The kernel and full parameters of a step's counterpart (a size: the sweep's fastest there, from the records)."""
    kernel, params = step[3], step[4]
    if isinstance(params, int):
        params = sweeps.best(kernel, params).params
    return kernel, catalog.get(kernel).full_params(params)


def _ours(ms: Measurement) -> str:
    return f"{ms.gflops:,.0f} ({ms.pct_cublas:.0f}%)"


def seed002_table(sizes: tuple[int, ...] = (2048, 4096)) -> Table:
    """Seed 002's eight steps beside the instance of ours nearest each, % of cuBLAS in the same run."""
    rows, ms, measured = [], [], {}
    for step in SEED002_STEPS:
        kernel, params = resolve(step)
        key = (kernel, tuple(params.items()))
        if key not in measured:  # k3 and k7 share their predecessor's instance: measured once
            measured[key] = [timing.bench(kernel, size, params) for size in sizes]
            ms += measured[key]
        found = measured[key]
        published = f"{step[2]:,.0f} ({100 * step[2] / SEED002_CUBLAS:.0f}%)" if step[2] else "-"
        rows.append((f"{step[0]}: {step[1]}", published, f"{kernel} ({params_text(params)})",
                     *(_ours(x) for x in found), step[5]))
    return Table(("step", "published", "ours nearest this step", *(f"ours at {s}" for s in sizes),
                  "why this instance"), tuple(rows),
                 f"GFLOP/s (% of cuBLAS SGEMM). Published: {SEED002} (cuBLAS {SEED002_CUBLAS:,.0f} GFLOP/s), quoted "
                 f"as data. Ours: {provenance(ms)}; cuBLAS timed in the same run.", wrap=(0, 2, 5))


def siboehm_table() -> Table:
    """siboehm's kernels on the A6000 beside ours at the same 4092 x 4092 x 4092."""
    rows, ms = [], []
    for step in SIBOEHM_STEPS:
        kernel, params = resolve(step)
        x = timing.bench(kernel, SIBOEHM_SIZE, params)
        ms.append(x)
        rows.append((f"{step[0]}: {step[1]}", f"{step[2]:,.0f} ({100 * step[2] / SIBOEHM_CUBLAS:.1f}%)",
                     f"{kernel} ({params_text(params)})", _ours(x), step[5]))
    return Table(("kernel (published)", "A6000", "ours nearest this step", "ours", "note"), tuple(rows),
                 f"GFLOP/s (% of cuBLAS SGEMM). Published: {SIBOEHM} (cuBLAS {SIBOEHM_CUBLAS:,.0f} GFLOP/s), "
                 "quoted as data. "
                 f"Ours: {provenance(ms)}; cuBLAS timed in the same run.", wrap=(0, 2, 4))


class CublasWays(NamedTuple):
    table: Table
    words: dict[str, str]  # glue names and values for the page's sentences


def cublas_ways(size: int = 2048) -> CublasWays:
    """The same cuBLAS call timed each way, and what each would make of seed 002's k8 counterpart and of our best
    kernel at that size: the table, and what the claims page says of it (cuBLAS's time the book's way and warm in L2,
    the share of its speed a host clock and explicit transposes cost, k8's counterpart against each, the first call's
    set-up), both from one measurement."""
    kernel, params = resolve(next(s for s in SEED002_STEPS if s[0] == "k8"))
    k8 = timing.bench(kernel, size, params)
    best = best_ffma(size)
    ways = baselines.ways(size)
    rows = tuple((baselines.WAYS[way], f"{r['time_ms']:.3f}", f"{r['gflops']:,.0f}",
                  f"{100 * k8.gflops / r['gflops']:,.0f}%", f"{100 * best.gflops / r['gflops']:,.0f}%")
                 for way, r in ways.items())
    first = next(iter(ways.values()))
    table = Table(("how cuBLAS is timed", "ms", "cuBLAS GFLOP/s as timed", "k8's counterpart as % of it",
                   f"our best FFMA kernel ({best.kernel}) as % of it"), rows,
                  f"M = N = K = {size}; cuBLAS {'timed live' if device.live() else 'recorded'} on {first['gpu']}, "
                  f"{first['recorded_at'][:10]}. k8's counterpart: "
                  f"{kernel} ({params_text(params)}), {k8.gflops:,.0f} GFLOP/s; our best: the fastest recorded "
                  f"instance of {' and '.join(BEST_FFMA)}, {best.kernel} ({params_text(best.params)}), "
                  f"{best.gflops:,.0f} GFLOP/s; {provenance([k8, best])}.", wrap=(0,))
    book = ways["book"]

    def cost(way: str) -> str:
        return f"{100 * (1 - book['time_ms'] / ways[way]['time_ms']):.0f} %"

    def k8_share(way: str) -> str:
        return f"{100 * k8.gflops / ways[way]['gflops']:.0f} %"

    setup = ways["first_call"]["time_ms"] - book["time_ms"]
    return CublasWays(table, {
        "ways_book_ms": f"{book['time_ms']:.2f} ms", "ways_warm_ms": f"{ways['one_warm_call']['time_ms']:.2f} ms",
        "ways_host_cost": cost("host_clock"), "ways_transposes_cost": cost("transposes"),
        "ways_k8_book": k8_share("book"), "ways_k8_host": k8_share("host_clock"),
        "ways_k8_transposes": k8_share("transposes"),
        "ways_setup_ms": f"{setup:,.0f} ms", "ways_setup_times": f"{setup / book['time_ms']:,.0f}"})


BEST_FFMA = ("warp_tiling", "pipelined_warp_tiling")  # the FFMA kernels whose recorded instances compete for "our best"


def best_ffma(size: int) -> Measurement:
    """Our fastest FFMA (FP32 SGEMM) kernel at M = N = K = `size`: the fastest instance of chapter 7's and chapter 7b's
    kernels recorded in a sustained race (a page quotes no short race), or in any race where none was sustained."""
    return max((sweeps.best(k, size, sustained=True) for k in BEST_FFMA),
               key=lambda x: (x.method == "sustained", x.gflops))


def instance_words(x: Measurement) -> str:
    """'pipelined_warp_tiling at its defaults' or '... with STREAM=1': which instance a quoted number is of (plain
    text: a glue:text value shows backticks as they are)."""
    default = catalog.get(x.kernel).full_params()
    changed = {k: v for k, v in x.params.items() if default.get(k) != v}
    return f"{x.kernel} " + (f"with {', '.join(f'{k}={v}' for k, v in changed.items())}" if changed
                               else "at its defaults")


def claims_beside_ours() -> list[tuple[str, list[tuple[str, float, Measurement]]]]:
    """Each published progression as (source, [(step, its published % of cuBLAS, our measurement with the same idea)]):
    siboehm's eleven kernels on the A6000 (ours at 4092), seed 002's eight steps (ours at 2048) and seed 000's
    headline tile on the V100 (ours at 4096): what `plots.claims` draws."""
    def steps(items: tuple[Step, ...], cublas: float, size: int) -> list[tuple[str, float, Measurement]]:
        out = []
        for step in items:
            if step[2] is None:
                continue
            kernel, params = resolve(step)
            out.append((f"{step[0]} {step[1]}", 100 * step[2] / cublas, timing.bench(kernel, size, params)))
        return out

    claim, kernel, params = SEED000_CLAIM
    return [(f"siboehm/SGEMM_CUDA on an RTX A6000; ours at {SIBOEHM_SIZE}³", steps(SIBOEHM_STEPS, SIBOEHM_CUBLAS,
                                                                                   SIBOEHM_SIZE)),
            ("my_SGEMM (seed 002), GPU not named; ours at 2048³", steps(SEED002_STEPS, SEED002_CUBLAS, 2048)),
            ("Zhihu GEMM part 2 (seed 000) on a V100; ours at 4096³",
             [("double buffering, 128x128x8, 8x8", claim, timing.bench(kernel, 4096, params))])]
