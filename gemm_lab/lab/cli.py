"""`gemm-lab`: benchmark, sweep, record and sanitize kernels, and check the recorded data."""
from __future__ import annotations

import argparse
import sys

from .. import catalog, device, folders, records, timing, turns, yardstick
from ..models import hardware, memory
from ..pages import grids, tables
from ..precision import emulation, int8
from . import baselines, freshness, plan, power, sanitize, sweeps

# What `record` measures, in order.
PARTS = ("device", "memory", "headline", "sweeps", "autotune", "claims", "tensor_cores", "ozaki", "power", "counters")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gemm-lab", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("bench", help="verify and time kernels beside cuBLAS (replays records without a GPU)")
    p.add_argument("kernels", nargs="*", default=list(plan.HEADLINE), help="kernel names (default: %(default)s)")
    size = p.add_mutually_exclusive_group()  # one shape: neither may silently win over the other
    size.add_argument("--size", type=int, default=4096, help="M = N = K (default: %(default)s)")
    size.add_argument("--shape", type=int, nargs=3, metavar=("M", "N", "K"), help="a non-square shape")
    p.add_argument("--param", action="append", default=[], metavar="NAME=VALUE", help="template parameter")
    p.add_argument("--save", action="store_true", help="add the results to records/")

    p = sub.add_parser("sweep", help="time every legal parameter combination of a kernel (resumable)")
    p.add_argument("kernel", choices=sorted(catalog.KERNELS))
    p.add_argument("--size", type=int, default=grids.EXPLORER_SIZE, help="M = N = K (default: %(default)s)")
    p.add_argument("--restart", action="store_true", help="re-measure combinations already recorded")
    p.add_argument("--prune", action="store_true",
                   help="skip instances the offline ptxas report shows spilling or holding too few warps")

    p = sub.add_parser("record", help="re-record the book's data on this GPU (see gemm_lab/lab/plan.py)")
    p.add_argument("--only", choices=PARTS, action="append",
                   help="record only these parts (repeatable)")
    p.add_argument("--fresh", action="store_true",
                   help="re-measure cases already recorded from the current kernel sources")
    p.add_argument("--chapter", action="append", metavar="PAGE",
                   help="only the races of kernels this chapter introduces, e.g. ch10_ozaki (repeatable)")

    p = sub.add_parser("sanitize", help="run compute-sanitizer's four tools over kernels on tail shapes, into records/")
    p.add_argument("kernels", nargs="*", help="kernel names (default: every catalogued kernel)")
    p.add_argument("--tool", choices=sanitize.TOOLS, action="append", help="only these tools (repeatable)")
    p.add_argument("--fresh", action="store_true",
                   help="re-run tools whose clean verdict on the current kernel build is recorded")

    p = sub.add_parser("records", help="summarise the recorded data")
    p.add_argument("--check", action="store_true", help="fail if any record is malformed or stale")
    p.add_argument("--pin", action="store_true",
                   help="pin the code each recorded build compiles to (records/builds.json; offline, no GPU)")
    p.add_argument("--workers", type=_positive, help="processes compiling for --pin (default: one per core but one)")

    args = parser.parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except (ValueError, LookupError, RuntimeError) as err:
        print(f"gemm-lab {args.command}: {err}", file=sys.stderr)
        return 2


def _bench(args: argparse.Namespace) -> int:
    baselines = [name for name in args.kernels if name in records.CUBLAS_KERNELS.values()]
    if baselines:
        raise ValueError(f"{', '.join(baselines)}: cuBLAS is no kernel to bench; every bench times it already, beside "
                         "its kernels and in their precision, in rows of its own: name kernels of the catalog, or none "
                         f"for the default, {' '.join(plan.HEADLINE)}")
    specs = [catalog.get(name) for name in args.kernels]
    params = _params(args.param, specs)
    shape = tuple(args.shape) if args.shape else args.size
    # cuBLAS beside them
    maths = dict.fromkeys(yardstick.BASELINE[spec.precision] for spec in specs)
    ms = [timing.cublas(shape, math) for math in maths]
    for spec in specs:
        ms.append(timing.bench(spec, shape, {k: v for k, v in params.items() if k in spec.choices}))
    print(tables.measurements_table(ms))
    if args.save:
        _require_live("--save")
        records.save(ms)
        _pin()
    return 0


