"""Numbers for a chapter's prose, computed from the records when the page builds, never typed.

A chapter publishes what its sentences quote in one call, `gl.publish(name=value, ...)`, in a cell tagged
`remove-cell`, and its prose writes {glue:text}`name` where the number goes (myst-nb's glue). Live, the numbers are
the ones just measured; in replay, the recorded ones: prose and records cannot drift apart.
"""
from __future__ import annotations

import math
import re
from numbers import Integral, Real

NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
INLINE_MATH = re.compile(r"\$([^$\s][^$]*?)\$")  # $A$ in a pasted text, which is never typeset


def publish(**numbers: str | Real) -> dict[str, str | int | float]:
    """Glue each keyword's value under its name for the page's prose, and return them (a notebook shows them).

    A str is pasted as written, so format it here with its unit (`f"{x.pct_cublas:.1f} %"`); a number (a NumPy one
    too) is pasted as it is, or formatted by the role (`{glue:text}`tflops:.1f``). Pasted text is never typeset, so
    inline math in it loses its dollars: "$A$" is pasted as "A". Names are letters, digits and underscores
    (they are the role's keys); a value must be finite. Outside a myst-nb build (a terminal) nothing is glued.

        x = gl.bench("warp_tiling", 4096)
        gl.publish(wt_tflops=f"{x.gflops / 1e3:.1f}", wt_pct=f"{x.pct_cublas:.0f} %")
    """
    numbers = {name: _pasted(name, value) for name, value in numbers.items()}
    try:
        from myst_nb import glue
    except ImportError:  # no book extra: the page is not being built, there is nothing to glue into
        return numbers
    for name, value in numbers.items():
        glue(name, value, display=False)
    return numbers


def _pasted(name: str, value: object) -> str | int | float:
    """What `publish` glues for `value`: a text without inline math's dollars, or a Python int or float (a NumPy number
    pastes as itself, never as its repr, np.float32(1.5))."""
    if not NAME.match(name):
        raise ValueError(f"{name!r}: a published name is letters, digits and underscores, starting with a letter")
    if isinstance(value, str):
        if not value.strip():
            raise ValueError(f"{name}: an empty text")
        return INLINE_MATH.sub(r"\1", value)
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{name}: publish a number or its text, not {type(value).__name__}")
    number = int(value) if isinstance(value, Integral) else float(value)
    if not math.isfinite(number):
        raise ValueError(f"{name}: {value} is no number to print")
    return number


def counted(n: int, noun: str) -> str:
    """A count with its noun in the number it takes ("1 stage", "2 stages"), for text drawn from parameters (a
    figure's title, a question)."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def share(x) -> str:
    """A measurement's share of cuBLAS as a headline quotes it: for tensor-core kernels the median of the rounds of
    turns, with the rounds' range beside it (so a headline never hides how far the rounds spread), else the ratio.

        share(gl.bench("wgmma_ws_tf32", 4096))  # '102.9 % (rounds 94.0–113.8 %)'
    """
    low_high = x.pct_range if x.precision != "fp32" else None
    return f"{x.pct_cublas:.1f} %" + (f" (rounds {low_high[0]:.1f}–{low_high[1]:.1f} %)" if low_high else "")


def fold(**objects) -> None:
    """Glue tables, figures and listings under names for a page's folded lab notes, where a ```{glue} name```
    directive inside a dropdown shows each (code cells cannot sit inside a directive). Figures are closed and nothing
    is returned, so the cell that folds them shows nothing itself, even as its last line beside a figure it shows.
    Without myst-nb (a notebook on Colab) nothing is glued: the objects are shown in place, so the notebook still has
    every note.
    """
    for name in objects:
        if not NAME.match(name):
            raise ValueError(f"{name!r}: a folded name is letters, digits and underscores, starting with a letter")
    try:
        from myst_nb import glue
    except ImportError:
        from IPython.display import display

        for value in objects.values():
            display(value)
        return
    import matplotlib.pyplot as plt
    from IPython.display import Pretty
    from matplotlib.figure import Figure

    for name, value in objects.items():
        # a text (a SASS excerpt, a report) shows as its lines, not as a Python string with its quotes and \n escapes
        glue(name, Pretty(value) if isinstance(value, str) else value, display=False)
        if isinstance(value, Figure):
            plt.close(value)
