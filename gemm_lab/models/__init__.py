"""The paper models the chapters predict with before they measure: FLOPs and bytes, occupancy and budgets, shared-
memory banks, the instruction mix read from SASS, the issue rate, the memory hierarchy and the GPUs' datasheets.

A wing of gemm_lab: it uses the core, never the other wings.
"""
