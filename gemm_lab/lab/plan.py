"""What `gemm-lab record` measures: the book's recorded data, declared once.

Chapters replay exactly these cases without a GPU, so a chapter that shows a new case adds it here.
"""
from __future__ import annotations

import json
from pathlib import Path

from .. import catalog, folders, records, timing, turns
from ..pages import tables
from ..pages.grids import COUNTER_SIZE, SWEEPS
from ..precision import int8
from . import published

SIZES = (1024, 2048, 4096, 8192)
ODD_SHAPE = (2999, 4001, 3001)  # M, N, K: no tile divides it and rows are not 16-byte aligned

# The GPU primer's memory probes (`gemm-lab record --only memory`: records/<gpu>/memory.json) need no cases here: their
# working sets follow the GPU's own L2 size (memory.working_sets).

# Every FP32 kernel at its default parameters at every size (the scoreboard and the chapters' charts), against
# cuBLAS SGEMM.
HEADLINE = ("naive", "coalesced", "smem_tiled", "thread_tile_1d", "thread_tile_2d", "vectorized", "bank_conflicts",
            "prefetch", "multistage", "warp_tiling", "pipelined_warp_tiling")
# Chapter 8's tensor-core kernels, recorded with the headline; each against cuBLAS in its own precision
# (yardstick.BASELINE), so `record` also times cuBLAS with TF32 math at SIZES and ODD_SHAPE (CUBLAS_PRECISIONS).
TENSOR_CORES = ("mma_tf32", "mma_3xtf32", "mma_tf32_tma", "wgmma_tf32", "wgmma_3xtf32", "wgmma_ws_tf32",
                "wgmma_ws_3xtf32")
CUBLAS_PRECISIONS = ("fp32", "tf32")
# Chapter 10's FP32 emulation on INT8 tensor cores, recorded with the headline against cuBLAS SGEMM.
EMULATION = ("ozaki",)
OZAKI_MODULI = (6, 7, 9)  # pinned, besides the default (0: chosen per call), at OZAKI_SIZES
OZAKI_SIZES = (4096, 8192)
INT8_SIZES = (2048, 4096, 8192)  # kernel 15 alone beside cuBLAS's INT8 GEMM (`gemm-lab record --only ozaki`)
# The kernels that take ODD_SHAPE: the TMA kernels need N and K multiples of 4 and refuse it.
ODD_SHAPE_KERNELS = tuple(k for k in (*HEADLINE, *TENSOR_CORES, *EMULATION) if not catalog.get(k).tma)


def headline_cases() -> list[tuple[str, None, int | tuple[int, int, int]]]:
    """Every headline, tensor-core and emulation kernel at its defaults at every size, and those that take it on the
    odd shape."""
    return [(name, None, size) for size in SIZES for name in (*HEADLINE, *TENSOR_CORES, *EMULATION)] + \
        [(name, None, ODD_SHAPE) for name in ODD_SHAPE_KERNELS]


# Chapter 7's control: chapter 6's kernel with the warp-tiled default's block tile, thread tile (8 x 16) and threads,
# so that the two kernels differ by the warp tiling alone (timed and counted at 4096).
WARP_TILE_CONTROL = {"BM": 128, "BN": 256, "BK": 8, "TM": 8, "TN": 16, "PREFETCH": 1}
# Kernel 10b with 64 x 128 tiles: 128 blocks at 1024, where 128 x 256 tiles make 32 for 132 SMs.
PIPELINED_SMALL = {"BM": 64, "BN": 128, "WM": 64, "WN": 32, "TM": 8, "TN": 8, "STAGES": 3}

