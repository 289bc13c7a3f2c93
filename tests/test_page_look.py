"""What a reader sees of the package's pictures and page-building code: labels that stand upright and clear of bars
and frames, a figure's words for its alt text, exercises numbered per page, a split table without blank rows."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.text import Annotation  # noqa: E402

from gemm_lab.models import banks  # noqa: E402
from gemm_lab.pages import diagrams, plots, style  # noqa: E402
from gemm_lab.pages.tables import Table  # noqa: E402


def test_bank_grid_labels_every_lane_upright_once():
    for site in (*banks.fragment_sites("mma_tf32"), banks.sites("vectorized")[0]):
        fig = diagrams.bank_grid(site)
        ax = fig.axes[0]
        lanes = ax.texts
        assert all(t.get_rotation() == 0 for t in lanes)
        firsts = {lane for lane, addr in enumerate(site.addresses)
                  if next(i for i, a in enumerate(site.addresses) if a == addr) == lane}
        assert sorted(int(t.get_text()) for t in lanes) == sorted(firsts)
        assert not style.fits(fig)
        plt.close(fig)


def test_bar_labels_start_past_their_bars(replay):
    import gemm_lab as gl

    ms = gl.bench_all([("naive", None, 4096), ("coalesced", None, 4096)], progress=False)
    fig = plots.bars(ms)
    ax = fig.axes[0]
    fig.canvas.draw()  # places the labels' boxes
    renderer = fig.canvas.get_renderer()
    for bar, label in zip(ax.patches, [t for t in ax.texts if isinstance(t, Annotation)]):
        assert label.get_bbox_patch().get_window_extent(renderer).x0 > bar.get_window_extent(renderer).x1
    plt.close(fig)


def test_claims_labels_stay_inside_the_frame(replay):
    from gemm_lab.lab import published

    fig = plots.claims(published.claims_beside_ours())
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        right = ax.get_window_extent(renderer).x1
        assert all(t.get_window_extent(renderer).x1 < right for t in ax.texts)
    plt.close(fig)


def test_a_figure_in_words():
    fig, (a, b) = plt.subplots(1, 2)
    fig.suptitle("Two panels, $C^T$ and B")
    a.set_title("left panel")
    b.set_title("right panel")
    a.set_xlabel("K")
    a.set_ylabel("error")
    assert style.describe(fig) == ("Two panels, C^T and B. Panels: left panel; right panel. horizontal: K; "
                                   "vertical: error")
    plt.close(fig)


def test_exercises_are_numbered_per_page():
    from types import SimpleNamespace

    from gemm_lab.pages.book_build import number_exercises_per_page

    env = SimpleNamespace(toc_fignumbers={
        "book/ch01": {"exercise": {"ex-a": (1,), "ex-b": (2,)}},
        "book/ch02": {"exercise": {"ex-d": (4,), "ex-c": (3,)}, "figure": {"f": (7,)}},
    })
    assert number_exercises_per_page(None, env) == ["book/ch02"]
    assert env.toc_fignumbers["book/ch02"] == {"exercise": {"ex-c": (1,), "ex-d": (2,)}, "figure": {"f": (7,)}}


def test_a_split_table_leaves_rows_with_nothing_to_add_out_of_its_second_part():
    t = Table(("kernel", "GFLOP/s", "note"), (("a", "1", ""), ("b", "2", "a note")), "caption")
    first, second = t.split(2).parts
    assert [r[0] for r in first.rows] == ["a", "b"] and second.rows == (("b", "a note"),)


def test_a_figure_cell_names_its_figure_so_the_page_shows_it_once():
    """A cell ending in a bare call that draws a figure shows it twice: once as the value the call returns, once as
    the figure matplotlib's inline backend shows at the end of the cell. `fig = ...` shows it once."""
    import re

    from gemm_lab.catalog import ROOT

    bare = re.compile(r"^(diagrams|plots|power_plots)\.\w+\(")
    twice = []
    for page in sorted((ROOT / "book").glob("*.md")):
        for cell in re.findall(r"```\{code-cell\}[^\n]*\n(.*?)```", page.read_text(), re.S):
            lines = [line for line in cell.splitlines() if line.strip() and not line.startswith((":", "#"))]
            if lines and bare.match(lines[-1]):
                twice.append(f"{page.name}: {lines[-1]}")
    assert not twice, f"figures shown twice: {twice}"
