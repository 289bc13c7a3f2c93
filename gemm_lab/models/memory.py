"""The memory hierarchy measured: how long one load waits at each level, and how fast a copy moves data.

`measure()` runs kernels/memory_probes.cu on the live GPU, in a few seconds: one thread chases a chain of addresses
through working sets from a few KiB to well beyond L2 (the latency of shared memory, L1, L2 and DRAM, and the curve
between them), and every SM copies a working set that sits in L2, then one that only DRAM can hold. `hierarchy()`
returns it as a `MemoryRecord`: measured now when live, read from records/<gpu>/memory.json in replay
(`gemm-lab record --only memory` writes it). `prose_numbers()` formats what the GPU primer's prose quotes, Little's
law and an occupancy worked through included.
"""
from __future__ import annotations

import functools
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from .. import catalog, device, liverun, records, turns
from ..compiler import NVRTC_OPTIONS
from ..spec import round_up
from . import gpus, model

PROBE = catalog.PROBES["memory_probes"]
LINE = 128  # bytes: each link of the chase sits on a cache line of its own
STRIDE_LINES = 8  # consecutive links lie 8 lines (1 KiB) apart: different lines, but the same few memory pages
STEPS = 1 << 15  # timed loads per chase
L1_BYTES = 16 * 2**10  # the L1 level's working set: fits in the L1 of any GPU the book runs on
SMALLEST = 4 * 2**10  # the sweep's smallest working set
SHARED_STRIDE = 1  # the shared-memory chase steps to the next word
COPY_BYTES = 2**30  # what one timed copy launch moves at least (the L2 copy repeats over its working set)
COPY_RUNS = 10  # timed copy launches, after a warm-up
COPY_THREADS = 256  # per block; enough blocks to fill every SM
LEVEL_NAMES = {"shared": "shared memory", "L1": "L1", "L2": "L2", "DRAM": "DRAM"}
MISSING = "(not yet recorded)"
PROBES_S = 10.0  # about what `measure` takes on an H100 or H200


