"""What a live page measures now, what it reads back from the records instead, and how long that takes.

A reader who runs a chapter on a GPU gets the numbers its main text quotes measured now, in about a minute and a half:
its races (sustained where they are key shares, `turns.reader_method`) and the memory probes. The slow rest, lab notes,
Nsight Compute counters, tile sweeps, accuracy families and the power-cap races, is read back from the records, and
every table and chart of it says "recorded on <GPU>, <date>". One switch measures more: `gl.measure("counters")`,
`gl.measure("all")` or the environment variable GEMM_LAB_MEASURE (a comma list of kinds, or "all").

Each call that could measure goes through `work()`: it asks `measures(kind)`, and notes in the ledger what it did and
what it cost (an estimate from the record it replays, or the seconds it took). A page opened with `page(name)` (the
banner of its first cell) reads its plan (`records/live_plan.json`, written by `benchmarks/live.py --plan` from a
replay run of every page), says what it will measure and about how long it takes, starts compiling its kernels in
the background and shows one progress bar over its live work. With GEMM_LAB_LEDGER set to a path, the ledger is kept
in that file as JSON (`benchmarks/live.py` reads it).
"""
from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from . import device
from .spec import ROOT

MEASURE_ENV = "GEMM_LAB_MEASURE"
LEDGER_ENV = "GEMM_LAB_LEDGER"
PLAN_FILE = ROOT / "records" / "live_plan.json"
BUDGET_S = 90.0  # a page's cold live run, first cell to last
WARM_BUDGET_S = 45.0
# The kinds of work a page does, and whether a live page measures each by default
KINDS = {
    "races": (True, "the races the main text quotes, each verified against float64 first"),
    "probes": (True, "the GPU primer's memory probes and the measured ceilings"),
    "notes": (False, "everything in the lab notes"),
    "counters": (False, "Nsight Compute's hardware counters (minutes, and permissions many readers lack)"),
    "sweeps": (False, "tile grids, autotuning and other many-instance sweeps"),
    "accuracy": (False, "accuracy families against float64"),
    "power": (False, "the power cap's turn-length races"),
}


@dataclass
class Item:
    """One piece of a page's work: its kind, what it is, whether it ran live, its estimated seconds live, and the
    seconds it took (0 when replayed)."""

    kind: str
    label: str
    live: bool
    estimate_s: float
    seconds: float = 0.0
    instances: list[tuple[str, dict[str, int]]] = field(default_factory=list)  # the kernels it compiles
    planned: bool = False  # whether a live run measures it unless the reader asks for more (in replay too)
    cell: int = 0  # the notebook cell that asked for it (IPython's execution count; 0 outside a notebook)


@dataclass
class Session:
    """The page being run (if its banner named it), what the reader asked to measure besides the defaults, whether
    the lab notes have begun, and the ledger of its work."""

    page: str = ""
    asked: set[str] = field(default_factory=set)
    in_notes: bool = False
    ledger: list[Item] = field(default_factory=list)
    seen: set[tuple[str, str]] = field(default_factory=set)  # the work asked for so far (kind, label)
    results: dict[tuple[str, str], Any] = field(default_factory=dict)  # what was measured live, by (kind, label)
    background_compile_s: float = 0.0  # wall seconds the page's kernels took to compile in the background
    bar: Any = None


def _kinds(kinds: Iterable[str], by: str) -> set[str]:
    """`kinds` as a set, each one of KINDS or "all" (`by` names who asked, for the error): a typo would otherwise
    measure nothing more, in silence."""
    unknown = set(kinds) - set(KINDS) - {"all"}
    if unknown:
        raise ValueError(f"{by} takes {', '.join(['all', *KINDS])}, not {', '.join(sorted(map(repr, unknown)))}")
    return set(kinds)


def _kinds_in_env() -> set[str]:
    """The kinds GEMM_LAB_MEASURE asks for: a comma list (spaces allowed), or none."""
    value = os.environ.get(MEASURE_ENV, "")
    kinds = [kind.strip() for kind in value.split(",") if kind.strip()]
    return _kinds(kinds, f"{MEASURE_ENV}={value!r} (a comma list)")


