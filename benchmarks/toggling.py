"""Do the bits the tensor cores drop still cost joules? Kernel 14 and cuBLAS TF32 raced on the book's FP32 inputs,
on copies whose A or B was first rounded to TF32 (the 13 low mantissa bits, which the tensor cores never use,
zeroed), and with TMA rounding both as it copies them (`run.launcher`'s round_copies, as cuBLAS does: its C then
compared with cuBLAS's bit for bit, in `details`).

    python benchmarks/toggling.py            # on a GPU: records/<gpu>/toggling.json (about 3 minutes)
    python benchmarks/toggling.py --report   # no GPU: the stored rows

Each case is a race of METHOD (turns of 2 s, NVML's clock and joules per side), after the check against float64 of
the inputs as raced. Chapter 9's lab note on the energy reads it (`precision_tables.toggling_table`).
"""
from __future__ import annotations

import sys
import time
import warnings
from dataclasses import replace

from gemm_lab import catalog, records, run, timing, turns, yardstick
from gemm_lab.lab import plan
from gemm_lab.pages import precision_tables
from gemm_lab.precision import tf32

KERNEL = "wgmma_ws_tf32"
# the records' 2 s turns (the key shares' method), in 4 rounds: nine cases in about 3 minutes
METHOD = replace(turns.LONG_TURNS, name="sustained, 2 s turns, 4 rounds", rounds=4)
TMA_ROUNDS = precision_tables.TMA_ROUNDS  # FP32 inputs, rounded to TF32 by the copies into shared memory
ROUNDED = {"fp32": (), "A as TF32": (0,), "B as TF32": (1,), TMA_ROUNDS: ()}  # operands rounded before the race
CASES = [*((p, size, inputs) for p in ({}, plan.PAIR_ALONG_N) for size in plan.LADDER_SIZES
           for inputs in ("fp32", "A as TF32", TMA_ROUNDS)), ({}, max(plan.LADDER_SIZES), "B as TF32")]


def race(params: dict[str, int], size: int, inputs: str) -> records.Measurement:
    """Kernel 14 at `params` beside cuBLAS TF32 on input sets rounded as `inputs` says, verified first."""
    inst = catalog.instance(KERNEL, params, (size,) * 3)
    sets = [tuple(tf32.to_tf32(x) if i in ROUNDED[inputs] else x for i, x in enumerate((a, b))) + (c,)
            for a, b, c in timing.input_sets(size, size, size)]
    copies = inputs == TMA_ROUNDS
    mine = [run.launcher(inst, a, b, out=c, round_copies=copies) for a, b, c in sets]
    theirs = timing.cublas_launches(sets)
    err = run.measure_error(inst, *sets[0][:2], round_copies=copies)
    if not err <= run.tolerance(size, "tf32"):
        raise timing.VerificationError(f"{inst.describe()} on inputs {inputs}: max relative error {err:.3g}")
    details: dict[str, object] = {"inputs": inputs}
    with warnings.catch_warnings(), yardstick.cublas_math("tf32"):
        warnings.simplefilter("ignore")
        if copies:  # the share of C's elements equal to cuBLAS's bit for bit (both sides write the same C: copy)
            details["bits_as_cublas"] = float((mine[0]().copy() == theirs[0]()).mean())
        kernel_side, cublas_side = turns.race([mine, theirs], method=METHOD)
    return timing.measurement(inst.spec, "tf32", inst.params, inst.shape, kernel_side, cublas_side, err, METHOD,
                              details)


def main() -> None:
    for params, size, inputs in CASES:
        started = time.time()
        x = race(params, size, inputs)
        records.upsert(records.gpu_dir(x.gpu) / f"{records.TOGGLING}.json", [x.to_row()],
                       ("kernel", "params", "m", "details"))
        print(f"{str(params):16s} {size} {inputs:10s}: {x.pct_cublas:6.1f} % of cuBLAS TF32, "
              f"{x.telemetry.get('sm_clock_mhz', 0):,.0f} against {x.cublas_telemetry.get('sm_clock_mhz', 0):,.0f} MHz "
              f"({time.time() - started:.0f} s)", flush=True)


def report() -> None:
    for gpu in records.recorded_gpus():
        for x in precision_tables.toggling_races(gpu):
            print(f"{gpu}: {x.params} {x.m} {x.details['inputs']}: {x.pct_cublas:.1f} % ({x.recorded_at[:10]})")


if __name__ == "__main__":
    report() if sys.argv[1:] == ["--report"] else main()
