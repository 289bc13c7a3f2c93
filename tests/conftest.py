"""GPU tests are marked `gpu` and skip cleanly on a machine without one."""
import pytest

from gemm_lab import device


def pytest_collection_modifyitems(config, items):
    if device.live():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (replay mode)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
