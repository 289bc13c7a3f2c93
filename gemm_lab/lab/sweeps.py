"""Measure every legal parameter combination of a kernel, keeping each result as soon as it exists.

A sweep is resumable: combinations already recorded from the current kernel source are skipped,
and each new measurement is saved (atomically) before the next starts, so an interrupted sweep
loses at most the case in flight. In replay, a sweep returns what was recorded.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from tqdm.auto import tqdm

from .. import catalog, device, liverun, records, timing, turns
from ..catalog import KernelSpec
from ..records import Measurement
from . import autotune


def sweep(kernel: str | KernelSpec, size: int | Sequence[int],
          choices: Mapping[str, tuple[int, ...]] | None = None, *, resume: bool = True,
          save: bool = True, progress: bool = True, prune: bool = False) -> list[Measurement]:
    """GFLOP/s of every legal combination of `choices` (default: the catalog's) at one shape.

    With `prune`, instances that would spill or hold too few warps (`autotune.prune`) are not timed.
    """
    spec = catalog.get(kernel)
    m, n, k = timing.shape_of(size)
    grid = autotune.prune(spec.name, choices)[0] if prune else catalog.legal_grid(spec, choices)
    seconds = sum(timing.race_seconds(spec.name, p, (m, n, k), turns.SHORT) for p in grid)
    with liverun.work("sweeps", f"sweep {spec.name} {m}x{n}x{k} {choices}", seconds) as task:
        if task.live and device.runs_here(spec):
            task.result = task.result or _swept(spec, (m, n, k), grid, resume, save, progress)
            return task.result
    recorded = {_key(x.params): x for x in records.measurements(spec.name) if (x.m, x.n, x.k) == (m, n, k)}
    return [recorded[_key(p)] for p in grid if _key(p) in recorded]


def _swept(spec: KernelSpec, shape: tuple[int, int, int], grid: list[dict[str, int]], resume: bool, save: bool,
           progress: bool) -> list[Measurement]:
    """`sweep` live: what was not recorded today compiled in parallel first, then each instance in a short race."""
    m, n, k = shape
    done = {}
    if resume:
        sha = spec.build_sha256()  # the .cu file and its headers
        done = {_key(x.params): x for x in records.measurements(spec.name, device.gpu().name)
                if (x.m, x.n, x.k) == (m, n, k) and x.build_sha256 == sha}
    autotune.precompile([(spec.name, p) for p in grid if _key(p) not in done])
    out = []
    for p in tqdm(grid, desc=f"sweep {spec.name} {m}x{n}x{k}", disable=not progress):
        if _key(p) in done:
            out.append(done[_key(p)])
            continue
        result = timing.bench(spec, (m, n, k), p, method=turns.SHORT)
        if save:
            records.save([result])
        out.append(result)
    return out


def _key(params: Mapping[str, int]) -> tuple:
    return tuple(sorted(params.items()))


def best(kernel: str | KernelSpec, size: int | Sequence[int], gpu: str | None = None,
         sustained: bool = False) -> Measurement:
    """The fastest recorded instance of a kernel at one shape (what `gemm-lab sweep` or `record` found); with
    `sustained`, the fastest sustained race where one was recorded (what a page may quote), else the fastest."""
    spec = catalog.get(kernel)
    m, n, k = timing.shape_of(size)
    found = [x for x in records.measurements(spec.name, gpu) if (x.m, x.n, x.k) == (m, n, k)]
    if not found:
        raise LookupError(f"no recorded {spec.name} result at {m}x{n}x{k}: run `gemm-lab sweep {spec.name} "
                          f"--size {m}` on a GPU")
    return max(found, key=lambda x: (sustained and x.method == "sustained", x.gflops))
