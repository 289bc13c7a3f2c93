"""Ways to time the cuBLAS baseline, the book's and others', measured side by side.

A "% of cuBLAS" claim is only as good as its cuBLAS time. Each way below times the same C = A @ B
(row-major float32, cuBLAS with FP32 math) the way some benchmark might, so the page on published
claims can show how far each moves the baseline. The book's own way is `timing.cublas`: warm-up,
CUDA events around each turn of back-to-back launches, the median of the turns' time per launch, on inputs
rotated out of L2.
The first-call ways run in a fresh child process (`python -m gemm_lab.baselines WAY M N K`), since a
process times its first cuBLAS call only once.
"""
from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from .. import catalog, device, liverun, records, run, timing, turns, yardstick

KIND = "cublas_ways"  # records/<gpu>/cublas_ways.json
KEY = ("way", "m", "n", "k")
REPEATS = 7  # medians of host-timed ways, each launch synchronised (slow ways: fewer runs than turns.MIN_RUNS)

WAYS: dict[str, str] = {
    "book": "a sustained race (timing.cublas): CUDA events around each turn of back-to-back launches, the median of "
            "the turns' time per launch, inputs rotated out of L2 (this book)",
    "one_warm_call": "one call after a warm-up, CUDA events, inputs already in L2",
    "host_clock": "host clock around each call plus a synchronize, median",
    "first_call": "the first cuBLAS call of a fresh process, CUDA events (library set-up included)",
    "first_call_handle_ready": "the first cuBLAS call of a fresh process whose cuBLAS handle already exists",
    "transposes": "row-major handled by explicit transposes: copy A and B to column-major, multiply, copy C back",
    "host_copies": "the inputs copied from host memory and C copied back, included in the time",
}
IN_CHILD = ("first_call", "first_call_handle_ready")

WAYS_S = 30.0  # about how long `measure` takes (some ways start a process of their own)


def measure(size: int | tuple[int, int, int]) -> list[dict[str, Any]]:
    """Time cuBLAS every way on one shape (live GPU only); rows for `save`."""
    if not device.live():
        raise RuntimeError("timing cuBLAS needs a live GPU (replay mode: use recorded())")
    yardstick.require_fp32()
    import cupy

    m, n, k = timing.shape_of(size)
    host = run.host_inputs(m, n, k)
    dev = tuple(cupy.asarray(x) for x in host)
    ms = {way: _child(way, m, n, k) if way in IN_CHILD else _in_process(way, host, dev) for way in WAYS}
    gpu = device.gpu()
    now = records.utc_now()
    return [{"way": way, "label": WAYS[way], "m": m, "n": n, "k": k, "time_ms": t,
             "gflops": timing.gflops(m, n, k, t), "gpu": gpu.name, "recorded_at": now,
             "versions": records.versions(gpu)}
            for way, t in ms.items()]


def ways(size: int | tuple[int, int, int]) -> dict[str, dict[str, Any]]:
    """cuBLAS timed every way on one shape, by way: measured now on a live GPU (where the reader asked for sweeps,
    `liverun`), else the recorded rows."""
    with liverun.work("sweeps", f"cuBLAS timed {len(WAYS)} ways at {size}", WAYS_S) as task:
        if task.live and task.result is None:
            task.result = {r["way"]: r for r in measure(size)}
        return task.result if task.live else recorded(size)


def save(rows: list[dict[str, Any]]) -> None:
    for gpu in {r["gpu"] for r in rows}:
        records.upsert(records.gpu_dir(gpu) / f"{KIND}.json", [r for r in rows if r["gpu"] == gpu], KEY)


def recorded(size: int | tuple[int, int, int], gpu: str | None = None) -> dict[str, dict[str, Any]]:
    """The recorded rows of one shape, by way (in WAYS order); LookupError if there are none."""
    m, n, k = timing.shape_of(size)
    rows = {r["way"]: r for r in records.read_kind(KIND, gpu) if (r["m"], r["n"], r["k"]) == (m, n, k)}
    if not rows:
        raise LookupError(f"no recorded cuBLAS timings at {m}x{n}x{k} on {gpu or device.replay_gpu()}: "
                          f"run `gemm-lab record --only claims` on a GPU")
    return {way: rows[way] for way in WAYS if way in rows}


