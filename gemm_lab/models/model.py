"""Paper models of a GEMM: FLOPs, bytes moved, arithmetic intensity and the roofline.

Every chapter predicts with these before it measures, and puts prediction and measurement side
by side.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace

from .. import catalog
from ..catalog import KernelSpec, Params
from ..occupancy import SM_90, SMLimits, occupancy, resident  # noqa: F401 - the paper model of occupancy, for the pages
from ..spec import ceil_div, shape_of

WORD = 4  # bytes per float32
SHARED_BYTES_PER_CLOCK = 32 * WORD  # an SM's shared memory: 32 banks of 4 bytes
# an H100 SM's dense TF32 multiply-adds per clock: NVIDIA's 494.7 TFLOP/s at 1,830 MHz on 132 SMs
TF32_MACS_PER_CLOCK = 1024


def flops(m: int, n: int, k: int) -> float:
    """A GEMM does m*n*k multiply-adds: 2*m*n*k floating-point operations."""
    return 2.0 * m * n * k


def compulsory_bytes(m: int, n: int, k: int) -> float:
    """The least DRAM traffic: read A and B once, write C once."""
    return WORD * (m * k + k * n + m * n)


def reuse(kernel: str | KernelSpec, params: Params | None = None) -> tuple[int, int]:
    """How many outputs share one global load of A and of B.

    Without tiling each thread loads its own row of A and column of B (reuse 1, 1). A block
    that stages a BM x BK tile of A and a BK x BN tile of B in shared memory reuses each element
    of A for BN outputs and each element of B for BM outputs. The clustered kernels (13 to 16) stack
    CLUSTER blocks along M, and TMA multicasts B's tile to all of them: each element of B serves
    CLUSTER x BM outputs for one request. Kernel 14's CLUSTER = -2 puts the pair side by side along N and
    multicasts A instead: each element of A serves 2 x BN.
    """
    spec = catalog.get(kernel)
    p = catalog.validate(spec, params)
    if spec.name in ("naive", "coalesced"):
        return (1, 1)
    bm, bn = spec.tile(p)
    if p.get("CLUSTER", 1) < 0:
        return (bn * spec.cluster(p), bm)
    return (bn, bm * spec.cluster(p))


def global_load_bytes(kernel: str | KernelSpec, m: int, n: int, k: int, params: Params | None = None) -> float:
    """Bytes the kernel asks global memory for: m*n*k*(1/BM + 1/BN) words for a BM x BN tile.

    The model counts requests, before any cache: the L2 (and L1) may serve many of them, so DRAM
    sees this much only when nothing is reused across blocks.
    """
    catalog.validate(kernel, params, (m, n, k))
    reuse_a, reuse_b = reuse(kernel, params)
    return tile_read_bytes(m, n, k, reuse_b, reuse_a)


def tile_read_bytes(m: int, n: int, k: int, rows: int, cols: int) -> float:
    """Bytes of A and B requested when each rows x cols tile of C reads its rows of A and its columns of B once per
    k: every value of A is read by each of the n / cols columns of tiles, every value of B by the m / rows rows.
    Chapter 9 compares kernel 14's cluster tile with cuBLAS's this way."""
    return WORD * m * n * k * (1 / rows + 1 / cols)


def thread_tile(kernel: str | KernelSpec, params: Params | None = None) -> tuple[int, int]:
    """(TM, TN): the outputs one thread computes from registers (1 x 1 without register blocking)."""
    spec = catalog.get(kernel)
    p = catalog.validate(spec, params)
    return (p.get("TM", 1), p.get("TN", 1))


def shared_load_bytes(kernel: str | KernelSpec, m: int, n: int, k: int, params: Params | None = None) -> float:
    """Bytes read from shared memory: BM*BN*BK*(1/TM + 1/TN) words per block step, m*n*k*(1/TM + 1/TN) in all.

    Each value a thread loads from shared memory feeds TN (from A) or TM (from B) multiply-adds.
    """
    tm, tn = thread_tile(kernel, params)
    return WORD * m * n * k * (1 / tm + 1 / tn)


def shared_bandwidth_gbs(ceilings: dict) -> float:
    """Shared-memory bandwidth of the whole GPU: 32 banks x 4 bytes per clock per SM."""
    return ceilings["sms"] * SHARED_BYTES_PER_CLOCK * ceilings["clock_mhz"] / 1e3


def register_floor(kernel: str | KernelSpec, params: Params | None = None) -> dict[str, int]:
    """Registers a thread cannot do without: TM*TN accumulators and TM + TN operand fragments."""
    tm, tn = thread_tile(kernel, params)
    return {"accumulators": tm * tn, "fragments": tm + tn}


def store_bytes(m: int, n: int) -> float:
    return WORD * m * n


def intensity(kernel: str | KernelSpec, m: int, n: int, k: int, params: Params | None = None) -> float:
    """FLOPs per byte of global traffic the model predicts (loads + stores of C)."""
    return flops(m, n, k) / (global_load_bytes(kernel, m, n, k, params) + store_bytes(m, n))


def roofline(intensity_flop_per_byte: float, peak_gflops: float, bandwidth_gbs: float) -> float:
    """Attainable GFLOP/s at an arithmetic intensity: min(peak, intensity x bandwidth)."""
    return min(peak_gflops, intensity_flop_per_byte * bandwidth_gbs)


# Little's law for a ring of copy stages (chapter 9): how many stages hide a copy.

RING_STEP_K = 32  # K per stage of kernel 14's ring (14_tf32_wgmma_ws.cu): one 128-byte swizzle row of A's box
RING_HELD = 2  # stages the consumers hold: the one their wgmmas read, and the one whose wgmmas are still finishing


@dataclass(frozen=True)
class Ring:
    """A ring of copy stages by Little's law: the consumers use up one stage every `step_ns`, and a stage's copy is
    done `latency_ns` + `fill_ns` after the producer issues it (the first byte's latency, then the stage's bytes at
    the SM's share of the bandwidth). One SM's share fills one stage at a time, so stages arrive at most one per fill:
    the ring's pace is the slower of a step and a fill, and copy / pace copies are in flight on average (Little's law:
    arrival rate x time in the system), rounded up to whole stages, beside the `held` ones the consumers hold. Where
    the bandwidth is larger than assumed (a fill no longer than a step), `at_peak` copies are in flight instead."""

    step_ns: float
    latency_ns: float
    fill_ns: float
    held: int = RING_HELD

    @property
    def copy_ns(self) -> float:
        return self.latency_ns + self.fill_ns

    @property
    def pace_ns(self) -> float:
        return max(self.step_ns, self.fill_ns)

    @property
    def in_flight(self) -> int:
        return int(ceil_div(self.copy_ns, self.pace_ns))

    @property
    def at_peak(self) -> int:
        """Copies in flight at the tensor peak's pace, the bytes keeping up with it (a fill of at most a step)."""
        return int(ceil_div(self.latency_ns + min(self.fill_ns, self.step_ns), self.step_ns))

    @property
    def stages(self) -> int:
        return self.held + max(self.in_flight, self.at_peak)


