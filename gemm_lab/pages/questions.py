"""Predict, then measure: the book's questions with answers computed by the same models the chapters use.

Each question states its givens (from the catalog, the offline compiler, the device record and the memory probes'
record, so they follow the GPU whose records replay, or the live one), and `answer(name, value)` says whether a
reader's number is right, showing the reasoning that reaches the answer. A page asks (`ask`), lets the reader type a
number into a cell, and then shows what the hardware measured.
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass

from .. import catalog
from ..models import banks, hardware, memory, model
from ..precision import ozaki
from ..spec import ceil_div
from . import prose
from .prose import counted
from .tables import Markdown


@dataclass(frozen=True)
class Question:
    """A question (`ask()`: its text with the givens filled in), its unit, and `solve()`: the answer and the
    reasoning that reaches it. A reader's number is right within `rel_tol` of the answer."""

    name: str
    chapter: str
    ask: Callable[[], str]
    unit: str
    solve: Callable[[], tuple[float, str]]
    rel_tol: float = 0.02


def _spec(name: str) -> tuple[catalog.KernelSpec, dict[str, int]]:
    spec = catalog.get(name)
    return spec, spec.full_params()


OCCUPANCY_KERNEL = "prefetch"  # the primer works chapter 4's kernel through; its exercise takes chapter 6's
LITTLE_KERNEL = "warp_tiling"  # Little's law takes chapter 7's warps: its answer must not give the occupancy's away


def _resident(kernel: str = OCCUPANCY_KERNEL) -> tuple[catalog.KernelSpec, dict[str, int], dict, model.SMLimits]:
    """A kernel at its defaults, what fits of it on one SM, and that SM's limits."""
    spec, p = _spec(kernel)
    sm = memory.sm_limits(memory.find())
    return spec, p, model.resident(spec, p, sm), sm


def _occupancy() -> tuple[float, str]:
    _, _, r, _ = _resident()
    how = ", ".join(f"{k} {v}" for k, v in r["limits"].items())
    return r["blocks"], (f"The blocks each limit allows on its own: {how}. The smallest wins: {r['blocks']} blocks "
                         f"per SM ({r['warps']} warps), held back by {r['limited_by']} (registers are allocated in "
                         "multiples of 8 per thread).")


def _occupancy_ask() -> str:
    spec, p, r, sm = _resident()
    return (f"Chapter 6's kernel at its defaults runs {spec.threads(p)} threads per block with {r['registers']} "
            f"registers each and {spec.smem_bytes(p):,} bytes of shared memory per block. An SM holds "
            f"{sm.registers:,} registers, {sm.threads:,} threads, {sm.smem_bytes:,} bytes of shared memory (and keeps "
            f"{sm.smem_reserved_per_block:,} of them per block) and at most {sm.blocks} blocks. How many blocks of it "
            "fit on one SM?")


def _littles_law() -> tuple[float, str]:
    rec, ceil = memory.find(), hardware.ceilings()
    if rec is None:
        raise LookupError("the memory probes are not recorded on this GPU: run `gemm-lab record --only memory`")
    gbs, ns = rec.bandwidth_of("DRAM")["gbs"], rec.latency_of("DRAM")["ns"]
    warps = _resident(LITTLE_KERNEL)[2]["warps"]
    per_sm = gbs * ns / ceil["sms"]
    per_warp = per_sm / warps
    return per_warp, (f"In flight = bandwidth x latency = {gbs:,.0f} GB/s x {ns:.0f} ns = {gbs * ns / 1024:,.0f} KiB "
                      f"for the GPU, {per_sm / 1024:.1f} KiB for each of its {ceil['sms']} SMs, shared by {warps} "
                      f"warps: {per_warp:,.0f} bytes each, {per_warp / memory.WARP_FLOAT4:.1f} warp-wide float4 loads "
                      "on their way at every moment, or DRAM idles.")


def _littles_law_ask() -> str:
    rec, ceil = memory.find(), hardware.ceilings()
    if rec is None:
        return "(The memory probes are not recorded on this GPU yet.)"
    spec, p, r, _ = _resident(LITTLE_KERNEL)
    return (f"DRAM on {rec.gpu} answers a load in {rec.latency_of('DRAM')['ns']:.0f} ns and streams "
            f"{rec.bandwidth_of('DRAM')['gbs']:,.0f} GB/s to its {ceil['sms']} SMs. Chapter 7's kernel keeps "
            f"{r['warps']} warps on each SM ({r['blocks']} block{'s' if r['blocks'] > 1 else ''} of "
            f"{spec.threads(p) // 32}). How many bytes of loads must each of those warps keep in flight to keep DRAM "
            "busy?")


def _peak() -> tuple[float, str]:
    c = hardware.ceilings()
    tflops = c["sms"] * c["fp32_lanes_per_sm"] * 2 * c["clock_mhz"] / 1e6
    return tflops, (f"{c['sms']} SMs x {c['fp32_lanes_per_sm']} FP32 lanes x 2 FLOP per FFMA x {c['clock_mhz']:,.0f} "
                    f"MHz = {tflops:.1f} TFLOP/s.")


