"""Measure every legal parameter combination of a kernel, keeping each result as soon as it exists.

A sweep is resumable: combinations already recorded from the current kernel source are skipped,
and each new measurement is saved (atomically) before the next starts, so an interrupted sweep
loses at most the case in flight. In replay, a sweep returns what was recorded.
"""
from __future__ import annotations

import warnings
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
    legal = catalog.legal_grid(spec, choices)
    if not legal:
        raise ValueError(f"no combination of {spec.name}'s choices {dict(choices or {})} passes its rules: "
                         f"`gl.validate({spec.name!r}, {{...}})` names the rule one of them breaks")
    live = device.live() and device.runs_here(spec)
    grid = autotune.prune(spec.name, choices)[0] if prune and live else legal  # a replay shows what was swept
    seconds = sum(timing.race_seconds(spec.name, p, (m, n, k), turns.SHORT) for p in grid)
    with liverun.work("sweeps", f"sweep {spec.name} {m}x{n}x{k} {choices}", seconds) as task:
        if task.live and live:
            task.result = task.result or _swept(spec, (m, n, k), grid, resume, save, progress)
            return task.result
    return _recorded(spec, (m, n, k), grid, partial_ok=prune)


def _recorded(spec: KernelSpec, shape: tuple[int, int, int], grid: list[dict[str, int]],
              partial_ok: bool) -> list[Measurement]:
    """`sweep` replayed: the grid's recorded instances at the shape, and a word where some or all were never timed
    (`partial_ok`: a pruned sweep, whose pruned instances were never meant to be)."""
    mine = records.measurements(spec.name)
    recorded = {_key(x.params): x for x in mine if (x.m, x.n, x.k) == shape}
    found = [recorded[_key(p)] for p in grid if _key(p) in recorded]
    if not found:
        sizes = sorted({(x.m, x.n, x.k) for x in mine})
        raise LookupError(f"no recorded sweep of {spec.name} at {'x'.join(map(str, shape))} for these choices "
                          f"(recorded sizes: {', '.join('x'.join(map(str, s)) for s in sizes) or 'none'}): "
                          f"`gemm-lab sweep {spec.name} --size {shape[0]}` records one on a GPU")
    if len(found) < len(grid) and not partial_ok:
        warnings.warn(f"{len(grid) - len(found)} of the {len(grid)} instances asked for were never timed at "
                      f"{'x'.join(map(str, shape))}: showing the {len(found)} recorded", stacklevel=3)
    return found


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
