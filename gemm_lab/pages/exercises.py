"""The reader's own kernels: `submit` compiles, checks, diagnoses and times a kernel written to the contract of one of
the book's (`like`), or of a variant the book asks for and does not show (`variants.VARIANTS`), and keeps a personal
scoreboard.

A submission is the text of a CUDA kernel template (or the path of a file that holds it) with the book's contract,
`(M, N, K, alpha, A, B, beta, C)` and the tensor maps a TMA kernel takes after C, and the template parameters of the
kernel it stands in for, in the same order: the grid, block, shared memory and rules of that kernel apply to it, and it
may `#include` the headers of kernels/. The book's kernels take row-major float32 matrices; a variant may store some of
them column-major (`Variant.column_major`), and is checked on those layouts.

- Without a GPU it is compiled offline (NVRTC, as CI does): errors quote the reader's lines; otherwise registers,
  spills and shared memory are reported. Checking and timing need a GPU, and the report says so.
- On a GPU it runs on guarded buffers (C poisoned with one NaN, the words around C with another, A and B padded with
  a third) on shapes with tails of every tile, with alpha and beta, and at the size it will be timed at, against
  float64; the first wrong element is named with what that pattern usually means (wrong only at the timing size,
  after the small shapes passed: most likely a race; a variant may name its own likelier cause, `Variant.cause`).
  A launch that does not finish within HANG_S is named too (a wait that nothing completes): it cannot be stopped from
  the host, so the Python kernel must be restarted afterwards. Then it is timed beside the book's kernel (a
  variant's: the book's solution) and cuBLAS, in the same run, and added to the scoreboard (`scoreboard`, kept under
  the compile cache's folder).

Write-the-kernel exercises are data (`KERNEL_EXERCISES`): a variant's solution (a file of kernels/exercises/) with its
key lines removed (`skeleton`), and planted mistakes (`Mistake`) whose diagnosis the GPU tests check. `solution` shows
the file with the lines the reader writes highlighted; a page folds it under its exercise.
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import catalog, compiler, device, run, timing, turns
from ..catalog import KernelSpec, Params, Shape
from ..records import Measurement
from ..spec import as_integer, round_up
from . import listings, submissions
from .tables import Markdown
from .variants import VARIANTS

FILE = "exercise.cu"  # what compile errors call the reader's source
POISON, CANARY, PADDING = 0x7FC0BEEF, 0x7FC0DEAD, 0x7FC0FACE  # NaN payloads: unwritten C, around C, around A and B
GUARD = 1024  # words of canary or padding on each side of a matrix (4 KiB: C stays 16-byte aligned)
METHOD = turns.SHORT  # a reader waits on a submission: short turns, labelled as such in the record
RUNS = 3  # launches of each case on the same inputs: a race rarely gives the same wrong words three times
HANG_S = 20.0  # seconds a launch of a check (milliseconds, even at the timing size) may take before it is named hung
POLL_S = 0.005  # between two looks at whether a launch has finished
CONTRACT = "(int M, int N, int K, float alpha, const float* A, const float* B, float beta, float* C)"
# the catalogued kernels a submission may stand in for: those taking the contract (the Ozaki products take residues)
TARGETS = {name: spec for name, spec in catalog.KERNELS.items() if spec.precision != "ozaki"}
PATH_SUFFIXES = (".cu", ".cuh", ".txt")  # one line ending so names a file, even with spaces in its name
INDEX = {  # where element (row, k) of A, (k, col) of B and (row, col) of C lie, per layout
    ("A", False): "A[row * K + k]", ("A", True): "A[k * M + row]",
    ("B", False): "B[k * N + col]", ("B", True): "B[col * K + k]",
    ("C", False): "C[row * N + col]", ("C", True): "C[col * M + row]",
}


def spec_of(like: str) -> KernelSpec:
    """The spec a submission in place of `like` takes: a variant's (`VARIANTS`), or a catalogued kernel's that takes
    the book's contract (`TARGETS`)."""
    if not isinstance(like, str):
        raise TypeError(f"like names the kernel yours stands in for, a str such as 'warp_dot', not {like!r}")
    if like in VARIANTS:
        return VARIANTS[like].spec
    if like in TARGETS:
        return TARGETS[like]
    why = (f"{like} is the Ozaki scheme's INT8 products, which take residues, not the book's contract"
           if like in catalog.KERNELS else f"unknown kernel {like!r}")
    raise ValueError(f"{why}: a submission stands in for a kernel of the catalog ({', '.join(TARGETS)}) or an "
                     f"exercise's variant ({', '.join(VARIANTS)})")


def column_major_of(like: str) -> tuple[str, ...]:
    """The operands that a kernel in place of `like` takes column-major (none for the book's kernels)."""
    return VARIANTS[like].column_major if like in VARIANTS else ()


def cause_of(like: str) -> str:
    """What a wrong result of a kernel in place of `like` most likely means, if it has a cause of its own
    (`Variant.cause`); "" for the generic ones."""
    return VARIANTS[like].cause if like in VARIANTS else ""


@dataclass(frozen=True)
class Submission(KernelSpec):
    """A reader's kernel standing in for a catalogued one: everything but its code is that kernel's. `file` is what
    compile errors call it (the reader's file, or FILE for a string)."""

    text: str = ""
    file: str = FILE

    @property
    def path(self) -> Path:
        return catalog.ROOT / "kernels" / self.file  # includes resolve against kernels/; errors name the file

    def source_text(self) -> str:
        return catalog.expand_includes(self.path, self.text)

    def source_sha256(self) -> str:
        return hashlib.sha256(catalog.code_only(self.text).encode()).hexdigest()


KernelText = str | os.PathLike  # a kernel's text, or the path of a file that holds it


def _names_a_file(text: str) -> bool:
    """A file's name, not a kernel's text: one line ending in .cu, .cuh or .txt, or without spaces or braces."""
    line = text.strip()
    return "\n" not in line and (line.lower().endswith(PATH_SUFFIXES) or re.fullmatch(r"[^\s{}]+", line) is not None)


