"""Which template instances the compile tests compile: samples that reach the edges of each kernel's rules.

Compiling every offered instance takes many minutes on two cores, so the default test run compiles `edges`: the
defaults, each parameter's smallest and largest legal value, the most threads, the most shared memory and the
instance nearest the limit of each register rule. `beyond` draws instances outside the offered values (odd
values, multiples of 4, 8 and 16 around them) that `catalog.validate` accepts, seeded, so every run and every
xdist worker draws the same ones.
"""
from __future__ import annotations

import random
from collections.abc import Callable
from unittest import mock

from gemm_lab import catalog
from gemm_lab.pages import grids

Params = dict[str, int]


def offered(kernel: str) -> list[Params]:
    """The legal instances of the offered values and of the recorded sweep, each once, in a fixed order."""
    spec = catalog.get(kernel)
    offered_grids = catalog.legal_grid(spec) + catalog.legal_grid(spec, grids.SWEEPS.get(kernel))
    return list({tuple(p.values()): p for p in offered_grids}.values())


def register_slack(spec: catalog.KernelSpec, p: Params) -> dict[int, int]:
    """For each register rule of the spec (by index), how many registers below its budget the instance stays.

    A register rule is one that the defaults break when `catalog.register_budget` allows nothing; its slack is
    the largest cut of that budget the instance still survives."""
    def holds(rule: catalog.Rule, params: Params, cut: int) -> bool:
        budget = catalog.register_budget
        with mock.patch.object(catalog, "register_budget", lambda threads: budget(threads) - cut):
            return rule.holds(params)

    defaults = spec.full_params()
    slack = {}
    for i, rule in enumerate(spec.rules):
        if holds(rule, defaults, catalog.MAX_REGISTERS_PER_THREAD + 1):
            continue  # not a register rule
        low, high = 0, catalog.MAX_REGISTERS_PER_THREAD  # the rule holds at cut `low`, not at `high + 1`
        while low < high:
            mid = (low + high + 1) // 2
            low, high = (mid, high) if holds(rule, p, mid) else (low, mid - 1)
        slack[i] = low
    return slack


def edges(kernel: str) -> list[Params]:
    """Few offered instances that together reach every edge of the kernel's rules (a greedy cover)."""
    spec, grid = catalog.get(kernel), offered(kernel)
    slack = [register_slack(spec, p) for p in grid]
    wanted: list[Callable[[int], bool]] = [lambda i: grid[i] == spec.full_params()]
    for name in spec.param_names:
        values = [p[name] for p in grid]
        wanted += [lambda i, n=name, v=v: grid[i][n] == v for v in (min(values), max(values))]
    for measure in (spec.threads, spec.smem_bytes):
        most = max(map(measure, grid))
        wanted.append(lambda i, f=measure, v=most: f(grid[i]) == v)
    for rule in slack[0]:
        least = min(s[rule] for s in slack)
        wanted.append(lambda i, r=rule, v=least: slack[i][r] == v)

    def tightness(i: int) -> int:
        return min(slack[i].values(), default=0)

    chosen: list[int] = []
    while wanted:
        best = max(range(len(grid)), key=lambda i: (sum(w(i) for w in wanted), -tightness(i), -i))
        chosen.append(best)
        wanted = [w for w in wanted if not w(best)]
    return [grid[i] for i in chosen]


def _draw(rng: random.Random, values: tuple[int, ...]) -> int:
    """A value around the offered ones: small counts (stages, layouts, flags) from 0 to twice the largest;
    tile sizes from half the smallest to twice the largest, as an offered value or a multiple of 16, 8 or 4 or
    any integer."""
    top = 2 * max(values)
    if max(values) <= 8:
        return rng.randrange(0, top + 1)
    kind = rng.randrange(5)
    if kind == 0:
        return rng.choice(values)
    if kind < 4:
        step = (16, 8, 4)[kind - 1]
        return rng.randrange(step, top + 1, step)
    return rng.randrange(max(1, min(values) // 2), top + 1)


def beyond(kernel: str, count: int, seed: str = "beyond", tries: int = 20_000) -> list[Params]:
    """Up to `count` distinct instances that `catalog.validate` accepts with at least one parameter outside the
    offered values: half the draws change one to three parameters of an offered instance, half draw all."""
    spec = catalog.get(kernel)
    rng, grid = random.Random(f"{seed}/{kernel}"), catalog.legal_grid(spec)
    found: dict[tuple[int, ...], Params] = {}
    for attempt in range(tries):
        if attempt % 2:
            p = {name: _draw(rng, values) for name, values in spec.choices.items()}
        else:
            p = dict(rng.choice(grid))
            for name in rng.sample(spec.param_names, rng.randint(1, min(3, len(spec.param_names)))):
                p[name] = _draw(rng, spec.choices[name])
        key = tuple(p.values())
        if key in found or all(p[n] in spec.choices[n] for n in spec.param_names):
            continue
        try:
            found[key] = catalog.validate(spec, p)
        except ValueError:
            continue
        if len(found) == count:
            break
    return list(found.values())
