"""Pictures of ideas, drawn by code from a kernel's own parameters: another instance redraws them.

`plots` charts measurements; this package draws what a kernel does (which tiles a block reads, which lanes touch
which bank, when copies and math overlap). Where a picture needs durations it takes them from a stated model,
and says so on its face. Every figure keeps `style`'s rule: text at least the page's body size at 800 px.

One module per subject, and this file the public face (`from gemm_lab.pages import diagrams; diagrams.tiling(...)`):
- `tiles`: which tiles of A, B and C a block, a warp, a thread or a lane owns and reads, to scale;
- `machine`: the GPU's levels (the primer's diagram), and a kernel's intensity and registers against them;
- `bank_access`: which words and banks of shared memory a warp's lanes touch;
- `pipelines`: timelines of copies and math, and the mbarrier rings of kernels 13 and 14;
- `tensor_cores`: mma.sync fragments, ldmatrix, the swizzle, wgmma's warpgroup and descriptor, TMA boxes, clusters;
- `ozaki_scheme`: chapter 10's remainders, pipeline and outlier column;
- `package`: gemm_lab itself, its core and wings ("How this book runs").
A new picture goes in the module of its subject, and its name here.
"""
from ...models.banks import lane_position  # chapter 7 reads the lane grids' numbering beside the pictures
from .bank_access import bank_grid, float4_lanes, lds128_cases, lds128_passes, quarter_warps
from .machine import gpu_diagram, levels
from .ozaki_scheme import crt, outlier_channel, ozaki_pipeline
from .package import package_layers
from .pipelines import (
                        RING_STATES,
                        block_steps,
                        handoff_schedule,
                        load_latency,
                        mbarrier_handoff,
                        mbarrier_ring,
                        pipeline,
                        producer_consumer,
                        ring_flight,
                        ring_moment,
)
from .tensor_cores import (
                        DESCRIPTOR_FIELDS,
                        cluster_reads,
                        descriptor_fields,
                        k_major_desc,
                        ldmatrix_rows,
                        ldmatrix_x4,
                        mma_fragment,
                        mma_fragments,
                        swizzle_offset,
                        tma_boxes,
                        tma_swizzle,
                        warpgroup,
                        wgmma_descriptor,
                        wgmma_steps,
                        wgmma_wait,
)
from .tiles import loop_nest, outer_product, stream_k, tiling, transposed_a, warp_access, warp_tiles

__all__ = [
    "DESCRIPTOR_FIELDS", "RING_STATES", "bank_grid", "block_steps", "cluster_reads", "crt", "descriptor_fields",
    "float4_lanes", "gpu_diagram", "handoff_schedule", "k_major_desc", "lane_position", "ldmatrix_rows", "ldmatrix_x4",
    "lds128_cases", "lds128_passes", "levels",
    "load_latency", "loop_nest", "mbarrier_handoff", "mbarrier_ring", "mma_fragment", "mma_fragments",
    "outer_product", "outlier_channel", "ozaki_pipeline", "package_layers", "pipeline", "producer_consumer",
    "quarter_warps", "ring_flight", "ring_moment", "stream_k", "swizzle_offset", "tiling", "tma_boxes", "tma_swizzle",
    "transposed_a", "warp_access", "warp_tiles", "warpgroup", "wgmma_descriptor", "wgmma_steps", "wgmma_wait",
]
