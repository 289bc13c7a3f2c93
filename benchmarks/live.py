"""Seconds each page of the book takes to run live, cold and warm, on a GPU: the promise is 90 s cold, 45 s warm.

    python benchmarks/live.py [--pages intro,ch00_measuring] [--skip-recorded] [--timeout 600]
    python benchmarks/live.py --report   # no GPU: every GPU's rows against the budget; 1 if one is over or stale

Each page with code, in the order of _toc.yml, runs twice from its .md (as tests/test_chapters.py runs it), each time
in a fresh kernel: cold, with the compile caches in a new empty folder (a reader's first visit: NVRTC compiles every
kernel), then warm, with the caches the cold run filled. A run's seconds go from its first cell to its last; the
kernel's start-up is apart. When the package leaves its ledger (GEMM_LAB_LEDGER) after the cold run, the row keeps
its compile seconds and work. One row per page goes to records/<gpu>/live.json as soon as the page is done, keyed by
the hash of the page's code cells.
"""
from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gemm_lab import compiler, device, folders, liverun, records
from gemm_lab.catalog import ROOT
from gemm_lab.pages import book_pages

KEY = ("page",)  # one row per page in records/<gpu>/live.json (`records.LIVE`)
COLD_BUDGET_S, WARM_BUDGET_S = liverun.BUDGET_S, liverun.WARM_BUDGET_S
SLOWEST = 3  # cells named per run
LEDGER_ENV = liverun.LEDGER_ENV


@dataclass
class Run:
    """One execution of a page in a fresh kernel."""

    startup_s: float  # starting the kernel, until it answers
    seconds: float  # the first cell sent to the last cell's reply
    slowest: list[dict[str, Any]]  # {cell, source, seconds}, slowest first
    errors: list[str]  # "ename: evalue"


def page_path(page: str) -> Path:
    return ROOT / "book" / f"{page}.md"


def source_sha256(page: str) -> str:
    """sha256 of what a live run executes: the page's code cells, in order (an edit of its prose keeps its time)."""
    cells = [c.source for c in notebook(page).cells if c.cell_type == "code"]
    return hashlib.sha256("\n\0\n".join(cells).encode()).hexdigest()


def fresh(row: dict[str, Any]) -> bool:
    """Whether a row was measured from its page's code as it is now."""
    return page_path(row["page"]).exists() and row["source_sha256"] == source_sha256(row["page"])


def notebook(page: str) -> Any:
    import jupytext

    return jupytext.read(page_path(page))


def has_code(nb: Any) -> bool:
    return any(c.cell_type == "code" and c.source.strip() for c in nb.cells)


def live_env(cache: Path, ledger: Path) -> dict[str, str]:
    """The kernel's environment for a live run: this checkout's gemm_lab, figures off screen, the compile caches in
    `cache` (CuPy's too: a reader's first visit finds it empty as well) and the package's ledger at `ledger`."""
    env = {k: v for k, v in os.environ.items() if k != device.REPLAY_ENV}
    env.update(MPLBACKEND="Agg", PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
               CUPY_CACHE_DIR=str(cache / "cupy"), **{compiler.CACHE_ENV: str(cache), LEDGER_ENV: str(ledger)})
    return env


