"""The explorers' background compilation: nearest the sliders first, every instance once, failures kept."""
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from gemm_lab import catalog, compiler
from gemm_lab.pages import grids, warmup

BOOK = Path(__file__).resolve().parent.parent / "book"


@pytest.fixture
def compiled(monkeypatch):
    """Instances 'compiled' in order, in threads of this process instead of spawned ones."""
    order = []

    def fake(kernel, key, arch):
        if dict(key) == {"BM": 16, "BN": 16, "BK": 8}:
            raise RuntimeError("ptxas ran out of patience")
        order.append(dict(key))

    monkeypatch.setattr(warmup, "_compile", fake)
    return order


def test_the_grid_compiles_once_nearest_the_sliders_first(compiled):
    grid = catalog.legal_grid("smem_tiled")
    start = catalog.get("smem_tiled").full_params()
    progress = []
    w = warmup.Warmup("smem_tiled", [p for p in grid if p != start], start, "sm_90", workers=1,
                      executor=ThreadPoolExecutor, on_progress=lambda done, total: progress.append((done, total)))
    assert w.wait(timeout=60)
    assert len(compiled) + len(w.failed) == len(grid) - 1 == w.total and progress[-1] == (w.total, w.total)
    notches = {k: sorted({p[k] for p in grid}) for k in start}
    steps = [sum(abs(notches[k].index(p[k]) - notches[k].index(start[k])) for k in start) for p in compiled]
    assert steps == sorted(steps) and steps[0] == 1  # slider notches away from the start: nearest first
    assert list(w.failed.values()) == ["RuntimeError: ptxas ran out of patience"]
    assert w.is_ready(compiled[0]) and not w.is_ready({"BM": 16, "BN": 16, "BK": 8})


def test_an_instance_the_explorer_compiled_is_not_compiled_again(monkeypatch):
    go, order = threading.Event(), []

    def fake(kernel, key, arch):  # the first compile waits until the explorer has compiled grid[3] itself
        go.wait(timeout=30)
        order.append(dict(key))

    monkeypatch.setattr(warmup, "_compile", fake)
    grid = [{"BM": 32, "BN": 32, "BK": bk} for bk in (4, 8, 16, 32)]
    w = warmup.Warmup("smem_tiled", grid, grid[0], "sm_90", workers=1, executor=ThreadPoolExecutor)
    w.compiled_here(grid[3])  # one job in flight at a time: grid[3], three notches away, is not submitted yet
    go.set()
    assert w.wait(timeout=60)
    assert grid[3] not in order and len(order) == 3 and all(w.is_ready(p) for p in grid)


def test_the_latency_benchmark_covers_every_tile_explorer_of_the_book():
    called = {name for page in BOOK.glob("*.md")
              for name in re.findall(r'tile_explorer\(\s*"(\w+)"', page.read_text())}
    assert called == set(grids.TILE_EXPLORERS)


def test_a_compiled_instance_is_kept_on_disk_for_the_next_process(tmp_path, monkeypatch):
    monkeypatch.setenv(compiler.CACHE_ENV, str(tmp_path))
    compiles = []
    real = compiler._nvrtc
    monkeypatch.setattr(compiler, "_nvrtc", lambda *args: compiles.append(args) or real(*args))
    path, name = compiler.cubin_file(catalog.instance("smem_tiled", {"BM": 8, "BN": 8, "BK": 8}), "sm_90")
    assert path.parent == tmp_path / "cubins" and path.read_bytes()[:4] == b"\x7fELF"
    assert name.startswith("_Z16sgemm_smem_tiledILi8ELi8ELi8EE")  # the mangled name a module load looks up
    assert compiler.cubin_file(catalog.instance("smem_tiled", {"BM": 8, "BN": 8, "BK": 8}), "sm_90") == (path, name)
    assert len(compiles) == 1  # the second call (another process, in a real session) only reads the file