def ring(kernel: str | KernelSpec, params: Params | None, ceilings: dict, latency_ns: float,
         bandwidth_gbs: float) -> Ring:
    """Kernel 14's ring (a TF32 warp-specialised kernel) by Little's law. A stage is one RING_STEP_K-deep step of the
    block's BM x BN tile: at the tensor cores' recorded TF32 peak, shared by the SMs, its multiply-adds take
    `step_ns`. Its copy brings the bytes this block's producer requests, its box of A and its share of B's boxes
    (multicast splits them among the cluster), at 1/SMs of `bandwidth_gbs`, after `latency_ns`."""
    spec = catalog.get(kernel)
    p = catalog.validate(spec, params)
    bm, bn = spec.tile(p)
    per_sm_gflops = ceilings["wgmma_tf32_gflops"] / ceilings["sms"]
    step_ns = 2 * bm * bn * RING_STEP_K / per_sm_gflops  # FLOP / (GFLOP/s) = ns
    requested = (bm + bn / spec.cluster(p)) * RING_STEP_K * WORD
    return Ring(step_ns, latency_ns, requested / (bandwidth_gbs / ceilings["sms"]))


# The speed-of-light budget: what each level of the GPU allows an instance, in TFLOP/s.

FLOP_PER_MATH = {"FFMA": 2 * 32, "HMMA": 2 * 16 * 8 * 8}  # per warp instruction: 32 lanes x 1 FMA; m16n8k8


