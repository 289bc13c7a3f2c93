"""What the pages' explorers show live: the size they re-measure at, the kernels that have one and the tile grids they
offer. `lab.plan` records the same grids, so that each explorer replays what a GPU would measure.
"""
from __future__ import annotations

EXPLORER_SIZE = 2048  # the tile explorers sweep here: fast enough to re-measure live on every change

# The kernels whose live tile explorer (widgets.tile_explorer) a chapter shows; benchmarks/widget_latency.py times
# each on a GPU (records/<gpu>/widget_latency.json).
TILE_EXPLORERS = ("smem_tiled", "thread_tile_2d", "vectorized", "multistage", "warp_tiling", "mma_tf32",
                  "mma_tf32_tma", "wgmma_ws_tf32")

# Parameter grids recorded at EXPLORER_SIZE, for the explorers and the tile-size charts.
SWEEPS: dict[str, dict[str, tuple[int, ...]]] = {
    "naive": {"BLOCK": (8, 16, 32)},
    "coalesced": {"BLOCK": (8, 16, 32)},
    "smem_tiled": {"BM": (8, 16, 32, 64), "BN": (8, 16, 32, 64), "BK": (8, 16, 32)},
    "thread_tile_1d": {"BM": (32, 64, 128), "BN": (32, 64, 128), "BK": (8, 16, 32), "TM": (4, 8, 16)},
    "thread_tile_2d": {"BM": (32, 64, 128), "BN": (32, 64, 128), "BK": (8, 16, 32), "TM": (4, 8), "TN": (4, 8)},
    "vectorized": {"BM": (32, 64, 128), "BN": (32, 64, 128), "BK": (8, 16, 32), "TM": (4, 8), "TN": (4, 8)},
    "bank_conflicts": {"BM": (64, 128), "BN": (64, 128), "BK": (8, 16, 32), "TM": (8,), "TN": (8,),
                       "LAYOUT": (0, 1, 2)},
    "prefetch": {"BM": (64, 128), "BN": (64, 128), "BK": (4, 8, 16), "TM": (8,), "TN": (4, 8), "PREFETCH": (0, 1)},
    "multistage": {"BM": (64, 128), "BN": (64, 128), "BK": (8, 16, 32), "TM": (8,), "TN": (8,), "STAGES": (2, 3, 4)},
    "warp_tiling": {"BM": (128, 256), "BN": (128, 256), "BK": (8,), "TM": (8, 16), "TN": (8, 16)},
    "pipelined_warp_tiling": {"BM": (64, 128), "BN": (128, 256), "BK": (8,), "WM": (32, 64), "WN": (32, 64),
                              "TM": (8,), "TN": (8, 16), "STAGES": (2, 3), "ALONG_K": (0,), "STREAM": (0, 1)},
    "mma_tf32": {"BM": (64, 128, 256), "BN": (64, 128, 256), "BK": (32,), "WM": (64,), "WN": (32, 64), "STAGES": (3,)},
    "mma_tf32_tma": {"BM": (64, 128, 256), "BN": (128, 256), "WM": (64,), "WN": (32, 64), "STAGES": (3, 4),
                     "CLUSTER": (1, 2)},
    "wgmma_tf32": {"BM": (128, 256), "BN": (64, 128, 192, 256), "STAGES": (3, 4)},
    "wgmma_ws_tf32": {"BM": (128, 256), "CONSUMERS": (1, 2, 3), "STAGES": (3, 4, 6), "CLUSTER": (1, 2),
                      "PERSIST": (0, 1), "GROUP": (8,)},
}

# Hardware counters (Nsight Compute) at 4096: coalescing (ch1), the traffic model (ch2), banks (ch5),
# stall reasons with and without prefetch (ch6), the warp-tiled kernel beside cuBLAS (ch7).
COUNTER_SIZE = 4096
