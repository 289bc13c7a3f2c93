"""Tables of the models' numbers, as the pages show them: the GPUs' datasheets and which chapters run on each, the
memory hierarchy across GPUs, and the issue-rate rows of chapter 7. The models compute; this module presents.
"""
from __future__ import annotations

from collections.abc import Sequence

from .. import catalog, device
from ..models import gpus, issue_rate, memory
from ..models.gpus import CARDS, Card
from .tables import Banner, Table, Tables, counters_provenance, provenance


def chapters_table(cards: tuple[Card, ...] = CARDS) -> Table:
    """Per chapter and GPU: live (every kernel of the chapter runs there at its defaults), replay (the GPU lacks every
    one's instructions) or how many of its kernels run live, the caption naming the others (replayed, or needing smaller
    tiles). GPUs with the same outcome share a column."""
    outcome = {c: {ch: {k: gpus.how_it_runs(k, c) for k in ks} for ch, ks in gpus.chapters().items()} for c in cards}
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
        return ("live" if live == len(how) else "replay" if all(h == "replay" for h in how.values())
                else f"{live} of {len(how)} live")

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
                 tuple((number(ch), *(cell(outcome[col[0]][ch]) for col in columns)) for ch in gpus.chapters()),
                 "live: the chapter's kernels run on that GPU at their default parameters (chapter 0: cuBLAS alone); "
                 "replay: the GPU lacks their instructions, so their results are read back from the records (the "
                 "H100's; for a kernel only the H200 measured, the H200's), with a warning. " + ". ".join(notes)
                 + ". Smaller tiles: the defaults ask for more shared memory per block than the GPU has, which an "
                 "error says; smaller tiles run live. Hardware counters also "
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
        ("shared memory per SM (KiB)", *(str(c.arch.smem_per_sm // gpus.KIB) for c in cards)),
        ("shared memory + L1 (KiB)", *(str(c.arch.l1_smem_bytes // gpus.KIB) for c in cards)),
        ("L2 (MiB)", *(str(c.l2_mib) for c in cards)),
        ("DRAM, datasheet (GiB)", *(str(c.dram_gb) for c in cards)),
        ("DRAM bandwidth, datasheet (GB/s)", *(f"{c.dram_gbs:,}" for c in cards)),
        ("cp.async (chapters 6, 7b)", *(yes(c.cc >= cp_async) for c in cards)),
        ("TF32 tensor cores, mma.sync (8)", *(yes(c.cc >= mma) for c in cards)),
        ("TMA, wgmma, clusters (8, 9)", *(yes(c.cc == hopper) for c in cards)),
    )
    return Table(("", *(c.short for c in cards)), rows,
                 f"{'; '.join(c.name for c in cards)}: from NVIDIA's datasheets (SMs, boost clock, L2, DRAM and its "
                 "bandwidth) and the CUDA C++ Programming Guide (per compute capability); FP32 peak computed as in "
                 "chapter 0", wrap=(0,))


def issue_rate_table(rs: Sequence[issue_rate.Row]) -> Tables:
    """The rows side by side: the FFMA share and the ceiling it sets; the two counted factors of the issue-bound
    speed; then (a second table, for the page's width) what their product accounts for, the measured speed and its
    share of cuBLAS's. Every cell of an unrecorded instance says so."""
    none = "not recorded"

    def cells(r: issue_rate.Row) -> tuple[str, ...]:
        counted = (f"{r.counted_share:.2f}", f"{r.issue_busy:.0%}", f"{r.warps_per_scheduler:.1f}",
                   f"{r.from_counters_tflops:.1f}") if r.counters else (none,) * 4
        timed = (f"{r.measured.gflops / 1e3:.1f}", f"{r.measured.pct_cublas:.1f}%") if r.measured else (none,) * 2
        return (r.label, f"{r.sass_share:.2f}", f"{r.ceiling_tflops:.1f}", *counted, *timed)

    counted = [r.counters for r in rs if r.counters]
    timed = [r.measured for r in rs if r.measured]
    size = rs[0].measured.m if timed else ""
    return Table(("instance", "FFMA share, SASS", "issue ceiling (TFLOP/s)", "FMA-pipe share, counted",
                  "issue slots used", "warps per scheduler", "peak x share x slots (TFLOP/s)", "measured (TFLOP/s)",
                  "% of cuBLAS"),
                 tuple(cells(r) for r in rs),
                 "; ".join(filter(None, (
                     f"at {size}³" if size else "", "SASS: the main loop of the offline sm_90 code",
                     counters_provenance(counted) if counted else "", provenance(timed)))), wrap=(0,)).split(6)


def missing_note(names: Sequence[str]) -> Banner | None:
    """What the page says where a GPU's memory probes are not recorded yet and how to record them (None: all are)."""
    missing = [g for g in names if memory.find(g) is None]
    if not missing:
        return None
    return Banner(f"The memory probes are not yet recorded on {' or '.join(missing)}, so the numbers that need them "
                  f"read {memory.MISSING}. On that GPU, the command gemm-lab record --only memory records them "
                  "(under a minute), and this page then shows them.")


def memory_table(names: Sequence[str]) -> Table:
    """One load's latency at each level and a copy's bandwidth from L2 and from DRAM, a column per GPU."""
    found = {g: memory.find(g) for g in names}

    def latency(rec: memory.MemoryRecord | None, level: str) -> str:
        if rec is None:
            return memory.MISSING
        x = rec.latency_of(level)
        return f"{x['cycles']:.0f} clocks, {x['ns']:.0f} ns ({memory.size_text(x['bytes'])})"

    def bandwidth(rec: memory.MemoryRecord | None, level: str) -> str:
        if rec is None:
            return memory.MISSING
        x = rec.bandwidth_of(level)
        return f"{x['gbs'] / 1e3:.1f} TB/s ({memory.size_text(x['bytes'])})"

    rows = [(f"latency: {memory.LEVEL_NAMES[level]}", *(latency(found[g], level) for g in names))
            for level in memory.MEMORY_LEVELS]
    rows += [(f"copy: {level}", *(bandwidth(found[g], level) for g in names))
             for level in memory.MEMORY_BANDWIDTH_LEVELS]
    origin = "; ".join(memory.provenance(rec) for rec in found.values() if rec)
    caption = ("latency: one thread's chain of dependent loads over the working set in brackets; copy: every SM "
               "copying the working set in brackets, bytes read + written per second")
    return Table(("(working set in brackets)", *names), tuple(rows), caption + (f"; {origin}" if origin else ""),
                 wrap=(0,))
