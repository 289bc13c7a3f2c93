"""Seconds each live tile explorer of the book takes to open and to answer slider moves, on a GPU.

    python benchmarks/widget_latency.py [KERNEL ...]   # default: every explorer (grids.TILE_EXPLORERS)

Each explorer starts from an empty cubin cache, as on a reader's first visit: it opens on the recorded result of its
first instance (`open_s`), measures that instance in a thread (compiling it: `first_live_s`) and starts compiling the
legal grid in the background. Once the background is done, cold
moves go to instances not measured yet (their first verification and timing) and warm moves walk back to
measured ones. Saves one row per explorer to records/<gpu>/widget_latency.json (`records.LATENCY`);
benchmarks/submit_latency.py adds the exercises' submissions to the same file.
"""
from __future__ import annotations

import os
import sys
import tempfile
import time

from gemm_lab import catalog, compiler, device, records
from gemm_lab.lab import freshness
from gemm_lab.pages import grids, widgets

MOVES = 6  # cold moves per explorer, then as many warm ones back


def measure(kernel: str) -> dict:
    os.environ[compiler.CACHE_ENV] = tempfile.mkdtemp(prefix=f"cubins-{kernel}-")  # read at each compile
    compiler._live_cache.clear()  # nor anything loaded by an explorer before
    spec, gpu = catalog.get(kernel), device.gpu()
    t = time.perf_counter()
    box = widgets.tile_explorer(kernel)
    open_s = time.perf_counter() - t  # the explorer is on the page, its starting instance as recorded
    box.opened.join()
    first_s = time.perf_counter() - t  # ... and measured now
    if not box.warmup.wait(timeout=540):
        raise RuntimeError(f"{kernel}: the background compile did not finish in 540 s")
    grid_s = time.perf_counter() - t
    sliders = dict(zip(spec.param_names, box.children[1].children))
    status = box.children[3]
    path, seen = [{p: s.value for p, s in sliders.items()}], set()
    seen.add(tuple(path[0].items()))
    cold, warm = [], []
    for _ in range(MOVES):  # one slider one step, to a legal instance not measured yet
        step = _next_step(spec, sliders, path[-1], seen, gpu.smem_per_block)
        if step is None:
            break
        param, value = step
        cold.append(_move(sliders[param], value, status))
        path.append({**path[-1], param: value})
        seen.add(tuple(path[-1].items()))
    for here, back in zip(path[::-1], path[-2::-1]):  # the same steps back: each instance measured before
        param = next(p for p in spec.param_names if here[p] != back[p])
        warm.append(_move(sliders[param], back[param], status))
    return {"kernel": kernel, "open_s": open_s, "first_live_s": first_s, "cold_s": cold, "warm_s": warm,
            "grid_s": grid_s, "grid_instances": box.warmup.total + 1, "workers": box.warmup.workers,
            "size": grids.EXPLORER_SIZE, "gpu": gpu.name, "recorded_at": records.utc_now(),
            "versions": records.versions(gpu)}


def _next_step(spec, sliders, here, seen, smem_limit):
    for param, slider in sliders.items():
        i = slider.options.index(here[param])
        for j in (i + 1, i - 1):
            if 0 <= j < len(slider.options):
                there = {**here, param: slider.options[j]}
                if tuple(there.items()) in seen:
                    continue
                try:
                    catalog.validate(spec, there, smem_limit=smem_limit)
                except ValueError:
                    continue
                return param, slider.options[j]
    return None


def _move(slider, value, status) -> float:
    t = time.perf_counter()
    slider.value = value  # the observer verifies and times before returning
    elapsed = time.perf_counter() - t
    if "&#10003;" not in status.value:
        raise RuntimeError(f"a move to {slider.description}={value} did not measure: {status.value[:300]}")
    return elapsed


def main(kernels: list[str]) -> None:
    if not device.live():
        sys.exit("widget_latency.py measures live explorers: it needs a CUDA GPU")
    for kernel in kernels or grids.TILE_EXPLORERS:
        row = measure(kernel)
        freshness.save_latency([row])
        print(f"{kernel:>16}: open {row['open_s']:.2f} s, first live result {row['first_live_s']:.2f} s, "
              f"grid of {row['grid_instances']} in {row['grid_s']:.0f} s, "
              f"cold {max(row['cold_s']):.2f} s at most, warm {max(row['warm_s']):.2f} s at most", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
