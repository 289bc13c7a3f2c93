"""Numbers that cannot drift: chapter prose quotes measured numbers through `gl.publish` and {glue} roles, never
typed, apart from a short allow-list of published figures and hardware constants; at most five typed per page.

Main-flow prose is what `../shared/tools/prose-stats` counts: front matter, code, tables, folded directives (dropdown,
toggle, lab notes, margin, solution) and roles such as {glue:text} are not prose. The claims page, which quotes
published numbers as data, is exempt.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from test_book_pages import code_cells, jupytext, toc_pages

# Typed numbers a page may quote: published figures and hardware constants, each with where it comes from.
ALLOWED = {
    "700 W": "the H100 SXM's power limit (NVIDIA's data sheet)",
    "494.7 TFLOP/s": "NVIDIA's dense TF32 peak of the H100 SXM",
    "1,830 MHz": "the boost clock NVIDIA's TF32 peak is quoted at",
    "15 MHz": "the step between the SM clocks an H100 or H200 offers (nvidia-smi -q -d SUPPORTED_CLOCKS)",
}
MAX_TYPED = 5
EXEMPT = {"claims"}  # quotes published numbers as data
MEASURED = re.compile(r"(?<![\w.{`])\d[\d,]*(?:\.\d+)?\s?(?:%|TFLOP/s|GFLOP/s|TFLOPS|GFLOPS|MHz|GB/s|TB/s|W\b|ns\b)")
ROLE = re.compile(r"\{[a-z:-]+\}`[^`]*`")
FOLDED = re.compile(r"dropdown|toggle|lab.?notes|margin|solution", re.I)
PROSE_DIRECTIVE = re.compile(r"\{(note|tip|important|admonition|warning|hint|seealso|attention|caution|div|card|"
                             r"exercise|epigraph|topic|sidebar)")

PAGES = [p for p in toc_pages() if p.stem not in EXEMPT]


def main_flow(text: str) -> str:
    """The page's main-flow prose, as prose-stats reads it."""
    lines = text.splitlines()
    out: list[str] = []
    stack: list[tuple[str, bool]] = []  # open fences: (fence, shown as prose)
    i = 0
    if lines and lines[0].strip() == "---":  # front matter
        i = next((j for j in range(1, len(lines)) if lines[j].strip() == "---"), 0) + 1
    while i < len(lines):
        line = lines[i]
        fence = re.match(r"^(\s*)(`{3,}|:{3,}|~{3,})(.*)$", line)
        if fence:
            mark, rest = fence.group(2), fence.group(3).strip()
            if stack and mark == stack[-1][0] and not rest:
                stack.pop()
                i += 1
                continue
            kind = rest.split()[0] if rest else ""
            j, options = i + 1, []
            while j < len(lines) and lines[j].strip().startswith(":") and not re.match(r"^\s*:{3,}", lines[j]):
                options.append(lines[j])
                j += 1
            folded = bool(FOLDED.search(rest + " " + " ".join(options)))
            stack.append((mark, bool(kind.startswith("{") and PROSE_DIRECTIVE.match(kind)) and not folded))
            i = j
            continue
        s = line.strip()
        if not (stack and not all(keep for _, keep in stack)) and not (
                s.startswith(("|", "+--", "```")) or s.startswith("(") and s.endswith(")=")):
            out.append(line)
        i += 1
    return "\n".join(out)


def typed_numbers(text: str) -> list[str]:
    """Measured numbers typed into main-flow prose (outside roles and inline code)."""
    flow = re.sub(r"`[^`]*`", " ", ROLE.sub(" ", main_flow(text)))
    return [" ".join(m.split()) for m in MEASURED.findall(flow)]


@pytest.mark.parametrize("md", PAGES, ids=[p.stem for p in PAGES])
def test_prose_types_no_measured_number(md):
    typed = typed_numbers(md.read_text())
    unknown = [t for t in typed if t not in ALLOWED]
    assert not unknown, (f"{md.name} types measured numbers {unknown}: publish them from the records (gl.publish, "
                         "{glue:text}`name`) or, for a published figure or hardware constant, add it to ALLOWED")
    assert len(typed) <= MAX_TYPED, f"{md.name} types {len(typed)} numbers (at most {MAX_TYPED}): {typed}"


def test_exempt_pages_are_in_the_book():
    """An exempt page that left the book (or was renamed) would exempt nothing, and its successor nobody checks."""
    assert {p.stem for p in toc_pages()} >= EXEMPT, f"EXEMPT names a page not in _toc.yml: {EXEMPT}"


