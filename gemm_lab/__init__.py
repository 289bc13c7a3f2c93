"""gemm_lab: the machinery behind the book. Chapters call these few functions.

tile spec (catalog) -> CUDA source in kernels/ -> NVRTC compile (cached) -> launch -> verify against
float64 -> time beside cuBLAS -> record -> plot. Without a GPU every call replays recorded results.

The core (the modules at this level) does that and imports no wing; the wings build on it, each only on the layers
below its own: `models/` (the paper models), `precision/` (beyond FP32), `pages/` (what the book's pages show) and
`lab/` (recording the book's data). This file is the one public face: `import gemm_lab as gl`.
"""
from .catalog import KERNELS, validate
from .compiler import ptxas_report, resources
from .device import live, mode
from .lab.sweeps import sweep
from .liverun import lab_notes, measure
from .models import gpus
from .models.hardware import ceilings, counters
from .pages import exercises, questions, tables
from .pages.exercises import skeleton, submit
from .pages.listings import changes, excerpt
from .pages.prose import publish
from .pages.questions import answer, ask
from .pages.tables import banner, budget, measurements_table
from .precision import ozaki, ozaki_pipeline  # noqa: F401 - ozaki_pipeline registers the scheme's launcher
from .records import measurements
from .run import gemm, verify
from .timing import bench, bench_all, cublas

__all__ = [
    "KERNELS", "answer", "ask", "banner", "bench", "bench_all", "budget", "ceilings", "changes", "counters", "cublas",
    "excerpt", "exercises", "gemm", "gpus", "lab_notes", "live", "measure", "measurements", "measurements_table",
    "mode", "ozaki", "ptxas_report", "publish", "questions", "resources", "skeleton", "submit", "sweep", "tables",
    "validate", "verify",
]