def _read(source: KernelText) -> tuple[str, str]:
    """The kernel's text, without a byte order mark (an editor's, invisible, which NVRTC refuses), and what errors
    call it: a path (a PathLike, or a string that names a file) is read, any other string is the text itself."""
    if isinstance(source, str) and not _names_a_file(source):
        return source.removeprefix("\ufeff"), FILE
    path = Path(source.strip() if isinstance(source, str) else source).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"no file {str(path)!r} (from {Path.cwd()}): submit reads a string of one line that "
                                "ends in .cu, .cuh or .txt, or has no spaces or braces, as a file's path; pass the "
                                "kernel's source itself, or the path of a file that holds it")
    try:
        return path.read_bytes().decode().removeprefix("\ufeff"), path.name
    except UnicodeDecodeError as err:
        raise ValueError(f"{path} is not UTF-8 text (byte {err.start} is {err.object[err.start]:#x}): save the "
                         "kernel as UTF-8") from None


def _parameter_type(parameter: str) -> str:
    """A parameter's type, for the contract: no name or __restrict__, words before the first * in any order."""
    words = parameter.replace("*", " * ").replace("__restrict__", " ").split()[:-1]
    star = words.index("*") if "*" in words else len(words)
    return " ".join(sorted(words[:star]) + words[star:])


def contract(spec: KernelSpec) -> str:
    """The arguments a kernel in place of `spec` takes: the book's, then the tensor maps of a TMA kernel."""
    maps = ("map_a", "map_b")[:2 * spec.tma] + ("map_c",) * spec.tma_c
    return CONTRACT[:-1] + "".join(f", const void* {m}" for m in maps) + ")"


def submission(source: KernelText, like: str, name: str = "") -> Submission:
    """The reader's `source` (a string, or a file's path) as a stand-in for kernel `like` (catalogued, or a variant),
    after checking that it is a kernel template of that kernel's name with its template parameters and the book's
    contract (a ValueError says what differs); `name` is what its measurements are called (default: "your <like>")."""
    spec = spec_of(like)
    if not isinstance(source, (str, os.PathLike)):
        raise TypeError(f"submit takes the CUDA source of a kernel as a string, or a file's path, not {source!r}")
    source, file = _read(source)
    if "__global__" not in source:
        raise TypeError(f"submit takes the CUDA source of a kernel ({file} has no __global__ function)")
    names = ", ".join(f"int {p}" for p in spec.param_names)
    head = re.search(rf"template\s*<([^>]*)>\s*__global__[^;{{]*?\b{spec.function}\s*\(([^)]*)\)", source)
    if head is None:
        raise ValueError(f"no kernel `template <{names}> __global__ void {spec.function}{contract(spec)}` in the "
                         f"source: your kernel stands in for {like} (chapter {spec.chapter}), so it needs its name and "
                         "template parameters")
    params = [p.split()[-1] for p in head.group(1).split(",") if p.strip()]
    if params != list(spec.param_names):
        raise ValueError(f"{spec.function}'s template parameters are <{', '.join(params)}>; {like}'s are <{names}>, "
                         "in this order (the grid, block and shared memory are derived from them)")
    given = [" ".join(a.split()) for a in head.group(2).split(",") if a.strip()]
    expected = contract(spec)[1:-1].split(", ")
    if len(given) != len(expected):
        raise ValueError(f"{spec.function} must take the book's contract {contract(spec)}: it takes {len(given)} "
                         f"parameters, not {len(expected)}")
    wrong = next((i for i, (g, e) in enumerate(zip(given, expected)) if _parameter_type(g) != _parameter_type(e)), None)
    if wrong is not None:
        raise ValueError(f"{spec.function} must take the book's contract {contract(spec)}, these types in this order "
                         f"(the names are yours): its parameter {wrong + 1} is `{given[wrong]}`, where the contract "
                         f"has `{expected[wrong]}`")
    _check_includes(source, file)
    base = {f.name: getattr(spec, f.name) for f in dataclasses.fields(KernelSpec)}
    return Submission(**{**base, "name": name or f"your {like}"}, text=source, file=file)


def _check_includes(source: str, file: str) -> None:
    """Refuse an `#include "..."` that kernels/ lacks (a submission compiles as a file of kernels/), before NVRTC."""
    try:
        catalog.expand_includes(listings.KERNELS_DIR / FILE, source)
    except FileNotFoundError as err:
        headers = ", ".join(sorted(p.name for p in listings.KERNELS_DIR.glob("*.cuh")))
        raise FileNotFoundError(f"{file} includes \"{os.path.relpath(err.filename, listings.KERNELS_DIR)}\", which is "
                                f"not in {listings.KERNELS_DIR}: a submission's includes are looked for there, among "
                                f"the book's headers ({headers}), not beside your file; put your own helpers in the "
                                "kernel's file") from None


@dataclass
class Attempt:
    """What `submit` found: compile errors, or resources; then (on a GPU) the first wrong element and what it
    suggests, or the timings beside the book's kernel and cuBLAS."""

    like: str
    params: dict[str, int]
    compiled: bool = False
    compile_log: str = ""
    registers: int = 0
    spills: int = 0
    smem_bytes: int = 0
    checked: list[tuple[Shape, float]] = field(default_factory=list)  # (shape, max relative error) that passed
    wrong: str = ""  # the first failure, with its diagnosis
    timed: list[Measurement] = field(default_factory=list)  # yours, then the book's kernel, each beside cuBLAS
    note: str = ""

    @property
    def ok(self) -> bool:
        return self.compiled and not self.wrong

    def _repr_markdown_(self) -> str:
        return str(report(self))