# Chapter 9's ladder from chapter 8a's wgmma kernel to kernel 14's defaults: each rung adds one technique (the
# defaults add TMA stores to the last).
HOPPER_LADDER = (
    {"CLUSTER": 1, "PERSIST": 0, "GROUP": 1, "STORE": 0},  # warp specialisation, TMA and mbarrier rings
    {"CLUSTER": 1, "PERSIST": 1, "GROUP": 1, "STORE": 0},  # + a persistent grid
    {"CLUSTER": 2, "PERSIST": 1, "GROUP": 1, "STORE": 0},  # + 2-block clusters multicasting B
    {"CLUSTER": 2, "PERSIST": 1, "GROUP": 8, "STORE": 0},  # + the grouped tile order
)
# Kernel 14 with B^T K-major in shared memory: both wgmma operands there, and 3 stages fit.
BOTH_SMEM = {"BSMEM": 1, "STAGES": 3}
# Kernel 14 with its pair side by side along N, sharing A (the wide operand, as cuBLAS's pair does) instead of B:
# chapter 9's energy notes time it at the ladder's sizes and count its bytes at ENERGY_SIZE (on the GPUs that have it).
PAIR_ALONG_N = {"CLUSTER": -2}
# Chapter 9's measured alternatives at the ladder's sizes: both operands from shared memory, 3xTF32 unclustered,
# split by the consumers, and with TMA stores.
HOPPER_OPTIONS = (
    ("wgmma_ws_tf32", BOTH_SMEM),
    ("wgmma_ws_3xtf32", {"CLUSTER": 1}),
    ("wgmma_ws_3xtf32", {"SPLITTER": 1}),
    ("wgmma_ws_3xtf32", {"STORE": 1}),
)
LADDER_SIZES = (4096, 8192)
# Chapter 9's energy: kernel 14's band of tile rows (GROUP) against what DRAM and L2 move at 8192, beside cuBLAS TF32
ENERGY_SIZE = 8192
ENERGY_GROUPS = (2, 4, 16)  # besides the default 8
# Options the explorers do not offer but chapter 9 measures: `gemm-lab sanitize` runs these too, so every code path
# of kernel 14 is checked (the other choice of each of its flags).
SANITIZE_EXTRA: dict[str, tuple[dict[str, int], ...]] = {
    "wgmma_ws_tf32": ({**BOTH_SMEM, "STORE": 0}, PAIR_ALONG_N),
    "wgmma_ws_3xtf32": ({"SPLITTER": 1, "STORE": 1},),
    "mma_tma_parts": ({"EMPTY": 1}, {"EMPTY": 1, "BAND": 8, "CLUSTER": 2}),
}

# Chapter 4's step in its parts, each raced at STEP_PARTS_SIZE: the 2-D kernel of chapter 3 at its own tile (BK 8),
# then at the step's default tile (BK 32), + float4 global accesses (vectorized_parts, TRANSPOSED_A 0 and SPACED_B 0:
# both tiles as chapter 3 lays them out), + A transposed (TRANSPOSED_A 1), + B's fragment reads spaced (the vectorized
# kernel). Recorded on STEP_PARTS_GPU only (the H100 was no longer available), where `gemm-lab record --only headline
# --chapter ch03_register_blocking --chapter ch04_vectorized` races them.
VECTORIZED_TILE = catalog.get("vectorized").full_params()  # the step's tile: chapter 4's default
STEP_PARTS = (("thread_tile_2d", {}), ("thread_tile_2d", VECTORIZED_TILE),
              ("vectorized_parts", {**VECTORIZED_TILE, "SPACED_B": 0, "TRANSPOSED_A": 0}),
              ("vectorized_parts", {**VECTORIZED_TILE, "SPACED_B": 0, "TRANSPOSED_A": 1}),
              ("vectorized", VECTORIZED_TILE))
STEP_PARTS_SIZE = 4096
STEP_PARTS_GPU = "NVIDIA H200"
# Chapter 9's step 1 also swaps chapter 8a's 128 x 256 tile for kernel 14's 256 x 128: kernel 12 raced on that tile
# alone, at STEP_PARTS_SIZE on STEP_PARTS_GPU only (`gemm-lab record --only headline --chapter ch08a_wgmma`).
HOPPER_TILE_PART = ("wgmma_tf32", {"BM": 256, "BN": 128, "STAGES": 4})
# Chapter 7b's steps 1 and 2 part by part, from kernel 10 to kernel 10b: step 1 alone (kernel 10b's cp.async pipeline
# with kernel 10's lanes and plain fragment loads), + kernel 10b's lanes, + volatile fragment loads (then + ptxas'
# register-usage level is kernel 10b), raced and counted at STEP_PARTS_SIZE on STEP_PARTS_GPU only, with kernels 10
# and 10b's headline races
# (`gemm-lab record --only headline --chapter ch07_warp_tiling --chapter ch07b_pipelined_warp_tiling`).
PIPELINED_PARTS = (("pipelined_parts", {}), ("pipelined_parts", {"LANES": 1}),
                   ("pipelined_parts", {"LANES": 1, "VOLATILE": 1}))
