"""gemm_lab: the machinery behind the book. Chapters call these few functions.

tile spec (catalog) -> CUDA source in kernels/ -> NVRTC compile (cached) -> launch -> verify against
float64 -> time beside cuBLAS -> record -> plot. Without a GPU every call replays recorded results.
"""
from .timing import bench, bench_all, cublas
from .catalog import KERNELS, validate
from .compile import ptxas_report, resources
from .device import live, mode
from .hardware import ceilings, counters
from .listings import changes, excerpt
from .prose import keep_for_notes, publish
from .records import measurements
from .run import gemm, verify
from .sweeps import sweep
from .tables import banner, budget, measurements_table

__all__ = [
    "KERNELS", "banner", "bench", "bench_all", "budget", "ceilings", "changes", "counters", "cublas", "excerpt", "gemm",
    "keep_for_notes", "live", "measurements", "measurements_table", "mode", "ptxas_report", "publish", "resources",
    "sweep", "validate", "verify",
]
