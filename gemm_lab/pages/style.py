"""One look for every figure of the book (`plots` draws measurements, `diagrams` draws ideas).

The rule it keeps: figure text is at least as large as the page's body text when the page is 800 or 1280 px wide.
The book's body text is 16 px; its content column is 728 px wide at 800 px and 680 px at 1280 px, where the two
sidebars take their room (measured in headless-Chromium screenshots of the built book). A PNG is shown at its own
size, or shrunk to the column: so a figure at most `WIDTH` inches wide at `DPI` is never shrunk, and `TEXT` points
at `DPI` are `TEXT * DPI / 72` = 16.7 px. Importing this module sets matplotlib's defaults; `fits()` checks a figure.

A figure also reads in words: in IPython, its plain-text form is `describe(fig)` (its titles and axes), which the
book's build (`book_build`) makes the image's alt text.
"""
from __future__ import annotations

import contextlib
import re
import textwrap
from typing import Any

import matplotlib as mpl
from matplotlib.figure import Figure

BODY_PX = 16  # the book's body text
COLUMN_PX = 680  # the content column at a page width of 1280 px (728 px at 800: the narrower is 1280)
DPI = 100
WIDTH = 6.6  # inches: 660 px, inside the column at 800 and 1280 px (with room for labels that stick out)
TEXT = 12.0  # points: every text of a figure, ticks and legends too (16.7 px at DPI)
TITLE = 13.0

mpl.rcParams.update({
    "figure.dpi": DPI, "savefig.dpi": "figure", "font.size": TEXT, "axes.titlesize": TITLE,
    "axes.labelsize": TEXT, "xtick.labelsize": TEXT, "ytick.labelsize": TEXT, "legend.fontsize": TEXT,
    "legend.title_fontsize": TEXT, "figure.titlesize": TITLE, "figure.figsize": (WIDTH, 4.0),
})


def wrap(text: str, size: float = TEXT, width: float = WIDTH) -> str:
    """`text` broken into lines that fit `width` inches at `size` points (about 0.55 em per character)."""
    return textwrap.fill(text, max(20, int(width * 72 / (0.55 * size))))


def renderer(fig: Figure) -> Any:
    """The renderer that lays a figure out: its canvas's, or an Agg canvas's where the figure's canvas cannot draw
    (a live page's backend may leave a figure the base canvas, which has none)."""
    if not hasattr(fig.canvas, "get_renderer"):
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        FigureCanvasAgg(fig)
    return fig.canvas.get_renderer()


def stamp(fig: Figure, text: str) -> Figure:
    """Write the data's provenance under everything drawn so far (legends below the axes too), wrapped to the
    figure's width, in body-size type. Call it last, after the layout."""
    if text:
        bottom = fig.get_tightbbox(renderer(fig)).y0 / fig.get_figheight()
        fig.text(0.99, min(bottom, 0.0) - 0.01, wrap(text, TEXT, 0.95 * fig.get_figwidth()), ha="right", va="top",
                 fontsize=TEXT, color="dimgray", style="italic")
    return fig


def text_px(fig: Figure, column_px: int = COLUMN_PX) -> list[tuple[str, float]]:
    """(text, size in CSS px as the page shows it) for every visible text of a figure drawn with tight bounds.

    The figure is laid out as a draw lays it out, without rendering its pixels: sizes and bounds come from the
    layout alone, and a PNG would cost three times as long."""
    from matplotlib.text import Text

    fig.draw_without_rendering()
    width_px = fig.get_tightbbox(renderer(fig)).width * DPI
    scale = min(1.0, column_px / width_px)
    return [(t.get_text(), t.get_fontsize() * DPI / 72 * scale)
            for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]


def fits(fig: Figure, column_px: int = COLUMN_PX) -> list[tuple[str, float]]:
    """Texts of `fig` that the page would show smaller than its body text (empty: the figure reads)."""
    return [(t, round(px, 1)) for t, px in text_px(fig, column_px) if px < BODY_PX - 0.05]


def describe(fig: Figure) -> str:
    """The figure in words for a reader who cannot see it (the page's alt text): its title, its panels' titles, and
    what its first labelled panel's axes measure."""
    def clean(text: str) -> str:
        return re.sub(r"\s+", " ", text.replace("$", "")).strip()

    title = clean(fig.get_suptitle())
    panels = [t for t in (clean(ax.get_title(loc)) for ax in fig.axes for loc in ("center", "left")) if t]
    if not title and panels:
        title = panels.pop(0)
    labelled = [ax for ax in fig.axes if ax.axison and (ax.get_xlabel() or ax.get_ylabel())]
    axes = ""
    if labelled:
        x, y = clean(labelled[0].get_xlabel()), clean(labelled[0].get_ylabel())
        axes = "; ".join(filter(None, (f"horizontal: {x}" if x else "", f"vertical: {y}" if y else "")))
    text = ". ".join(filter(None, (title or "A picture of the text above",
                                   "Panels: " + "; ".join(panels[:8]) if panels else "", axes)))
    return text if len(text) <= 600 else text[:597] + "..."


def _describe_figures_in_ipython() -> None:
    """Make `describe` a figure's plain-text form in a running IPython kernel (a page being built or read)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is None:
        return
    import matplotlib.pyplot as plt

    # the inline backend drops every formatter of Figure when it loads (with a page's first figure): load it first;
    # a backend this machine cannot load (a terminal's GUI one) is left for pyplot to fall back from when it draws
    with contextlib.suppress(ImportError):
        plt.switch_backend(mpl.get_backend())
    shell.display_formatter.formatters["text/plain"].for_type(Figure, lambda fig, p, cycle: p.text(describe(fig)))


_describe_figures_in_ipython()
