"""Fuzzing: random shapes and parameters are either right against float64 or refused before anything runs.

On a GPU, each kernel meets CASES random cases: M, N and K from 1 to MAX_DIM, biased to 1, primes and one
off a tile multiple, tall and skinny ones among them, and parameters drawn from the kernel's legal grid (a fixed
sample of GRID_SAMPLE instances where the grid is larger: kernel 10b's 1,500-odd would take NVRTC half an hour).
On the CPU, parameter sets far outside the offered values either validate or raise a ValueError that quotes
the broken rule. Hypothesis runs derandomized, so every run draws the same cases.
"""
from __future__ import annotations

import functools
import random
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gemm_lab import catalog, compiler, device, run
from gemm_lab.lab import autotune
from gemm_lab.spec import round_up

CASES = 500  # per kernel, each a launch checked against float64
GRID_SAMPLE = 96  # instances compiled for a kernel's draws at most
MAX_DIM = 3000
VOLUME = 2**30  # M*N*K at most (1024 cubed), so that 4500 cases take minutes
TILES = (4, 8, 16, 32, 64, 128)  # every tile edge in the catalog
PRIMES = (2, 3, 5, 7, 13, 17, 31, 61, 127, 131, 251, 257, 509, 521, 1021, 1031, 2039, 2053, 2999)
FUZZ = settings(derandomize=True, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])


def dim(limit: int) -> st.SearchStrategy[int]:
    """1 to `limit`, biased to primes and one below, at or above a tile multiple (larger draws wrap around).

    Hypothesis favours 1 and small values by itself."""
    near_tile = st.builds(lambda t, q, d: t * q + d,
                          st.sampled_from(TILES), st.integers(1, 23), st.sampled_from((-1, 0, 1)))
    anything = st.one_of(st.sampled_from(PRIMES), near_tile, st.integers(1, MAX_DIM))
    return anything.map(lambda x: (x - 1) % limit + 1)


@st.composite
def shapes(draw: st.DrawFn) -> tuple[int, int, int]:
    """(M, N, K) within VOLUME: two dimensions drawn freely, the third bounded by the volume, in any order."""
    a, b = draw(dim(MAX_DIM)), draw(dim(MAX_DIM))
    c = draw(dim(max(1, min(MAX_DIM, VOLUME // (a * b)))))
    return tuple(draw(st.permutations((a, b, c))))


@functools.cache
def compiled_grid(kernel: str) -> list[dict[str, int]]:
    """The kernel's legal grid that fits this GPU's shared memory (at most GRID_SAMPLE of it, always the same
    ones), compiled in parallel first, so that hypothesis' draws do not wait on NVRTC."""
    spec = catalog.get(kernel)
    grid = [p for p in catalog.legal_grid(kernel) if spec.smem_bytes(p) <= device.gpu().smem_per_block]
    if len(grid) > GRID_SAMPLE:
        grid = random.Random(kernel).sample(grid, GRID_SAMPLE)
    autotune.precompile([(kernel, p) for p in grid])
    return grid


@pytest.mark.gpu
@pytest.mark.parametrize("kernel", list(catalog.KERNELS))
def test_random_shapes_and_legal_parameters_are_right(kernel):
    spec = catalog.get(kernel)

    @settings(FUZZ, max_examples=CASES)
    @given(params=st.sampled_from(compiled_grid(kernel)), shape=shapes())
    def case(params, shape):
        if spec.tma:  # rows of 16-byte multiples (the refusal of other shapes is tested in test_catalog)
            shape = (shape[0], round_up(shape[1], 4), round_up(shape[2], 4))
        err = run.measure_error(catalog.instance(spec, params, shape))
        assert err <= run.tolerance(shape[2], spec.precision), f"{spec.describe(params)} at {shape}: max rel err {err}"

    case()


@pytest.mark.gpu
@pytest.mark.parametrize("kernel", list(catalog.KERNELS))
def test_random_illegal_parameters_are_refused_before_launch(kernel):
    spec = catalog.get(kernel)
    doubled = {name: (*values, 2 * max(values)) for name, values in spec.choices.items()}
    legal = catalog.legal_grid(spec, doubled)
    illegal = [p for p in _combinations(doubled) if spec.full_params(p) not in legal]

    @settings(FUZZ, max_examples=25)
    @given(params=st.sampled_from(illegal), shape=shapes())
    def case(params, shape):
        with pytest.raises(ValueError) as refusal:
            catalog.validate(spec, params, shape)
        compiled = len(compiler._live_cache)
        with pytest.raises(ValueError, match=re.escape(str(refusal.value))):
            run.verify(spec, *shape, params)
        assert len(compiler._live_cache) == compiled  # refused before NVRTC, so before any launch

    case()


@pytest.mark.gpu
def test_kernel_15_int8_products_are_exact_on_random_shapes():
    """Kernel 15 alone (the Ozaki products): random shapes, rounded up to its 16-byte rows, and parameters from the
    ozaki spec's grid, each checked exactly against float64."""
    import cupy

    from gemm_lab.precision import int8

    if catalog.unsupported(int8.PROBE, device.gpu().cc):
        pytest.skip(catalog.unsupported(int8.PROBE, device.gpu().cc))
    grid = sorted({tuple(int8.full_params({k: v for k, v in p.items() if k != "MODULI"}).items())
                   for p in catalog.legal_grid("ozaki")})

    @settings(FUZZ, max_examples=CASES)
    @given(params=st.sampled_from(grid), shape=shapes())
    def case(params, shape):
        m, n, k = shape[0], round_up(shape[1], 4), min(round_up(shape[2], 16), catalog.INT8_MAX_K)
        a, bt = int8.operands(m, n, k, seed=m + n + k)
        c = cupy.empty((m, n), cupy.int32)
        assert int8.exact(int8.launcher(dict(params), a, bt, c), a, bt, c), f"kernel 15 {dict(params)} at {m, n, k}"

    case()


def _combinations(choices: dict[str, tuple[int, ...]]) -> list[dict[str, int]]:
    combos: list[dict[str, int]] = [{}]
    for name, values in choices.items():
        combos = [{**c, name: v} for c in combos for v in values]
    return combos


def beyond(values: tuple[int, ...]) -> st.SearchStrategy[int]:
    """The offered values, and integers far from them: zero, negative, odd, huge."""
    return st.one_of(st.sampled_from(values), st.integers(-64, 2048), st.sampled_from((-1, 0, 3, 2**20)))


@pytest.mark.parametrize("kernel", list(catalog.KERNELS))
@settings(FUZZ, max_examples=200)
@given(data=st.data())
def test_parameters_beyond_the_offered_values_validate_or_quote_the_rule(kernel, data):
    spec = catalog.get(kernel)
    params = data.draw(st.fixed_dictionaries({name: beyond(v) for name, v in spec.choices.items()}), "params")
    shape = data.draw(st.tuples(*[st.sampled_from((-1, 0, 1, 17, 4096, 70_000, 2**21))] * 3), "shape")
    broken = next((rule.why for rule in spec.rules if not rule.holds(params)), None)  # in order, as validate
    try:
        catalog.validate(spec, params, shape)
    except ValueError as err:
        assert broken in str(err) if broken else str(err).startswith("shape M="), str(err)
    else:
        assert broken is None


def test_a_zero_tile_is_refused_with_the_rule():
    with pytest.raises(ValueError, match="must be positive"):
        catalog.validate("thread_tile_2d", {"TM": 0})
