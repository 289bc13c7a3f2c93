"""The package itself, as "How this book runs" draws it: the core at the bottom and the four wings above it, each band
listing its modules with their lengths, read from `gemm_lab/` when the page builds (a moved module redraws it).

Its own module because it draws the code, not a kernel or the machine.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

from ..style import TEXT, WIDTH, wrap

PACKAGE = Path(__file__).resolve().parents[2]
# bottom to top: each layer imports only those below it (tests/test_structure.py holds the package to this)
LAYERS = (
    ("core", "", "kernels as data, compile, launch, verify, time beside cuBLAS, record and replay"),
    ("models", "models", "the paper models the chapters predict with"),
    ("precision", "precision", "beyond FP32: TF32 on the CPU, INT8, the Ozaki scheme"),
    ("pages", "pages", "what only the pages need: tables, charts, diagrams, explorers, exercises"),
    ("lab", "lab", "recording the book's data: the plan, sweeps, power, sanitizer, the command line"),
)
COLOURS = ("#c6dbef", "#d9f0d3", "#fdd0a2", "#dadaeb", "#f2f2f2")


def layer_modules(folder: str) -> dict[str, int]:
    """A layer's modules (a subpackage counts as one, by its folder name) and their lines of code."""
    root = PACKAGE / folder if folder else PACKAGE
    wings = {f for _, f, _ in LAYERS}  # the layers' folders: a wing is a band of its own, not the core's module
    out = {}
    for path in sorted(root.iterdir()):
        if path.suffix == ".py" and path.stem != "__init__":
            out[path.stem] = len(path.read_text().splitlines())
        elif path.is_dir() and (path / "__init__.py").exists() and (folder or path.name not in wings):
            out[path.name + "/"] = sum(len(p.read_text().splitlines()) for p in path.glob("*.py"))
    return out


def package_layers() -> Figure:
    """The five layers as stacked bands, core at the bottom: each band's name and lines, what it holds, its modules
    and their lines, and the one direction imports take (downward)."""
    line = 0.3  # inches per line of TEXT
    bands = []
    for (name, folder, about), colour in zip(LAYERS, COLOURS):
        mods = layer_modules(folder)
        lines = [(f"{name} ({sum(mods.values()):,} lines)", "bold"),
                 *((x, "italic") for x in wrap(about, TEXT, 0.8 * WIDTH).split("\n")),
                 *((x, "normal") for x in wrap(", ".join(f"{m} {n:,}" for m, n in mods.items()), TEXT,
                                              0.8 * WIDTH).split("\n"))]
        bands.append((lines, colour))
    gap, pad = 0.12, 0.12
    height = sum(len(lines) * line + 2 * pad for lines, _ in bands) + gap * (len(bands) - 1)
    fig = plt.figure(figsize=(WIDTH, height))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set(xlim=(0, WIDTH), ylim=(0, height))
    ax.axis("off")
    y = 0.0
    for lines, colour in bands:
        box = len(lines) * line + 2 * pad
        ax.add_patch(FancyBboxPatch((0.05, y), 0.86 * WIDTH, box, boxstyle="round,pad=0.0,rounding_size=0.08",
                                    facecolor=colour, edgecolor="dimgray"))
        for i, (text, look) in enumerate(lines):
            ax.text(0.18, y + box - pad - (i + 0.5) * line, text, va="center", fontsize=TEXT,
                    weight="bold" if look == "bold" else "normal", style="italic" if look == "italic" else "normal")
        y += box + gap
    x = 0.93 * WIDTH
    ax.add_patch(FancyArrowPatch((x, height - 0.2), (x, 0.2), arrowstyle="-|>", mutation_scale=22, color="dimgray",
                                 lw=2))
    ax.text(x + 0.2, height / 2, "imports point down", rotation=90, ha="center", va="center", fontsize=TEXT)
    return fig
