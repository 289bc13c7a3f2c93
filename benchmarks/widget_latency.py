"""Seconds per tile-explorer slider change on a live GPU, cold (compiling) and warm (cached).

    python benchmarks/widget_latency.py        # prints the timings; writes $OUT/widget_times.json if set
"""
import time, json, os
from gemm_lab import widgets
box = widgets.tile_explorer("smem_tiled")
header, sliders, status, out = box.children
bm, bn, bk = sliders.children
times = []
for field, value in [(bk, 16), (bm, 16), (bn, 64), (bk, 8), (bm, 8), (bk, 16), (bm, 16)]:
    field.value = value  # cold: compile
for field, value in [(bk, 16), (bm, 8), (bn, 64), (bk, 8), (bm, 16), (bk, 16)]:
    t = time.perf_counter(); field.value = value; times.append(time.perf_counter() - t)
print("warm slider changes (s):", [round(x, 3) for x in times], "status:", status.value[:200])
bm.value, bn.value = 64, 64
print("refused:", status.value[:200])
if os.environ.get("OUT"):
    json.dump(times, open(os.environ["OUT"] + "/widget_times.json", "w"))
