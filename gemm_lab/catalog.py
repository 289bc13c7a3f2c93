"""The kernels of the book as data: source file, template parameters and the rules they obey.

Everything else (compile, launch, sweep, widgets) derives grid, block and shared memory from a
spec here, so a kernel's rules are written once, with their reasons, and checked before anything
is compiled or launched. The spec model is `spec.py`, each family's rules `families.py`; this module is the registry
the rest of the package asks (`get`, `instance`, `validate`, `legal_grid`) and the names it reads them by.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping

from .families import (
    A_LAYOUTS,
    DATA_MOVERS_CHAPTER,
    HOPPER_CHAPTER,
    INT8_MAX_K,
    INT8_PRODUCT,
    KERNELS,
    MEASURING_CHAPTER,
    OZAKI_ANALYSIS,
    OZAKI_CHAPTER,
    PRECISION_CHAPTER,
    PROBES,
    PRODUCER_REGISTERS,
    TENSOR_CORES_CHAPTER,
    WGMMA_BK,
    WGMMA_CHAPTER,
    WGMMA_N,
    a_pad,
    buffers,
    consumer_registers,
)
from .spec import (
    ARCH_SPECIFIC,
    DYNAMIC_SMEM_LIMIT,
    INT32_MAX,
    MAX_GRID_Y,
    MAX_REGISTERS_PER_THREAD,
    MAX_THREADS_PER_BLOCK,
    PRECISIONS,
    REGISTERS_PER_SM,
    ROOT,
    SCHEDULERS_PER_SM,
    SM90_SMEM_PER_SM,
    SM90_SMEM_RESERVED,
    STATIC_SMEM_LIMIT,
    Instance,
    KernelSpec,
    Params,
    Probe,
    Rule,
    Shape,
    SourceFile,
    as_integer,
    code_only,
    expand_includes,
    register_budget,
    shape_of,
    tail_shapes,
)

__all__ = [  # the catalog's names: the registry's own, and those of the spec model and the families it is read by
    "A_LAYOUTS", "ARCH_SPECIFIC", "DATA_MOVERS_CHAPTER", "DYNAMIC_SMEM_LIMIT", "HOPPER_CHAPTER", "INT32_MAX",
    "INT8_MAX_K", "INT8_PRODUCT", "KERNELS", "KEY_SHARES", "MAX_GRID_Y", "MAX_REGISTERS_PER_THREAD",
    "MAX_THREADS_PER_BLOCK", "MEASURING_CHAPTER", "OZAKI_ANALYSIS", "OZAKI_CHAPTER", "PRECISIONS", "PRECISION_CHAPTER",
    "PROBES", "PRODUCER_REGISTERS", "REGISTERS_PER_SM", "ROOT", "SCHEDULERS_PER_SM", "SM90_SMEM_PER_SM",
    "SM90_SMEM_RESERVED", "STATIC_SMEM_LIMIT", "TENSOR_CORES_CHAPTER", "WGMMA_BK", "WGMMA_CHAPTER", "WGMMA_N",
    "Instance", "KernelSpec", "Params", "Probe", "Rule", "Shape", "SourceFile", "a_pad", "buffers", "check_smem",
    "code_only", "consumer_registers", "expand_includes", "get", "instance", "is_key_share", "legal_grid",
    "register_budget", "tail_shapes", "unsupported", "validate", "waits_on_tma",
]

# The shares the intro, README and scoreboard lead with, at each kernel's defaults (benchmarks/retime.py re-times them):
# their races take turns.LONG_TURNS.
KEY_SHARES = tuple((name, size) for size in (4096, 8192)
                   for name in ("wgmma_ws_tf32", "wgmma_ws_3xtf32", "ozaki", INT8_PRODUCT))


def is_key_share(kernel: str, params: Params, shape: Shape) -> bool:
    """Is this race one of the KEY_SHARES (a square size, the kernel at its defaults)?"""
    key = any(kernel == k and tuple(shape) == (s,) * 3 for k, s in KEY_SHARES)
    return key and (kernel not in KERNELS or dict(params) == KERNELS[kernel].full_params())


def get(kernel: str | KernelSpec) -> KernelSpec:
    """The spec of a kernel by name (a spec passes through)."""
    if isinstance(kernel, KernelSpec):
        return kernel
    if not isinstance(kernel, str):
        raise TypeError(f"a kernel is named by a string, one of {', '.join(KERNELS)}; not {type(kernel).__name__} "
                        "(to multiply arrays of your own, call gl.gemm(kernel, A, B))")
    try:
        return KERNELS[kernel]
    except KeyError:
        raise ValueError(f"unknown kernel {kernel!r}; the catalog has {', '.join(KERNELS)}") from None


def instance(kernel: str | KernelSpec, params: Params | None = None, shape: Shape | None = None, *,
             smem_limit: int | None = None, cc: tuple[int, int] | None = None) -> Instance:
    """The validated `Instance`: parameters (and a problem shape) checked against the kernel's rules before anything
    compiles; a `ValueError` names the broken rule and its values. `smem_limit`, `cc`: the device, if known."""
    spec = get(kernel)
    if why := unsupported(spec, cc) if cc is not None else None:
        raise ValueError(why)
    p = spec.full_params(params)
    for rule in spec.rules:
        if not rule.holds(p):
            raise ValueError(f"{spec.describe(p)} breaks a rule: {rule.why}{_needs(spec, p)}")
    if smem_limit is not None:
        check_smem(spec, p, smem_limit)
    if shape is not None:
        shape = shape_of(shape)
        _validate_shape(spec, p, shape)
    return Instance(spec, p, shape)


def waits_on_tma(spec: KernelSpec) -> bool:
    """Whether the kernel's warps wait on mbarriers that TMA copies fill: kernels 13 and 14, and the Ozaki scheme's
    INT8 products (which read their residues through tensor maps of their own, so the spec is not `tma`)."""
    return spec.tma or spec.precision == "ozaki"


def check_smem(spec: KernelSpec, params: dict[str, int], smem_limit: int) -> None:
    """Refuse full `params` that need more shared memory per block than a GPU allows (`smem_limit` bytes); for an
    instance validated before the GPU was known."""
    if spec.smem_bytes(params) > smem_limit:
        raise ValueError(f"{spec.describe(params)} needs {spec.smem_bytes(params)} bytes of shared memory per block; "
                         f"this GPU allows {smem_limit}")


def validate(kernel: str | KernelSpec, params: Params | None = None, shape: Shape | None = None,
             smem_limit: int | None = None, cc: tuple[int, int] | None = None) -> dict[str, int]:
    """`instance()`'s checks, returning the full parameter set (defaults filled in)."""
    return instance(kernel, params, shape, smem_limit=smem_limit, cc=cc).params


