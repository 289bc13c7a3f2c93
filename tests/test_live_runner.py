"""benchmarks/live.py without a GPU: the pages it runs, the slowest cells and errors of a run, the ledger it keeps,
its report against the budget, and the rows freshness.problems() accepts."""
from __future__ import annotations

import importlib.util
import json
import sys

import nbformat
import pytest

from gemm_lab import catalog, device, folders
from gemm_lab.lab import freshness
from gemm_lab.pages import book_pages

spec = importlib.util.spec_from_file_location("live", catalog.ROOT / "benchmarks" / "live.py")
live = sys.modules["live"] = importlib.util.module_from_spec(spec)  # a dataclass finds its module there
spec.loader.exec_module(live)


def _row(page: str = "intro", **changes) -> dict:
    row = {"page": page, "source_sha256": live.source_sha256(page), "gpu": "Some GPU",
           "recorded_at": "2026-12-01T10:00:00+00:00", "versions": {"driver": "580.1"}, "cold_s": 61.2,
           "warm_s": 30.4, "startup_s": 1.8, "cold_slowest": [{"cell": 3, "source": "gl.race()", "seconds": 20.1}],
           "warm_slowest": [], "errors": []}
    return {**row, **changes}


def _write(folder, rows) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "live.json").write_text(json.dumps({"format": 1, "rows": rows}))


def test_pages_in_the_order_of_the_toc():
    pages = book_pages()
    assert pages[0] == "intro" and pages[-1] == "how_this_book_runs" and "glossary" in pages
    assert pages.index("ch08_tensor_cores") < pages.index("ch08a_wgmma") < pages.index("ch08c_data_movers")
    assert not live.has_code(live.notebook("glossary")) and live.has_code(live.notebook("ch00_measuring"))


def test_a_run_names_its_slowest_cells_and_its_error(tmp_path):
    """A fresh kernel in replay: the three slowest of four timed cells, slowest first (the last cell raises, and
    formats its traceback in its own time); start-up apart from the cells' seconds."""
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("# slept first\nimport time\ntime.sleep(1.5)"),
        nbformat.v4.new_markdown_cell("words"),
        nbformat.v4.new_code_cell("time.sleep(0.01)"),
        nbformat.v4.new_code_cell("time.sleep(0.1)"),
        nbformat.v4.new_code_cell("time.sleep(0.1)\nraise ValueError('no such page')"),
    ])
    env = {**live.live_env(tmp_path / "cache", tmp_path / "ledger.json"), device.REPLAY_ENV: "1"}
    run = live.execute(nb, env, timeout=60)
    seconds = [x["seconds"] for x in run.slowest]
    assert run.slowest[0] == {"cell": 0, "source": "import time", "seconds": seconds[0]} and 1.4 < seconds[0] < 3
    assert {x["cell"] for x in run.slowest} == {0, 3, 4} and seconds == sorted(seconds, reverse=True)
    assert run.seconds >= sum(seconds) and run.startup_s > 0 and run.errors == ["ValueError: no such page"]


def test_the_ledger_gives_compile_seconds_and_work(tmp_path):
    path = tmp_path / "ledger.json"
    assert live.ledger_fields(path) == {}
    work = [{"kind": "races", "label": "naive 4096", "live": True, "estimate_s": 6.0, "seconds": 5.2}]
    path.write_text(json.dumps({"page": "ch01_naive_coalesced", "compile_s": 12.5, "work": work}))
    assert live.ledger_fields(path) == {"compile_s": 12.5, "work": work}


def test_first_line_skips_comments_and_trims():
    assert live.first_line("\n# why\n  x = 1  \ny = 2") == "x = 1"
    assert live.first_line("# only a comment") == "" and len(live.first_line("z" * 200)) == 80


def test_the_report_marks_pages_over_budget_or_stale(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(folders, "RECORDS_DIR", tmp_path)
    _write(tmp_path / "some-gpu", [_row()])
    assert live.report() == 0
    assert "intro" in capsys.readouterr().out
    _write(tmp_path / "other-gpu", [_row("gpu_primer", cold_s=95.0), _row("scoreboard", warm_s=46.0),
                                     _row("claims", source_sha256="0" * 64), _row("ch00_measuring", errors=["E: x"])])
    assert live.report() == 1
    out = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    assert "95.0 s*" in out["gpu_primer"] and "46.0 s*" in out["scoreboard"] and "61.2 s " in out["scoreboard"]
    assert "stale" in out["claims"] and "1 error(s): E: x" in out["ch00_measuring"] and "stale" not in out["intro"]


def test_it_refuses_to_run_without_a_gpu(monkeypatch):
    monkeypatch.setattr(device, "live", lambda: False)
    with pytest.raises(SystemExit, match="needs a CUDA GPU"):
        live.main([], skip_recorded=False, timeout=600)


def test_live_rows_are_checked(tmp_path):
    ledger = {"compile_s": 12, "work": []}
    bad = [_row(cold_s="61 s"), _row(cold_slowest=[{"cell": 3, "seconds": 2.0}]), _row(errors=[{"ename": "E"}]),
           _row(compile_s=None), {k: v for k, v in _row().items() if k != "startup_s"}]
    _write(tmp_path / "some-gpu", [_row(), _row(**ledger), *bad])
    problems = freshness.problems(tmp_path)
    assert len(problems) == len(bad)
    for problem, what in zip(problems, ("'cold_s' must be float", "'cold_slowest' must list", "'errors' must list",
                                        "'compile_s' must be float", "'startup_s' must be float")):
        assert what in problem


def test_the_readmes_live_table_is_the_h200_record():
    """The README's table of live seconds is typed: it must say what records/nvidia-h200/live.json says, rounded."""
    rows = {r["page"]: r for r in json.loads((folders.RECORDS_DIR / "nvidia-h200" / "live.json").read_text())["rows"]}
    short = {page.split("_")[0] if page.startswith("ch") else page: page for page in rows}
    readme = (catalog.ROOT / "README.md").read_text()
    table = [line.split("|")[1:-1] for line in readme.splitlines() if line.startswith("| ") and " | " in line]
    cells = [[c.strip() for c in row] for row in table if row[0].strip() in short]
    typed = {name: (int(cold), int(warm)) for row in cells for name, cold, warm in (row[:3], row[4:7]) if name}
    assert set(typed) == set(short), "the README's live table lists every page with code once"
    for name, (cold, warm) in typed.items():
        r = rows[short[name]]
        assert (cold, warm) == (round(r["cold_s"]), round(r["warm_s"])), \
            f"README: {name} {cold}/{warm} s, records/nvidia-h200/live.json {r['cold_s']:.0f}/{r['warm_s']:.0f} s"
