"""The glossary defines every stall reason the book charts and every term the pages link, and points each entry to
a page of the book."""
import re
from pathlib import Path

from gemm_lab.models.hardware import STALL_REASONS

ROOT = Path(__file__).resolve().parent.parent
GLOSSARY = ROOT / "book" / "glossary.md"


def entries() -> dict[str, str]:
    """Each term of the glossary directives (aliases included) -> its definition."""
    out = {}
    for block in re.findall(r"```\{glossary\}\n(.*?)\n```", GLOSSARY.read_text(), re.S):
        terms: list[str] = []
        for entry in re.split(r"\n\n", block.strip()):
            lines = entry.splitlines()
            terms = [line for line in lines if not line.startswith("  ")]
            definition = " ".join(line.strip() for line in lines if line.startswith("  "))
            out.update(dict.fromkeys(terms, definition))
    return out


def test_every_entry_points_to_a_page_of_the_book():
    found = entries()
    assert len(found) > 60
    pages = {p.stem for p in (ROOT / "book").glob("*.md")}
    for term, definition in found.items():
        linked = re.findall(r"\{doc\}`([\w]+)`", definition)
        assert linked and set(linked) <= pages, term


def test_every_stall_reason_the_book_charts_is_defined():
    assert set(STALL_REASONS) <= set(entries())


def test_every_term_link_of_the_book_is_defined():
    terms = {t.lower() for t in entries()}
    links = [(page.name, label) for page in (ROOT / "book").glob("*.md")
             for label in re.findall(r"\{term\}`([^`]+)`", page.read_text())]
    assert links, "no {term} link found in book/*.md: has the role's spelling changed?"
    for page, label in links:
        target = re.search(r"<([^>]+)>$", label)
        assert (target[1] if target else label).lower() in terms, (page, label)
