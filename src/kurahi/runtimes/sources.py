"""Where a transcript comes from, and which runtime would load it.

``lineage check`` and ``lineage stitch`` take a file path or a SQLite source as ``lineage
find`` prints it (``sqlite:<db>#<session id>``). :func:`materialize` gives either as a file
(a SQLite session is exported into a private temporary file, read through a store
snapshot), and :func:`runtime_of` names the runtime that loads it by default.

Runtimes (what each sends the model from a transcript's path):

``pi``
    Pi's projection of the whole path; Pi does not know ``reset`` entries and keeps them out
    of the messages without cutting anything.
``openclaw-2026.5``
    OpenClaw's JSON era: Pi's projection (a reset starts a new file there).
``openclaw-2026.9``
    OpenClaw's SQLite era: only what follows the last ``reset`` entry on the path.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from kurahi.errors import UsageError
from kurahi.runtimes.openclaw import layout
from kurahi.runtimes.openclaw.versions import of_era
from kurahi.runtimes.pi.facts import VIEW as PI_VIEW
from kurahi.runtimes.views import NAMES

__all__ = ["RUNTIMES", "SQLITE_PREFIX", "materialize", "parse_sqlite_source", "runtime_of"]

RUNTIMES = NAMES
"""Runtimes ``lineage check --runtime`` knows (every view's name)."""
SQLITE_PREFIX = "sqlite:"


def parse_sqlite_source(source: str | os.PathLike[str]) -> tuple[Path, str] | None:
    """``(db, session id)`` of ``sqlite:<db>#<session id>``; ``None`` for a file path."""
    text = os.fspath(source)
    if not isinstance(text, str) or not text.startswith(SQLITE_PREFIX):
        return None
    db, sep, sid = text[len(SQLITE_PREFIX) :].rpartition("#")
    if not sep or not db or not sid:
        raise UsageError(f"{text}: a SQLite source is sqlite:<path to openclaw-agent.sqlite>#<session id>")
    return Path(db), sid


def runtime_of(source: str | os.PathLike[str], *, has_reset: bool = False) -> tuple[str, str]:
    """The runtime that loads ``source`` by default, and why.

    A SQLite source, or a file in ``agents/<id>/sessions/`` of a state directory that has
    the agent's SQLite store (an upgraded directory), belongs to ``openclaw-2026.9``; a file
    beside a ``sessions.json`` to ``openclaw-2026.5``. Any other file belongs to ``pi``,
    unless ``has_reset`` (its path holds a ``reset`` entry): only OpenClaw 2026.9 writes
    those, so such a file (a session exported from a 2026.9 store) is judged by its view.
    """
    sqlite, json_era = of_era("sqlite").view.name, of_era("json").view.name
    if parse_sqlite_source(source) is not None:
        return sqlite, "a session of an OpenClaw 2026.9 SQLite store"
    path = Path(source).absolute()
    folder = path.parent
    if folder.name == "sessions" and folder.parent.parent.name == "agents":
        root, agent = folder.parent.parent.parent, folder.parent.name
        if layout.store_path(root, agent).exists():
            return sqlite, "a file in an OpenClaw state directory that has a 2026.9 SQLite store"
        if (folder / layout.CATALOG).exists():
            return json_era, "a file in an OpenClaw JSON-era sessions folder"
    if has_reset:
        return sqlite, "a plain file holding reset entries, which only OpenClaw 2026.9 writes"
    return PI_VIEW.name, "a plain file"


@contextlib.contextmanager
def materialize(source: str | os.PathLike[str]) -> Iterator[Path]:
    """``source`` as a transcript file: the path itself, or a SQLite session exported to a temp file.

    Raises:
        UsageError: a malformed SQLite source, or a session id the store has no events for.
        SqliteStoreError: the store cannot be read (see :mod:`kurahi.runtimes.openclaw.sqlite.snapshot`).
    """
    parsed = parse_sqlite_source(source)
    if parsed is None:
        yield Path(source)
        return
    import shutil
    import tempfile

    from kurahi.runtimes.openclaw.sqlite.read import export_session_jsonl

    db, sid = parsed
    data = export_session_jsonl(db, sid)
    folder = Path(tempfile.mkdtemp(prefix="kurahi-source-"))
    try:
        path = folder / "session.jsonl"
        path.write_bytes(data)
        yield path
    finally:
        shutil.rmtree(folder, ignore_errors=True)
