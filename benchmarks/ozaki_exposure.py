"""Issue 49, goal 2 on a GPU: what each stage outside the INT8 products costs inside the Ozaki default's steady call.

    python benchmarks/ozaki_exposure.py --out exposure.json              # M = N = K = 4096 and 8192
    python benchmarks/ozaki_exposure.py --out exposure.json --sizes 8192

`ozaki_stages.json` times each stage alone; in a call the estimate runs beside the split, so a stage's own time is not
what it adds. Here the steady call (the captured graph a third call alike replays) is re-captured with one stage's
kernels made no-ops, their buffers keeping the last real call's values, so the verdict and the products stay the
same (each row says which number of moduli ran and whether any call escaped). Each variant runs back to back for
BLOCK_S after LEAD_S untimed, in mirrored blocks beside the whole call; what a stage costs the call is the call's time
less that variant's. cuBLAS SGEMM, the products alone, the split alone and the reconstruction alone are timed the
same way. Prints one line per variant and writes them all as JSON to --out (about 3 min for both sizes).
"""
import argparse
import json
import time
from typing import Any

import retime  # benchmarks/retime.py, beside this file

from gemm_lab import catalog, timing, yardstick
from gemm_lab.precision import ozaki_pipeline

LEAD_S, BLOCK_S = 0.5, 2.0
VARIANTS = {  # the kernels each variant leaves out (names before any template argument)
    "no_estimate": ("ozaki_extremes", "ozaki_gather_b", "ozaki_sample", "ozaki_decide"),
    "no_sample": ("ozaki_sample",),
    "no_split": ("ozaki_exponents", "ozaki_residues_a", "ozaki_residues_b"),
    "no_residues_b": ("ozaki_residues_b",),
    "no_rebuild": ("ozaki_reconstruct",),
    "no_equilibrate": ("ozaki_equilibrate", "ozaki_rescale_a", "ozaki_rescale_b"),
}


def block_ms(launches: list, seconds: float = BLOCK_S) -> float:
    """Milliseconds per launch over `seconds` of back-to-back launches (retime.py's blocks), after LEAD_S untimed."""
    lead_until, count = time.perf_counter() + LEAD_S, 0
    while time.perf_counter() < lead_until:
        launches[count % len(launches)]()
        count += 1
    return retime.block_ms(launches, seconds, retime.block_ms(launches, 0.0, 1.0))


def noop(*args: Any, **kwargs: Any) -> None:
    return None


def steady(pipes: list[ozaki_pipeline.Pipeline]) -> None:
    """Run each pipeline to its captured call, then keep its kernels (the products' instances only exist by then)."""
    for p in pipes:
        for _ in range(3):
            p()
        p.settle(True)
        p.all_kernels, p.all_instances = dict(p.kernels), dict(p._instances)


def recapture(pipes: list[ozaki_pipeline.Pipeline], left_out: tuple[str, ...]) -> list[tuple[int, int, str]]:
    """Capture each pipeline's steady call again with `left_out`'s kernels as no-ops: (moduli, escapes, fallback)."""
    for p in pipes:
        p.settle(True)
        p.kernels = {k: noop if k in left_out else f for k, f in p.all_kernels.items()}
        p._instances = {m: c._replace(kernels={k: noop if k.split("<")[0] in left_out else f
                                               for k, f in c.kernels.items()}) for m, c in p.all_instances.items()}
        p.graph, p.steady = None, False
        for _ in range(3):
            p()
        p.settle(True)
    return [(p.report.moduli, p.escapes, p.report.fallback) for p in pipes]


def measure(size: int) -> dict[str, Any]:
    """Each variant against the whole call in mirrored blocks (call, variant, variant, call), so that a clock drifting
    under the power cap weighs on both alike; the call's time is the mean of all its blocks."""
    pipes, cublas = timing.sides(catalog.instance("ozaki", None, (size,) * 3))
    steady(pipes)
    moduli = pipes[0].expected
    row: dict[str, Any] = {"size": size, "moduli": moduli, "costs_ms": {}}
    with yardstick.cublas_math("fp32"):
        row["sgemm_ms"] = block_ms(cublas)
    calls = []
    for name, left_out in VARIANTS.items():
        blocks = {(): [], left_out: []}
        for leave in ((), left_out, left_out, ()):
            row[f"{name}_ran"] = recapture(pipes, leave)
            blocks[leave].append(block_ms(pipes))
        calls += blocks[()]
        row[f"{name}_ms"] = sum(blocks[left_out]) / 2
        row["costs_ms"][name] = sum(blocks[()]) / 2 - row[f"{name}_ms"]
        print(f"{size:>6} {name:<15} {row[f'{name}_ms']:.3f} ms, costs the call {row['costs_ms'][name]:.3f} ms  "
              f"(moduli, escapes, fallback): {row[f'{name}_ran']}", flush=True)
    recapture(pipes, ())
    for part in ("multiply", "split", "rebuild"):
        row[f"{part}_alone_ms"] = block_ms([lambda p=p, f=part: getattr(p, f)(moduli) for p in pipes])
    row["call_ms"] = sum(calls) / len(calls)
    row["share_pct"] = 100 * row["sgemm_ms"] / row["call_ms"]
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192])
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    rows = []
    for size in args.sizes:
        rows.append(measure(size))
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)
        print(json.dumps({k: v for k, v in rows[-1].items() if not k.endswith("_ran")}), flush=True)


if __name__ == "__main__":
    main()
