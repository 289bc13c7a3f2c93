"""Which GPU we run on, or that we replay: the one switch between live and recorded results.

Live means CuPy imports and sees a CUDA device; set GEMM_LAB_REPLAY=1 to replay recorded results
even on a GPU. Replay reads the records of GEMM_LAB_GPU, else of the reader's GPU when records/ has
them, else of the H100 on which the book's numbers were recorded.
"""
from __future__ import annotations

import functools
import os
import warnings
from dataclasses import dataclass

from . import catalog, folders
from .catalog import KernelSpec

REPLAY_ENV = "GEMM_LAB_REPLAY"
GPU_ENV = "GEMM_LAB_GPU"
DEFAULT_REPLAY_GPU = "NVIDIA H100 80GB HBM3"

# FP32 FMA lanes per SM by compute capability (CUDA C Programming Guide, arithmetic throughput table).
FP32_LANES_PER_SM = {
    (6, 0): 64, (6, 1): 128, (7, 0): 64, (7, 5): 64, (8, 0): 64, (8, 6): 128, (8, 7): 128,
    (8, 9): 128, (9, 0): 128, (10, 0): 128, (10, 3): 128, (12, 0): 128, (12, 1): 128,
}


# cudaDeviceAttr numbers of an SM's limits, which occupancy (and so a persistent kernel's grid) follows
SM_ATTRIBUTES = {"registers_per_sm": 82, "smem_per_sm": 81, "smem_reserved_per_block": 111, "max_threads_per_sm": 39,
                 "max_blocks_per_sm": 106}


@dataclass(frozen=True)
class GPU:
    """What the book needs to know about the live device."""

    name: str
    cc: tuple[int, int]
    sms: int
    clock_mhz: float  # the boost clock the device reports
    l2_bytes: int
    smem_per_block: int  # the opt-in maximum of shared memory per block
    smem_per_sm: int
    smem_reserved_per_block: int  # what the runtime keeps of an SM's shared memory per resident block
    registers_per_sm: int
    max_threads_per_sm: int
    max_blocks_per_sm: int
    driver: str
    cuda_runtime: str
    cupy: str

    @property
    def arch(self) -> str:
        return f"sm_{self.cc[0]}{self.cc[1]}"

    @property
    def fp32_lanes_per_sm(self) -> int:
        return FP32_LANES_PER_SM.get(self.cc, 128)

    @property
    def peak_gflops(self) -> float:
        """FP32 FFMA peak: SMs x FP32 lanes per SM x 2 FLOP per FMA x clock."""
        return self.sms * self.fp32_lanes_per_sm * 2 * self.clock_mhz / 1e3


@functools.cache
def live() -> bool:
    """True when results are measured on a CUDA GPU, False when they are replayed from records."""
    return not forced_replay() and gpu_present()


def gpu_present() -> bool:
    """Whether CuPy sees a CUDA GPU (whether or not the pages replay on it)."""
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # no CuPy, no driver, no device
        return False


def mode() -> str:
    return "live" if live() else "replay"


@functools.cache
def gpu() -> GPU:
    """The live device (raises RuntimeError when there is none)."""
    if not live():
        raise RuntimeError("no CUDA GPU in use (replay mode): this needs a live GPU")
    import cupy

    dev = cupy.cuda.Device()
    props = cupy.cuda.runtime.getDeviceProperties(dev.id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    return GPU(
        name=name, cc=(props["major"], props["minor"]), sms=props["multiProcessorCount"], l2_bytes=props["l2CacheSize"],
        clock_mhz=_clock_khz(dev.id) / 1e3, smem_per_block=props["sharedMemPerBlockOptin"],
        **{key: cupy.cuda.runtime.deviceGetAttribute(attr, dev.id) for key, attr in SM_ATTRIBUTES.items()},
        driver=_driver_version(), cuda_runtime=_version_string(cupy.cuda.runtime.runtimeGetVersion()),
        cupy=cupy.__version__)


def runs_here(kernel: str | KernelSpec) -> bool:
    """Live, and this GPU has the instructions the kernel (a catalogued name or spec) needs. Where it has not
    (cp.async on a T4, wgmma off Hopper) the kernel's results are read back from the records instead, with a
    warning saying so."""
    if not live():
        return False
    why = catalog.unsupported(kernel, gpu().cc)
    if why is None:
        return True
    _warn_unsupported(why)
    return False


@functools.cache
def _warn_unsupported(why: str) -> None:
    warnings.warn(f"{why} ({gpu().name}): its results are read back from the records of {replay_gpu()}",
                  stacklevel=3)


def forced_replay() -> bool:
    """True when GEMM_LAB_REPLAY asks for replay, GPU or not."""
    return env_flag(REPLAY_ENV)


def env_flag(name: str) -> bool:
    """An on/off environment variable: "", 0, false, no, off or unset is off; 1, true, yes or on is on; else error."""
    value = os.environ.get(name, "").strip().lower()
    if value in ("", "0", "false", "no", "off"):
        return False
    if value in ("1", "true", "yes", "on"):
        return True
    raise ValueError(f"{name}={os.environ[name]!r}: set it to 1 (or true, yes, on) or 0 (or false, no, off)")


@functools.cache
def reader_gpu() -> str | None:
    """The reader's GPU, live or not: the device in use, else NVML's device 0, else None.

    NVML names the GPU without creating a CUDA context, so forced replay on a GPU still knows which
    GPU it is; any NVML failure (no library, no driver, no device) means there is none.
    """
    if live():
        return gpu().name
    try:
        import pynvml

        pynvml.nvmlInit()
        name = pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(0))
        return name.decode() if isinstance(name, bytes) else str(name)
    except Exception:
        return None


def replay_gpu() -> str:
    """Whose records to read: GEMM_LAB_GPU, else the reader's GPU if it has records, else the book's H100."""
    if named := os.environ.get(GPU_ENV):
        if not folders.gpu_folder(named).is_dir():
            held = sorted(p.name for p in folders.RECORDS_DIR.iterdir() if p.is_dir())
            raise ValueError(f"{GPU_ENV}={named!r}: records/ has no folder of that GPU, only {', '.join(held)} (the "
                             "variable takes a GPU's name as NVML gives it, such as 'NVIDIA H200')")
        return named
    mine = reader_gpu()
    return mine if mine and folders.has_records(mine) else DEFAULT_REPLAY_GPU


def _clock_khz(index: int) -> int:
    """The SM boost clock: a device attribute (cudaDevAttrClockRate = 13), else NVML's maximum."""
    import cupy

    try:
        return cupy.cuda.runtime.deviceGetAttribute(13, index)
    except Exception:  # dropped from some CUDA versions: ask NVML instead
        import pynvml

        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(index)
        return 1000 * pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_SM)


def _driver_version() -> str:
    try:
        import pynvml

        pynvml.nvmlInit()
        v = pynvml.nvmlSystemGetDriverVersion()
        return v.decode() if isinstance(v, bytes) else str(v)
    except Exception:
        import cupy

        return "CUDA " + _version_string(cupy.cuda.runtime.driverGetVersion())


def _version_string(v: int) -> str:
    return f"{v // 1000}.{v % 1000 // 10}"
