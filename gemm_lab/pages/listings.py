"""Kernel code on the page, read from `kernels/` when the page runs (never copied into a chapter).

`changes(kernel)` shows what is new against the kernel before it in the catalog (or `against=`): a diff of the
two kernel functions, each line under its own file's number. `excerpt(source, ...)` shows one file, or a named
part of it (a function, or the lines between two markers), with chosen lines highlighted. Both wrap long lines
instead of cutting them, and render as HTML in the book and in Jupyter (text in a terminal). The whole file is one
click away, folded under the first listing of it that a page shows; later listings of the file point there (a page
that folded a 900-line file under each of seven excerpts weighed a megabyte).
"""
from __future__ import annotations

import difflib
import html
import numbers
import re
from dataclasses import dataclass
from pathlib import Path

from .. import catalog
from ..spec import as_integer
from . import check_flag

KERNELS_DIR = catalog.ROOT / "kernels"
CSS_CLASS = "gl-listing"
_STYLE = """
.gl-listing{border:1px solid #ddd;border-radius:4px;margin:0.4em 0;background:#fafafa;overflow:hidden}
.gl-listing table{border-collapse:collapse;width:100%;margin:0;font-size:0.82em;line-height:1.45;
  font-family:var(--pst-font-family-monospace,SFMono-Regular,Menlo,Consolas,monospace)}
.gl-listing td{border:none;padding:0 0.4em;vertical-align:top}
.gl-listing td.no{color:#888;text-align:right;user-select:none;width:1%;white-space:nowrap}
.gl-listing td.mark{color:#666;user-select:none;width:1%;padding:0 0.2em}
.gl-listing td.code{white-space:pre-wrap;overflow-wrap:anywhere;word-break:normal;position:relative;
  padding-left:calc(0.4em + 2ch);text-indent:-2ch}
.gl-listing td.code .wrapped{position:absolute;left:0.4em;top:1.45em;bottom:0;width:2ch;
  background:HOOK 0 0/1.6ch 1.45em repeat-y}
.gl-listing td.code .keep{display:inline-block;text-indent:0}
.gl-listing td.code .s:not(.keep){word-break:break-all}
.gl-listing tr.add{background:#e6ffec}.gl-listing tr.add td.mark{color:#1a7f37}
.gl-listing tr.del{background:#ffebe9}.gl-listing tr.del td.mark{color:#cf222e}
.gl-listing tr.hl{background:#fff3c4}
.gl-listing tr.gap td{color:#888;font-style:italic;background:#f0f0f0}
.gl-listing .title{font-size:0.85em;padding:0.2em 0.5em;border-bottom:1px solid #ddd;background:#f3f3f3}
.gl-listing .title .where{color:#666}
.gl-listing details{border-top:1px solid #ddd}
.gl-listing summary{cursor:pointer;font-size:0.85em;padding:0.2em 0.5em;color:#36c}
""".replace("HOOK", "url(\"data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 16 20'%3E"
               "%3Cpath d='M3 3v7a3 3 0 0 0 3 3h7M10 10l3 3-3 3' fill='none' stroke='%23999' stroke-width='1.6'/%3E"
               "%3C/svg%3E\")")  # a hook, as _static/gemm_lab.css draws it in code cells
# A line too long for the page wraps under a hanging indent, a hook marking each line it continues onto (the mark
# starts one line down and spans what the cell wraps into: nothing on a line that fits). A string literal short
# enough for a line moves to the next line whole (class "keep") rather than split at one of its spaces; a longer one
# fills the line it starts on.
WRAPPED = "<span class='wrapped'></span>"
KEEP_WHOLE = 60  # characters: a string this long always fits a line of the page (about 80 at 800 px)


@dataclass(frozen=True)
class Line:
    """One shown line: its number in the old and the new file (None where it has none), its kind and text.
    Kinds: " " unchanged, "+" added, "-" removed, "!" highlighted, "…" skipped unchanged lines (text: how many)."""

    old: int | None
    new: int | None
    kind: str
    text: str


