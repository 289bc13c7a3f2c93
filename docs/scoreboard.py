"""Redraw the README's chart (docs/scoreboard.svg) from the records: python docs/scoreboard.py

The same chart opens the book (book/intro.md): every kernel against cuBLAS in its own math, chapter by chapter.
"""
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import gemm_lab as gl  # noqa: E402
from gemm_lab.lab import plan
from gemm_lab.pages import plots  # noqa: E402

size = plan.SIZES[-1]
board = gl.bench_all([(k, None, size) for k in (*plan.HEADLINE, *plan.TENSOR_CORES, *plan.EMULATION)], progress=False)
fig = plots.scoreboard(board)
fig.savefig(Path(__file__).with_suffix(".svg"), metadata={"Date": None})
