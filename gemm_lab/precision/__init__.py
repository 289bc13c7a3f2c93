"""Beyond FP32 arithmetic: TF32 on the CPU, kernel 15's INT8 GEMM beside cuBLAS INT8, the Ozaki scheme II
(`ozaki`: its arithmetic and accuracy contract; `ozaki_pipeline`: its launch, which registers with the core,
`run.register_launcher`) and its accuracy and stage timings.

A wing of gemm_lab: it uses the core and the models.
"""