def _at_peak() -> tuple[float, str]:
    tflops, _ = _peak()
    ms = model.flops(8192, 8192, 8192) / (tflops * 1e12) * 1e3
    return ms, f"2 x 8192³ = {model.flops(8192, 8192, 8192):.3g} FLOP at {tflops:.1f} TFLOP/s take {ms:.1f} ms."


def _sectors(lanes_apart_bytes: int) -> tuple[float, str]:
    sectors = 32 if lanes_apart_bytes >= 32 else math.ceil(32 * lanes_apart_bytes / 32)
    return sectors, (f"Neighbouring lanes read addresses {lanes_apart_bytes} bytes apart, so the 32 floats fall in "
                     f"{sectors} sectors of 32 bytes.")


def _smem_intensity() -> tuple[float, str]:
    spec, p = _spec("smem_tiled")
    bm, bn = spec.tile(p)
    value = bm * bn / (2 * (bm + bn))
    return value, (f"Per BK-deep step a block loads (BM + BN) x BK floats = 4 (BM + BN) BK bytes and does "
                   f"2 BM BN BK FLOP: BM BN / (2 (BM + BN)) = {bm} x {bn} / (2 x {bm + bn}) = {value:g} FLOP per byte.")


SMEM_TILE = {"BM": 64, "BN": 16, "BK": 8}  # not the default: chapter 2 prints the default's shared memory above


def _smem_bytes() -> tuple[float, str]:
    spec = catalog.get("smem_tiled")
    p = spec.full_params(SMEM_TILE)
    return spec.smem_bytes(p), (f"As is BM x BK and Bs BK x BN floats: 4 x ({p['BM']} x {p['BK']} + {p['BK']} x "
                                f"{p['BN']}) = {spec.smem_bytes(p):,} bytes.")


def _loads_tile() -> tuple[dict[str, int], dict[str, int]]:
    """The default 2-D thread tile (chapter 3's figure draws it, with its loads and FFMAs) and the tile of as many
    outputs, half as tall and twice as wide, that the question asks about."""
    _, p = _spec("thread_tile_2d")
    return p, {"TM": p["TM"] // 2, "TN": p["TN"] * 2, "n": p["TM"] * p["TN"]}


def _loads_per_ffma() -> tuple[float, str]:
    p, q = _loads_tile()
    value, default = (q["TM"] + q["TN"]) / (q["TM"] * q["TN"]), (p["TM"] + p["TN"]) / (p["TM"] * p["TN"])
    return value, (f"Per k a thread reads TM + TN = {q['TM'] + q['TN']} values and does TM x TN = "
                   f"{q['TM'] * q['TN']} FFMAs: {value:g} loads per FFMA. The default {p['TM']} x {p['TN']} tile "
                   f"reads {p['TM'] + p['TN']} for as many FFMAs, {default:g} per FFMA: for a given number of outputs "
                   "the square tile loads least.")


def _register_floor() -> tuple[float, str]:
    spec, p = _spec("thread_tile_2d")
    f = model.register_floor(spec, p)
    return f["accumulators"] + f["fragments"], (
        f"TM x TN = {f['accumulators']} accumulators and TM + TN = {f['fragments']} fragment values: "
        f"{f['accumulators'] + f['fragments']} registers before any address or index.")


def _float4_loads() -> tuple[float, str]:
    spec, p = _spec("vectorized")
    value = p["BM"] * p["BK"] / 4 / spec.threads(p)
    return value, (f"The A tile is BM x BK = {p['BM'] * p['BK']:,} floats, {p['BM'] * p['BK'] // 4:,} float4s, shared "
                   f"by {spec.threads(p)} threads: {value:g} each per step.")


def _store_wavefronts(layout: int) -> tuple[float, str]:
    _, p = _spec("bank_conflicts")
    row = p["BM"] + catalog.a_pad({"LAYOUT": layout})
    store = next(a for a in banks.sites("bank_conflicts", {"LAYOUT": layout}) if a.store and a.width == 4)
    return store.wavefronts, (f"Lane (j, c) writes word c x {row} + j of As, on bank (c x {row} + j) mod 32: the "
                              f"warp's 32 words land on {len(set(store.banks()))} distinct banks, and the busiest bank "
                              f"holds {store.wavefronts} of them, one wavefront each.")


ISSUE_PARAMS = {"WN": 32, "TN": 8}  # chapter 7's 16-warp instance with 8 x 8 thread tiles (its "Try it")


def _issue_loop() -> tuple[dict[str, int], int, int]:
    """The issue exercise's instance, and the FFMAs and instructions of its compiled main loop."""
    from ..models import sass

    spec = catalog.get("warp_tiling")
    p = spec.full_params(ISSUE_PARAMS)
    body = sass.main_loop(spec, p)
    return p, body.count("FFMA"), len(body)


def _predicted_speed_givens() -> tuple[dict[str, int], int, int, float]:
    """The prediction's instance, the FFMAs and instructions of its main loop, and the share of issue slots the
    default instance used, as Nsight Compute counted it at 4096 (recorded: a question does not run ncu)."""
    from ..models import issue_rate

    p, ffma, total = _issue_loop()
    default = catalog.get("warp_tiling").full_params()
    row = hardware.recorded_counters("warp_tiling", default, (4096,) * 3)
    if row is None:
        raise LookupError("chapter 7's counters are not recorded on this GPU: run `gemm-lab record --only counters`")
    return p, ffma, total, row["metrics"][issue_rate.ISSUE_BUSY] / 100


def _predicted_speed_ask() -> str:
    p, ffma, total, busy = _predicted_speed_givens()
    c = hardware.ceilings()
    return (f"Chapter 7's kernel with {p['TM']} x {p['TN']} thread tiles in a {p['BM']} x {p['BN']} block (WM = "
            f"{p['WM']}, WN = {p['WN']}) compiles to a main loop of {total:,} instructions, {ffma:,} of them FFMAs. "
            f"Each of the GPU's {c['sms']} SMs issues at most 4 warp instructions per clock, at {c['clock_mhz']:,.0f} "
            f"MHz, and an FFMA does 32 lanes x 2 FLOP. The chapter's default instance issued in "
            f"{100 * busy:.0f}\u00a0% of its slots at 4096 (Nsight Compute). Predict this instance's speed at 4096, "
            "in TFLOP/s, if it issues in as many of its slots.")


def _predicted_speed() -> tuple[float, str]:
    p, ffma, total, busy = _predicted_speed_givens()
    c = hardware.ceilings()
    issue = model.speed_of_light("warp_tiling", p, 4096, c)["issue"]
    all_ffma = 4 * 32 * 2 * c["sms"] * c["clock_mhz"] / 1e6
    return issue.tflops * busy, (
        f"If every instruction were an FFMA: 4 x 32 x 2 FLOP x {c['sms']} SMs x {c['clock_mhz']:,.0f} MHz = "
        f"{all_ffma:.1f} TFLOP/s, the FP32 peak. Only {ffma:,} of {total:,} are: a share of {ffma / total:.3f}, so "
        f"issue caps the kernel at {all_ffma:.1f} x {ffma / total:.3f} = {issue.tflops:.1f} TFLOP/s (its issue "
        f"ceiling). Issuing in {100 * busy:.0f}\u00a0% of the slots: {issue.tflops:.1f} x {busy:.3f} = "
        f"{issue.tflops * busy:.1f} TFLOP/s.")


def _warps() -> tuple[float, str]:
    spec, p = _spec("warp_tiling")
    return spec.threads(p) // 32, (f"(BM / WM) x (BN / WN) = ({p['BM']} / {p['WM']}) x ({p['BN']} / {p['WN']}) = "
                                   f"{spec.threads(p) // 32} warps.")


