"""Shared-memory bank model: which bank each lane of a warp hits, and how many wavefronts it costs.

Shared memory has 32 banks of 4-byte words; bank = (byte address / 4) mod 32. One wavefront serves
at most one word per bank, to any number of lanes that want that word (a broadcast). A 32-bit
request of a warp is served in one phase; a 64-bit request in two half-warp phases and a 128-bit
request in four quarter-warp phases (each at most 128 bytes), where consecutive phases that ask
for exactly the same addresses share a pass. Each phase takes as many wavefronts as its busiest
bank has distinct words; conflicts are the wavefronts above one per phase, which is how Nsight
Compute counts `l1tex__data_bank_conflicts_pipe_lsu_mem_shared_*` (the phase rule for wide
accesses is the one that reproduces the counters recorded on the H100 in chapter 5).

`sites()` lists the shared-memory instructions of a catalogued kernel, as compiled, with the
addresses its first warp touches, so the model can be checked against the hardware for a launch.

128-bit loads in more detail (chapter 7b): `fragment_loads()` gives the float4 each lane of warp 0 reads in each
128-bit load of one k, for the kernels whose main loop reads its operands that way, and `lds128_wavefronts()` counts
the wavefronts of such a load under three models (`LDS128_MODELS`). Only the last, "h100", reproduces what Nsight
Compute counts on the H100 for chapter 4's, chapter 7's and chapter 7b's kernels.
"""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from .. import catalog
from ..catalog import KernelSpec, Params
from ..spec import as_integer

BANKS = 32
WORD = 4


