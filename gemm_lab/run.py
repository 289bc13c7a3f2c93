"""Launch a catalogued kernel on CuPy arrays and check it against a float64 reference."""
from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from . import catalog, compiler, device, occupancy, records, tma
from .catalog import Instance, KernelSpec, Params, Shape

# per precision; 3xTF32 and the Ozaki scheme are FP32's: they are meant to be as accurate as FP32 (on the H100 at
# 8192, 3xTF32's max relative error is 8.5e-7, cuBLAS SGEMM's 4.0e-6)
UNIT_ROUNDOFF = {"fp32": 2.0**-24, "tf32": 2.0**-11, "3xtf32": 2.0**-24, "ozaki": 2.0**-24}


def gemm(
    kernel: str | KernelSpec,
    a: Any,
    b: Any,
    params: Params | None = None,
    *,
    alpha: float = 1.0,
    beta: float = 0.0,
    out: Any = None,
    report: bool = False,
    round_copies: bool = False,
) -> Any:
    """C = alpha * A @ B + beta * C with a catalogued kernel; row-major CuPy float32 arrays.

    With `report`, returns (C, what the kernel chose at run time): the Ozaki scheme's `ozaki.Estimate` (how many
    moduli ran and why), None for kernels that choose nothing. `round_copies`: as `launcher`'s.

    Inputs that are not C-contiguous or not 16-byte aligned (a view with an offset) are copied
    first, so vector loads are always legal; anything that is not a 2-D float32 CuPy array is
    refused with a TypeError. `out` must be C-contiguous and 16-byte aligned; with beta == 0 it
    is never read.
    Everything is validated, once, before the kernel is compiled or launched. The launch is asynchronous: a
    fault it causes surfaces at the next synchronisation (as a KernelFault in `measure_error` and `bench`).
    """
    spec = catalog.get(kernel)  # a misspelt name is named first, GPU or not
    if not (device.live() or device.gpu_present()):  # live, or a GPU whose pages replay
        raise RuntimeError(f"gl.gemm runs {spec.name} on your arrays on a CUDA GPU, and this machine has none that "
                           "CuPy can use; without one, gl.bench and gl.verify replay what was recorded")
    import cupy

    matrices = getattr(a, "ndim", 0) == getattr(b, "ndim", 0) == 2
    with faults(kernel, params, (a.shape[0], b.shape[1], a.shape[1]) if matrices else None):
        spec = catalog.get(kernel)
        a, b = (_as_operand(x, name) for x, name in ((a, "A"), (b, "B")))
        (m, k), (k2, n) = a.shape, b.shape
        if k != k2:
            raise ValueError(f"A is {m}x{k} and B is {k2}x{n}: inner dimensions differ")
        inst = catalog.instance(spec, params, (m, n, k), smem_limit=device.gpu().smem_per_block, cc=device.gpu().cc)
        if out is None:
            out = cupy.empty((m, n), dtype=cupy.float32)
        elif out.shape != (m, n) or out.dtype != cupy.float32 or not out.flags.c_contiguous or out.data.ptr % 16:
            raise ValueError(f"out must be a C-contiguous, 16-byte aligned float32 array of shape ({m}, {n})")
        launch = launcher(inst, a, b, alpha=alpha, beta=beta, out=out, round_copies=round_copies)
        c = launch()
        return (c, launch.report) if report else c


class KernelFault(RuntimeError):
    """A kernel faulted on the GPU (e.g. an illegal address): the process's CUDA context is unusable."""


@contextlib.contextmanager
def faults(kernel: str | KernelSpec, params: Params | None, shape: Shape | None = None) -> Iterator[None]:
    """Turn a CUDA error raised inside into a KernelFault that names the kernel, its parameters and what to do.

    After a fault every CUDA call of the process fails, so the only way on is a new process; CUDA
    reports the fault at the next synchronisation, so wrap everything up to one.
    """
    import cupy

    try:
        yield
    except (cupy.cuda.runtime.CUDARuntimeError, cupy.cuda.driver.CUDADriverError) as err:
        name = kernel if isinstance(kernel, str) else kernel.name
        where = f" at M={shape[0]}, N={shape[1]}, K={shape[2]}" if shape else ""
        raise KernelFault(
            f"CUDA failed while running {name} with {dict(params) if params else 'its default parameters'}{where}: "
            f"{err}. The GPU's CUDA context is now unusable and every later CUDA call fails: restart the Python "
            "kernel (Jupyter: Kernel > Restart) or process before using the GPU again."
        ) from err


class Launch(Protocol):
    """A prepared launch of a validated instance on its operands: calling it queues the work and returns C; `report`
    is what the last call chose at run time (the Ozaki scheme's `Estimate`), None for work that chooses nothing."""

    report: Any

    def __call__(self) -> Any: ...