def test_the_measure_sees_what_prose_stats_sees():
    page = ("---\nx: 1\n---\nIt reached 48.2 TFLOP/s and 93 %, at 700 W.\n\n"
            "```{code-cell} ipython3\nprint('51 %')\n```\n"
            "| 12 % |\n:::{dropdown} Lab notes\nA run gave 99 %.\n:::\n```{note}\nNote 3 GB/s here.\n```\n"
            "Published: {glue:text}`tflops` TFLOP/s, `4 %` in code, 120 ns.\n")
    assert typed_numbers(page) == ["48.2 TFLOP/s", "93 %", "700 W", "3 GB/s", "120 ns"]


def _published(md: Path) -> set[str]:
    """Names a page glues: keywords of its publish(...) calls (a `**mapping` is evaluated in replay, after the page's
    imports), the text and reasoning of the questions it publishes and the first argument of glue("name", ...)."""
    import gemm_lab

    names: set[str] = set()
    scope: dict = {"gl": gemm_lab}
    for cell in code_cells(jupytext.read(md)):
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                exec(compile(ast.Module([node], []), md.name, "exec"), scope)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                fn = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                if fn == "publish" and node.args and isinstance(node.args[0], ast.Constant):  # a question's
                    names |= set(gemm_lab.questions.glued(node.args[0].value))  # gl.questions.publish("name")
                elif fn == "publish":
                    names |= {k.arg for k in node.keywords if k.arg}
                    names |= {n for k in node.keywords if k.arg is None for n in eval(ast.unparse(k.value), scope)}
                elif fn == "glue" and node.args and isinstance(node.args[0], ast.Constant):
                    names.add(node.args[0].value)
    return names


@pytest.mark.parametrize("md", toc_pages(), ids=[p.stem for p in toc_pages()])
def test_every_glued_number_in_prose_is_published_on_its_page(md, replay):
    used = {m.split("::")[-1].rsplit(":", 1)[0] if ":" in m.split("::")[-1] else m.split("::")[-1]
            for m in re.findall(r"\{glue(?::\w+)?\}`([^`]+)`", md.read_text()) if "::" not in m}
    missing = sorted(used - _published(md))
    assert not missing, f"{md.name} quotes {missing} but publishes no such name (gl.publish(name=...))"


def test_publish_checks_its_names_and_values(monkeypatch):
    import myst_nb

    import gemm_lab as gl

    glued = {}
    monkeypatch.setattr(myst_nb, "glue", lambda name, value, display=True: glued.setdefault(name, (value, display)))
    assert gl.publish(pct="98.3 %", tflops=50.84, n=4096) == {"pct": "98.3 %", "tflops": 50.84, "n": 4096}
    assert glued == {"pct": ("98.3 %", False), "tflops": (50.84, False), "n": (4096, False)}
    with pytest.raises(ValueError, match="letters, digits"):
        gl.publish(**{"bad-name": "1"})
    with pytest.raises(TypeError, match="not list"):
        gl.publish(xs=[1, 2])
    with pytest.raises(ValueError, match="no number"):
        gl.publish(x=float("nan"))
    # pasted text is never typeset: inline math loses its dollars rather than show them
    assert gl.publish(who="with $A$ rounded, the pair along $N$") == {"who": "with A rounded, the pair along N"}
    assert glued["who"] == ("with A rounded, the pair along N", False)


def test_no_fp32_peak_for_tensor_core_rows(replay):
    """Tables give TF32 and 3xTF32 rows no '% FP32 peak' (their peak is the tensor cores'), and no page's prose
    puts an FP32-peak share beside a tensor-core kernel."""
    import gemm_lab as gl
    from gemm_lab.lab import plan

    table = gl.measurements_table(gl.bench_all([(k, None, 4096) for k in ("vectorized", *plan.TENSOR_CORES)],
                                               progress=False))
    column = table.columns.index("% FP32 peak")
    assert table.rows[0][column].endswith("%") and all(r[column] == "-" for r in table.rows[1:])
    for md in toc_pages():
        for sentence in re.split(r"(?<=[.!?])\s", main_flow(md.read_text())):
            if "FP32 peak" in sentence and re.search(r"TF32|tensor", sentence) and MEASURED.search(sentence):
                pytest.fail(f"{md.name}: an FP32-peak share beside a tensor-core kernel: {sentence.strip()}")