@dataclass(frozen=True)
class Listing:
    """Lines of a kernel file (or a diff of two) with the file they come from, shown with its whole text folded."""

    title: str
    path: Path  # the file whose whole text is folded under the listing
    old_path: Path | None  # the other file of a diff
    lines: tuple[Line, ...]
    whole: bool = False  # the listing is the whole file: nothing to fold

    def __str__(self) -> str:
        two = self.old_path is not None
        out = [self.title]
        for x in self.lines:
            numbers = (f"{x.old or '':>5} " if two else "") + f"{x.new or '':>5}"
            out.append(f"{' ' * len(numbers)}   … {x.text}" if x.kind == "…" else f"{numbers} {x.kind} {x.text}")
        return "\n".join(out)

    def _repr_html_(self) -> str:
        two = self.old_path is not None
        files = {p: _highlighted(p) for p in filter(None, (self.path, self.old_path))}
        rows = []
        for x in self.lines:
            if x.kind == "…":
                rows.append(f"<tr class='gap'><td class='no' colspan='{3 if two else 2}'></td>"
                            f"<td class='code'>⋯ {html.escape(x.text)}</td></tr>")
                continue
            code = files[self.old_path][x.old - 1] if x.kind == "-" else files[self.path][x.new - 1]
            kind = {"+": "add", "-": "del", "!": "hl"}.get(x.kind, "")
            numbers = (f"<td class='no'>{x.old or ''}</td>" if two else "") + f"<td class='no'>{x.new or ''}</td>"
            mark = {"+": "+", "-": "−"}.get(x.kind, "")
            rows.append(f"<tr class='{kind}'>{numbers}<td class='mark'>{mark}</td>"
                        f"<td class='code'>{WRAPPED}{code}</td></tr>")
        body = f"<table>{''.join(rows)}</table>"
        carries = _FILE_SHOWN.setdefault(self.path, self) == self  # a rerun of the first listing carries it again
        fold = "" if self.whole or not carries else (
            f"<details><summary>the whole file: {html.escape(_name(self.path))} "
            f"({len(files[self.path])} lines)</summary><table>"
            + "".join(f"<tr><td class='no'>{i}</td><td class='code'>{WRAPPED}{code}</td></tr>"
                      for i, code in enumerate(files[self.path], start=1)) + "</table></details>")
        where = "" if self.whole or carries else (
            " <span class='where'>(the whole file: under this page's first listing of it, which may sit in "
            "folded lab notes)</span>")
        return (f"<style>{_STYLE}{_token_css()}</style><div class='{CSS_CLASS}'>"
                f"<div class='title'>{html.escape(self.title)}{where}</div>{body}{fold}</div>")


# file -> the listing that folds the file's whole text on this page (a page runs in a kernel of its own)
_FILE_SHOWN: dict[Path, Listing] = {}