@dataclass(frozen=True)
class Ceiling:
    """One level's limit on an instance: `tflops` (None where the level does not apply, `how` says why)."""

    level: str
    tflops: float | None
    how: str  # the arithmetic, with its numbers, or why the level does not apply


# The book page that teaches each row of the budget. A page shows the rows taught so far (`Budget.upto`), so a reader
# never meets a ceiling before the chapter that explains it.
ROW_CHAPTERS = {"FFMA peak": "ch00_measuring", "DRAM": "ch00_measuring", "L2": "ch01_naive_coalesced",
                "shared memory": "ch02_smem_tiling", "issue": "ch03_register_blocking",
                "registers": "ch05_bank_conflicts", "tensor peak": catalog.TENSOR_CORES_CHAPTER}


def chapter_key(page: str) -> tuple[float, str]:
    """A book page's place in the chapter order: "ch07_warp_tiling" (7, ""), "ch07b_..." (7, "b"); pages that are not
    chapters (the scoreboard, an appendix) come after every chapter."""
    m = re.match(r"ch(\d+)([a-z]?)", page)
    return (int(m.group(1)), m.group(2)) if m else (float("inf"), "")


def chapter_label(page: str) -> str:
    """The chapter a page is, as the book names it: "ch03_register_blocking" -> "3", "ch08b_precision" -> "8b"."""
    number, letter = chapter_key(page)
    return f"{number}{letter}" if number != float("inf") else page


@dataclass(frozen=True)
class Budget:
    """An instance's ceilings at one size, from the device record `ceilings` and the offline SASS; `hidden` names the
    rows left out because the page showing it comes before the chapter that teaches them (`upto`)."""

    kernel: str
    params: dict[str, int]
    shape: tuple[int, int, int]
    gpu: str
    ceilings: tuple[Ceiling, ...]
    hidden: tuple[str, ...] = ()

    @property
    def bound(self) -> Ceiling:
        """The lowest ceiling shown: the prediction, where the model counts this instance's cost right."""
        return min((c for c in self.ceilings if c.tflops is not None), key=lambda c: c.tflops)

    def __getitem__(self, level: str) -> Ceiling:
        if level in self.hidden:
            raise KeyError(f"the {level} row is taught in chapter {chapter_label(ROW_CHAPTERS[level])}: this budget "
                           "shows the rows taught before; pass upto= a later chapter")
        return next(c for c in self.ceilings if c.level == level)

    def upto(self, page: str) -> Budget:
        """The rows taught by the end of `page` (a book page such as "ch02_smem_tiling"), the others hidden."""
        shown = [c for c in self.ceilings if c.level not in ROW_CHAPTERS
                 or chapter_key(ROW_CHAPTERS[c.level]) <= chapter_key(page)]
        return replace(self, ceilings=tuple(shown),
                       hidden=(*self.hidden, *(c.level for c in self.ceilings if c not in shown)))


def math_instruction(kernel: str | KernelSpec) -> str:
    """What multiplies in a kernel: "FFMA" (FP32 kernels), "mma.sync" or "wgmma" (tensor cores), from its source."""
    spec = catalog.get(kernel)
    if spec.precision == "fp32":
        return "FFMA"
    return "wgmma" if "wgmma.mma_async" in spec.source_text() else "mma.sync"


