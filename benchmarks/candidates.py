"""Time a few parameter sets of one kernel beside cuBLAS at one size (a quick tuning aid).

    python benchmarks/candidates.py vectorized 4096 '{"BK": 16}' '{"BM": 64, "TN": 4}'
"""
import json
import sys

import gemm_lab as gl

kernel, size, *candidates = sys.argv[1:]
print(gl.measurements_table([gl.bench(kernel, int(size), json.loads(c)) for c in candidates or ["{}"]]))
