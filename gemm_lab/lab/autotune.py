"""Autotuning support: prune a parameter space before timing it, and compile what is left in parallel.

The catalog's rules remove what cannot run at all; the offline ptxas report (no GPU needed) removes
instances that would spill registers to local memory, whose wgmmas ptxas serializes, or that leave too
few warps on an SM to hide latency.
On a GPU, `precompile` fills the on-disk cubin cache (`compiler.cubin_file`) from a pool of processes, so
the timing loop of a sweep never waits for NVRTC: the 400-odd instances the book records compile in well
under a minute on a 16-core host instead of several minutes one by one.
"""
from __future__ import annotations

import functools
import multiprocessing
import os
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from .. import catalog, compiler
from ..catalog import Params
from ..models import model


@dataclass(frozen=True)
class Pruned:
    """An instance left out of a sweep, and why."""

    params: dict[str, int]
    why: str


def prune(kernel: str, choices: Mapping[str, tuple[int, ...]] | None = None, min_warps: int = 4,
          workers: int | None = None) -> tuple[list[dict[str, int]], list[Pruned]]:
    """The legal grid split into instances worth timing and the ones pruned (spills, serialized wgmmas, too few
    warps)."""
    spec = catalog.get(kernel)
    grid = catalog.legal_grid(spec, choices)
    reports = _reports(spec.name, spec.build_sha256(), tuple(tuple(p.items()) for p in grid), workers)
    keep, pruned = [], []
    for p, r in zip(grid, reports):
        warps = model.occupancy(spec.threads(p), r.registers, r.smem_bytes + spec.launch_smem(p))["warps"]
        if r.spills:
            pruned.append(Pruned(p, f"spills {r.spills} bytes at {r.registers} registers"))
        elif r.performance_warnings:
            pruned.append(Pruned(p, f"ptxas: {r.performance_warnings[0]}"))
        elif warps < min_warps:
            pruned.append(Pruned(p, f"{warps} resident warps per SM (< {min_warps}) at {r.registers} registers"))
        else:
            keep.append(p)
    return keep, pruned


def precompile(cases: Iterable[tuple[str, Params | None]], workers: int | None = None) -> int:
    """Compile each distinct (kernel, params) instance for the live GPU in worker processes.

    The cubins land in the on-disk cache, where the parent's later `compiler.load` finds them. Returns the
    number of instances compiled or found.
    """
    from .. import device

    distinct = {(name, tuple(catalog.get(name).full_params(p).items()), catalog.get(name).arch or device.gpu().arch)
                for name, p in cases}
    in_processes(_load, sorted(distinct), workers)
    return len(distinct)


@functools.lru_cache(maxsize=16)
def _reports(kernel: str, build_sha256: str, grid: tuple, workers: int | None) -> list[compiler.PtxasReport]:
    """ptxas reports of a grid, compiled once per process and kernel build (a sweep at several sizes prunes
    the same grid each time)."""
    return in_processes(_ptxas, [(kernel, dict(p)) for p in grid], workers)


def _ptxas(case: tuple[str, dict[str, int]]) -> compiler.PtxasReport:
    return compiler.ptxas_report(*case)


def _load(case: tuple[str, tuple, str]) -> None:
    compiler.cubin_file(catalog.instance(case[0], dict(case[1])), case[2])


T = TypeVar("T")


def in_processes(fn: Callable[[Any], T], items: list, workers: int | None = None) -> list[T]:
    """`fn` over `items` in worker processes (default: one per core but one), in order; in this process where one
    worker or one item would do. Compiles are CPU-bound and of very uneven length, so each item goes out alone."""
    workers = workers or max(1, min(len(items), (os.cpu_count() or 2) - 1))
    if workers == 1 or len(items) < 2:
        return [fn(x) for x in items]
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        return list(pool.map(fn, items))
