"""Read an OpenClaw 2026.8+ agent store (``agents/<id>/agent/openclaw-agent.sqlite``) without changing it.

From 2026.8 OpenClaw keeps sessions in one SQLite file per agent instead of ``sessions.json``
and ``*.jsonl`` files. The tables used here:

- ``session_nodes``: one row per session key; ``current_session_id`` and ``entry_json`` (the
  catalog entry as ``sessions.json`` held it).
- ``session_windows``: one row per session id; ``previous_session_id`` links an idle or daily
  rollover to the session it replaced.
- ``transcript_events``: ``(session_id, seq, event_json)``, one Pi-style entry per row, seq 0
  the session header. A session OpenClaw's cold storage archived has no rows there: its events
  are in the archive its ``session_transcript_cold_archives`` row names, read (once verified)
  by :mod:`kurahi.runtimes.openclaw.sqlite.cold` wherever the rows would have been. Exporting
  a session writes each ``event_json`` text as it is stored
  (a large event, stored zstd-compressed in ``event_zstd``, inflated to the same bytes: see
  :mod:`kurahi.runtimes.openclaw.sqlite.events`), one per line, so the result is a JSONL
  transcript the store can open.

Every function reads through :func:`~kurahi.runtimes.openclaw.sqlite.snapshot.open_store_snapshot`:
a private copy of the store, so not one byte of the state directory changes (``-wal`` and
``-shm`` included), and committed transactions still in the WAL are seen. Pass a
:class:`~kurahi.runtimes.openclaw.sqlite.snapshot.StoreSnapshot` to read several things from one
consistent copy; pass a path to take a snapshot for that one call.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from kurahi.errors import TranscriptReadError, UsageError
from kurahi.js import deepjson
from kurahi.runtimes.openclaw.sqlite.cold import ColdArchive, cold_archives, cold_dir, cold_events
from kurahi.runtimes.openclaw.sqlite.events import event_bytes, event_columns
from kurahi.runtimes.openclaw.sqlite.snapshot import (
    DEFAULT_BUSY_TIMEOUT,
    StoreSnapshot,
    open_store_snapshot,
    translate_sqlite_error,
)

__all__ = [
    "DEFAULT_BUSY_TIMEOUT",
    "SqliteNode",
    "SqliteSession",
    "export_session_jsonl",
    "header_times",
    "list_sqlite_nodes",
    "list_sqlite_sessions",
    "sqlite_key_sessions",
    "sqlite_source",
]


@dataclass(frozen=True, slots=True)
class SqliteSession:
    """One session id of the store (a ``session_windows`` row, or events without one)."""

    session_id: str
    """The session id (the transcript header's ``id``)."""
    session_key: str | None
    """The key the session belongs to; ``None`` when events exist without a window row."""
    previous_session_id: str | None
    """The session this one replaced on an idle or daily rollover (``session_windows``)."""
    reason: str | None
    """Why the window was opened (``initial``, ``reset``, ``rollover``, ...), when recorded."""
    created_at: int | None
    """Epoch milliseconds the window was created."""
    updated_at: int | None
    """Epoch milliseconds the window was last updated."""
    event_count: int
    """Rows in ``transcript_events``, the header (seq 0) included; for a cold session, its archive's."""
    cold_archive: str | None = None
    """Where a cold session's events are (its archive file, or the row's blob); ``None`` when in the store."""

    def to_dict(self) -> dict[str, Any]:
        """Return the session as a JSON-ready dict (camelCase names)."""
        return _camel(asdict(self))


@dataclass(frozen=True, slots=True)
class SqliteNode:
    """One session key of the store (a ``session_nodes`` row)."""

    session_key: str
    """The key, e.g. ``agent:main:main``."""
    current_session_id: str
    """The session the key points at now."""
    entry: dict[str, Any]
    """``entry_json`` decoded (``{}`` when it is not a JSON object)."""


def sqlite_source(db_path: str | os.PathLike[str], session_id: str) -> str:
    """Name a session of a store the way lineage reports do: ``sqlite:<db>#<session id>``."""
    return f"sqlite:{Path(db_path)}#{session_id}"


def _camel(value: dict[str, Any]) -> dict[str, Any]:
    def name(key: str) -> str:
        head, *rest = key.split("_")
        return head + "".join(part.title() for part in rest)

    return {name(k): v for k, v in value.items()}


@contextmanager
def _reading(store: str | os.PathLike[str] | StoreSnapshot, busy_timeout: float) -> Iterator[sqlite3.Connection]:
    """The snapshot's connection, or one of a snapshot taken for this call."""
    if isinstance(store, StoreSnapshot):
        try:
            yield store.conn
        except sqlite3.Error as exc:
            raise translate_sqlite_error(exc, store.source, busy_timeout) from exc
        return
    with open_store_snapshot(store, busy_timeout=busy_timeout) as snap:
        yield snap.conn


def _db_path(store: str | os.PathLike[str] | StoreSnapshot) -> Path:
    return store.source if isinstance(store, StoreSnapshot) else Path(store)


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def list_sqlite_sessions(
    store: str | os.PathLike[str] | StoreSnapshot, *, busy_timeout: float = DEFAULT_BUSY_TIMEOUT
) -> list[SqliteSession]:
    """List every session id of a store, oldest window first.

    Sessions with events but no ``session_windows`` row are listed too (with no key), after
    the others, so nothing stored is hidden.

    Raises:
        TranscriptReadError: the file is missing, not SQLite, corrupt, not an OpenClaw store,
            or locked by a writer for longer than ``busy_timeout`` seconds.
    """
    db = _db_path(store)
    with _reading(store, busy_timeout) as conn:
        counts = dict(conn.execute("SELECT session_id, count(*) FROM transcript_events GROUP BY session_id"))
        cold = {sid: a for sid, a in cold_archives(conn).items() if not counts.get(sid)}
        rows = conn.execute(
            "SELECT session_id, session_key, previous_session_id, reason, created_at, updated_at "
            "FROM session_windows ORDER BY created_at, session_id"
        ).fetchall()
    sessions = [
        SqliteSession(
            session_id=str(sid),
            session_key=str(key),
            previous_session_id=str(prev) if prev is not None else None,
            reason=str(reason) if reason is not None else None,
            created_at=_int_or_none(created),
            updated_at=_int_or_none(updated),
            event_count=int(counts.pop(sid, 0)) or (cold[sid].event_count if sid in cold else 0),
            cold_archive=_cold_place(cold[sid], db) if sid in cold else None,
        )
        for sid, key, prev, reason, created, updated in rows
    ]
    for sid, count in sorted(counts.items()):
        sessions.append(SqliteSession(str(sid), None, None, None, None, None, int(count)))
    return sessions


def _cold_place(archive: ColdArchive, db: Path) -> str:
    if archive.storage == "file":
        return str(cold_dir(db) / archive.name)
    return f"{db} (archive_blob of session {archive.session_id})"


def list_sqlite_nodes(
    store: str | os.PathLike[str] | StoreSnapshot, *, busy_timeout: float = DEFAULT_BUSY_TIMEOUT
) -> list[SqliteNode]:
    """List every session key of a store with its current session and catalog entry, by key.

    Raises:
        TranscriptReadError: as for :func:`list_sqlite_sessions`.
    """
    with _reading(store, busy_timeout) as conn:
        rows = conn.execute(
            "SELECT session_key, current_session_id, entry_json FROM session_nodes ORDER BY session_key"
        ).fetchall()
    nodes: list[SqliteNode] = []
    for key, current, entry_json in rows:
        try:
            entry = deepjson.parse(entry_json) if isinstance(entry_json, str) else None
        except ValueError:
            entry = None
        nodes.append(SqliteNode(str(key), str(current), entry if isinstance(entry, dict) else {}))
    return nodes


def export_session_jsonl(
    store: str | os.PathLike[str] | StoreSnapshot, session_id: str, *, busy_timeout: float = DEFAULT_BUSY_TIMEOUT
) -> bytes:
    """Return one session's ``transcript_events`` as a JSONL transcript, ordered by ``seq``.

    Each line is the stored ``event_json`` text, byte for byte, followed by a newline; seq 0
    is the header, so the result opens with ``Transcript.from_bytes``. A cold session's events
    come from its archive, verified first (:func:`~kurahi.runtimes.openclaw.sqlite.cold.cold_events`).

    Raises:
        UsageError: the store has no events for ``session_id``.
        TranscriptReadError: as for :func:`list_sqlite_sessions`; also when an event has no
            text, a zstd-compressed one does not inflate to its recorded size, or its JSON text
            spans several lines.
    """
    path = _db_path(store)
    with _reading(store, busy_timeout) as conn:
        conn.text_factory = bytes  # the stored bytes exactly, not a decode/encode round trip
        try:
            rows = conn.execute(
                f"SELECT seq, {event_columns(conn)} FROM transcript_events WHERE session_id = ? ORDER BY seq",
                (session_id,),
            ).fetchall()
        finally:
            conn.text_factory = str
        archive = None if rows else cold_archives(conn).get(session_id)
    if archive is not None:
        rows = [(seq, text, None, None) for seq, text in cold_events(archive, path)]
    if not rows:
        raise UsageError(f"{path}: no transcript events for session {session_id!r}")
    out = bytearray()
    for seq, stored, zstd, size in rows:
        text = event_bytes(stored, zstd, size, where=f"session {session_id}: event seq {seq}", path=path)
        if b"\n" in text:
            raise TranscriptReadError(
                f"session {session_id}: event seq {seq} spans several lines; it cannot be one JSONL line as stored",
                path=path,
            )
        out += text
        out += b"\n"
    return bytes(out)


def header_times(
    store: str | os.PathLike[str] | StoreSnapshot, *, busy_timeout: float = DEFAULT_BUSY_TIMEOUT
) -> dict[str, int]:
    """Each session's start as its header (``seq`` 0) records it, in epoch milliseconds (one query)."""
    from kurahi.js.values import date_ms

    out: dict[str, int] = {}
    path = _db_path(store)
    with _reading(store, busy_timeout) as conn:
        rows = conn.execute(f"SELECT session_id, {event_columns(conn)} FROM transcript_events WHERE seq = 0").fetchall()
    for sid, text, zstd, size in rows:
        try:
            header = deepjson.parse(event_bytes(text, zstd, size, where=f"session {sid}: header", path=path))
        except (ValueError, TranscriptReadError):
            continue
        ms = date_ms(header.get("timestamp")) if isinstance(header, dict) else None
        if isinstance(sid, str) and ms is not None:
            out[sid] = int(ms)
    return out


def sqlite_key_sessions(
    node: SqliteNode | None, sessions: list[SqliteSession], key: str
) -> tuple[dict[str, list[str]], list[str]]:
    """Which sessions of a store belong to ``key``, and by which rules.

    Starts from the key's current session and every window of the key, then follows
    ``previousSessionId`` (catalog entry) and ``previous_session_id`` (windows) links, across
    keys too. Header ``parentSession`` links need the transcripts: the caller follows them.

    Returns:
        ``{session id: rules}`` in discovery order, and the ids of sessions that have events
        but no window row (no key owns them).
    """
    by_id = {s.session_id: s for s in sessions}
    queue: list[tuple[str, str]] = []
    if node is not None:
        queue.append((node.current_session_id, "session_nodes current_session_id"))
        prev = node.entry.get("previousSessionId")
        if isinstance(prev, str):
            queue.append((prev, "catalog previousSessionId"))
    queue += [(s.session_id, "session_windows session_key") for s in sessions if s.session_key == key]
    found: dict[str, list[str]] = {}
    while queue:
        sid, rule = queue.pop(0)
        if rule not in found.setdefault(sid, []):
            found[sid].append(rule)
        info = by_id.get(sid)
        if len(found[sid]) == 1 and info is not None and info.previous_session_id:
            queue.append((info.previous_session_id, "session_windows previous_session_id"))
    orphans = [s.session_id for s in sessions if s.session_key is None and s.session_id not in found]
    return found, orphans
