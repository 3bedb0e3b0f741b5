"""Lines and tables for people: rich on a terminal, plain text everywhere else.

On a terminal, rich draws the tables and colours the words that matter (no colour under
``NO_COLOR`` or ``--no-color``). Written to a pipe or a file, the same output is plain:
columns aligned with spaces, no box drawing, no colour codes, and no line wrapped at 80
columns, so it greps and diffs cleanly. rich is then never imported: that is 60–80 ms, as
much as some commands' whole work (``lineage stitch`` and ``check`` use this module).

Every table command prints through :func:`table`, which keeps two promises at any
terminal width: every column is shown, and a *key* column (ids, session keys, hashes,
times, counts) is never cut or wrapped. Text columns wrap within their own width. When the
keys alone do not fit, each row is printed as ``header: value`` lines instead. An empty
table prints ``none``.

A part of a line or a cell is either text or ``(text, style)`` with a rich style name;
text is never read as rich markup, so brackets in paths and markers print as they are, and
its control characters print as their escapes (:func:`~kurahi.cli.common.printable`): a
session key or a phrase from someone's state cannot clear the screen or forge a line.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Literal

from kurahi.cli.common import console, printable

__all__ = ["EMPTY", "Part", "fields", "say", "table"]

Part = str | tuple[str, str]
"""Plain text, or ``(text, style)``."""

EMPTY = "none"
"""What an empty result prints."""

_TEXT_MIN = 8
"""A text column is never narrower than this (or its header), so none shrinks to nothing."""


def _styled() -> bool:
    # FORCE_COLOR is rich's own switch for "treat this as a terminal".
    return sys.stdout.isatty() or bool(os.environ.get("FORCE_COLOR"))


def _text(part: Part) -> str:
    return part if isinstance(part, str) else part[0]


def _safe(part: Part) -> Part:
    return printable(part) if isinstance(part, str) else (printable(part[0]), part[1])


def say(*parts: Part) -> None:
    """Print one line made of ``parts`` (a control character in them as its escape)."""
    parts = tuple(map(_safe, parts))
    if not _styled():
        sys.stdout.write("".join(map(_text, parts)) + "\n")
        return
    from rich.text import Text

    # On a terminal a long line wraps between words (a path stays whole when it fits a line).
    console.print(Text.assemble(*parts, overflow="fold"))


def fields(pairs: Sequence[tuple[str, Part]]) -> None:
    """Print ``name  value`` lines with the names aligned (a record, such as ``session stats``)."""
    width = max((len(name) for name, _ in pairs), default=0)
    room = console.get().width if _styled() else None
    for name, value in pairs:
        if room is not None and width + 2 + len(_text(value)) > room:
            # Too long beside its name on this terminal: on a line of its own, so a long id stays whole.
            say((name, "bold"))
            say("  ", value)
        else:
            say((name.ljust(width), "bold"), "  ", value)


def table(
    headers: Sequence[str],
    rows: Sequence[Sequence[Part]],
    *,
    right: Sequence[int] = (),
    keys: Sequence[int] | None = None,
    cut: Sequence[int] = (),
    title: str | None = None,
) -> None:
    """Print a table.

    Args:
        headers: the column names.
        rows: the cells, one sequence per row (a newline in a cell is shown as `` / ``).
        right: positions of right-aligned columns (numbers).
        keys: positions of columns never cut or wrapped; default: every column but the last.
        cut: positions of text columns kept to one line on a terminal, cut with "…" (a preview
            of message text); elsewhere they wrap.
        title: a line printed above the table.
    """
    if keys is None:
        keys = range(len(headers) - 1)
    cells = [[_flat(c) for c in row] for row in rows]
    if title is not None:
        say((title, "bold"))
    if not cells:
        say(EMPTY)
        return
    if not _styled():
        _plain(headers, [[_text(c) for c in row] for row in cells], right)
        return
    width = console.get().width
    need = 0
    for i, h in enumerate(headers):
        longest = max([len(h), *(len(_text(row[i])) for row in cells)])
        need += longest if i in keys else min(longest, max(_TEXT_MIN, len(h)))
    need += 3 * (len(headers) - 1)  # a space of padding each side of the box's blank column rule
    if need > width:
        _records(headers, cells)
        return
    _rich(headers, cells, right, keys, cut)


def _flat(part: Part) -> Part:
    if isinstance(part, str):
        return printable(part.replace("\n", " / "))
    return (printable(part[0].replace("\n", " / ")), part[1])


def _plain(headers: Sequence[str], rows: list[list[str]], right: Sequence[int]) -> None:
    grid = [list(headers), *rows]
    widths = [max(len(r[i]) for r in grid) for i in range(len(headers))]
    for r in grid:
        padded = (c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
        sys.stdout.write("  ".join(padded).rstrip() + "\n")


def _records(headers: Sequence[str], rows: list[list[Part]]) -> None:
    """Each row as ``header: value`` lines: what a table becomes when its keys are wider than the terminal."""
    for n, row in enumerate(rows):
        if n:
            say("")
        fields([(h, c) for h, c in zip(headers, row, strict=True)])


def _rich(
    headers: Sequence[str], rows: list[list[Part]], right: Sequence[int], keys: Sequence[int], cut: Sequence[int]
) -> None:
    from rich import box
    from rich.table import Table
    from rich.text import Text

    t = Table(header_style="bold", box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    longest = [max([len(h), *(len(_text(row[i])) for row in rows)]) for i, h in enumerate(headers)]
    least = [n if i in keys else min(n, max(_TEXT_MIN, len(headers[i]))) for i, n in enumerate(longest)]
    # A cut column never wraps, so rich cannot narrow it to make room: it gets what the others leave.
    spare = console.get().width - 3 * (len(headers) - 1) - sum(n for i, n in enumerate(least) if i not in cut)
    cut_width = max(_TEXT_MIN, spare // max(1, len(cut)))
    for i, h in enumerate(headers):
        justify: Literal["left", "right"] = "right" if i in right else "left"
        if i in keys:
            t.add_column(h, justify=justify, no_wrap=True, min_width=longest[i])
        elif i in cut:
            t.add_column(h, justify=justify, overflow="ellipsis", no_wrap=True, max_width=cut_width)
        else:
            t.add_column(h, justify=justify, overflow="fold", min_width=least[i])
    for row in rows:
        t.add_row(*(Text(c) if isinstance(c, str) else Text(c[0], style=c[1]) for c in row))
    console.print(t)