LaunchFactory = Callable[..., Launch]  # (inst, a, b, *, alpha, beta, out) -> Launch
_LAUNCHERS: dict[str, LaunchFactory] = {}


def register_launcher(kernel: str, factory: LaunchFactory) -> None:
    """Run a catalogued kernel through `factory` instead of as one kernel: a wing whose kernel is a pipeline of several
    (the Ozaki scheme, `precision.ozaki`) hands the core its launcher, so the core never imports the wing."""
    _LAUNCHERS[kernel] = factory


_REPLAY_CHECKS: dict[str, Callable[[Any], None]] = {}


def register_replay_check(kernel: str, check: Callable[[Any], None]) -> None:
    """A wing's check of a replayed `records.Measurement` of `kernel`: its live call's warning, said again."""
    _REPLAY_CHECKS[kernel] = check


def replayed(measurement: Any) -> Any:
    """A recorded measurement on its way to the reader, after its kernel's replay check, if it has one."""
    if check := _REPLAY_CHECKS.get(measurement.kernel):
        check(measurement)
    return measurement


def launcher(inst: Instance, a: Any, b: Any, *, alpha: float = 1.0, beta: float = 0.0, out: Any,
             round_copies: bool = False) -> Launch:
    """`gemm` split in two, for a validated instance and arrays that `gemm` would launch as they are (C-contiguous,
    16-byte aligned float32 CuPy arrays of its shape): compilation now, and a call that only launches (returns C).
    `round_copies`: TMA rounds A and B to TF32 as it copies them (`tma.tensor_map`), as cuBLAS's copies do.

    Timing uses the call: a launch that costs the host less than the kernel costs the GPU keeps
    the stream busy, so CUDA events time the kernel and not the Python in front of it.
    """
    m, n, k = inst.shape
    if a.shape != (m, k) or b.shape != (k, n) or out.shape != (m, n):
        raise ValueError(f"A is {a.shape[0]}x{a.shape[1]}, B {b.shape[0]}x{b.shape[1]} and C {out.shape[0]}x"
                         f"{out.shape[1]}: not the M={m}, N={n}, K={k} that {inst.describe()} was validated for")
    if round_copies:
        if not (inst.spec.tma and inst.spec.precision == "tf32"):  # 3xTF32 needs the low bits
            raise ValueError(f"round_copies: {inst.spec.name} does not multiply once in TF32 from TMA copies")
        return KernelLaunch(inst, a, b, alpha=alpha, beta=beta, out=out, round_copies=True)
    return _LAUNCHERS.get(inst.spec.name, KernelLaunch)(inst, a, b, alpha=alpha, beta=beta, out=out)


class KernelLaunch:
    """One kernel, prepared: compiled and loaded, its grid derived from the spec (a persistent kernel's from the GPU's
    resident slots) and its arguments packed once (a TMA kernel's tensor maps among them)."""

    report = None

    def __init__(self, inst: Instance, a: Any, b: Any, *, alpha: float, beta: float, out: Any,
                 round_copies: bool = False):
        spec, p, (m, n, k) = inst.spec, inst.params, inst.shape
        self.fn, self.out = compiler.load(inst), out
        self.grid, self.block, self.smem = (spec.grid(p, m, n, slots=slots(spec, p)), (spec.threads(p),),
                                            spec.launch_smem(p))
        self.args = (np.int32(m), np.int32(n), np.int32(k), np.float32(alpha), a, b, np.float32(beta), out,
                     *tma.kernel_maps(spec, p, a, b, out, round_copies))

    def __call__(self) -> Any:
        self.fn(self.grid, self.block, self.args, shared_mem=self.smem)
        return self.out


def slots(spec: KernelSpec, p: Params) -> int:
    """Blocks of a persistent kernel the GPU holds at once (SMs times resident blocks per SM); 0 for the others."""
    return device.gpu().sms * max(1, occupancy.resident(spec, p)["blocks"]) if spec.persistent(p) else 0


def _as_operand(x: Any, name: str) -> Any:
    import cupy

    if not isinstance(x, cupy.ndarray):
        raise TypeError(f"{name} must be a CuPy array on the GPU (got {type(x).__name__}); use cupy.asarray")
    if x.dtype != cupy.float32:
        raise TypeError(f"{name} has dtype {x.dtype}; SGEMM kernels take float32 (convert with .astype)")
    if x.ndim != 2:
        raise ValueError(f"{name} must be a 2-D matrix (got {x.ndim} dimensions)")
    x = cupy.ascontiguousarray(x)
    return x if x.data.ptr % 16 == 0 else x.copy()


CHECK_SEED = 0  # every kernel and cuBLAS are checked on the same inputs of a shape, so their errors compare