def changes(kernel: str, against: str | None = None, *, function: str | None = None,
            against_function: str | None = None, whole_file: bool = False, context: int = 3, skip: str = "",
            skipped: str = "not shown") -> Listing:
    """What is new in `kernel` against `against` (default: the kernel before it in the catalog's order): a diff of
    the two kernel functions, `context` unchanged lines around each change. `function` diffs another function of
    the kernel's file (a device function doing the work) against `against_function` (default: the function of that
    name in the other file if it has one, else its kernel); `whole_file` diffs the two files. `skip` leaves lines of
    the new file out, as `excerpt` does (a switch the page does not discuss), `skipped` saying what they are.

        gl.changes("thread_tile_2d")                          # against thread_tile_1d, the kernel before it
        gl.changes("pipelined_warp_tiling", against="warp_tiling", function="pipelined_block",
                   against_function="sgemm_warp_tiling")
        gl.changes("mma_tf32_tma", against="mma_tf32", whole_file=True)
    """
    spec = catalog.get(kernel)
    _check_markers(function=function, against_function=against_function)
    check_flag("whole_file", whole_file)
    context = as_integer("context (unchanged lines around a change)", context)
    if context < 0:
        raise ValueError(f"context={context}: the unchanged lines shown around a change are 0 or more")
    names = list(catalog.KERNELS)
    if against is None:
        if names.index(spec.name) == 0:
            raise ValueError(f"{spec.name} is the first kernel of the catalog: pass against=")
        against = names[names.index(spec.name) - 1]
    old = catalog.get(against)
    new_lines, old_lines = _lines(spec.path), _lines(old.path)
    if whole_file and (function or against_function):
        raise ValueError("whole_file=True diffs the files: leave function= and against_function= out")
    if whole_file:
        if old.path == spec.path:
            raise ValueError(f"{spec.name} and {old.name} share {spec.source}: compare their functions instead")
        (o0, o1), (n0, n1) = (1, len(old_lines)), (1, len(new_lines))
    else:
        new_fn = function or spec.function
        old_fn = against_function or (function if function and _defines(old.path, function) else old.function)
        (o0, o1), (n0, n1) = function_span(old.path, old_fn), function_span(spec.path, new_fn)
    shown: list[Line] = []
    matcher = difflib.SequenceMatcher(None, old_lines[o0 - 1:o1], new_lines[n0 - 1:n1], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            same = [Line(o0 + i1 + d, n0 + j1 + d, " ", new_lines[n0 + j1 + d - 1]) for d in range(i2 - i1)]
            first, last = not shown, (i2, j2) == (o1 - o0 + 1, n1 - n0 + 1)
            keep_head = [] if first else same[:context]
            keep_tail = [] if last else same[-context:] if context else []
            if len(same) > len(keep_head) + len(keep_tail) + 1:
                skipped = len(same) - len(keep_head) - len(keep_tail)
                shown += [*keep_head, Line(None, None, "…", f"{skipped} unchanged lines"), *keep_tail]
            else:
                shown += same
            continue
        shown += [Line(o0 + i, None, "-", old_lines[o0 + i - 1]) for i in range(i1, i2)]
        shown += [Line(None, n0 + j, "+", new_lines[n0 + j - 1]) for j in range(j1, j2)]
    left_out = _line_numbers("skip", skip, spec.path, len(new_lines))
    if left_out - {x.new for x in shown}:
        raise ValueError(f"skip={skip!r}: line(s) {number_ranges(left_out - {x.new for x in shown})} of "
                         f"{_name(spec.path)} are not shown")
    shown = _fold(shown, left_out, skipped)
    if not any(x.kind in "+-" for x in shown):
        raise ValueError(f"{spec.name} and {old.name}: no line of "
                         f"{'the files' if whole_file else 'their kernel functions'} differs")
    what = "the files" if whole_file else f"{old_fn} → {new_fn}"
    title = f"{_name(old.path)} → {_name(spec.path)}: {what} (+ new, − gone)"
    return Listing(title, spec.path, old.path, tuple(shown))


def _block(path: Path, lines: list[str], marker: str, first: int, last: int) -> set[int]:
    """The numbers of the lines from the first in first..last containing `marker` to the "}" at its indentation."""
    opening = _find(path, lines, marker, first)
    closing = lines[opening - 1][:len(lines[opening - 1]) - len(lines[opening - 1].lstrip())] + "}"
    end = next((n for n in range(opening + 1, last + 1) if lines[n - 1].rstrip() == closing), None)
    if end is None:
        raise ValueError(f"skip_block={marker!r}: no '}}' closes line {opening} of {_name(path)} by line {last}")
    return set(range(opening, end + 1))


def excerpt(source: str, *, function: str | None = None, start_at: str | None = None, end_before: str | None = None,
            end_at: str | None = None, highlight: str | int = "", skip: str | int = "", skip_block: str | None = None,
            skipped: str = "not shown") -> Listing:
    """One file of `kernels/` (a kernel's name or a file name such as "staging.cuh"), whole or in part: the lines of
    `function` (with its template line and the comment above it), or from the first line containing `start_at` to
    the line before the next containing `end_before` (or up to the one containing `end_at`). `highlight` marks lines
    by their number in the file ("14-15, 27", or one number, 14); `skip` leaves lines out (a branch the page does not
    discuss), each run of them shown as one line saying how many, and `skipped` what they are ("of the 3xTF32
    path"); `skip_block` leaves out the block that opens on the first shown line containing it, through the brace
    that closes it (markers, unlike line numbers, follow the code when lines above it change).

        gl.excerpt("warp_tiling", highlight="32-33, 63-80")
        gl.excerpt("14_tf32_wgmma_ws.cu", start_at="if (PRODUCER && wg == 0) {", end_before="else if (HELPERS")
        gl.excerpt("tf32.cuh", function="mma_tf32")
        gl.excerpt("wgmma_tf32", start_at="    wgmma_fence();", end_before="  };", skip="100-104, 106",
                   skipped="of the 3xTF32 path")
    """
    path = source_path(source)
    lines = _lines(path)
    _check_markers(function=function, start_at=start_at, end_before=end_before, end_at=end_at, skip_block=skip_block)
    if function and (start_at or end_before or end_at):
        raise ValueError("give either function= or markers (start_at=, end_before=, end_at=), not both")
    if end_before and end_at:
        raise ValueError("give end_before= or end_at=, not both")
    if function:
        first, last = function_span(path, function)
    else:
        first = _find(path, lines, start_at, 1) if start_at else 1
        last = len(lines)
        if end_before:
            last = _find(path, lines, end_before, first + 1) - 1
        elif end_at:
            last = _find(path, lines, end_at, first)
    marked = _line_numbers("highlight", highlight, path, len(lines))
    left_out = _line_numbers("skip", skip, path, len(lines))
    if skip_block:
        left_out |= _block(path, lines, skip_block, first, last)
    for name, spec, chosen in (("highlight", highlight, marked), ("skip", skip, left_out)):
        outside = sorted(n for n in chosen if not first <= n <= last)
        if outside:
            raise ValueError(f"{name}={spec!r}: line(s) {number_ranges(outside)} of {_name(path)} are outside the "
                             f"shown lines {first}-{last}")
    if marked & left_out:
        raise ValueError(f"line(s) {number_ranges(marked & left_out)} are both highlighted and skipped")
    shown = _fold([Line(None, n, "!" if n in marked else " ", lines[n - 1]) for n in range(first, last + 1)],
                  left_out, skipped)
    part = f"{function}()" if function else f"lines {first}-{last}" if (first, last) != (1, len(lines)) else ""
    title = _name(path) + (f": {part}" if part else "")
    return Listing(title, path, None, tuple(shown), whole=(first, last) == (1, len(lines)) and not left_out)


def _fold(shown: list[Line], left_out: set[int], skipped: str) -> list[Line]:
    """`shown` with the lines whose new-file number is in `left_out` folded: each run of them becomes one line saying
    how many, and `skipped` what they are."""
    folded: list[Line] = []
    for x in shown:
        if x.new not in left_out:
            folded.append(x)
        elif x.new - 1 not in left_out:  # the first line of a run of numbers stands for the run
            run = next(n for n in range(x.new, x.new + len(left_out) + 1) if n not in left_out) - x.new
            folded.append(Line(None, None, "…", f"{run} line{'s' if run > 1 else ''} {skipped}"))
    return folded


def source_path(source: str) -> Path:
    """The file of kernels/ that `source` names: a catalogued kernel, a probe, or a file name (with or without
    `kernels/`)."""
    if not isinstance(source, str):
        raise TypeError(f"source must be a kernel's name or the name of a file of kernels/ (a str), not {source!r}")
    if source in catalog.KERNELS or source in catalog.PROBES:
        return (catalog.KERNELS.get(source) or catalog.PROBES[source]).path
    path = KERNELS_DIR / Path(source.removeprefix("kernels/")).name
    if not path.is_file():
        known = ", ".join(sorted(p.name for p in KERNELS_DIR.iterdir() if p.suffix in (".cu", ".cuh")))
        raise ValueError(f"{source!r} is neither a kernel of the catalog nor a file of kernels/ ({known})")
    return path


def function_span(path: Path, name: str) -> tuple[int, int]:
    """(first, last) line numbers (from 1) of the definition of `name` in a CUDA file: its template and attribute
    lines and the comment right above it, through the brace that closes its body."""
    lines = _lines(path)
    call = re.compile(rf"(?<![\w.]){re.escape(name)}\s*(<[^;{{]*>)?\s*\(")
    for i, line in enumerate(lines):
        if not call.search(_code(line)):
            continue
        end = _body_end(lines, i)
        if end is None:  # a declaration or a call: look further
            continue
        first = i
        while first > 0 and _declaration_part(lines[first - 1]):
            first -= 1
        while first > 0 and lines[first - 1].lstrip().startswith("//"):
            first -= 1
        return first + 1, end + 1
    raise ValueError(f"no definition of {name} in {_name(path)}")


def _defines(path: Path, name: str) -> bool:
    try:
        function_span(path, name)
    except ValueError:
        return False
    return True


def _body_end(lines: list[str], start: int) -> int | None:
    """Index of the line closing the body that opens after `start`, or None when a `;` ends it first."""
    depth, opened = 0, False
    parens = 0
    for j in range(start, len(lines)):
        for ch in _code(lines[j]):
            if ch == "(":
                parens += 1
            elif ch == ")":
                parens -= 1
            elif ch == ";" and not opened and parens == 0:
                return None
            elif ch == "{":
                depth, opened = depth + 1, True
            elif ch == "}":
                depth -= 1
                if opened and depth == 0:
                    return j
    return None


def _declaration_part(line: str) -> bool:
    """A line above a function's name that belongs to its declaration (template <...>, __global__ ..., a return
    type), not a statement, a comment, a directive or a blank line."""
    text = line.strip()
    return bool(text) and not text.startswith(("//", "#", "/*", "*")) and not text.endswith((";", "}", "{"))


def _code(line: str) -> str:
    """A line without its // comment and the contents of string and character literals."""
    line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
    line = re.sub(r"'(\\.|[^'\\])*'", "''", line)
    return line.split("//", 1)[0]


def _check_markers(**markers: str | None) -> None:
    """Refuse a function's name or a marker that is not a non-empty str: "" is in every line, so it showed the whole
    file in silence."""
    for name, value in markers.items():
        if value is not None and (not isinstance(value, str) or not value):
            raise (ValueError if value == "" else TypeError)(
                f"{name} must be a non-empty str (a function's name, or text of a line), not {value!r}")


def _find(path: Path, lines: list[str], marker: str, start: int) -> int:
    for n in range(start, len(lines) + 1):
        if marker in lines[n - 1]:
            return n
    raise ValueError(f"no line of {_name(path)} from line {start} on contains {marker!r}")


def _line_numbers(what: str, spec: str | int, path: Path, count: int) -> set[int]:
    """'14-15, 27' as {14, 15, 27}, and 14 as {14}, of the `count` lines of `path`: a number past its end is refused
    before its range is built (1-100000000 took 45 s); `what` names the argument in errors."""
    text = str(spec) if isinstance(spec, numbers.Integral) and not isinstance(spec, bool) else spec
    if not isinstance(text, str):
        raise TypeError(f"{what}={spec!r}: give a line's number, or lines and ranges as a text such as '14-15, 27'")
    out: set[int] = set()
    for part in filter(None, (p.strip() for p in text.split(","))):
        match = re.fullmatch(r"(\d+)(?:\s*-\s*(\d+))?", part)
        if not match:
            raise ValueError(f"{what}={spec!r}: write line numbers and ranges such as '14-15, 27'")
        a, b = int(match.group(1)), int(match.group(2) or match.group(1))
        if b < a:
            raise ValueError(f"{what}={spec!r}: the range {part} runs backwards; write it first line to last, "
                             f"{b}-{a}")
        if b > count:
            raise ValueError(f"{what}={spec!r}: {_name(path)} has {count} lines, so there is no line {b}")
        out.update(range(a, b + 1))
    return out


def number_ranges(numbers: list[int] | set[int], dash: str = "-") -> str:
    """{14, 15, 27} as '14-15, 27' (`_line_numbers`' inverse; `dash` joins a run's ends)."""
    runs: list[list[int]] = []
    for n in sorted(numbers):
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    return ", ".join(f"{r[0]}{dash}{r[-1]}" if len(r) > 1 else str(r[0]) for r in runs)


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


def _name(path: Path) -> str:
    return path.relative_to(catalog.ROOT).as_posix()


def _highlighted(path: Path) -> list[str]:
    """The file as HTML, one string per line, tokens in spans with Pygments' short class names."""
    from pygments.lexers import CudaLexer

    out: list[str] = []
    current: list[tuple[str, str]] = []  # (class, text) runs of the line so far, neighbours of one class merged

    def close_line() -> None:
        out.append("".join(f"<span class='{_keep(c, t)}'>{html.escape(t)}</span>" if c else html.escape(t)
                           for c, t in current))
        current.clear()

    for ttype, value in CudaLexer(stripnl=False, ensurenl=False).get_tokens(path.read_text()):
        css = "" if ttype in _PLAIN else _token_class(ttype)
        for i, part in enumerate(value.split("\n")):
            if i:
                close_line()
            if part and current and current[-1][0] == css:
                current[-1] = (css, current[-1][1] + part)
            elif part:
                current.append((css, part))
    close_line()
    lines = _lines(path)
    return out[:len(lines)] + [""] * (len(lines) - len(out))


def _keep(css: str, text: str) -> str:
    """A token's classes: a short string literal also "keep", which holds it on one line."""
    return f"{css} keep" if css in ("s", "s1", "s2", "sc") and len(text) <= KEEP_WHOLE else css


def _plain() -> frozenset:
    from pygments.token import Punctuation, Text, Whitespace

    return frozenset((Text, Whitespace, Text.Whitespace, Punctuation))


_PLAIN = _plain()  # tokens shown in the text's own colour: no span needed


def _token_class(ttype) -> str:
    from pygments.token import STANDARD_TYPES

    while ttype not in STANDARD_TYPES:
        ttype = ttype.parent
    return STANDARD_TYPES[ttype]


def _token_css() -> str:
    """Colours for the token classes, scoped to the listing (Pygments' default style)."""
    from pygments.formatters import HtmlFormatter

    return HtmlFormatter(style="default").get_style_defs(f".{CSS_CLASS}").replace("\n", "")
