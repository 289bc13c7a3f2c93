"""How many blocks of an instance one SM holds at once, by the limits of the GPU it runs on.

In the core because launching needs it: a persistent kernel starts one block per resident slot (`run.slots`), and
on an A100 or an RTX card those slots are not an H100's. Live, the limits are the device's own (`device.GPU`);
offline, sm_90's (H100 and H200), where every recorded number was measured.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import catalog, compiler, device
from .catalog import KernelSpec, Params
from .spec import MAX_REGISTERS_PER_THREAD, MAX_THREADS_PER_BLOCK, as_integer, ceil_div, round_up


@dataclass(frozen=True)
class SMLimits:
    """What one SM holds at once. The defaults are sm_90's (the CUDA occupancy calculator's values)."""

    registers: int = catalog.REGISTERS_PER_SM
    threads: int = 2048
    blocks: int = 32
    smem_bytes: int = catalog.SM90_SMEM_PER_SM
    smem_reserved_per_block: int = catalog.SM90_SMEM_RESERVED  # the runtime keeps 1 KiB per resident block
    register_unit: int = 8  # registers per thread are allocated in multiples of 8 (256 per warp)


SM_90 = SMLimits()


def sm_limits() -> SMLimits:
    """The live GPU's limits per SM, as it reports them; sm_90's in replay."""
    if not device.live():
        return SM_90
    gpu = device.gpu()
    return SMLimits(registers=gpu.registers_per_sm, threads=gpu.max_threads_per_sm, blocks=gpu.max_blocks_per_sm,
                    smem_bytes=gpu.smem_per_sm, smem_reserved_per_block=gpu.smem_reserved_per_block)


def occupancy(threads: int, registers: int, smem_bytes: int, sm: SMLimits | None = None) -> dict:
    """Resident blocks per SM, the warps they hold and what limits them: registers, shared memory, threads or the
    block cap (`limits`: the blocks each would allow). `sm`: default, the GPU's own (`sm_limits`)."""
    sm = sm or sm_limits()
    tops = {"threads": (1, min(MAX_THREADS_PER_BLOCK, sm.threads)), "registers": (1, MAX_REGISTERS_PER_THREAD),
            "smem_bytes": (0, sm.smem_bytes - sm.smem_reserved_per_block)}  # a block's, a thread's, a block's
    threads, registers, smem_bytes = (as_integer(what, v) for what, v in zip(tops, (threads, registers, smem_bytes)))
    for (what, (low, top)), v in zip(tops.items(), (threads, registers, smem_bytes)):
        if not low <= v <= top:
            raise ValueError(f"{what} {v}: from {low} to {top} ({'a thread' if what == 'registers' else 'a block'})")
    regs = round_up(registers, sm.register_unit)
    warps = ceil_div(threads, 32)
    limits = {
        "registers": sm.registers // (regs * 32 * warps),
        "shared memory": sm.smem_bytes // (smem_bytes + sm.smem_reserved_per_block),
        "threads": sm.threads // (warps * 32),
        "blocks": sm.blocks,
    }
    blocks = min(limits.values())
    return {"blocks": blocks, "warps": blocks * warps, "limited_by": min(limits, key=limits.get), "limits": limits}


def resident(kernel: str | KernelSpec, params: Params | None = None, sm: SMLimits | None = None) -> dict:
    """`occupancy` of an instance from its compiled registers and shared memory (`compiler.resources`: the live kernel
    on a GPU, else the offline sm_90 ptxas report), with those numbers and their origin."""
    spec = catalog.get(kernel)
    p = spec.full_params(params)
    r = compiler.resources(spec, p)
    return {**occupancy(spec.threads(p), r.registers, r.smem_bytes, sm), "registers": r.registers, "origin": r.origin}
