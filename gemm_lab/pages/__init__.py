"""What only the book's pages need: tables, charts, diagrams drawn from a kernel's parameters, explorers, listings,
questions, exercises and the prose helpers.

A wing of gemm_lab: it uses the core, the models and the precision wing.
"""
from ..spec import ROOT


def book_pages() -> list[str]:
    """The book's pages in `_toc.yml` order (what `banner` and `budget(upto=...)` may name)."""
    toc = (ROOT / "_toc.yml").read_text().splitlines()
    return [line.split("book/")[1].strip() for line in toc if "book/" in line]


def check_page(page: str) -> str:
    """`page` if it is one of the book's pages; else a ValueError listing them (a typo would pass in silence)."""
    if page not in book_pages():
        raise ValueError(f"no book page {page!r}; the pages are {', '.join(book_pages())}")
    return page


def check_flag(name: str, value: object) -> bool:
    """`value` if it is a bool; else a TypeError ("no" or 0 would count as true or false in silence)."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, not {value!r}")
    return value