SESSION = Session(asked=_kinds_in_env())  # checked on import: before a page measures anything


def measures(kind: str) -> bool:
    """Live, and this kind of work is measured now. On a book page (`page`), by default the races of its main text and
    the probes, the rest (and anything in the lab notes) when the reader asked for it (`measure`); elsewhere (your
    own notebook, `gemm-lab`) everything."""
    if kind not in KINDS:
        raise ValueError(f"unknown kind of work {kind!r}: one of {', '.join(KINDS)}")
    if not device.live():
        return False
    if not SESSION.page:
        return True
    asked = SESSION.asked
    if "all" in asked or kind in asked:
        return True
    return KINDS[kind][0] and not (SESSION.in_notes and "notes" not in asked)


def measure(*kinds: str) -> None:
    """Measure these kinds of work too, from here on (`"all"`: everything). Says first what that adds to this page."""
    if not kinds:
        raise ValueError(f"gl.measure takes one or more of {', '.join(['all', *KINDS])}: which work to measure live")
    SESSION.asked |= _kinds(kinds, "gl.measure")
    plan = _plan().get(SESSION.page)
    if plan is None:
        print(f"Measuring {', '.join(kinds)} live from here on.")
        return
    extra = sum(x["estimate_s"] for x in plan["work"] if not x["live"] and ("all" in kinds or x["kind"] in kinds))
    print(f"Measuring {', '.join(kinds)} live from here on: about {_scaled(extra):.0f} s more on this page"
          f"{_scale_note()}.")


def lab_notes() -> None:
    """The page's lab notes begin (they end it): from here a live run reads its data back from the records, unless
    the reader asked for the notes (`measure("notes")` or "all")."""
    SESSION.in_notes = True


@dataclass
class Task:
    """What `work` yields: whether to measure now, and the result, which the caller sets after measuring (a result
    already measured in this process comes back set: a page that asks twice measures once)."""

    live: bool
    result: Any = None


@contextlib.contextmanager
def work(kind: str, label: str, estimate_s: float,
         instances: list[tuple[str, dict[str, int]]] | None = None) -> Iterator[Task]:
    """Around one piece of work that may measure (`label` names it: on a book page, a second call of the same label is
    the same work): yields a `Task` saying whether it measures now (`measures(kind)`) and, on a live page, what an
    earlier call measured; then notes it in the ledger with the kernel instances it compiles (a repeat costs nothing)
    and moves the page's progress bar by its estimate."""
    task = Task(measures(kind), SESSION.results.get((kind, label)) if measures(kind) and SESSION.page else None)
    repeat = (kind, label) in SESSION.seen
    SESSION.seen.add((kind, label))
    started = time.perf_counter()
    yield task
    if task.live and task.result is not None and SESSION.page:  # on a page, measured once
        SESSION.results[(kind, label)] = task.result
    live = task.live and not repeat
    estimate_s = 0.0 if repeat else estimate_s
    item = Item(kind, label, live, round(estimate_s, 2), round(time.perf_counter() - started, 2) if live else 0.0,
                [(name, dict(params)) for name, params in instances or ()],
                KINDS[kind][0] and not SESSION.in_notes and not repeat, _cell())
    SESSION.ledger.append(item)
    if live and SESSION.bar is not None:
        SESSION.bar.update(min(_scaled(item.estimate_s), SESSION.bar.total - SESSION.bar.n))
    _write_ledger()


def compiled_in_background(seconds: float) -> None:
    """The page's kernels took `seconds` to compile in the background (`warmup.compile_all`), from its opening."""
    SESSION.background_compile_s = round(seconds, 2)
    _write_ledger()