def _stream_k_givens() -> tuple[dict[str, int], int, int, int]:
    """Kernel 10b's default at 4096: its parameters, tiles, k-steps per tile and resident slots."""
    spec, p = _spec("pipelined_warp_tiling")
    slots = hardware.ceilings()["sms"] * model.resident(spec, p)["blocks"]
    return p, math.prod(spec.grid(p, 4096, 4096)), ceil_div(4096, p["BK"]), slots


def _stream_k_steps() -> tuple[float, str]:
    _, tiles, steps, slots = _stream_k_givens()
    shared = tiles % slots
    value = shared * steps / slots
    return value, (f"{tiles} tiles make {tiles // slots} whole waves of {slots} and leave {tiles} mod {slots} = "
                   f"{shared} tiles over: {shared} x {steps} = {shared * steps:,} k-steps, shared by {slots} blocks, "
                   f"about {value:.0f} each (a run may span two tiles).")


WAVEFRONT_PARAMS = {"BN": 128, "WN": 32, "TN": 8}  # kernel 10b, 8 x 8 thread tiles: not the instance its page counts


def _wavefront_instance() -> dict[str, int]:
    return catalog.get("pipelined_warp_tiling").full_params(WAVEFRONT_PARAMS)


def _wavefronts_per_k() -> tuple[float, str]:
    from ..models.banks import SHARED_AT, fragment_loads, lds128_wavefronts

    loads = {operand: (float4s, per_k) for operand, float4s, per_k in
             fragment_loads("pipelined_warp_tiling", _wavefront_instance())}
    (a, na), (b, nb) = loads["A"], loads["B"]
    wa, wb = lds128_wavefronts(a), lds128_wavefronts(b)
    value = na * wa + nb * wb
    return value, (f"In one load a quarter-warp reads {len(set(a[:8]))} distinct float4s of A and {len(set(b[:8]))} of "
                   f"B. At most {SHARED_AT}: the two quarter-warps of a half-warp share a wavefront; more: one "
                   f"wavefront each. So a load of A takes {wa} wavefronts and a load of B {wb}; per k: {na} x {wa} + "
                   f"{nb} x {wb} = {value} wavefronts.")


