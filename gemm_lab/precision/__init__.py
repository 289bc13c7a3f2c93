"""Beyond FP32 arithmetic: TF32 on the CPU, kernel 15's INT8 GEMM beside cuBLAS INT8, the Ozaki scheme II's pipeline
(which registers its launcher with the core, `run.register_launcher`) and its accuracy and stage timings.

A wing of gemm_lab: it uses the core and the models.
"""
