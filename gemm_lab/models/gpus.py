"""The GPUs a reader may have: which chapters run live on each, and which of the book's H100 facts change there.

The limits per compute capability come from the CUDA C++ Programming Guide's table of technical specifications, and
each card's SMs, clock, L2 and DRAM from NVIDIA's datasheets: hardware constants, typed here once. Which chapter runs
live is not typed: it follows from the catalog (each kernel's `min_cc`, arch-specific target and shared memory).
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import catalog, device
from ..catalog import MEASURING_CHAPTER

KIB = 1024


@dataclass(frozen=True)
class Arch:
    """What every GPU of one compute capability shares (CUDA C++ Programming Guide)."""

    family: str
    max_threads_per_sm: int
    max_blocks_per_sm: int
    smem_per_sm: int  # bytes of shared memory an SM can give its blocks
    smem_per_block: int  # bytes one block may ask for, with the opt-in
    l1_smem_bytes: int  # the on-chip memory that shared memory and L1 split between them


ARCHS = {
    (7, 5): Arch("Turing", 1024, 16, 64 * KIB, 64 * KIB, 96 * KIB),
    (8, 0): Arch("Ampere", 2048, 32, 164 * KIB, 163 * KIB, 192 * KIB),
    (8, 6): Arch("Ampere", 1536, 16, 100 * KIB, 99 * KIB, 128 * KIB),
    (8, 9): Arch("Ada", 1536, 24, 100 * KIB, 99 * KIB, 128 * KIB),
    (9, 0): Arch("Hopper", 2048, 32, 228 * KIB, 227 * KIB, 256 * KIB),
}


@dataclass(frozen=True)
class Card:
    """One GPU as its datasheet gives it."""

    name: str
    short: str  # for table columns
    cc: tuple[int, int]
    sms: int
    boost_mhz: int
    l2_mib: int
    dram_gb: int
    dram_gbs: int  # the datasheet's memory bandwidth

    @property
    def arch(self) -> Arch:
        return ARCHS[self.cc]

    @property
    def peak_tflops(self) -> float:
        """FP32 FFMA peak, as chapter 0 computes it: SMs x FP32 lanes per SM x 2 x boost clock."""
        return self.sms * device.FP32_LANES_PER_SM[self.cc] * 2 * self.boost_mhz / 1e6


CARDS = (
    Card("Tesla T4 (Colab)", "T4", (7, 5), 40, 1590, 4, 16, 320),
    Card("A100 SXM4 40GB", "A100", (8, 0), 108, 1410, 40, 40, 1555),
    Card("GeForce RTX 3090", "RTX 3090", (8, 6), 82, 1695, 6, 24, 936),
    Card("GeForce RTX 4090", "RTX 4090", (8, 9), 128, 2520, 72, 24, 1008),
    Card("H100 SXM5 80GB", "H100", (9, 0), 132, 1980, 50, 80, 3350),
    Card("H200 SXM 141GB", "H200", (9, 0), 132, 1980, 60, 141, 4800),  # L2 as the device reports it: datasheets omit it
)


def card_of(gpu_name: str) -> Card | None:
    """The datasheet card of a GPU as the driver names it ("NVIDIA H100 80GB HBM3" -> H100), or None."""
    return next((c for c in CARDS if c.short in gpu_name), None)


def chapters() -> dict[str, list[str]]:
    """Each chapter with kernels, in the book's order, and its kernels; chapter 0 (cuBLAS alone) first."""
    out: dict[str, list[str]] = {MEASURING_CHAPTER: []}
    for name, spec in catalog.KERNELS.items():
        out.setdefault(spec.chapter, []).append(name)
    return dict(sorted(out.items()))  # the book's order: ch08_..., ch08a_..., ch08b_...


def how_it_runs(kernel: str, card: Card) -> str:
    """"live"; "replay" where the card lacks the kernel's instructions (its results are read back from the records,
    with a warning); "too big" where its default tiles need more shared memory per block than the card has (a
    ValueError says so, and smaller tiles run live)."""
    if catalog.unsupported(kernel, card.cc):
        return "replay"
    try:
        catalog.instance(kernel, smem_limit=card.arch.smem_per_block)
    except ValueError:
        return "too big"
    return "live"