def _double_buffer_smem() -> tuple[float, str]:
    spec, p = _spec("prefetch")
    one = spec.smem_bytes({**p, "PREFETCH": 0})
    return spec.smem_bytes(p), (f"One buffer holds the A and B tiles, 4 x ({p['BM']} x {p['BK']} + {p['BK']} x "
                                f"{p['BN']}) = {one:,} bytes; PREFETCH = 1 keeps two: {2 * one:,} bytes.")


def _mma_flop(m: int, n: int, k: int, what: str) -> tuple[float, str]:
    return 2 * m * n * k, (f"{what} multiplies A ({m} x {k}) by B ({k} x {n}) into C ({m} x {n}): {m} x {n} x {k} = "
                           f"{m * n * k:,} multiply-adds of 2 FLOP each, {2 * m * n * k:,} FLOP.")


MMA_M, MMA_N, MMA_K = 16, 8, 8  # mma.sync m16n8k8: A's tile is MMA_M rows, MMA_K deep


def _mma_clocks() -> tuple[float, str]:
    """Clocks a tensor core spends on one mma.sync m16n8k8 at the measured peak (timed at the boost clock)."""
    ceil, (flop, work) = hardware.ceilings(), _mma_flop(MMA_M, MMA_N, MMA_K, "One mma.sync.m16n8k8")
    cores = ceil["sms"] * catalog.SCHEDULERS_PER_SM
    per_clock = ceil["mma_sync_tf32_gflops"] * 1e9 / (cores * ceil["clock_mhz"] * 1e6)
    return flop / per_clock, (
        f"{work} At {ceil['mma_sync_tf32_gflops'] / 1e3:.1f} TFLOP/s over {ceil['sms']} x "
        f"{catalog.SCHEDULERS_PER_SM} = {cores} tensor cores at {ceil['clock_mhz']:,.0f} MHz, a tensor core does "
        f"{per_clock:.0f} FLOP a clock: {flop:,} / {per_clock:.0f} = {flop / per_clock:.1f} clocks per mma.sync.")


def _mma_clocks_ask() -> str:
    ceil = hardware.ceilings()
    return (f"The peak probe ran mma.sync.m16n8k8 at {ceil['mma_sync_tf32_gflops'] / 1e3:.1f} TFLOP/s on {ceil['sms']} "
            f"SMs at {ceil['clock_mhz']:,.0f} MHz; an SM has {catalog.SCHEDULERS_PER_SM} tensor cores, one per "
            "quarter. How many clocks does a tensor core spend on one mma.sync?")


FRAGMENT_ELEMENT = (43, 21)  # chapter 8's question: an element of a warp's A block, outside the one tile drawn


def _fragment_block() -> tuple[int, int]:
    """The A block a warp of kernel 11 multiplies per BK-deep step: its WM rows, BK deep."""
    p = _spec("mma_tf32")[1]
    row, col = FRAGMENT_ELEMENT
    if not (row < p["WM"] and col < p["BK"] and (row >= MMA_M or col >= MMA_K)):
        raise ValueError(f"A[{row}][{col}] must lie in kernel 11's {p['WM']} x {p['BK']} block, outside its first "
                         "tile (the one the picture labels)")
    return p["WM"], p["BK"]


def _fragment_lane() -> tuple[float, str]:
    row, col = FRAGMENT_ELEMENT
    r, c = row % MMA_M, col % MMA_K
    g, t = r % 8, c % 4
    return 4 * g + t, (f"Row {row} lies in the tile of rows {row - r} to {row - r + MMA_M - 1}, as its row {r}; "
                       f"column {col} in the tile of columns {col - c} to {col - c + MMA_K - 1}, as its column {c}. "
                       f"Row {r} is {'g + 8' if r >= 8 else 'g'} with g = {g}, column {c} is "
                       f"{'t + 4' if c >= 4 else 't'} with "
                       f"t = {t}: lane 4 x {g} + {t} = {4 * g + t}, in its register {(r // 8) + 2 * (c // 4)} for "
                       "that tile.")


def _fragment_lane_ask() -> str:
    (rows, cols), (row, col) = _fragment_block(), FRAGMENT_ELEMENT
    return (f"Per {cols}-deep step a warp of kernel 11 multiplies a {rows} x {cols} block of A as "
            f"{rows // MMA_M} x {cols // MMA_K} mma tiles of {MMA_M} x {MMA_K}, each laid out as in the fragment "
            f"picture. Which lane holds the block's A[{row}][{col}]?")


WGMMA_ACCUMULATORS_BM = max(catalog.WGMMA_N)  # chapter 8a draws its defaults; the question asks for the largest


def _wgmma_accumulators() -> tuple[float, str]:
    bm = WGMMA_ACCUMULATORS_BM
    return 64 * bm // 128, (f"One wgmma m64n{bm}k8 adds into a 64 x {bm} tile: {64 * bm:,} FP32 values spread over the "
                            f"warpgroup's 128 threads, {64 * bm // 128} each (16 rows per warp, {16 * bm // 32} values "
                            f"per lane). They stay in registers for the whole K loop: of the "
                            f"{catalog.MAX_REGISTERS_PER_THREAD} registers a thread can have, that leaves little for "
                            "fragments and addresses.")


