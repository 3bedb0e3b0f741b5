"""What ``kurahi session context FILE --json`` does once its arguments are parsed.

Kept free of typer and rich, like :mod:`kurahi.cli.fast.lineage`, so that the fast path
(:mod:`kurahi.cli.fast.dispatch`) and the Typer command run the same code. Printing a live context
as JSON is the command scripts and gateways run on every turn, on contexts of any size.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kurahi.cli.common import EXIT, print_json, translate_errors, warn, write_context_json

__all__ = ["own_view", "print_warnings", "run_context_json"]

MAX_WARNINGS = 20
"""Warnings printed one by one; the rest are counted."""


def print_warnings(warnings: list[Any], name: str) -> None:
    """The reader's and the projection's warnings about ``name``, on stderr."""
    for w in warnings[:MAX_WARNINGS]:
        warn(f"{name}:{w.line}: {w.message}")
    if len(warnings) > MAX_WARNINGS:
        warn(f"… and {len(warnings) - MAX_WARNINGS} more")


def own_view(file: Path, runtime: str | None) -> Any:
    """What a runtime that reads its own session files sends next for ``file`` (``None``: a transcript, read as Pi's).

    A file that starts with a transcript header goes straight on, without loading every runtime
    (the JSON is printed on every turn); any other file, or ``--runtime``, asks the runtimes whose it is.
    """
    from kurahi.runtimes.own_files import starts_as_transcript

    if runtime is None and starts_as_transcript(file):
        return None
    from kurahi.runtimes.registry import own_file_view

    with translate_errors():
        return own_file_view(file, runtime)


def run_context_json(file: Path, leaf: str | None = None, runtime: str | None = None) -> int:
    """Print ``{leafId, thinkingLevel, model, messages}`` of ``file`` as Pi's ``JSON.stringify`` writes it.

    A runtime's own session file (Claude Code's) prints what its loader sends next instead:
    ``{runtime, file, sessionId, leafId, leafFrom, notes, messages}``.
    """
    own = own_view(file, runtime)
    if own is not None:
        if leaf is not None:
            warn(f"--leaf is ignored: {own.label} chooses its own leaf ({own.leaf_from})")
        print_json(own.to_dict())
        return EXIT.OK
    from kurahi.context.files import project_file

    with translate_errors():
        # Printed as JSON only, a stored message is copied rather than decoded and encoded.
        result = project_file(file, leaf, copy_stored=True)
    print_warnings(result.warnings + result.context.warnings, str(file))
    write_context_json(result.context, str(file))
    return EXIT.OK
