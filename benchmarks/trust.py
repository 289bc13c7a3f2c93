"""Issue #11's checks on a GPU in one go: the fuzz tests, compute-sanitizer over every kernel, `records --check`.

    python benchmarks/trust.py                  # all three; exit status 0 only when all are clean
    python benchmarks/trust.py sanitize naive   # one part (fuzz, sanitize [kernels...] or check)

The parts are `python -m pytest tests/test_fuzz.py`, `gemm-lab sanitize` and `gemm-lab records --check`.
`gemm-lab sanitize` keeps each verdict in records/<gpu>/sanitizer.json as it comes and skips the clean ones
already recorded for the current kernel builds, so a run cut short resumes where it stopped.
"""
import subprocess
import sys
import time

from gemm_lab import catalog, device
from gemm_lab.lab import cli


def fuzz() -> int:
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_fuzz.py"],
                          cwd=catalog.ROOT, check=False).returncode


PARTS = {"fuzz": fuzz, "sanitize": lambda *kernels: cli.main(["sanitize", *kernels]),
         "check": lambda: cli.main(["records", "--check"])}

if __name__ == "__main__":
    if not device.live():
        sys.exit("trust.py runs kernels, and no CUDA GPU is in use (replay mode)")
    part, args = (sys.argv[1], sys.argv[2:]) if len(sys.argv) > 1 else (None, [])
    if part and part not in PARTS:
        sys.exit(f"unknown part {part!r}; the parts are {', '.join(PARTS)}")
    outcome = {}
    for name in [part] if part else PARTS:
        start = time.perf_counter()
        outcome[name] = (PARTS[name](*args), time.perf_counter() - start)
    print(f"\nissue #11 on {device.gpu().name}:")
    for name, (status, seconds) in outcome.items():
        print(f"  {name:<9}{'clean' if status == 0 else f'FAILED (exit status {status})':<28}{seconds:7.0f} s")
    sys.exit(max(status for status, _ in outcome.values()))