# The instances the stage and arrival questions ask about: not the defaults, whose answers the chapters' pictures show.
TMA_STAGE_INSTANCE = {"BN": 128}  # kernel 13 (chapter 8c draws BN = 256)
EMPTY_ARRIVALS_INSTANCE = {"CONSUMERS": 1}  # kernel 14 (chapter 9 draws two consumer warpgroups)


def _instance(name: str, change: dict[str, int]) -> tuple[catalog.KernelSpec, dict[str, int]]:
    spec, p = _spec(name)
    return spec, {**p, **change}


def _tma_stage_bytes() -> tuple[float, str]:
    spec, p = _instance("mma_tf32_tma", TMA_STAGE_INSTANCE)
    bm, bn = spec.tile(p)
    return 4 * 32 * (bm + bn), (f"A's box is {bm} x 32 floats = {bm * 128:,} bytes and B's {bn // 32} boxes of 32 x 32 "
                                f"floats {bn * 128:,} bytes (with CLUSTER = {p['CLUSTER']}, the partner's multicast "
                                f"boxes land here too): {4 * 32 * (bm + bn):,} bytes, which thread 0 announces with "
                                "mbarrier.arrive.expect_tx before it issues the copies.")


FULL_PARITY_STEP = 9  # the step chapter 8c's parity question asks about


def _full_parity() -> tuple[float, str]:
    _, p = _spec("mma_tf32_tma")
    i, stages = FULL_PARITY_STEP, p["STAGES"]
    return (i // stages) & 1, (f"Step {i} uses stage {i} % {stages} = {i % stages} on trip {i} / {stages} = "
                               f"{i // stages} round the ring (trips count from 0): that stage's full barrier has "
                               f"completed {counted(i // stages, 'phase')} before this one, so the warps wait for "
                               f"phase {i // stages}, parity {i // stages} mod 2 = {(i // stages) & 1}.")


def _tf32_roundoff() -> tuple[float, str]:
    return 2.0**-11, ("TF32 keeps 10 of FP32's 23 mantissa bits (11 with the implicit one), so rounding to nearest "
                      "errs by at most half a unit in the last place: 2⁻¹¹, about 4.9e-4 of the value.")


THIRD_CONSUMER = 3  # chapter 9's register question: kernel 14 with a third consumer warpgroup (it draws two)


def _consumer_registers_ask() -> str:
    return (f"setmaxnreg leaves kernel 14's producer warpgroup {catalog.PRODUCER_REGISTERS} registers a thread and "
            f"gives the consumers the rest of the SM's {catalog.REGISTERS_PER_SM:,}, in multiples of 8 a thread. With "
            f"{THIRD_CONSUMER} consumer warpgroups of 128 threads, how many registers does each consumer thread get?")


def _consumer_registers() -> tuple[float, str]:
    spec, p = _instance("wgmma_ws_tf32", {"CONSUMERS": THIRD_CONSUMER})
    regs = catalog.consumer_registers(THIRD_CONSUMER)
    share = (catalog.REGISTERS_PER_SM / 128 - catalog.PRODUCER_REGISTERS) / THIRD_CONSUMER
    try:
        catalog.validate(spec, p)
        verdict = f"which fit in {regs}."
    except ValueError:
        verdict = (f"more than {regs}: the catalog refuses the instance before anything compiles (ptxas would spill "
                   "them).")
    return regs, (f"({catalog.REGISTERS_PER_SM:,} / 128 - {catalog.PRODUCER_REGISTERS}) / {THIRD_CONSUMER} = "
                  f"{share:.1f}, down to a multiple of 8: {regs}. At BM = {p['BM']} a consumer thread needs its "
                  f"{p['BM'] // 2} accumulators, two sets of B's fragments and its addresses, {verdict}")


def _stages(spec: catalog.KernelSpec, p: dict[str, int]) -> tuple[int, int]:
    """Bytes of shared memory one more stage adds to a block of `spec`, and the bytes it needs besides its stages."""
    one, two = (spec.smem_bytes({**p, "STAGES": s}) for s in (1, 2))
    return two - one, 2 * one - two


def _stages_fit_ask() -> str:
    spec, p = _spec("wgmma_ws_tf32")
    stage, fixed = _stages(spec, p)
    return (f"At its defaults a stage of kernel 14 takes {stage:,} bytes of shared memory (its boxes of A and B and "
            f"three mbarriers), and a block needs {fixed:,} bytes besides its stages (buffers for the TMA stores of C, "
            f"and room to align). A block may use at most {catalog.DYNAMIC_SMEM_LIMIT:,} bytes of shared memory. How "
            "many stages fit?")