def _operand_tile(spec: KernelSpec, p: dict[str, int]) -> tuple[int, int] | None:
    """(rows, columns) of C whose operands one shared-memory read serves: a thread's TM x TN (FFMA kernels), a warp's
    WM x WN (mma.sync kernels, whose fragments each lane loads); None where the model counts no LDS (naive,
    coalesced: no shared memory; wgmma: the tensor cores read their shared operand themselves, and the fragments of a
    register operand, where threads load one, are left out)."""
    instruction = math_instruction(spec)
    if instruction == "FFMA":
        return thread_tile(spec, p) if spec.smem_bytes(p) else None
    return (p["WM"], p["WN"]) if instruction == "mma.sync" else None


def speed_of_light(kernel: str | KernelSpec, params: Params | None, size: int | tuple[int, int, int], ceilings: dict,
                   l2_gbs: float | None = None) -> Budget:
    """The ceilings of an instance at `size` (M = N = K, or (M, N, K)), each in TFLOP/s of useful work (2MNK):

    * peak: FP32 kernels, the FFMA peak of the device record (SMs x 128 lanes x 2 FLOP x clock); TF32 kernels, the
      measured tensor-core peak of their instruction (`mma_sync_tf32_gflops` or, for wgmma kernels,
      `wgmma_tf32_gflops`); 3xTF32 kernels, a third of it (three tensor products per FP32 product).
    * issue: each SM's 4 schedulers issue one warp instruction per clock, so the main loop of the offline SASS
      (`sass.main_loop`) runs at most at math FLOP per instruction x 4 x SMs x clock. For an FFMA kernel that is
      the FFMA share of the loop's instructions x the FFMA peak, the number that explains chapter 7 onward. wgmma
      kernels: not computed (one HGMMA instruction does a warpgroup's 64 x N x 8 product; issue never binds).
    * shared memory: `shared_load_bytes` (conflict-free; a thread's, or an mma.sync warp's, tile of C per load)
      at 32 banks x 4 bytes per clock per SM.
    * registers: the register-bank conflicts of the main loop's FFMAs, the same loop the issue row counts
      (`sass.loop_report`, the Volta model of two banks; an assumption for Hopper, see `sass`): a conflict costs the
      FFMA a second cycle, so the FFMA peak x FFMAs / (FFMAs + conflicts). Occupancy x ILP by Little's law never
      binds here (even the naive kernel keeps 16 warps per scheduler against a 4-clock FFMA latency), so it is not the
      register-level ceiling we show.
    * L2: every global request (`global_load_bytes` + the stores of C) goes through the L2: shown when `l2_gbs`,
      a measured L2 bandwidth, is given.
    * DRAM: the least traffic, A and B read once and C read (beta) and written once, at the device record's
      measured copy bandwidth. It assumes the L2 absorbs the re-reads between blocks; Nsight Compute measured about
      twice that on the H100 for the tiled kernels at 4096 (chapter 2), and far more for the naive and coalesced
      kernels, whose requests the L1 and L2 serve: for those the L2 row is the honest one.
    """
    from . import sass

    spec = catalog.get(kernel)
    m, n, k = shape_of(size)
    p = catalog.validate(spec, params, (m, n, k))  # the shape's rules too (TMA's multiples of 4)
    if l2_gbs is not None and not l2_gbs > 0:
        raise ValueError(f"l2_gbs={l2_gbs!r}: the L2 ceiling's bandwidth in GB/s must be positive")
    flop = flops(m, n, k)
    sms, clock_ghz = ceilings["sms"], ceilings["clock_mhz"] / 1e3
    issue_tflops = catalog.SCHEDULERS_PER_SM * sms * clock_ghz / 1e3  # warp instructions per second, in units of 1e12
    out: list[Ceiling] = []
    instruction = math_instruction(spec)
    if instruction == "FFMA":
        out.append(Ceiling("FFMA peak", ceilings["peak_gflops"] / 1e3,
                           f"{sms} SMs x {ceilings['fp32_lanes_per_sm']} lanes x 2 FLOP x "
                           f"{ceilings['clock_mhz']:.0f} MHz"))
    else:
        key = "wgmma_tf32_gflops" if instruction == "wgmma" else "mma_sync_tf32_gflops"
        share = 3 if spec.precision == "3xtf32" else 1
        out.append(Ceiling("tensor peak", ceilings[key] / 1e3 / share,
                           f"TF32 {instruction} measured alone, {ceilings[key] / 1e3:,.0f} TFLOP/s"
                           + (" / 3 products" if share == 3 else "")))
    # issue
    if instruction == "wgmma":
        out.append(Ceiling("issue", None, "wgmma: one instruction per 64 x N x 8 product, issue never binds"))
    else:
        body = sass.main_loop(spec, p)
        per_flop = 3 if spec.precision == "3xtf32" else 1
        math = {op: body.count(op) for op in FLOP_PER_MATH if body.count(op)}
        flop_per_instruction = sum(FLOP_PER_MATH[op] * c for op, c in math.items()) / per_flop / len(body)
        if list(math) == ["FFMA"]:
            how = (f"{math['FFMA']} FFMA / {len(body)} instructions of the main loop = {math['FFMA'] / len(body):.2f}"
                   " x the FFMA peak (4 schedulers x 1 instruction x 32 lanes x 2 FLOP per clock per SM)")
        else:
            ops = " + ".join(f"{c} {op} x {FLOP_PER_MATH[op]:,} FLOP" for op, c in math.items())
            how = (f"({ops}){' / 3 products' if per_flop == 3 else ''} / {len(body)} instructions of the main loop x "
                   f"4 per clock x {sms} SMs x {ceilings['clock_mhz']:.0f} MHz")
        out.append(Ceiling("issue", flop_per_instruction * issue_tflops, how))
    # shared memory
    tile = _operand_tile(spec, p)
    if tile is None:
        out.append(Ceiling("shared memory", None, "no shared-memory loads feed the math" if instruction == "FFMA" else
                           "not counted: the tensor cores read their shared operand themselves (a register "
                           "operand's fragments, where threads load one, are a small share of the bytes)"))
    else:
        smem = WORD * m * n * k * (1 / tile[0] + 1 / tile[1])
        out.append(Ceiling("shared memory", flop / smem * shared_bandwidth_gbs(ceilings) / 1e3,
                           f"{flop / smem:.3g} FLOP per byte x {shared_bandwidth_gbs(ceilings) / 1e3:,.1f} TB/s "
                           f"(32 banks x 4 B per clock per SM)"))
    # registers
    if instruction == "FFMA":
        r = sass.loop_report(spec, p)
        out.append(Ceiling("registers", ceilings["peak_gflops"] / 1e3 * r.ffma / (r.ffma + r.volta_conflicts),
                           f"{r.volta_conflicts} of the main loop's {r.ffma} FFMAs with a register-bank conflict"))
    else:
        out.append(Ceiling("registers", None, "tensor cores: operands in fragments, no FFMA bank conflicts"))
    # L2 and DRAM
    stores = WORD * m * n
    if l2_gbs:
        requested = global_load_bytes(spec, m, n, k, p) + stores
        out.append(Ceiling("L2", flop / requested * l2_gbs / 1e3,
                           f"{flop / requested:.3g} FLOP per requested byte x {l2_gbs / 1e3:,.1f} TB/s "
                           "(an L2 copy, measured: an estimate)"))
    least = compulsory_bytes(m, n, k) + stores
    out.append(Ceiling("DRAM", flop / least * ceilings["dram_gbs"] / 1e3,
                       f"{flop / least:.0f} FLOP per byte (A, B read, C read and written once) x "
                       f"{ceilings['dram_gbs'] / 1e3:.1f} TB/s (a 1 GiB copy, measured)"))
    return Budget(spec.name, p, (m, n, k), ceilings["gpu"], tuple(out))
