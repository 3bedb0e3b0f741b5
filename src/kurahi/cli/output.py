"""Lines and tables for people: rich on a terminal, plain text everywhere else.

On a terminal, rich draws the tables and colours the words that matter. Written to a
pipe or a file, the same output is plain: columns aligned with spaces, no box drawing,
no colour codes, and no line wrapped at 80 columns (rich wraps long paths there), so it
greps and diffs cleanly. rich is then never imported: that is 60–80 ms, as much as some
commands' whole work (``lineage stitch`` and ``check`` use this module).

A part of a line or a cell is either text or ``(text, style)`` with a rich style name;
text is never read as rich markup, so brackets in paths and markers print as they are.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from kurahi.cli.common import console

__all__ = ["Part", "say", "table"]

Part = str | tuple[str, str]
"""Plain text, or ``(text, style)``."""


def _styled() -> bool:
    # FORCE_COLOR is rich's own switch for "treat this as a terminal".
    return sys.stdout.isatty() or bool(os.environ.get("FORCE_COLOR"))


def _text(part: Part) -> str:
    return part if isinstance(part, str) else part[0]


def say(*parts: Part) -> None:
    """Print one line made of ``parts``."""
    if not _styled():
        sys.stdout.write("".join(map(_text, parts)) + "\n")
        return
    from rich.text import Text

    console.print(Text.assemble(*parts))


def table(headers: Sequence[str], rows: Sequence[Sequence[Part]], *, right: Sequence[int] = ()) -> None:
    """Print a table; columns whose positions are in ``right`` are right-aligned (numbers)."""
    if not _styled():
        cells = [list(headers), *([_text(c) for c in row] for row in rows)]
        widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
        for r in cells:
            padded = (c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
            sys.stdout.write("  ".join(padded).rstrip() + "\n")
        return
    from rich.table import Table
    from rich.text import Text

    t = Table(header_style="bold")
    for i, h in enumerate(headers):
        t.add_column(h, justify="right" if i in right else "left")
    for row in rows:
        t.add_row(*(Text(c) if isinstance(c, str) else Text(c[0], style=c[1]) for c in row))
    console.print(t)