def _stages_fit() -> tuple[float, str]:
    spec, p = _spec("wgmma_ws_tf32")
    stage, fixed = _stages(spec, p)
    fit = max(s for s in range(1, 64) if spec.smem_bytes({**p, "STAGES": s}) <= catalog.DYNAMIC_SMEM_LIMIT)
    return fit, (f"({catalog.DYNAMIC_SMEM_LIMIT:,} - {fixed:,}) / {stage:,} = "
                 f"{(catalog.DYNAMIC_SMEM_LIMIT - fixed) / stage:.2f}, so {fit} whole stages fit: "
                 f"{spec.smem_bytes({**p, 'STAGES': fit}):,} bytes in all; one more would need "
                 f"{spec.smem_bytes({**p, 'STAGES': fit + 1}):,}.")


def _empty_arrivals_ask() -> str:
    p = _instance("wgmma_ws_tf32", EMPTY_ARRIVALS_INSTANCE)[1]
    return (f"With {counted(p['CONSUMERS'], 'consumer warpgroup')} and clusters of {p['CLUSTER']} blocks (the picture "
            "above has the defaults' two consumers), how many arrivals does a stage's empty barrier count before the "
            "producer may refill it?")


def _empty_arrivals() -> tuple[float, str]:
    _, p = _instance("wgmma_ws_tf32", EMPTY_ARRIVALS_INSTANCE)
    count = p["CONSUMERS"] * 4 * p["CLUSTER"]
    return count, (f"Every consumer warp of every block of the cluster reads the stage (B arrives by multicast in "
                   f"both): {counted(p['CONSUMERS'], 'consumer')} x 4 warps x {p['CLUSTER']} blocks = {count} "
                   "arrivals.")


def _crt() -> tuple[float, str]:
    moduli, residues = (3, 5, 7), (2, 3, 2)
    x = next(v for v in range(105) if all(v % p == r for p, r in zip(moduli, residues)))
    return x, (f"Of 0..104 only {x} leaves {residues} after division by {moduli} ({x} = 7 x 3 + 2 = 4 x 5 + 3 = 3 x 7 "
               "+ 2); the CRT weights find it without a search: 2 x 70 + 3 x 21 + 2 x 15 = 233, and 233 mod 105 = 23.")


def _bits() -> tuple[float, str]:
    bits = math.log2(ozaki.product(8))
    return bits, (f"P = {' x '.join(map(str, ozaki.MODULI[:8]))}, and log₂ P = {bits:.1f}: the residues pin down any "
                  f"integer in a range of P values, about {bits:.0f} bits (one of them for the sign).")


