"""GPU tests are marked `gpu` and skip cleanly on a machine without one, or on a GPU that cannot run the kernel
they test (a `kernel` parameter whose catalog entry needs a newer compute capability, or exactly Hopper's)."""
import os

import pytest

from gemm_lab import catalog, device

SLOW_FIRST = ("test_chapters.py", "test_figures.py", "test_ladder.py", "test_exercises.py", "test_banks.py")


def pytest_collection_modifyitems(config, items):
    # the slowest files first: pyproject's --maxschedchunk 1 hands them out one at a time, so they spread over the
    # workers, and the many short tests after them fill the gaps, so that the workers end nearly together (without
    # it, pytest-xdist's first batch, a quarter of a worker's share, would give them all to one worker)
    items.sort(key=lambda item: item.path.name not in SLOW_FIRST)
    if device.live():
        for item in items:
            kernel = getattr(item, "callspec", None) and item.callspec.params.get("kernel")
            why = kernel in catalog.KERNELS and catalog.unsupported(kernel, device.gpu().cc)
            if "gpu" in item.keywords and why:
                item.add_marker(pytest.mark.skip(reason=why))
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (replay mode)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def replay(monkeypatch):
    """Replay mode for one test, whatever the machine has: every call returns recorded results."""
    monkeypatch.setenv(device.REPLAY_ENV, "1")
    monkeypatch.delenv(device.GPU_ENV, raising=False)
    device.live.cache_clear()
    yield
    device.live.cache_clear()


def pytest_addoption(parser, pluginmanager):
    """Without pytest-xdist (not installed, or `-p no:xdist`), accept pyproject's `-n auto --maxschedchunk 1` and run
    in this process, so that a plain `python -m pytest` still collects and runs everything."""
    if not pluginmanager.has_plugin("xdist"):  # pytest reserves lowercase short options: `_addoption`, as xdist does
        group = parser.getgroup("xdist")
        group._addoption("-n", "--numprocesses", dest="numprocesses", metavar="N",
                         help="ignored: pytest-xdist is not active, the tests run serially")
        group.addoption("--maxschedchunk", metavar="N", help="ignored: pytest-xdist is not active")


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist: unknown, and so not called, without it
def pytest_xdist_auto_num_workers(config):
    """Workers for `-n auto` (pyproject's addopts): one per core, at most four, so that GPU tests on a large host
    do not crowd one GPU."""
    return min(os.cpu_count() or 1, 4)


@pytest.fixture(autouse=True)
def fresh_live_session(monkeypatch):
    """Each test starts outside any book page, with nothing measured yet (`liverun.SESSION`)."""
    from gemm_lab import liverun

    monkeypatch.setattr(liverun, "SESSION", liverun.Session())
