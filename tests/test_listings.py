"""Kernel code on the page: the lines shown are the file's lines under their own numbers, diffs rebuild both sides,
and bad names or markers fail before anything renders."""
from __future__ import annotations

import re

import pytest

from gemm_lab import catalog
from gemm_lab.pages import listings


def _file(name: str) -> list[str]:
    return listings.source_path(name).read_text().splitlines()


@pytest.fixture(autouse=True)
def a_fresh_page(monkeypatch):
    """Each test is a page of its own: no file's whole text folded yet."""
    monkeypatch.setattr(listings, "_FILE_SHOWN", {})


def test_excerpt_shows_the_files_lines_under_their_numbers():
    shown = listings.excerpt("14_tf32_wgmma_ws.cu", start_at="if (PRODUCER && wg == 0) {",
                             end_before="else if (HELPERS")
    lines = _file("14_tf32_wgmma_ws.cu")
    assert all(lines[x.new - 1] == x.text for x in shown.lines)
    assert "if (PRODUCER && wg == 0) {" in shown.lines[0].text and "else if (HELPERS" in lines[shown.lines[-1].new]
    assert not shown.whole and "<details>" in shown._repr_html_()
    whole = listings.excerpt("staging.cuh")
    assert whole.whole and [x.text for x in whole.lines] == _file("staging.cuh")
    assert "<details>" not in whole._repr_html_()
    assert listings.excerpt("warp_tiling").path == catalog.get("warp_tiling").path  # a kernel's name finds its file


def test_excerpt_of_a_function_and_highlighted_lines():
    mma = listings.excerpt("tf32.cuh", function="mma_tf32")
    text = [x.text for x in mma.lines]
    assert text[0].startswith("//") and "void mma_tf32(" in "".join(text) and text[-1] == "}"
    kernel = listings.excerpt("05_thread_tile_2d.cu", function="sgemm_thread_tile_2d")
    assert kernel.lines[0].text.startswith("template") and kernel.lines[-1].new == len(_file("05_thread_tile_2d.cu"))
    marked = listings.excerpt("03_smem_tiling.cu", highlight="27, 31")
    assert [x.new for x in marked.lines if x.kind == "!"] == [27, 31]
    assert marked._repr_html_().count("<tr class='hl'>") == 2
    trimmed = listings.excerpt("03_smem_tiling.cu", highlight="27", skip="28-30, 32", skipped="of another path")
    gaps = [x.text for x in trimmed.lines if x.kind == "…"]
    assert gaps == ["3 lines of another path", "1 line of another path"] and not trimmed.whole
    assert not {28, 29, 30, 32} & {x.new for x in trimmed.lines} and 31 in {x.new for x in trimmed.lines}
    block = listings.excerpt("16_ozaki.cu", function="ozaki_reconstruct", skip_block="if (chunks > 1) {")
    shown = [x.text for x in block.lines]
    gap = shown.index(next(x for x in shown if x.endswith("not shown")))
    assert "if (i < M && j0 < N) {" in shown[gap - 1] and shown[gap + 1].strip().startswith("double s[4] = ")
    assert not any("chunk_stride)" in x for x in shown)  # the block's inner lines are gone


def test_changes_rebuild_both_functions():
    diff = listings.changes("thread_tile_2d")  # against thread_tile_1d, the kernel before it in the catalog
    assert diff.old_path.name == "04_thread_tile_1d.cu" and diff.path.name == "05_thread_tile_2d.cu"
    new, old = _file("05_thread_tile_2d.cu"), _file("04_thread_tile_1d.cu")
    assert all(new[x.new - 1] == x.text for x in diff.lines if x.kind in " +")
    assert all(old[x.old - 1] == x.text for x in diff.lines if x.kind == "-")
    added = {x.text.strip() for x in diff.lines if x.kind == "+"}
    assert "float acc[TM][TN] = {};" in added and "float acc[TM] = {};" in {x.text.strip() for x in diff.lines
                                                                            if x.kind == "-"}
    html = diff._repr_html_()
    assert html.count("<tr class='add'>") == len([x for x in diff.lines if x.kind == "+"])
    assert "white-space:pre-wrap" in html  # long lines wrap instead of running off the page
    assert any(x.kind == "…" for x in listings.changes("coalesced", context=1).lines)  # long unchanged runs fold
    work = listings.changes("pipelined_warp_tiling", against="warp_tiling", function="pipelined_block",
                            against_function="sgemm_warp_tiling")
    assert "sgemm_warp_tiling → pipelined_block" in work.title


def test_changes_and_excerpts_refuse_what_does_not_exist():
    with pytest.raises(ValueError, match="first kernel"):
        listings.changes("naive")
    with pytest.raises(ValueError, match="share"):
        listings.changes("mma_3xtf32", against="mma_tf32", whole_file=True)
    with pytest.raises(ValueError, match="neither a kernel"):
        listings.excerpt("no_such_file.cu")
    with pytest.raises(ValueError, match="contains 'no such marker'"):
        listings.excerpt("03_smem_tiling.cu", start_at="no such marker")
    with pytest.raises(ValueError, match="outside the shown lines"):
        listings.excerpt("tf32.cuh", function="mma_tf32", highlight="1")
    with pytest.raises(ValueError, match="both highlighted and skipped"):
        listings.excerpt("03_smem_tiling.cu", highlight="27", skip="27")
    with pytest.raises(ValueError, match="no '}' closes line"):
        listings.excerpt("16_ozaki.cu", start_at="ozaki_reconstruct(", end_at="if (chunks > 1) {",
                         skip_block="if (chunks > 1) {")
    with pytest.raises(ValueError, match="no definition of nothing_here"):
        listings.excerpt("tf32.cuh", function="nothing_here")


@pytest.mark.parametrize("name", list(catalog.KERNELS))
def test_every_kernel_function_is_found(name):
    spec = catalog.get(name)
    first, last = listings.function_span(spec.path, spec.function)
    body = "\n".join(_file(spec.path.name)[first - 1:last])
    assert re.search(rf"\b{spec.function}\s*\(", body) and body.rstrip().endswith("}")


def test_the_whole_file_is_folded_once_per_page():
    first = listings.excerpt("14_tf32_wgmma_ws.cu", start_at="if (PRODUCER && wg == 0) {",
                             end_before="else if (HELPERS")
    later = listings.excerpt("14_tf32_wgmma_ws.cu", function="sgemm_tf32_wgmma_ws")
    diff = listings.changes("wgmma_ws_tf32", against="wgmma_tf32")  # folds the same file, the newer of the two
    html_first, html_later, html_diff = first._repr_html_(), later._repr_html_(), diff._repr_html_()
    assert html_first.count("<details>") == 1 and "<details>" not in html_later + html_diff
    assert "under this page's first listing of it" in html_later and "first listing" not in html_first
    assert first._repr_html_() == html_first  # shown again (a cell run twice), the first listing keeps its fold
