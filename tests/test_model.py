"""The paper models give the numbers worked out by hand in the chapters."""
import pytest

from gemm_lab import model


def test_flops_and_compulsory_traffic():
    assert model.flops(2, 3, 4) == 48
    assert model.compulsory_bytes(4096, 4096, 4096) == 4 * 3 * 4096**2


def test_tiling_traffic_model():
    n = 4096
    assert model.global_load_bytes("coalesced", n, n, n) == 4 * 2 * n**3
    p = {"BM": 32, "BN": 32, "BK": 8}
    assert model.global_load_bytes("smem_tiled", n, n, n, p) == pytest.approx(4 * n**3 * (2 / 32))
    # BK does not change the traffic; a tall tile reuses B more and A less
    assert model.global_load_bytes("smem_tiled", n, n, n, {**p, "BK": 32}) == model.global_load_bytes(
        "smem_tiled", n, n, n, p)
    assert model.reuse("smem_tiled", {"BM": 64, "BN": 16, "BK": 8}) == (16, 64)


def test_roofline_is_the_lower_of_the_two_limits():
    assert model.roofline(1.0, peak_gflops=1000, bandwidth_gbs=100) == 100
    assert model.roofline(100.0, peak_gflops=1000, bandwidth_gbs=100) == 1000
