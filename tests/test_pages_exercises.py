"""The book's exercises (issues 33 and 40), read from the pages of _toc.yml without building the book.

Chapters 1-9 and the GPU primer close with an "Exercises" section (before their folded lab notes) of at least two
exercises; each exercise is numbered (sphinx-exercise), and has one folded hint before its folded solution. A page
asks only its own chapter's questions (`gemm_lab.questions`) and write-the-kernel exercises
(`gemm_lab.exercises.KERNEL_EXERCISES`), submits each kernel in place of that exercise's variant at legal tile sizes,
shows the skeleton when the page builds (so the static page has it, with a copy button), leaves the submission to the
reader (skip-execution), and shows the solution, the variant's file with the hole lines highlighted, only folded under
its exercise. Each write-the-kernel exercise asks for a variant whose answer is not on the page: most of its hole lines
are in no kernel of the book. Every write-the-kernel exercise appears on its chapter's page, so the book has as many
as KERNEL_EXERCISES (at least five). The primer, chapters 0 to 7, 8b and 10 each ask at least one open "why"
question (label ex-...-why-..., no number to type, a folded hint and answer).
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

import pytest
from test_book_pages import toc_pages

import gemm_lab as gl
from gemm_lab import catalog
from gemm_lab.pages import exercises, questions, variants

PAGES = toc_pages()
IDS = [p.stem for p in PAGES]
REQUIRED = {"gpu_primer", "ch01_naive_coalesced", "ch02_smem_tiling", "ch03_register_blocking", "ch04_vectorized",
            "ch05_bank_conflicts", "ch06_prefetch", "ch07_warp_tiling", "ch08_tensor_cores", "ch08a_wgmma",
            "ch08b_precision", "ch08c_data_movers", "ch09_hopper_pipeline"}  # issue 33: at least two exercises in each
# of chapters 1-9 and the primer (chapter 8's pages 8a and 8c too, issue 40)
WHY = {"gpu_primer", "ch00_measuring", "ch01_naive_coalesced", "ch02_smem_tiling", "ch03_register_blocking",
       "ch04_vectorized", "ch05_bank_conflicts", "ch06_prefetch", "ch07_warp_tiling", "ch08b_precision",
       "ch10_ozaki"}  # issue 40: at least one open "why" question each
MIN_EXERCISES, MIN_KERNEL_EXERCISES = 2, 5
FENCE = re.compile(r"^(`{3,}|~{3,}|:{3,})\s*(?:\{([\w-]+)\})?\s*(.*)$")  # a directive, or a plain code block


@dataclass
class Block:
    """A top-level directive of a MyST page (a code cell is one too), or a heading (kind "#", "##", ...)."""

    kind: str
    argument: str
    line: int
    options: dict[str, str] = field(default_factory=dict)
    body: str = ""

    @property
    def tags(self) -> set[str]:
        return set(re.findall(r"[\w-]+", self.options.get("tags", "")))


def blocks(text: str) -> list[Block]:
    """The page's top-level directives and headings, in order (directives nested in another are its body)."""
    lines, out, i = text.splitlines(), [], 0
    if lines and lines[0].strip() == "---":  # front matter
        i = next(j for j in range(1, len(lines)) if lines[j].strip() == "---") + 1
    while i < len(lines):
        match = FENCE.match(lines[i])
        if match:
            fence, kind, argument = match.groups()
            j, options = i + 1, {}
            while j < len(lines) and re.match(r"^:[\w-]+:", lines[j]):
                name, _, value = lines[j][1:].partition(":")
                options[name] = value.strip()
                j += 1
            end = next(k for k in range(j, len(lines)) if lines[k].strip() == fence)
            if kind:
                out.append(Block(kind, argument.strip(), i + 1, options, "\n".join(lines[j:end]).strip()))
            i = end + 1
            continue
        heading = re.match(r"^(#+)\s+(.*)$", lines[i])
        if heading:
            out.append(Block(heading.group(1), heading.group(2).strip(), i + 1))
        i += 1
    return out


def calls(page: list[Block], name: str) -> list[tuple[Block, ast.Call]]:
    """Every call of a function or method `name` in the page's code cells, with its cell."""
    found = []
    for cell in (b for b in page if b.kind == "code-cell"):
        try:
            tree = ast.parse(cell.body)
        except SyntaxError:  # IPython syntax: no call of ours
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and \
                    (getattr(node.func, "attr", None) or getattr(node.func, "id", None)) == name:
                found.append((cell, node))
    return found


