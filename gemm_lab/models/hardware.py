"""What the hardware says: Nsight Compute counters of one launch, and the GPU's measured ceilings.

`counters()` runs one launch of a kernel instance under `ncu` in a child process (clock control
off: the card is measured as it is) and returns the requested metrics in base units. `ceilings()`
measures DRAM bandwidth with a large device-to-device copy and reads the FP32 peak from the device.
Both are recorded (`ncu.json`, `device.json`) and replayed without a GPU.
"""
from __future__ import annotations

import csv
import functools
import io
import json
import shutil
import subprocess
import sys
import warnings
from collections.abc import Callable

from .. import catalog, device, liverun, records, turns
from ..catalog import KernelSpec, Params, Shape
from ..compiler import NVRTC_OPTIONS
from ..spec import shape_of

TRAFFIC_METRICS = (
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "lts__t_sectors_srcunit_tex_op_read.sum",  # 32-byte sectors L1 asked of L2
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",  # 32-byte sectors of global loads at L1
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",  # global load instructions' requests
    "gpu__time_duration.sum",
)
BANK_METRICS = (
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "smsp__inst_executed_op_shared_ld.sum",
    "smsp__inst_executed_op_shared_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
)
STALL_REASONS = ("barrier", "long_scoreboard", "short_scoreboard", "mio_throttle", "math_pipe_throttle",
                 "dispatch_stall", "wait", "not_selected", "selected")
PIPELINE_METRICS = (
    "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",  # how busy the FP32 FMA pipe is
    "smsp__issue_active.avg.pct_of_peak_sustained_active",  # cycles in which a warp instruction issued
    "sm__warps_active.avg.pct_of_peak_sustained_active",  # achieved occupancy
    "sm__cycles_elapsed.avg.per_second",  # the SM clock during the launch
    *(f"smsp__average_warps_issue_stalled_{r}_per_issue_active.ratio" for r in STALL_REASONS),
)
METRICS = TRAFFIC_METRICS + BANK_METRICS + PIPELINE_METRICS  # one set for every recorded launch, so rows compare
# L1's data-array passes, every kind: where chapter 1's strided loads lose time (`plan.STRIDE_COUNTERS`)
WAVEFRONT_METRICS = ("l1tex__data_pipe_lsu_wavefronts.sum",)
# and for the launches that compute on tensor cores, how busy their pipe is (on the H100 it counts wgmma's work too)
TENSOR_METRICS = ("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",)


def metrics_for(kernel: str | KernelSpec) -> tuple[str, ...]:
    """What a recorded launch of `kernel` (or a cuBLAS pseudo-kernel) counts: METRICS, and TENSOR_METRICS where it
    computes on tensor cores."""
    name = kernel if isinstance(kernel, str) else kernel.name
    return METRICS + TENSOR_METRICS if records.precision_of(name) not in ("fp32", None) else METRICS


def stalls(row: dict) -> dict[str, float]:
    """Warps stalled per issued instruction, by reason, from a recorded counter row."""
    return {r: row["metrics"][f"smsp__average_warps_issue_stalled_{r}_per_issue_active.ratio"] for r in STALL_REASONS}
NCU_KEY = ("kernel", "params", "m", "n", "k")
COUNTERS_S = 20.0  # about what one ncu run takes: a child process starts CUDA, compiles or loads, replays the launch
CEILINGS_S = 3.0  # the copy and the tensor-core peaks of `ceilings`


def counters(kernel: str | KernelSpec, size: int | Shape, params: Params | None = None,
             metrics: tuple[str, ...] | None = None, fallback: bool = True) -> dict:
    """Hardware counters of one launch at `size` (M = N = K, or (M, N, K)) (live: ncu now; replay: the recorded row,
    which must hold every metric asked for).

    `kernel` may be "cublas" or "cublas_tf32": cuBLAS's SGEMM (or TF32 GEMM) on the same shape, for comparison;
    `metrics` defaults to `metrics_for(kernel)`. Live, where ncu is missing
    or not allowed to read counters (common on shared and cloud GPUs), the recorded row is returned with a
    warning, unless `fallback` is False (recording).
    """
    m, n, k = shape_of(size)
    metrics = metrics or metrics_for(kernel)
    if kernel in records.CUBLAS_KERNELS.values():
        name, p, kernel_regex = kernel, {}, "gemm"  # cuBLAS's kernels all have gemm in their name
        identity = {"kernel": name, "source": "", "source_sha256": "", "build_sha256": ""}
        here = device.live()
    else:
        spec = catalog.get(kernel)
        name, p = spec.name, catalog.validate(spec, params, shape=(m, n, k))
        kernel_regex = f"^{spec.function}"
        identity = {"kernel": name, "source": spec.source, "source_sha256": spec.source_sha256(),
                    "build_sha256": spec.build_sha256()}
        here = device.runs_here(spec)
    with liverun.work("counters", f"ncu {name} {p} {m}x{n}x{k} {metrics}", COUNTERS_S) as task:
        if not (here and task.live):
            return _recorded_or_raise(name, p, (m, n, k), metrics)
        task.result = task.result or _counted(name, p, (m, n, k), metrics, kernel_regex, identity, fallback)
        return task.result


