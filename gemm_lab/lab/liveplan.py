"""Each page's live plan: what a live run of it measures now, what it reads back from the records, and what that costs,
written to `records/live_plan.json` for the pages' banners (`liverun.page`).

A page's plan comes from a replay run of it (no GPU) that keeps a ledger of its work (`liverun.work`): each race's
estimate from the record it replays (`timing.race_seconds`), each other piece's from its kind, and the instances its
live races compile, whose NVRTC seconds are measured here, offline, from an empty cache. `python -m
gemm_lab.lab.liveplan` writes the whole file; `tests/test_chapters.py` holds each page to its plan and its budget.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .. import catalog, compiler, device, liverun, records
from ..pages import book_pages
from ..spec import ROOT

BOOK = ROOT / "book"
WORKERS = 4  # compile processes a page's plan assumes (a reader's machine; the H100 and H200 hosts have 16 cores)
PAGE_S = 8.0  # a page's own cost besides its work: starting the kernel, imports, drawing (cold)


def run_page(page: str) -> dict[str, Any]:
    """Execute a page in replay (a fresh kernel, as the book build does) and return its ledger (`liverun.ledger`)."""
    import jupytext
    from nbclient import NotebookClient

    path = BOOK / f"{page}.md"
    with tempfile.TemporaryDirectory() as tmp:
        ledger = Path(tmp) / "ledger.json"
        env = {liverun.LEDGER_ENV: str(ledger), device.REPLAY_ENV: "1", "MPLBACKEND": "Agg",
               "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            nb = jupytext.read(path)
            NotebookClient(nb, timeout=600, kernel_name="python3",
                           resources={"metadata": {"path": str(BOOK)}}).execute()
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        return json.loads(ledger.read_text()) if ledger.exists() else {"page": page, "work": []}


def entry(ledger: dict[str, Any], compile_times: dict[str, float]) -> dict[str, Any]:
    """A page's plan from its replay ledger: its work (kind, label, measured live by default, estimated seconds), the
    instances its live work compiles, and what compiling them costs on WORKERS processes."""
    work = [{"kind": x["kind"], "label": x["label"], "live": x["planned"], "estimate_s": x["estimate_s"]}
            for x in ledger["work"]]
    instances = {_key(i): i for x in ledger["work"] if x["planned"] for i in x["instances"]}
    seconds = [compile_times.get(k, 0.0) for k in instances]
    compile_s = max([max(seconds, default=0.0), sum(seconds) / WORKERS])
    return {"work": work, "instances": list(instances.values()), "compile_s": round(compile_s, 1),
            "page_s": PAGE_S}


def compile_seconds(instances: list[list[Any]]) -> dict[str, float]:
    """NVRTC seconds of each instance, compiled offline (no GPU) into an empty cache, as a reader's cold run would."""
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        saved = os.environ.get(compiler.CACHE_ENV)
        os.environ[compiler.CACHE_ENV] = tmp
        try:
            for name, params in instances:
                inst = catalog.instance(name, params)
                started = time.perf_counter()
                compiler.cubin_file(inst, inst.spec.arch or compiler.OFFLINE_ARCH)
                out[_key([name, params])] = round(time.perf_counter() - started, 2)
        finally:
            if saved is None:
                os.environ.pop(compiler.CACHE_ENV, None)
            else:
                os.environ[compiler.CACHE_ENV] = saved
    return out


def write(chosen: list[str] | None = None) -> dict[str, Any]:
    """Run every page (or `chosen`) in replay and write its plan to `liverun.PLAN_FILE`."""
    old = json.loads(liverun.PLAN_FILE.read_text()) if liverun.PLAN_FILE.exists() else {"pages": {}}
    ledgers = {}
    for page in chosen or book_pages():
        started = time.perf_counter()
        ledgers[page] = run_page(page)
        print(f"{page}: {len(ledgers[page]['work'])} pieces of work ({time.perf_counter() - started:.0f} s)",
              flush=True)
    wanted = {_key(i): i for ledger in ledgers.values() for x in ledger["work"] if x["planned"]
              for i in x["instances"]}
    times = compile_seconds(list(wanted.values()))
    replayed = device.replay_gpu()
    ceilings = records.read_kind("device", replayed)
    plan = {"gpu": replayed, "peak_gflops": ceilings[0]["peak_gflops"] if ceilings else None,
            "recorded_at": records.utc_now(),
            "pages": {**old["pages"], **{page: entry(ledger, times) for page, ledger in ledgers.items()}}}
    liverun.PLAN_FILE.write_text(json.dumps(plan, indent=1, sort_keys=True) + "\n")
    for page, e in plan["pages"].items():
        print(f"{page:28s} {liverun.planned(e):5.0f} s planned ({e['compile_s']:.0f} s compiling)"
              + ("  OVER BUDGET" if liverun.planned(e) > liverun.BUDGET_S else ""))
    return plan


def _key(instance: list[Any]) -> str:
    return json.dumps(instance, sort_keys=True)


if __name__ == "__main__":
    write(sys.argv[1:] or None)
