"""The kernel families of the book and their rules, each written once with its reason: the square-block kernels of
chapter 1, shared-memory tiling, thread tiles (chapters 3 to 6), warp tiling, the tensor-core kernels of chapters 8
and 9, kernel 15 and the Ozaki scheme. `catalog.KERNELS` and `catalog.PROBES` are built here.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

from .spec import (
    DYNAMIC_SMEM_LIMIT,
    MAX_THREADS_PER_BLOCK,
    REGISTER_FILE,
    REGISTERS_PER_SM,
    STATIC_SMEM_LIMIT,
    KernelSpec,
    Params,
    Probe,
    Rule,
    ceil_div,
    register_budget,
    round_up,
)

INT8_PRODUCT = "int8_wgmma_ws"  # kernel 15, the INT8 GEMM the Ozaki scheme runs once per modulus

PROBES = {p.name: p for p in (
    Probe("tensor_core_peak", "kernels/tensor_core_peak.cu", ("mma_peak", "wgmma_peak"), (8, 0), "device",
          (("mma_peak<16>", "sm_80"), ("wgmma_peak<256>", "sm_90a"))),
    Probe("memory_probes", "kernels/memory_probes.cu", ("chase_global", "chase_shared", "copy_cg"), (7, 5), "memory",
          (("chase_global", "sm_75"), ("chase_shared", "sm_75"), ("copy_cg", "sm_75"))),
    Probe(INT8_PRODUCT, "kernels/15_int8_wgmma_ws.cu", ("igemm_s8_wgmma_ws",), (9, 0), INT8_PRODUCT,
          (("igemm_s8_wgmma_ws<256, 2, 4, 2, 8>", "sm_90a"),), "sm_90a", "int8",
          ("BN", "CONSUMERS", "STAGES", "CLUSTER", "GROUP")),  # the ozaki spec's, less MODULI
)}


def block_limits(spec_threads: Callable[[Params], int], smem: Callable[[Params], int],
                 dynamic: bool = False) -> tuple[Rule, ...]:
    """The threads a block may have, and the shared memory: static (48 KiB) or, for `dynamic`, sm_90's opt-in."""
    limit = Rule(f"dynamic shared memory must fit in {DYNAMIC_SMEM_LIMIT} bytes ({DYNAMIC_SMEM_LIMIT // 1024} KiB) "
                 "per block, the H100's maximum with the opt-in", lambda p: smem(p) <= DYNAMIC_SMEM_LIMIT) if dynamic \
        else Rule(f"static shared memory must fit in {STATIC_SMEM_LIMIT // 1024} KiB per block (more needs dynamic "
                  "shared memory and an opt-in)", lambda p: smem(p) <= STATIC_SMEM_LIMIT)
    return (Rule(f"threads per block must be between 1 and {MAX_THREADS_PER_BLOCK} (the hardware's limit per block)",
                 lambda p: 1 <= spec_threads(p) <= MAX_THREADS_PER_BLOCK), limit)


def positive(*names: str) -> Rule:
    return Rule(f"{', '.join(names)} must be positive integers", lambda p: all(p[n] >= 1 for n in names))


def at_least_two_stages(what: str = "buffers in the pipeline") -> Rule:
    """STAGES of a ring of copies: one stage is read while the next arrives."""
    return Rule(f"STAGES must be at least 2 ({what}: one is read while the next arrives)", lambda p: p["STAGES"] >= 2)


def _registers_fit(split: bool, fragments: str, budget: str, need: Callable[[Params], int],
                   limit: Callable[[Params], int]) -> Rule:
    """The register rule of the tensor-core kernels: a thread's accumulators (and, split, its per-step sums) and
    `fragments` fit in `budget` (what the thread gets, and what happens if not)."""
    sums = ", the per-step sums" if split else ""
    return Rule(f"the accumulators{sums} and {fragments} must fit in {budget}", lambda p: need(p) <= limit(p))


def _square_block(name: str, function: str, source: str, title: str, notes: str) -> KernelSpec:
    def threads(p: Params) -> int:
        return p["BLOCK"] ** 2

    def smem(p: Params) -> int:
        return 0

    return KernelSpec(
        name=name, source=source, function=function, title=title, choices={"BLOCK": (4, 8, 16, 32)},
        defaults={"BLOCK": 32}, tile=lambda p: (p["BLOCK"], p["BLOCK"]), threads=threads, smem_bytes=smem,
        rules=(positive("BLOCK"), *block_limits(threads, smem)), chapter="ch01_naive_coalesced", notes=notes)


def _smem_tiled() -> KernelSpec:
    def threads(p: Params) -> int:
        return p["BM"] * p["BN"]

    def smem(p: Params) -> int:
        return 4 * (p["BM"] * p["BK"] + p["BK"] * p["BN"])

    return KernelSpec(
        name="smem_tiled", source="kernels/03_smem_tiling.cu", function="sgemm_smem_tiled",
        title="Shared-memory tiling",
        choices={"BM": (4, 8, 16, 32, 64), "BN": (4, 8, 16, 32, 64), "BK": (4, 8, 16, 32, 64)},
        defaults={"BM": 32, "BN": 32, "BK": 32}, tile=lambda p: (p["BM"], p["BN"]), threads=threads, smem_bytes=smem,
        rules=(positive("BM", "BN", "BK"), *block_limits(threads, smem)), chapter="ch02_smem_tiling",
        notes="one output per thread, so the block has BM*BN threads")


def flag(name: str, zero: str, one: str) -> Rule:
    return Rule(f"{name} must be 0 ({zero}) or 1 ({one})", lambda p: p[name] in (0, 1))


def _divides(small: str, big: str, why: str) -> Rule:
    return Rule(f"{small} must divide {big} ({why})", lambda p: p[big] % p[small] == 0)


def _multiple_of_4(*names: str) -> Rule:
    return Rule(f"{', '.join(names)} must be multiples of 4 (they are read as float4 vectors)",
                lambda p: all(p[n] % 4 == 0 for n in names))


A_LAYOUTS = {0: "plain", 1: "padded", 2: "swizzled"}  # LAYOUT of 07_bank_conflicts.cu


def a_pad(p: Params) -> int:
    """Floats of padding per row of the A tile (LAYOUT 1 pads by one float4)."""
    return 4 if p.get("LAYOUT") == 1 else 0


def buffers(p: Params) -> int:
    """Shared-memory copies of the A and B tiles: PREFETCH doubles them, STAGES sets their number."""
    return p.get("STAGES", 2 if p.get("PREFETCH") else 1)