def submit(source: KernelText, like: str, params: Params | None = None, *, size: int = 2048) -> Attempt:
    """Compile, check and time the reader's kernel (its text, or the path of its .cu file) in place of kernel `like`
    (see the module), timed at M = N = K = `size`. Bad input (not a kernel, a wrong signature, tile sizes the rules
    forbid, a size they cannot launch) is refused before anything compiles."""
    sub = submission(source, like)
    inst = catalog.instance(sub, params)
    size = as_integer("size (M = N = K, one integer)", size)  # the scoreboard and the checks take one square size
    catalog.instance(sub, inst.params, (size,) * 3)  # the timing size too, before anything compiles
    attempt, here = Attempt(like, inst.params), device.runs_here(sub)
    try:  # NVRTC names the reader's file (FILE for a string) and their own line numbers, and quotes the lines
        if here:  # compiled once for this GPU and kept on disk: a second submission of the same text only loads it
            fn = compiler.load(inst)
            attempt.registers, attempt.spills = fn.num_regs, fn.local_size_bytes
            attempt.smem_bytes = fn.shared_size_bytes
        else:
            _, ptxas, _ = compiler.offline(sub, (sub.name_expression(inst.params),), sub.arch or compiler.OFFLINE_ARCH)
            if ptxas:
                attempt.registers, attempt.spills, attempt.smem_bytes = ptxas.registers, ptxas.spills, ptxas.smem_bytes
    except compiler.CompileError as err:
        attempt.compile_log = str(err)
        return attempt
    attempt.compiled = True
    if not here:
        attempt.note = ("Checking and timing need a GPU that runs this kernel (here: "
                        f"{'replay, no GPU' if not device.live() else device.gpu().name}); "
                        "in Colab, pick a GPU runtime.")
        return attempt
    attempt.wrong, attempt.checked = check(sub, inst.params, size, column_major_of(like), cause=cause_of(like))
    if not attempt.wrong:  # checked at the timing size too: the timing finds nothing new to refuse
        at_size = catalog.instance(sub, inst.params, (size,) * 3)
        attempt.timed = [timing.raced(at_size, attempt.checked[-1][1], method=METHOD), _book(like, size, inst.params)]
        submissions.remember(attempt.timed[0], like)
    return attempt


Trial = Callable[..., tuple[str, float]]  # (sub, params, shape, *, alpha, beta, k_tail, column_major, cause, passed)


class Hung(RuntimeError):
    """A launch that did not finish within HANG_S: its message is the diagnosis."""


def check(sub: Submission, params: dict[str, int], size: int = 0, column_major: tuple[str, ...] = (),
          trial: Trial | None = None, cause: str = "") -> tuple[str, list[tuple[Shape, float]]]:
    """Run on every tail shape of the tile (`catalog.tail_shapes`), then with alpha and beta, then at M = N = K =
    `size` (0: not), each three times (a race shows as results that differ), with the operands in `column_major`
    stored column-major; the first failure explained (`cause`: the likelier cause a variant names), or "" and what
    passed. A launch that hangs ends the check at once: nothing more can run on the GPU. `trial` runs and judges one
    case (default: on the GPU, `_run_and_judge`; the tests pass fakes)."""
    trial = trial or _run_and_judge
    passed: list[tuple[Shape, float]] = []
    shapes = [(m, n, k) for m, n, k in catalog.tail_shapes(sub, params)]
    bk = params.get("BK", 1)
    layout = {"column_major": column_major, "cause": cause}
    try:
        with run.faults(sub, params):
            for shape in shapes:
                why, err = trial(sub, params, shape, **layout)
                if why and shape[2] % bk:  # right once K is whole tiles deep? then the partial step is wrong
                    whole = (shape[0], shape[1], round_up(shape[2], bk))
                    if not trial(sub, params, whole, **layout)[0]:
                        why = trial(sub, params, shape, k_tail=True, **layout)[0]
                if why:
                    return why, passed
                passed.append((shape, err))
            why, err = trial(sub, params, shapes[-1], alpha=0.5, beta=-2.0, **layout)
            if why:
                return f"with alpha = 0.5 and beta = -2: {why}", passed
            if size:  # what only scale shows (a race small shapes rarely lose) is named here, not by the timing
                why, err = trial(sub, params, (size,) * 3, passed=len(passed), **layout)
                if why:
                    return f"at M = N = K = {size}: {why}", passed
                passed.append(((size,) * 3, err))
    except Hung as hung:
        return str(hung), passed
    return "", passed


def _run_and_judge(sub: Submission, params: dict[str, int], shape: Shape, alpha: float = 1.0, beta: float = 0.0,
                   k_tail: bool = False, column_major: tuple[str, ...] = (), cause: str = "",
                   passed: int = 0) -> tuple[str, float]:
    """One case on the GPU: `judge` with a launch of the validated instance on device copies of the guarded words."""
    import cupy

    inst = catalog.instance(sub, params, shape)

    def matmul(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """The float64 reference product, on the GPU: fast at scale."""
        return cupy.asnumpy(cupy.asarray(x) @ cupy.asarray(y))

    return judge(_device_launch(inst, alpha, beta), shape, sub.tile(params), sub.precision, alpha=alpha, beta=beta,
                 k_tail=k_tail, column_major=column_major, cause=cause, passed=passed, matmul=matmul)


Launch = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]  # guarded words of A, B, C -> C's after a launch


def _device_launch(inst: catalog.Instance, alpha: float, beta: float) -> Launch:
    """A launch of `inst` on fresh device copies of guarded words (the matrices inside them viewed with the shapes
    the launcher checks: a column-major matrix's words are its transpose's, in the same number)."""
    import cupy

    m, n, k = inst.shape

    def launch(a_words: np.ndarray, b_words: np.ndarray, c_words: np.ndarray) -> np.ndarray:
        bufs = [cupy.asarray(w).view(cupy.float32) for w in (a_words, b_words, c_words)]
        a, b, c = (buf[GUARD:GUARD + r * s].reshape(r, s) for buf, (r, s) in zip(bufs, ((m, k), (k, n), (m, n))))
        run.launcher(inst, a, b, alpha=alpha, beta=beta, out=c)()
        finished(inst.shape)
        return cupy.asnumpy(bufs[2]).view(np.uint32)

    return launch


