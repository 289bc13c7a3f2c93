"""What `gemm-lab record` measures: the book's recorded data, declared once.

Chapters replay exactly these cases without a GPU, so a chapter that shows a new case adds it here.
"""
from __future__ import annotations

from . import catalog, published

SIZES = (1024, 2048, 4096, 8192)
EXPLORER_SIZE = 2048  # the tile explorers sweep here: fast enough to re-measure live on every change

# Every kernel at its default parameters at every size (the scoreboard and the chapters' charts).
HEADLINE = ("naive", "coalesced", "smem_tiled", "thread_tile_1d", "thread_tile_2d", "vectorized", "bank_conflicts",
            "prefetch", "multistage")


def seed_table_cases(size: int = 4096) -> tuple[tuple[str, dict[str, int], int], ...]:
    """Seed 000's eight configurations, with and without prefetch, and in the cp.async pipeline."""
    cases = []
    for bm, bk, bn, tm, tn in published.SEED000_CONFIGS:
        tile = {"BM": bm, "BN": bn, "BK": bk, "TM": tm, "TN": tn}
        cases += [("prefetch", {**tile, "PREFETCH": p}, size) for p in (0, 1)]
        stages = catalog.legal_grid("multistage", {**{k: (v,) for k, v in tile.items()}, "STAGES": (2, 3)})
        cases += [("multistage", p, size) for p in stages]  # the stage counts whose buffers fit
    return tuple(cases)

# Single cases a chapter shows beside the headline ones.
EXTRA: tuple[tuple[str, dict[str, int], int], ...] = (
    ("bank_conflicts", {"LAYOUT": 0}, 4096),
    ("bank_conflicts", {"LAYOUT": 1}, 4096),
    *(("prefetch", {"PREFETCH": 0}, size) for size in SIZES),  # the default tile without prefetch
    *seed_table_cases(),
)

# Parameter grids recorded at EXPLORER_SIZE, for the explorers and the tile-size charts.
SWEEPS: dict[str, dict[str, tuple[int, ...]]] = {
    "naive": {"BLOCK": (8, 16, 32)},
    "coalesced": {"BLOCK": (8, 16, 32)},
    "smem_tiled": {"BM": (8, 16, 32, 64), "BN": (8, 16, 32, 64), "BK": (8, 16, 32)},
    "thread_tile_1d": {"BM": (32, 64, 128), "BN": (32, 64, 128), "BK": (8, 16, 32), "TM": (4, 8, 16)},
    "thread_tile_2d": {"BM": (32, 64, 128), "BN": (32, 64, 128), "BK": (8, 16, 32), "TM": (4, 8), "TN": (4, 8)},
    "vectorized": {"BM": (32, 64, 128), "BN": (32, 64, 128), "BK": (8, 16, 32), "TM": (4, 8), "TN": (4, 8)},
    "bank_conflicts": {"BM": (64, 128), "BN": (64, 128), "BK": (8, 16, 32), "TM": (8,), "TN": (8,), "LAYOUT": (0, 1, 2)},
    "prefetch": {"BM": (64, 128), "BN": (64, 128), "BK": (4, 8, 16), "TM": (8,), "TN": (4, 8), "PREFETCH": (0, 1)},
    "multistage": {"BM": (64, 128), "BN": (64, 128), "BK": (8, 16, 32), "TM": (8,), "TN": (8,), "STAGES": (2, 3, 4)},
}

# Hardware counters (Nsight Compute) at 4096: coalescing (ch1), the traffic model (ch2), banks (ch5),
# stall reasons with and without prefetch (ch6).
COUNTER_SIZE = 4096
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
)
