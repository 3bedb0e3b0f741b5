"""What ``kurahi session context FILE --json`` does once its arguments are parsed.

Kept free of typer and rich, like :mod:`kurahi.cli.fast.lineage`, so that the fast path
(:mod:`kurahi.cli.fast.dispatch`) and the Typer command run the same code. Printing a live context
as JSON is the command scripts and gateways run on every turn, on contexts of any size.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kurahi.cli.common import EXIT, translate_errors, warn, write_context_json

__all__ = ["print_warnings", "run_context_json"]

MAX_WARNINGS = 20
"""Warnings printed one by one; the rest are counted."""


def print_warnings(warnings: list[Any], name: str) -> None:
    """The reader's and the projection's warnings about ``name``, on stderr."""
    for w in warnings[:MAX_WARNINGS]:
        warn(f"{name}:{w.line}: {w.message}")
    if len(warnings) > MAX_WARNINGS:
        warn(f"… and {len(warnings) - MAX_WARNINGS} more")


def run_context_json(file: Path, leaf: str | None = None) -> int:
    """Print ``{leafId, thinkingLevel, model, messages}`` of ``file`` as Pi's ``JSON.stringify`` writes it."""
    from kurahi.context.files import project_file

    with translate_errors():
        # Printed as JSON only, a stored message is copied rather than decoded and encoded.
        result = project_file(file, leaf, copy_stored=True)
    print_warnings(result.warnings + result.context.warnings, str(file))
    write_context_json(result.context, str(file))
    return EXIT.OK
