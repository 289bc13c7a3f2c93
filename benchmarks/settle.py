"""How long a side of a race takes to reach its own clock after the other side's turn, on a GPU at its power cap.

    python benchmarks/settle.py            # kernel 14 TF32, 3xTF32, the Ozaki scheme and kernel 15 beside cuBLAS

Each case alternates blocks of BLOCK_S of back-to-back launches, kernel then cuBLAS, BLOCKS times each, every launch
between CUDA events. For each block after the first pair it prints the median launch time in windows after the switch,
as a share of that block's settled time (the median of its last SETTLED_S), and the share of cuBLAS each window gives.
A turn shorter than the time the ratio takes to reach 100 % measures a mix of both sides' clocks: this sizes
`turns.SUSTAINED.turn_settle_ms`. Writes records/<gpu>/settle.json.
"""
from __future__ import annotations

import statistics
import sys

from gemm_lab import device, records

sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
import retime  # noqa: E402  (the same launches as the re-timing)

BLOCK_S, BLOCKS, SETTLED_S = 1.5, 3, 0.5
WINDOWS_MS = (0, 25, 50, 100, 200, 400, 700, 1000)
CASES = [("ozaki", 8192), ("wgmma_ws_tf32", 8192), ("wgmma_ws_3xtf32", 4096), ("int8_wgmma_ws", 4096)]


def block(launches: list, seconds: float, each_ms: float) -> list[tuple[float, float]]:
    """(start ms since the block began, duration ms) of each launch of a block lasting about `seconds`."""
    import cupy

    pairs = [(cupy.cuda.Event(), cupy.cuda.Event()) for _ in range(max(3, int(seconds * 1e3 / each_ms)))]
    for i, (s, e) in enumerate(pairs):
        s.record()
        launches[i % len(launches)]()
        e.record()
    pairs[-1][1].synchronize()
    t0 = pairs[0][0]
    return [(cupy.cuda.get_elapsed_time(t0, s), cupy.cuda.get_elapsed_time(s, e)) for s, e in pairs]


def windows(launches: list[tuple[float, float]]) -> list[float]:
    """Median launch time in each window after the block began."""
    end = launches[-1][0]
    edges = [w for w in WINDOWS_MS if w < end] + [end + 1]
    out = []
    for lo, hi in zip(edges, edges[1:]):
        inside = [d for t, d in launches if lo <= t < hi]
        out.append(statistics.median(inside) if inside else float("nan"))
    return out


def case(kernel: str, size: int) -> dict:
    mine, theirs = retime.sides(kernel, size)
    with retime.quietly_beside(kernel):
        each = [retime.block_ms(side, 0.2, 1.0) for side in (mine, theirs)]
        blocks = [[], []]
        for _ in range(BLOCKS):
            for who in (0, 1):
                blocks[who].append(block((mine, theirs)[who], BLOCK_S, each[who]))
    rows = []
    for i in range(1, BLOCKS):  # the first pair met a GPU that had not been loaded
        w = [windows(blocks[who][i]) for who in (0, 1)]
        settled = [statistics.median(d for t, d in blocks[who][i] if t >= blocks[who][i][-1][0] - SETTLED_S * 1e3)
                   for who in (0, 1)]
        rows.append({"kernel_rel": [round(100 * x / settled[0], 1) for x in w[0]],
                     "cublas_rel": [round(100 * x / settled[1], 1) for x in w[1]],
                     "pct_by_window": [round(100 * c / k, 1) for k, c in zip(w[0], w[1])],
                     "pct_settled": round(100 * settled[1] / settled[0], 1)})
    return {"kernel": kernel, "m": size, "windows_ms": list(WINDOWS_MS), "block_s": BLOCK_S, "blocks": rows,
            "gpu": device.gpu().name, "recorded_at": records.utc_now()}


def main(cases: list[tuple[str, int]]) -> None:
    out = []
    for kernel, size in cases:
        out.append(case(kernel, size))
        print(f"{kernel} {size}: windows from {WINDOWS_MS} ms after the switch")
        for b in out[-1]["blocks"]:
            print("  kernel, % of its settled time:", b["kernel_rel"])
            print("  cuBLAS, % of its settled time:", b["cublas_rel"])
            print("  share of cuBLAS by window:    ", b["pct_by_window"], "settled:", b["pct_settled"], flush=True)
    records.upsert(records.gpu_dir(device.gpu().name) / "settle.json", out, ("kernel", "m"))


if __name__ == "__main__":
    wanted = sys.argv[1:]
    main([c for c in CASES if not wanted or c[0] in wanted])