def exercises_of(page: list[Block]) -> list[list[Block]]:
    """Each exercise with the blocks after it, up to the next exercise or the end of its section."""
    groups: list[list[Block]] = []
    for b in page:
        if b.kind == "exercise":
            groups.append([b])
        elif groups and b.kind.startswith("#"):
            break
        elif groups:
            groups[-1].append(b)
    return groups


def test_the_reader_sees_what_this_test_sees():
    page = ("---\nx: 1\n---\n# T\n\n## Exercises\n\n````{exercise} One\n:label: ex-one\n\nText.\n````\n\n"
            "```{code-cell} ipython3\n:tags: [skip-execution]\n\ngl.answer(\"a\", None)\n```\n\n"
            "```{admonition} Hint\n:class: dropdown\n\nThink.\n```\n\n"
            "````{solution} ex-one\n:class: dropdown\n\n```{note}\nnested\n```\n````\n\n## After\n")
    kinds = [(b.kind, b.argument) for b in blocks(page)]
    assert kinds == [("#", "T"), ("##", "Exercises"), ("exercise", "One"), ("code-cell", "ipython3"),
                     ("admonition", "Hint"), ("solution", "ex-one"), ("##", "After")]
    (group,) = exercises_of(blocks(page))
    assert group[0].options["label"] == "ex-one" and group[1].tags == {"skip-execution"}
    assert "{note}" in group[-1].body
    assert [a.value for _, c in calls(blocks(page), "answer") for a in c.args[:1]] == ["a"]


@pytest.mark.parametrize("md", [p for p in PAGES if p.stem in REQUIRED],
                         ids=[p.stem for p in PAGES if p.stem in REQUIRED])
def test_chapters_one_to_nine_and_the_primer_close_with_exercises(md):
    page = blocks(md.read_text())
    assert len(exercises_of(page)) >= MIN_EXERCISES, f"{md.name}: at least {MIN_EXERCISES} exercises (issue 33)"


@pytest.mark.parametrize("md", PAGES, ids=IDS)
def test_exercises_sit_at_the_end_before_the_lab_notes(md):
    page = blocks(md.read_text())
    if not any(b.kind == "exercise" for b in page):
        return
    headings = [b for b in page if b.kind.startswith("#")]
    section = next((b for b in headings if b.argument == "Exercises"), None)
    assert section and section.kind == "##", f"{md.name}: put the exercises under a '## Exercises' heading"
    after = [b for b in headings if b.line > section.line and not b.argument.startswith("Lab notes")]
    assert not after, f"{md.name}: the Exercises section is the page's last (but for its lab notes)"
    assert all(b.line > section.line for b in page if b.kind in ("exercise", "solution", "solution-start")), \
        f"{md.name}: every exercise and solution inside the Exercises section"
    notes = [b for b in page if b.kind == "admonition" and b.argument.startswith("Lab notes")]
    last = max(b.line for b in page if b.kind in ("solution", "solution-end"))
    assert all(b.line > last for b in notes), f"{md.name}: the folded lab notes come after the exercises"


@pytest.mark.parametrize("md", PAGES, ids=IDS)
def test_each_exercise_is_numbered_with_one_folded_hint_before_its_folded_solution(md):
    for group in exercises_of(blocks(md.read_text())):
        exercise, rest = group[0], group[1:]
        label = exercise.options.get("label", "")
        assert re.fullmatch(r"ex-[\w-]+", label), f"{md.name}:{exercise.line}: give the exercise a :label: ex-..."
        assert "nonumber" not in exercise.options, f"{md.name}:{exercise.line}: exercises are numbered"
        hints = [i for i, b in enumerate(rest) if b.kind == "admonition" and b.argument == "Hint"]
        solutions = [i for i, b in enumerate(rest) if b.kind in ("solution", "solution-start")]
        assert len(hints) == 1 and len(solutions) == 1, f"{md.name}: {label} needs one hint and one solution"
        hint, solution = rest[hints[0]], rest[solutions[0]]
        assert hints[0] < solutions[0], f"{md.name}: {label}'s hint comes before its solution"
        assert hint.options.get("class") == "dropdown" == solution.options.get("class"), \
            f"{md.name}: {label}'s hint and solution are folded (:class: dropdown)"
        assert solution.argument == label, f"{md.name}: the solution after {label} names {solution.argument!r}"
        if solution.kind == "solution-start":
            assert any(b.kind == "solution-end" for b in rest[solutions[0] + 1:]), \
                f"{md.name}: close {label}'s solution"