def _params(texts: list[str], specs: list[catalog.KernelSpec]) -> dict[str, int]:
    """The --param values; each kernel takes those it has, and a name none of them has is refused (a typo would
    time the defaults in silence), and so is a name given twice (the last would win in silence)."""
    pairs = [_parse_param(x) for x in texts]
    repeated = [f"{name}={value}" for name, value in pairs if [n for n, _ in pairs].count(name) > 1]
    if repeated:
        raise ValueError(f"--param {', '.join(repeated)}: give each parameter once")
    params = dict(pairs)
    unknown = sorted(set(params) - {p for spec in specs for p in spec.choices})
    if unknown:
        names = ", ".join(dict.fromkeys(p for spec in specs for p in spec.param_names))
        one = len(specs) == 1
        whose = f"{specs[0].name} has no" if one else f"none of {', '.join(s.name for s in specs)} has a"
        raise ValueError(f"--param: {whose} parameter {', '.join(unknown)}; {'its' if one else 'their'} parameters "
                         f"are {names}")
    return params


def _parse_param(text: str) -> tuple[str, int]:
    name, _, value = text.partition("=")
    if not value.lstrip("-").isdigit():
        raise ValueError(f"--param {text!r}: expected NAME=INTEGER, e.g. BM=64")
    return name, int(value)


def _positive(text: str) -> int:
    """argparse's type for a count: a whole number of at least 1."""
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of at least 1, not {text!r}")
    return int(text)


def _sweep(args: argparse.Namespace) -> int:
    _require_live("sweep")
    ms = sweeps.sweep(args.kernel, args.size, resume=not args.restart, prune=args.prune)
    best = sorted(ms, key=lambda x: -x.gflops)[:10]
    print(tables.measurements_table(best))
    _pin()
    return 0


