"""Kernel 15, the INT8 product alone: its shapes and parameters are checked before anything launches (CPU), and on a
Hopper GPU its int32 results are exact on tails of every tile, as are cuBLAS's."""
import pytest

from gemm_lab import catalog, device
from gemm_lab.precision import int8


@pytest.mark.parametrize("shape,why", [((64, 64, 24), "K must be a multiple of 16"),
                                       ((64, 66, 32), "N of 4"), ((0, 64, 32), "at least 1"),
                                       ((64, 64, catalog.INT8_MAX_K + 17), "stay exact up to")])
def test_bad_shapes_are_refused_before_launch(shape, why, monkeypatch):
    monkeypatch.setattr(int8, "launcher", lambda *a: pytest.fail("launched a refused shape"))
    with pytest.raises(ValueError, match=why):
        int8.bench(shape)


def test_parameters_follow_the_ozaki_spec_rules():
    assert int8.full_params() == {"BN": 256, "CONSUMERS": 2, "STAGES": 4, "CLUSTER": 2, "GROUP": 8}
    with pytest.raises(ValueError, match="BN must be 128 or 256"):
        int8.full_params({"BN": 64})


@pytest.mark.gpu
@pytest.mark.parametrize("params", [{}, {"CLUSTER": 1}, {"BN": 128, "CONSUMERS": 1, "STAGES": 3}])
@pytest.mark.parametrize("shape", [(1, 4, 16), (129, 260, 144), (1000, 516, 4112), (255, 1028, 272),
                                   (2048, 2048, 2048)])
def test_results_are_exact_on_tails(params, shape):
    import cupy

    if catalog.unsupported(int8.PROBE, device.gpu().cc):
        pytest.skip(catalog.unsupported(int8.PROBE, device.gpu().cc))
    a, bt = int8.operands(*shape, seed=3)
    c = cupy.empty(shape[:2], cupy.int32)
    assert int8.exact(int8.launcher(params, a, bt, c), a, bt, c)
    assert int8.exact(int8.cublas_launcher(a, bt, c), a, bt, c)