def unsupported(kernel: str | KernelSpec | Probe, cc: tuple[int, int]) -> str | None:
    """Why a GPU of compute capability `cc` cannot run the kernel's (or probe's) instructions, or None when it can."""
    spec = kernel if isinstance(kernel, Probe) else get(kernel)
    what = f" ({spec.notes})" if isinstance(spec, KernelSpec) else ""
    if spec.arch:
        exact, family, gpus = ARCH_SPECIFIC[spec.arch]
        if tuple(cc) != exact:
            return (f"{spec.name} uses {family}-only instructions{what} compiled for {spec.arch}: it runs "
                    f"only on compute capability {exact[0]}.{exact[1]} GPUs such as {gpus}; "
                    f"this one is {cc[0]}.{cc[1]}")
    if tuple(cc) < spec.min_cc:
        return (f"{spec.name} needs a GPU of compute capability {spec.min_cc[0]}.{spec.min_cc[1]} or newer"
                f"{what}; this one is {cc[0]}.{cc[1]}")
    return None


def _needs(spec: KernelSpec, p: dict[str, int]) -> str:
    """What the instance would need per block, when that can be computed (not for a zero tile size)."""
    try:
        return f" (it needs {spec.threads(p)} threads and {spec.smem_bytes(p)} B of shared memory per block)"
    except ZeroDivisionError:
        return ""


def _validate_shape(spec: KernelSpec, p: dict[str, int], shape: Shape) -> None:
    m, n, k = shape  # each at least 1 (`shape_of`)
    if max(m * k, k * n, m * n) > INT32_MAX:
        raise ValueError(
            f"shape M={m}, N={n}, K={k}: the kernels index with 32-bit integers, "
            f"so each matrix must have fewer than 2**31 elements"
        )
    if spec.tma and (n % 4 or k % 4):
        raise ValueError(
            f"shape M={m}, N={n}, K={k}: {spec.name} reads A and B through TMA tensor maps, whose rows must be "
            f"whole multiples of 16 bytes, so K and N must be multiples of 4 (mma_tf32 takes any shape)"
        )
    rows = spec.grid(p, m, n)[1]
    if rows > MAX_GRID_Y:
        raise ValueError(
            f"shape M={m} with {spec.describe(p)} needs {rows} block rows; the grid's y dimension "
            f"allows {MAX_GRID_Y}"
        )


def _checked_choices(spec: KernelSpec, choices: Mapping[str, Iterable[int]]) -> dict[str, tuple[int, ...]]:
    """`choices` as tuples of ints, each name one of the kernel's parameters (a typo would otherwise sweep the
    whole offered grid in its place)."""
    spec.check_names(choices)
    checked = {}
    for name, values in choices.items():
        if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
            raise TypeError(f"choices give {name} a tuple of values, such as {{{name!r}: (64, 128)}}, not {values!r}")
        checked[name] = tuple(as_integer(f"{spec.name}'s {name}", v) for v in values)
        if not checked[name]:
            raise ValueError(f"choices give {name} no values")
    return checked


def legal_grid(kernel: str | KernelSpec, choices: Mapping[str, tuple[int, ...]] | None = None) -> list[dict[str, int]]:
    """Every combination of the offered values (or `choices`) that passes `validate`."""
    spec = get(kernel)
    choices = {**spec.choices, **_checked_choices(spec, choices or {})}
    combos: list[dict[str, int]] = [{}]
    for name in spec.param_names:
        combos = [{**c, name: v} for c in combos for v in choices[name]]
    legal = []
    for c in combos:
        try:
            legal.append(validate(spec, c))
        except ValueError:
            continue
    return legal