def finished(shape: Shape, within: float = HANG_S, is_done: Callable[[], bool] | None = None) -> None:
    """Return once the GPU has done the work queued so far, or raise Hung after `within` seconds with what a kernel
    that never finishes usually means: it cannot be stopped from the host, so naming it is all a check can do.
    `is_done` says whether the work is done (default: whether a CUDA event recorded now has completed)."""
    if is_done is None:
        import cupy

        event = cupy.cuda.Event(disable_timing=True)
        event.record()

        def is_done() -> bool:
            return bool(event.done)
    deadline = time.monotonic() + within
    while not is_done():
        if time.monotonic() > deadline:
            m, n, k = shape
            raise Hung(f"at M = {m}, N = {n}, K = {k} the kernel did not finish within {within:.0f} s, where it "
                       "needs milliseconds: a thread waits for what never comes (an mbarrier wait whose phase no "
                       "arrival completes: a wrong parity, an arrival count larger than the arrivals, more bytes "
                       "expected than land; a __syncthreads that some threads never reach; or a loop that never "
                       "ends; or a fault that stopped it, such as a float4 access at an address that is not a multiple "
                       "of 16 bytes, which CUDA names only at the next call). The GPU may still run it and cannot be "
                       "stopped from here: restart the Python kernel before you use the GPU again")
        time.sleep(POLL_S)


def stored(x: np.ndarray, column_major: bool) -> np.ndarray:
    """The words of matrix `x` in the order memory holds them: row by row, or column by column (its transpose's
    rows)."""
    return np.ascontiguousarray(x.T if column_major else x).ravel().view(np.uint32)


def guarded(words: np.ndarray, guard_bits: int) -> np.ndarray:
    """`words` (uint32) with GUARD words of `guard_bits` before and after them."""
    out = np.full(words.size + 2 * GUARD, guard_bits, dtype=np.uint32)
    out[GUARD:GUARD + words.size] = words
    return out


def row_major_c(words: np.ndarray, m: int, n: int, column_major: bool) -> np.ndarray:
    """A launch's guarded words of C with the matrix in row-major order (the guards as they were)."""
    if not column_major:
        return words
    out = words.copy()
    out[GUARD:GUARD + m * n] = words[GUARD:GUARD + m * n].reshape(n, m).T.ravel()
    return out


def judge(launch: Launch, shape: Shape, tile: tuple[int, int], precision: str = "fp32", *, alpha: float = 1.0,
          beta: float = 0.0, k_tail: bool = False, column_major: tuple[str, ...] = (), cause: str = "",
          passed: int = 0, matmul: Callable[[np.ndarray, np.ndarray], np.ndarray] = np.matmul) -> tuple[str, float]:
    """Run `launch` RUNS times on the seeded inputs of `shape` (A, B and, with beta, C stored as `column_major`
    says; with beta = 0, C poisoned), and judge the first result against float64 (`diagnose`, which hears of a
    second that differs): the diagnosis ("" when right) and the largest relative error. `matmul` multiplies the
    float64 references (NumPy's, or the GPU's where the shape is large)."""
    m, n, k = shape
    rng = np.random.default_rng(0)
    a, b = rng.uniform(-1, 1, (m, k)).astype(np.float32), rng.uniform(-1, 1, (k, n)).astype(np.float32)
    c0 = rng.uniform(-1, 1, (m, n)).astype(np.float32)
    product, floor = run.reference(a, b, matmul)
    ref = alpha * product + beta * c0.astype(np.float64)
    words_a, words_b = (guarded(stored(x, name in column_major), PADDING) for x, name in ((a, "A"), (b, "B")))
    words_c = guarded(stored(c0, "C" in column_major), CANARY) if beta else \
        guarded(np.full(m * n, POISON, np.uint32), CANARY)
    outs = [row_major_c(launch(words_a, words_b, words_c), m, n, "C" in column_major) for _ in range(RUNS)]
    tolerance = run.tolerance(k, precision)
    differs = next((x for x in outs[1:] if (x != outs[0]).any()), outs[0])
    return diagnose(outs[0], differs, ref, (m, n), tolerance, floor, tile, k_tail, column_major=column_major,
                    cause=cause, passed=passed), \
        run.max_rel_err(outs[0][GUARD:GUARD + m * n].view(np.float32).reshape(m, n), ref, floor)


def diagnose(first: np.ndarray, second: np.ndarray, ref: np.ndarray, shape: tuple[int, int], tolerance: float,
             floor: float, tile: tuple[int, int], k_tail: bool, *, column_major: tuple[str, ...] = (),
             cause: str = "", passed: int = 0) -> str:
    """The first thing wrong with a guarded C (the words of one launch and of another of the same inputs, uint32, GUARD
    words around M x N in row-major order) against the float64 reference, and what it usually means; "" when all is
    right. `column_major`: the operands the kernel takes column-major (named in the hint on indices); `cause`: what a
    wrong value of this kernel most likely means, named instead of a missing __syncthreads or wrong indices; `passed`:
    the smaller shapes this kernel got right before this one (then a wrong result is most likely a race)."""
    m, n = shape
    guard = np.concatenate([first[:GUARD], first[GUARD + m * n:]])
    if (guard != CANARY).any():
        where = "before its first element" if (first[:GUARD] != CANARY).any() else "past its last element"
        return (f"it wrote outside C ({where}): an output index past the edge, or a missing bound check before the "
                "store (row < M and col < N)")
    c_bits = first[GUARD:GUARD + m * n].reshape(m, n)
    c = c_bits.view(np.float32).astype(np.float64)
    unwritten = c_bits == POISON
    if unwritten.any():
        i, j = np.argwhere(unwritten)[0]
        rows, cols = np.flatnonzero(unwritten.any(axis=1)), np.flatnonzero(unwritten.any(axis=0))
        bm, bn = tile
        edge = m > bm and m % bm and rows.min() >= m - m % bm  # a partial tile after whole ones
        edge |= n > bn and n % bn and cols.min() >= n - n % bn
        hint = ("only the last, partial tiles: blocks at the edge skip their outputs, or the grid is rounded down "
                "instead of up" if edge else "threads that never reach their store, two threads storing to the same "
                "output, or a grid too small for C")
        return f"C[{i}][{j}] was never written ({int(unwritten.sum())} of {m * n} outputs): {hint}"
    bad_nan = ~np.isfinite(c)
    if bad_nan.any():
        i, j = np.argwhere(bad_nan)[0]
        return (f"C[{i}][{j}] is NaN: the kernel read the NaN padding around A or B, so a load index runs past the "
                "edge of a matrix (a missing bound check on the loads, or zero-filling left out)"
                + (f"; or {cause}" if cause else ""))
    scale = max(float(np.abs(ref).max()), floor) or 1.0
    wrong = np.abs(c - ref) > tolerance * scale
    if not wrong.any():
        return ""
    i, j = np.argwhere(wrong)[0]
    said = f"C[{i}][{j}] is {c[i, j]:.6g}, not {ref[i, j]:.6g} ({int(wrong.sum())} of {m * n} outputs wrong)"
    race = cause or ("threads reading shared memory before others have written it, or overwriting it while others "
                     "still read it (a missing __syncthreads)")
    if (first != second).any():
        return f"{said}, and two runs of the same inputs disagree: a race, {race}"

    def layout(name: str) -> str:
        return "column-major" if name in column_major else "row-major"

    if m == n and np.abs(c - ref.T).max() <= tolerance * scale:
        return (f"{said}: C is the transpose of the product, so the output's row and column indices are swapped "
                f"(C is {layout('C')}: {INDEX['C', 'C' in column_major]})")
    if k_tail:
        return (f"{said}, on a K that BK does not divide, and right where BK divides K: the last, partial step along K "
                "(its loads or its loop); if those are right, a race that the partial step's different timing exposes: "
                f"{race}")
    if passed:
        return (f"{said}, though the {passed} smaller shapes with tails of every tile came out right: what only a "
                f"large shape shows is most likely a race, which one or two steps along K rarely lose: {race}")
    if cause:
        return f"{said}: {cause}"
    return (f"{said}: wrong products, so check the indices of A ({layout('A')} M x K: "
            f"{INDEX['A', 'A' in column_major]}) and B ({layout('B')} K x N: {INDEX['B', 'B' in column_major]}) "
            "and which tile each thread reads"
            + (f", and the store ({layout('C')} C: {INDEX['C', True]})" if "C" in column_major else ""))