# Chapter 8c's change part by part, from kernel 11 to kernel 13: TMA alone (with the full mbarriers and the swizzle it
# cannot go without; stages handed back at __syncthreads, tiles row by row, clusters of one), + empty mbarriers,
# + the band order (then + clusters of two is kernel 13), raced at STEP_PARTS_SIZE on STEP_PARTS_GPU only, with
# kernels 11 and 13's headline races (`gemm-lab record --only headline --chapter ch08c_data_movers`).
MOVER_PARTS = (("mma_tma_parts", {}), ("mma_tma_parts", {"EMPTY": 1}), ("mma_tma_parts", {"EMPTY": 1, "BAND": 8}))
# Chapter 7's warp level part by part, from chapter 6's kernel on 8 x 8 thread tiles: the warp grid alone (the
# checked loop everywhere, two blocks per SM), + the loop without bounds checks (then + one block per SM is kernel 10
# on that tile), raced and counted at STEP_PARTS_SIZE on STEP_PARTS_GPU only.
WARP_PARTS = (("warp_tiling_parts", {}), ("warp_tiling_parts", {"LEAN": 1}))
# Chapter 9's step 1 in parts: kernel 14 at that step without its producer warpgroup (a consumer thread issues the
# TMA copies into the same mbarrier rings), then + the producer is the ladder's rung 1; raced and counted at
# STEP_PARTS_SIZE on STEP_PARTS_GPU only.
PRODUCER_PARTS = (("wgmma_ws_parts", {}),)
# ... and counted there beside the step's other parts: chapter 8a's kernel on step 1's tile, and step 1 itself.
STEP1_COUNTERS = (HOPPER_TILE_PART, *PRODUCER_PARTS, ("wgmma_ws_tf32", HOPPER_LADDER[0]))
# Every part counted at COUNTER_SIZE on STEP_PARTS_GPU, beside COUNTERS (`gemm-lab record --only counters`).
COUNTED_PARTS = MOVER_PARTS + WARP_PARTS + STEP1_COUNTERS + PIPELINED_PARTS
# Kernels the book has recorded on one GPU only: tests ask no other GPU's records of them, and a page replayed on
# another GPU reads their rows from this one (`records.fallbacks`). The Ozaki scheme's current build (its other
# stages made faster) has been measured on the H200 only: no H100 was lent since it changed.
RECORDED_ONLY_ON = dict.fromkeys(("vectorized_parts", "pipelined_parts", "mma_tma_parts", "warp_tiling_parts",
                                  "wgmma_ws_parts", "ozaki"), STEP_PARTS_GPU)