def page(name: str) -> str:
    """Open a page: what a live run of it measures, replays and costs (from its plan), and a progress bar over its live
    work. Returns the words for the banner ("" in replay); the banner starts compiling `to_compile()`."""
    SESSION.page, SESSION.in_notes = name, False  # a page opened again starts in its main text
    plan = _plan().get(name)
    if not device.live() or plan is None:
        return ""
    live = [x for x in plan["work"] if x["live"] or _asked(x["kind"])]
    rest = [x for x in plan["work"] if x not in live]
    seconds = _scaled(sum(x["estimate_s"] for x in live)) + plan["compile_s"] + plan.get("page_s", 0.0)
    _start_bar(seconds)
    kinds = sorted({x["kind"] for x in rest})
    return (f"This page measures {len(live)} result{'s' * (len(live) != 1)} now, in about {seconds:.0f} s "
            f"(compiling its kernels first, about {plan['compile_s']:.0f} s of it){_scale_note()}. "
            + (f"It reads {len(rest)} more back from the records ({', '.join(kinds)}), each labelled so; "
               f"gl.measure(\"all\") measures them too, about {_scaled(sum(x['estimate_s'] for x in rest)):.0f} s "
               "more." if rest else ""))


def ledger() -> dict[str, Any]:
    """The session's work so far, as `benchmarks/live.py` and the budget test read it."""
    from . import compiler

    return {"page": SESSION.page, "compile_s": round(compiler.nvrtc_seconds, 2),
            "background_compile_s": SESSION.background_compile_s, "work": [asdict(x) for x in SESSION.ledger]}


def planned(entry: dict[str, Any]) -> float:
    """A page's planned cold live seconds: its live work's estimates, its compiles and its own (start, imports,
    drawing)."""
    return sum(x["estimate_s"] for x in entry["work"] if x["live"]) + entry["compile_s"] + entry.get("page_s", 0.0)


def _cell() -> int:
    try:
        from IPython import get_ipython
    except ImportError:
        return 0
    shell = get_ipython()
    return int(getattr(shell, "execution_count", 0) or 0)


def _asked(kind: str) -> bool:
    return "all" in SESSION.asked or kind in SESSION.asked


def _plan() -> dict[str, Any]:
    try:
        return json.loads(PLAN_FILE.read_text())["pages"]
    except (OSError, ValueError, KeyError):
        return {}


def _scale() -> float:
    """The live GPU's time for the work the plan times on the replay GPU, by their FP32 peaks (an estimate: compiles
    and the page's own cost are the host's, and stay as planned)."""
    if not device.live():
        return 1.0
    recorded = json.loads(PLAN_FILE.read_text()).get("peak_gflops") if PLAN_FILE.exists() else None
    return recorded / device.gpu().peak_gflops if recorded else 1.0


def _scaled(seconds: float) -> float:
    return seconds * _scale()


def _scale_note() -> str:
    scale = _scale()
    if abs(scale - 1) < 0.15:
        return ""
    return (f"; an estimate, scaled from the recording GPU by FP32 peak ({scale:.1f} times its time): "
            "other GPUs differ in more than peak")


def _write_ledger() -> None:
    path = os.environ.get(LEDGER_ENV)
    if path:
        Path(path).write_text(json.dumps(ledger()))


def to_compile() -> list[tuple[str, dict[str, int], str]]:
    """The open page's kernels that this GPU runs, as (kernel, parameters, arch): what its live work compiles."""
    from . import catalog

    plan = _plan().get(SESSION.page) if device.live() else None
    specs = [(catalog.get(name), params) for name, params in (plan or {}).get("instances", [])]
    return [(spec.name, params, spec.arch or device.gpu().arch) for spec, params in specs if device.runs_here(spec)]


def _start_bar(seconds: float) -> None:
    from tqdm.auto import tqdm

    SESSION.bar = tqdm(total=round(seconds, 1), desc=f"{SESSION.page} live",
                       bar_format="{desc}: {percentage:3.0f}%|{bar}| {n:.0f}/{total:.0f} s of work, ETA {remaining}",
                       leave=True)
