"""The spec model: what the catalog says about a kernel (its file, template parameters, derived launch shape and rules
with reasons), the hardware limits those rules cite, and a validated instance.

`catalog.py` is the registry of the book's kernels built on this model; `families.py` writes each family's rules.
"""
from __future__ import annotations

import hashlib
import math
import numbers
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
"""Repository root: `kernels/` and `records/` live here."""

Params = Mapping[str, int]
Shape = tuple[int, int, int]  # (M, N, K)

MAX_THREADS_PER_BLOCK = 1024
STATIC_SMEM_LIMIT = 48 * 1024  # bytes of statically declared __shared__ memory per block
SM90_SMEM_PER_SM = 233472  # bytes of shared memory per SM on sm_90 (H100, H200): 228 KiB
SM90_SMEM_RESERVED = 1024  # bytes the runtime keeps of it per resident block
# bytes of dynamic shared memory per block with the opt-in: 227 KiB, sm_90's maximum
DYNAMIC_SMEM_LIMIT = SM90_SMEM_PER_SM - SM90_SMEM_RESERVED
# FFMA; tensor cores on TF32 operands; three TF32 products per FP32 product; FP32 emulated on INT8 tensor cores
PRECISIONS = ("fp32", "tf32", "3xtf32", "ozaki")
# Arch-specific targets: code compiled for one runs only on GPUs of exactly its compute capability.
ARCH_SPECIFIC = {"sm_90a": ((9, 0), "Hopper", "H100/H200")}  # target -> compute capability, family, GPUs
MAX_GRID_Y = 65535
INT32_MAX = 2**31 - 1


def as_integer(what: str, value: object) -> int:
    """`value` as an int for `what` (a tile parameter, a dimension): an int, a NumPy integer or a whole float; a bool,
    a string or a fraction is refused, where `int()` would have truncated it into another instance or shape."""
    real = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if real and (isinstance(value, numbers.Integral) or float(value).is_integer()):
        return int(value)
    raise (ValueError if real else TypeError)(f"{what} must be an integer, not {value!r}")


def shape_of(size: object) -> Shape:
    """`4096` -> (4096, 4096, 4096); `(m, n, k)` passes through; anything else is refused before anything runs."""
    dims = tuple(size) if isinstance(size, (tuple, list)) else (size,) * 3
    if len(dims) != 3:
        raise ValueError(f"size {size!r}: give one integer (M = N = K) or three, (M, N, K)")
    shape = tuple(as_integer(f"size {size!r}: {d}", v) for d, v in zip("MNK", dims))
    if min(shape) < 1:
        raise ValueError("shape M={}, N={}, K={}: every dimension must be at least 1".format(*shape))
    return shape