def working_sets(l2_bytes: int) -> dict[str, int]:
    """The chase's working set at each cache level: 16 KiB for L1, the largest power of two up to a quarter of L2,
    and for DRAM the smallest power of two from 8 x L2 (also the DRAM copy's working set)."""
    l2 = 1 << (l2_bytes // 4).bit_length() - 1
    return {"L1": L1_BYTES, "L2": l2, "DRAM": 1 << (8 * l2_bytes - 1).bit_length()}


def sweep_sizes(l2_bytes: int) -> list[int]:
    """Working sets of the latency curve: powers of two from SMALLEST to the DRAM level's."""
    top = working_sets(l2_bytes)["DRAM"]
    return [1 << e for e in range(SMALLEST.bit_length() - 1, top.bit_length())]


def hierarchy(gpu: str | None = None) -> MemoryRecord:
    """The memory hierarchy of `gpu` (default: the reader's): measured now when that is the live GPU, else the
    record, or a LookupError that says how to record one."""
    with liverun.work("probes", "memory probes", PROBES_S) as task:
        if task.live and gpu in (None, device.gpu().name):
            task.result = task.result or _measured()
            return task.result
    found = recorded(gpu)
    if found is None:
        name = gpu or device.replay_gpu()
        raise LookupError(f"the memory probes are not yet recorded on {name}: run `gemm-lab record --only memory` "
                          "on that GPU")
    return found


def recorded(gpu: str | None = None) -> MemoryRecord | None:
    """The recorded memory hierarchy of a GPU (default: the replay GPU), or None."""
    rows = records.read_kind(records.MEMORY, gpu)
    path = records.gpu_dir(gpu) / f"{records.MEMORY}.json"
    return MemoryRecord.from_row(rows[0], str(path)) if rows else None


def save(rec: MemoryRecord) -> None:
    records.upsert(records.gpu_dir(rec.gpu) / f"{records.MEMORY}.json", [rec.to_row()], ("gpu",))


@functools.cache
def _measured() -> MemoryRecord:
    return measure()


def measure() -> MemoryRecord:
    """Run the probes on the live GPU (a few seconds on an H100)."""
    gpu = device.gpu()
    props = properties()
    chase, shared, copy = _kernels()
    sets = working_sets(props["l2_bytes"])
    sweep = [{"bytes": size, **_chase(chase, size, props["l2_bytes"])} for size in sweep_sizes(props["l2_bytes"])]
    by_size = {x["bytes"]: x for x in sweep}
    latency = [{"level": "shared", "bytes": 4 * 1024, **_chase_shared(shared)}]
    latency += [{"level": level, **by_size[size]} for level, size in sets.items()]
    threads_per_sm = props["max_threads_per_sm"]
    bandwidth = [{"level": level, "bytes": sets[level], "gbs": _copy_gbs(copy, sets[level], gpu.sms, threads_per_sm)}
                 for level in MEMORY_BANDWIDTH_LEVELS]
    return MemoryRecord(
        kernel=PROBE.name, source=PROBE.source, source_sha256=PROBE.source_sha256(),
        build_sha256=PROBE.build_sha256(), gpu=gpu.name,
        recorded_at=records.utc_now(),
        versions=records.versions(gpu),
        properties=props, latency=latency, bandwidth=bandwidth, sweep=sweep)


def properties() -> dict[str, Any]:
    """What the live device reports about itself (DEVICE_PROPERTIES)."""
    import cupy

    gpu = device.gpu()
    return {"cc": list(gpu.cc), "sms": gpu.sms, "clock_mhz": gpu.clock_mhz, "smem_per_block": gpu.smem_per_block,
            "l2_bytes": gpu.l2_bytes, "dram_bytes": cupy.cuda.runtime.memGetInfo()[1],
            **{key: getattr(gpu, key) for key in device.SM_ATTRIBUTES}}


def _kernels() -> tuple[Any, Any, Any]:
    """The probe's kernels (chase_global, chase_shared, copy_cg), compiled for the live GPU."""
    import cupy

    module = cupy.RawModule(code=PROBE.source_text(), options=(*NVRTC_OPTIONS, f"-arch={device.gpu().arch}"))
    return tuple(module.get_function(f) for f in PROBE.functions)


def ring(nbytes: int) -> Any:
    """The chase's ring over `nbytes` as a NumPy array of 8-byte words: the word at the start of each 128-byte line
    holds the byte offset of the next line to visit, STRIDE_LINES on (at the end of a pass, the next pass's first
    line), so one lap from offset 0 visits every line once; the other words are 0."""
    import numpy as np

    order = np.arange(nbytes // LINE, dtype=np.uint64).reshape(-1, STRIDE_LINES).T.ravel()
    words = np.zeros(nbytes // 8, dtype=np.uint64)
    words[order * np.uint64(LINE // 8)] = np.roll(order, -1) * np.uint64(LINE)
    return words


def chain(nbytes: int) -> Any:
    """The ring on the device, offsets turned into addresses: written by one copy from the host, which
    compute-sanitizer's initcheck counts as initialising it."""
    import cupy
    import numpy as np

    words = ring(nbytes)
    device_ring = cupy.empty(words.size, dtype=cupy.uint64)
    words[::LINE // 8] += np.uint64(device_ring.data.ptr)  # every line's first word is a link
    device_ring.set(words)
    return device_ring


def _chase(kernel: Any, nbytes: int, l2_bytes: int) -> dict[str, float]:
    """Cycles and nanoseconds per load of the chase over `nbytes`, after one untimed lap when the working set may fit
    in L2 (else cold, after writing twice L2's size elsewhere to flush it)."""
    import cupy
    import numpy as np

    links, out = chain(nbytes), cupy.zeros(3, dtype=cupy.uint64)
    warm = nbytes // LINE if nbytes <= 2 * l2_bytes else 0
    if not warm:
        cupy.ones(2 * l2_bytes // 4, dtype=cupy.float32)
    kernel((1,), (1,), (links, np.int32(warm), np.int32(STEPS), out))
    cycles, ns, _ = out.get()
    return {"cycles": float(cycles) / STEPS, "ns": float(ns) / STEPS}


def _chase_shared(kernel: Any) -> dict[str, float]:
    import cupy
    import numpy as np

    out = cupy.zeros(3, dtype=cupy.uint64)
    kernel((1,), (COPY_THREADS,), (np.int32(SHARED_STRIDE), np.int32(STEPS), out))
    cycles, ns, _ = out.get()
    return {"cycles": float(cycles) / STEPS, "ns": float(ns) / STEPS}


def _copy_gbs(kernel: Any, nbytes: int, sms: int, threads_per_sm: int) -> float:
    """GB/s (bytes read + written) of copies over a working set of `nbytes` (two buffers of half that), by enough
    blocks to fill every SM; repeated within a launch until it moves COPY_BYTES."""
    import cupy
    import numpy as np

    a = cupy.ones(nbytes // 2 // 4, dtype=cupy.float32)
    b = cupy.zeros_like(a)
    reps = max(1, COPY_BYTES // nbytes)
    blocks = sms * max(1, threads_per_sm // COPY_THREADS)
    launch = functools.partial(kernel, (blocks,), (COPY_THREADS,), (a, b, np.int64(a.size // 4), np.int32(reps)))
    return reps * nbytes / (turns.time_ms([launch], COPY_RUNS) * 1e-3) / 1e9


def launches(iters: int, blocks_per_sm: int) -> list[tuple[str, Any]]:
    """(kernel name, a small launch of it) for each probe kernel: what compute-sanitizer checks (`sanitize`). The
    chain and the copy's buffers are written by host copies, which initcheck counts as initialised."""
    import cupy
    import numpy as np

    chase, shared, copy = _kernels()
    links, out = chain(L1_BYTES), cupy.asarray(np.zeros(3, dtype=np.uint64))
    a = cupy.asarray(np.ones(4096 * 4, dtype=np.float32))
    b = cupy.asarray(np.zeros(4096 * 4, dtype=np.float32))
    return [
        ("chase_global", functools.partial(chase, (1,), (1,), (links, np.int32(iters), np.int32(iters), out))),
        ("chase_shared", functools.partial(shared, (1,), (COPY_THREADS,), (np.int32(1), np.int32(iters), out))),
        ("copy_cg", functools.partial(copy, (device.gpu().sms * blocks_per_sm,), (COPY_THREADS,),
                                      (a, b, np.int64(a.size // 4), np.int32(iters)))),
    ]


def find(gpu: str | None = None) -> MemoryRecord | None:
    """`hierarchy(gpu)`, or None where it is not yet recorded."""
    try:
        return hierarchy(gpu)
    except LookupError:
        return None


def gpus_to_show() -> list[str]:
    """The reader's GPU (live, or the one replayed) first, then every other GPU with a full recording in records/."""

    return list(dict.fromkeys([device.gpu().name if device.live() else device.replay_gpu(), *records.recorded_gpus()]))


def provenance(rec: MemoryRecord) -> str:
    return f"recorded on {rec.gpu}, {rec.date}" if rec.replayed else f"measured live on {rec.gpu}"


def size_text(nbytes: float) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.0f} {unit}"
    return f"{nbytes:.0f} B"


def sm_limits(rec: MemoryRecord | None) -> model.SMLimits:
    """What one SM of the recorded (or live) GPU holds, as it reports; the sm_90 limits without a record."""
    if rec is None:
        return model.SM_90
    p = rec.properties
    return model.SMLimits(registers=p["registers_per_sm"], threads=p["max_threads_per_sm"],
                          blocks=p["max_blocks_per_sm"], smem_bytes=p["smem_per_sm"],
                          smem_reserved_per_block=p["smem_reserved_per_block"])


def in_flight(rec: MemoryRecord, level: str) -> float:
    """Little's law: the bytes that must be on their way at every moment to move the level's copy bandwidth when each
    load takes the level's latency (bandwidth x latency), over the whole GPU."""
    return rec.bandwidth_of(level)["gbs"] * rec.latency_of(level)["ns"]


OCCUPANCY_KERNEL = "vectorized"  # the primer's worked example: chapter 4's kernel at its defaults
WARP_FLOAT4 = 32 * 16  # bytes one warp-wide float4 load brings


def prose_numbers(rec: MemoryRecord | None, ceilings: dict, kernel: str = OCCUPANCY_KERNEL) -> dict[str, str]:
    """Every number the GPU primer's prose quotes, as text, by glue name (myst-nb's {glue:text} prints a glued
    string without its quotes): the GPU's parameters (its device record), what the memory probes measured (MISSING
    without `rec`), Little's law from them, and `kernel`'s occupancy worked through on that GPU."""
    out: dict[str, Any] = {
        "gpu": ceilings["gpu"], "sms": ceilings["sms"], "lanes": ceilings["fp32_lanes_per_sm"],
        "lanes_per_scheduler": ceilings["fp32_lanes_per_sm"] // catalog.SCHEDULERS_PER_SM,
        "ffma_slots": _ffma_slots(ceilings["fp32_lanes_per_sm"] // catalog.SCHEDULERS_PER_SM),
        "clock": f"{ceilings['clock_mhz']:,.0f} MHz", "peak": f"{ceilings['peak_gflops'] / 1e3:.1f} TFLOP/s",
        "issue_rate": f"{ceilings['sms'] * catalog.SCHEDULERS_PER_SM * ceilings['clock_mhz'] / 1e6:.2f} trillion",
        "warp_ffma_rate": f"{ceilings['sms'] * ceilings['fp32_lanes_per_sm'] / 32 * ceilings['clock_mhz'] / 1e6:.2f} "
                          "trillion",
        "l2": size_text(ceilings["l2_bytes"]),
        "dram_copy_1gib": f"{ceilings['dram_gbs'] / 1e3:.1f} TB/s",
    }
    card = gpus.card_of(ceilings["gpu"])
    out["dram_datasheet"] = f"{card.dram_gbs / 1e3:.2f} TB/s" if card else MISSING
    out.update({f"{what}_{level}": MISSING for level in MEMORY_LEVELS for what in ("lat", "lat_ns", "ws")})
    out.update({f"{what}_{level}": MISSING for level in MEMORY_BANDWIDTH_LEVELS
                for what in ("bw", "inflight", "inflight_sm", "loads_sm")})
    out.update(dict.fromkeys(("smem_per_sm", "registers_per_sm", "dram", "dram_gb", "dram_vs_l1", "tile_vs_dram"),
                             MISSING))
    if rec is not None:
        p = rec.properties
        out.update(smem_per_sm=size_text(p["smem_per_sm"]), registers_per_sm=f"{p['registers_per_sm']:,}",
                   dram=size_text(p["dram_bytes"]), dram_gb=f"{p['dram_bytes'] / 1e9:.0f} GB")  # the same, in 10^9 B
        for x in rec.latency:
            out[f"lat_{x['level']}"] = f"{x['cycles']:.0f} clock cycles ({x['ns']:.0f} ns)"
            out[f"lat_ns_{x['level']}"] = f"{x['ns']:.0f} ns"
            out[f"ws_{x['level']}"] = size_text(x["bytes"])
        out["dram_vs_l1"] = f"{rec.latency_of('DRAM')['ns'] / rec.latency_of('L1')['ns']:.0f}"
        for level in MEMORY_BANDWIDTH_LEVELS:
            bytes_ = in_flight(rec, level)
            per_sm = bytes_ / p["sms"]
            out.update({f"bw_{level}": f"{rec.bandwidth_of(level)['gbs'] / 1e3:.1f} TB/s",
                        f"inflight_{level}": f"{bytes_ / 1e6:.1f} MB",
                        f"inflight_sm_{level}": f"{per_sm / 1024:.1f} KiB",
                        f"loads_sm_{level}": f"{per_sm / WARP_FLOAT4:.0f}"})
    out.update(_occupancy(kernel, rec))
    return {k: v if isinstance(v, str) else f"{v:,}" for k, v in out.items()}


def _ffma_slots(lanes_per_scheduler: int) -> str:
    """How many of a scheduler's issue slots must hold an FFMA for the FP32 peak: each fills its 32 lanes' worth."""
    clocks = 32 // lanes_per_scheduler  # clocks one warp's FFMA keeps the scheduler's lanes busy
    return "almost every issue slot of every scheduler" if clocks == 1 else f"one issue slot in {clocks}"


def _occupancy(kernel: str, rec: MemoryRecord | None) -> dict[str, Any]:
    """The occupancy of `kernel` at its defaults worked through, and the bytes its blocks keep in flight per SM."""
    spec = catalog.get(kernel)
    p = spec.full_params()
    sm = sm_limits(rec)
    occ = model.resident(spec, p, sm)
    threads, smem = spec.threads(p), spec.smem_bytes(p)
    bm, bn = spec.tile(p)
    tile = (bm + bn) * p["BK"] * model.WORD  # the A and B tiles one block loads per step along k
    out = {
        "occ_kernel": kernel, "occ_threads": threads, "occ_warps_per_block": threads // 32,
        "occ_registers": occ["registers"],
        "occ_registers_alloc": round_up(occ["registers"], sm.register_unit),
        "occ_smem": size_text(smem), "occ_smem_reserved": size_text(sm.smem_reserved_per_block or 0),
        "occ_sm_registers": f"{sm.registers:,}", "occ_sm_smem": size_text(sm.smem_bytes), "occ_sm_threads": sm.threads,
        "occ_sm_blocks": sm.blocks, "occ_sm_warps": sm.threads // 32,
        **{f"occ_by_{k.replace(' ', '_')}": v for k, v in occ["limits"].items()},
        "occ_blocks": occ["blocks"], "occ_warps": occ["warps"], "occ_limited_by": occ["limited_by"],
        "occ_pct": f"{100 * occ['warps'] / (sm.threads // 32):.0f}%",
        "occ_warps_per_scheduler": f"{occ['warps'] / catalog.SCHEDULERS_PER_SM:g}",
        "tile": size_text(tile), "tile_loads_thread": f"{tile / threads / 16:g}",
        "tile_sm": size_text(tile * occ["blocks"]),
    }
    if rec is not None:
        needed = in_flight(rec, "DRAM") / rec.properties["sms"]
        out["tile_vs_dram"] = f"{tile * occ['blocks'] / needed:.1f}"
    return out


def parameters(gpu: str | None = None) -> dict[str, Any]:
    """What the primer's diagram draws of a GPU (default: the reader's): its device record's SMs, clock, lanes and
    L2 (live: the device now), and, where the memory probes ran, the device's own report (registers, shared memory,
    DRAM), the size of shared memory and L1 together for its compute capability (`gpus.ARCHS`) and the latency and
    bandwidth measured at each level; `provenance` says where each came from."""
    from . import gpus, hardware

    ceil = hardware.ceilings() if gpu is None else records.read_kind("device", gpu)[0]
    out: dict[str, Any] = {k: ceil[k] for k in ("gpu", "sms", "clock_mhz", "fp32_lanes_per_sm", "l2_bytes")}
    rec = find(gpu)
    live = device.live() and gpu in (None, device.gpu().name)
    where = f"measured live on {ceil['gpu']}" if live else f"{ceil['gpu']}: device record of {ceil['recorded_at'][:10]}"
    if rec is None:
        out["provenance"] = f"{where}; ?: the memory probes are {MISSING[1:-1]}"
        return out
    out.update(rec.properties)
    arch = gpus.ARCHS.get(tuple(rec.properties["cc"]))
    if arch:  # the on-chip memory that shared memory and L1 split: not reported by the device, a datasheet constant
        out["l1_smem_bytes"] = arch.l1_smem_bytes
    out["latency"] = {x["level"]: x for x in rec.latency}
    out["bandwidth"] = {x["level"]: x for x in rec.bandwidth}
    out["provenance"] = where if live else f"{where}, memory probes of {rec.date}"
    return out


MEMORY_LEVELS = ("shared", "L1", "L2", "DRAM")  # where a load may find its data, nearest first


MEMORY_BANDWIDTH_LEVELS = ("L2", "DRAM")  # where the copy's working set may sit


# what the device reports about itself (cudaGetDeviceProperties), in a memory record's `properties`
DEVICE_PROPERTIES = ("cc", "sms", "clock_mhz", "registers_per_sm", "smem_per_sm", "smem_per_block",
                     "smem_reserved_per_block", "max_threads_per_sm", "max_blocks_per_sm", "l2_bytes", "dram_bytes")


@dataclass(frozen=True)
class MemoryRecord:
    """The GPU primer's microbenchmarks on one GPU: the device's own parameters, the latency of one load at each
    level of the memory hierarchy (a pointer chase), the bandwidth of a copy whose data sit in L2 or in DRAM, and the
    chase's latency against its working set."""

    kernel: str  # the probe (`catalog.PROBES`)
    source: str
    source_sha256: str
    build_sha256: str
    gpu: str
    recorded_at: str
    versions: dict[str, str]  # driver, CUDA runtime, CuPy
    properties: dict[str, Any]  # DEVICE_PROPERTIES; cc as [major, minor]
    latency: list[dict[str, Any]]  # {"level", "bytes": the chase's working set, "cycles", "ns"}, one per level
    bandwidth: list[dict[str, Any]]  # {"level", "bytes": the copy's working set, "gbs"}, for L2 and DRAM
    sweep: list[dict[str, Any]]  # {"bytes", "cycles", "ns"}: the chase's latency against its working set
    replayed: bool = field(default=False, compare=False)  # set on load, never stored

    @property
    def date(self) -> str:
        return self.recorded_at[:10]

    def latency_of(self, level: str) -> dict[str, Any]:
        return next(x for x in self.latency if x["level"] == level)

    def bandwidth_of(self, level: str) -> dict[str, Any]:
        return next(x for x in self.bandwidth if x["level"] == level)

    def to_row(self) -> dict[str, Any]:
        row = asdict(self)
        row.pop("replayed")
        return row

    @classmethod
    def from_row(cls, row: dict[str, Any], where: str = "") -> MemoryRecord:
        values = records.typed_fields(cls, row, tuple(f.name for f in fields(cls) if f.name != "replayed"), where)
        values.pop("replayed", None)
        problems = [f"properties lack {k!r}" for k in DEVICE_PROPERTIES if k not in values["properties"]]
        for name, levels, numbers in (("latency", MEMORY_LEVELS, ("bytes", "cycles", "ns")),
                                      ("bandwidth", MEMORY_BANDWIDTH_LEVELS, ("bytes", "gbs")),
                                      ("sweep", (), ("bytes", "cycles", "ns"))):
            for x in values[name]:
                if not isinstance(x, dict) or (levels and x.get("level") not in levels) or not all(
                        isinstance(x.get(k), (int, float)) and not isinstance(x.get(k), bool) and x[k] > 0
                        for k in numbers):
                    problems.append(f"each {name} entry needs " + (f"a level of {', '.join(levels)} and " if levels
                                    else "") + f"positive {', '.join(numbers)}, not {x!r}")
            seen = [x.get("level") for x in values[name] if isinstance(x, dict)]
            problems += [f"{name} lacks the level {level!r}" for level in levels if level not in seen]
        if problems:
            raise records.RecordError(f"{where}: {problems[0]}: {records.short(row)}")
        return cls(**values, replayed=True)