def _counted(name: str, p: dict[str, int], size: tuple[int, int, int], metrics: tuple[str, ...], kernel_regex: str,
             identity: dict[str, str], fallback: bool) -> dict:
    """`counters` live: one launch under ncu, in a child process."""
    m, n, k = size
    ncu = shutil.which("ncu")
    if ncu is None:
        return _recorded_or_raise(name, p, (m, n, k), metrics, "Nsight Compute's `ncu` is not on PATH", fallback)
    cmd = [ncu, "--clock-control", "none", "--csv", "--print-units", "base", "--metrics", ",".join(metrics),
           "--kernel-name", f"regex:{kernel_regex}", "--launch-count", "1",
           sys.executable, "-m", "gemm_lab.models.hardware", name, json.dumps(p), str(m), str(n), str(k)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    values = _parse_ncu_csv(out.stdout)
    if out.returncode != 0 or not values:  # e.g. ERR_NVGPUCTRPERM: counters need admin rights on many hosts
        return _recorded_or_raise(name, p, (m, n, k), metrics, f"ncu failed ({out.returncode}):\n"
                                  f"{out.stdout[-2000:]}\n{out.stderr[-2000:]}", fallback)
    return {**identity, "params": p, "m": m, "n": n, "k": k, "metrics": values, "gpu": device.gpu().name,
            "recorded_at": records.utc_now()}


def _recorded_or_raise(name: str, p: dict[str, int], size: tuple[int, int, int], metrics: tuple[str, ...],
                       why: str = "", fallback: bool = True) -> dict:
    """The recorded row (its `gpu` field says whose), refused unless it holds every one of `metrics` (a missing one
    would fail later, as a bare KeyError); live, with a warning naming why ncu did not run."""
    row = recorded_counters(name, p, size) if fallback else None
    if row is None:
        raise (RuntimeError(why) if why else LookupError(
            f"no recorded ncu counters for {name} {p} at {size[0]}x{size[1]}x{size[2]} on {device.replay_gpu()}"))
    missing = [x for x in metrics if x not in row["metrics"]]
    if missing:
        raise LookupError(f"not recorded: {', '.join(missing)}; the recorded metrics of {name} at "
                          f"{size[0]}x{size[1]}x{size[2]} on {row['gpu']} are {', '.join(row['metrics'])}")
    if why:
        warnings.warn(f"{why.splitlines()[0]}: showing the counters recorded on {row['gpu']}", stacklevel=3)
    return row


def recorded_counters(kernel: str | KernelSpec, params: dict[str, int], size: tuple[int, int, int],
                      gpu: str | None = None) -> dict | None:
    """The recorded ncu row of exactly this instance (or "cublas") and shape, if any: `gpu`'s, or else the replayed
    GPU's and then the book's own (`device.DEFAULT_REPLAY_GPU`); the row's `gpu` says whose."""
    name = kernel if isinstance(kernel, str) else kernel.name
    for where in (gpu,) if gpu else dict.fromkeys((device.replay_gpu(), device.DEFAULT_REPLAY_GPU)):
        for row in records.read_kind("ncu", where):
            if row["kernel"] == name and row["params"] == params and (row["m"], row["n"], row["k"]) == size:
                return row
    return None


def _parse_ncu_csv(text: str) -> dict[str, float]:
    lines = [line for line in text.splitlines() if line.startswith('"')]
    values = {}
    for row in csv.DictReader(io.StringIO("\n".join(lines))):
        try:
            values[row["Metric Name"]] = float(row["Metric Value"].replace(",", ""))
        except (KeyError, ValueError):
            continue
    return values


def save_counters(rows: list[dict]) -> None:
    for gpu in {r["gpu"] for r in rows}:
        records.upsert(records.gpu_dir(gpu) / "ncu.json", [r for r in rows if r["gpu"] == gpu], NCU_KEY)


def ceilings() -> dict:
    """FP32 peak (from the device) and DRAM bandwidth (measured, read + write bytes of a copy)."""
    with liverun.work("probes", "ceilings", CEILINGS_S) as task:
        if task.live:
            task.result = task.result or _with_recorded_peaks(measured_ceilings())
            return task.result
    rows = records.read_kind("device")
    if not rows:
        raise LookupError(f"no recorded device ceilings for {device.replay_gpu()}")
    return rows[0]


def measured_ceilings() -> dict:
    """The live GPU's own ceilings, measured now (what `gemm-lab record` saves): no value read back from records."""
    import cupy

    src = cupy.ones(256 * 2**20, dtype=cupy.float32)  # 1 GiB, far beyond L2
    dst = cupy.empty_like(src)
    ms = turns.time_ms([functools.partial(cupy.copyto, dst, src)], 20)
    gpu = device.gpu()
    return {
        "gpu": gpu.name, "recorded_at": records.utc_now(), "peak_gflops": gpu.peak_gflops, "sms": gpu.sms,
        "clock_mhz": gpu.clock_mhz, "fp32_lanes_per_sm": gpu.fp32_lanes_per_sm, "l2_bytes": gpu.l2_bytes,
        "dram_gbs": 2 * src.nbytes / (ms * 1e-3) / 1e9, **tensor_core_ceilings(),
        "versions": records.versions(gpu),
    }


TENSOR_PEAKS = {"mma_sync_tf32_gflops": "mma.sync", "wgmma_tf32_gflops": "wgmma"}  # probed where the GPU has them


def _with_recorded_peaks(row: dict) -> dict:
    """A live GPU's ceilings with the tensor-core peaks it cannot probe (mma.sync before compute capability 8.0, wgmma
    off Hopper) read back from the records the pages read its missing kernels from, with a warning, as for kernels:
    a chapter's budget then has every row, and says whose it is."""
    missing = [key for key in TENSOR_PEAKS if key not in row]
    if not missing:
        return row
    recorded = records.read_kind("device", device.DEFAULT_REPLAY_GPU)[0]
    warnings.warn(f"{row['gpu']} (compute capability {'.'.join(map(str, device.gpu().cc))}) lacks "
                  f"{' and '.join(TENSOR_PEAKS[k] for k in missing)}: its tensor-core peak is read back from the "
                  f"records of {recorded['gpu']}", stacklevel=3)
    return {**row, **{key: recorded[key] for key in missing}, "read_back": missing}


PEAK_ITERS = 2048


def tensor_core_ceilings() -> dict[str, float]:
    """TF32 GFLOP/s of the tensor-core instructions alone (kernels/tensor_core_peak.cu, no memory traffic):
    `mma_sync_tf32_gflops` on compute capability 8.0 and newer, `wgmma_tf32_gflops` on 9.0 (sm_90a) only."""
    out = {}
    for key, launch, flop in peak_launches(PEAK_ITERS):
        out[key] = flop / (turns.time_ms([launch], 10) * 1e-3) / 1e9
    return out


def peak_launches(iters: int, blocks_per_sm: int | None = None) -> list[tuple[str, Callable[[], None], int]]:
    """(ceiling name, a launch of its probe kernel, FLOP per launch) for each probe of kernels/tensor_core_peak.cu
    this GPU runs; `blocks_per_sm` below the probes' own count gives small launches (the sanitizer's)."""
    import cupy
    import numpy as np

    probe, gpu, sink = catalog.PROBES["tensor_core_peak"], device.gpu(), cupy.zeros(1, dtype=cupy.float32)
    out = []

    def add(key: str, name: str, arch: str, per_sm: int, threads: int, smem: int, flop_per_thread_iter: int) -> None:
        module = cupy.RawModule(code=probe.source_text(), options=(*NVRTC_OPTIONS, f"-arch={arch}"),
                                name_expressions=[name])
        fn = module.get_function(name)
        fn.max_dynamic_shared_size_bytes = smem
        blocks = min(per_sm, blocks_per_sm or per_sm) * gpu.sms
        out.append((key, functools.partial(fn, (blocks,), (threads,), (np.int32(iters), sink), shared_mem=smem),
                    blocks * threads * iters * flop_per_thread_iter))

    if gpu.cc >= (8, 0):  # 8 warps x 4 blocks per SM, 16 independent m16n8k8 (2 x 1024 FLOP) per warp and round
        add("mma_sync_tf32_gflops", "mma_peak<16>", gpu.arch, 4, 256, 0, 16 * 2 * 1024 // 32)
    if gpu.cc == (9, 0):  # 2 warpgroups x 2 blocks per SM, four 64 x 256 x 8 wgmmas per warpgroup and round
        add("wgmma_tf32_gflops", "wgmma_peak<256>", "sm_90a", 2, 256, 256 * 128 + 1024, 4 * 2 * 64 * 256 * 8 // 128)
    return out


def save_ceilings(row: dict) -> None:
    if row.get("read_back"):
        raise ValueError(f"{', '.join(row['read_back'])} of {row['gpu']} were read back from another GPU's records: "
                         "save measured_ceilings(), the GPU's own")
    records.upsert(records.gpu_dir(row["gpu"]) / "device.json", [row], ("gpu",))


def _launch_once(argv: list[str]) -> None:
    """Child process of `counters()`: one launch of the instance on random inputs."""
    import cupy

    from .. import run

    name, params, m, n, k = argv[0], json.loads(argv[1]), *map(int, argv[2:5])
    a, b = run.random_inputs(m, n, k)
    if name in records.CUBLAS_KERNELS.values():
        from ..yardstick import cublas_math

        with cublas_math(records.precision_of(name)):
            cupy.matmul(a, b)
    else:
        run.gemm(name, a, b, params)
    cupy.cuda.Device().synchronize()


if __name__ == "__main__":
    _launch_once(sys.argv[1:])