def test_exercise_labels_are_unique_in_the_book():
    labels = [g[0].options.get("label") for md in PAGES for g in exercises_of(blocks(md.read_text()))]
    assert len(labels) == len(set(labels)), sorted(x for x in labels if labels.count(x) > 1)


def _names(page: list[Block], function: str) -> list[str]:
    return [c.args[0].value for _, c in calls(page, function) if c.args and isinstance(c.args[0], ast.Constant)]


@pytest.mark.parametrize("md", PAGES, ids=IDS)
def test_a_page_asks_its_own_questions_and_glues_what_it_asks(md):
    page = blocks(md.read_text())
    answered, published = _names(page, "answer"), _names(page, "publish")
    for name in answered + published:
        assert name in questions.QUESTIONS, f"{md.name}: no question {name!r} in gemm_lab/questions.py"
        assert questions.QUESTIONS[name].chapter == md.stem, f"{md.name} asks {name!r}, a question of another chapter"
    assert sorted(answered) == sorted(published), \
        f"{md.name}: publish each question it answers, once (gl.questions.publish: its text and reasoning)"
    for name in answered:
        ask, how = questions.glued(name)
        text = md.read_text()
        assert f"{{glue:text}}`{ask}`" in text and f"{{glue:text}}`{how}`" in text, \
            f"{md.name}: the exercise pastes {ask} and its solution {how}"


@pytest.mark.parametrize("md", PAGES, ids=IDS)
def test_a_page_writes_its_own_kernels_and_shows_the_holes_in_the_solution(md):
    page = blocks(md.read_text())
    names = _names(page, "skeleton")
    for name in names:
        assert name in exercises.KERNEL_EXERCISES, f"{md.name}: no write-the-kernel exercise {name!r}"
        assert exercises.KERNEL_EXERCISES[name].chapter == md.stem, f"{md.name} writes {name!r} of another chapter"
    likes = {exercises.KERNEL_EXERCISES[n].like for n in names}
    for cell, call in calls(page, "submit"):
        like, params = (*(ast.literal_eval(a) for a in call.args[1:3]), None)[:2]
        assert like in likes, \
            f"{md.name}: gl.submit(..., {like!r}) stands in for no kernel whose skeleton the page gives"
        catalog.validate(exercises.spec_of(like), params)  # tile sizes its rules allow
        assert "skip-execution" in cell.tags, f"{md.name}: the reader runs gl.submit (tag it skip-execution)"
    for cell, _ in calls(page, "skeleton"):
        shows = cell.body.splitlines()[-1].strip() in ("source", "print(source)")
        assert not {"skip-execution", "remove-output", "remove-cell"} & cell.tags and shows, \
            f"{md.name}: show the skeleton when the page builds (its last line `source`; folded is fine), so the " \
            "page has it"
    assert sorted(_names(page, "solution")) == sorted(names), \
        f"{md.name}: each solution shows its file, holes highlighted, with gl.exercises.solution(name)"
    for group in exercises_of(page):
        shown = [b for b in group if b.kind == "code-cell" and "solution(" in b.body]
        start = next((i for i, b in enumerate(group) if b.kind == "solution-start"), None)
        end = next((i for i, b in enumerate(group) if b.kind == "solution-end"), None)
        for cell in shown:
            assert start is not None and start < group.index(cell) < end, \
                f"{md.name}:{cell.line}: the solution's listing belongs inside its folded solution"
            assert "remove-input" in cell.tags, f"{md.name}: show the solution's listing alone (remove-input)"
            listing = eval(cell.body, {"gl": gl})
            assert sum(line.kind == "!" for line in listing.lines) == len(
                exercises.KERNEL_EXERCISES[_names([cell], "solution")[0]].holes)
    shown_elsewhere = [c for c, _ in calls(page, "solution") if not any(c in g for g in exercises_of(page))]
    assert not shown_elsewhere, f"{md.name}: a solution shown outside its exercise"


