"""The kernels the book's write-the-kernel exercises ask for and does not show (`VARIANTS`): each a catalogued kernel
changed in one respect, its solution a file of kernels/exercises/, its spec the base kernel's but for what the change
touches (`_variant`), and what its layouts and its likeliest mistakes are, for `exercises.submit`'s check.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from .. import catalog, families
from ..catalog import KernelSpec, Params, Rule
from ..spec import REGISTER_FILE, ceil_div

SOLUTIONS = "kernels/exercises"  # the variants' solutions, from the repository root
OPERANDS = ("A", "B", "C")


@dataclass(frozen=True)
class VariantSpec(KernelSpec):
    """A variant's spec: its file lies in kernels/exercises/, and its headers, like a submission's, in kernels/."""

    def source_text(self) -> str:
        return catalog.expand_includes(catalog.ROOT / "kernels" / self.path.name, self.path.read_text())


@dataclass(frozen=True)
class Variant:
    """A kernel the book asks the reader to write and does not show: the spec it is launched and checked by (its
    `source` the solution's file in kernels/exercises/, its grid, block, shared memory and rules its own), which
    of its operands are column-major (stored as their transposes, row by row: element (i, j) of an R x C matrix at
    i + j * R), and what a wrong result of it most likely means (`cause`), named instead of the generic causes (the
    indices of A and B, a missing __syncthreads) where its own are likelier."""

    spec: KernelSpec
    column_major: tuple[str, ...] = ()
    cause: str = ""

    def __post_init__(self) -> None:
        if set(self.column_major) - set(OPERANDS):
            raise ValueError(f"{self.spec.name}: column_major names operands among {OPERANDS}, not "
                             f"{self.column_major}")


def _variant(base: str, name: str, file: str, title: str, notes: str, column_major: tuple[str, ...] = (),
             cause: str = "", **changes: Any) -> Variant:
    """The catalogued kernel `base` as the variant `name`: its function `sgemm_<name>` in kernels/exercises/`file`,
    everything not in `changes` (choices, defaults, threads, smem_bytes, rules, ...) kept."""
    fields = {f.name: getattr(catalog.get(base), f.name) for f in dataclasses.fields(KernelSpec)}
    spec = VariantSpec(**{**fields, "name": name, "source": f"{SOLUTIONS}/{file}", "function": f"sgemm_{name}",
                          "title": title, "notes": notes, **changes})
    return Variant(spec, column_major, cause)


def _with(fixed: dict[str, int], rules: tuple[Rule, ...]) -> tuple[Rule, ...]:
    """A base kernel's rules for a variant without some of its parameters: each checked with those at `fixed`."""
    return tuple(Rule(r.why, lambda p, r=r: r.holds({**p, **fixed})) for r in rules)


def _warp_dot() -> Variant:
    """Chapter 1's kernels with B column-major: one warp per output, its lanes along k; a block computes WARPS outputs
    of a row of C."""
    def threads(p: Params) -> int:
        return 32 * p["WARPS"]

    return _variant(
        "coalesced", "warp_dot", "01_warp_dot.cu", "One warp per output, B column-major",
        "the 32 lanes of a warp split one dot product along k, so both loads read whole lines; shuffles add the "
        "lanes' sums", ("B",),
        cause="a dot product summed wrong or stored by the wrong lanes: check that each k is taken by exactly one lane "
              "(A(row, k) at A[row * K + k], B(k, col) at B[col * K + k]), that the shuffles add all 32 lanes' partial "
              "sums into lane 0, and that lane 0 alone stores",
        choices={"WARPS": (4, 8, 16, 32)}, defaults={"WARPS": 8}, tile=lambda p: (1, p["WARPS"]), threads=threads,
        rules=(families.positive("WARPS"), *families.block_limits(threads, lambda p: 0)))


def _smem_tiled_wide() -> Variant:
    """Chapter 2's tiling with a tile twice as wide as the block: each thread computes two outputs of its row."""
    def smem(p: Params) -> int:
        return 4 * (p["BM"] * p["BK"] + p["BK"] * 2 * p["BN"])

    base = catalog.get("smem_tiled")
    return _variant(
        "smem_tiled", "smem_tiled_wide", "02_smem_tiled_wide.cu", "Shared-memory tiling, two outputs per thread",
        "chapter 2's tiling with a BM x 2BN tile of C for a block of BM*BN threads: each value of A read from shared "
        "memory feeds two multiply-adds", tile=lambda p: (p["BM"], 2 * p["BN"]), smem_bytes=smem,
        rules=(families.positive("BM", "BN", "BK"), *families.block_limits(base.threads, smem)))


def _vectorized_4x4_transpose() -> Variant:
    """Chapter 4's kernel 06 with its transposing store of A in float4s: 4 x 4 blocks transposed in registers (kernel
    06's rules already make BK and TM, so BM, multiples of 4: the blocks are whole and their float4s aligned)."""
    return _variant(
        "vectorized", "vectorized_4x4_transpose", "04_vectorized_4x4_transpose.cu", "Vectorized, A stored in float4s",
        "kernel 06 copying A in 4 x 4 blocks: four float4 loads, a transpose in registers, four float4 stores",
        cause="the copy of A leaving As wrong or partly unwritten (shared memory that no thread wrote holds anything, "
              "NaN too): one i per 4 x 4 block of the A tile, its four rows loaded and stored transposed, so that "
              "As[k][m] = A(row0 + m, k0 + k)")


def _multistage_full_ring() -> Variant:
    """Chapter 6's cp.async pipeline with all STAGES buffers in flight: kernel 09's spec, rules and shared memory."""
    return _variant(
        "multistage", "multistage_full_ring", "06_multistage_full_ring.cu", "cp.async, every stage in flight",
        "kernel 09's pipeline refilling each buffer as soon as its step is done: STAGES tiles in flight, two "
        "barriers per step",
        cause="a buffer read before its copies landed (how many of a thread's copy groups may still be in flight at "
              "the top of step t?) or refilled while other threads still read it (is there a barrier between the "
              "last read of a buffer and its next copy?)")


def _warp_tiling_along_k() -> Variant:
    """Chapter 7's warp tiling with the A tile row-major in shared memory, read four k-values per float4."""
    base = catalog.get("warp_tiling")

    def smem(p: Params) -> int:
        return 4 * 2 * (p["BM"] * (p["BK"] + 4) + p["BK"] * p["BN"])  # two buffers, A's rows padded by 4

    def registers(p: Params) -> int:  # kernel 10's estimate (families._warp_tiling) and the TM float4s of A
        staged = 4 * ceil_div((p["BM"] + p["BN"]) * p["BK"], 4 * base.threads(p))
        return p["TM"] * p["TN"] + 3 * (p["TM"] + p["TN"]) // 2 + staged + 28 + 4 * p["TM"]

    rules = (
        *(r for r in base.rules if not r.why.startswith(("the TM x TN", "threads per block", "static shared memory"))),
        Rule("BK must be a multiple of 8 (rows of BK + 4 floats, an odd number of float4s, put the float4s of eight "
             "consecutive rows on distinct banks)", lambda p: p["BK"] % 8 == 0),
        Rule("the TM x TN accumulators, the TM float4s of A, two sets of fragments and the staged tiles must fit in "
             f"the registers each thread can have with this many threads ({REGISTER_FILE}), or they "
             "spill to local memory", lambda p: registers(p) <= catalog.register_budget(base.threads(p))),
        *families.block_limits(base.threads, smem),
    )
    return _variant(
        "warp_tiling", "warp_tiling_along_k", "07_warp_tiling_along_k.cu", "Warp tiling, A read along k",
        "chapter 7's warp tiling with the A tile stored row-major and each lane reading four k-values of a row per "
        "float4", smem_bytes=smem, rules=rules, choices={**base.choices, "BK": (8, 16)},
        defaults={"BM": 128, "BN": 128, "BK": 8, "WM": 64, "WN": 32, "TM": 8, "TN": 8})


def _ring_producer() -> Variant:
    """Chapter 9's kernel 14 (TF32, B^T in registers, plain stores) with its producer keeping a stage and a phase;
    kernel 14's rules with BSMEM = STORE = 0, and no tensor map of C."""
    base = catalog.get("wgmma_ws_tf32")
    fixed = {"BSMEM": 0, "STORE": 0}
    return _variant(
        "wgmma_ws_tf32", "ring_producer", "09_ring_producer.cu", "Hopper pipeline, the producer's ring by hand",
        "kernel 14's warp-specialised pipeline, its producer advancing a stage and a phase bit round the ring",
        cause="a stage read before its copies landed or refilled while still read: check the stage each step uses, "
              "the parity the producer waits for on the empty barrier (the opposite of its trip's), the bytes the "
              "full barrier expects, and the empty barrier's arrival count (every consumer warp of the cluster)",
        choices={k: v for k, v in base.choices.items() if k not in fixed},
        defaults={k: v for k, v in base.defaults.items() if k not in fixed},
        smem_bytes=lambda p: base.smem_bytes({**p, **fixed}), rules=_with(fixed, base.rules), tma_c=False)


def _ozaki_by_thread() -> Variant:
    """Chapter 10's scheme in one thread per output, on chapter 1's grid of BLOCK x BLOCK threads per tile."""
    return _variant(
        "coalesced", "ozaki_by_thread", "10_ozaki_by_thread.cu", "The Ozaki scheme, one thread per output",
        "eight moduli: each thread scales its row and column, multiplies their int8 residues exactly and rebuilds "
        "its element by the Chinese remainder theorem", chapter="ch10_ozaki",
        choices={"BLOCK": (8, 16)}, defaults={"BLOCK": 16},
        cause="wrong values, from residues that are not the int8 the tensor cores take (each x mod p in [-p/2, p/2)) "
              "or a rebuilt integer that is not the representative nearest zero (|c| <= P / 4)")


VARIANTS = {v.spec.name: v for v in (
    _warp_dot(),
    _smem_tiled_wide(),
    _variant("thread_tile_2d", "thread_tile_2d_conflict_free", "03_thread_tile_2d_conflict_free.cu",
             "2-D thread tile, conflict-free fragment reads",
             "chapter 3's 2-D thread tile with the rows and columns each thread owns chosen so that, at the chapter's "
             "tile, a warp's 32-bit fragment reads take one shared-memory wavefront each",
             cause="a thread stores its sums at other rows or columns of C than those it read of A and B: check the "
                   "indices of As in a[i], of Bs in b[j] and of C in the store, for the same i and j"),
    _vectorized_4x4_transpose(),
    _multistage_full_ring(),
    _warp_tiling_along_k(),
    _ring_producer(),
    _ozaki_by_thread(),
)}
