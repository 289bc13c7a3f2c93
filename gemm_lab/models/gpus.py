"""The GPUs a reader may have: which chapters run live on each, and which of the book's H100 facts change there.

The limits per compute capability come from the CUDA C++ Programming Guide's table of technical specifications, and
each card's SMs, clock, L2 and DRAM from NVIDIA's datasheets: hardware constants, typed here once. Which chapter runs
live is not typed: it follows from the catalog (each kernel's `min_cc`, arch-specific target and shared memory).
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import catalog, device
from ..catalog import MEASURING_CHAPTER
from ..report import Table

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


def chapters_table(cards: tuple[Card, ...] = CARDS) -> Table:
    """Per chapter and GPU: live (every kernel of the chapter runs there at its defaults), replay (none does) or how
    many of its kernels run live, the caption naming the others. GPUs with the same outcome share a column."""
    outcome = {c: {ch: {k: how_it_runs(k, c) for k in ks} for ch, ks in chapters().items()} for c in cards}
    columns: list[list[Card]] = []
    for card in cards:
        same = next((col for col in columns if outcome[col[0]] == outcome[card]), None)
        if same:
            same.append(card)
        else:
            columns.append([card])

    def number(chapter: str) -> str:
        return chapter.split("_")[0].removeprefix("ch").lstrip("0") or "0"

    def cell(how: dict[str, str]) -> str:
        live = sum(h == "live" for h in how.values())
        return "live" if live == len(how) else "replay" if live == 0 else f"{live} of {len(how)} live"

    notes = []
    for col in columns:
        for chapter, how in outcome[col[0]].items():
            if cell(how) not in ("live", "replay"):
                out = []
                for kind, one, many in (("replay", "replays", "replay"), ("too big", "needs", "need")):
                    names = [k for k, h in how.items() if h == kind]
                    verb = (one if len(names) == 1 else many) + (" smaller tiles" if kind == "too big" else "")
                    out += [f"{', '.join(names)} {verb}"] if names else []
                notes.append(f"{', '.join(c.short for c in col)}, chapter {number(chapter)}: {'; '.join(out)}")
    return Table(("chapter", *(", ".join(c.short for c in col) for col in columns)),
                 tuple((number(ch), *(cell(outcome[col[0]][ch]) for col in columns)) for ch in chapters()),
                 "live: the chapter's kernels run on that GPU at their default parameters (chapter 0: cuBLAS alone); "
                 "replay: the GPU lacks their instructions, so their results are read back from the H100's records, "
                 "with a warning. " + ". ".join(notes) + ". Smaller tiles: the defaults ask for more shared memory "
                 "per block than the GPU has, which an error says; smaller tiles run live. Hardware counters also "
                 "need Nsight Compute's permission, which cloud GPUs often withhold: without it they are read back "
                 "too.")


def facts_table(cards: tuple[Card, ...] = CARDS) -> Table:
    """The book's H100 facts beside other GPUs': SMs, clocks, peak, per-SM limits, caches, DRAM and instructions."""
    def yes(ok: bool) -> str:
        return "yes" if ok else "no"

    hopper = catalog.ARCH_SPECIFIC["sm_90a"][0]
    cp_async, mma = catalog.get("multistage").min_cc, catalog.get("mma_tf32").min_cc  # the first kernels using them
    rows = (
        ("architecture", *(c.arch.family for c in cards)),
        ("compute capability", *(f"{c.cc[0]}.{c.cc[1]}" for c in cards)),
        ("SMs", *(str(c.sms) for c in cards)),
        ("boost clock (MHz)", *(f"{c.boost_mhz:,}" for c in cards)),
        ("FP32 lanes per SM", *(str(device.FP32_LANES_PER_SM[c.cc]) for c in cards)),
        ("FP32 peak (TFLOP/s)", *(f"{c.peak_tflops:.1f}" for c in cards)),
        ("threads per SM", *(f"{c.arch.max_threads_per_sm:,}" for c in cards)),
        ("blocks per SM", *(str(c.arch.max_blocks_per_sm) for c in cards)),
        ("shared memory per SM (KiB)", *(str(c.arch.smem_per_sm // KIB) for c in cards)),
        ("shared memory + L1 (KiB)", *(str(c.arch.l1_smem_bytes // KIB) for c in cards)),
        ("L2 (MiB)", *(str(c.l2_mib) for c in cards)),
        ("DRAM (GB)", *(str(c.dram_gb) for c in cards)),
        ("DRAM bandwidth, datasheet (GB/s)", *(f"{c.dram_gbs:,}" for c in cards)),
        ("cp.async (chapters 6, 7b)", *(yes(c.cc >= cp_async) for c in cards)),
        ("TF32 tensor cores, mma.sync (8)", *(yes(c.cc >= mma) for c in cards)),
        ("TMA, wgmma, clusters (8, 9)", *(yes(c.cc == hopper) for c in cards)),
    )
    return Table(("", *(c.short for c in cards)), rows,
                 f"{'; '.join(c.name for c in cards)}: from NVIDIA's datasheets (SMs, boost clock, L2, DRAM and its "
                 "bandwidth) and the CUDA C++ Programming Guide (per compute capability); FP32 peak computed as in "
                 "chapter 0", wrap=(0,))
