"""Paper models of a GEMM: FLOPs, bytes moved, arithmetic intensity and the roofline.

Every chapter predicts with these before it measures, and puts prediction and measurement side
by side.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import catalog
from .catalog import KernelSpec, Params

WORD = 4  # bytes per float32
SHARED_BYTES_PER_CLOCK = 32 * WORD  # an SM's shared memory: 32 banks of 4 bytes
# an H100 SM's dense TF32 multiply-adds per clock: NVIDIA's 494.7 TFLOP/s at 1,830 MHz on 132 SMs
TF32_MACS_PER_CLOCK = 1024


def flops(m: int, n: int, k: int) -> float:
    """A GEMM does m*n*k multiply-adds: 2*m*n*k floating-point operations."""
    return 2.0 * m * n * k


def compulsory_bytes(m: int, n: int, k: int) -> float:
    """The least DRAM traffic: read A and B once, write C once."""
    return WORD * (m * k + k * n + m * n)


def reuse(kernel: str | KernelSpec, params: Params | None = None) -> tuple[int, int]:
    """How many outputs share one global load of A and of B.

    Without tiling each thread loads its own row of A and column of B (reuse 1, 1). A block
    that stages a BM x BK tile of A and a BK x BN tile of B in shared memory reuses each element
    of A for BN outputs and each element of B for BM outputs.
    """
    spec = catalog.get(kernel)
    p = spec.full_params(params)
    if spec.name in ("naive", "coalesced"):
        return (1, 1)
    bm, bn = spec.tile(p)
    return (bn, bm)


def global_load_bytes(kernel: str | KernelSpec, m: int, n: int, k: int, params: Params | None = None) -> float:
    """Bytes the kernel asks global memory for: m*n*k*(1/BM + 1/BN) words for a BM x BN tile.

    The model counts requests, before any cache: the L2 (and L1) may serve many of them, so DRAM
    sees this much only when nothing is reused across blocks.
    """
    reuse_a, reuse_b = reuse(kernel, params)
    return WORD * m * n * k * (1 / reuse_a + 1 / reuse_b)


def thread_tile(kernel: str | KernelSpec, params: Params | None = None) -> tuple[int, int]:
    """(TM, TN): the outputs one thread computes from registers (1 x 1 without register blocking)."""
    spec = catalog.get(kernel)
    p = spec.full_params(params)
    return (p.get("TM", 1), p.get("TN", 1))


def shared_load_bytes(kernel: str | KernelSpec, m: int, n: int, k: int, params: Params | None = None) -> float:
    """Bytes read from shared memory: BM*BN*BK*(1/TM + 1/TN) words per block step, m*n*k*(1/TM + 1/TN) in all.

    Each value a thread loads from shared memory feeds TN (from A) or TM (from B) multiply-adds.
    """
    tm, tn = thread_tile(kernel, params)
    return WORD * m * n * k * (1 / tm + 1 / tn)


def shared_bandwidth_gbs(ceilings: dict) -> float:
    """Shared-memory bandwidth of the whole GPU: 32 banks x 4 bytes per clock per SM."""
    return ceilings["sms"] * SHARED_BYTES_PER_CLOCK * ceilings["clock_mhz"] / 1e3


def register_floor(kernel: str | KernelSpec, params: Params | None = None) -> dict[str, int]:
    """Registers a thread cannot do without: TM*TN accumulators and TM + TN operand fragments."""
    tm, tn = thread_tile(kernel, params)
    return {"accumulators": tm * tn, "fragments": tm + tn}


def store_bytes(m: int, n: int) -> float:
    return WORD * m * n


def intensity(kernel: str | KernelSpec, m: int, n: int, k: int, params: Params | None = None) -> float:
    """FLOPs per byte of global traffic the model predicts (loads + stores of C)."""
    return flops(m, n, k) / (global_load_bytes(kernel, m, n, k, params) + store_bytes(m, n))


def roofline(intensity_flop_per_byte: float, peak_gflops: float, bandwidth_gbs: float) -> float:
    """Attainable GFLOP/s at an arithmetic intensity: min(peak, intensity x bandwidth)."""
    return min(peak_gflops, intensity_flop_per_byte * bandwidth_gbs)


@dataclass(frozen=True)
class SMLimits:
    """What one SM holds at once (CUDA Occupancy Calculator values for the compute capability)."""

    registers: int = catalog.REGISTERS_PER_SM
    threads: int = 2048
    blocks: int = 32
    smem_bytes: int = 233472  # 228 KiB on sm_90
    smem_reserved_per_block: int = 1024  # the runtime keeps 1 KiB per resident block
    register_unit: int = 8  # registers per thread are allocated in multiples of 8 (256 per warp)


SM_90 = SMLimits()
SM_70 = SMLimits(smem_bytes=98304, smem_reserved_per_block=0)  # V100: 96 KiB of shared memory


def occupancy(threads: int, registers: int, smem_bytes: int, sm: SMLimits = SM_90) -> dict:
    """Resident blocks per SM, the warps they hold and what limits them: registers, shared memory, threads or the
    block cap (`limits`: the blocks each would allow)."""
    regs = -(-registers // sm.register_unit) * sm.register_unit
    warps = -(-threads // 32)
    limits = {
        "registers": sm.registers // (regs * 32 * warps),
        "shared memory": sm.smem_bytes // (smem_bytes + sm.smem_reserved_per_block),
        "threads": sm.threads // (warps * 32),
        "blocks": sm.blocks,
    }
    blocks = min(limits.values())
    return {"blocks": blocks, "warps": blocks * warps, "limited_by": min(limits, key=limits.get), "limits": limits}


def resident(kernel: str | KernelSpec, params: Params | None = None, sm: SMLimits = SM_90) -> dict:
    """`occupancy` of an instance from its compiled registers and shared memory (`compile.resources`:
    the live kernel on a GPU, else the offline sm_90 ptxas report), with those numbers and their origin."""
    from . import compile

    spec = catalog.get(kernel)
    p = spec.full_params(params)
    r = compile.resources(spec, p)
    return {**occupancy(spec.threads(p), r.registers, r.smem_bytes, sm), "registers": r.registers, "origin": r.origin}
