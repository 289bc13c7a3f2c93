"""Every page of _toc.yml with code launches as its paired .ipynb, starts with the set-up cell, hides its set-up
and import cells, and shows kernel source through `gemm_lab.listings`. CPU only, no book build.
"""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import parse_qs, urlparse

import pytest
import yaml

jupytext = pytest.importorskip("jupytext")  # the book extra

ROOT = Path(__file__).resolve().parent.parent
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())
SYNC = "jupytext --sync book/*.md"  # the one way to regenerate the .ipynb files


def toc_pages() -> list[Path]:
    """The .md file of every page in _toc.yml: root, chapters, parts and sections alike."""
    found: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            found.extend(str(node[k]) for k in ("root", "file") if k in node)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(yaml.safe_load((ROOT / "_toc.yml").read_text()))
    return [ROOT / f"{page}.md" for page in found]


def code_cells(nb) -> list:
    return [c for c in nb.cells if c.cell_type == "code"]


NOTEBOOKS = [p for p in toc_pages() if code_cells(jupytext.read(p))]
IDS = [p.stem for p in NOTEBOOKS]
# The first cell of every chapter, as the page that explains it has it.
SETUP = code_cells(jupytext.read(ROOT / "book" / "how_this_book_runs.md"))[0].source


def test_toc_pages_exist():
    assert len(NOTEBOOKS) >= 2 and all(p.exists() for p in toc_pages())


@pytest.mark.parametrize("md", NOTEBOOKS, ids=IDS)
def test_ipynb_is_paired_and_in_sync(md):
    """The launched .ipynb has the .md's cells (same sources and tags), no outputs, asks Colab for a GPU,
    and stays out of the build."""
    from sphinx.util.matching import Matcher

    ipynb = md.with_suffix(".ipynb")
    assert ipynb.exists(), f"{ipynb.name} is missing: pair {md.name} (README, Launch buttons) and run `{SYNC}`"
    text, paired = jupytext.read(md), jupytext.read(ipynb)
    assert text.metadata.get("jupytext", {}).get("formats") == "ipynb,md:myst", f"{md.name} is not paired"
    assert "kernelspec" in text.metadata, "without a kernelspec the theme shows no launch button"

    def cells(nb):
        return [(c.cell_type, c.source, c.metadata.get("tags", [])) for c in nb.cells]

    assert cells(paired) == cells(text), f"{ipynb.name} is out of sync with {md.name}: run `{SYNC}`"
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in code_cells(paired)), \
        f"{ipynb.name} holds outputs: delete it and run `{SYNC}`"
    assert paired.metadata.get("accelerator") == "GPU"  # Colab opens a GPU runtime
    assert Matcher(CONFIG["exclude_patterns"])(ipynb.relative_to(ROOT).as_posix()), \
        "exclude the .ipynb from the build: Sphinx would find two sources for one page"


@pytest.mark.parametrize("md", NOTEBOOKS, ids=IDS)
def test_chapter_starts_with_the_setup_cell(md):
    """The same first cell everywhere, but for the page's name, which its banner reads its live plan by."""
    assert code_cells(jupytext.read(md))[0].source == SETUP.replace('"how_this_book_runs"', f'"{md.stem}"')


def _sets_up(source: str) -> bool:
    """A cell that imports, and perhaps names a few things, but shows nothing: set-up the page need not show."""
    import ast

    try:
        body = ast.parse(source).body
    except SyntaxError:
        return False
    return bool(body) and isinstance(body[0], (ast.Import, ast.ImportFrom)) and not isinstance(body[-1], ast.Expr) \
        and "fig =" not in source


@pytest.mark.parametrize("md", NOTEBOOKS, ids=IDS)
def test_setup_and_import_cells_are_hidden(md):
    """One tag for every cell that only sets the page up: hide-input, as the first cell has."""
    shown = [c.source.splitlines()[0] for c in code_cells(jupytext.read(md)) if _sets_up(c.source)
             and not {"hide-input", "remove-input", "remove-cell", "hide-cell"} & set(c.metadata.get("tags", []))]
    assert not shown, f"{md.name}: tag these set-up cells hide-input: {shown}"


def test_setup_cell_does_nothing_when_gemm_lab_is_importable(monkeypatch):
    def no_network(*args, **kwargs):
        raise AssertionError(f"the set-up cell ran {args} although gemm_lab is importable")

    monkeypatch.setattr(subprocess, "run", no_network)
    monkeypatch.setenv("GEMM_LAB_REPLAY", "1")
    exec(SETUP, {})


def test_setup_cell_installs_an_editable_clone_with_cuda12(monkeypatch):
    """Without gemm_lab: one command clones the repository of _config.yml and installs it editable."""
    commands = []
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "gemm_lab" else real_find_spec(name, *a))
    monkeypatch.setattr(subprocess, "run", lambda cmd, **kwargs: commands.append((cmd, kwargs)))
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setenv("GEMM_LAB_REPLAY", "1")
    exec(SETUP, {})
    repo = os.path.expanduser("~/gemm_lab")
    (cmd, kwargs), = commands
    assert f"git clone -q --depth 1 {CONFIG['repository']['url']} {repo}" in cmd
    assert f"pip install -q -e '{repo}[cuda12" in cmd and kwargs["check"]
    assert sys.path[0] == repo  # importable in the running kernel, before any restart