# Single cases a chapter shows beside the headline ones.
EXTRA: tuple[tuple[str, dict[str, int], int], ...] = (
    *((name, p, STEP_PARTS_SIZE) for name, p in STEP_PARTS[:-1]),  # the step's last rung is a headline case
    (*HOPPER_TILE_PART, STEP_PARTS_SIZE),
    *((name, p, STEP_PARTS_SIZE) for name, p in PIPELINED_PARTS),
    *((name, p, STEP_PARTS_SIZE) for name, p in MOVER_PARTS),
    *((name, p, STEP_PARTS_SIZE) for name, p in WARP_PARTS),
    *((name, p, STEP_PARTS_SIZE) for name, p in PRODUCER_PARTS),
    ("bank_conflicts", {"LAYOUT": 0}, 4096),
    ("bank_conflicts", {"LAYOUT": 1}, 4096),
    *(("prefetch", {"PREFETCH": 0}, size) for size in SIZES),  # the default tile without prefetch
    ("prefetch", WARP_TILE_CONTROL, 4096),  # at COUNTER_SIZE, beside its counters
    # kernel 10b's measured options: stream-K, A read along k, and small tiles where 128 x 256 leaves SMs idle
    *(("pipelined_warp_tiling", {"STREAM": 1}, size) for size in SIZES),
    ("pipelined_warp_tiling", {"ALONG_K": 1}, 4096),
    *(("pipelined_warp_tiling", PIPELINED_SMALL, size) for size in (1024, 2048)),
    *(("wgmma_ws_tf32", rung, size) for rung in HOPPER_LADDER for size in LADDER_SIZES),
    *((name, p, size) for name, p in HOPPER_OPTIONS for size in LADDER_SIZES),
    *(("ozaki", {"MODULI": moduli}, size) for moduli in OZAKI_MODULI for size in OZAKI_SIZES),
    *(("wgmma_ws_tf32", {"GROUP": group}, ENERGY_SIZE) for group in ENERGY_GROUPS),
    *(("wgmma_ws_tf32", PAIR_ALONG_N, size) for size in LADDER_SIZES),
    *published.seed_table_cases(),
    # chapter 8c's table of kernel 13's CLUSTER x STAGES at its default tiles (the default cell is a headline case)
    *(("mma_tf32_tma", {"CLUSTER": cluster, "STAGES": stages}, 2048) for cluster, stages in ((1, 3), (1, 4), (2, 3))),
)

# The page on published claims: seed 002's steps at its size and ours, siboehm's at its size, and cuBLAS
# timed each way of `baselines.WAYS` at these sizes.
CLAIM_SIZES = (2048, 4096)
CUBLAS_WAYS_SIZES = (2048,)


def claim_cases() -> list[tuple[str, dict[str, int], int]]:
    """Every instance the claims page shows, once (a step whose counterpart is a sweep's best reads the records)."""
    cases = [(*published.resolve(s), size) for s in published.SEED002_STEPS for size in CLAIM_SIZES]
    cases += [(*published.resolve(s), published.SIBOEHM_SIZE) for s in published.SIBOEHM_STEPS]
    return list({json.dumps(c, sort_keys=True): c for c in cases}.values())


def quoted_races() -> list[tuple[str, dict[str, int] | None, int | tuple[int, int, int]]]:
    """Every race whose share a page, the scoreboard, the intro or the README quotes: the headline cases, the extra
    cases and the claims page's (whose best instances come from the recorded sweeps: none where none is recorded)."""
    try:
        claims = claim_cases()
    except LookupError:  # no sweep recorded: the claims page has no best instance to quote
        claims = []
    return headline_cases() + list(EXTRA) + claims


# Chapter 8b's error-vs-K figure: M = N = 1024 as K grows, the best FP32 FFMA kernel, the tensor-core kernels, and
# cuBLAS in both maths (`gemm-lab record --only tensor_cores`).
ERROR_VS_K = tuple((1024, 1024, k) for k in (64, 256, 1024, 4096, 16384, 65536))
ERROR_VS_K_KERNELS = ("warp_tiling", *TENSOR_CORES)


def error_vs_k_cases() -> list[tuple[str, None, tuple[int, int, int]]]:
    """Each kernel of the error-vs-K figure at its defaults on each shape of ERROR_VS_K."""
    return [(name, None, shape) for shape in ERROR_VS_K for name in ERROR_VS_K_KERNELS]


# Autotuning: the whole pruned space of a kernel timed at each of SIZES but the largest, where the TOP best
# instances at the largest size below it are timed instead (the whole space there would take minutes).
AUTOTUNE: dict[str, tuple[int, ...]] = {"warp_tiling": (1024, 2048, 4096), "pipelined_warp_tiling": (1024, 2048, 4096),
                                        "wgmma_ws_tf32": (4096,)}
# The space autotuned where the catalog's whole legal grid would take too long to time (kernel 10b's is 1,500-odd).
AUTOTUNE_SPACE: dict[str, dict[str, tuple[int, ...]]] = {"pipelined_warp_tiling": SWEEPS["pipelined_warp_tiling"],
                                                         "wgmma_ws_tf32": SWEEPS["wgmma_ws_tf32"]}
AUTOTUNE_CONFIRM = (8192, 8)  # size, number of the best instances at 4096 re-timed there