def _book(like: str, size: int, params: dict[str, int]) -> Measurement:
    """The book's kernel `like` at M = N = K = `size` beside cuBLAS, or a variant's solution (checked first)."""
    if like not in VARIANTS:
        return timing.bench(like, size, params, method=METHOD)
    book = submission(spec_of(like).path.read_text(), like, name=like)
    why, err = _run_and_judge(book, params, (size,) * 3, column_major=column_major_of(like))
    if why:
        raise RuntimeError(f"the book's solution of {like} failed its own check ({why}): a bug in gemm_lab")
    return timing.raced(catalog.instance(book, params, (size,) * 3), err, method=METHOD)


def report(attempt: Attempt) -> Markdown:
    """The attempt as the page shows it."""
    params = ", ".join(f"{k}={v}" for k, v in attempt.params.items())
    text = [f"**Your kernel in place of `{attempt.like}`** ({params})"]
    if not attempt.compiled:
        return Markdown("\n\n".join(text + ["It does not compile:", f"```text\n{attempt.compile_log}\n```"]))
    text.append(f"Compiled: {attempt.registers} registers per thread, {attempt.spills} bytes of local memory (spills), "
                f"{attempt.smem_bytes} bytes of static shared memory.")
    if attempt.note:
        return Markdown("\n\n".join(text + [attempt.note]))
    if attempt.wrong:
        return Markdown("\n\n".join(text + [f"Wrong: {attempt.wrong}."]))
    last = "x".join(map(str, attempt.checked[-1][0])) if attempt.checked else ""
    text.append(f"Right on {len(attempt.checked)} shapes (with tails of every tile, up to {last}), and with alpha and "
                "beta.")
    if attempt.timed:
        yours, book = attempt.timed
        text.append(f"At {yours.m}: yours {yours.gflops / 1e3:.1f} TFLOP/s ({yours.pct_cublas:.0f} % of cuBLAS), the "
                    f"book's {book.gflops / 1e3:.1f} TFLOP/s ({book.pct_cublas:.0f} %), timed in the same run.")
    return Markdown("\n\n".join(text))


@dataclass(frozen=True)
class Hole:
    """A line of a solution's file (its text, stripped, exactly) that a write-the-kernel exercise removes, and the hint
    left in its place (lines of a hint: lines of its TODO). A hole with no hint continues the hole before it, on the
    next line of the file: one TODO asks for several lines (their order too)."""

    line: str
    hint: str


@dataclass(frozen=True)
class Mistake:
    """A broken solution: the `line` of the solution's file (stripped, as the file has it) as a reader might write it
    (`written`; "" leaves it out). `submit`'s diagnosis must contain one of the words `named`; `hangs`: the kernel may
    never finish, so the GPU tests submit it in a process of its own (a hung GPU serves nothing else)."""

    line: str
    written: str
    named: tuple[str, ...]
    hangs: bool = False


@dataclass(frozen=True)
class KernelExercise:
    """Write the kernel: chapter `chapter`'s variant `like` (a key of VARIANTS, whose solution is a file of
    kernels/exercises/) with its key lines removed (`holes`); `mistakes` are what the GPU tests check `submit` names;
    `params` a small instance, quick to check."""

    name: str
    chapter: str
    like: str
    holes: tuple[Hole, ...]
    mistakes: tuple[Mistake, ...]
    params: dict[str, int] = field(default_factory=dict)


RING_LOOP = (  # the body of chapter 6's full ring's main loop: one hole, its first line the TODO
    "wait_copies<STAGES - 1>();  // groups 0 .. t + STAGES - 1 committed: step t's has landed when STAGES - 1 remain",
    "__syncthreads();  // every thread's copies of step t have landed",
    "multiply(t % STAGES);",
    "__syncthreads();  // every thread is done reading buffer t % STAGES: it may be refilled",
    "if (t + STAGES < steps) issue(t + STAGES);  // the step buffer t % STAGES holds next",
    "commit_copies();  // this step's group, empty past the end",
)
RING_START = "int stage = 0, phase = 0;  // where the next step's copies go, and the parity of this trip round the ring"
RING_WAIT = "mbar_wait(empty0 + 8 * stage, phase ^ 1);  // the trip before was released (a fresh barrier: at once)"
RING_NEXT = "if (++stage == STAGES) stage = 0, phase ^= 1;  // past the last stage: the next trip, the other parity"
RING_ARRIVALS = ("mbar_init(empty0 + 8 * s, CONSUMERS * 4 * CLUSTER);  // every consumer warp of the cluster, when "
                 "done with it")

