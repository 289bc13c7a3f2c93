"""Seconds a checked submission of each write-the-kernel exercise takes to answer, on a GPU.

    python benchmarks/submit_latency.py [EXERCISE ...]   # default: every exercise (exercises.KERNEL_EXERCISES)

The exercise's solution (its variant's file in kernels/exercises/) is submitted with `gl.submit` at SIZE: compiled
from an empty cubin cache, checked on guarded buffers (at SIZE too) and timed beside the book's solution and cuBLAS
(`open_s`), then submitted again
once compiled (`warm_s`, SUBMITS times). Saves one row per exercise, as "submit <name>", to
records/<gpu>/widget_latency.json beside the explorers' (`records.LATENCY`).
"""
from __future__ import annotations

import os
import sys
import tempfile
import time

import gemm_lab as gl
from gemm_lab import compiler, device, records
from gemm_lab.lab import freshness
from gemm_lab.pages import exercises

SIZE = 2048  # where a submission is timed beside the book's kernel and cuBLAS
SUBMITS = 3  # submissions once compiled


def measure(name: str) -> dict:
    os.environ[compiler.CACHE_ENV] = tempfile.mkdtemp(prefix=f"cubins-{name}-")  # read at each compile
    compiler._live_cache.clear()
    exercise, gpu = exercises.KERNEL_EXERCISES[name], device.gpu()
    source = exercises.spec_of(exercise.like).path.read_text()

    def once() -> float:
        t = time.perf_counter()
        attempt = gl.submit(source, exercise.like, exercise.params, size=SIZE)
        if not attempt.ok:
            raise RuntimeError(f"{name}: the solution did not pass: {attempt.wrong or attempt.compile_log}")
        return time.perf_counter() - t

    open_s = once()
    return {"kernel": f"submit {name}", "open_s": open_s, "cold_s": [], "warm_s": [once() for _ in range(SUBMITS)],
            "size": SIZE, "gpu": gpu.name,
            "recorded_at": records.utc_now(),
            "versions": records.versions(gpu)}


def main(names: list[str]) -> None:
    if not device.live():
        sys.exit("submit_latency.py submits kernels to a GPU: it needs one")
    for name in names or exercises.KERNEL_EXERCISES:
        row = measure(name)
        freshness.save_latency([row])
        print(f"submit {name:>18}: first {row['open_s']:.2f} s, then {max(row['warm_s']):.2f} s at most", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