def _thread_tile(name: str, source: str, function: str, title: str, dims: str, notes: str, chapter: str,
                 extra: tuple[Rule, ...] = (), bk: int = 8, min_cc: tuple[int, int] = (5, 0)) -> KernelSpec:
    """Kernels whose threads each compute a TM x TN tile (TN fixed to 1 for the 1-D kernel)."""
    tn = (lambda p: p["TN"]) if "TN" in dims else (lambda p: 1)

    def threads(p: Params) -> int:
        return (p["BM"] // p["TM"]) * (p["BN"] // tn(p))

    def smem(p: Params) -> int:
        return 4 * buffers(p) * ((p["BM"] + a_pad(p)) * p["BK"] + p["BK"] * p["BN"])

    choices = {"BM": (32, 64, 128), "BN": (32, 64, 128), "BK": (8, 16, 32), "TM": (4, 8, 16)}
    defaults = {"BM": 64, "BN": 64, "BK": 8, "TM": 8}
    rules = [
        positive(*(d for d in dims.split() if d in ("BM", "BN", "BK", "TM", "TN"))),
        _divides("TM", "BM", "each thread owns TM whole rows of the tile"),
        Rule("at most 512 threads per block: at 1024 the register file leaves 64 registers per thread, "
             "too few for the accumulators and fragments without spilling", lambda p: threads(p) <= 512),
    ]
    if "TN" in dims:
        choices, defaults = {**choices, "TM": (4, 8), "TN": (4, 8)}, {"BM": 128, "BN": 128, "BK": bk, "TM": 8, "TN": 8}
        rules.append(_divides("TN", "BN", "each thread owns TN whole columns of the tile"))
    if "PREFETCH" in dims:
        choices = {**choices, "BK": (4, 8, 16, 32), "PREFETCH": (0, 1)}
        defaults = {**defaults, "BM": 64, "BK": 16, "PREFETCH": 1}  # the best of the chapter's measurements
        rules.append(flag("PREFETCH", "one buffer", "two buffers"))
    if "STAGES" in dims:
        choices, defaults = {**choices, "BK": (4, 8, 16, 32), "STAGES": (2, 3, 4)}, {**defaults, "BK": 16, "STAGES": 3}
        rules.append(Rule("STAGES must be 2, 3 or 4 (buffers in the cp.async pipeline; one is being read while "
                          "the others are in flight)", lambda p: 2 <= p["STAGES"] <= 4))
    if "SPACED_B" in dims:  # 0: a thread's TN columns side by side (chapter 3); 1: the vectorized kernel's
        choices, defaults = {**choices, "SPACED_B": (0, 1)}, {**defaults, "SPACED_B": 0}
        rules.append(flag("SPACED_B", "TN columns side by side", "float4 groups spaced BN / (TN / 4) apart"))
    if "TRANSPOSED_A" in dims:  # 0: the A tile as A's rows lie (chapter 3); 1: the vectorized kernel's As[k][m]
        choices, defaults = {**choices, "TRANSPOSED_A": (0, 1)}, {**defaults, "TRANSPOSED_A": 1}
        rules.append(flag("TRANSPOSED_A", "A's tile stored as its rows lie, As[m][k]", "stored transposed, As[k][m]"))
    if "LAYOUT" in dims:
        choices, defaults = {**choices, "LAYOUT": tuple(A_LAYOUTS)}, {**defaults, "LAYOUT": 2}
        rules += [
            Rule(f"LAYOUT must be one of {A_LAYOUTS}", lambda p: p["LAYOUT"] in A_LAYOUTS),
            Rule("the swizzled layout (LAYOUT 2) needs BM to be a multiple of 32 (it XORs m with up to 28)",
                 lambda p: p["LAYOUT"] != 2 or p["BM"] % 32 == 0),
        ]
    def staged(p: Params) -> int:
        """The float4s of A and B that each thread holds in `Staging` (kernels/08_prefetch.cu)."""
        return math.ceil(p["BM"] * p["BK"] / (4 * threads(p))) + math.ceil(p["BK"] * p["BN"] / (4 * threads(p)))

    # Registers: the TM x TN accumulators, two sets of fragments (the compiler loads the next k's during the FFMAs),
    # three more per row of A where A stays row-major (cp.async, TRANSPOSED_A 0: a float4 holds four k-values), six
    # per staged float4 of the next tiles where prefetching (its four values, its address and bounds) and about 32 for
    # addresses and indices. Calibrated on ptxas (NVRTC 13, sm_90) over the offered grids and instances beyond them.
    def need(p: Params) -> int:
        row_major_a, prefetch = "STAGES" in dims or not p.get("TRANSPOSED_A", 1), "PREFETCH" in dims
        return p["TM"] * tn(p) + 2 * (p["TM"] + tn(p)) + 3 * p["TM"] * row_major_a + 6 * staged(p) * prefetch + 32

    rules.append(Rule(
        "the TM x TN accumulators, two sets of fragments" + (" and the staged tiles" if "PREFETCH" in dims else "") +
        f" must fit in the registers each thread can have with this many threads ({REGISTER_FILE}), or they spill "
        "to local memory",
        lambda p: need(p) <= register_budget(threads(p))))
    return KernelSpec(
        name=name, source=source, function=function, title=title, choices=choices, defaults=defaults,
        tile=lambda p: (p["BM"], p["BN"]), threads=threads, smem_bytes=smem,
        rules=(*rules, *extra, *block_limits(threads, smem)), chapter=chapter, notes=notes, min_cc=min_cc,
    )


def warp_tiled_threads(p: Params) -> int:
    """Threads of a block of BM x BN split into WM x WN warp tiles: one warp of 32 per warp tile."""
    return (p["BM"] // p["WM"]) * (p["BN"] // p["WN"]) * 32


def _warp_tiles(threads: Callable[[Params], int]) -> tuple[Rule, ...]:
    """The rules of kernel 10's three levels of tiles (block, WM x WN warp tile, TM x TN lane tile), which 10b keeps."""
    return (
        Rule("the lanes of a warp must form an 8 x 4 or 4 x 8 grid: WM/TM x WN/TN is "
             "8 x 4 or 4 x 8 (the kernel numbers its lanes for these two grids)",
             lambda p: p["WM"] % p["TM"] == 0 and p["WN"] % p["TN"] == 0
             and (p["WM"] // p["TM"], p["WN"] // p["TN"]) in ((8, 4), (4, 8))),
        _divides("WM", "BM", "the warps tile the block's rows"),
        _divides("WN", "BN", "the warps tile the block's columns"),
        Rule("the block must have 1, 2 or a multiple of 4 warps: each of the SM's four warp schedulers has a quarter "
             "of the register file, and with uneven shares the fullest one sets every thread's register budget (the "
             "register estimate below is calibrated on even shares)",
             lambda p: threads(p) // 32 in (1, 2) or threads(p) // 32 % 4 == 0),
    )


def _warp_tiling() -> KernelSpec:
    """Block tile -> warp tile -> thread tile; the 32 lanes of a warp form an 8 x 4 or 4 x 8 grid."""
    threads = warp_tiled_threads

    def smem(p: Params) -> int:
        return 4 * 2 * p["BK"] * (p["BM"] + 4 + p["BN"])  # two buffers, A padded by 4

    def staged(p: Params) -> int:
        return 4 * ceil_div((p["BM"] + p["BN"]) * p["BK"], 4 * threads(p))  # the next tiles' float4s

    # accumulators, one and a half sets of fragments (the next k's arrive while the FFMAs use the current ones), the
    # staged tiles and about 28 for addresses; 8 x 16 thread tiles 16 more: below this, ptxas spills (calibrated on
    # ptxas, NVRTC 13, over the offered grid and instances beyond it, where 64-thread blocks of 8 x 16 tiles with
    # BK = 16 spill while their 16 x 8 twins fit)
    def need(p: Params) -> int:
        return (p["TM"] * p["TN"] + 3 * (p["TM"] + p["TN"]) // 2 + staged(p) + 28
                + 16 * (p["TN"] > p["TM"] >= 8))

    rules = (
        positive("BM", "BN", "BK", "WM", "WN", "TM", "TN"),
        _multiple_of_4("BK", "TM", "TN"),
        _divides("TM", "WM", "each lane owns TM rows of the warp tile"),
        _divides("TN", "WN", "each lane owns TN columns of the warp tile"),
        *_warp_tiles(threads),
        Rule("the TM x TN accumulators, two sets of fragments and the staged tiles must fit in the registers "
             f"each thread can have with this many threads ({REGISTER_FILE}), or they spill to local memory",
             lambda p: need(p) <= register_budget(threads(p))),
        *block_limits(threads, smem),
    )
    return KernelSpec(
        name="warp_tiling", source="kernels/10_warp_tiling.cu", function="sgemm_warp_tiling", title="Warp tiling",
        choices={"BM": (64, 128, 256), "BN": (64, 128, 256), "BK": (4, 8, 16), "WM": (32, 64, 128),
                 "WN": (16, 32, 64, 128), "TM": (4, 8, 16), "TN": (4, 8, 16)},
        # the sweep's fastest (records/*/warp_tiling.json)
        defaults={"BM": 128, "BN": 256, "BK": 8, "WM": 64, "WN": 64, "TM": 8, "TN": 16},
        tile=lambda p: (p["BM"], p["BN"]), threads=threads, smem_bytes=smem, rules=rules,
        chapter="ch07_warp_tiling",
        notes="warps own WM x WN sub-tiles, lanes TM x TN thread tiles read as broadcast float4s; "
              "register-staged double buffering",
    )


def _pipelined_warp_tiling() -> KernelSpec:
    """Warp tiling fed by cp.async stages (10b_pipelined_warp_tiling.cu): A transposed by 4-byte copies or read along
    k; stream-K optional."""
    threads = warp_tiled_threads

    def a_floats(p: Params) -> int:
        return p["BM"] * (p["BK"] + 4) if p["ALONG_K"] else p["BK"] * (p["BM"] + 4)  # padded

    def smem(p: Params) -> int:
        return 4 * p["STAGES"] * (a_floats(p) + p["BK"] * p["BN"])

    def static_smem(p: Params) -> int:
        return 64 if p["STREAM"] else 0  # stream-K's schedule words, as ptxas lays them out

    # accumulators, the fragments of A (two sets of TM values, or TM float4s read along k), two sets of TN values of
    # B, and about 36 (28 along k) for addresses, the copy streams and indices: calibrated on ptxas (NVRTC 13, sm_90)
    # over the offered grid and beyond it: 512-thread blocks of 8 x 8 or 16 x 4 thread tiles spill at 128 registers,
    # 1024-thread blocks of 4 x 4 read along k at 64
    def need(p: Params) -> int:
        return p["TM"] * p["TN"] + (4 if p["ALONG_K"] else 2) * p["TM"] + 2 * p["TN"] + (28 if p["ALONG_K"] else 36)

    rules = (
        positive("BM", "BN", "BK", "WM", "WN", "TM", "TN", "STAGES"),
        flag("ALONG_K", "A transposed on the way into shared memory", "A row-major, read along k"),
        Rule("BK must be even (two sets of fragments alternate, across the steps too) and, with ALONG_K = 1, a "
             "multiple of 8 (a lane reads four k-values of a row of A as one float4, and rows of BK + 4 floats, an odd "
             "number of float4s, keep eight consecutive rows on distinct banks)",
             lambda p: p["BK"] % (8 if p["ALONG_K"] else 2) == 0),
        Rule("TN must be a multiple of 4, and so must TM with ALONG_K = 0 (fragments are read as float4s)",
             lambda p: p["TN"] % 4 == 0 and (p["ALONG_K"] or p["TM"] % 4 == 0)),
        *_warp_tiles(threads),
        Rule("the threads must split evenly over the float4 columns of the B tile (BN / 4) and over the columns of the "
             "A tile: its BK / 4 float4 columns with ALONG_K = 1, its BK columns of single floats (whole columns, BM a "
             "multiple of threads / BK) with ALONG_K = 0: each thread copies the same column of every row it takes",
             lambda p: threads(p) % (p["BN"] // 4) == 0 and (
                 threads(p) % (p["BK"] // 4) == 0 if p["ALONG_K"]
                 else threads(p) % p["BK"] == 0 and p["BM"] % (threads(p) // p["BK"]) == 0)),
        at_least_two_stages("buffers in the cp.async pipeline"),
        flag("STREAM", "one block per tile", "stream-K: the tiles left after whole waves shared out along K"),
        Rule("the TM x TN accumulators and the fragments of A and B must fit in the registers each thread can have "
             f"with this many threads ({REGISTER_FILE}), or they spill to local memory",
             lambda p: need(p) <= register_budget(threads(p))),
        *block_limits(threads, lambda p: smem(p) + static_smem(p), dynamic=True),
    )
    return KernelSpec(
        name="pipelined_warp_tiling", source="kernels/10b_pipelined_warp_tiling.cu",
        function="sgemm_pipelined_warp_tiling", title="Warp tiling, cp.async pipeline",
        choices={"BM": (64, 128, 256), "BN": (64, 128, 256), "BK": (8, 16), "WM": (32, 64, 128),
                 "WN": (32, 64, 128), "TM": (4, 8, 16), "TN": (4, 8, 16), "STAGES": (2, 3, 4),
                 "ALONG_K": (0, 1), "STREAM": (0, 1)},
        # the fastest at 4096 and 8192 of chapter 7b's autotuning (records/*/pipelined_warp_tiling.json)
        defaults={"BM": 128, "BN": 256, "BK": 8, "WM": 64, "WN": 64, "TM": 8, "TN": 16, "STAGES": 2, "ALONG_K": 0,
                  "STREAM": 0},
        tile=lambda p: (p["BM"], p["BN"]), threads=threads, smem_bytes=smem, rules=rules,
        chapter="ch07b_pipelined_warp_tiling", min_cc=(8, 0), dynamic_smem=True,
        persistent=lambda p: p["STREAM"] == 1,
        static_smem=static_smem,
        ptxas_options=("--register-usage-level=10",),  # keeps the fragments loaded a k ahead live (see the .cu file)
        notes="warp tiling with tiles copied by cp.async STAGES deep, A transposed by 4-byte copies (ALONG_K 0) or "
              "read along k as float4s (ALONG_K 1), grouped tile order; optional stream-K over the tiles left after "
              "whole waves (STREAM 1; the defaults run STREAM 0)",
    )


MEASURING_CHAPTER = "ch00_measuring"  # the chapter with no kernel of its own: it times cuBLAS and the ceilings
TENSOR_CORES_CHAPTER = "ch08_tensor_cores"  # mma.sync (kernel 11)
WGMMA_CHAPTER = "ch08a_wgmma"  # wgmma (kernel 12)
PRECISION_CHAPTER = "ch08b_precision"  # where the 3xTF32 kernels are introduced
DATA_MOVERS_CHAPTER = "ch08c_data_movers"  # TMA, clusters and mbarriers on mma.sync (kernel 13)


def _mma(name: str, function: str, title: str, split: bool, defaults: dict[str, int], notes: str) -> KernelSpec:
    """mma.sync kernels (11_tf32_mma.cu): warps of whole m16n8k8 tiles, tiles arriving by cp.async STAGES deep."""
    threads = warp_tiled_threads

    def smem(p: Params) -> int:
        return 4 * p["STAGES"] * (p["BM"] * (p["BK"] + 4) + p["BK"] * (p["BN"] + 8))  # padded rows

    copies = 2 if split else 1  # 3xTF32: a per-step sum beside the accumulators, small fragments beside the big

    # accumulators (4 per 16 x 8 tile), two sets of fragments (WM/4 of A and WN/4 of B each; 3xTF32: and the small
    # parts of one), and about 32 for addresses and indices. 3xTF32 with BK = 32: ptxas keeps about one more set
    # live across the longer unrolled step (calibrated on ptxas over the whole offered grid)
    def need(p: Params) -> int:
        return (copies * p["WM"] * p["WN"] // 32 + (copies + 1) * (p["WM"] + p["WN"]) // 4 + 32
                + (split and p["BK"] > 16) * (p["WM"] + p["WN"]) // 4)

    rules = (
        positive("BM", "BN", "BK", "WM", "WN", "STAGES"),
        Rule("WM must be a multiple of 16 and WN of 8 (a warp tile is made of whole 16 x 8 mma tiles)",
             lambda p: p["WM"] % 16 == 0 and p["WN"] % 8 == 0),
        Rule("BK must be a multiple of 16 (each mma.sync multiplies 8 deep, and the fragments of two such k8 slices "
             "alternate in registers)", lambda p: p["BK"] % 16 == 0),
        _divides("WM", "BM", "the warps tile the block's rows"),
        _divides("WN", "BN", "the warps tile the block's columns"),
        Rule("the threads must split evenly over the float4 columns of the A tile (BK / 4) and of the B tile (BN / 4): "
             "each thread copies the same column of every row it takes (TileStream in kernels/cp_async.cuh)",
             lambda p: threads(p) % (p["BK"] // 4) == 0 and threads(p) % (p["BN"] // 4) == 0),
        at_least_two_stages("buffers in the cp.async pipeline"),
        _registers_fit(split, "the fragments of a warp tile", "the registers each thread can have with this many "
                       f"threads ({REGISTER_FILE}), or they spill to local memory", need,
                       lambda p: register_budget(threads(p))),
        *block_limits(threads, smem, dynamic=True),
    )
    return KernelSpec(
        name=name, source="kernels/11_tf32_mma.cu", function=function, title=title,
        choices={"BM": (64, 128, 256), "BN": (64, 128, 256), "BK": (16, 32), "WM": (32, 64), "WN": (32, 64),
                 "STAGES": (2, 3, 4)},
        defaults=defaults, tile=lambda p: (p["BM"], p["BN"]), threads=threads, smem_bytes=smem, rules=rules,
        chapter=PRECISION_CHAPTER if split else TENSOR_CORES_CHAPTER, precision="3xtf32" if split else "tf32",
        notes=notes, min_cc=(8, 0),
        dynamic_smem=True,
    )


def _mma_tma() -> KernelSpec:
    """The mma.sync TF32 kernel fed by TMA (13_tf32_mma_tma.cu): 32-deep steps, B multicast across a cluster."""
    threads = warp_tiled_threads

    def smem(p: Params) -> int:
        return p["STAGES"] * (p["BM"] + p["BN"]) * 128 + 1024 + 16 * p["STAGES"]  # +align, mbarriers

    # accumulators (4 per 8 x 16 tile), two sets of fragments (WM/4 from A and WN/4 from B each), about 24 others
    def need(p: Params) -> int:
        return p["WM"] * p["WN"] // 32 + 2 * (p["WM"] + p["WN"]) // 4 + 24

    rules = (
        positive("BM", "BN", "WM", "WN", "STAGES", "CLUSTER"),
        Rule("WM must be a multiple of 16 (one ldmatrix.x4 reads two 8-row tiles of A) and WN of 32 (a warp reads "
             "whole 32-column boxes of B)", lambda p: p["WM"] % 16 == 0 and p["WN"] % 32 == 0),
        _divides("WM", "BM", "the warps tile the block's rows"),
        _divides("WN", "BN", "the warps tile the block's columns"),
        Rule("BM must be at most 256 (a TMA box has at most 256 rows)", lambda p: p["BM"] <= 256),
        at_least_two_stages("stages of the TMA ring"),
        Rule("CLUSTER must be 1 or 2 and divide the BN / 32 boxes of B (the blocks of a cluster share them out)",
             lambda p: p["CLUSTER"] in (1, 2) and p["BN"] // 32 % p["CLUSTER"] == 0),
        Rule("the accumulators and the fragments of a warp tile must fit in the registers each thread can have "
             f"with this many threads ({REGISTER_FILE}), or they spill to local memory",
             lambda p: need(p) <= register_budget(threads(p))),
        *block_limits(threads, smem, dynamic=True),
    )
    return KernelSpec(
        name="mma_tf32_tma", source="kernels/13_tf32_mma_tma.cu", function="sgemm_tf32_mma_tma",
        title="Tensor cores, mma.sync TF32 fed by TMA",
        choices={"BM": (64, 128, 256), "BN": (128, 256), "WM": (32, 64), "WN": (32, 64), "STAGES": (2, 3, 4),
                 "CLUSTER": (1, 2)},
        # the sweep's fastest (records/*/mma_tf32_tma.json)
        defaults={"BM": 128, "BN": 256, "WM": 64, "WN": 64, "STAGES": 4, "CLUSTER": 2},
        tile=lambda p: (p["BM"], p["BN"]), threads=threads, smem_bytes=smem, rules=rules,
        chapter=DATA_MOVERS_CHAPTER, precision="tf32", min_cc=(9, 0), dynamic_smem=True, arch="sm_90a",
        tma=True, cluster=lambda p: p["CLUSTER"],
        notes="mma.sync m16n8k8 TF32 with tiles copied by Hopper's TMA (one thread, 128-byte swizzle), B multicast "
              "to the CLUSTER blocks of a cluster, mbarrier stages instead of block barriers",
    )


WGMMA_N = (64, 128, 256)  # the wgmma shapes m64nNk8 that kernels/wgmma.cuh instantiates
WGMMA_BK = 32  # K per step of 12_tf32_wgmma.cu (its BK): one 128-byte swizzle row of A's tile


def _wgmma(name: str, function: str, title: str, split: bool, defaults: dict[str, int], notes: str) -> KernelSpec:
    """wgmma kernels (12_tf32_wgmma.cu): one warpgroup per 64 columns of C, each computing C^T = B^T A^T."""
    copies = 2 if split else 1  # 3xTF32 keeps A's tile in big and small parts, and a per-step sum

    def threads(p: Params) -> int:
        return p["BN"] // 64 * 128

    def stage(p: Params) -> int:
        return copies * p["BM"] * 4 * WGMMA_BK + round_up(WGMMA_BK * (p["BN"] + 8) * 4, 1024)

    def smem(p: Params) -> int:
        return p["STAGES"] * stage(p) + 1024  # 1024 more to align the base for the swizzle

    # BM/2 accumulators (and as many per-step sums), two sets of 16 B fragments (and 16 small ones), about 32 others
    def need(p: Params) -> int:
        return copies * p["BM"] // 2 + (copies + 1) * 16 + 32

    rules = (
        Rule(f"BM must be one of {', '.join(map(str, WGMMA_N))} (it is the wgmma's N, and kernels/wgmma.cuh "
             "instantiates these)", lambda p: p["BM"] in WGMMA_N),
        Rule("BN must be a multiple of 64 from 64 to 256 (one warpgroup of 128 threads per 64 columns, 1 to 4 "
             "warpgroups)", lambda p: p["BN"] % 64 == 0 and 64 <= p["BN"] <= 256),
        Rule("STAGES must be at least 3 (the pipeline keeps STAGES - 2 tiles in flight plus the buffer that running "
             "wgmmas still read)", lambda p: p["STAGES"] >= 3),
        _registers_fit(split, "the B fragments", "the registers each thread can have with this many threads "
                       f"({REGISTER_FILE}), or ptxas spills them and serializes the wgmmas", need,
                       lambda p: register_budget(threads(p))),
        *block_limits(threads, smem, dynamic=True),
    )
    return KernelSpec(
        name=name, source="kernels/12_tf32_wgmma.cu", function=function, title=title,
        choices={"BM": WGMMA_N, "BN": (64, 128, 192, 256), "STAGES": (3, 4, 5, 6)},
        defaults=defaults, tile=lambda p: (p["BM"], p["BN"]), threads=threads, smem_bytes=smem, rules=rules,
        chapter=PRECISION_CHAPTER if split else WGMMA_CHAPTER, precision="3xtf32" if split else "tf32",
        notes=notes, min_cc=(9, 0),
        dynamic_smem=True, arch="sm_90a",
    )


HOPPER_CHAPTER = "ch09_hopper_pipeline"
PRODUCER_REGISTERS = 40  # what the producer warpgroup of 14_tf32_wgmma_ws.cu keeps after setmaxnreg


def producer_consumer_threads(p: Params) -> int:
    """Threads of a warp-specialised block: a producer warpgroup and CONSUMERS consumer warpgroups, 128 each."""
    return 128 * (p["CONSUMERS"] + 1)


def consumer_registers(consumers: int) -> int:
    """Registers per consumer thread of 14_tf32_wgmma_ws.cu after setmaxnreg (its WarpRoles): the SM's 64 K less the
    producer's, shared by the consumer warpgroups, in multiples of 8, at most 240."""
    return min(240, (REGISTERS_PER_SM // 128 - PRODUCER_REGISTERS) // consumers // 8 * 8)


def _wgmma_ws(name: str, function: str, title: str, split: bool, defaults: dict[str, int], notes: str) -> KernelSpec:
    """Warp-specialised wgmma kernels (14_tf32_wgmma_ws.cu): a TMA producer warpgroup, CONSUMERS warpgroups of 64
    columns each, mbarrier rings, optionally persistent and clustered, B^T from shared memory (TF32) or registers,
    A split by the producer or the consumers (3xTF32), C stored by every thread or by TMA."""
    threads = producer_consumer_threads
    copies = 2 if split else 1  # 3xTF32 keeps A's tile in big and small parts, and a per-step sum

    def b_copies(p: Params) -> int:
        return 1 + p.get("BSMEM", 0)  # B's boxes, and B^T K-major

    def stage(p: Params) -> int:
        return copies * p["BM"] * 128 + b_copies(p) * p["CONSUMERS"] * 64 * 128  # A, B

    # three mbarriers per stage, two 8 KiB buffers per consumer for TMA stores, +1024 to align
    def smem(p: Params) -> int:
        return p["STAGES"] * (stage(p) + 24) + p["STORE"] * p["CONSUMERS"] * 16384 + 1024

    # BM/2 accumulators and two sets of 16 B fragments (none from shared memory), about 32 others; 3xTF32 adds BM/2
    # per-sum registers, and small parts of the fragments (two sets when a sum spans steps, so that wgmmas still run
    # from one), about 52 others: calibrated on ptxas over the offered grid
    def need(p: Params) -> int:
        if split:
            return p["BM"] + (64 if p["SUM"] > 1 else 48) + 52
        return p["BM"] // 2 + (0 if p["BSMEM"] else 2 * 16) + 32

    rules = (
        positive("BM", "CONSUMERS", "STAGES", "GROUP"),
        Rule(f"BM must be one of {', '.join(map(str, WGMMA_N))} (it is the wgmma's N, and kernels/wgmma.cuh "
             "instantiates these; a TMA box has at most 256 rows)", lambda p: p["BM"] in WGMMA_N),
        Rule("CONSUMERS must be 1 to 3 (warpgroups of 64 columns; with the producer at most 512 threads, so that "
             "each consumer keeps at least 152 registers)", lambda p: 1 <= p["CONSUMERS"] <= 3),
        at_least_two_stages("stages of the TMA ring"),
        Rule("CLUSTER must be 1 or 2 (blocks stacked along M that share B's boxes by multicast)" if split else
             "CLUSTER must be 1, 2 (two blocks stacked along M that share B's boxes by multicast) or -2 (two blocks "
             "side by side along N that share A's rows)", lambda p: p["CLUSTER"] in ((1, 2) if split else (1, 2, -2))),
        flag("PERSIST", "one block per tile", "one block per SM, looping over tiles"),
        flag("STORE", "each thread stores its own outputs", "TMA stores 32-row chunks of C"),
        *((positive("SUM"), flag("SPLITTER", "the producer's idle warps split A's tiles", "the consumers do"))
          if split else
          (flag("BSMEM", "B^T read into registers", "transposed K-major into shared memory by the idle producer warps"),
           Rule("BSMEM = 1 needs BM 128 or 256 (kernels/wgmma_ss.cuh instantiates those)",
                lambda p: not p["BSMEM"] or p["BM"] in (128, 256)))),
        _registers_fit(split, "the B fragments", "the registers a consumer thread gets after setmaxnreg (the SM's "
                       f"65536 less the producer warpgroup's {PRODUCER_REGISTERS} per thread, shared by the "
                       "consumers, at most 240): else ptxas spills them", need,
                       lambda p: consumer_registers(p["CONSUMERS"])),
        *block_limits(threads, smem, dynamic=True),
    )
    # GROUP = 1 (row by row) and the other choices of BSMEM, STORE and SPLITTER validate too: chapter 9's ladder
    # measures them; the explorers offer the bands and the faster choice
    choices = {"BM": WGMMA_N, "CONSUMERS": (1, 2, 3), "STAGES": (2, 3, 4, 6), "CLUSTER": (1, 2), "PERSIST": (0, 1),
               "GROUP": (8,)}
    choices |= {"SUM": (1, 2, 4), "SPLITTER": (defaults["SPLITTER"],)} if split else {"BSMEM": (defaults["BSMEM"],)}
    return KernelSpec(
        name=name, source="kernels/14_tf32_wgmma_ws.cu", function=function, title=title,
        choices={**choices, "STORE": (defaults["STORE"],)},
        defaults=defaults, tile=lambda p: (p["BM"], 64 * p["CONSUMERS"]), threads=threads, smem_bytes=smem,
        rules=rules, chapter=HOPPER_CHAPTER, precision="3xtf32" if split else "tf32", notes=notes, min_cc=(9, 0),
        dynamic_smem=True, arch="sm_90a", tma=True, tma_c=True, cluster=lambda p: abs(p["CLUSTER"]),
        persistent=lambda p: p["PERSIST"] == 1,
    )


OZAKI_CHAPTER = "ch10_ozaki"
# K products of int8 (|r| <= 128) and their sum stay below 2^31: exact in int32 (kernel 15 alone; the Ozaki pipeline
# cuts longer K into chunks, `ozaki.K_CHUNK`)
INT8_MAX_K = 2**17 - 1
# The kernels of kernels/16_ozaki.cu that every instance's cubin carries (the scaling, the equilibration, the estimate
# and SGEMM's infinities and NaNs); MODULI = 0 (auto) launches no products of its own: each call runs the instance of
# the number of moduli it chose.
OZAKI_ANALYSIS = ("ozaki_stats_a", "ozaki_stats_b", "ozaki_equilibrate", "ozaki_rescale_a", "ozaki_rescale_b",
                  "ozaki_extremes", "ozaki_gather_b", "ozaki_sample", "ozaki_decide", "ozaki_nonfinite")


def _ozaki() -> KernelSpec:
    """SGEMM by the Ozaki scheme II (16_ozaki.cu): MODULI INT8 products on kernel 15's pipeline, run in one
    persistent launch between the kernels that scale and split the operands and the one that puts C together."""
    def smem(p: Params) -> int:
        return p["STAGES"] * ((64 * p["CONSUMERS"] + p["BN"]) * 128 + 16) + 1024  # +align

    rules = (
        positive("BN", "CONSUMERS", "STAGES", "CLUSTER", "GROUP"),
        Rule("MODULI must be 0 (auto: the fewest moduli that a per-call estimate finds as accurate as SGEMM) or 6 to "
             "9: fewer leave the integers too few bits for FP32's accuracy, and with more the scaled integers outgrow "
             "the 35 bits the residue kernels split exactly in FP32",
             lambda p: p["MODULI"] == 0 or 6 <= p["MODULI"] <= 9),
        Rule("BN must be 128 or 256 (the wgmma's N: kernels/wgmma_s8.cuh instantiates these)",
             lambda p: p["BN"] in (128, 256)),
        Rule("CONSUMERS must be 1 or 2 (warpgroups of 64 rows: tiles of 64 or 128 rows)", lambda p: p["CONSUMERS"] < 3),
        at_least_two_stages("stages of the TMA ring"),
        Rule("CLUSTER must be 1 or 2 (blocks stacked along M that share B's box by multicast)",
             lambda p: p["CLUSTER"] in (1, 2)),
        Rule("the BN / 2 int32 accumulators and about 40 other registers must fit in what a consumer thread gets "
             f"after setmaxnreg (the SM's 65536 less the producer warpgroup's {PRODUCER_REGISTERS} per thread, shared "
             "by the consumers, at most 240)",
             lambda p: p["BN"] // 2 + 40 <= consumer_registers(p["CONSUMERS"])),
        *block_limits(producer_consumer_threads, smem, dynamic=True),
    )
    return KernelSpec(
        name="ozaki", source="kernels/16_ozaki.cu", function="ozaki_products",
        title="Ozaki scheme II: SGEMM on INT8 tensor cores",
        choices={"MODULI": (0, 7, 8, 9), "BN": (128, 256), "CONSUMERS": (1, 2), "STAGES": (3, 4), "CLUSTER": (1, 2),
                 "GROUP": (8,)},
        defaults={"MODULI": 0, "BN": 256, "CONSUMERS": 2, "STAGES": 4, "CLUSTER": 2, "GROUP": 8},
        tile=lambda p: (64 * p["CONSUMERS"], p["BN"]), threads=producer_consumer_threads, smem_bytes=smem, rules=rules,
        chapter=OZAKI_CHAPTER, precision="ozaki", min_cc=(9, 0), dynamic_smem=True, arch="sm_90a",
        cluster=lambda p: p["CLUSTER"], persistent=lambda p: True,
        companions=lambda p: OZAKI_ANALYSIS + tuple(f"{kernel}<{p['MODULI']}>" for kernel in (
            "ozaki_exponents", "ozaki_residues_a", "ozaki_residues_b", "ozaki_reconstruct") if p["MODULI"]),
        runs=lambda p: (p, *({**p, "MODULI": m} for m in range(6, 10))) if p["MODULI"] == 0 else (p,),  # CANDIDATES
        notes="FP32 products emulated with MODULI exact INT8 tensor-core products of the operands' residues (rows of A "
              "and columns of B scaled to integers by powers of two) and the Chinese remainder theorem",
    )


def _parts(base: KernelSpec, name: str, function: str, title: str, switches: dict[str, tuple[int, ...]],
           rules: tuple[Rule, ...], tile: Params | None = None, **changes) -> KernelSpec:
    """A chapter's step in parts: `base` at one tile (`tile`, else its defaults), with `switches` (each defaulting to
    its first value). Raced at that tile only, it offers no other (the exhaustive tier compiles all it offers)."""
    tile = tile or base.defaults
    return dataclasses.replace(
        base, name=name, function=function, title=title, choices={**{k: (v,) for k, v in tile.items()}, **switches},
        defaults={**tile, **{k: v[0] for k, v in switches.items()}}, rules=(*base.rules, *rules), **changes)


def _pipelined_parts() -> KernelSpec:
    """Chapter 7b's steps in parts (top of 10b_pipelined_warp_tiling.cu), at ptxas' default register level: its lanes
    or kernel 10's (LANES), volatile or plain fragment loads (VOLATILE); both 0: step 1."""
    return _parts(_pipelined_warp_tiling(), "pipelined_parts", "sgemm_pipelined_parts",
                  "Warp tiling, cp.async, step 2 in parts", {"LANES": (0, 1), "VOLATILE": (0, 1)},
                  (flag("LANES", "kernel 10's lanes", "kernel 10b's"), flag("VOLATILE", "plain", "volatile")),
                  ptxas_options=(), notes="kernel 10b at ptxas' default register level")


def _warp_tiling_parts() -> KernelSpec:
    """Chapter 7's warp level in parts (sgemm_warp_tiling_parts), at its table's 8 x 8 tile: the loop without bounds
    checks inside C (LEAN) and the resident blocks asked of ptxas (BLOCKS) as switches."""
    tile = {"BM": 128, "BN": 128, "BK": 8, "WM": 64, "WN": 32, "TM": 8, "TN": 8}
    return _parts(_warp_tiling(), "warp_tiling_parts", "sgemm_warp_tiling_parts", "Warp tiling, warp level in parts",
                  {"LEAN": (0, 1), "BLOCKS": (2, 1)},
                  (flag("LEAN", "checks everywhere", "no checks inside C"),
                   Rule("BLOCKS (blocks per SM asked of ptxas) must be 1 or 2, and 2 only at the table's tile (128 x "
                        "128 x 8, 8 x 8: larger ones spill in half the register file)",
                        lambda p: p["BLOCKS"] == 1 or p["BLOCKS"] == 2 and all(p[k] == v for k, v in tile.items()))),
                  tile, notes="kernel 10, switches")


def _mma_tma_parts() -> KernelSpec:
    """Chapter 8c's change in parts (sgemm_tf32_mma_tma_parts): its tile order (BAND 1: row by row), stage hand-back
    (EMPTY 0: __syncthreads) and cluster as switches."""
    return _parts(_mma_tma(), "mma_tma_parts", "sgemm_tf32_mma_tma_parts", "mma.sync TF32 fed by TMA, in parts",
                  {"CLUSTER": (1, 2), "BAND": (1, 8), "EMPTY": (0, 1)},
                  (positive("BAND"), flag("EMPTY", "__syncthreads", "empty mbarriers"),
                   Rule("EMPTY 0 needs CLUSTER 1: a block barrier cannot free a stage for the cluster's other blocks",
                        lambda p: p["EMPTY"] or p["CLUSTER"] == 1)), notes="kernel 13 with switches")


def _wgmma_ws_parts(base: KernelSpec) -> KernelSpec:
    """Chapter 9's step 1 in parts: kernel 14 at that step, with (PRODUCER 1) or without its producer warpgroup."""
    step1 = {**base.defaults, "CLUSTER": 1, "PERSIST": 0, "GROUP": 1, "STORE": 0}
    return _parts(base, "wgmma_ws_parts", "sgemm_tf32_wgmma_ws_parts", "Hopper pipeline, step 1 in parts",
                  {"PRODUCER": (0, 1)}, (flag("PRODUCER", "a consumer thread copies", "a producer warpgroup"), Rule(
                      "CLUSTER 1, PERSIST 0, STORE 0: step 1's options", lambda p: all(
                          p[k] == step1[k] for k in ("CLUSTER", "PERSIST", "STORE")))), step1,
                  threads=lambda p: 128 * (p["CONSUMERS"] + p["PRODUCER"]), notes="kernel 14 at step 1, switches")


KERNELS: dict[str, KernelSpec] = {
    spec.name: spec
    for spec in (
        _square_block(
            "naive", "sgemm_naive", "kernels/01_naive.cu", "Naive",
            "a warp's lanes take consecutive rows of C: strided, uncoalesced loads of A"),
        _square_block(
            "coalesced", "sgemm_coalesced", "kernels/02_coalesced.cu", "Coalesced",
            "a warp's lanes take consecutive columns of C: coalesced loads of B and stores of C"),
        _smem_tiled(),
        _thread_tile(
            "thread_tile_1d", "kernels/04_thread_tile_1d.cu", "sgemm_thread_tile_1d", "1-D thread tile",
            "BM BN BK TM", "each thread computes TM outputs of a column from registers", "ch03_register_blocking"),
        _thread_tile(
            "thread_tile_2d", "kernels/05_thread_tile_2d.cu", "sgemm_thread_tile_2d", "2-D thread tile",
            "BM BN BK TM TN", "each thread computes a TM x TN tile as outer products in registers",
            "ch03_register_blocking"),
        _thread_tile(
            "vectorized", "kernels/06_vectorized.cu", "sgemm_vectorized", "Vectorized, A transposed",
            "BM BN BK TM TN", "float4 global and shared accesses, A transposed in shared memory", "ch04_vectorized",
            (_multiple_of_4("BK", "TM", "TN"),), bk=32),
        _thread_tile(
            "bank_conflicts", "kernels/07_bank_conflicts.cu", "sgemm_bank_conflicts", "A-tile layouts",
            "BM BN BK TM TN LAYOUT", "the vectorized kernel with its A tile plain, padded or XOR-swizzled",
            "ch05_bank_conflicts", (_multiple_of_4("BK", "TM", "TN"),), bk=32),
        _thread_tile(
            "prefetch", "kernels/08_prefetch.cu", "sgemm_prefetch", "Prefetch, double buffered",
            "BM BN BK TM TN PREFETCH", "the next tiles load into registers while the current ones are multiplied; "
            "two shared buffers, one __syncthreads per step", "ch06_prefetch", (_multiple_of_4("BK", "TM", "TN"),)),
        _thread_tile(
            "multistage", "kernels/09_multistage.cu", "sgemm_multistage", "cp.async pipeline",
            "BM BN BK TM TN STAGES", "cp.async (Ampere and newer) copies STAGES - 1 tiles ahead straight into "
            "shared memory", "ch06_prefetch", (_multiple_of_4("BK", "TM", "TN"),), min_cc=(8, 0)),
        _warp_tiling(),
        _pipelined_warp_tiling(),
        _mma(
            "mma_tf32", "sgemm_tf32_mma", "Tensor cores, mma.sync TF32", False,
            # the sweep's fastest at 8192 (its records)
            {"BM": 128, "BN": 256, "BK": 32, "WM": 64, "WN": 64, "STAGES": 3},
            "mma.sync m16n8k8 (Ampere and newer) on TF32 operands: the tensor cores read the FP32 bits and drop 13 "
            "mantissa bits; cp.async pipeline into dynamic shared memory"),
        _mma(
            "mma_3xtf32", "sgemm_3xtf32_mma", "Tensor cores, mma.sync 3xTF32", True,
            # the sweep's fastest at 8192 (its records)
            {"BM": 64, "BN": 128, "BK": 16, "WM": 32, "WN": 64, "STAGES": 4},
            "mma.sync m16n8k8 (Ampere and newer), each operand split into big + small TF32 parts and three "
            "products summed: FP32-level accuracy from the tensor cores",
        ),
        _mma_tma(),
        _wgmma(
            "wgmma_tf32", "sgemm_tf32_wgmma", "Tensor cores, Hopper wgmma TF32", False,
            {"BM": 128, "BN": 256, "STAGES": 4},  # the sweep's fastest at 4096 and 8192 (its records)
            "wgmma, Hopper's warpgroup MMA: asynchronous 64 x BM x 8 TF32 products of A in swizzled shared memory "
            "and B in registers, one warpgroup per 64 columns",
        ),
        _wgmma(
            "wgmma_3xtf32", "sgemm_3xtf32_wgmma", "Tensor cores, Hopper wgmma 3xTF32", True,
            {"BM": 128, "BN": 128, "STAGES": 4},  # the sweep's fastest at 4096 and 8192 (its records)
            "wgmma, Hopper's warpgroup MMA, with 3xTF32: big and small TF32 parts of each operand, three products "
            "per step, FP32-level accuracy",
        ),
        _wgmma_ws(
            "wgmma_ws_tf32", "sgemm_tf32_wgmma_ws", "Hopper pipeline, warp-specialised wgmma TF32", False,
            {"BM": 256, "CONSUMERS": 2, "STAGES": 4, "CLUSTER": 2, "PERSIST": 1, "GROUP": 8, "BSMEM": 0, "STORE": 1},
            "wgmma TF32 fed by a producer warpgroup through TMA and mbarrier rings (setmaxnreg gives its registers to "
            "the consumers), persistent over the tiles, B multicast across a 2-block cluster, C stored by TMA",
        ),
        _wgmma_ws(
            "wgmma_ws_3xtf32", "sgemm_3xtf32_wgmma_ws", "Hopper pipeline, warp-specialised wgmma 3xTF32", True,
            {"BM": 128, "CONSUMERS": 2, "STAGES": 4, "CLUSTER": 2, "PERSIST": 1, "GROUP": 8, "SUM": 1, "SPLITTER": 0,
             "STORE": 0},
            "the warp-specialised wgmma pipeline with 3xTF32: the producer's idle warps split A's tiles into big and "
            "small TF32 parts as they land, three products per k8, summed SUM 32-deep steps at a time before an FP32 "
            "add: FP32-level accuracy",
        ),
        _ozaki(),
        dataclasses.replace(  # last, so that the kernels above keep their colours: chapter 4's step in parts, raced
            _thread_tile(     # at chapter 4's tile only: it offers that and a small odd one (as _pipelined_parts)
                "vectorized_parts", "kernels/06_vectorized.cu", "sgemm_vectorized_parts", "Vectorized, in parts",
                "BM BN BK TM TN SPACED_B TRANSPOSED_A", "float4 copies; A's tile as its rows lie (TRANSPOSED_A 0) or "
                "transposed; B's fragment reads side by side (SPACED_B 0) or spaced", "ch04_vectorized",
                (_multiple_of_4("BK", "TM", "TN"),), bk=32),
            choices={"BM": (64, 128), "BN": (64, 128), "BK": (8, 32), "TM": (4, 8), "TN": (8,), "SPACED_B": (0, 1),
                     "TRANSPOSED_A": (0, 1)}),
        _pipelined_parts(),  # chapter 7b's steps part by part
        _mma_tma_parts(),  # chapter 8c's change part by part
        _warp_tiling_parts(),  # chapter 7's warp level part by part
    )
}
KERNELS["wgmma_ws_parts"] = _wgmma_ws_parts(KERNELS["wgmma_ws_tf32"])  # chapter 9's step 1 part by part