def random_inputs(m: int, n: int, k: int, seed: int | None = None) -> tuple[Any, Any]:
    """Fresh uniform(-1, 1) float32 A (m x k) and B (k x n) on the GPU: never zeros."""
    import cupy

    rng = cupy.random.default_rng(seed)
    return (rng.uniform(-1, 1, (m, k), dtype=cupy.float32), rng.uniform(-1, 1, (k, n), dtype=cupy.float32))


def host_inputs(m: int, n: int, k: int, rng: Any = None) -> tuple[Any, Any]:
    """Uniform(-1, 1) float32 A (m x k) and B (k x n) in host memory (NumPy; default: seed 0), for a GPU copy
    that is part of the experiment: a tool that must see the inputs written, or a timing that includes the copy."""
    import numpy

    rng = numpy.random.default_rng(0) if rng is None else rng
    return rng.uniform(-1, 1, (m, k)).astype(numpy.float32), rng.uniform(-1, 1, (k, n)).astype(numpy.float32)


def max_rel_err(c: Any, ref: Any, floor: float = 0.0) -> float:
    """max |C - ref| / max(max |ref|, floor) over every element; infinite if any element is NaN or inf."""
    xp = array_module(c)
    c64 = c.astype(xp.float64)
    if not bool(xp.isfinite(c64).all()):
        return math.inf
    scale = max(float(xp.abs(ref).max()), floor) or 1.0
    return float(xp.abs(c64 - ref).max()) / scale


def tolerance(k: int, precision: str = "fp32") -> float:
    """Accepted max_rel_err: rounding error grows like sqrt(K) unit roundoffs, with a margin of 32."""
    return 32 * UNIT_ROUNDOFF[precision] * math.sqrt(k)


@dataclass(frozen=True)
class Verification:
    kernel: str
    params: dict[str, int]
    m: int
    n: int
    k: int
    max_rel_err: float
    tolerance: float

    @property
    def ok(self) -> bool:
        return self.max_rel_err <= self.tolerance


def resolve(kernel: str | KernelSpec, params: Params | None, shape: Shape) -> tuple[Instance, bool]:
    """The validated instance, and whether it runs here: live, on a GPU with the instructions it needs (and then
    checked against that GPU's shared memory too), else its results are read back from the records."""
    inst = catalog.instance(kernel, params, shape)
    if not device.runs_here(inst.spec):
        return inst, False
    catalog.check_smem(inst.spec, inst.params, device.gpu().smem_per_block)
    return inst, True


def verify(kernel: str | KernelSpec, m: int, n: int, k: int, params: Params | None = None) -> Verification:
    """Run on the seeded inputs of the shape into a NaN-poisoned C and compare with float64 (replay: recorded)."""
    inst, here = resolve(kernel, params, (m, n, k))
    err = measure_error(inst) if here else records.lookup(inst.spec.name, inst.params, m, n, k).max_rel_err
    return Verification(inst.spec.name, inst.params, m, n, k, err, tolerance(k, inst.spec.precision))


def measure_error(inst: Instance, a: Any = None, b: Any = None, round_copies: bool = False) -> float:
    """max_rel_err of one live run of a validated instance (`round_copies`: `launcher`'s) on the seeded inputs of its
    shape (`CHECK_SEED`), or on `a` and `b`, C poisoned by NaN; synchronised right after the launch (a KernelFault)."""
    import cupy

    m, n, k = inst.shape
    with faults(inst.spec, inst.params, inst.shape):
        if a is None:
            a, b = random_inputs(m, n, k, CHECK_SEED)
        out = cupy.full((m, n), cupy.nan, dtype=cupy.float32)
        launcher(inst, a, b, out=out, round_copies=round_copies)()
        cupy.cuda.Device().synchronize()
        return max_rel_err(out, *reference(a, b))


def reference(a: Any, b: Any, matmul: Callable[[Any, Any], Any] | None = None) -> tuple[Any, float]:
    """A @ B in float64 (NumPy or CuPy, as the operands are; `matmul` multiplies if given), and the floor of the scale
    `max_rel_err` divides by: rounding errors scale with the terms |a||b|, not with the sum, so where cancellation
    leaves every element of C small (a 1 x 1 result of 7 terms), the terms' size over sqrt(K) is the yardstick."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    matmul = matmul or (lambda x, y: x @ y)
    return matmul(a64, b64), float(matmul(abs(a64), abs(b64)).max()) / math.sqrt(a.shape[1])


def array_module(x: Any) -> Any:
    """NumPy for a host array, else CuPy's module for `x`: so that one function serves operands on either side."""
    if isinstance(x, np.ndarray):
        return np
    import cupy

    return cupy.get_array_module(x)
