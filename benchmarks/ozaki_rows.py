"""Issue 49, goal 3 on a GPU: the Ozaki default's row and column check, per family, and what it costs.

    python benchmarks/ozaki_rows.py --out rows.json                # families at 4096, times at 4096 and 8192
    python benchmarks/ozaki_rows.py --out rows.json --size 2048 --times 2048

For each family (standard normal, the outlier channel, phi of emulation.PHIS, then emulation.HIDDEN, built to hide
from the estimate's sample) at M = N = K = --size: the moduli the default (MODULI = 0) ran and the estimate's own
choice where the check raised it, the warnings, and the normwise, median, worst-row and worst-column relative errors
of cuBLAS SGEMM and of the default against float64. Then, on standard normal inputs at each of --times, the default's
milliseconds per call with the check and with it left out (`ozaki.hold_lines` made the identity, and no check
queued, in the captured graph either), and the check's own (its kernel and its wait, on a C already computed).
Prints a table and writes it all as JSON to --out.
"""
import argparse
import json
import sys
import warnings
from typing import Any
from unittest import mock

from gemm_lab import catalog, device, run, turns
from gemm_lab.precision import emulation, ozaki, ozaki_pipeline

ERRORS = ("normwise", "median", "worst_row", "worst_col")


def cases() -> list[tuple[str, float | None, str]]:
    """(name, phi, family) of every family measured."""
    return [("normal", None, ""), (emulation.OUTLIER, None, emulation.OUTLIER),
            *((f"phi {phi:g}", phi, "") for phi in emulation.PHIS), *((f, None, f) for f in emulation.HIDDEN)]


def accuracy(size: int, phi: float | None, family: str) -> dict[str, Any]:
    """The default and cuBLAS SGEMM on one family at M = N = K = size."""
    a, b = emulation.inputs(size, size, size, phi, family=family)
    ref = run.reference(a, b)[0]
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        c, report = run.gemm("ozaki", a, b, report=True)
    sgemm = emulation.product("cublas", {}, a, b)
    return {"moduli": report.moduli, "raised_from": report.raised_from, "report": report.as_dict(),
            "warnings": [f"{w.category.__name__}: {w.message}" for w in seen],
            "sgemm": dict(zip(ERRORS, emulation.relative_errors(sgemm, ref))),
            "ozaki": dict(zip(ERRORS, emulation.relative_errors(c, ref)))}


def times(size: int, runs: int) -> dict[str, Any]:
    """Milliseconds per default call on standard normal inputs, with the check and without (a launcher of its own,
    whose captured graph holds no check either), and the check's own (its kernel and its wait, forced to run again)."""
    import cupy

    a, b = emulation.inputs(size, size, size, None)
    inst = catalog.instance("ozaki", None, (size, size, size))
    call = run.launcher(inst, a, b, out=cupy.empty((size, size), cupy.float32))
    with_check = turns.time_ms([call], runs)
    with mock.patch.object(ozaki, "hold_lines", lambda report, check: report), \
            mock.patch.object(ozaki_pipeline.Pipeline, "queue_check", lambda self, copy=True: None):
        bare = run.launcher(inst, a, b, out=cupy.empty((size, size), cupy.float32))
        without = turns.time_ms([bare], runs)

    def check_again() -> None:
        call.lines_of = 0  # the result on the host is not this number's: `check` queues the kernel and waits
        call.check(call.built)

    check = turns.time_ms([check_again], runs)
    return {"moduli": call.report.moduli, "with_check_ms": with_check, "without_check_ms": without,
            "check_ms": check}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="where to write the JSON")
    parser.add_argument("--size", type=int, default=4096, help="M = N = K of the families (default 4096)")
    parser.add_argument("--times", type=int, nargs="*", default=[4096, 8192], help="sizes timed (default 4096 8192)")
    parser.add_argument("--runs", type=int, default=20, help="timed calls per size (default 20)")
    args = parser.parse_args(argv)
    if not device.live():
        sys.exit("ozaki_rows.py runs kernels, and no CUDA GPU is in use (replay mode)")
    found: dict[str, Any] = {"gpu": device.gpu().name, "size": args.size, "families": {}, "times": {}}
    print(f"{'family':<18}{'moduli':>8}{'from':>6}  {'SGEMM: normwise  median  worst row  worst col':<46}"
          f"{'default: normwise  median  worst row  worst col':<48}warnings")
    for name, phi, family in cases():
        x = found["families"][name] = accuracy(args.size, phi, family)
        figures = ["".join(f"{x[side][e]:>10.2e}" for e in ERRORS) for side in ("sgemm", "ozaki")]
        print(f"{name:<18}{x['moduli'] or 'fell back':>8}{x['raised_from'] or '':>6}  {figures[0]:<46}{figures[1]:<48}"
              f"{'; '.join(w.split(':')[0] for w in x['warnings'])}", flush=True)
    for size in args.times:
        t = found["times"][size] = times(size, args.runs)
        print(f"{size}: {t['moduli']} moduli, {t['with_check_ms']:.3f} ms with the check, "
              f"{t['without_check_ms']:.3f} ms without, the check alone {t['check_ms']:.3f} ms", flush=True)
    with open(args.out, "w") as f:
        json.dump(found, f, indent=1)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