COUNTERS: tuple[tuple[str, dict[str, int]], ...] = (
    ("naive", {"BLOCK": 32}),
    ("coalesced", {"BLOCK": 32}),
    ("smem_tiled", {"BM": 8, "BN": 8, "BK": 8}),
    ("smem_tiled", {"BM": 16, "BN": 16, "BK": 16}),
    ("smem_tiled", {"BM": 32, "BN": 32, "BK": 32}),
    ("smem_tiled", {"BM": 64, "BN": 16, "BK": 16}),
    ("smem_tiled", {"BM": 16, "BN": 64, "BK": 16}),
    ("thread_tile_2d", {"BM": 128, "BN": 128, "BK": 8, "TM": 8, "TN": 8}),
    ("vectorized", {"BM": 128, "BN": 128, "BK": 32, "TM": 8, "TN": 8}),
    ("bank_conflicts", {"BM": 128, "BN": 128, "BK": 32, "TM": 8, "TN": 8, "LAYOUT": 0}),
    ("bank_conflicts", {"BM": 128, "BN": 128, "BK": 32, "TM": 8, "TN": 8, "LAYOUT": 1}),
    ("bank_conflicts", {"BM": 128, "BN": 128, "BK": 32, "TM": 8, "TN": 8, "LAYOUT": 2}),
    ("prefetch", {"BM": 128, "BN": 128, "BK": 8, "TM": 8, "TN": 8, "PREFETCH": 0}),
    ("prefetch", {"BM": 128, "BN": 128, "BK": 8, "TM": 8, "TN": 8, "PREFETCH": 1}),
    ("prefetch", {"BM": 64, "BN": 128, "BK": 16, "TM": 8, "TN": 8, "PREFETCH": 0}),
    ("prefetch", {"BM": 64, "BN": 128, "BK": 16, "TM": 8, "TN": 8, "PREFETCH": 1}),
    ("multistage", {"BM": 128, "BN": 128, "BK": 8, "TM": 8, "TN": 8, "STAGES": 3}),
    ("multistage", {"BM": 128, "BN": 128, "BK": 16, "TM": 8, "TN": 8, "STAGES": 3}),
    ("warp_tiling", {}),  # the default
    ("warp_tiling", {"BM": 128, "BN": 128, "BK": 8, "WM": 64, "WN": 32, "TM": 8, "TN": 8}),  # 8 x 8 thread tiles
    ("prefetch", WARP_TILE_CONTROL),  # chapter 6's kernel with the tiles of warp_tiling's default
    ("pipelined_warp_tiling", {}),  # kernel 10b beside cuBLAS
    ("pipelined_warp_tiling", {"STREAM": 1}),
    ("cublas", {}),  # what cuBLAS runs, for the ceiling analysis of chapter 7
    ("mma_tf32", {}),  # chapter 8: how busy each tensor-core kernel keeps the tensor pipe, beside cuBLAS TF32
    ("mma_tf32_tma", {}),
    ("wgmma_tf32", {}),  # chapter 9: chapter 8a's wgmma kernel, kernel 14 and cuBLAS's TF32 GEMM, tensor pipes included
    ("wgmma_ws_tf32", {}),
    ("wgmma_ws_tf32", BOTH_SMEM),  # both operands from shared memory: its traffic beside the above
    ("wgmma_ws_3xtf32", {}),
    ("cublas_tf32", {}),
)
# The same counters at ENERGY_SIZE: kernel 14 with each band of tile rows, and cuBLAS TF32.
ENERGY_COUNTERS: tuple[tuple[str, dict[str, int]], ...] = (
    *(("wgmma_ws_tf32", {"GROUP": group}) for group in sorted((*ENERGY_GROUPS, 8))),
    ("cublas_tf32", {}),
)
# Chapter 1's power-of-two stride: both kernels' counters, L1's wavefronts included, at 4092 beside 4096.
STRIDE_SIZES = (4092, COUNTER_SIZE)
STRIDE_COUNTERS = COUNTERS[:2]


def full_params(name: str, params: dict[str, int] | None = None) -> dict[str, int]:
    """A catalogued kernel's or kernel 15's (INT8 alone) parameters with its defaults filled in."""
    return int8.full_params(params) if name == int8.PROBE.name else catalog.get(name).full_params(params)


