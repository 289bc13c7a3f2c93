"""Redraw the README's chart (docs/scoreboard.svg) from the records: python docs/scoreboard.py"""
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import gemm_lab as gl  # noqa: E402
from gemm_lab import plan, plots  # noqa: E402

board = gl.bench_all([(k, None, s) for k in plan.HEADLINE for s in plan.SIZES], progress=False)
fig = plots.vs_size(board, title="Every kernel of the book vs cuBLAS SGEMM")
fig.savefig(Path(__file__).with_suffix(".svg"), metadata={"Date": None})
