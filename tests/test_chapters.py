"""Every chapter of the book executes from top to bottom in replay mode (as in the book build), and keeps to its live
plan: what a live run of it measures, and that this fits the budget (`liverun.BUDGET_S`)."""
import json
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = sorted((ROOT / "book").glob("*.md"))


def test_toc_lists_every_chapter():
    toc = (ROOT / "_toc.yml").read_text()
    assert CHAPTERS, "no .md page in book/: test_chapter_executes would have no case"
    assert all(f"book/{p.stem}" in toc for p in CHAPTERS)


@pytest.mark.parametrize("mode", ["replay", pytest.param("live", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_chapter_executes(path, mode, monkeypatch, tmp_path):
    jupytext = pytest.importorskip("jupytext")
    from nbclient import NotebookClient

    from gemm_lab import liverun

    if mode == "replay":
        monkeypatch.setenv("GEMM_LAB_REPLAY", "1")
    else:
        monkeypatch.delenv("GEMM_LAB_REPLAY", raising=False)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    # the kernel imports this checkout's gemm_lab, whichever checkout an editable install points at
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    ledger = tmp_path / "ledger.json"
    monkeypatch.setenv(liverun.LEDGER_ENV, str(ledger))
    nb = jupytext.read(path)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    errors = [f"{o['ename']}: {o['evalue']}" for o in outputs if o.get("output_type") == "error"]
    assert not errors, errors
    text = " ".join(str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", "")) for o in outputs)
    # the first cell's banner: the page's "recorded on <GPU>, <date>" badge
    if f'gl.banner("{path.stem}")' in path.read_text():
        assert re.search(r"recorded on [^,]+, \d{4}-\d{2}-\d{2}" if mode == "replay" else "Live: measuring on", text)
    if mode == "replay" and ledger.exists():
        keeps_to_its_plan(path.stem, json.loads(ledger.read_text()))


def keeps_to_its_plan(page: str, ledger: dict) -> None:
    """The page's work, run in replay, is what its plan says (so its banner's estimate holds), and its plan fits the
    budget. A changed page or re-recorded data needs `python -m gemm_lab.lab.liveplan <page>`."""
    from gemm_lab import liverun
    from gemm_lab.lab import liveplan

    plan = liverun._plan().get(page)
    redo = f"run `python -m gemm_lab.lab.liveplan {page}` and commit records/live_plan.json"
    assert plan is not None, f"{page} has no live plan: {redo}"
    now = liveplan.entry(ledger, {})["work"]
    assert [(x["kind"], x["label"], x["live"]) for x in now] == \
        [(x["kind"], x["label"], x["live"]) for x in plan["work"]], f"{page} does other work than its plan says: {redo}"
    total, planned = (sum(x["estimate_s"] for x in w if x["live"]) for w in (now, plan["work"]))
    assert abs(total - planned) <= 0.15 * planned + 1, \
        f"{page}'s live work takes {total:.0f} s, its plan {planned:.0f}: {redo}"
    assert liverun.planned(plan) <= liverun.BUDGET_S, \
        f"{page} plans {liverun.planned(plan):.0f} s live, over the {liverun.BUDGET_S:.0f} s budget: replay more of it"
