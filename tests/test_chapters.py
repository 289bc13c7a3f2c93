"""Every chapter of the book executes from top to bottom in replay mode (as in the book build)."""
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
def test_chapter_executes(path, mode, monkeypatch):
    jupytext = pytest.importorskip("jupytext")
    from nbclient import NotebookClient

    if mode == "replay":
        monkeypatch.setenv("GEMM_LAB_REPLAY", "1")
    else:
        monkeypatch.delenv("GEMM_LAB_REPLAY", raising=False)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    # the kernel imports this checkout's gemm_lab, whichever checkout an editable install points at
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    nb = jupytext.read(path)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    errors = [f"{o['ename']}: {o['evalue']}" for o in outputs if o.get("output_type") == "error"]
    assert not errors, errors
    text = " ".join(str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", "")) for o in outputs)
    if f'gl.banner("{path.stem}")' in path.read_text():  # the first cell's banner: the page's "recorded on <GPU>, <date>" badge
        assert re.search(r"recorded on [^,]+, \d{4}-\d{2}-\d{2}" if mode == "replay" else "Live: measuring on", text)