ALONG_K_LOAD = ("for (int i = 0; i < TM; ++i) a4[i] = *reinterpret_cast<const float4*>(&As[buf][row + i * LANES_M]"
                "[kk]);")

WARP_DOT_LOOP = ("for (int k = lane; k < K; k += 32) acc += A[row * K + k] * B[col * K + k];  // lanes on "
                 "consecutive k: coalesced")
WARP_DOT_SUM = "for (int offset = 16; offset > 0; offset /= 2) acc += __shfl_down_sync(0xffffffff, acc, offset);"
WARP_DOT_STORE = ("if (lane == 0) *c = beta == 0.0f ? alpha * acc : alpha * acc + beta * *c;  // only lane 0 "
                  "holds the whole sum")

SPREAD_COL = "const int tc = threadIdx.x % (BN / TN);  // its first column; its TN columns lie BN / TN apart"
SPREAD_B = "for (int j = 0; j < TN; ++j) b[j] = Bs[kk][tc + j * (BN / TN)];  // a warp's columns: neighbouring words"
SPREAD_STORE = "store_c(C, row0 + tr + i * (BM / TM), col0 + tc + j * (BN / TN), M, N, alpha, beta, acc[i][j]);"

BLOCK_INDEX = "const int r = i / (BK / 4) * 4, c = i % (BK / 4) * 4;  // block (r, c); i + 1: the next four k-values"
BLOCK_LOADS = tuple(f"const float4 v{q} = load4(A, row0 + r + {q}, k0 + c, M, K, vec_a);"
                    + ("  // vq: row q of the block, four k-values" if q == 0 else "") for q in range(4))
BLOCK_STORES = tuple(f"*reinterpret_cast<float4*>(&As[c + {q}][r]) = make_float4(v0.{x}, v1.{x}, v2.{x}, v3.{x});"
                     + ("  // the block's k = c: four m" if q == 0 else "") for q, x in enumerate("xyzw"))

