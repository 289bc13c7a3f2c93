"""What the book's Sphinx build adds to jupyter-book's (`_config.yml` loads this module as an extension).

- Exercises are numbered per page, 1, 2, 3 in each chapter, instead of 1 to 57 across the book: a reader looks
  for "Exercise 3" in the chapter they are reading.
- A solution's title links its exercise without an underlined space in front ("Solution to Exercise 3").
- A figure's alt text is the figure in words (`style.describe`, its plain-text form in the page's kernel), not
  the image's file path, which is what an image without one gets.
- Lab notes have one look, whichever way a page folds them: an admonition or a sphinx-design dropdown titled
  "Lab notes: ..." becomes a folded admonition of class `lab-notes` (`_static/gemm_lab.css` draws it, and a
  table folded by `Table.folded` alike), set apart from the blue hints.
"""
from __future__ import annotations

from typing import Any

from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform


def number_exercises_per_page(app: Any, env: Any) -> list[str]:
    """Renumber each page's exercises 1, 2, ... in the order Sphinx numbered them across the book; the pages whose
    numbers changed, to rewrite. Runs after Sphinx's own numbering (`env-get-updated`)."""
    changed = []
    for docname, kinds in env.toc_fignumbers.items():
        numbers = kinds.get("exercise")
        if not numbers:
            continue
        per_page = {ids: (i,) for i, ids in enumerate(sorted(numbers, key=numbers.get), start=1)}
        if per_page != numbers:
            kinds["exercise"] = per_page
            changed.append(docname)
    return changed


class SolutionTitleSpace(SphinxPostTransform):
    """sphinx-exercise writes "Solution to" + a link whose text starts with a space, which the link underlines:
    the space moves out of the link. Runs after sphinx-exercise resolved the titles (its priority 21)."""

    default_priority = 25

    def run(self, **kwargs: Any) -> None:
        from sphinx_exercise.nodes import solution_node

        for solution in self.document.findall(solution_node):
            title = solution.children[0] if solution.children else None
            if not isinstance(title, nodes.title):
                continue
            for link in list(title.findall(nodes.reference)):
                text = link.children[0] if link.children else None
                if isinstance(text, nodes.Text) and text.startswith(" "):
                    link.replace(text, nodes.Text(text.lstrip()))
                    title.insert(title.index(link), nodes.Text(" "))


class FigureAltText(SphinxPostTransform):
    """An image output's alt text from the plain text beside it in the same output (a figure's `style.describe`),
    while every format of the output is still there: before myst-nb keeps only the one it shows (its priority 4)."""

    default_priority = 3

    def run(self, **kwargs: Any) -> None:
        for bundle in self.document.findall(nodes.container):
            if bundle.get("nb_element") != "mime_bundle":
                continue
            by_type = {child.get("mime_type"): child for child in bundle.children}
            plain = by_type.get("text/plain")
            words = plain.astext().strip() if plain is not None else ""
            if not words or words.startswith("<"):  # "<Figure size 660x400 with 1 Axes>": a repr says nothing
                continue
            for mime_type, child in by_type.items():
                if mime_type and mime_type.startswith("image/"):
                    for image in child.findall(nodes.image):
                        image.setdefault("alt", words)


LAB_NOTES = "Lab note"  # how the title of every lab note begins ("Lab notes: ...", "Lab note: ...")


class LabNotes(SphinxPostTransform):
    """Every lab note as one kind of node, a folded admonition of class `lab-notes`: a dropdown directive titled as
    a lab note becomes one. Runs before sphinx-design turns its dropdowns into HTML (its priority 199)."""

    default_priority = 150

    def run(self, **kwargs: Any) -> None:
        for note in list(self.document.findall(nodes.admonition)):
            title = note.children[0] if note.children else None
            if isinstance(title, nodes.title) and title.astext().startswith(LAB_NOTES):
                note["classes"] = [*dict.fromkeys([*note["classes"], "dropdown", "lab-notes"])]
        for dropdown in list(self.document.findall(nodes.container)):
            heading = dropdown.children[0] if dropdown.children else None
            if (dropdown.get("design_component") != "dropdown" or not isinstance(heading, nodes.rubric)
                    or not heading.astext().startswith(LAB_NOTES)):
                continue
            note = nodes.admonition("", nodes.title("", "", *heading.children), *dropdown.children[1:],
                                    classes=["dropdown", "lab-notes"], ids=[*dropdown["ids"], *heading["ids"]])
            note.source, note.line = dropdown.source, dropdown.line
            dropdown.replace_self(note)


def setup(app: Any) -> dict:
    app.connect("env-get-updated", number_exercises_per_page, priority=600)  # after Sphinx numbered the book
    app.add_post_transform(SolutionTitleSpace)
    app.add_post_transform(FigureAltText)
    app.add_post_transform(LabNotes)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