def execute(nb: Any, env: dict[str, str], timeout: int) -> Run:
    """Run every cell of `nb` (in place) in a fresh kernel with this environment, from the book/ folder. A failing
    cell ends the run, as it fails the book's build; its error, a timeout or a dead kernel go into `errors`."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellControlSignal, CellExecutionError, DeadKernelError

    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", record_timing=True,
                            resources={"metadata": {"path": str(ROOT / "book")}})
    started = time.perf_counter()
    stopped: list[str] = []
    with client.setup_kernel(env=env):
        ready = time.perf_counter()
        try:
            for index, cell in enumerate(nb.cells):
                client.execute_cell(cell, index)
        except (CellControlSignal, DeadKernelError) as err:
            if not isinstance(err, CellExecutionError):  # a cell's own error is in its outputs
                stopped.append(f"{type(err).__name__}: " + str(err).strip().partition("\n")[0])
        done = time.perf_counter()
    return Run(startup_s=ready - started, seconds=done - ready, slowest=slowest_cells(nb), errors=errors(nb) + stopped)


def slowest_cells(nb: Any, count: int = SLOWEST) -> list[dict[str, Any]]:
    """The `count` code cells that took longest, by the kernel's timestamps (nbclient's `record_timing`)."""
    timed = []
    for index, cell in enumerate(nb.cells):
        stamps = cell.metadata.get("execution", {})
        if cell.cell_type == "code" and "iopub.execute_input" in stamps and "shell.execute_reply" in stamps:
            seconds = _when(stamps["shell.execute_reply"]) - _when(stamps["iopub.execute_input"])
            timed.append({"cell": index, "source": first_line(cell.source), "seconds": round(seconds, 2)})
    return sorted(timed, key=lambda x: -x["seconds"])[:count]


def first_line(source: str) -> str:
    """What a cell does, in one line: its first line that is not a comment, up to 80 characters."""
    lines = [line.strip() for line in source.splitlines() if line.strip()]
    return next((line for line in lines if not line.startswith("#")), "")[:80]


def errors(nb: Any) -> list[str]:
    return [f"{o['ename']}: {o['evalue']}" for c in nb.cells if c.cell_type == "code"
            for o in c.get("outputs", []) if o.get("output_type") == "error"]


def _when(stamp: str) -> float:
    return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def ledger_fields(path: Path) -> dict[str, Any]:
    """The compile seconds (in the kernel, and the wall time of the page's background compile) and the work of the
    package's ledger of a run, where it left one."""
    ledger = json.loads(path.read_text()) if path.exists() else {}
    return {k: ledger[k] for k in ("compile_s", "background_compile_s", "work") if k in ledger}


def measure(page: str, timeout: int) -> dict[str, Any]:
    """The page's row: a cold run, then a warm one on the caches it filled. The warm run keeps a ledger too (unread),
    so that both runs do the same work."""
    gpu, sha = device.gpu(), source_sha256(page)
    with tempfile.TemporaryDirectory(prefix=f"live-{page}-") as tmp:
        cache, ledger = Path(tmp) / "cache", Path(tmp) / "cold.json"
        cold = execute(notebook(page), live_env(cache, ledger), timeout)
        warm = execute(notebook(page), live_env(cache, Path(tmp) / "warm.json"), timeout)
        from_ledger = ledger_fields(ledger)
    return {"page": page, "source_sha256": sha, "gpu": gpu.name, "recorded_at": records.utc_now(),
            "versions": records.versions(gpu), "cold_s": round(cold.seconds, 2), "warm_s": round(warm.seconds, 2),
            "startup_s": round(cold.startup_s, 2), "cold_slowest": cold.slowest, "warm_slowest": warm.slowest,
            "errors": cold.errors + warm.errors, **from_ledger}


def live_file(gpu: str) -> Path:
    return records.gpu_dir(gpu) / f"{records.LIVE}.json"


def recorded_today(gpu: str) -> set[str]:
    """Pages whose row on this GPU was measured from the page as it is now."""
    path = live_file(gpu)
    rows = records.read_rows(path) if path.exists() else []
    return {r["page"] for r in rows if fresh(r)}


def main(wanted: list[str], skip_recorded: bool, timeout: int) -> int:
    """Measure the pages (default: every page with code); 1 when a page raised."""
    os.environ.pop(device.REPLAY_ENV, None)  # this script measures live, whatever the shell asks of the book
    if not device.live():
        sys.exit("live.py runs the book's pages live: it needs a CUDA GPU (CuPy and a device)")
    unknown = set(wanted) - set(book_pages())
    if unknown:
        sys.exit(f"not pages of _toc.yml: {', '.join(sorted(unknown))}")
    gpu = device.gpu().name
    done = recorded_today(gpu) if skip_recorded else set()
    failed = False
    for page in [p for p in book_pages() if (not wanted or p in wanted) and p not in done]:
        if not has_code(notebook(page)):
            continue
        row = measure(page, timeout)
        records.upsert(live_file(gpu), [row], KEY)
        failed |= bool(row["errors"])
        top = row["cold_slowest"][0] if row["cold_slowest"] else None
        print(f"{page:28s} cold {row['cold_s']:5.1f} s  warm {row['warm_s']:5.1f} s  start-up {row['startup_s']:.1f} s"
              + (f"  slowest: #{top['cell']} {top['seconds']:.1f} s {top['source']}" if top else "")
              + (f"  {len(row['errors'])} error(s): {row['errors'][0]}" if row["errors"] else ""), flush=True)
    return 1 if failed else 0


def report() -> int:
    """Every GPU's rows beside the budget; 1 where a page ran over it, raised, or changed since it was measured."""
    bad, found = 0, sorted(folders.RECORDS_DIR.glob(f"*/{records.LIVE}.json"))
    if not found:
        print(f"no {records.LIVE}.json in {folders.RECORDS_DIR}: run `python benchmarks/live.py` on a GPU")
    for path in found:
        print(f"{path.parent.name} (cold <= {COLD_BUDGET_S:.0f} s, warm <= {WARM_BUDGET_S:.0f} s; * over budget)")
        for r in records.read_rows(path):
            over_cold, over_warm = r["cold_s"] > COLD_BUDGET_S, r["warm_s"] > WARM_BUDGET_S
            notes = ([] if fresh(r) else [f"stale: the page changed since {r['recorded_at'][:10]}"]) + (
                [f"{len(r['errors'])} error(s): {r['errors'][0]}"] if r["errors"] else [])
            bad += over_cold or over_warm or bool(notes)
            print(f"  {r['page']:28s} cold {r['cold_s']:6.1f} s{'*' if over_cold else ' '}  "
                  f"warm {r['warm_s']:6.1f} s{'*' if over_warm else ' '}  start-up {r['startup_s']:4.1f} s"
                  + (f"  compiling {r['compile_s']:5.1f} s" if "compile_s" in r else "")
                  + "".join(f"  {n}" for n in notes))
    return 1 if bad else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", default="", help="comma-separated page names (default: every page with code)")
    parser.add_argument("--skip-recorded", action="store_true",
                        help="skip pages whose row on this GPU was measured from the page as it is now")
    parser.add_argument("--timeout", type=int, default=600, help="seconds a cell may take")
    parser.add_argument("--report", action="store_true", help="print every GPU's rows against the budget (no GPU)")
    args = parser.parse_args()
    sys.exit(report() if args.report else main(list(filter(None, args.pages.split(","))), args.skip_recorded,
                                                   args.timeout))
