"""Numbers for a chapter's prose, computed from the records when the page builds, never typed.

A chapter publishes what its sentences quote in one call, `gl.publish(name=value, ...)`, in a cell tagged
`remove-cell`, and its prose writes {glue:text}`name` where the number goes (myst-nb's glue). Live, the numbers are
the ones just measured; in replay, the recorded ones: prose and records cannot drift apart.
"""
from __future__ import annotations

import math
import re

NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")


def publish(**numbers: str | int | float) -> dict[str, str | int | float]:
    """Glue each keyword's value under its name for the page's prose, and return them (a notebook shows them).

    A str is pasted as written, so format it here with its unit (`f"{x.pct_cublas:.1f} %"`); an int or float is
    pasted as it is, or formatted by the role (`{glue:text}`tflops:.1f``). Names are letters, digits and underscores
    (they are the role's keys); a value must be finite. Outside a myst-nb build (a terminal) nothing is glued.

        x = gl.bench("warp_tiling", 4096)
        gl.publish(wt_tflops=f"{x.gflops / 1e3:.1f}", wt_pct=f"{x.pct_cublas:.0f} %")
    """
    for name, value in numbers.items():
        if not NAME.match(name):
            raise ValueError(f"{name!r}: a published name is letters, digits and underscores, starting with a letter")
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise TypeError(f"{name}: publish a number or its text, not {type(value).__name__}")
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{name}: {value} is no number to print")
        if isinstance(value, str) and not value.strip():
            raise ValueError(f"{name}: an empty text")
    try:
        from myst_nb import glue
    except ImportError:  # no book extra: the page is not being built, there is nothing to glue into
        return dict(numbers)
    for name, value in numbers.items():
        glue(name, value, display=False)
    return dict(numbers)


def keep_for_notes(name: str, shown: object) -> None:
    """Glue a table or figure under `name` for a folded lab note, whose dropdown shows it with a `{glue} name`
    directive (the cell that calls this is tagged `remove-cell`). Without myst-nb (Colab) it is displayed in place,
    so a notebook still shows every note.

        gl.keep_for_notes("lab_rules", Table(("rule",), rows))
    """
    try:
        from myst_nb import glue
    except ImportError:  # no book extra: no build to glue into
        from IPython.display import display

        display(shown)
    else:
        glue(name, shown, display=True)
    if hasattr(shown, "savefig"):  # a matplotlib figure: the inline backend would show it a second time
        import matplotlib.pyplot as plt

        plt.close(shown)