def _record(args: argparse.Namespace) -> int:
    _require_live("record")
    parts = args.only or PARTS
    if "device" in parts:
        hardware.save_ceilings(hardware.measured_ceilings())
        records.save(timing.cublas(size, math) for size in (*plan.SIZES, plan.ODD_SHAPE)
                     for math in plan.CUBLAS_PRECISIONS
                     if args.fresh or not _timed_today(records.lookup_or_none(
                         records.CUBLAS_KERNELS[math], {}, *timing.shape_of(size), gpu=device.gpu().name)))
    gpu = device.gpu().name
    if "memory" in parts:
        memory.save(memory.measure())
    if "headline" in parts:
        cases = _runnable(_of_chapters(plan.headline_cases() + list(plan.EXTRA), args.chapter))
        todo = [c for c in cases if args.fresh or not _recorded(*c, gpu)]
        for method, desc in ((turns.SUSTAINED, "headline"), (turns.LONG_TURNS, "key shares, 2 s turns")):
            timing.bench_all([c for c in todo if plan.method_for(*c) is method], desc=desc, save=True, method=method)
    if "sweeps" in parts:
        for name, choices in _runnable(list(grids.SWEEPS.items())):
            sweeps.sweep(name, grids.EXPLORER_SIZE, choices, resume=not args.fresh)
    if "autotune" in parts:
        for name, sizes in plan.AUTOTUNE.items():
            found = [sweeps.sweep(name, size, plan.AUTOTUNE_SPACE.get(name), resume=not args.fresh, prune=True)
                     for size in sizes]
            size, top = plan.AUTOTUNE_CONFIRM
            best = sorted(found[-1], key=lambda x: -x.gflops)[:top]
            todo = [(name, x.params, size) for x in best if args.fresh or not _recorded(name, x.params, size, gpu)]
            timing.bench_all(todo, desc=f"best of {name} at {size}", save=True)
    if "claims" in parts:
        todo = [c for c in _of_chapters(plan.claim_cases(), args.chapter) if args.fresh or not _recorded(*c, gpu)]
        timing.bench_all(todo, desc="published claims", save=True)
        for size in plan.CUBLAS_WAYS_SIZES:
            baselines.save(baselines.measure(size))
    if "tensor_cores" in parts:
        # chapter 8b's figure plots these races' errors, never their speed: short races, and any race kept; except
        # the cases a page quotes (K = 1024 is the headline's size), which the headline and device parts race, sustained
        sized = {timing.shape_of(size) for size in plan.SIZES}
        records.save(timing.cublas(shape, math, method=turns.SHORT) for shape in plan.ERROR_VS_K if shape not in sized
                     for math in plan.CUBLAS_PRECISIONS if args.fresh or records.lookup_or_none(
                         records.CUBLAS_KERNELS[math], {}, *shape, gpu=gpu) is None)
        quoted = plan.quoted_keys()
        cases = _runnable(plan.error_vs_k_cases())
        todo = [c for c in cases
                if plan.case_key(*c) not in quoted and (args.fresh or not _recorded(*c, gpu, sustained=False))]
        timing.bench_all(todo, desc="error vs K", save=True, method=turns.SHORT)
        timing.bench_all([c for c in cases if plan.case_key(*c) in quoted and not _recorded(*c, gpu)],
                         desc="error vs K, quoted", save=True)
    if "ozaki" in parts and catalog.unsupported("ozaki", device.gpu().cc) is None:
        for size in plan.INT8_SIZES:
            x = records.lookup_or_none(int8.PROBE.name, int8.full_params(), *timing.shape_of(size), gpu=gpu)
            if args.fresh or x is None or x.build_sha256 != int8.PROBE.build_sha256() or not plan.quotable(x):
                records.save([int8.bench(size, method=plan.method_for(int8.PROBE.name, None, size))])
        emulation.record_accuracy()
        emulation.record_stages()
    if "power" in parts and catalog.unsupported(power.CASES[0][0], device.gpu().cc) is None:
        power.sweep()
    if "counters" in parts:
        for size, cases, metrics in ((grids.COUNTER_SIZE, plan.COUNTERS + plan.COUNTED_PARTS, ()),
                                     (plan.ENERGY_SIZE, plan.ENERGY_COUNTERS, ()),
                                     *((size, plan.STRIDE_COUNTERS, hardware.WAVEFRONT_METRICS)
                                       for size in plan.STRIDE_SIZES)):
            for name, p in cases:
                spec = catalog.get(name) if name not in records.CUBLAS_KERNELS.values() else None
                if spec and catalog.unsupported(spec, device.gpu().cc):
                    continue
                row = hardware.recorded_counters(name, spec.full_params(p) if spec else {}, (size,) * 3, gpu)
                wanted = hardware.metrics_for(name) + metrics
                if args.fresh or row is None or row.get("build_sha256") != (spec.build_sha256() if spec else "") \
                        or not set(wanted) <= set(row["metrics"]):
                    hardware.save_counters([hardware.counters(name, (size,) * 3, p, wanted, fallback=False)])
    if not args.only:
        dropped = freshness.drop_stale(gpu)
        print(f"dropped {dropped} measurement(s) of older kernel sources that the plan no longer asks for")
    print(f"recorded on {gpu} into {records.gpu_dir(gpu)}")
    _pin()
    return 0


