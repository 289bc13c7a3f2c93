"""Catalog rules refuse bad tiles and shapes before anything compiles, and name the rule."""
import pytest

from gemm_lab import catalog


def test_defaults_are_legal_and_in_template_order():
    for spec in catalog.KERNELS.values():
        assert list(catalog.validate(spec)) == list(spec.param_names)
        assert spec.path.exists(), spec.source


@pytest.mark.parametrize("kernel,params,rule", [
    ("smem_tiled", {"BM": 64, "BN": 32}, "threads per block"),
    ("smem_tiled", {"BM": 32, "BN": 32, "BK": 256}, "shared memory"),
    ("smem_tiled", {"BM": 0}, "positive"),
    ("naive", {"BLOCK": 33}, "threads per block"),
])
def test_broken_rules_are_named(kernel, params, rule):
    with pytest.raises(ValueError, match=rule):
        catalog.validate(kernel, params)


def test_unknown_names_are_refused():
    with pytest.raises(ValueError, match="parameters are BM, BN, BK"):
        catalog.validate("smem_tiled", {"TM": 4})
    with pytest.raises(ValueError, match="catalog has"):
        catalog.get("fastest")


@pytest.mark.parametrize("shape,match", [
    ((0, 4, 4), "at least 1"),
    ((70000, 70000, 4), "2\\*\\*31"),
    ((2_100_000, 16, 16), "grid's y dimension"),
])
def test_unsupported_shapes_are_refused(shape, match):
    with pytest.raises(ValueError, match=match):
        catalog.validate("naive", {"BLOCK": 8}, shape=shape)


def test_device_shared_memory_limit():
    with pytest.raises(ValueError, match="this GPU allows 1024"):
        catalog.validate("smem_tiled", smem_limit=1024)


def test_grid_and_instance_derive_from_the_spec():
    spec = catalog.get("smem_tiled")
    p = {"BM": 16, "BN": 64, "BK": 8}
    assert spec.instance(p) == "sgemm_smem_tiled<16, 64, 8>"
    assert spec.grid(p, m=100, n=130) == (3, 7, 1)
    assert spec.threads(p) == 1024 and spec.smem_bytes(p) == 4 * (16 * 8 + 8 * 64)


def test_legal_grid_keeps_only_legal_combinations():
    grid = catalog.legal_grid("smem_tiled", {"BM": (32, 64), "BN": (32, 64), "BK": (8,)})
    assert grid == [{"BM": 32, "BN": 32, "BK": 8}]


def test_kernels_refuse_gpus_too_old_for_their_instructions():
    with pytest.raises(ValueError, match=r"multistage needs a GPU of compute capability 8.0 or newer \(cp.async"):
        catalog.validate("multistage", cc=(7, 5))
    assert catalog.validate("multistage", cc=(9, 0)) and catalog.validate("prefetch", cc=(7, 5))