@dataclass(frozen=True)
class Access:
    """One shared-memory instruction of one warp: the byte address of each active lane."""

    name: str
    addresses: tuple[int, ...]
    width: int = 4  # bytes per lane: 4, 8 or 16
    store: bool = False
    per_step: int = 1  # times each warp issues it per BK tile (one pass of the main loop)

    def phases(self) -> list[tuple[int, ...]]:
        """Lane addresses served together: the warp (32-bit), half-warps (64-bit) or quarter-warps
        (128-bit), with consecutive identical phases merged."""
        lanes = 32 * WORD // self.width if self.width > WORD else 32
        groups = [self.addresses[i:i + lanes] for i in range(0, len(self.addresses), lanes)]
        merged: list[tuple[int, ...]] = []
        for g in groups:
            if not merged or sorted(set(g)) != sorted(set(merged[-1])):
                merged.append(g)
        return merged

    def _words(self, addresses: tuple[int, ...]) -> set[int]:
        return {a // WORD + w for a in addresses for w in range(self.width // WORD)}

    @property
    def wavefronts(self) -> int:
        total = 0
        for phase in self.phases():
            per_bank: dict[int, int] = {}
            for word in self._words(phase):
                per_bank[word % BANKS] = per_bank.get(word % BANKS, 0) + 1
            total += max(per_bank.values())
        return total

    @property
    def ideal(self) -> int:
        """Fewest wavefronts: one per phase for every 128 distinct bytes it asks for."""
        return sum(max(1, math.ceil(len(self._words(p)) * WORD / (BANKS * WORD))) for p in self.phases())

    @property
    def conflicts(self) -> int:
        return self.wavefronts - self.ideal

    def banks(self) -> list[int]:
        """First bank touched by each lane."""
        return [(a // WORD) % BANKS for a in self.addresses]


def access(name: str, words: list[int], width: int = 4, store: bool = False, per_step: int = 1) -> Access:
    """An access from per-lane word offsets (float indices) into shared memory: one offset per active lane (1 to 32,
    each at least 0), `width` bytes per lane (4, 8 or 16, aligned to it), issued `per_step` >= 1 times per BK tile."""
    offsets = [as_integer(f"{name}: a lane's word offset", w) for w in words]
    width, per_step = as_integer(f"{name}: width", width), as_integer(f"{name}: per_step", per_step)
    if not 1 <= len(offsets) <= 32:
        raise ValueError(f"{name}: {len(offsets)} lanes; a warp has 1 to 32 active lanes")
    if min(offsets) < 0:
        raise ValueError(f"{name}: word offset {min(offsets)}; shared memory starts at offset 0")
    if width not in (4, 8, 16):
        raise ValueError(f"{name}: width {width} bytes; a lane reads 4, 8 or 16")
    if misaligned := [w for w in offsets if WORD * w % width]:
        raise ValueError(f"{name}: word offset {misaligned[0]} is not aligned to {width}-byte accesses "
                         f"(a multiple of {width // WORD} words)")
    if per_step < 1:
        raise ValueError(f"{name}: per_step {per_step}; an access is issued at least once per tile")
    if not isinstance(store, bool):
        raise TypeError(f"{name}: store must be True or False, not {store!r}")
    return Access(name, tuple(WORD * w for w in offsets), width, store, per_step)


def sites(kernel: str | KernelSpec, params: Params | None = None) -> list[Access]:
    """The shared-memory loads and stores of the kernel's main loop, as warp 0 issues them first."""
    spec = catalog.get(kernel)
    p = catalog.validate(spec, params)
    lanes = range(32)
    threads = spec.threads(p)
    if spec.name == "smem_tiled":
        bm, bn, bk = p["BM"], p["BN"], p["BK"]
        return [
            access("store As[r][c]", [(i // bk) * bk + i % bk for i in lanes], store=True,
                   per_step=math.ceil(bm * bk / threads)),
            access("store Bs[r][c]", [(i // bn) * bn + i % bn for i in lanes], store=True,
                   per_step=math.ceil(bk * bn / threads)),
            access("load As[tr][kk]", [(t // bn) * bk for t in lanes], per_step=bk),
            access("load Bs[kk][tc]", [t % bn for t in lanes], per_step=bk),
        ]
    if spec.name == "thread_tile_2d":
        # As compiled: the unrolled loops let the compiler merge four consecutive scalar reads into
        # one 128-bit load, along kk for As[tr+i][kk] and along j for Bs[kk][tc+j] (LDS.128 in SASS).
        bm, bn, bk, tm, tn = (p[x] for x in ("BM", "BN", "BK", "TM", "TN"))
        return [
            access("store As[r][c]", [(i // bk) * bk + i % bk for i in lanes], store=True,
                   per_step=math.ceil(bm * bk / threads)),
            access("store Bs[r][c]", [(i // bn) * bn + i % bn for i in lanes], store=True,
                   per_step=math.ceil(bk * bn / threads)),
            access("load As[tr+i][kk..kk+3]", [(t // (bn // tn) * tm) * bk for t in lanes], width=16,
                   per_step=tm * bk // 4),
            access("load Bs[kk][tc+j..tc+j+3]", [t % (bn // tn) * tn for t in lanes], width=16,
                   per_step=bk * tn // 4),
        ]
    # prefetch: 06's tiles, double-buffered; vectorized_parts: 06's with B's reads spaced or not (SPACED_B)
    if spec.name in ("vectorized", "bank_conflicts", "prefetch", "vectorized_parts"):
        return _vectorized_sites(p, threads)
    raise ValueError(f"no shared-memory access model for {spec.name}")


def fragment_sites(kernel: str | KernelSpec, params: Params | None = None) -> list[Access]:
    """The shared-memory reads that fill one k8 slice of a warp's mma.sync fragments, as warp 0 issues them.

    mma_tf32 (11_tf32_mma.cu): B[t][g] by 32-bit loads, rows BN floats apart (unpadded, the conflicts the padding
    removes) and BN + 8 apart (as the kernel pads them), and A by ldmatrix.x4, each lane the address of one
    16-byte row, rows BK + 4 floats apart. mma_tf32_tma (13_tf32_mma_tma.cu): B by 64-bit loads from a 32 x 32 box
    with the 128-byte swizzle, lane 4g + t reading row t at chunk 0, 0, 4, 4, 1, 1, 5, 5 (by g) XOR t.
    """
    spec = catalog.get(kernel)
    p = catalog.validate(spec, params)
    lanes = range(32)
    if spec.name == "mma_tf32":
        bn, bk = p["BN"], p["BK"]
        return [
            access("B fragment, rows BN apart", [(i % 4) * bn + i // 4 for i in lanes]),
            access("B fragment, rows BN + 8 apart", [(i % 4) * (bn + 8) + i // 4 for i in lanes]),
            access("A fragment by ldmatrix.x4, rows BK + 4 apart",
                   [(i % 8 + 8 * (i // 8 % 2)) * (bk + 4) + 4 * (i // 16) for i in lanes], width=16),
        ]
    if spec.name == "mma_tf32_tma":
        def word(lane: int) -> int:  # the kernel's b_at(t, CH[g]) in floats
            g, t = lane // 4, lane % 4
            chunk = g // 2 % 2 * 4 + g // 4
            return (t * 128 + ((chunk ^ t) % 8) * 16 + g % 2 * 8) // WORD
        return [access("B fragment from the swizzled TMA box, 64-bit loads", [word(i) for i in lanes], width=8)]
    raise ValueError(f"no fragment model for {spec.name}: mma_tf32 and mma_tf32_tma have one")


def swizzle_sites(params: Params | None = None, kk: int = 0) -> dict[str, tuple[Access, Access]]:
    """Kernel 13's fragment reads from its TMA boxes (13_tf32_mma_tma.cu, warp 0, 8-deep slice kk), each as the box
    would lie without the 128-byte swizzle and as it lies with it: {operand: (plain, swizzled)}. A by ldmatrix.x4,
    lane l giving row l % 8 + 8 (l / 16) of A's box at chunk 2 kk + (l / 8) % 2 (the kernel's a_row and a_swz); B by
    64-bit loads, lane 4g + t reading row t at chunk CH[g] (fragment_sites). A box lands dense, 128 bytes a row: TMA
    has no padding, so the swizzle is what keeps these reads free of conflicts."""
    spec = catalog.get("mma_tf32_tma")
    catalog.validate(spec, params)  # validated; the reads of warp 0 do not depend on the tile sizes
    lanes = range(32)

    def a_word(lane: int, swizzle: bool) -> int:
        row, chunk = lane % 8 + 8 * (lane // 16), 2 * kk + lane // 8 % 2
        return (row * 128 + ((chunk ^ row % 8) if swizzle else chunk) * 16) // WORD

    def b_word(lane: int, swizzle: bool) -> int:
        g, t = lane // 4, lane % 4
        chunk = g // 2 % 2 * 4 + g // 4
        return (t * 128 + ((chunk ^ t) % 8 if swizzle else chunk) * 16 + g % 2 * 8) // WORD

    return {
        "A, ldmatrix.x4": tuple(access(f"A by ldmatrix.x4, {how}", [a_word(i, s) for i in lanes], width=16)
                                for how, s in (("box without swizzle", False), ("128-byte swizzle", True))),
        "B, 64-bit loads": tuple(access(f"B by 64-bit loads, {how}", [b_word(i, s) for i in lanes], width=8)
                                 for how, s in (("box without swizzle", False), ("128-byte swizzle", True))),
    }


def a_col(layout: int, k: int, m: int) -> int:
    """Stored column of A-tile element (k, m) under LAYOUT 0/1 (identity) or 2 (XOR swizzle)."""
    return m ^ ((k // 4) % 8 * 4) if layout == 2 else m


def _vectorized_sites(p: dict[str, int], threads: int) -> list[Access]:
    bm, bn, bk, tm, tn = (p[x] for x in ("BM", "BN", "BK", "TM", "TN"))
    layout = p.get("LAYOUT", 0)
    row = bm + catalog.a_pad(p)  # floats per stored row of the A tile
    lanes = range(32)
    per_thread_a = math.ceil(bm * bk / 4 / threads)
    a_float4 = [(i // (bk // 4)) * bk + i % (bk // 4) * 4 for i in lanes]  # float4 i of a BM x BK tile, row-major
    if p.get("TRANSPOSED_A", 1):
        a_sites = [access(f"store As[c+{q}][r] (transposing)",
                          [(w % bk + q) * row + a_col(layout, w % bk + q, w // bk) for w in a_float4], store=True,
                          per_step=per_thread_a) for q in range(4)]  # four scalar writes per float4 read from A
        a_sites.append(access("load As[kk][tr+i] (float4)", [a_col(layout, 0, t // (bn // tn) * tm) for t in lanes],
                              width=16, per_step=bk * tm // 4))
    else:  # vectorized_parts' A tile as A's rows lie: float4 copies; as compiled, four consecutive kk of a row merge
        # into one 128-bit load (thread_tile_2d's model)
        a_sites = [access("store As[r][c] (float4)", a_float4, width=16, store=True, per_step=per_thread_a),
                   access("load As[tr+i][kk..kk+3]", [(t // (bn // tn) * tm) * bk for t in lanes], width=16,
                          per_step=tm * bk // 4)]
    spaced = p.get("SPACED_B", 1)  # float4 groups BN / (TN / 4) apart (lanes side by side), or a thread's TN together
    return [
        *(s for s in a_sites if s.store),
        access("store Bs[r][c] (float4)", [(i // (bn // 4)) * bn + i % (bn // 4) * 4 for i in lanes], width=16,
               store=True, per_step=math.ceil(bk * bn / 4 / threads)),
        *(s for s in a_sites if not s.store),
        access("load Bs[kk][tc+j] (float4)", [t % (bn // tn) * (4 if spaced else tn) for t in lanes], width=16,
               per_step=bk * tn // 4),
    ]


def predict(kernel: str | KernelSpec, m: int, n: int, k: int, params: Params | None = None) -> dict[str, float]:
    """Whole-launch totals the hardware counts: shared instructions and bank conflicts, loads and stores."""
    spec = catalog.get(kernel)
    p = catalog.validate(spec, params, (m, n, k))
    gx, gy, _ = spec.grid(p, m, n)
    warps = gx * gy * math.ceil(spec.threads(p) / 32) * math.ceil(k / p["BK"])
    totals = {"ld_instructions": 0.0, "st_instructions": 0.0, "ld_conflicts": 0.0, "st_conflicts": 0.0}
    for s in sites(spec, p):
        kind = "st" if s.store else "ld"
        totals[f"{kind}_instructions"] += warps * s.per_step
        totals[f"{kind}_conflicts"] += warps * s.per_step * s.conflicts
    return totals


def wavefronts_per_step(kernel: str | KernelSpec, params: Params | None = None) -> float:
    """Shared-memory wavefronts one warp needs per BK-deep main-loop step (loads and stores)."""
    return sum(s.wavefronts * s.per_step for s in sites(kernel, params))


def fma_ceiling(kernel: str | KernelSpec, params: Params | None = None, fp32_lanes_per_sm: int = 128) -> float:
    """The fraction of FFMA peak that shared memory allows: an SM serves one wavefront per clock
    and issues fp32_lanes_per_sm / 32 warp FFMAs per clock, so a warp's step costs
    max(FFMAs / (lanes / 32), wavefronts) clocks of the SM's shared pipe and FMA pipes."""
    spec = catalog.get(kernel)
    p = catalog.validate(spec, params)
    ffma_clocks = p["TM"] * p["TN"] * p["BK"] / (fp32_lanes_per_sm / 32)
    return min(1.0, ffma_clocks / wavefronts_per_step(spec, p))


# 128-bit loads: how many wavefronts a warp's float4 reads take. Three models; chapter 7b checks them against Nsight
# Compute's counts of chapters 4, 7 and 7b, and only "h100" fits all three.
LDS128_MODELS = {
    "quarter": "one wavefront per quarter-warp (8 lanes x 16 bytes = 128 bytes), more if its float4s conflict",
    "bytes": "a half-warp's distinct float4s packed into wavefronts of 128 bytes, as far as the banks allow",
    "h100": "one wavefront per quarter-warp, but the two quarter-warps of a half-warp share one when each reads at "
            "most two distinct float4s",
}
SHARED_AT = 2  # distinct float4s per quarter-warp up to which the two quarter-warps of a half-warp share a wavefront


def float4_passes(float4s: Sequence[int]) -> int:
    """Wavefronts that deliver these float4s (16-byte words of shared memory, by index) to lanes at once: float4 f
    sits on banks 4(f mod 8) to 4(f mod 8) + 3, a wavefront reads one word per bank, and lanes asking for the same
    float4 share its read (a broadcast). So: the most distinct float4s on one group of four banks."""
    groups = Counter(f % (BANKS * WORD // 16) for f in set(float4s))
    return max(groups.values(), default=0)


def lds128_wavefronts(float4s: Sequence[int], rule: str = "h100") -> int:
    """Wavefronts of one 128-bit shared load of a warp whose lane i reads float4 `float4s[i]`, by `rule` (a key of
    LDS128_MODELS): each quarter-warp apart ("quarter"); each half-warp's float4s packed ("bytes"); or as the H100
    counts ("h100"): quarter-warps apart, but a half-warp at once when each of its quarter-warps reads at most
    SHARED_AT distinct float4s."""
    if len(float4s) != 32:
        raise ValueError(f"a warp's load: 32 lanes, not {len(float4s)}")
    quarters = [float4s[i:i + 8] for i in range(0, 32, 8)]
    if rule == "quarter":
        return sum(map(float4_passes, quarters))
    if rule == "bytes":
        return sum(float4_passes(float4s[i:i + 16]) for i in (0, 16))
    if rule == "h100":
        return sum(float4_passes([*a, *b]) if max(len(set(a)), len(set(b))) <= SHARED_AT else
                   float4_passes(a) + float4_passes(b) for a, b in zip(quarters[::2], quarters[1::2]))
    raise ValueError(f"no model {rule!r}: {', '.join(LDS128_MODELS)}")


def check_lane(lane: object) -> int:
    """A lane of a warp, 0 to 31, as an int."""
    lane = as_integer("lane", lane)
    if not 0 <= lane < 32:
        raise ValueError(f"lane = {lane}: a warp has lanes 0 to 31")
    return lane


def lane_position(lane: int, params: dict[str, int], kernel: str = "warp_tiling") -> tuple[int, int]:
    """(lane_m, lane_n) of a lane in its warp's lane grid, numbered as the kernel's source numbers them.

    warp_tiling (10_warp_tiling.cu): along the wide side of the grid by lane % 8, along the narrow one diagonally,
    so that every quarter-warp covers all 8 x all 4. pipelined_warp_tiling (10b): a quarter-warp is 4 lanes along the
    wide side by 2 along the narrow one."""
    lane = check_lane(lane)
    if kernel == "warp_tiling":
        wide, narrow = lane % 8, (lane // 8 + lane % 8) % 4
    elif kernel == "pipelined_warp_tiling":
        wide, narrow = lane // 8 % 2 * 4 + lane % 4, lane // 16 * 2 + lane // 4 % 2
    else:
        raise ValueError(f"lane_position: {kernel!r} has no lane grid (warp_tiling or pipelined_warp_tiling)")
    return (wide, narrow) if params["WM"] // params["TM"] == 8 else (narrow, wide)


def fragment_loads(kernel: str | KernelSpec, params: Params | None = None) -> list[tuple[str, tuple[int, ...], int]]:
    """The 128-bit shared loads that feed one k of the main loop, as warp 0 issues them: (operand, the float4 each of
    the 32 lanes reads, counted from the start of the operand's row of the tile, and how many such loads per k).

    Chapter 4's kernels (vectorized, bank_conflicts, prefetch): from `sites()`. Warp tiling (kernels 10 and 10b): a
    lane reads its TM/4 float4s of A at its row of the warp's lane grid and its TN/4 float4s of B at its column
    (`lane_position`), one stride apart from load to load, so every load of an operand reads alike."""
    spec = catalog.get(kernel)
    p = catalog.validate(spec, params)
    if spec.name in ("warp_tiling", "pipelined_warp_tiling"):
        where = [lane_position(lane, p, spec.name) for lane in range(32)]
        return [("A", tuple(m for m, _ in where), p["TM"] // 4), ("B", tuple(n for _, n in where), p["TN"] // 4)]
    loads = [s for s in sites(spec, p) if s.width == 16 and not s.store]
    if not loads:
        raise ValueError(f"{spec.name} reads no float4s from shared memory")
    return [(s.name.split()[1][:1].upper(), tuple(a // 16 for a in s.addresses), s.per_step // p["BK"]) for s in loads]


def lds128_per_load(kernel: str | KernelSpec, params: Params | None = None, rule: str = "h100") -> float:
    """Wavefronts per 128-bit fragment load of a warp, averaged over one k's loads, by `rule`: what Nsight Compute's
    l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld over smsp__inst_executed_op_shared_ld measures when these are
    a kernel's only shared loads."""
    loads = fragment_loads(kernel, params)
    return sum(lds128_wavefronts(f, rule) * n for _, f, n in loads) / sum(n for _, _, n in loads)