def _in_process(way: str, host: tuple[Any, Any], dev: tuple[Any, Any]) -> float:
    """Milliseconds of one way timed in this process, on the same inputs (host copies and their GPU copies)."""
    import cupy

    (a, b), (m, k), n = dev, dev[0].shape, dev[1].shape[1]
    if way == "book":
        return timing.cublas((m, n, k), method=turns.SUSTAINED).time_ms
    c = cupy.empty((m, n), dtype=cupy.float32)
    if way == "one_warm_call":
        return _per_launch_ms([lambda: cupy.matmul(a, b, out=c)], 1)
    if way == "host_clock":
        return _host_median(lambda: cupy.matmul(a, b, out=c))
    if way == "transposes":
        def through_column_major() -> Any:
            return cupy.ascontiguousarray(cupy.matmul(cupy.asfortranarray(a), cupy.asfortranarray(b)))
        _check(through_column_major(), a, b)
        return _per_launch_ms([through_column_major], turns.MIN_RUNS)
    if way == "host_copies":
        ha, hb = host
        return _host_median(lambda: cupy.matmul(cupy.asarray(ha), cupy.asarray(hb)).get())
    raise ValueError(f"unknown way {way!r}; the ways are {', '.join(WAYS)}")


def _host_median(call: Callable[[], Any]) -> float:
    import cupy

    call()  # warm-up
    times = []
    for _ in range(REPEATS):
        cupy.cuda.Device().synchronize()
        t0 = time.perf_counter()
        call()
        cupy.cuda.Device().synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def _check(c: Any, a: Any, b: Any) -> None:
    """A way that computes the wrong product times nothing worth comparing."""
    err = run.max_rel_err(c, run.reference(a, b)[0])
    if not err <= run.tolerance(a.shape[1]):
        raise RuntimeError(f"cuBLAS through transposes: max relative error {err:.3g}")


def _child(way: str, m: int, n: int, k: int) -> float:
    out = subprocess.run([sys.executable, "-m", "gemm_lab.lab.baselines", way, str(m), str(n), str(k)],
                         capture_output=True, text=True, check=False, cwd=catalog.ROOT, timeout=300)
    if out.returncode != 0:
        raise RuntimeError(f"timing cuBLAS's {way} in a child process failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])["time_ms"]


def _first_call(way: str, m: int, n: int, k: int) -> None:
    """Child process: time this process's first cuBLAS call with CUDA events, print it as JSON."""
    import cupy

    a, b = (cupy.asarray(x) for x in run.host_inputs(m, n, k))
    c = cupy.empty((m, n), dtype=cupy.float32)
    if way == "first_call_handle_ready":
        cupy.cuda.device.get_cublas_handle()
    cupy.cuda.Device().synchronize()
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    start.record()
    cupy.matmul(a, b, out=c)
    end.record()
    end.synchronize()
    print(json.dumps({"time_ms": cupy.cuda.get_elapsed_time(start, end)}))


if __name__ == "__main__":
    _first_call(sys.argv[1], *(int(x) for x in sys.argv[2:5]))


def _per_launch_ms(launches: list[Callable[[], Any]], runs: int) -> float:
    """Median milliseconds of `runs` launches, each between its own pair of CUDA events, after a warm-up: the way
    many benchmarks time, imitated here on purpose (the book's own races put one pair of events around a whole turn,
    since events between launches slow cuBLAS's short launches; `turns`)."""
    import statistics

    import cupy

    for launch in launches[:1] * turns.WARMUP:
        launch()
    events = [(cupy.cuda.Event(), cupy.cuda.Event()) for _ in range(runs)]
    for i, (start, end) in enumerate(events):
        start.record()
        launches[i % len(launches)]()
        end.record()
    events[-1][1].synchronize()
    return statistics.median(cupy.cuda.get_elapsed_time(s, e) for s, e in events)
