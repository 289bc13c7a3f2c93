"""Compile a kernel's legal grid in background processes, nearest the explorer's sliders first.

NVRTC takes 1-6 s per template instance, so a tile explorer that compiled on each slider move would make
the reader wait that long. When a live explorer opens, `Warmup` hands its grid to a pool of worker
processes that fill CuPy's on-disk kernel cache; the instances closest to the sliders' current position
go first (a pool is fed a few at a time, so a move re-orders what is left), and a later move only loads
its kernel from the cache.
"""
from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Executor, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool

from .. import catalog, compiler

Key = tuple[tuple[str, int], ...]  # an instance's parameters, in template order


class Warmup:
    """Compiles `grid` (full parameter dicts of one kernel) in `workers` processes, nearest `focus` first.

    `on_progress(done, total)` is called from a background thread after each instance. An instance that fails
    to compile is kept in `failed` with its error; the explorer then compiles it itself and shows the error.
    `arch` is the target the live GPU loads (`compiler.load`'s). `executor(workers)` makes the pool (default:
    spawned processes: NVRTC holds the GIL while it works).
    """

    def __init__(self, kernel: str | catalog.KernelSpec, grid: Sequence[Mapping[str, int]],
                 focus: Mapping[str, int], arch: str, *, workers: int | None = None,
                 on_progress: Callable[[int, int], None] = lambda done, total: None,
                 executor: Callable[[int], Executor] | None = None) -> None:
        self.spec, self.arch = catalog.get(kernel), arch
        self._order = {p: sorted({g[p] for g in grid}) for p in self.spec.param_names}
        self._todo = {self._key(g) for g in grid}
        self.total = len(self._todo)
        self.ready: set[Key] = set()
        self.failed: dict[Key, str] = {}
        self._focus = dict(focus)
        self._lock = threading.Lock()
        self._on_progress = on_progress
        self.workers = workers or max(1, min(self.total, (os.cpu_count() or 2) - 1))
        self._executor = executor or (lambda n: ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("spawn")))
        self._thread = threading.Thread(target=self._run, name=f"warmup {self.spec.name}", daemon=True)
        self._thread.start()

    def focus(self, params: Mapping[str, int]) -> None:
        """The sliders moved here: compile what lies nearest it next."""
        with self._lock:
            self._focus = dict(params)

    def is_ready(self, params: Mapping[str, int]) -> bool:
        return self._key(params) in self.ready

    def compiled_here(self, params: Mapping[str, int]) -> None:
        """The explorer compiled this instance itself: no worker needs to."""
        key = self._key(params)
        with self._lock:
            if key in self._todo:
                self._todo.discard(key)
                self.ready.add(key)

    def _key(self, params: Mapping[str, int]) -> Key:
        return tuple((p, int(params[p])) for p in self.spec.param_names)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the whole grid is compiled (or `timeout` seconds pass); True when it is."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def _nearest(self) -> Key:
        """The instance left to compile that is fewest slider steps away from the focus."""
        def steps(key: Key) -> int:
            return sum(abs(self._order[p].index(v) - self._position(p)) for p, v in key)
        return min(self._todo, key=lambda key: (steps(key), key))

    def _position(self, param: str) -> int:
        values, at = self._order[param], self._focus.get(param)
        return values.index(at) if at in values else 0

    def _run(self) -> None:
        running: dict = {}
        try:
            with self._executor(self.workers) as pool:
                while True:
                    with self._lock:  # a few jobs in flight at a time, so that a new focus re-orders the rest
                        while self._todo and len(running) < self.workers:
                            key = self._nearest()
                            self._todo.discard(key)
                            running[pool.submit(_compile, self.spec.name, key, self.arch)] = key
                    if not running:
                        return
                    finished, _ = wait(running, return_when=FIRST_COMPLETED)
                    for future in finished:
                        key, error = running.pop(future), future.exception()
                        if error is None:
                            self.ready.add(key)
                        else:
                            self.failed[key] = f"{type(error).__name__}: {error}"
                    self._on_progress(len(self.ready) + len(self.failed), self.total)
        except BrokenProcessPool:  # workers could not start (a notebook without spawn support): compile on demand
            return


def compile_all(cases: Sequence[tuple[str, Mapping[str, int], str]], workers: int | None = None,
                on_done: Callable[[float], None] = lambda seconds: None) -> threading.Thread:
    """Compile (kernel, parameters, arch) instances of any kernels in background processes, in the order given: a
    page's kernels, when it opens (`liverun.page`), so that its first races find them compiled; `on_done(seconds)`
    once all are. Returns the thread that feeds the pool (it ends at once where worker processes cannot start)."""
    def run() -> None:
        started = time.perf_counter()
        try:
            with ProcessPoolExecutor(workers or max(1, min(len(cases), (os.cpu_count() or 2) - 1)),
                                     mp_context=multiprocessing.get_context("spawn")) as pool:
                for future in [pool.submit(_compile, name, tuple(params.items()), arch)
                               for name, params, arch in cases]:
                    future.exception()  # an instance that fails compiles again, with its error, when a race loads it
        except BrokenProcessPool:
            return
        on_done(time.perf_counter() - started)

    thread = threading.Thread(target=run, name="gemm_lab page compiles", daemon=True)
    thread.start()
    return thread


def _compile(kernel: str, key: Key, arch: str) -> None:
    """Worker process: compile one instance for `arch` into the on-disk cubin cache."""
    compiler.cubin_file(catalog.instance(kernel, dict(key)), arch)