QUESTIONS = {q.name: q for q in (
    Question("occupancy", "gpu_primer", _occupancy_ask, "blocks", _occupancy, 0),
    Question("littles_law", "gpu_primer", _littles_law_ask, "bytes", _littles_law, 0.05),
    Question("fp32_peak", "ch00_measuring", lambda: (
        "An SM has {lanes} FP32 lanes, each doing one fused multiply-add (2 FLOP) per clock; this GPU has {sms} SMs "
        "at a boost clock of {mhz:,.0f} MHz. What is its FP32 peak, in TFLOP/s?").format(
        lanes=hardware.ceilings()["fp32_lanes_per_sm"], sms=hardware.ceilings()["sms"],
        mhz=hardware.ceilings()["clock_mhz"]), "TFLOP/s", _peak),
    Question("time_at_peak", "ch00_measuring", lambda: "How many milliseconds does an 8192 x 8192 x 8192 SGEMM take at "
             "the FP32 peak of the exercise above?", "ms", _at_peak),
    Question("naive_sectors", "ch01_naive_coalesced", lambda: (
        "In the naive kernel a warp's 32 lanes take 32 consecutive rows of C. When they all read A[row][k] (A "
        "row-major, K = 4096 floats per row), how many 32-byte sectors does that one load touch?"), "sectors",
        lambda: _sectors(4096 * 4), 0),
    Question("coalesced_sectors", "ch01_naive_coalesced", lambda: (
        "In the coalesced kernel the lanes take 32 consecutive columns. When they read B[k][col], how many 32-byte "
        "sectors does the load touch?"), "sectors", lambda: _sectors(4), 0),
    Question("tile_intensity", "ch02_smem_tiling", lambda: (
        "A block of chapter 2's kernel at its defaults ({bm} x {bn} tile of C) loads its A and B tiles once per "
        "BK-deep step. How many FLOP does it do per byte it loads from global memory?").format(
        bm=_spec("smem_tiled")[1]["BM"], bn=_spec("smem_tiled")[1]["BN"]), "FLOP/byte", _smem_intensity),
    Question("tile_smem", "ch02_smem_tiling", lambda: (
        "How many bytes of shared memory does a block of chapter 2's kernel use at BM = {BM}, BN = {BN}, BK = {BK}?"
    ).format(**SMEM_TILE), "bytes", _smem_bytes, 0),
    Question("loads_per_ffma", "ch03_register_blocking", lambda: (
        "A thread of chapter 3's 2-D kernel could compute its {n} outputs as a TM x TN = {TM} x {TN} tile instead of "
        "the default's. How many shared-memory loads would it make per FFMA?").format(
        **_loads_tile()[1]), "loads per FFMA", _loads_per_ffma),
    Question("register_floor", "ch03_register_blocking", lambda: (
        "Such a thread keeps its TM x TN results in registers for the whole kernel, and the operands of one step k "
        "of its outer product while that step runs. How many registers must it hold at least, before any address or "
        "loop index?"),
        "registers", _register_floor, 0),
    Question("float4_loads", "ch04_vectorized", lambda: (
        "Chapter 4's kernel at its defaults (BM = {BM}, BK = {BK}, {threads} threads) copies its A tile as float4s. "
        "How many float4 loads of A does each thread make per BK-deep step?").format(
        threads=catalog.get("vectorized").threads(_spec("vectorized")[1]), **_spec("vectorized")[1]),
        "loads", _float4_loads, 0),
    Question("float4_sectors", "ch04_vectorized", lambda: (
        "A warp's float4 load of 32 consecutive float4s: how many 32-byte sectors does it touch?"), "sectors",
        lambda: (16, "32 lanes x 16 bytes = 512 consecutive bytes, 16 sectors of 32: every byte fetched is used."), 0),
    Question("plain_store", "ch05_bank_conflicts", lambda: (
        "In the transposing store each lane holds a float4 of A (row r, columns c to c + 3 of the tile) and writes "
        "its first value to As[c][r]. Lanes 8j to 8j + 7 share row r = j and take c = 0, 4, ..., 28; with the plain "
        "layout a row of As is BM = {BM} floats. How many wavefronts does one such store of a warp take?").format(
        **_spec("bank_conflicts")[1]), "wavefronts", lambda: _store_wavefronts(0), 0),
    Question("padded_store", "ch05_bank_conflicts", lambda: (
        "The same store with each row of As padded by 4 floats (BM + 4 = {row} floats a row): how many wavefronts?"
    ).format(row=_spec("bank_conflicts")[1]["BM"] + catalog.a_pad({"LAYOUT": 1})), "wavefronts",
             lambda: _store_wavefronts(1), 0),
    Question("predicted_speed", "ch07_warp_tiling", _predicted_speed_ask, "TFLOP/s", _predicted_speed),
    Question("warps_per_block", "ch07_warp_tiling", lambda: (
        "How many warps does a block of chapter 7's kernel have at its defaults, BM = {BM}, BN = {BN}, WM = {WM}, "
        "WN = {WN} (each warp computes one WM x WN warp tile of the BM x BN block tile)?"
    ).format(**_spec("warp_tiling")[1]), "warps", _warps, 0),
    Question("stream_k_steps", "ch07b_pipelined_warp_tiling", lambda: (
        "At 4096 kernel 10b's default makes {tiles} tiles of {BM} x {BN}, each {steps} k-steps deep, and the GPU "
        "holds {slots} of its blocks at once. With stream-K, the tiles of whole waves stay whole and the tiles left "
        "over are cut along K into one equal run per block. About how many k-steps of the leftover tiles does each "
        "block run?").format(tiles=_stream_k_givens()[1], steps=_stream_k_givens()[2], slots=_stream_k_givens()[3],
                              **_stream_k_givens()[0]), "k-steps", _stream_k_steps, 0.01),
    Question("wavefronts_per_k", "ch07b_pipelined_warp_tiling", lambda: (
        "Kernel 10b with {TM} x {TN} thread tiles in {WM} x {WN} warp tiles: each lane loads {a} float4s of A and {b} "
        "of B per k, and the warp's lanes form a grid of {rows} rows (of A) by {cols} columns (of B), numbered as in "
        "step 2: a quarter-warp is 4 lanes along the wide side by 2 along the narrow one. By step 2's rule (the two "
        "quarter-warps of a half-warp share one wavefront when each reads at most two distinct float4s; otherwise each "
        "takes its own), how many wavefronts do a warp's fragment loads take per k?").format(
        a=_wavefront_instance()["TM"] // 4, b=_wavefront_instance()["TN"] // 4,
        rows=_wavefront_instance()["WM"] // _wavefront_instance()["TM"],
        cols=_wavefront_instance()["WN"] // _wavefront_instance()["TN"], **_wavefront_instance()),
        "wavefronts", _wavefronts_per_k, 0),
    Question("double_buffer_smem", "ch06_prefetch", lambda: (
        "How many bytes of shared memory does a block of chapter 6's kernel use at its defaults (BM = {BM}, "
        "BN = {BN}, BK = {BK}) with two buffers?").format(**_spec("prefetch")[1]), "bytes", _double_buffer_smem, 0),
    Question("barriers_per_step", "ch06_prefetch", lambda: (
        "With one buffer the block meets at two __syncthreads per BK-deep step. How many does it need with two?"),
        "barriers", lambda: (1, "The buffer written in step t was last read in step t - 1, so one barrier after "
                            "the stores suffices: it both publishes the new tiles and retires the old ones."), 0),
    Question("mma_flop", "ch08_tensor_cores", _mma_clocks_ask, "clocks", _mma_clocks, 0.03),
    Question("fragment_lane", "ch08_tensor_cores", _fragment_lane_ask, "", _fragment_lane, 0),
    Question("wgmma_accumulators", "ch08a_wgmma", lambda: (
        f"With BM = {WGMMA_ACCUMULATORS_BM}, kernel 12 issues wgmma m64n{WGMMA_ACCUMULATORS_BM}k8. How many FP32 "
        "accumulators does each thread of a warpgroup hold?"), "accumulators", _wgmma_accumulators, 0),
    Question("tma_stage_bytes", "ch08c_data_movers", lambda: (
        "Kernel 13 with BM = {BM}, BN = {BN} and clusters of {CLUSTER} (the defaults but BN) fills one stage per "
        "32-deep step: a box of A (BM rows x 32 floats) and the BN / 32 boxes of B (32 x 32 floats). How many bytes "
        "must land before the stage's full barrier completes?").format(
        **_instance("mma_tf32_tma", TMA_STAGE_INSTANCE)[1]), "bytes", _tma_stage_bytes, 0),
    Question("full_parity", "ch08c_data_movers", lambda: (
        "Kernel 13 has STAGES = {STAGES}. Which parity, 0 or 1, do the warps wait for on the full barrier of step "
        "{step}'s stage?").format(step=FULL_PARITY_STEP, **_spec("mma_tf32_tma")[1]), "", _full_parity, 0),
    Question("wgmma_flop", "ch08a_wgmma", lambda: (
        "How many FLOP does one wgmma m64n256k8 do (one instruction, issued together by the four warps of a "
        "warpgroup)?"), "FLOP",
             lambda: _mma_flop(64, 256, 8, "wgmma m64n256k8"), 0),
    Question("tf32_roundoff", "ch08b_precision", lambda: (
        "Rounded to TF32, by how much can an FP32 value change, relative to itself, at most?"), "", _tf32_roundoff,
        0.05),
    Question("three_products", "ch08b_precision", lambda: (
        "3xTF32 computes big x big + big x small + small x big. At most what fraction of the TF32 kernel's speed "
        "can it reach on the same tensor cores?"), "", lambda: (1 / 3, "Three tensor-core products for every one of "
                                                                "TF32: a third of its speed, before any cost of "
                                                                "splitting the operands."), 0.05),
    Question("consumer_registers", "ch09_hopper_pipeline", _consumer_registers_ask, "registers",
             _consumer_registers, 0),
    Question("stages_fit", "ch09_hopper_pipeline", _stages_fit_ask, "stages", _stages_fit, 0),
    Question("empty_arrivals", "ch09_hopper_pipeline", _empty_arrivals_ask, "arrivals", _empty_arrivals, 0),
    Question("crt_by_hand", "ch10_ozaki", lambda: (
        "An integer between 0 and 104 leaves 2 after division by 3, 3 after division by 5 and 2 after division by "
        "7. Which is it?"), "", _crt, 0),
    Question("moduli_bits", "ch10_ozaki", lambda: "How many bits does an integer carry when 8 residues, modulo the "
             f"first eight moduli of the scheme ({', '.join(map(str, ozaki.MODULI[:8]))}), pin it down?", "bits",
             _bits, 0.01),
)}


def _number(x: float) -> str:
    return f"{int(x):,}" if float(x).is_integer() else f"{x:.4g}"


def glued(name: str) -> tuple[str, str]:
    """The names `publish` glues question `name`'s text and reasoning under."""
    return f"{name}_ask", f"{name}_how"


def _question(name: str) -> Question:
    """The question called `name` (a typo names the questions there are, not a bare KeyError)."""
    try:
        return QUESTIONS[name]
    except (KeyError, TypeError):  # TypeError: an unhashable name
        raise ValueError(f"no question {name!r}; the questions are {', '.join(QUESTIONS)}") from None


def publish(name: str) -> dict[str, str]:
    """Glue question `name`'s text (`<name>_ask`) and reasoning (`<name>_how`) for a page's exercise and solution."""
    q = _question(name)
    return prose.publish(**dict(zip(glued(name), (q.ask(), q.solve()[1]))))


def ask(name: str) -> Markdown:
    """A question's text, with its givens as this GPU's (or the replayed one's) records have them."""
    return Markdown(_question(name).ask())


def answer(name: str, value: float | None) -> Markdown:
    """Whether `value` answers question `name`, and the reasoning (None: the reader has not answered yet). Any real
    number will do, a NumPy one too (a reader's arithmetic on the givens may well make one)."""
    q = _question(name)
    right, how = q.solve()
    unit = f" {q.unit}" if q.unit else ""
    if value is None:
        return Markdown(f"Type your answer in place of `None` and run the cell again ({q.unit or 'a number'}).")
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise TypeError(f"answer a number, not {value!r}")
    close = math.isclose(value, right, rel_tol=q.rel_tol, abs_tol=1e-9 if q.rel_tol else 0.5)
    verdict = f"Right: {_number(right)}{unit}." if close else \
        f"Not quite: you said {_number(value)}; it is {_number(right)}{unit}."
    return Markdown(f"{verdict} {how}")