def ceil_div(a: int, b: int) -> int:
    """Whole `b`s needed to hold `a`: tiles of a dimension, blocks of a grid."""
    return -(-a // b)


def round_up(a: int, b: int) -> int:
    """`a` rounded up to a multiple of `b`: a padded dimension, an aligned size."""
    return ceil_div(a, b) * b


@dataclass(frozen=True)
class Rule:
    """A constraint on template parameters; `why` is what the user reads when it breaks."""

    why: str
    holds: Callable[[Params], bool]


class SourceFile:
    """What is compiled from a file of kernels/ (`source`: its path from the repository root), and its hashes."""

    source: str
    ptxas_options: tuple[str, ...] = ()  # passed to ptxas (through NVRTC's -Xptxas) when this file is compiled

    @property
    def path(self) -> Path:
        return ROOT / self.source

    def source_text(self) -> str:
        """The .cu file with its local `#include "..."` headers inlined (once each, `#line`-marked).

        NVRTC then compiles one self-contained string, so a cache keyed by the string notices header
        edits, and errors still name the original file and line.
        """
        return expand_includes(self.path)

    def source_sha256(self) -> str:
        """sha256 of the .cu file's code (the record format's `source_sha256`): comments, blank lines and trailing
        spaces left out, so that correcting a comment leaves the records of a kernel fresh."""
        return hashlib.sha256(code_only(self.path.read_text()).encode()).hexdigest()

    def build_sha256(self) -> str:
        """sha256 of the code that is compiled: the .cu file with its headers, so header edits are seen too (without
        comments and the `#line` marks, as `source_sha256`), and the ptxas options, if any."""
        options = "".join(f"\nptxas {o}" for o in self.ptxas_options)
        return hashlib.sha256((code_only(self.source_text()) + options).encode()).hexdigest()


@dataclass(frozen=True)
class Probe(SourceFile):
    """A kernel file that is not a catalogued SGEMM but is compiled offline by the tests, run and sanitizer-checked like
    one: kernels that measure the hardware (`hardware.peak_launches`, `memory.measure`), or a product of another
    precision timed beside its own cuBLAS (`precision` set: its measurements are rows of the record format)."""

    name: str
    source: str
    functions: tuple[str, ...]  # its kernels' names, which compute-sanitizer is told to check
    min_cc: tuple[int, int]
    record: str  # the record kind (records/<gpu>/<record>.json) holding what it measured
    instances: tuple[tuple[str, str], ...]  # (name expression, arch) of each kernel, as the tests compile it offline
    arch: str = ""  # an arch-specific target (a key of ARCH_SPECIFIC) it must be compiled for
    precision: str = ""  # the precision of the product it times, if it is one
    params: tuple[str, ...] = ()  # its first function's template parameters, in order: a record's params name one

    def name_expression(self, params: Params) -> str:
        """The name expression of its first function's instance with these template parameters."""
        return f"{self.functions[0]}<{', '.join(str(params[name]) for name in self.params)}>"


@dataclass(frozen=True)
class KernelSpec(SourceFile):
    """One CUDA kernel template of `kernels/` and everything needed to launch it."""

    name: str
    source: str  # path relative to the repository root
    function: str  # the template's name in the .cu file
    title: str
    choices: dict[str, tuple[int, ...]]  # template parameters, in template order -> values to offer
    defaults: dict[str, int]
    tile: Callable[[Params], tuple[int, int]]  # (rows, cols) of C computed by one block
    threads: Callable[[Params], int]
    smem_bytes: Callable[[Params], int]
    rules: tuple[Rule, ...] = ()
    chapter: str = ""  # the book page that introduces it
    precision: str = "fp32"  # one of PRECISIONS: the accuracy it promises, and the cuBLAS it is timed beside
    notes: str = ""
    min_cc: tuple[int, int] = (5, 0)  # oldest compute capability whose instructions it uses
    dynamic_smem: bool = False  # extern __shared__: smem_bytes is asked for at launch (an opt-in above 48 KiB)
    arch: str = ""  # an arch-specific target (a key of ARCH_SPECIFIC) it must be compiled for, else the GPU's own
    tma: bool = False  # reads A and B through TMA tensor maps (`tma.py`), passed after C; rows of 16-byte multiples
    tma_c: bool = False  # also takes C's tensor map (after B's), for TMA stores in the epilogue
    cluster: Callable[[Params], int] = lambda p: 1  # blocks per cluster, stacked along the grid's y (M)
    # one block per resident slot of the GPU (`grid`'s `slots`), each looping over its share of the tiles
    persistent: Callable[[Params], bool] = lambda p: False
    # static __shared__ bytes of a dynamic_smem kernel (as ptxas lays them out): they count against the same limit
    static_smem: Callable[[Params], int] = lambda p: 0
    ptxas_options: tuple[str, ...] = ()  # see SourceFile
    # name expressions of the other kernels of its source that a launch runs around it (compiled into the same cubin)
    companions: Callable[[Params], tuple[str, ...]] = lambda p: ()
    # the instances a launch runs (full parameters): itself, or each that it may choose at run time (the Ozaki default)
    runs: Callable[[Params], tuple[Params, ...]] = lambda p: (p,)

    def __post_init__(self) -> None:
        if self.precision not in PRECISIONS:
            raise ValueError(f"{self.name}: precision must be one of {', '.join(PRECISIONS)}, not {self.precision!r}")
        if self.arch and self.arch not in ARCH_SPECIFIC:
            raise ValueError(f"{self.name}: arch must be one of {', '.join(ARCH_SPECIFIC)} (or empty), "
                             f"not {self.arch!r}")

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(self.choices)

    def check_names(self, names: Iterable[str]) -> None:
        """Refuse names that are not this kernel's parameters (a typo would otherwise be ignored)."""
        unknown = set(names) - set(self.choices)
        if unknown:
            raise ValueError(f"{self.name} has no parameter {', '.join(sorted(map(str, unknown)))}; "
                             f"its parameters are {', '.join(self.param_names)}")

    def full_params(self, params: Params | None = None) -> dict[str, int]:
        """Defaults overridden by `params`, in template order; unknown names are an error."""
        if params is not None and not isinstance(params, Mapping):
            raise TypeError(f"{self.name}'s parameters must be a dict such as {{{self.param_names[0]!r}: "
                            f"{self.defaults[self.param_names[0]]}}}, not {params!r}")
        params = dict(params or {})
        self.check_names(params)
        return {p: as_integer(f"{self.name}'s {p}", params.get(p, self.defaults[p])) for p in self.param_names}

    def name_expression(self, params: Params) -> str:
        """The C++ name expression of one template instance, e.g. `sgemm_smem_tiled<32, 32, 8>`."""
        p = self.full_params(params)
        return f"{self.function}<{', '.join(str(p[n]) for n in self.param_names)}>"

    def launch_smem(self, params: Params) -> int:
        """Bytes of dynamic shared memory a launch asks for: 0 where the kernel's arrays are static."""
        return self.smem_bytes(self.full_params(params)) if self.dynamic_smem else 0

    def grid(self, params: Params, m: int, n: int, slots: int = 0) -> tuple[int, int, int]:
        """Blocks along x, y, z: one per tile of C, or a persistent kernel's `slots` (blocks the GPU holds at once,
        which the launcher knows; 0: one per tile)."""
        p = self.full_params(params)
        (bm, bn), per = self.tile(p), self.cluster(p)
        if self.persistent(p) and slots:
            return (slots // per, per, 1)  # whole clusters, stacked along y
        # whole clusters: spare blocks store nothing
        return (math.ceil(n / bn), math.ceil(m / bm / per) * per, 1)

    def describe(self, params: Params | None = None) -> str:
        p = self.full_params(params)
        return f"{self.name}(" + ", ".join(f"{k}={v}" for k, v in p.items()) + ")"


_INCLUDE = re.compile(r'^#include "([^"]+)"\s*$')
_TOKENS = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|//[^\n]*|/\*.*?\*/', re.S)


def code_only(text: str) -> str:
    """C++ source without its comments (string and character literals kept as written), `#line` marks, trailing
    spaces and blank lines: what the hashes of a kernel file cover."""
    code = _TOKENS.sub(lambda m: m.group(0) if m.group(0)[0] in "\"'" else " ", text)
    lines = (line.rstrip() for line in code.splitlines())
    return "\n".join(line for line in lines if line and not line.startswith("#line "))


def expand_includes(path: Path, text: str | None = None) -> str:
    """A .cu file of kernels/ with its local headers inlined (see `KernelSpec.source_text`); `text`: the file's text
    when it is not on disk (a reader's kernel, whose `#include "..."` lines name headers of kernels/)."""
    return _expand(path, set(), text)


def _expand(path: Path, seen: set[Path], text: str | None = None) -> str:
    out = [f'#line 1 "{path.name}"']
    for no, line in enumerate((path.read_text() if text is None else text).splitlines(), start=1):
        match = _INCLUDE.match(line)
        if not match:
            out.append(line)
            continue
        header = path.parent / match.group(1)
        if header not in seen:
            seen.add(header)
            out.append(_expand(header, seen))
        out.append(f'#line {no + 1} "{path.name}"')
    return "\n".join(out)



REGISTERS_PER_SM = 65536  # 32-bit registers per SM from Kepler to Hopper
SCHEDULERS_PER_SM = 4  # each warp scheduler has its own quarter of the register file for the warps it holds
MAX_REGISTERS_PER_THREAD = 255
REGISTER_FILE = (f"{REGISTERS_PER_SM} per SM, a quarter for the warps of each of its {SCHEDULERS_PER_SM} schedulers, "
                 f"at most {MAX_REGISTERS_PER_THREAD} per thread")


def register_budget(threads: int) -> int:
    """Registers each thread can have when one block of `threads` fills an SM (allocated in units of 8).

    A block's warps are dealt out to the four schedulers, so the fullest quarter of the register file holds
    ceil(warps / 4) of them: 22 warps leave each thread 80 registers, not the 88 that 65536 / 704 suggests."""
    warps_per_scheduler = math.ceil(math.ceil(threads / 32) / SCHEDULERS_PER_SM)
    return min(MAX_REGISTERS_PER_THREAD, REGISTERS_PER_SM // SCHEDULERS_PER_SM // warps_per_scheduler // 32 // 8 * 8)




@dataclass(frozen=True)
class Instance:
    """One template instance as `instance()` validated it: the spec, every parameter (defaults filled in, in
    template order) and the problem shape it was checked against (None: no shape, e.g. for compiling alone).

    Made once where a name enters (a bench, a gemm, a compile by name) and handed down: the layers below (launch,
    check, compile) trust it and never validate again.
    """

    spec: KernelSpec
    params: dict[str, int]
    shape: Shape | None = None

    def describe(self) -> str:
        return self.spec.describe(self.params)




def tail_shapes(spec: KernelSpec, params: Params) -> list[Shape]:
    """1x1x1 and primes; one row of blocks more than a tile multiple with N a multiple of 4 and K not (float4
    stores of C, scalar loads of A), the reverse one tile short, and whole tiles (the unguarded interior).
    The TMA kernels' versions keep N and K multiples of 4."""
    bm, bn = spec.tile(params)
    if spec.tma:  # N and K multiples of 4 (catalog refuses others): tails in M, N and K all the same
        return [(1, 4, 4), (17, 20, 24), (bm + 1, bn + 4, 36), (2 * bm - 1, bn - 4, 68), (2 * bm, 2 * bn, 64)]
    return [(1, 1, 1), (17, 19, 23), (bm + 1, bn + 4, 33), (2 * bm - 1, bn - 1, 36), (2 * bm, 2 * bn, 64)]