KERNEL_EXERCISES = {e.name: e for e in (
    KernelExercise("warp_per_output", "ch01_naive_coalesced", "warp_dot", (
        Hole("const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;",
             "this thread's warp in the block and its lane in the warp; then the output C(row, col) of its warp (the "
             "block's\nwarps take WARPS consecutive outputs of one row)"),
        Hole("const int row = blockIdx.y, col = blockIdx.x * WARPS + warp;  // the output of this thread's warp", ""),
        Hole(WARP_DOT_LOOP, "acc = this lane's share of the dot product of A's row and B's column (B(k, col) at "
                            "B[col * K + k]):\nwhich k must each lane take, so that every k is taken once and each "
                            "load of the warp is coalesced?"),
        Hole(WARP_DOT_SUM, "add the 32 lanes' acc so that lane 0 ends with the whole sum (__shfl_down_sync)"),
        Hole(WARP_DOT_STORE, "store alpha * acc + beta * C(row, col) (C not read when beta == 0): from which lane?"),
    ), (Mistake(WARP_DOT_LOOP, "for (int k = lane; k < K; ++k) acc += A[row * K + k] * B[col * K + k];",
                ("exactly one lane",)),
        Mistake(WARP_DOT_SUM, "", ("all 32 lanes",)),
        Mistake(WARP_DOT_STORE, WARP_DOT_STORE.replace("lane == 0", "threadIdx.x == 0"), ("never written",))),
        {"WARPS": 8}),  # not planted: all lanes storing (which lane's store lands is undefined; lane 0's passes)
    KernelExercise("two_outputs_per_thread", "ch02_smem_tiling", "smem_tiled_wide", (
        Hole("__shared__ float Bs[BK][2 * BN];  // the B tile is as wide as the C tile",
             "the block's tile of B in shared memory"),
        Hole("const int col0 = blockIdx.x * 2 * BN;  // blockIdx.x counts tiles 2 * BN wide",
             "the first column of the block's tile of C (blockIdx.x counts the tiles along N)"),
        Hole("float acc0 = 0.0f, acc1 = 0.0f;  // outputs (tr, tc) and (tr, tc + BN): neighbouring lanes, "
             "neighbouring floats", "this thread's running sums"),
        Hole("load_tile<BK, 2 * BN, BM * BN>(Bs, B, k0, col0, K, N);  // the copy strides by the block's threads",
             "copy this step's tile of B, coalesced (load_tile in tiles.cuh)"),
        Hole("const float a = As[tr][kk];  // one shared load of A, two multiply-adds",
             "this thread's multiply-adds at this kk: which two columns of the tile are its own?"),
        Hole("acc0 += a * Bs[kk][tc];", ""),
        Hole("acc1 += a * Bs[kk][tc + BN];", ""),
        Hole("store_c(C, row0 + tr, col0 + tc, M, N, alpha, beta, acc0);",
             "store its two outputs (store_c in tiles.cuh checks the edges of C)"),
        Hole("store_c(C, row0 + tr, col0 + tc + BN, M, N, alpha, beta, acc1);", ""),
    ), (Mistake("store_c(C, row0 + tr, col0 + tc + BN, M, N, alpha, beta, acc1);",  # columns tc and tc + 1
                "store_c(C, row0 + tr, col0 + tc + 1, M, N, alpha, beta, acc1);", ("never written",)),
        Mistake("const int col0 = blockIdx.x * 2 * BN;  // blockIdx.x counts tiles 2 * BN wide",  # tiles overlap
                "const int col0 = blockIdx.x * BN;", ("never written",)),
        Mistake("acc1 += a * Bs[kk][tc + BN];", "acc1 += a * Bs[kk][tc];", ("indices",))),
        {"BM": 16, "BN": 16, "BK": 16}),
    KernelExercise("conflict_free_fragments", "ch03_register_blocking", "thread_tile_2d_conflict_free", (
        Hole("const int tr = threadIdx.x / (BN / TN);  // this thread's first row; its TM rows lie BM / TM apart",
             "tr, this thread's first row of the block's C tile (which TM rows does it own?)"),
        Hole(SPREAD_COL, "tc, its first column (which TN columns?)"),
        Hole("for (int i = 0; i < TM; ++i) a[i] = As[tr + i * (BM / TM)][kk];  // a warp's rows: BK words apart",
             "a[i]: A at this kk for the thread's i-th row"),
        Hole(SPREAD_B, "b[j]: B at this kk for its j-th column"),
        Hole(SPREAD_STORE, "store acc[i][j] at its i-th row and j-th column (store_c in tiles.cuh checks the edges "
                           "of C)"),
    ), (Mistake(SPREAD_COL, "const int tc = threadIdx.x % TN;", ("never written",)),  # threads share columns
        # kernel 05's store and read of B, kept: two threads store to one output, or a thread reads other columns
        Mistake(SPREAD_STORE, "store_c(C, row0 + tr + i, col0 + tc + j, M, N, alpha, beta, acc[i][j]);", ("indices",)),
        Mistake(SPREAD_B, "for (int j = 0; j < TN; ++j) b[j] = Bs[kk][tc + j];", ("indices",))),
        {"BM": 128, "BN": 128, "BK": 8, "TM": 8, "TN": 8}),  # the chapter's tile, whose wavefronts the page counts
    KernelExercise("transpose_in_registers", "ch04_vectorized", "vectorized_4x4_transpose", (
        Hole(BLOCK_INDEX, "which 4 x 4 block of the A tile this i takes: its first row r and first k-value c\n"
                          "(which order keeps a warp's loads of A on whole sectors?)"),
        Hole(BLOCK_LOADS[0], "load the block's four rows of A into v0 .. v3, one float4 each\n"
                             "(load4 in tiles.cuh: zeros outside A, scalar loads where K % 4 != 0)"),
        *(Hole(line, "") for line in BLOCK_LOADS[1:]),
        Hole(BLOCK_STORES[0], "store the block transposed into As[k][m]: four aligned float4 stores\n"
                              "(make_float4(x, y, z, w) builds one from four floats)"),
        *(Hole(line, "") for line in BLOCK_STORES[1:]),
    ), (Mistake("\n      ".join(BLOCK_STORES),  # stored as loaded: each row of the block lands in a row of As
                "\n      ".join(f"*reinterpret_cast<float4*>(&As[c + {q}][r]) = v{q};" for q in range(4)),
                ("4 x 4 block",)),
        # not planted: a wrong block index (kernel 06's r = i / (BK / 4), say) misaligns a float4 access, a fault that
        # ends the process's CUDA context, not a diagnosis
        # a slip in four near-identical lines: row c + 2 of As gets the block's column c + 1 again
        Mistake(BLOCK_STORES[2], BLOCK_STORES[2].replace(".z", ".y"), ("4 x 4 block",))),
        {"BM": 64, "BN": 64, "BK": 32, "TM": 8, "TN": 8}),
    KernelExercise("full_ring", "ch06_prefetch", "multistage_full_ring", (
        Hole(RING_LOOP[0], "step t's body, every line, in an order that is right. Step t needs its tiles landed\n"
             "(wait_copies<N>() returns once at most N of this thread's copy groups are in flight), its FFMAs\n"
             "(multiply(t % STAGES)), the copies of the step that buffer t % STAGES holds next, if there is one\n"
             "(issue), one commit_copies() a step as in the prologue, and a __syncthreads() wherever one warp could\n"
             "otherwise spoil another's work. How many of this thread's groups may still be in flight at the top of\n"
             "step t? What does each barrier protect? Which step does buffer t % STAGES hold next?"),
        *(Hole(line, "") for line in RING_LOOP[1:]),
    ), (  # a wait too shallow or the second barrier left out are races the check missed on an H200 (page says so)
        Mistake(RING_LOOP[4], "if (t + 1 < steps) issue(t + 1);", ("landed", "NaN", "never written")),
        Mistake("\n    ".join(RING_LOOP[2:5]), "\n    ".join((RING_LOOP[4], RING_LOOP[2], "__syncthreads();")),
                ("refilled", "landed", "race"))),
        {"BM": 128, "BN": 128, "BK": 8, "TM": 8, "TN": 8, "STAGES": 3}),
    KernelExercise("rows_along_k", "ch07_warp_tiling", "warp_tiling_along_k", (
        Hole("*reinterpret_cast<float4*>(&As[i / (BK / 4)][i % (BK / 4) * 4]) = staged.a[l];  // row i / (BK / 4), as "
             "loaded", "store staged.a[l], the float4 this thread loaded for index i (Staging::load in staging.cuh), "
                       "into the row-major A tile"),
        Hole("const int row = warp / (BN / WN) * WM + lane_m, col = warp % (BN / WN) * WN + lane_n * 4;  // rows "
             "LANES_M apart", "the first row of this lane's TM rows in the block tile (where must the others lie?), "
                              "and its first column (kernel 10's)"),
        Hole(ALONG_K_LOAD, "a4[i]: the float4 of k-values kk .. kk + 3 of this lane's i-th row"),
        Hole("store4(C, row0 + row + i * LANES_M, col0 + col + j / 4 * STRIDE_N, M, N, alpha, beta,",
             "the first line of the store of acc[i][j .. j + 3]: store4(C, <row of C>, <column of C>, M, N, alpha, "
             "beta,"),
    ), (Mistake("const int row = warp / (BN / WN) * WM + lane_m, col = warp % (BN / WN) * WN + lane_n * 4;  // rows "
                "LANES_M apart",
                "const int row = warp / (BN / WN) * WM + lane_m * TM, col = warp % (BN / WN) * WN + lane_n * 4;",
                ("never written", "outside C", "wrong")),
        Mistake(ALONG_K_LOAD, ALONG_K_LOAD.replace("row + i * LANES_M", "row + i"),
                ("indices", "wrong"))),
        {"BM": 128, "BN": 128, "BK": 8, "WM": 64, "WN": 32, "TM": 8, "TN": 8}),
    KernelExercise("ring_producer", "ch09_hopper_pipeline", "ring_producer", (
        Hole(RING_ARRIVALS, "the empty barrier of stage s: how many arrivals complete one of its phases?"),
        Hole(RING_START, "the producer's stage and phase (the parity of its trip round the ring) before its first "
                         "step"),
        Hole(RING_WAIT, "wait until the consumers have released what this stage held on the trip before (which "
                        "parity?)"),
        Hole(RING_NEXT, "move stage and phase on to the next step's"),
    ), (Mistake(RING_WAIT, "mbar_wait(empty0 + 8 * stage, phase);", ("did not finish",), hangs=True),
        Mistake(RING_START, "int stage = 0, phase = 1;", ("did not finish",), hangs=True),
        Mistake(RING_NEXT, "if (++stage == STAGES) stage = 0;", ("did not finish", "refilled"), hangs=True),
        Mistake(RING_ARRIVALS, "mbar_init(empty0 + 8 * s, CONSUMERS * 4);", ("did not finish", "refilled"),
                hangs=True)),
        {"BM": 256, "CONSUMERS": 2, "STAGES": 4, "CLUSTER": 2, "PERSIST": 1, "GROUP": 8}),
    KernelExercise("signed_residues", "ch10_ozaki", "ozaki_by_thread", (
        Hole("const double r = x - rint(x / p) * p;  // the residue nearest zero, in [-p/2, p/2]",
             "r: x modulo p, as an int8 can hold it"),
        Hole("for (int l = 0; l < MODULI; ++l) sums[l] += residue(x, MODULUS[l]) * residue(y, MODULUS[l]);",
             "for each modulus, add the product of the residues of x and y to its sum"),
        Hole("const double c = s - rint(s / P) * P;  // |c| <= P / 4",
             "c: the integer whose residues the sums are (which of the integers s stands for modulo P?)"),
    ), (Mistake("const double r = x - rint(x / p) * p;  // the residue nearest zero, in [-p/2, p/2]",
                "const double r = x - floor(x / p) * p;", ("residues",)),
        Mistake("const double c = s - rint(s / P) * P;  // |c| <= P / 4", "const double c = s - floor(s / P) * P;",
                ("nearest zero",))),
        {"BLOCK": 16}),
)}


