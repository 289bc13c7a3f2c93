"""The reader's own kernels: `submit` compiles, checks, diagnoses and times a kernel written to the contract of one of
the book's (`like`), and keeps a personal scoreboard.

A submission is the text of a CUDA kernel template with the book's contract, `(M, N, K, alpha, A, B, beta, C)` with
row-major float32 matrices, and the template parameters of the catalogued kernel it stands in for, in the same order:
the grid, block, shared memory and rules of that kernel apply to it, and it may `#include` the headers of kernels/.

- Without a GPU it is compiled offline (NVRTC, as CI does): errors quote the reader's lines; otherwise registers,
  spills and shared memory are reported. Checking and timing need a GPU, and the report says so.
- On a GPU it runs on guarded buffers (C poisoned with one NaN, the words around C with another, A and B padded with
  a third) on shapes with tails of every tile, against float64; the first wrong element is named with what that
  pattern usually means. Then it is timed beside the book's kernel and cuBLAS, in the same run, and added to the
  scoreboard (`scoreboard`, kept under the compile cache's folder).
A kernel that never returns cannot be stopped from the host: interrupt the Python kernel, then restart it.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from . import catalog, compile, device, records, run, sanitize, timing
from .catalog import KernelSpec, Params, Shape
from .records import Measurement
from .tables import Markdown

FILE = "exercise.cu"  # what compile errors call the reader's source
POISON, CANARY, PADDING = 0x7FC0BEEF, 0x7FC0DEAD, 0x7FC0FACE  # NaN payloads: unwritten C, around C, around A and B
GUARD = 1024  # words of canary or padding on each side of a matrix (4 KiB: C stays 16-byte aligned)
RUNS = 3  # launches of each case on the same inputs: a race rarely gives the same wrong words three times
CONTRACT = "(int M, int N, int K, float alpha, const float* A, const float* B, float beta, float* C)"


@dataclass(frozen=True)
class Submission(KernelSpec):
    """A reader's kernel standing in for a catalogued one: everything but its code is that kernel's."""

    text: str = ""

    @property
    def path(self) -> Path:
        return catalog.ROOT / "kernels" / FILE  # includes resolve against kernels/; errors name FILE

    def source_text(self) -> str:
        return catalog.expand_includes(self.path, self.text)

    def source_sha256(self) -> str:
        return hashlib.sha256(catalog.code_only(self.text).encode()).hexdigest()


def submission(source: str, like: str) -> Submission:
    """The reader's `source` as a stand-in for catalogued kernel `like`, after checking that it is a kernel template
    of that kernel's name with its template parameters and the book's contract (a ValueError says what differs)."""
    spec = catalog.get(like)
    if not isinstance(source, str) or "__global__" not in source:
        raise TypeError("submit takes the CUDA source of a kernel as a string (it has no __global__ function)")
    names = ", ".join(f"int {p}" for p in spec.param_names)
    head = re.search(rf"template\s*<([^>]*)>\s*__global__[^;{{]*?\b{spec.function}\s*\(([^)]*)\)", source)
    if head is None:
        raise ValueError(f"no kernel `template <{names}> __global__ void {spec.function}{CONTRACT}` in the source: "
                         f"your kernel stands in for {like} (chapter {spec.chapter}), so it needs its name and "
                         "template parameters")
    params = [p.split()[-1] for p in head.group(1).split(",") if p.strip()]
    if params != list(spec.param_names):
        raise ValueError(f"{spec.function}'s template parameters are <{', '.join(params)}>; {like}'s are <{names}>, "
                         "in this order (the grid, block and shared memory are derived from them)")
    if len([a for a in head.group(2).split(",") if a.strip()]) != 8:
        raise ValueError(f"{spec.function} must take the book's contract {CONTRACT}")
    base = {f.name: getattr(spec, f.name) for f in dataclasses.fields(KernelSpec)}
    return Submission(**{**base, "name": f"your {like}"}, text=source)


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


def submit(source: str, like: str, params: Params | None = None, *, size: int = 2048) -> Attempt:
    """Compile, check and time the reader's kernel in place of catalogued kernel `like` (see the module). Bad input
    (not a kernel, a wrong signature, tile sizes the rules forbid) is refused before anything compiles."""
    sub = submission(source, like)
    inst = catalog.instance(sub, params)
    attempt, here = Attempt(like, inst.params), device.runs_here(sub)
    try:  # NVRTC names FILE and the reader's own line numbers, and quotes the lines
        if here:  # compiled once for this GPU and kept on disk: a second submission of the same text only loads it
            fn = compile.load(inst)
            attempt.registers, attempt.spills, attempt.smem_bytes = fn.num_regs, fn.local_size_bytes, fn.shared_size_bytes
        else:
            _, ptxas, _ = compile.offline(sub, (sub.instance(inst.params),), sub.arch or compile.OFFLINE_ARCH)
            if ptxas:
                attempt.registers, attempt.spills, attempt.smem_bytes = ptxas.registers, ptxas.spills, ptxas.smem_bytes
    except compile.CompileError as err:
        attempt.compile_log = str(err)
        return attempt
    attempt.compiled = True
    if not here:
        attempt.note = ("Checking and timing need a GPU that runs this kernel (here: "
                        f"{'replay, no GPU' if not device.live() else device.gpu().name}); in Colab, pick a GPU runtime.")
        return attempt
    attempt.wrong, attempt.checked = check(sub, inst.params)
    if not attempt.wrong:
        attempt.timed = [timing.bench(sub, size, inst.params, method=timing.SHORT),
                        timing.bench(like, size, inst.params, method=timing.SHORT)]
        _remember(attempt.timed[0], like)
    return attempt


def check(sub: Submission, params: dict[str, int]) -> tuple[str, list[tuple[Shape, float]]]:
    """Run on every tail shape of the tile (`sanitize.tail_shapes`), then with alpha and beta, twice where it is wrong
    (a race shows as results that differ); the first failure explained, or "" and what passed."""
    passed = []
    shapes = [(m, n, k) for m, n, k in sanitize.tail_shapes(sub, params)]
    bk = params.get("BK", 1)
    with run.faults(sub, params):
        for shape in shapes:
            why, err = _run_and_judge(sub, params, shape)
            if why and shape[2] % bk:  # right once K is a whole number of tiles deep? then the partial step is wrong
                whole = (shape[0], shape[1], -(-shape[2] // bk) * bk)
                if not _run_and_judge(sub, params, whole)[0]:
                    why = _run_and_judge(sub, params, shape, k_tail=True)[0]
            if why:
                return why, passed
            passed.append((shape, err))
        why, err = _run_and_judge(sub, params, shapes[-1], alpha=0.5, beta=-2.0)
        if why:
            return f"with alpha = 0.5 and beta = -2: {why}", passed
    return "", passed


def _run_and_judge(sub: Submission, params: dict[str, int], shape: Shape, alpha: float = 1.0,
                   beta: float = 0.0, k_tail: bool = False) -> tuple[str, float]:
    import cupy

    m, n, k = shape
    rng = np.random.default_rng(0)
    a, b = rng.uniform(-1, 1, (m, k)).astype(np.float32), rng.uniform(-1, 1, (k, n)).astype(np.float32)
    c0 = rng.uniform(-1, 1, (m, n)).astype(np.float32)
    ref = alpha * (a.astype(np.float64) @ b.astype(np.float64)) + beta * c0.astype(np.float64)
    inst = catalog.instance(sub, params, shape)
    outs = []
    for _ in range(RUNS):  # the same launch again: results that differ point at a race
        ga, gb = _guarded(a, PADDING), _guarded(b, PADDING)
        c_buf, gc = _guarded(c0 if beta else np.zeros((m, n), np.float32), CANARY, fill=None if beta else POISON)
        run.launcher(inst, ga[1], gb[1], alpha=alpha, beta=beta, out=gc)()
        cupy.cuda.Device().synchronize()
        outs.append(cupy.asnumpy(c_buf).view(np.uint32))
    tolerance = run.tolerance(k, sub.precision)
    floor = float((np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))).max()) / math.sqrt(k)
    differs = next((x for x in outs[1:] if (x != outs[0]).any()), outs[0])
    return diagnose(outs[0], differs, ref, (m, n), tolerance, floor, sub.tile(params), k_tail), \
        run.max_rel_err(outs[0][GUARD:GUARD + m * n].view(np.float32).reshape(m, n), ref, floor)


def _guarded(x: np.ndarray, guard_bits: int, fill: int | None = None) -> tuple[Any, Any]:
    """A device buffer of `x` with GUARD words of `guard_bits` before and after it (and its own words `fill` bits, if
    given): the whole buffer and the 16-byte aligned, C-contiguous view of the matrix inside it."""
    import cupy

    words = np.full(x.size + 2 * GUARD, guard_bits, dtype=np.uint32)
    words[GUARD:GUARD + x.size] = np.full(x.size, fill, np.uint32) if fill is not None else x.ravel().view(np.uint32)
    buf = cupy.asarray(words).view(cupy.float32)
    return buf, buf[GUARD:GUARD + x.size].reshape(x.shape)


def diagnose(first: np.ndarray, second: np.ndarray, ref: np.ndarray, shape: tuple[int, int], tolerance: float,
             floor: float, tile: tuple[int, int], k_tail: bool) -> str:
    """The first thing wrong with a guarded C (the words of one launch and of another of the same inputs, uint32, GUARD
    words around M x N) against the float64 reference, and what it usually means; "" when all is right."""
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
        edge = rows.min() >= m - m % bm if m % bm else False
        edge |= cols.min() >= n - n % bn if n % bn else False
        hint = ("only the last, partial tiles: blocks at the edge skip their outputs, or the grid is rounded down "
                "instead of up" if edge else "threads that never reach their store, or a grid too small for C")
        return f"C[{i}][{j}] was never written ({int(unwritten.sum())} of {m * n} outputs): {hint}"
    bad_nan = ~np.isfinite(c)
    if bad_nan.any():
        i, j = np.argwhere(bad_nan)[0]
        return (f"C[{i}][{j}] is NaN: the kernel read the NaN padding around A or B, so a load index runs past the "
                "edge of a matrix (a missing bound check on the loads, or zero-filling left out)")
    scale = max(float(np.abs(ref).max()), floor) or 1.0
    wrong = np.abs(c - ref) > tolerance * scale
    if not wrong.any():
        return ""
    i, j = np.argwhere(wrong)[0]
    said = f"C[{i}][{j}] is {c[i, j]:.6g}, not {ref[i, j]:.6g} ({int(wrong.sum())} of {m * n} outputs wrong)"
    if (first != second).any():
        return (f"{said}, and two runs of the same inputs disagree: a race, threads reading shared memory before "
                "others have written it or overwriting it while others still read (a missing __syncthreads)")
    if m == n and np.abs(c - ref.T).max() <= tolerance * scale:
        return f"{said}: C is the transpose of the product, so the output's row and column indices are swapped"
    if k_tail:
        return (f"{said}, on a K that BK does not divide, and right where BK divides K: the last, partial step along K "
                "(its loads or its loop)")
    return (f"{said}: wrong products, so check the indices of A (row-major M x K: A[row * K + k]) and B (row-major "
            "K x N: B[k * N + col]) and which tile each thread reads")


def report(attempt: Attempt) -> Markdown:
    """The attempt as the page shows it."""
    text = [f"**Your kernel in place of `{attempt.like}`** ({', '.join(f'{k}={v}' for k, v in attempt.params.items())})"]
    if not attempt.compiled:
        return Markdown("\n\n".join(text + ["It does not compile:", f"```text\n{attempt.compile_log}\n```"]))
    text.append(f"Compiled: {attempt.registers} registers per thread, {attempt.spills} bytes of local memory (spills), "
                f"{attempt.smem_bytes} bytes of static shared memory.")
    if attempt.note:
        return Markdown("\n\n".join(text + [attempt.note]))
    if attempt.wrong:
        return Markdown("\n\n".join(text + [f"Wrong: {attempt.wrong}."]))
    text.append(f"Right on {len(attempt.checked)} shapes with tails of every tile, and with alpha and beta.")
    if attempt.timed:
        yours, book = attempt.timed
        text.append(f"At {yours.m}: yours {yours.gflops / 1e3:.1f} TFLOP/s ({yours.pct_cublas:.0f} % of cuBLAS), the "
                    f"book's {book.gflops / 1e3:.1f} TFLOP/s ({book.pct_cublas:.0f} %), timed in the same run.")
    return Markdown("\n\n".join(text))


def scoreboard_path() -> Path:
    """Where the personal scoreboard is kept: beside the compile cache (GEMM_LAB_CACHE, else ~/.cache/gemm_lab)."""
    return Path(os.environ.get(compile.CACHE_ENV) or Path.home() / ".cache" / "gemm_lab") / "scoreboard.json"


def scoreboard() -> list[dict[str, Any]]:
    """Every timed submission so far on this machine, oldest first."""
    path = scoreboard_path()
    return json.loads(path.read_text()) if path.exists() else []


def _remember(x: Measurement, like: str) -> None:
    path = scoreboard_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = scoreboard() + [{"like": like, "params": x.params, "size": x.m, "gflops": x.gflops,
                            "cublas_gflops": x.cublas_gflops, "gpu": x.gpu,
                            "at": records.utc_now()}]
    path.write_text(json.dumps(rows, indent=1))


@dataclass(frozen=True)
class Hole:
    """A line of a kernel file (its text, stripped, exactly) that a write-the-kernel exercise removes, and the hint
    left in its place."""

    line: str
    hint: str


@dataclass(frozen=True)
class KernelExercise:
    """Write the kernel: chapter `chapter`'s kernel `like` with its key lines removed (`holes`). `bugs` are broken
    solutions (the line as the file has it, the line as a reader might write it, words the diagnosis must contain),
    which the tests check `submit` catches."""

    name: str
    chapter: str
    like: str
    holes: tuple[Hole, ...]
    bugs: tuple[tuple[str, str, tuple[str, ...]], ...]
    params: dict[str, int] = field(default_factory=dict)  # a small instance, quick to check


KERNEL_EXERCISES = {e.name: e for e in (
    KernelExercise("coalesced_index", "ch01_naive_coalesced", "coalesced", (
        Hole("const int row = blockIdx.y * BLOCK + threadIdx.x / BLOCK;",
             "this thread's row of C: consecutive threads must share it"),
        Hole("const int col = blockIdx.x * BLOCK + threadIdx.x % BLOCK;  // fast-moving index -> column",
             "this thread's column of C: consecutive threads take consecutive columns"),
    ), (("const int col = blockIdx.x * BLOCK + threadIdx.x % BLOCK;  // fast-moving index -> column",
         "const int col = blockIdx.x * BLOCK + threadIdx.x / BLOCK;", ("never written", "outside C")),),
        {"BLOCK": 16}),
    KernelExercise("tile_loop", "ch02_smem_tiling", "smem_tiled", (
        Hole("load_tile<BM, BK, BM * BN>(As, A, row0, k0, M, K);",
             "copy the BM x BK tile of A whose corner is (row0, k0) into As (load_tile in tiles.cuh)"),
        Hole("load_tile<BK, BN, BM * BN>(Bs, B, k0, col0, K, N);", "and the BK x BN tile of B at (k0, col0) into Bs"),
        Hole("__syncthreads();  // the tiles are complete before anyone reads them",
             "no thread may read the tiles before the whole block has written them"),
        Hole("for (int kk = 0; kk < BK; ++kk) acc += As[tr][kk] * Bs[kk][tc];",
             "this thread's part of its dot product: row tr of As times column tc of Bs"),
        Hole("__syncthreads();  // everyone is done reading before the next copy overwrites them",
             "no thread may overwrite the tiles while others still read them"),
    ), (("__syncthreads();  // the tiles are complete before anyone reads them", "", ("race", "wrong")),
        ("for (int kk = 0; kk < BK; ++kk) acc += As[tr][kk] * Bs[kk][tc];",
         "for (int kk = 0; kk < BK; ++kk) acc += As[kk][tr] * Bs[tc][kk];", ("indices", "transpose"))),
        {"BM": 16, "BN": 16, "BK": 16}),
    KernelExercise("outer_product", "ch03_register_blocking", "thread_tile_2d", (
        Hole("for (int i = 0; i < TM; ++i) a[i] = As[tr + i][kk];", "this thread's TM values of column kk of As"),
        Hole("for (int j = 0; j < TN; ++j) b[j] = Bs[kk][tc + j];", "and its TN values of row kk of Bs"),
        Hole("for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];  // the outer product",
             "the TM x TN outer product of a and b, into acc"),
    ), (("for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];  // the outer product",
         "for (int j = 0; j < TN; ++j) acc[i][j] += a[j] * b[i];", ("indices", "transpose")),),
        {"BM": 64, "BN": 64, "BK": 8, "TM": 8, "TN": 8}),
    KernelExercise("transposed_store", "ch04_vectorized", "vectorized", (
        Hole("As[c + 0][ALayout::col(c + 0, r)] = v.x;  // the transposing store: four scalar writes",
             "the float4 v holds A[row0 + r][k0 + c .. c + 3]: store its four values transposed, As[k][m]"),
        Hole("As[c + 1][ALayout::col(c + 1, r)] = v.y;", "(second value)"),
        Hole("As[c + 2][ALayout::col(c + 2, r)] = v.z;", "(third value)"),
        Hole("As[c + 3][ALayout::col(c + 3, r)] = v.w;", "(fourth value)"),
    ), (("As[c + 1][ALayout::col(c + 1, r)] = v.y;", "As[c + 1][ALayout::col(c + 1, r)] = v.x;",
         ("indices", "wrong")),),
        {"BM": 64, "BN": 64, "BK": 16, "TM": 8, "TN": 8}),
    KernelExercise("double_buffer", "ch06_prefetch", "prefetch", (
        Hole("const int cur = PREFETCH ? t % 2 : 0;", "the buffer this step multiplies from"),
        Hole("staged.store(As[PREFETCH ? 1 - cur : 0], Bs[PREFETCH ? 1 - cur : 0]);",
             "write the staged next tiles into the buffer that nobody reads in this step"),
    ), (("staged.store(As[PREFETCH ? 1 - cur : 0], Bs[PREFETCH ? 1 - cur : 0]);", "staged.store(As[cur], Bs[cur]);",
         ("race", "wrong")),),
        {"BM": 64, "BN": 64, "BK": 8, "TM": 8, "TN": 8, "PREFETCH": 1}),
    KernelExercise("warp_tile_index", "ch07_warp_tiling", "warp_tiling", (
        Hole("const int row = warp / (BN / WN) * WM + lane_m * 4, col = warp % (BN / WN) * WN + lane_n * 4;",
             "the first row and column of this lane's groups of four: its warp's tile, then its place in the lane grid"),
    ), (("const int row = warp / (BN / WN) * WM + lane_m * 4, col = warp % (BN / WN) * WN + lane_n * 4;",
         "const int row = warp / (BN / WN) * WM + lane_m * 4, col = warp % (BN / WN) * WN + lane_m * 4;",
         ("never written", "outside C", "wrong")),),
        {"BM": 64, "BN": 128, "BK": 8, "WM": 32, "WN": 64, "TM": 8, "TN": 8}),
)}


def _hole_indices(name: str) -> tuple[list[str], list[int]]:
    """The lines of exercise `name`'s kernel file and the index (from 0) of each hole's line in it, in the order of
    `holes`; a LookupError when a hole's line is not in the file exactly once (the kernel changed)."""
    exercise = KERNEL_EXERCISES[name]
    lines = catalog.get(exercise.like).path.read_text().splitlines()
    found = []
    for hole in exercise.holes:
        at = [i for i, text in enumerate(lines) if text.strip() == hole.line]
        if len(at) != 1:
            raise LookupError(f"exercise {name}: the line {hole.line!r} is in {exercise.like}'s file "
                              f"{len(at)} times, not once (the kernel changed: update the exercise)")
        found.append(at[0])
    return lines, found


def skeleton(name: str) -> str:
    """The source of write-the-kernel exercise `name`: its chapter's kernel file with each hole's line replaced by a
    TODO that says what the line must do (the reader fills them in and passes the text to `submit`)."""
    lines, found = _hole_indices(name)
    for hole, i in zip(KERNEL_EXERCISES[name].holes, found):
        indent = lines[i][:len(lines[i]) - len(lines[i].lstrip())]
        lines[i] = f"{indent}// TODO: {hole.hint}"
    return "\n".join(lines) + "\n"


def hole_lines(name: str) -> str:
    """The numbers of exercise `name`'s hole lines in its kernel file, as `gl.excerpt(..., highlight=)` takes them
    ("24-26, 30"): a solution shows the chapter's kernel with the lines the reader wrote marked, found in the file
    when the page builds, so they follow the kernel when it changes."""
    numbers = sorted(i + 1 for i in _hole_indices(name)[1])
    runs: list[list[int]] = []
    for n in numbers:
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    return ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else str(r[0]) for r in runs)