def _launch_urls(md: Path) -> dict[str, str]:
    """The launch buttons sphinx-book-theme renders for this page, from the _config.yml settings."""
    from jupyter_book.config import yaml_to_sphinx
    from sphinx_book_theme.header_buttons import update_context_with_repository_info
    from sphinx_book_theme.header_buttons.launch import add_launch_buttons

    class Config(dict):
        __getattr__ = dict.__getitem__

    docname = md.relative_to(ROOT).with_suffix("").as_posix()
    options = yaml_to_sphinx(CONFIG)[0]["html_theme_options"]
    app = SimpleNamespace(
        config=Config(html_theme_options=options, html_context={}), builder=None,
        env=SimpleNamespace(doc2path=lambda name: str(ROOT / f"{name}.md"),
                            metadata={docname: dict(jupytext.read(md).metadata)}),
    )
    update_context_with_repository_info(app)
    context = {**app.config.html_context, "pagename": docname, "sourcename": "", "header_buttons": []}
    add_launch_buttons(app, docname, "page.html", context, None)
    (group,) = context["header_buttons"]
    return {b["text"]: b["url"] for b in group["buttons"]}


@pytest.mark.parametrize("md", NOTEBOOKS, ids=IDS)
def test_launch_buttons_open_the_paired_notebook(md):
    urls = _launch_urls(md)
    repo, branch = CONFIG["repository"]["url"], CONFIG["repository"]["branch"]
    colab = urls["Colab"]
    prefix = f"{CONFIG['launch_buttons']['colab_url']}/github/{urlparse(repo).path.strip('/')}/blob/{branch}/"
    assert colab.startswith(prefix)
    binder_path = parse_qs(urlparse(urls["Binder"]).query)["urlpath"][0].removeprefix("lab/tree/")
    for launched in (colab.removeprefix(prefix), binder_path):
        assert launched == md.relative_to(ROOT).with_suffix(".ipynb").as_posix() and (ROOT / launched).exists()
    assert (ROOT / "binder" / "requirements.txt").exists()


LISTING_CALL = re.compile(r"\bgl\.(excerpt|changes)\(")
LISTING_CELLS = [(md, cell) for md in toc_pages() for cell in code_cells(jupytext.read(md))
                 if LISTING_CALL.search(cell.source) and "remove-cell" not in cell.metadata.get("tags", [])]
# (a remove-cell shows nothing itself: its listings are glued into folded lab notes, `prose.fold`)


def test_kernel_code_is_shown_by_listings_only():
    """One way to show kernel code: `gl.excerpt` and `gl.changes` read kernels/ when the page runs; no page includes
    a kernel file with Sphinx's literalinclude (its numbers and folds would differ)."""
    assert LISTING_CELLS
    for md in toc_pages():
        assert not re.search(r"\{literalinclude\}\s+\S*kernels/", md.read_text()), \
            f"{md.name}: show kernel code with gl.excerpt or gl.changes (gemm_lab/listings.py)"


@pytest.mark.parametrize("md, cell", LISTING_CELLS, ids=[f"{md.stem}-{i}" for i, (md, _) in enumerate(LISTING_CELLS)])
def test_listing_cells_show_only_the_code(md, cell):
    """The call is hidden on the page (the listing is the point), and its markers and lines exist in the file."""
    import gemm_lab as gl

    assert "remove-input" in cell.metadata.get("tags", []), f"{md.name}: tag the listing cell remove-input"
    listing = eval(cell.source.strip(), {"gl": gl})  # one call per cell
    assert listing.lines and "<table>" in listing._repr_html_()


def test_intro_opens_with_the_map():
    """The first cell after the set-up draws the scoreboard chart of every kernel; the next shows the book's ladder
    (`ladder.ladder`) of the same board."""
    setup, chart, steps, *_ = code_cells(jupytext.read(ROOT / "book" / "intro.md"))
    assert "plots.scoreboard(" in chart.source and "plan.HEADLINE" in chart.source \
        and "plan.TENSOR_CORES" in chart.source
    assert "ladder.ladder(board" in steps.source


def test_tables_fit_the_page():
    """What keeps a table inside the content column: numbers with their unit never wrap, a bracket after a number
    may go under it (never inside it), longer cells may wrap; a table too wide splits into two keyed by its first
    column, a long one folds."""
    from gemm_lab.pages.tables import Table

    t = Table(("tile", "GFLOP/s", "note", "registers"),
              (("BM=128, BN=128, BK=8", "48,657 (94%)", "a long remark that may wrap", "0.82 ms"),), "caption")
    cells = re.findall(r"<td style='([^']*)'>(.*?)</td>", t._repr_html_())
    assert [("nowrap" in style) for style, _ in cells] == [False, False, False, True]
    nowrap = "<span style='white-space:nowrap'>{}</span>"
    assert cells[1][1] == f"{nowrap.format('48,657')} {nowrap.format('(94%)')}"
    assert "text-align:right" in cells[1][0] and "text-align:left" in cells[0][0]
    top, bottom = t.split(2).parts
    assert top.columns == ("tile", "GFLOP/s") and bottom.columns == ("tile", "note", "registers")
    assert bottom.caption == "caption" and not top.caption and bottom.rows[0][0] == top.rows[0][0]
    assert t.folded("open me")._repr_html_().startswith("<details class='lab-notes'><summary")


def test_measurements_table_moves_what_every_row_shares_to_the_caption(replay):
    import gemm_lab as gl
    from gemm_lab.lab import plan

    one_kernel = gl.measurements_table(gl.bench_all(("mma_tf32", None, s) for s in plan.SIZES))
    assert one_kernel.columns[0] == "M×N×K" and "mma_tf32 (BM=" in one_kernel.caption
    assert "cuBLAS TF32" in one_kernel.caption and "recorded on" in one_kernel.caption
    one_shape = gl.measurements_table(gl.bench_all((k, None, plan.ODD_SHAPE) for k in ("naive", "vectorized")))
    assert one_shape.columns[:2] == ("kernel", "parameters") and "M×N×K" not in one_shape.columns
    assert "M×N×K = {}×{}×{}".format(*plan.ODD_SHAPE) in one_shape.caption