def method_for(name: str, params: dict[str, int] | None, size: int | tuple[int, int, int]) -> turns.Method:
    """The race a case is recorded in: LONG_TURNS for a key share, else SUSTAINED."""
    key = any(name == k and timing.shape_of(size) == (s,) * 3 for k, s in catalog.KEY_SHARES)
    return turns.LONG_TURNS if key and full_params(name, params) == full_params(name) else turns.SUSTAINED


def side_ms(x: records.Measurement) -> float:
    """The timed GPU time each side of `x`'s race needs: its method's (`method_for`), or for a row older than `turn_ms`
    in the records, its rounds of the turns of its day (the key shares' grew from 1 s to 2 s)."""
    method = method_for(x.kernel, x.params, (x.m, x.n, x.k))
    return method.rounds * (method.turn_ms if x.turn_ms else tables.turn_ms_of(x))


def quotable(x: records.Measurement) -> bool:
    """May a page quote this tensor-core, INT8 or emulation race? Timed as `turns.SUSTAINED` times today (its turn
    settles included), each side with `side_ms` timed wherever its turns are not capped (small work), and each side's
    joules per launch from NVML's energy counter."""
    method = method_for(x.kernel, x.params, (x.m, x.n, x.k))
    sides = ((x.telemetry, x.time_ms), (x.cublas_telemetry, x.cublas_time_ms))
    long_enough = all(t.get("timed_ms", 0) >= side_ms(x) or method.capped(ms) for t, ms in sides)
    return turns.SUSTAINED.holds(x) and long_enough and all("energy_j" in t for t, _ in sides)


def case_key(name: str, params: dict[str, int] | None,
             size: int | tuple[int, int, int]) -> tuple[str, str, int, int, int]:
    """A case as a row's key: kernel, full parameters as sorted JSON, M, N, K."""
    return (name, json.dumps(full_params(name, params), sort_keys=True), *timing.shape_of(size))


def quoted_keys() -> set[tuple[str, str, int, int, int]]:
    """`case_key` of every race the pages quote: `quoted_races` and INT8's."""
    return {case_key(*c) for c in (*quoted_races(), *((int8.PROBE.name, None, s) for s in INT8_SIZES))
            if c[0] == int8.PROBE.name or c[0] in catalog.KERNELS}


def is_quoted(x: records.Measurement, keys: set[tuple[str, str, int, int, int]] | None = None) -> bool:
    """Is this row one the pages quote (`quoted_keys`, computed once by a caller that asks often)?"""
    return (x.kernel, json.dumps(x.params, sort_keys=True), x.m, x.n, x.k) in (keys or quoted_keys())


def current(x: records.Measurement) -> bool:
    """Was this race timed as `gemm-lab record` times it today? FP32 races as `turns.SUSTAINED` (they run below the
    cap); tensor-core, INT8 and emulation races also as `quotable` asks."""
    return turns.SUSTAINED.holds(x) and (x.precision == "fp32" or quotable(x))


def unsustained(root: Path | None = None) -> list[str]:
    """Rows of races the pages quote (`quoted_races`, and INT8's) that are not `current`: timed before today's
    sustained race, each turn under one pair of CUDA events and with its turn settles, or, beyond FP32, without each
    side's timed milliseconds or its joules per launch. `records --check` reports them beside `freshness.problems`'s."""
    quoted = quoted_keys()
    problems = []
    for path in sorted((root or folders.RECORDS_DIR).glob("*/*.json")):
        if records.precision_of(path.stem) is None:
            continue
        for r in records.read_rows(path):
            x = records.Measurement.from_row(r, str(path))
            if is_quoted(x, quoted) and not current(x):
                beyond = "" if x.precision == "fp32" else (
                    f", with its turn settles, {side_ms(x) / 1000:g} s timed a side and joules")
                problems.append(f"{path}: {x.kernel} {x.params} at {x.m}x{x.n}x{x.k} is quoted by a page but was not "
                                f"timed in today's sustained race (each turn under one pair of CUDA events{beyond}): "
                                "re-record it with `gemm-lab record`")
    return problems