def _runnable(cases: list[tuple]) -> list[tuple]:
    """The cases (kernel name first) whose kernel this GPU can run; says once per kernel why the others are skipped."""
    runnable, skipped = [], set()
    for case in cases:
        why = catalog.unsupported(case[0], device.gpu().cc)
        if why is None:
            runnable.append(case)
        elif case[0] not in skipped:
            skipped.add(case[0])
            print(f"skipping {case[0]}: {why}")
    return runnable


def _recorded(name: str, params: dict | None, size: int | tuple[int, int, int], gpu: str,
              sustained: bool = True) -> bool:
    """Is this case recorded on this GPU from the current kernel source (with its headers), in a race as
    `gemm-lab record` times it today (`plan.current`), or in any race, without `sustained`?"""
    spec = catalog.get(name)
    try:
        x = records.lookup(name, spec.full_params(params), *timing.shape_of(size), gpu=gpu)
    except LookupError:
        return False
    return x.build_sha256 == spec.build_sha256() and (plan.current(x) or not sustained)


def _timed_today(x: records.Measurement | None) -> bool:
    """Is this record of cuBLAS alone from today's sustained race (its turns each under one pair of events)?"""
    return x is not None and x.method == turns.SUSTAINED.name and x.timed_per == turns.TIMED_PER


def _of_chapters(cases: list[tuple], chapters: list[str] | None) -> list[tuple]:
    """The cases (kernel name first) of kernels that these chapters introduce; all of them without `chapters`."""
    if chapters:
        unknown = set(chapters) - {spec.chapter for spec in catalog.KERNELS.values()}
        if unknown:
            raise ValueError(f"--chapter {', '.join(sorted(unknown))}: no kernel is introduced there; chapters with "
                             f"kernels: {', '.join(sorted({s.chapter for s in catalog.KERNELS.values()}))}")
    return [c for c in cases if not chapters or catalog.get(c[0]).chapter in chapters]


def _sanitize(args: argparse.Namespace) -> int:
    runs = sanitize.sanitize(args.kernels, args.tool or sanitize.TOOLS, fresh=args.fresh)
    print(sanitize.summary(runs))
    print(f"recorded in {records.gpu_dir(device.gpu().name) / f'{records.SANITIZER}.json'}")
    _pin()
    return 1 if any(r.errors for r in runs) else 0


def _records(args: argparse.Namespace) -> int:
    if args.workers is not None and not args.pin:
        raise ValueError(f"--workers {args.workers} counts the processes compiling for --pin: give --pin too, or "
                         "leave --workers out")
    if args.pin:
        _pin(args.workers)
    if args.check:
        problems = freshness.problems() + plan.unsustained()
        for problem in problems:
            print(problem, file=sys.stderr)
        print(f"records --check: {len(problems)} problem(s)")
        return 1 if problems else 0
    if args.pin:
        return 0
    for folder in sorted(folders.RECORDS_DIR.iterdir()):
        if folder.is_dir():
            files = sorted(folder.glob("*.json"))
            print(f"{folder.name}: " + ", ".join(f"{f.stem} ({len(records.read_rows(f))})" for f in files))
    return 0


def _pin(workers: int | None = None) -> None:
    """Pin the code of what was recorded (every command that records does), so that `records --check` still finds
    the records fresh after a refactor of their kernels; rows whose code compiles unchanged take today's hashes."""
    adopted = freshness.adopt()
    if adopted:
        print(f"{adopted} row(s) of edited kernels compile to the code they ran: they now carry today's hashes")
    pinned, new = freshness.pin(workers=workers)
    print(f"pinned the code of {pinned} recorded instance(s) ({new} new) in "
          f"{folders.RECORDS_DIR / freshness.BUILDS}.json")


def _require_live(what: str) -> None:
    if not device.live():
        raise RuntimeError(f"{what} measures on a GPU, and none is in use (replay mode)")


COMMANDS = {"bench": _bench, "sweep": _sweep, "record": _record, "sanitize": _sanitize, "records": _records}

if __name__ == "__main__":
    sys.exit(main())
