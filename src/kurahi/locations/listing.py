"""What sessions a state directory holds: every key of every agent's catalog, and its transcript.

Behind ``kurahi sessions ls``. A state directory may have been moved since OpenClaw wrote an
absolute ``sessionFile``, so a transcript is looked for where the entry says, then by that
file's name in the catalog's own directory, then as ``<sessionId>.jsonl`` there.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path, PurePath
from typing import Any

import msgspec

from kurahi.store.base import Backend, transcript_name
from kurahi.store.catalog import Catalog, find_catalogs

__all__ = ["SessionListing", "first_line", "last_lines", "list_sessions", "locate_transcript"]


class SessionListing(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """One catalog key as ``sessions ls`` shows it (JSON names are camelCase)."""

    agent: str
    """The agent id, i.e. the ``agents/<agentId>`` directory the catalog is in."""
    key: str
    """The session key, e.g. ``agent:main:main``."""
    session_id: str | None
    """The entry's ``sessionId``, or ``None`` when it has none (or not a string)."""
    updated_at: int | None
    """The entry's ``updatedAt`` in epoch milliseconds, or ``None`` when absent or not an integer."""
    status: str | None
    """The entry's ``status`` (``running``, ``done``, ...), or ``None``."""
    transcript: str | None
    """The transcript file found, else where it was expected; ``None`` if nothing names one."""
    transcript_exists: bool
    """Whether ``transcript`` is an existing file."""

    def to_dict(self) -> dict[str, Any]:
        """Return the listing as a JSON-ready dict with camelCase names."""
        result: dict[str, Any] = msgspec.to_builtins(self)
        return result


def _plain_name(name: str) -> bool:
    return bool(name) and name not in (".", "..") and "/" not in name and "\0" not in name


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except (OSError, ValueError):  # a name too long, or otherwise unusable, is not there
        return False


def locate_transcript(sessions_dir: str | os.PathLike[str], entry: Mapping[str, Any]) -> tuple[Path | None, bool]:
    """Find the transcript of a catalog entry.

    Tries, in order: ``sessionFile`` as written; when it is absolute, its file name inside
    ``sessions_dir`` (the state directory may have moved); when it is relative, that path
    inside ``sessions_dir``; then ``<sessionId>.jsonl`` inside ``sessions_dir``. Relative
    paths that climb out (``..``) and ids that are not plain file names are ignored.

    Returns:
        ``(path, True)`` for the first candidate that is a file, else ``(first candidate,
        False)``, or ``(None, False)`` when the entry names no usable file.
    """
    folder = Path(sessions_dir)
    candidates: list[Path] = []
    session_file = entry.get("sessionFile")
    if isinstance(session_file, str) and session_file and "\0" not in session_file:
        written = PurePath(session_file)
        if written.is_absolute():
            candidates.append(Path(written))
            if _plain_name(written.name):
                candidates.append(folder / written.name)
        elif ".." not in written.parts:
            candidates.append(folder / written)
    session_id = entry.get("sessionId")
    if isinstance(session_id, str) and _plain_name(session_id):
        candidates.append(folder / f"{session_id}.jsonl")
    for candidate in candidates:
        if _is_file(candidate):
            return candidate, True
    return (candidates[0] if candidates else None), False


def list_sessions(
    home: str | os.PathLike[str], agent: str | None = None, *, backend: Backend | None = None
) -> list[SessionListing]:
    """List every key of every catalog under ``home`` (or of one agent), in catalog order.

    With a ``backend`` other than files (a database), its catalogs are listed instead; the
    transcript column then holds where the backend keeps each one.

    Raises:
        UsageError: ``agent`` is not a valid agent id.
        CatalogCorruptError: a catalog does not parse (nothing is listed then).
        CatalogError: ``home`` is not a directory, or the agent has no sessions directory.
    """
    if backend is not None and backend.directory is None:
        return _list_backend(backend, agent)
    listings: list[SessionListing] = []
    for agent_id, path in find_catalogs(home, agent):
        for key, entry in Catalog(path).items():
            transcript, exists = locate_transcript(path.parent, entry)
            listings.append(_listing(agent_id, key, entry, str(transcript) if transcript is not None else None, exists))
    return listings


def _list_backend(backend: Backend, agent: str | None) -> list[SessionListing]:
    listings: list[SessionListing] = []
    for agent_id in [agent] if agent is not None else backend.agent_ids():
        store = backend.agent(agent_id)
        for key, entry in store.catalog.items():
            name = transcript_name(entry)
            where = store.transcripts.locator(name) if name is not None else None
            listings.append(_listing(agent_id, key, entry, where, name is not None and store.transcripts.exists(name)))
    return listings


def _listing(agent: str, key: str, entry: Mapping[str, Any], transcript: str | None, exists: bool) -> SessionListing:
    session_id = entry.get("sessionId")
    updated_at = entry.get("updatedAt")
    status = entry.get("status")
    return SessionListing(
        agent=agent,
        key=key,
        session_id=session_id if isinstance(session_id, str) else None,
        updated_at=updated_at if isinstance(updated_at, int) and not isinstance(updated_at, bool) else None,
        status=status if isinstance(status, str) else None,
        transcript=transcript,
        transcript_exists=exists,
    )


def first_line(path: str | os.PathLike[str], limit: int = 1 << 20) -> bytes:
    """A transcript's first line (at most ``limit`` bytes), read without following a link; ``b""`` if unreadable."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return b""
    with os.fdopen(fd, "rb") as fh:
        return fh.read(limit).split(b"\n", 1)[0]


def last_lines(path: str | os.PathLike[str], count: int = 8, limit: int = 1 << 20) -> list[bytes]:
    """A transcript's last ``count`` complete lines (from its last ``limit`` bytes), newest last."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return []
    with os.fdopen(fd, "rb") as fh:
        size = fh.seek(0, os.SEEK_END)
        fh.seek(max(0, size - limit))
        tail = fh.read()
    return tail.rstrip(b"\n").split(b"\n")[-count:]