def _exercise(name: str) -> KernelExercise:
    """The write-the-kernel exercise called `name` (a typo names the exercises there are, not a bare KeyError)."""
    try:
        return KERNEL_EXERCISES[name]
    except (KeyError, TypeError):  # TypeError: an unhashable name
        raise ValueError(f"no write-the-kernel exercise {name!r}; the exercises are "
                         f"{', '.join(KERNEL_EXERCISES)}") from None


def _hole_indices(name: str) -> tuple[list[str], list[int]]:
    """The lines of exercise `name`'s solution file and the index (from 0) of each hole's line in it, in the order
    of `holes`; a LookupError when a hole's line is not in the file exactly once (the file changed)."""
    exercise = _exercise(name)
    lines = spec_of(exercise.like).path.read_text().splitlines()
    found = []
    for hole in exercise.holes:
        at = [i for i, text in enumerate(lines) if text.strip() == hole.line]
        if len(at) != 1:
            raise LookupError(f"exercise {name}: the line {hole.line!r} is in {exercise.like}'s file "
                              f"{len(at)} times, not once (the solution changed: update the exercise)")
        if not hole.hint and (not found or at[0] != found[-1] + 1):
            raise LookupError(f"exercise {name}: the line {hole.line!r} continues a hole, so it must follow the line "
                              "of the hole before it")
        found.append(at[0])
    return lines, found


class Source(str):
    """A kernel's CUDA source, a str that a notebook shows as a highlighted code block (the book adds a copy button)."""

    def _repr_markdown_(self) -> str:
        return f"```cuda\n{self}```\n"

    def save(self, path: str | os.PathLike) -> Path:
        """Write the source to `path` (a .cu file to edit, then `submit` by its path), unless that file exists: a
        second call keeps the reader's work. Returns the path."""
        path = Path(path).expanduser()
        if path.is_dir():
            raise IsADirectoryError(f"{str(path)!r} is a folder: save the source to a file's path in it, such as "
                                    f"{str(path / 'exercise.cu')!r}")
        if not path.parent.is_dir():
            raise FileNotFoundError(f"no folder {str(path.parent)!r} (from {Path.cwd()}) to save {path.name} in: "
                                    "create it first, or give a path in a folder that exists")
        if not path.exists():
            path.write_text(self)
        return path


def skeleton(name: str) -> Source:
    """The source of write-the-kernel exercise `name`: its solution's file with each hole's line replaced by a TODO
    that says what the line must do, or, for lines that continue a hole (`Hole`), by that hole's TODO alone (the reader
    fills them in and passes the text, or a file's path, to `submit`)."""
    lines, found = _hole_indices(name)
    gone = set()
    for hole, i in zip(_exercise(name).holes, found):
        if not hole.hint:
            gone.add(i)
            continue
        indent = lines[i][:len(lines[i]) - len(lines[i].lstrip())]
        first, *more = hole.hint.split("\n")
        lines[i] = "\n".join([f"{indent}// TODO: {first}", *(f"{indent}//       {m}" for m in more)])
    return Source("\n".join(line for i, line in enumerate(lines) if i not in gone) + "\n")


def hole_lines(name: str) -> str:
    """The numbers of exercise `name`'s hole lines in its solution file ("24-26, 30"), found in the file when the
    page builds, so they follow it when it changes."""
    return listings.number_ranges({i + 1 for i in _hole_indices(name)[1]})


def solution(name: str) -> listings.Listing:
    """The solution of write-the-kernel exercise `name`: its whole file, the lines the reader writes highlighted (a
    page shows it folded under the exercise, never above it)."""
    lines, found = _hole_indices(name)
    path, marked = spec_of(_exercise(name).like).path, {i + 1 for i in found}
    shown = tuple(listings.Line(None, n, "!" if n in marked else " ", text) for n, text in enumerate(lines, start=1))
    return listings.Listing(path.relative_to(catalog.ROOT).as_posix(), path, None, shown, whole=True)
