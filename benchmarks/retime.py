"""Re-time the headline shares from outside `turns.race`, to check the records the pages quote, on a GPU.

    python benchmarks/retime.py            # kernel 14 TF32 and 3xTF32, the Ozaki scheme, kernel 15, kernel 10b
    python benchmarks/retime.py --report   # no GPU: each stored re-timing beside today's records

A different sustained harness: each side first runs untimed for WARM_S, then the two take BLOCKS blocks in turn
(A B B A ...), each LEAD_S of untimed launches (the clock leaving the other side's level) and then BLOCK_S of
back-to-back launches timed by one pair of CUDA events around all of them (a block's throughput, as the race
times its turns, but in longer runs and with code of its own). The share is the median over the block pairs. Each
row sits beside the recorded share (`timing.bench`'s sustained race) in records/<gpu>/retime.json; the pages quote
only the records.
"""
from __future__ import annotations

import contextlib
import math
import statistics
import sys
import time
import warnings

from gemm_lab import catalog, device, folders, records, timing, yardstick
from gemm_lab.lab import plan
from gemm_lab.pages import tables
from gemm_lab.precision import int8

# 5 blocks a side: with 3, repeated runs on the H100 moved by up to 1.8 points
WARM_S, LEAD_S, BLOCK_S, BLOCKS = 1.5, 0.5, 2.0, 10
# the key shares, kernel 10b, and the FFMA race that draws the cap (raced in short turns: does it lean?)
CASES = [*catalog.KEY_SHARES, ("pipelined_warp_tiling", 8192), ("prefetch", 8192)]


def sides(kernel: str, size: int) -> tuple[list, list]:
    """The kernel's launches and cuBLAS's (in the kernel's math), over enough operand sets to miss L2."""
    if kernel == int8.PROBE.name:
        import cupy

        sets = [(*int8.operands(size, size, size, seed=s), cupy.empty((size, size), cupy.int32)) for s in range(2)]
        p = int8.full_params()
        return [int8.launcher(p, *s) for s in sets], [int8.cublas_launcher(*s) for s in sets]
    return timing.sides(catalog.instance(kernel, None, (size,) * 3))


def block_ms(launches: list, seconds: float, each_ms: float) -> float:
    """Milliseconds per launch over a block of back-to-back launches lasting about `seconds`."""
    import cupy

    count = max(3, math.ceil(seconds * 1e3 / each_ms))
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    start.record()
    for i in range(count):
        launches[i % len(launches)]()
    end.record()
    end.synchronize()
    return cupy.cuda.get_elapsed_time(start, end) / count


@contextlib.contextmanager
def quietly_beside(kernel: str):
    """cuBLAS set to the math it races this kernel in (kernel 15's INT8 GEMM needs no setting), warnings silenced."""
    with warnings.catch_warnings(), (contextlib.nullcontext() if kernel == int8.PROBE.name
                                     else yardstick.cublas_math(yardstick.BASELINE[catalog.get(kernel).precision])):
        warnings.simplefilter("ignore")
        yield


def shares(kernel: str, size: int) -> list[float]:
    """The kernel's % of cuBLAS in each pair of blocks, in the order they ran."""
    mine, theirs = sides(kernel, size)
    with quietly_beside(kernel):
        each = [block_ms(side, 0.2, 1.0) for side in (mine, theirs)]  # compiles, loads, and says how long one takes
        for side, ms in zip((mine, theirs), each):
            block_ms(side, WARM_S, ms)
        order = [0, 1, 1, 0] * (BLOCKS // 4) + [0, 1][: BLOCKS % 4]
        times = {0: [], 1: []}
        for who in order:
            block_ms((mine, theirs)[who], LEAD_S, each[who])
            times[who].append(block_ms((mine, theirs)[who], BLOCK_S, each[who]))
    return [100 * c / k for k, c in zip(times[0], times[1])]


def main(cases: list[tuple[str, int]]) -> None:
    gpu = device.gpu().name
    rows = []
    for kernel, size in cases:
        started = time.time()
        pairs = shares(kernel, size)
        pct = statistics.median(pairs)
        rows.append({"kernel": kernel, "params": plan.full_params(kernel), "m": size, "n": size, "k": size,
                     "pct_blocks": pct, "pairs_pct": [round(x, 2) for x in pairs],
                     "gpu": gpu, "recorded_at": records.utc_now(), "blocks": BLOCKS, "block_s": BLOCK_S,
                     "lead_s": LEAD_S, "warm_s": WARM_S})
        print(f"{kernel:24s} {size}: {pct:6.1f} % in blocks ({min(pairs):.1f}-{max(pairs):.1f}, "
              f"{time.time() - started:.0f} s)", flush=True)
        records.upsert(records.gpu_dir(gpu) / f"{records.RETIME}.json", rows[-1:], ("kernel", "params", "m"))


def report() -> int:
    """Each GPU's stored re-timings beside the shares its records hold now; 1 where one is more than
    tables.RETIME_AGREE % of its re-timed share apart."""
    off = 0
    for path in sorted(folders.RECORDS_DIR.glob(f"*/{records.RETIME}.json")):
        print(path.parent.name)
        for r in records.read_rows(path):
            x = records.lookup_or_none(r["kernel"], r["params"], r["m"], r["n"], r["k"], gpu=r["gpu"])
            gap = abs(x.pct_cublas - r["pct_blocks"]) if x else float("nan")
            off += not (x and tables.retime_gap_pct(x.pct_cublas, r["pct_blocks"]) <= tables.RETIME_AGREE)
            spread = f"{min(r['pairs_pct']):.1f}-{max(r['pairs_pct']):.1f}, " if "pairs_pct" in r else ""
            print(f"  {r['kernel']:24s} {r['m']}: {r['pct_blocks']:6.1f} % in blocks "
                  f"({spread}{r['recorded_at'][:10]}), "
                  f"{x.pct_cublas if x else float('nan'):6.1f} % recorded ({x.method if x else 'none'}"
                  f"{', ' + x.date if x else ''}): {gap:.1f} points apart "
                  f"({tables.retime_gap_pct(x.pct_cublas, r['pct_blocks']) if x else float('nan'):.1f} %)", flush=True)
    return 1 if off else 0


if __name__ == "__main__":
    wanted = sys.argv[1:]
    if wanted == ["--report"]:
        sys.exit(report())
    main([c for c in CASES if not wanted or c[0] in wanted])
