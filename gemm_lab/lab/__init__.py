"""Recording the book's data: the plan of what `gemm-lab record` measures, sweeps and autotuning, cuBLAS timed other
ways, the power-cap races, compute-sanitizer runs, the published claims and the command line.

The top wing of gemm_lab: it may use every other layer.
"""