def _code(line: str) -> str:
    """A line's code: no comment, spaces collapsed."""
    return " ".join(catalog.code_only(line).split())


BOOK_CODE = ["\n" + "\n".join(filter(None, map(_code, path.read_text().splitlines()))) + "\n"
             for path in (catalog.ROOT / "kernels").iterdir() if path.suffix in (".cu", ".cuh")]


def _todos(holes: tuple[exercises.Hole, ...]) -> list[list[str]]:
    """The lines each TODO of a skeleton asks for: a hole, and the holes that continue it (no hint of their own)."""
    todos: list[list[str]] = []
    for hole in holes:
        if hole.hint or not todos:
            todos.append([])
        todos[-1].append(hole.line)
    return todos


@pytest.mark.parametrize("name", list(exercises.KERNEL_EXERCISES))
def test_the_answer_is_not_on_the_page(name):
    """A write-the-kernel exercise asks for a variant: most of what the reader writes (a TODO's lines, in their
    order) is in no kernel the book shows (kernels/), so no listing above the exercise holds the answer."""
    todos = _todos(exercises.KERNEL_EXERCISES[name].holes)
    new = [t for t in todos if not any("\n" + "\n".join(map(_code, t)) + "\n" in code for code in BOOK_CODE)]
    assert 2 * len(new) >= len(todos), f"{name}: only {new} of its TODOs are not in the book's kernels"
    page = (catalog.ROOT / "book" / f"{exercises.KERNEL_EXERCISES[name].chapter}.md").read_text()
    assert variants.SOLUTIONS not in page.replace(f"{variants.SOLUTIONS}/", ""), f"{name}: the page names the file"


@pytest.mark.parametrize("md", [p for p in PAGES if p.stem in WHY], ids=[p.stem for p in PAGES if p.stem in WHY])
def test_each_page_asks_an_open_why_question(md):
    """d2l style: a question answered in words with the page's model, a folded hint and a folded answer, and no cell
    that checks a number or a kernel."""
    whys = [g for g in exercises_of(blocks(md.read_text())) if "-why-" in g[0].options.get("label", "")]
    assert whys, f"{md.name}: ask at least one open 'why' question (an exercise labelled ex-...-why-...)"
    for group in whys:
        end = next(i for i, b in enumerate(group) if b.kind in ("solution", "solution-end"))
        assert not [b for b in group[:end] if b.kind == "code-cell"], f"{md.name}: {group[0].options['label']} is open"
        assert "?" in group[0].body, f"{md.name}: {group[0].options['label']} asks a question"


@pytest.mark.parametrize("name", list(exercises.KERNEL_EXERCISES))
def test_every_write_the_kernel_exercise_is_on_its_chapters_page(name):
    page = blocks((catalog.ROOT / "book" / f"{exercises.KERNEL_EXERCISES[name].chapter}.md").read_text())
    assert name in _names(page, "skeleton"), f"{name} is not on its chapter's page"


@pytest.mark.parametrize("name", list(exercises.KERNEL_EXERCISES))
def test_hole_lines_number_the_lines_the_skeleton_removes(name):
    exercise = exercises.KERNEL_EXERCISES[name]
    lines = exercises.spec_of(exercise.like).path.read_text().splitlines()
    numbers = {n for part in exercises.hole_lines(name).split(", ")
               for n in range(int(part.split("-")[0]), int(part.split("-")[-1]) + 1)}
    assert sorted(lines[n - 1].strip() for n in numbers) == sorted(h.line for h in exercise.holes)


def test_the_pages_that_must_ask_are_in_the_book():
    """REQUIRED and WHY filter the book's pages for the tests above: a page renamed or dropped would leave them
    silently, so each must still be a page of _toc.yml."""
    assert set(IDS) >= REQUIRED | WHY, f"not pages of the book: {sorted((REQUIRED | WHY) - set(IDS))}"


def test_the_book_has_enough_write_the_kernel_exercises():
    """Outside the test parametrized by them, which an empty KERNEL_EXERCISES would leave with no case at all."""
    assert len(exercises.KERNEL_EXERCISES) >= MIN_KERNEL_EXERCISES
